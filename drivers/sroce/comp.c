// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce transport engine, completer: acknowledgements, read and atomic
 * responses, retransmission and send completions (IBA 9.7.5.1, 9.7.6).
 *
 *  - ACKs are cumulative: an ACK for PSN p acknowledges every request up
 *    to p (IBA 9.7.5.1.1); a read response or atomic ACK implicitly
 *    acknowledges the requests before it.
 *  - A NAK for a PSN sequence error makes the requester go back to the
 *    NAK's PSN, once per PSN; an RNR NAK stops it for the RNR timer (IBA
 *    9.7.5.2.8) unless rnr_retry (7: infinite) is used up; the other NAKs
 *    complete the WQE in error and the QP enters the Error state.  NAKs
 *    for PSNs acknowledged since are late copies, ignored, but an error
 *    NAK for a READ answered in part.
 *  - A read response or atomic ACK for the PSN of a SEND or WRITE is a
 *    bad response (IB_WC_BAD_RESP_ERR).
 *  - The retry timer (4.096 us * 2^timeout, IBA 9.7.6.1.3) resends from the
 *    oldest unacknowledged PSN; retry_cnt consecutive retries (timeouts
 *    and sequence NAKs) without progress end in IB_WC_RETRY_EXC_ERR.
 *  - WQEs complete in SQ order, only the signaled ones produce a
 *    completion unless in error (IBA 10.8.3.3, 11.4.1.1).
 */
#include "sroce.h"
#include "trace.h"

/* Put the references a WQE holds on MRs. */
void sroce_wqe_release(struct sroce_send_wqe *wqe)
{
	u32 i;

	if (!(wqe->send_flags & IB_SEND_INLINE)) {
		for (i = 0; i < wqe->num_sge; i++) {
			if (wqe->sge[i].mr)
				sroce_mr_put(wqe->sge[i].mr);
			wqe->sge[i].mr = NULL;
		}
	}
	if (wqe->reg_mr)
		sroce_mr_put(wqe->reg_mr);
	wqe->reg_mr = NULL;
}

/* The completion opcode of a send WR's opcode (also when flushed). */
enum ib_wc_opcode sroce_wc_opcode(enum ib_wr_opcode op)
{
	if (op == SROCE_WR_ATOMIC_WRITE)
		return SROCE_WC_ATOMIC_WRITE;
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/* The completion of a finished WQE; false if it makes none (unsignaled). */
static bool sroce_wqe_wc(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			 struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wqe->wr_id;
	wc->status = wqe->status;
	wc->opcode = sroce_wc_opcode(wqe->opcode);
	wc->qp = &qp->ibqp;
	if (wqe->opcode == IB_WR_RDMA_READ)
		wc->byte_len = wqe->length;
	else if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		 wqe->opcode == IB_WR_ATOMIC_FETCH_AND_ADD)
		wc->byte_len = 8;
	/* As rdma_rxe and mlx5 report a send that carried an immediate. */
	if (wqe->status == IB_WC_SUCCESS &&
	    (wqe->opcode == IB_WR_SEND_WITH_IMM ||
	     wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM))
		wc->wc_flags = IB_WC_WITH_IMM;
	return wqe->status != IB_WC_SUCCESS ||
	       qp->sq_sig_type == IB_SIGNAL_ALL_WR ||
	       (wqe->send_flags & IB_SEND_SIGNALED);
}

/**
 * sroce_comp_run - complete the finished WQEs at the head of the SQ
 * @qp: the QP, with qp->lock held
 *
 * A WQE that finished in error completes with its status and puts the QP
 * into the Error state (a UC or UD QP: Send Queue Error), flushing the
 * rest (IBA 10.3.1, 11.6.2); so does a completion its CQ has no room for
 * (sroce_qp_complete()).
 *
 * Return: true if the QP left its state so: the SQ is flushed, and its
 * head is no WQE to work on.
 */
bool sroce_comp_run(struct sroce_qp *qp)
{
	unsigned long flags;

	lockdep_assert_held(&qp->lock);
	while (qp->sq.head != qp->req.idx) {
		struct sroce_send_wqe *wqe = sroce_sq_wqe(qp, qp->sq.head);
		enum ib_wc_status status = wqe->status;

		struct ib_wc wc;
		bool signaled;

		if (wqe->state != SROCE_WQE_DONE)
			break;
		signaled = sroce_wqe_wc(qp, wqe, &wc);
		sroce_wqe_release(wqe);
		/*
		 * Free the slot before the completion is seen: a consumer that
		 * polls it may post again at once (IBA 10.8.3.1: the SQ slot
		 * of a completed WR is free), and must not find the SQ full.
		 */
		spin_lock_irqsave(&qp->sq.lock, flags);
		qp->sq.head++;
		sroce_uring_publish(&qp->sq);
		spin_unlock_irqrestore(&qp->sq.lock, flags);
		if (status != IB_WC_SUCCESS) {
			/*
			 * RC: Error; UC, UD: Send Queue Error (10.3.1).  The
			 * completion shows once the QP is in its new state.
			 */
			trace_sroce_complete(qp, &wc);
			sroce_qp_sq_error(qp, &wc);
			return true;
		}
		if (signaled) {
			trace_sroce_complete(qp, &wc);
			if (sroce_qp_complete(qp, qp->ibqp.send_cq, &wc,
					      false))
				return true;	/* its CQ overran: flushed */
		}
	}
	if (qp->state == IB_QPS_SQD && qp->sqd_notify && sroce_sq_drained(qp)) {
		qp->sqd_notify = false;
		sroce_qp_note(qp, IB_EVENT_SQ_DRAINED);
	}
	if (qp->sq.head == qp->req.idx && qp->comp.psn == qp->req.psn)
		del_timer(&qp->retry_timer);
	return false;
}

/*
 * The retry timeout of the QP, IBA 9.7.6.1.3: 4.096 us * 2^timeout, the
 * least a requester waits.  A requester waits longer when its round trips
 * take longer (sroce_comp_rtt()): its own queue of packets, shared with
 * the device's other QPs, or a responder that takes a batch of them at a
 * time, can hold an ACK past the user's timeout on a path that loses
 * nothing, and every such timeout sends again what is still on its way.
 * Each timeout doubles the wait (up to 32 times) until a round trip is
 * measured again (RFC 6298 5.5 and 5.7): a responder that is merely slow,
 * a CPU starved under emulation or a debug kernel, is not flooded with
 * retransmissions of a window it is still working through, and the
 * longer wait lets a round trip be measured at all, where each timeout
 * ends the timing.  Beyond the user's timeout a wait is at most
 * SROCE_RTO_MAX, so that a peer that went away is found out within
 * retry_cnt + 1 such waits (a minute at most with retry_cnt 7).
 */
#define SROCE_RTO_MAX	(8 * HZ)

static unsigned long sroce_retry_jiffies(struct sroce_qp *qp)
{
	struct sroce_comp *comp = &qp->comp;
	u64 iba = nsecs_to_jiffies64(4096ULL << min_t(u8, qp->attr.timeout,
						      31));
	u64 wait = iba;

	if (comp->srtt)	/* RFC 6298 2.3: SRTT + 4 * RTTVAR */
		wait = max_t(u64, wait, (comp->srtt >> 3) +
			     max(comp->rttvar, 1U));
	wait = min_t(u64, wait << comp->backoff, SROCE_RTO_MAX);
	return max3(iba, wait, 1ULL);
}

/**
 * sroce_comp_timing - what the retry timer of @qp goes by, for operators
 * @qp: an RC QP, with qp->lock held
 * @srtt_ms: set to its smoothed round trip (0: none measured)
 * @retry_ms: set to the time it waits for an ACK now
 */
void sroce_comp_timing(struct sroce_qp *qp, u32 *srtt_ms, u32 *retry_ms)
{
	*srtt_ms = jiffies_to_msecs(qp->comp.srtt >> 3);
	*retry_ms = qp->attr.timeout ?
		    jiffies_to_msecs(sroce_retry_jiffies(qp)) : 0;
}

/**
 * sroce_comp_time - time the round trip of a request, if none is timed
 * @qp: an RC QP, with qp->lock held
 * @psn: the last PSN of a request sent for the first time
 *
 * Karn's rule (RFC 6298 3): only a request sent once is timed, and a
 * retry ends the timing (sroce_req_rewind()), as its ACK could be the
 * answer to either copy.
 */
void sroce_comp_time(struct sroce_qp *qp, u32 psn)
{
	if (qp->comp.rtt_on)
		return;
	qp->comp.rtt_on = true;
	qp->comp.rtt_psn = psn;
	qp->comp.rtt_at = jiffies;
}

/**
 * sroce_comp_new_path - forget the round trip of the old path
 * @qp: a QP, with qp->lock held, whose AV was just changed
 *
 * RFC 6298 5 leaves what to do on a route change open; a new address may
 * be nearer or farther than the old one, so its timeout starts from the
 * user's again (sroce_retry_jiffies()), undoubled.
 */
void sroce_comp_new_path(struct sroce_qp *qp)
{
	qp->comp.srtt = 0;
	qp->comp.rttvar = 0;
	qp->comp.backoff = 0;
	qp->comp.rtt_on = false;
}

/* The timed request is acknowledged: RFC 6298 2.2 and 2.3, in jiffies. */
static void sroce_comp_rtt(struct sroce_qp *qp)
{
	struct sroce_comp *comp = &qp->comp;
	u32 r = clamp_t(unsigned long, jiffies - comp->rtt_at, 1,
			SROCE_RTO_MAX);
	int err;

	comp->rtt_on = false;
	comp->backoff = 0;
	if (!comp->srtt) {
		comp->srtt = r << 3;
		comp->rttvar = r << 1;
		return;
	}
	err = r - (comp->srtt >> 3);
	comp->srtt += err;
	comp->rttvar += abs(err) - (comp->rttvar >> 2);
}

/**
 * sroce_comp_arm - start the retry timer if it does not run
 * @qp: an RC QP, with qp->lock held, that just sent a request
 */
void sroce_comp_arm(struct sroce_qp *qp)
{
	if (!qp->attr.timeout || qp->dead || timer_pending(&qp->retry_timer))
		return;
	qp->comp.progress = jiffies;
	mod_timer(&qp->retry_timer, jiffies + sroce_retry_jiffies(qp));
}

/*
 * The peer answered: the retry counts start again (IBA 9.7.6.1.3 counts
 * retries in a row), the timing of a round trip may end; with everything
 * acknowledged the QP's share of the device's window goes back to the
 * others.
 */
static void sroce_comp_progress(struct sroce_qp *qp, u32 acked)
{
	if (qp->comp.rtt_on &&
	    sroce_psn_diff(qp->comp.psn, qp->comp.rtt_psn) > 0)
		sroce_comp_rtt(qp);
	sroce_win_acked(qp, acked);
	qp->comp.retry = qp->attr.retry_cnt;
	qp->comp.rnr_retry = qp->attr.rnr_retry;
	qp->comp.seq_nak_psn = U32_MAX;
	qp->comp.progress = jiffies;
	if (qp->comp.psn == qp->req.high_psn) {
		/* Everything acknowledged: the path drained, no narrowing. */
		qp->req.cwnd = 0;
		sroce_win_busy(qp, false);
	}
}

/*
 * Mark WQEs up to and including PSN @psn acknowledged (cumulative ACK).
 *
 * @psn is compared with PSNs the window keeps near it (a WQE's last PSN,
 * the next response a read waits for), never with a WQE's first PSN: a
 * message of 2^23 packets (2 GiB at MTU 256) spans half the PSN space,
 * where the difference from its first PSN reads backwards.
 */
static void sroce_comp_ack(struct sroce_qp *qp, u32 psn)
{
	u32 idx, acked = 0, next = sroce_psn_add(psn, 1);
	struct sroce_send_wqe *wqe;
	bool progress = false, lost = false;

	/*
	 * Nothing new: every WQE before comp.psn is acknowledged already.
	 * A late ACK must stop here: its PSN can be more than 2^23 behind
	 * the last PSN of a WQE that is still being sent, where the
	 * comparison below would read it as past that WQE.
	 */
	if (sroce_psn_diff(next, qp->comp.psn) <= 0)
		return;
	for (idx = qp->sq.head; (wqe = sroce_sq_next_sent(qp, &idx)); idx++) {
		if (sroce_wqe_is_rd_op(wqe->opcode)) {
			/*
			 * Only its responses complete a read or atomic, and
			 * the oldest unacknowledged PSN stays at the first
			 * response still missing.  An ACK past it means that
			 * response was lost (IBA 9.7.5.1.1): ask again.
			 */
			u32 stop = sroce_psn_add(wqe->first_psn,
						 wqe->done / qp->mtu);

			if (sroce_psn_diff(next, stop) > 0) {
				next = stop;
				lost = true;
			}
			break;
		}
		if (sroce_psn_diff(psn, sroce_psn_add(wqe->first_psn,
						      wqe->npkts - 1)) < 0)
			break;
		/* An Atomic Write held one of max_rd_atomic (req.c). */
		if (wqe->opcode == SROCE_WR_ATOMIC_WRITE && qp->req.rd_inflight)
			qp->req.rd_inflight--;
		wqe->state = SROCE_WQE_DONE;
		progress = true;
	}
	if (sroce_psn_diff(next, qp->comp.psn) > 0) {
		acked = sroce_psn_diff(next, qp->comp.psn);
		qp->comp.psn = next;
		progress = true;
	}
	if (progress)
		sroce_comp_progress(qp, acked);
	if (lost && qp->comp.gap_psn != qp->comp.psn) {
		qp->comp.gap_psn = qp->comp.psn;
		sroce_req_rewind(qp);
	}
}

/* The WQE whose PSN range holds @psn, or NULL. */
static struct sroce_send_wqe *sroce_comp_wqe(struct sroce_qp *qp, u32 psn)
{
	struct sroce_send_wqe *wqe;
	u32 idx;

	for (idx = qp->sq.head; (wqe = sroce_sq_next_sent(qp, &idx)); idx++) {
		/* From its last PSN first, as in sroce_comp_ack(). */
		u32 last = sroce_psn_add(wqe->first_psn, wqe->npkts - 1);

		if (sroce_psn_diff(psn, last) <= 0)
			return sroce_psn_diff(psn, wqe->first_psn) >= 0 ?
			       wqe : NULL;
	}
	return NULL;
}

/* A read response or atomic ACK for the oldest outstanding PSN. */
static void sroce_comp_data(struct sroce_qp *qp, struct sroce_pkt *pkt,
			    struct sroce_send_wqe *wqe)
{
	struct sroce_atmack *ack = (void *)(pkt->ext + sizeof(struct sroce_aeth));
	u32 last = sroce_psn_diff(pkt->psn, wqe->first_psn) ==
		   wqe->npkts - 1;
	u32 op = sroce_opcode_op(pkt->opcode);
	u64 orig;

	if (wqe->opcode == IB_WR_RDMA_READ) {
		u32 end = wqe->done + pkt->paylen;
		bool chunk_end = last || !(end % (SROCE_READ_CHUNK * qp->mtu));
		bool op_end = op == IB_OPCODE_RDMA_READ_RESPONSE_LAST ||
			      op == IB_OPCODE_RDMA_READ_RESPONSE_ONLY;

		/*
		 * The read was asked for in chunks (req.c), each answered
		 * FIRST..LAST or ONLY (IBA 9.7.5.1.4): LAST or ONLY where a
		 * chunk ends, and nowhere else, so that reads in flight are
		 * counted by the PSNs we asked for, not by what a peer
		 * sends.  A request asked again after a loss starts inside
		 * its chunk with a FIRST where a late answer to the first
		 * request has a MIDDLE: both are taken.  Every packet but
		 * the read's last is a full MTU.
		 */
		if (op < IB_OPCODE_RDMA_READ_RESPONSE_FIRST ||
		    op > IB_OPCODE_RDMA_READ_RESPONSE_ONLY ||
		    op_end != chunk_end ||
		    pkt->paylen != (last ? wqe->length - wqe->done :
				    qp->mtu)) {
			sroce_wqe_done(wqe, IB_WC_BAD_RESP_ERR);
			return;
		}
		/* Into the WQE's SGEs (held, checked again as they are used). */
		if (sroce_wqe_copy(qp, wqe, wqe->done, pkt->payload,
				   pkt->paylen, true)) {
			sroce_wqe_done(wqe, IB_WC_LOC_PROT_ERR);
			return;
		}
		wqe->done += pkt->paylen;
		if (chunk_end && qp->req.rd_inflight)
			qp->req.rd_inflight--;	/* a chunk answered */
	} else {
		if (op != IB_OPCODE_ATOMIC_ACKNOWLEDGE) {
			sroce_wqe_done(wqe, IB_WC_BAD_RESP_ERR);
			return;
		}
		/* The original value, scattered like read data (8 bytes). */
		orig = be64_to_cpu(ack->orig);
		if (sroce_wqe_copy(qp, wqe, 0, &orig, sizeof(orig), true)) {
			sroce_wqe_done(wqe, IB_WC_LOC_PROT_ERR);
			return;
		}
		if (qp->req.rd_inflight)
			qp->req.rd_inflight--;
	}
	qp->comp.psn = sroce_psn_add(pkt->psn, 1);
	if (last)
		wqe->state = SROCE_WQE_DONE;
	sroce_comp_progress(qp, 1);
}

/*
 * retry_cnt retries in a row without progress are used up (IBA
 * 9.7.6.1.3): the oldest WQE, which has been sent, completes in error and
 * the QP enters the Error state.
 */
static void sroce_comp_retry_exc(struct sroce_qp *qp)
{
	struct sroce_send_wqe *wqe;

	/*
	 * What the peer acknowledged meanwhile completes first, so that the
	 * WQE that fails is the oldest one still unanswered, never one the
	 * peer took.  After a go-back (an RNR NAK) the requester may still
	 * stand at WQEs the NAK that used up the retries acknowledged: it
	 * catches up to them.  If completing failed the QP (a WQE in error,
	 * or a CQ with no room), the SQ is flushed and sq.head is no WQE.
	 */
	sroce_req_catch_up(qp);
	if (sroce_comp_run(qp))
		return;
	/* Nothing sent is unanswered: there is nothing to fail. */
	if (qp->sq.head == smp_load_acquire(&qp->sq.tail))
		return;
	wqe = sroce_sq_wqe(qp, qp->sq.head);
	if (wqe->state != SROCE_WQE_PENDING)
		return;
	sroce_wqe_done(wqe, IB_WC_RETRY_EXC_ERR);
	/*
	 * After a go-back the requester may be resending this very WQE
	 * (req.idx == sq.head): nothing would complete it.
	 */
	if (qp->req.idx == qp->sq.head) {
		qp->req.idx++;
		qp->req.offset = 0;
	}
	sroce_comp_run(qp);
}

/* RNR NAK timer values in microseconds, IBA 9.7.5.2.8 table 45. */
static const u32 sroce_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static void sroce_comp_nak(struct sroce_qp *qp, struct sroce_pkt *pkt,
			   u8 syndrome)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	bool rnr = (syndrome & SROCE_AETH_TYPE_MASK) == SROCE_AETH_RNR_NAK;
	struct sroce_send_wqe *wqe;
	bool late;

	if (rnr)
		sroce_count(sdev, SROCE_CNT_RNR_NAK_RCVD);
	else if ((syndrome & SROCE_AETH_VALUE_MASK) == SROCE_NAK_PSN_SEQ)
		sroce_count(sdev, SROCE_CNT_SEQ_NAK_RCVD);
	/* A NAK acknowledges everything before its PSN. */
	sroce_comp_ack(qp, sroce_psn_add(pkt->psn, SROCE_PSN_MASK));
	/*
	 * A NAK for a PSN acknowledged since is a late copy (the answer to
	 * a packet we sent again has gone past it): acting on it would go
	 * back, wait an RNR time, or fail a message the responder took, and
	 * rdma_rxe ignores it.  But an error NAK may name a READ some of
	 * whose answers came (rdma_rxe NAKs with the request's PSN when its
	 * MR check fails mid-answer): it counts while that READ is pending.
	 */
	late = sroce_psn_diff(pkt->psn, qp->comp.psn) < 0;
	if (late &&
	    (rnr || (syndrome & SROCE_AETH_VALUE_MASK) == SROCE_NAK_PSN_SEQ))
		return;
	wqe = sroce_comp_wqe(qp, pkt->psn);
	if (late && wqe && wqe->opcode != IB_WR_RDMA_READ)
		return;

	if (rnr) {
		if (!wqe)
			return;
		if (!qp->comp.rnr_retry) {
			sroce_wqe_done(wqe, IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->comp.rnr_retry != 7)
			qp->comp.rnr_retry--;
		qp->comp.rnr_wait = true;
		/*
		 * The packets sent behind the refused one reach the
		 * responder out of sequence: its sequence NAK for this PSN
		 * follows, and asks for the go-back done here.  Taken as a
		 * copy, it uses no retry, or an RNR NAK that rnr_retry 7
		 * allows for ever would end in retry exceeded.
		 */
		qp->comp.seq_nak_psn = pkt->psn;
		sroce_req_rewind(qp);
		/*
		 * The responder drops what follows the refused PSN (IBA
		 * 9.7.5.2.8), and nothing is sent until the RNR timer ends:
		 * the QP's share of the device's window goes to the others
		 * meanwhile, or a peer that answers RNR for ever would hold
		 * it (window.c).  Sending again takes it back (req.c).
		 */
		sroce_win_busy(qp, false);
		if (!qp->dead) {
			u32 us = sroce_rnr_usecs[syndrome &
						 SROCE_AETH_VALUE_MASK];

			mod_timer(&qp->rnr_timer,
				  jiffies + usecs_to_jiffies(us));
		}
		return;
	}
	switch (syndrome & SROCE_AETH_VALUE_MASK) {
	case SROCE_NAK_PSN_SEQ:
		/*
		 * Everything before the NAK's PSN was acknowledged above.  Go
		 * back once for it: a responder NAKs a sequence error once
		 * (IBA 9.7.5.1.2), so another NAK of that PSN is a copy, and
		 * going back again for each would resend the window for every
		 * copy.  A sequence error uses a retry, as a timeout does
		 * (IBA 9.7.6.1.3: retry_cnt).
		 */
		if (!wqe || qp->comp.seq_nak_psn == pkt->psn)
			return;
		qp->comp.seq_nak_psn = pkt->psn;
		if (!qp->comp.retry) {
			sroce_comp_retry_exc(qp);
			return;
		}
		qp->comp.retry--;
		sroce_req_rewind(qp);
		return;
	case SROCE_NAK_INV_REQ:
		if (wqe)
			wqe->status = IB_WC_REM_INV_REQ_ERR;
		break;
	case SROCE_NAK_REM_ACCESS:
		if (wqe)
			wqe->status = IB_WC_REM_ACCESS_ERR;
		break;
	default:
		if (wqe)
			wqe->status = IB_WC_REM_OP_ERR;
		break;
	}
	if (wqe)
		wqe->state = SROCE_WQE_DONE;
}

/**
 * sroce_comp_rcv - handle a response packet of an RC QP
 * @qp: the QP, with qp->lock held (the packet holds a reference)
 * @pkt: the response: ACK/NAK, read response or atomic ACK
 */
void sroce_comp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_send_wqe *wqe;
	u8 syndrome = 0, type;

	lockdep_assert_held(&qp->lock);
	if (qp->ibqp.qp_type != IB_QPT_RC || qp->state < IB_QPS_RTS ||
	    qp->state == IB_QPS_ERR)
		return;
	/* An ACK or NAK from anyone but the peer could kill the QP. */
	if (!sroce_pkt_from_peer(qp, pkt)) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_BAD_SRC);
		return;
	}
	/*
	 * Nothing we did not send can be acknowledged (IBA 9.7.5.1.3); after
	 * a retry, req.psn is behind what was sent, and a late response to
	 * a packet sent before it is still valid.
	 */
	if (sroce_psn_diff(pkt->psn, qp->req.high_psn) >= 0 ||
	    sroce_psn_diff(pkt->psn, qp->comp.psn) < -SROCE_PSN_WINDOW) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_DUP);
		return;
	}
	if (pkt->info & SROCE_H_AETH)
		syndrome = be32_to_cpu(((struct sroce_aeth *)pkt->ext)->smsn) >>
			   24;
	/*
	 * IBA 9.7.5.2.1: the syndrome's types 010 and 1xx are reserved,
	 * and only an ACKNOWLEDGE packet carries a NAK; a read response or
	 * atomic ACK carries an ACK.  Anything else is malformed, dropped.
	 */
	type = syndrome & SROCE_AETH_TYPE_MASK;
	if (type != SROCE_AETH_ACK &&
	    (sroce_opcode_op(pkt->opcode) != IB_OPCODE_ACKNOWLEDGE ||
	     (type != SROCE_AETH_RNR_NAK && type != SROCE_AETH_NAK))) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_BAD_HDR);
		return;
	}
	if (type != SROCE_AETH_ACK) {
		sroce_comp_nak(qp, pkt, syndrome);
		goto run;
	}
	if (sroce_opcode_op(pkt->opcode) == IB_OPCODE_ACKNOWLEDGE) {
		sroce_comp_ack(qp, pkt->psn);
		goto run;
	}

	/* Read response or atomic ACK: it acknowledges what came before. */
	wqe = sroce_comp_wqe(qp, pkt->psn);
	/*
	 * An Atomic Write's answer: an RDMA READ Response Only without
	 * payload (IBA 1.5, A19.4.2; sroce and rdma_rxe 6.2+), or an ACK
	 * (earlier sroce).  Either acknowledges it and all before it.
	 */
	if (wqe && wqe->opcode == SROCE_WR_ATOMIC_WRITE &&
	    sroce_opcode_op(pkt->opcode) ==
	    IB_OPCODE_RDMA_READ_RESPONSE_ONLY && !pkt->paylen) {
		sroce_comp_ack(qp, pkt->psn);
		goto run;
	}
	if (!wqe || (!sroce_wqe_is_rd_op(wqe->opcode) &&
		     sroce_psn_diff(pkt->psn, qp->comp.psn) < 0)) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_DUP);
		goto run;
	}
	/*
	 * A read response or atomic ACK for a PSN of a SEND, WRITE, or (with
	 * payload) Atomic Write answers no request we sent: a bad response
	 * (IBA 9.9.2; rdma_rxe completes it with a fatal error).  Dropped,
	 * the WQE would end in retry exceeded, much later.
	 */
	if (!sroce_wqe_is_rd_op(wqe->opcode)) {
		sroce_comp_ack(qp, sroce_psn_add(wqe->first_psn,
						 SROCE_PSN_MASK));
		sroce_wqe_done(wqe, IB_WC_BAD_RESP_ERR);
		goto run;
	}
	sroce_comp_ack(qp, sroce_psn_add(wqe->first_psn, SROCE_PSN_MASK));
	if (pkt->psn != qp->comp.psn) {
		/* A gap or a duplicate; a gap means loss: ask again once. */
		if (sroce_psn_diff(pkt->psn, qp->comp.psn) > 0 &&
		    qp->comp.gap_psn != qp->comp.psn) {
			qp->comp.gap_psn = qp->comp.psn;
			sroce_count(to_sdev(qp->ibqp.device),
				    SROCE_CNT_RX_OUT_OF_SEQ);
			sroce_req_rewind(qp);
		}
		goto run;
	}
	sroce_comp_data(qp, pkt, wqe);
run:
	sroce_req_catch_up(qp);
	sroce_comp_run(qp);
	if (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD) {
		if (sroce_req_run(qp, 16))
			sroce_qp_kick(qp);
	}
}

static void sroce_retry_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, retry_timer);
	unsigned long due;

	spin_lock_bh(&qp->lock);
	/*
	 * Nothing unanswered: no packet unacknowledged, no WQE unfinished;
	 * or no timeout at all (0: infinite, IBA 9.7.6.1.3), which a modify
	 * in SQD may have set while the timer was pending.
	 */
	if (qp->dead || qp->state == IB_QPS_ERR || !qp->attr.timeout ||
	    (qp->comp.psn == qp->req.psn && qp->sq.head == qp->req.idx))
		goto out;
	/*
	 * The peer answered with an RNR NAK: nothing may be sent until the
	 * RNR timer ends, which starts the clock again (sroce_rnr_timer()).
	 * A long RNR time is no missing ACK.
	 */
	if (qp->comp.rnr_wait) {
		mod_timer(&qp->retry_timer, jiffies + sroce_retry_jiffies(qp));
		goto out;
	}
	due = qp->comp.progress + sroce_retry_jiffies(qp);
	if (time_before(jiffies, due)) {
		mod_timer(&qp->retry_timer, due);
		goto out;
	}
	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RETRY_TIMEOUT);
	if (!qp->comp.retry) {
		sroce_comp_retry_exc(qp);
		goto out;
	}
	qp->comp.retry--;
	if (qp->comp.backoff < 5)
		qp->comp.backoff++;
	qp->comp.gap_psn = U32_MAX;
	qp->comp.seq_nak_psn = U32_MAX;
	sroce_win_timeout(qp);
	sroce_req_rewind(qp);
	qp->comp.progress = jiffies;
	mod_timer(&qp->retry_timer, jiffies + sroce_retry_jiffies(qp));
	sroce_qp_kick(qp);
out:
	sroce_qp_unlock(qp);
}

/**
 * sroce_qp_kick_later - run the send side again a tick from now
 * @qp: the QP, with qp->lock held
 *
 * For a packet that could not be allocated: nothing went out, so no ACK
 * and no retry timeout brings the QP back; and kicking at once would spin
 * on an empty allocator.  The RNR timer is the one that only kicks; while
 * it runs for an RNR wait nothing is sent anyway.
 */
void sroce_qp_kick_later(struct sroce_qp *qp)
{
	if (!qp->dead && !timer_pending(&qp->rnr_timer))
		mod_timer(&qp->rnr_timer, jiffies + 1);
}

static void sroce_rnr_timer(struct timer_list *t)
{
	struct sroce_qp *qp = from_timer(qp, t, rnr_timer);

	spin_lock_bh(&qp->lock);
	/* An RNR NAK set it again while we waited for the lock: not yet. */
	if (timer_pending(&qp->rnr_timer)) {
		sroce_qp_unlock(qp);
		return;
	}
	/*
	 * The end of an RNR wait starts the retry clock again; a tick of
	 * sroce_qp_kick_later() does not: allocations failing for as long as
	 * the retry timeout still end in a retry, as a peer gone silent does.
	 */
	if (qp->comp.rnr_wait) {
		qp->comp.rnr_wait = false;
		qp->comp.progress = jiffies;
	}
	sroce_qp_unlock(qp);
	sroce_qp_kick(qp);
}

void sroce_comp_init(struct sroce_qp *qp)
{
	timer_setup(&qp->retry_timer, sroce_retry_timer, 0);
	timer_setup(&qp->rnr_timer, sroce_rnr_timer, 0);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce transport engine, responder: executes request packets (IBA 9.7.4,
 * 9.7.5) and sends the responses.
 *
 *  - Requests are executed in PSN order.  A PSN ahead of the expected one
 *    is a sequence error: one NAK until the expected PSN arrives (9.7.5.1.2).
 *    A PSN behind it is a duplicate (9.7.5.1.3): SEND/WRITE are not executed
 *    again but ACKed, reads are answered again from the duplicate's RETH,
 *    atomics and atomic writes are answered from their responder resource
 *    and never executed twice.
 *  - A SEND without a receive WQE gets an RNR NAK with the QP's
 *    min_rnr_timer (9.7.5.2.8); bad keys and rights a remote access NAK,
 *    malformed requests an invalid request NAK; both put the QP in Error.
 *  - Reads, atomics and atomic writes are queued as responder resources,
 *    answered in order; neither an ACK nor an RNR or sequence NAK
 *    overtakes their responses (PSN order).
 *  - ACKs are coalesced (9.7.5.1.1: an ACK acknowledges every request up
 *    to its PSN): a request that asks for one makes it due, and the ACK
 *    leaves when the receive batch of this CPU ends (a tasklet, run after
 *    the network softirq), so a burst of requests gets one ACK, the one
 *    of its last request.  Anything else the responder sends (a NAK, an
 *    RNR NAK, a read or atomic response) sends a due ACK first: the
 *    requester sees the responses in PSN order.
 *  - UD: Q_Key check (10.2.5), the 40-byte GRH area in front of the data
 *    (IB_WC_GRH), source QP and network header type in the completion.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "sroce.h"
#include "trace.h"

#define SROCE_RESP_BUDGET	16

/* Send an ACK, RNR NAK or NAK for @psn with @msn (IBA 9.7.5.2.1). */
static void sroce_resp_ack_msn(struct sroce_qp *qp, u32 psn, u8 syndrome,
			       u32 msn)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_aeth *aeth;
	struct sroce_pkt pkt;

	if (sroce_pkt_alloc(sdev, &pkt, IB_OPCODE_RC | IB_OPCODE_ACKNOWLEDGE, 0))
		return;
	pkt.bth->qpn = cpu_to_be32(qp->attr.dest_qp_num & SROCE_QPN_MASK);
	pkt.bth->apsn = cpu_to_be32(psn & SROCE_PSN_MASK);
	aeth = (void *)pkt.ext;
	aeth->smsn = cpu_to_be32(syndrome << 24 | (msn & SROCE_PSN_MASK));
	if ((syndrome & SROCE_AETH_TYPE_MASK) == SROCE_AETH_ACK)
		sroce_count(sdev, SROCE_CNT_ACK_SENT);
	sroce_qp_xmit(qp, &pkt, false);
}

/* The coalesced ACK, if one is due (qp->lock held). */
static void sroce_resp_ack_flush(struct sroce_qp *qp)
{
	if (!qp->resp.ack_due)
		return;
	qp->resp.ack_due = false;
	sroce_resp_ack_msn(qp, qp->resp.ack_psn, SROCE_AETH_CREDIT_NONE,
			   qp->resp.ack_msn);
}

/* Send an ACK, RNR NAK or NAK for @psn now, after any ACK due. */
static void sroce_resp_ack(struct sroce_qp *qp, u32 psn, u8 syndrome)
{
	sroce_resp_ack_flush(qp);
	sroce_resp_ack_msn(qp, psn, syndrome, qp->resp.msn);
}

/**
 * sroce_resp_ack_owed - send the coalesced ACK (or deferred fatal NAK) a
 *	QP owes, before it stops responding
 * @qp: the QP, with qp->lock held; the ACK leaves when it is released
 *
 * Called before the QP enters Error or is destroyed.  The completions of
 * the requests the ACK covers are written already, and their consumer may
 * have polled them and moved on; the requester still waits for the ACK
 * (IBA 9.7.5.1.1), and would retry into a QP that answers no more.  A NIC
 * sends it before the completion shows; the batch would not send it from
 * a QP in Error or destroyed.
 */
void sroce_resp_ack_owed(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;

	lockdep_assert_held(&qp->lock);
	if (qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR)
		return;
	sroce_resp_ack_flush(qp);
	/*
	 * So is a fatal NAK that waited for read responses (see
	 * __sroce_resp_fatal()), when the QP stops first for another cause.
	 */
	if (resp->fatal_pending) {
		resp->fatal_pending = false;
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_ERR_NAK_SENT);
		sroce_resp_ack(qp, resp->fatal_psn,
			       SROCE_AETH_NAK | resp->fatal_code);
	}
}

/* The QPs of one CPU with an ACK due, and the tasklet that sends them. */
struct sroce_ack_batch {
	struct list_head qps;
	struct tasklet_struct tasklet;
};

static DEFINE_PER_CPU(struct sroce_ack_batch, sroce_ack_batch);

/*
 * The end of a receive batch: each QP's due ACK leaves.  The list is this
 * CPU's, touched only in softirq context on this CPU; a QP leaves it
 * before its flag is cleared under its lock, so another CPU can only add
 * it to its own list once it is off this one.
 */
static void sroce_ack_batch_run(struct tasklet_struct *t)
{
	struct sroce_ack_batch *b = from_tasklet(b, t, tasklet);
	struct sroce_qp *qp, *next;
	LIST_HEAD(list);

	list_splice_init(&b->qps, &list);
	list_for_each_entry_safe(qp, next, &list, resp.ack_node) {
		list_del_init(&qp->resp.ack_node);
		spin_lock_bh(&qp->lock);
		qp->resp.ack_queued = false;
		if (!qp->dead && qp->state >= IB_QPS_RTR &&
		    qp->state != IB_QPS_ERR)
			sroce_resp_ack_flush(qp);
		qp->resp.ack_due = false;
		sroce_qp_unlock(qp);
		sroce_qp_put(qp);
	}
}

/*
 * A request asked for an ACK (qp->lock held, BH off): it is due, and goes
 * with the batch unless a later request of the batch replaces it.
 */
static void sroce_resp_ack_later(struct sroce_qp *qp, u32 psn)
{
	struct sroce_ack_batch *b;

	if (qp->resp.ack_due)	/* this one covers it */
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_ACK_COALESCED);
	qp->resp.ack_psn = psn;
	qp->resp.ack_msn = qp->resp.msn;
	qp->resp.ack_due = true;
	if (qp->resp.ack_queued)
		return;
	/* The packet being handled holds the QP: this cannot fail. */
	if (!sroce_qp_hold(qp)) {
		sroce_resp_ack_flush(qp);
		return;
	}
	qp->resp.ack_queued = true;
	b = this_cpu_ptr(&sroce_ack_batch);
	list_add_tail(&qp->resp.ack_node, &b->qps);
	tasklet_schedule(&b->tasklet);
}

void sroce_resp_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct sroce_ack_batch *b = per_cpu_ptr(&sroce_ack_batch, cpu);

		INIT_LIST_HEAD(&b->qps);
		tasklet_setup(&b->tasklet, sroce_ack_batch_run);
	}
}

/* No QP is left (each on a list holds a reference its destroy waits for). */
void sroce_resp_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		tasklet_kill(&per_cpu_ptr(&sroce_ack_batch, cpu)->tasklet);
}

/*
 * Send an RNR or sequence NAK for @psn (the expected PSN), counted as
 * sent when it leaves.  It acknowledges every request before @psn (IBA
 * 9.7.5.1.1), READs included, so it must not overtake their responses:
 * a requester takes a NAK beyond a READ it has no answer for as the loss
 * of that answer, and asks for the READ again.  While responses are
 * queued it waits behind them, in sroce_resp_tx(); the first one waits,
 * since a second can only be for the same PSN, and a request at that PSN
 * makes it moot (sroce_resp_connected()).
 */
static void sroce_resp_nak_ordered(struct sroce_qp *qp, u32 psn, u8 syndrome)
{
	struct sroce_resp *resp = &qp->resp;

	if (resp->rd_next != resp->rd_tail) {
		/* Its PSN is epsn, which no packet moves while it waits. */
		if (!resp->nak_pending) {
			resp->nak_pending = true;
			resp->nak_syndrome = syndrome;
		}
		return;
	}
	sroce_count(to_sdev(qp->ibqp.device),
		    (syndrome & SROCE_AETH_TYPE_MASK) == SROCE_AETH_RNR_NAK ?
		    SROCE_CNT_RNR_NAK_SENT : SROCE_CNT_SEQ_NAK_SENT);
	sroce_resp_ack(qp, psn, syndrome);
}

static void sroce_resp_nak(struct sroce_qp *qp, u32 psn, u8 code)
{
	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_ERR_NAK_SENT);
	sroce_resp_ack(qp, psn, SROCE_AETH_NAK | code);
}

/* The resource at free-running index @i. */
static struct sroce_rd_res *sroce_rd_at(struct sroce_resp *resp, u32 i)
{
	return &resp->rd[i & (resp->rd_size - 1)];
}

static void sroce_resp_fatal_now(struct sroce_qp *qp, u32 psn, u8 code,
				 bool event)
{
	/* This NAK ends the QP: one deferred for a later PSN is moot. */
	qp->resp.fatal_pending = false;
	sroce_resp_nak(qp, psn, code);
	if (qp->state == IB_QPS_ERR)
		return;
	if (event)
		sroce_qp_note(qp, code == SROCE_NAK_INV_REQ ?
			      IB_EVENT_QP_REQ_ERR : code == SROCE_NAK_REM_ACCESS ?
			      IB_EVENT_QP_ACCESS_ERR : IB_EVENT_QP_FATAL);
	sroce_qp_error(qp);
}

/*
 * Responses leave in the order of their requests' PSNs (IBA 9.7.5.1):
 * the NAK of a request behind a READ whose responses are still queued
 * waits for them, as the QP's move to Error, which would drop them (the
 * requester would take the NAK for an implied NAK of that READ, ask for
 * it again from a QP in Error, and end in a retry error instead of this
 * one).  Requests that come meanwhile are dropped (sroce_resp_connected()).
 */
static void __sroce_resp_fatal(struct sroce_qp *qp, u32 psn, u8 code,
			       bool event)
{
	struct sroce_resp *resp = &qp->resp;
	u32 i = resp->rd_tail;

	if (qp->state != IB_QPS_ERR) {
		for (i = resp->rd_next; i != resp->rd_tail; i++) {
			const struct sroce_rd_res *res = sroce_rd_at(resp, i);

			if (res->sent != res->npkts)
				break;
		}
	}
	/* No answer left to send first (a failed atomic has none). */
	if (i == resp->rd_tail) {
		sroce_resp_fatal_now(qp, psn, code, event);
		return;
	}
	if (resp->fatal_pending)
		return;
	resp->fatal_pending = true;
	resp->fatal_event = event;
	resp->fatal_code = code;
	resp->fatal_psn = psn;
	/* The answers are on their way; be sure something sends them. */
	sroce_qp_kick(qp);
}

/*
 * A class C/D error at the responder of an RC QP: NAK, then the QP enters
 * the Error state (IBA 9.9.3.1.3, 10.3.1).  No receive WQE completes in
 * error for it (a WRITE, READ or atomic, or a SEND between its WQEs), so
 * its consumer hears why from the affiliated asynchronous error of IBA
 * 11.6.3.1: Invalid Request, Local Access Violation or, for an
 * operational error, Local Work Queue Catastrophic Error.
 */
static void sroce_resp_fatal(struct sroce_qp *qp, u32 psn, u8 code)
{
	__sroce_resp_fatal(qp, psn, code, true);
}

/* Take the next receive WQE of the QP or of its SRQ into resp.wqe. */
static bool sroce_resp_get_wqe(struct sroce_qp *qp)
{
	struct sroce_srq *srq = qp->ibqp.srq ? to_ssrq(qp->ibqp.srq) : NULL;
	struct sroce_queue *q = srq ? &srq->rq : &qp->rq;
	struct sroce_recv_wqe *wqe;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	/* What the process posted to a mapped queue since the last look. */
	if (q->ring)
		sroce_rq_pull(q);
	if (q->head == q->tail) {
		spin_unlock_irqrestore(&q->lock, flags);
		return false;
	}
	wqe = sroce_queue_slot(q, q->head);
	memcpy(qp->resp.wqe, wqe, sizeof(*wqe) +
	       wqe->num_sge * sizeof(struct ib_sge));
	q->head++;
	sroce_uring_publish(q);
	/*
	 * IBA 10.2.9.3: the limit event fires once, then is disarmed; it is
	 * delivered when qp->lock is released (sroce_qp_deliver_events()).
	 * A mapped SRQ counts what its ring holds too, not only the last
	 * look's worth.
	 */
	if (srq && srq->limit && sroce_rq_posted(q) < srq->limit) {
		srq->limit = 0;
		WRITE_ONCE(srq->limit_due, true);
	}
	spin_unlock_irqrestore(&q->lock, flags);
	qp->resp.have_wqe = true;
	qp->resp.offset = 0;
	return true;
}

static void sroce_resp_complete(struct sroce_qp *qp, struct ib_wc *wc,
				bool solicited)
{
	wc->wr_id = qp->resp.wqe->wr_id;
	wc->qp = &qp->ibqp;
	qp->resp.have_wqe = false;
	trace_sroce_complete(qp, wc);
	sroce_qp_complete(qp, qp->ibqp.recv_cq, wc, solicited);
}

/* A receive WQE that ends in error, then the QP (IBA 10.3.1). */
static void sroce_resp_wqe_error(struct sroce_qp *qp, enum ib_wc_status st)
{
	struct ib_wc wc = { .status = st, .opcode = IB_WC_RECV };

	if (qp->resp.have_wqe)
		sroce_resp_complete(qp, &wc, false);
}

/*
 * sroce_resp_fatal() for a request whose receive WQE in progress (if
 * any) completes with @st: that completion tells the consumer, with no
 * async event beside it.
 */
static void sroce_resp_fatal_wqe(struct sroce_qp *qp, u32 psn, u8 code,
				 enum ib_wc_status st)
{
	bool told = qp->resp.have_wqe;

	sroce_resp_wqe_error(qp, st);
	__sroce_resp_fatal(qp, psn, code, !told);
}

/**
 * sroce_resp_flush_wqe - complete the receive WQE in progress, flushed
 * @qp: the QP, with qp->lock held, entering the Error state (or RESET,
 *	for a WQE of an SRQ)
 *
 * A SEND in progress took its receive WQE off the RQ or the SRQ; the
 * flush of the queue no longer sees it, so it completes here (IBA 10.3.1:
 * every posted WR completes).
 */
void sroce_resp_flush_wqe(struct sroce_qp *qp)
{
	if (qp->resp.have_wqe)
		sroce_flush_wr(qp, qp->ibqp.recv_cq, qp->resp.wqe->wr_id,
			       IB_WC_RECV);
	qp->resp.have_wqe = false;
}

static void sroce_resp_drop_write(struct sroce_qp *qp)
{
	if (qp->resp.mr)
		sroce_mr_put(qp->resp.mr);
	qp->resp.mr = NULL;
}

/**
 * sroce_resp_reset - forget the responder's state
 * @qp: the QP, with qp->lock held (RESET or Error)
 */
void sroce_resp_reset(struct sroce_qp *qp)
{
	u32 i;

	sroce_resp_drop_write(qp);
	for (i = 0; i < qp->resp.rd_size; i++) {
		if (qp->resp.rd[i].mr)
			sroce_mr_put(qp->resp.rd[i].mr);
	}
	/*
	 * The answered atomics go too: a duplicate that reaches the QP's
	 * next connection must not be answered with this one's values.
	 */
	if (qp->resp.rd_size)
		memset(qp->resp.rd, 0, qp->resp.rd_size * sizeof(*qp->resp.rd));
	qp->resp.rd_next = qp->resp.rd_tail;
	qp->resp.fatal_pending = false;
	qp->resp.have_wqe = false;
	qp->resp.cur = SROCE_MSG_NONE;
}

/**
 * sroce_resp_resize - give the responder a new ring of read and atomic
 *	resources
 * @qp: the QP, with qp->lock held
 * @rd: in: the new ring, zeroed, or NULL for none; out: the old ring, for
 *	the caller to free after the lock (the new one when refused)
 * @size: the new ring's entries: 0 or a power of two
 *
 * The responder resources are the consumer's max_dest_rd_atomic (IBA
 * 9.7.7.1: set at RTR, changed in SQD); modify_qp allocates them outside
 * the lock.  Every pending resource moves over, with a free entry to
 * spare, and as many answered ones as fit, newest first, so their
 * duplicates are still answered.  A pending atomic's answer cannot be
 * asked for again, so a ring too small for the pending ones is refused.
 *
 * Return: 0, or -EBUSY when more resources are pending than @size holds.
 */
int sroce_resp_resize(struct sroce_qp *qp, struct sroce_rd_res **rd, u32 size)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_rd_res *old = resp->rd;
	u32 keep = min(size, resp->rd_size), pending, i;

	lockdep_assert_held(&qp->lock);
	pending = resp->rd_tail - resp->rd_next;
	if (pending && pending >= size)
		return -EBUSY;
	for (i = resp->rd_tail - resp->rd_size; i != resp->rd_tail; i++) {
		struct sroce_rd_res *res = sroce_rd_at(resp, i);

		if (resp->rd_tail - i <= keep)
			(*rd)[i & (size - 1)] = *res;
		else if (res->mr)	/* answered: none held, but be sure */
			sroce_mr_put(res->mr);
	}
	resp->rd = *rd;
	resp->rd_size = size;
	*rd = old;
	return 0;
}

/* Bytes per response packet; the last one carries the rest. */
static u32 sroce_rd_npkts(struct sroce_qp *qp, u32 len)
{
	return max_t(u32, 1, DIV_ROUND_UP(len, qp->mtu));
}

/*
 * Free the resources at the head of the ring whose answers are all sent
 * (or dropped for a duplicate READ): their MRs go, their slots may be
 * taken again.  Their records stay for duplicates (sroce_resp_duplicate()).
 * Return: whether a resource has answers to send.
 */
static bool sroce_rd_reap(struct sroce_resp *resp)
{
	while (resp->rd_next != resp->rd_tail) {
		struct sroce_rd_res *res = sroce_rd_at(resp, resp->rd_next);

		if (res->sent != res->npkts)
			return true;
		if (res->mr)
			sroce_mr_put(res->mr);
		res->mr = NULL;
		resp->rd_next++;
	}
	return false;
}

/**
 * sroce_resp_tx - send queued read responses and atomic ACKs
 * @qp: the QP, with qp->lock held
 * @budget: packets at most
 *
 * Return: true if responses are left that the budget stopped.
 */
bool sroce_resp_tx(struct sroce_qp *qp, int budget)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_resp *resp = &qp->resp;

	lockdep_assert_held(&qp->lock);
	if (qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR)
		return false;
	if (resp->rd_next != resp->rd_tail)
		sroce_resp_ack_flush(qp);	/* PSN order on the wire */
	while (sroce_rd_reap(resp)) {
		struct sroce_rd_res *res = sroce_rd_at(resp, resp->rd_next);
		struct sroce_pkt pkt;
		u32 off, paylen = 0;
		u8 op;

		if (budget-- <= 0)
			return true;
		if (res->op == IB_OPCODE_RDMA_READ_REQUEST) {
			bool first = res->sent == 0;
			bool last = res->sent == res->npkts - 1;

			op = first && last ? IB_OPCODE_RDMA_READ_RESPONSE_ONLY :
			     first ? IB_OPCODE_RDMA_READ_RESPONSE_FIRST :
			     last ? IB_OPCODE_RDMA_READ_RESPONSE_LAST :
			     IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE;
			off = res->sent * qp->mtu;
			paylen = min(res->len - off, qp->mtu);
		} else if (res->op == SROCE_OPCODE_ATOMIC_WRITE) {
			op = IB_OPCODE_RDMA_READ_RESPONSE_ONLY;
			off = 0;
		} else {
			op = IB_OPCODE_ATOMIC_ACKNOWLEDGE;
			off = 0;
		}
		if (sroce_pkt_alloc(sdev, &pkt, IB_OPCODE_RC | op, paylen)) {
			/* No packet memory: the response waits a tick. */
			sroce_qp_kick_later(qp);
			return false;
		}
		pkt.bth->qpn = cpu_to_be32(qp->attr.dest_qp_num &
					   SROCE_QPN_MASK);
		pkt.bth->apsn = cpu_to_be32(sroce_psn_add(res->psn,
							  res->sent));
		if (pkt.info & SROCE_H_AETH) {
			struct sroce_aeth *aeth = (void *)pkt.ext;

			aeth->smsn = cpu_to_be32(SROCE_AETH_CREDIT_NONE << 24 |
						 (res->msn & SROCE_PSN_MASK));
		}
		if (op == IB_OPCODE_ATOMIC_ACKNOWLEDGE) {
			struct sroce_atmack *a = (void *)(pkt.ext +
						sizeof(struct sroce_aeth));

			a->orig = cpu_to_be64(res->orig);
		}
		/*
		 * Checked again for every packet: the MR may have been
		 * invalidated or deregistered since the request came.
		 */
		/*
		 * Copied, never sent from the MR's pages: the responder's
		 * process may write them while the response is queued below
		 * us, and a payload that changes after its ICRC was computed
		 * is dropped at the requester, again at every retry.
		 */
		if (paylen && sroce_mr_access(res->mr, res->rkey, qp,
					      IB_ACCESS_REMOTE_READ,
					      res->va + off, pkt.payload,
					      paylen, false)) {
			kfree_skb(pkt.skb);
			sroce_resp_fatal_now(qp,
					     sroce_psn_add(res->psn, res->sent),
					     SROCE_NAK_REM_ACCESS, true);
			return false;
		}
		sroce_qp_xmit(qp, &pkt, false);
		res->sent++;
	}
	if (resp->ack_pending) {
		resp->ack_pending = false;
		sroce_resp_ack(qp, sroce_psn_add(resp->epsn, SROCE_PSN_MASK),
			       SROCE_AETH_CREDIT_NONE);
	}
	if (resp->fatal_pending) {
		/* Its NAK is for epsn too, and says more. */
		resp->nak_pending = false;
		sroce_resp_fatal_now(qp, resp->fatal_psn, resp->fatal_code,
				     resp->fatal_event);
		return false;
	}
	if (resp->nak_pending) {
		resp->nak_pending = false;
		sroce_resp_nak_ordered(qp, resp->epsn, resp->nak_syndrome);
	}
	return false;
}

/**
 * sroce_rd_ring_size - the ring of responder resources for a QP
 * @max_dest_rd_atomic: the consumer's responder resources (IBA 9.7.7.1)
 *
 * Pending answers are not only the requester's outstanding requests:
 * over a lossy link every request it asks again takes a resource of its
 * own (a duplicate READ before the answers it replaces are reaped, an
 * atomic's replayed answer), while the first answers may still be on
 * their way.  So the ring holds twice max_dest_rd_atomic and one more, at
 * least 16 (the fixed ring sroce had), rounded up to a power of two for
 * the free-running indices; none without responder resources.
 *
 * Return: the ring's entries.
 */
u32 sroce_rd_ring_size(u8 max_dest_rd_atomic)
{
	if (!max_dest_rd_atomic)
		return 0;
	return max_t(u32, 16, roundup_pow_of_two(2 * max_dest_rd_atomic + 1));
}

/**
 * sroce_rd_alloc - take a responder resource for a read, atomic or atomic
 *	write
 * @qp: the QP, with qp->lock held
 *
 * Return: the resource, zeroed; NULL when the ring is full (a requester
 * far past our max_dest_rd_atomic, IBA 9.7.7.1) or the consumer gave no
 * resources: the caller answers NAK Invalid Request, as rdma_rxe does for
 * the latter (for the former it recycles its oldest resource); an atomic
 * write in a full ring is acknowledged like a WRITE instead.
 */
struct sroce_rd_res *sroce_rd_alloc(struct sroce_qp *qp)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_rd_res *res;

	lockdep_assert_held(&qp->lock);
	/* Those answered (or a duplicate READ dropped) make room. */
	sroce_rd_reap(resp);
	if (resp->rd_tail - resp->rd_next >= resp->rd_size)
		return NULL;
	res = sroce_rd_at(resp, resp->rd_tail);
	if (res->mr)
		sroce_mr_put(res->mr);
	memset(res, 0, sizeof(*res));
	res->msn = resp->msn;	/* a duplicate's: the MSN as it is now */
	resp->rd_tail++;
	return res;
}

/*
 * Does a duplicate READ at @psn ask again for what @res answers?  The
 * requester goes back N (IBA 9.7.6.1): it asks again for every later
 * request too, and for the rest of the READ it lost a response of.  Both
 * tests are wrap-safe for a READ of 2^23 packets.
 */
static bool sroce_rd_replaced(const struct sroce_rd_res *res, u32 psn)
{
	return sroce_psn_diff(res->psn, psn) >= 0 ||
	       ((psn - res->psn) & SROCE_PSN_MASK) < res->npkts;
}

/*
 * A duplicate READ at @psn is answered in place of the pending answers it
 * asks again for: they are dropped rather than sent ahead of its own (the
 * requester would take one as an implied NAK of this READ).  An atomic's
 * or atomic write's resource stays, to answer its duplicate.  Only if its
 * answer has room, a free slot or the oldest one it replaces: otherwise
 * nothing changes, and the requester asks again.
 */
bool sroce_rd_dup_replace(struct sroce_qp *qp, u32 psn)
{
	struct sroce_resp *resp = &qp->resp;
	u32 i;

	if (!resp->rd_size)
		return false;
	sroce_rd_reap(resp);
	if (resp->rd_tail - resp->rd_next >= resp->rd_size &&
	    !sroce_rd_replaced(sroce_rd_at(resp, resp->rd_next), psn))
		return false;
	for (i = resp->rd_next; i != resp->rd_tail; i++) {
		struct sroce_rd_res *res = sroce_rd_at(resp, i);

		if (sroce_rd_replaced(res, psn))
			res->sent = res->npkts;
	}
	return true;
}

/*
 * sroce_resp_read - an RDMA READ request, new or a duplicate of the READ
 * @dup (NULL for a new one): for a duplicate whose answer has no room, the
 * request is dropped instead of NAKed (the requester asks again).
 */
static void sroce_resp_read(struct sroce_qp *qp, struct sroce_pkt *pkt,
			    const struct sroce_rd_first *dup)
{
	struct sroce_reth *reth = (void *)pkt->ext;
	u64 va = be64_to_cpu(reth->va);
	u32 len = be32_to_cpu(reth->len);
	struct sroce_rd_res *res;
	struct sroce_mr *mr = NULL;

	/* Rights and resources before the R_Key (rdma_rxe's order). */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_READ) ||
	    len > SROCE_MAX_MSG_SIZE || (!qp->resp.rd_size && !dup)) {
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
		return;
	}
	if (len) {
		mr = sroce_mr_lookup(qp, be32_to_cpu(reth->rkey), true,
				     IB_ACCESS_REMOTE_READ, va, len);
		if (!mr) {
			sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_REM_ACCESS);
			return;
		}
	}
	res = !dup || sroce_rd_dup_replace(qp, pkt->psn) ?
	      sroce_rd_alloc(qp) : NULL;
	if (!res) {
		if (mr)
			sroce_mr_put(mr);
		if (!dup)
			sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
		return;
	}
	res->op = IB_OPCODE_RDMA_READ_REQUEST;
	res->psn = pkt->psn;
	res->npkts = sroce_rd_npkts(qp, len);
	res->va = va;
	res->len = len;
	res->rkey = be32_to_cpu(reth->rkey);
	res->mr = mr;
	if (dup) {
		res->first = *dup;
	} else {
		res->first.psn = res->psn;
		res->first.npkts = res->npkts;
		res->first.va = va;
		res->first.len = len;
	}
}

static void sroce_resp_atomic(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_atmeth *a = (void *)pkt->ext;
	u64 va = be64_to_cpu(a->va);
	struct sroce_rd_res *res;
	struct sroce_mr *mr;
	int err;

	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC) ||
	    (va & 7) || !qp->resp.rd_size) {
		/*
		 * IBA 9.4.5: atomics are 8 bytes, naturally aligned; rights
		 * and resources before the R_Key, as for READ.
		 */
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
		return;
	}
	mr = sroce_mr_lookup(qp, be32_to_cpu(a->rkey), true,
			     IB_ACCESS_REMOTE_ATOMIC, va, 8);
	if (!mr) {
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_REM_ACCESS);
		return;
	}
	res = sroce_rd_alloc(qp);
	if (!res) {
		sroce_mr_put(mr);
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
		return;
	}
	err = sroce_mr_atomic(mr, be32_to_cpu(a->rkey), qp, va,
			      sroce_opcode_op(pkt->opcode), be64_to_cpu(a->cmp),
			      be64_to_cpu(a->swap_add), &res->orig);
	sroce_mr_put(mr);
	if (err) {
		res->npkts = 0;		/* nothing to answer: it failed */
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_REM_ACCESS);
		return;
	}
	res->op = sroce_opcode_op(pkt->opcode);
	res->psn = pkt->psn;
	res->npkts = 1;
	res->va = va;
	res->rkey = be32_to_cpu(a->rkey);
}

/*
 * RDMA Atomic Write (IBA 1.5, A19.4.2): 8 bytes, naturally aligned, stored
 * at once, with remote write rights.  Like a READ or an atomic it takes a
 * responder resource (the requester counts it against max_rd_atomic) and
 * is answered by an RDMA READ Response Only without payload, in PSN order
 * behind the READ responses before it; a duplicate is answered again from
 * its resource, not written again (IBA 9.7.5.1.3).  rdma_rxe 6.2+ does
 * the same.
 */
static void sroce_resp_atomic_write(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_reth *reth = (void *)pkt->ext;
	u64 va = be64_to_cpu(reth->va), val, orig;
	u32 rkey = be32_to_cpu(reth->rkey);
	struct sroce_rd_res *res;
	struct sroce_mr *mr;
	int err;

	/* Rights, resources and form before the R_Key, as for READ. */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE) ||
	    !qp->resp.rd_size || pkt->paylen != sizeof(val) ||
	    be32_to_cpu(reth->len) != sizeof(val) || (va & 7)) {
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
		return;
	}
	memcpy(&val, pkt->payload, sizeof(val));
	mr = sroce_mr_lookup(qp, rkey, true, IB_ACCESS_REMOTE_WRITE, va,
			     sizeof(val));
	if (!mr) {
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_REM_ACCESS);
		return;
	}
	/*
	 * No resource free: more requests outstanding than the consumer's
	 * max_dest_rd_atomic, from a requester that does not count atomic
	 * writes against its max_rd_atomic (sroce before it did).  A READ
	 * would be refused; this one is executed and acknowledged like a
	 * WRITE (the caller sees no resource taken), which sroce's and
	 * rdma_rxe's requesters both take as its answer.
	 */
	res = sroce_rd_alloc(qp);
	err = sroce_mr_atomic(mr, rkey, qp, va, SROCE_OPCODE_ATOMIC_WRITE, 0,
			      val, &orig);
	sroce_mr_put(mr);
	if (err) {
		/* Its resource, if any, stays empty (npkts 0): skipped. */
		sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_REM_ACCESS);
		return;
	}
	if (res) {
		res->op = SROCE_OPCODE_ATOMIC_WRITE;
		res->psn = pkt->psn;
		res->npkts = 1;
		res->va = va;
		res->rkey = rkey;
	}
}

/*
 * RDMA Flush (IBA 1.5, A19.4.1).  Linux 6.1 has no MR or QP flush rights
 * (IB_ACCESS_FLUSH_GLOBAL/PERSISTENT came with 6.2), so no consumer of
 * this device can allow one: the request is not supported by this receive
 * queue (IBA 9.7.5.2.1 table 41: NAK Invalid Request), and the QP goes
 * to Error, as rdma_rxe 6.2+ answers a FLUSH to a QP without flush
 * rights.  Its sender learns IB_WC_REM_INV_REQ_ERR at once rather than
 * retrying until IB_WC_RETRY_EXC_ERR.
 */
static void sroce_resp_rdma_flush(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	sroce_resp_fatal(qp, pkt->psn, SROCE_NAK_INV_REQ);
}

/*
 * Does a duplicate READ ask again for (part of) a READ this responder took
 * (IBA 9.7.5.1.3)?  Its PSN within that READ's, the same R_Key, its range
 * within that READ's: a requester that got part of the answer asks for the
 * rest from the first PSN it lacks.  Anything else is no request the QP
 * ever executed, whoever sent it.  Return: true, with @first set to that
 * READ as first asked for.
 */
static bool sroce_resp_dup_read_known(struct sroce_qp *qp,
				      struct sroce_pkt *pkt,
				      struct sroce_rd_first *first)
{
	struct sroce_reth *reth = (void *)pkt->ext;
	u64 va = be64_to_cpu(reth->va);
	u32 len = be32_to_cpu(reth->len);
	u32 rkey = be32_to_cpu(reth->rkey);
	struct sroce_resp *resp = &qp->resp;
	u32 i;

	for (i = 0; i < resp->rd_size; i++) {
		struct sroce_rd_first *f = &resp->rd[i].first;
		int off = sroce_psn_diff(pkt->psn, f->psn);

		if (resp->rd[i].op != IB_OPCODE_RDMA_READ_REQUEST || off < 0 ||
		    off >= f->npkts || resp->rd[i].rkey != rkey)
			continue;
		if (va >= f->va && len <= f->len && va - f->va <= f->len - len) {
			*first = *f;
			return true;
		}
	}
	return false;
}

/* A duplicate request (PSN behind the expected one), IBA 9.7.5.1.3. */
static void sroce_resp_duplicate(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_resp *resp = &qp->resp;
	struct sroce_rd_first first;
	u32 op = sroce_opcode_op(pkt->opcode);
	u32 i;

	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_DUP);
	if (pkt->info & SROCE_F_READ) {
		/*
		 * A duplicate READ of no READ the QP took is silently dropped
		 * (as rdma_rxe does): never a NAK, which would end the QP
		 * for a packet of any sender that has the peer's address
		 * and guesses a PSN in the half of the space behind.
		 */
		if (!sroce_resp_dup_read_known(qp, pkt, &first))
			return;
		/* Answered again, from what the duplicate asks. */
		sroce_resp_read(qp, pkt, &first);
		return;
	}
	if (pkt->info & SROCE_F_FLUSH)
		return;	/* never executed here: nothing to answer again */
	if (pkt->info & (SROCE_F_ATOMIC | SROCE_F_AWRITE)) {
		struct sroce_reth *reth = (void *)pkt->ext;
		struct sroce_atmeth *a = (void *)pkt->ext;
		u64 va = pkt->info & SROCE_F_AWRITE ? be64_to_cpu(reth->va) :
			 be64_to_cpu(a->va);
		u32 rkey = pkt->info & SROCE_F_AWRITE ?
			   be32_to_cpu(reth->rkey) : be32_to_cpu(a->rkey);

		/*
		 * The newest resource of the same request: its PSN, and its
		 * address and R_Key (what a replay answers for is what the
		 * QP executed, as for a READ).
		 */
		for (i = resp->rd_tail; i != resp->rd_tail - resp->rd_size;) {
			struct sroce_rd_res *res = sroce_rd_at(resp, --i);
			struct sroce_rd_res *copy, was;

			if (res->op != op || res->psn != pkt->psn ||
			    !res->npkts || res->va != va || res->rkey != rkey)
				continue;
			was = *res;
			copy = sroce_rd_alloc(qp);
			if (copy) {
				copy->op = op;
				copy->psn = pkt->psn;
				copy->npkts = 1;
				copy->orig = was.orig;
				copy->va = was.va;
				copy->rkey = was.rkey;
			}
			return;
		}
		/*
		 * Too old to replay.  An atomic's original value is gone:
		 * the requester retries and ends in IB_WC_RETRY_EXC_ERR.  An
		 * atomic write has no value to answer with, and its PSN is
		 * behind epsn, so it was executed: acknowledged like a
		 * WRITE (what an ACK says of it is true).
		 */
		if (pkt->info & SROCE_F_ATOMIC)
			return;
	}
	/* SEND and WRITE: acknowledge, in PSN order behind reads. */
	if (resp->rd_next != resp->rd_tail)
		resp->ack_pending = true;
	else
		sroce_resp_ack(qp, sroce_psn_add(resp->epsn, SROCE_PSN_MASK),
			       SROCE_AETH_CREDIT_NONE);
}

/* Is this opcode legal after the previous one (IBA 9.7.4.1.3, 9.8.3.1)? */
static bool sroce_resp_seq_ok(struct sroce_qp *qp, u32 info)
{
	enum sroce_resp_msg cur = qp->resp.cur;

	if (info & SROCE_F_FIRST)
		return cur == SROCE_MSG_NONE;
	if (info & SROCE_F_SEND)
		return cur == SROCE_MSG_SEND;
	if (info & SROCE_F_WRITE)
		return cur == SROCE_MSG_WRITE;
	return false;
}

/*
 * A SEND cannot be placed: -EINVAL (too long for the WQE), -EBADMSG (a
 * malformed WQE) or a protection error.  IBA 9.9.3.1.3: the receive WQE
 * completes in error, the requester gets a NAK, the QP enters Error.
 * UC has no NAK to send: a message too long for its WQE is dropped and
 * the WQE waits for the next one (rdma_rxe's class D), so that a packet
 * of any sender with the peer's address cannot end the QP.
 */
static void sroce_resp_send_fail(struct sroce_qp *qp, struct sroce_pkt *pkt,
				 bool rc, int err)
{
	enum ib_wc_status st;

	if (!rc && err == -EINVAL) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_UD_DROP);
		qp->resp.cur = SROCE_MSG_NONE;
		pkt->failed = true;
		return;
	}
	st = err == -EINVAL ? IB_WC_LOC_LEN_ERR :
	     err == -EBADMSG ? IB_WC_LOC_QP_OP_ERR : IB_WC_LOC_PROT_ERR;
	qp->resp.cur = SROCE_MSG_NONE;
	if (rc) {
		sroce_resp_fatal_wqe(qp, pkt->psn, err == -EINVAL ?
				     SROCE_NAK_INV_REQ : SROCE_NAK_REM_OP, st);
	} else {
		sroce_resp_wqe_error(qp, st);
		sroce_qp_error(qp);
	}
	pkt->failed = true;
}

/*
 * No receive WQE for @psn: an RNR NAK with the QP's minimum RNR timer
 * (IBA 9.7.5.2.8); the requester retries the same PSN later.
 */
static void sroce_resp_rnr_nak(struct sroce_qp *qp, u32 psn)
{
	/*
	 * One NAK outstanding (IBA 9.7.5.2): the requester's packets after
	 * this one are dropped, not NAKed for their sequence, until it sends
	 * @psn again after the RNR timer; a sequence NAK would make it resend
	 * at once and spend its retry count instead.
	 */
	qp->resp.nak_sent = true;
	sroce_resp_nak_ordered(qp, psn, SROCE_AETH_RNR_NAK |
			       (qp->attr.min_rnr_timer &
				SROCE_AETH_VALUE_MASK));
}

static void sroce_resp_send(struct sroce_qp *qp, struct sroce_pkt *pkt,
			    bool rc)
{
	struct sroce_resp *resp = &qp->resp;
	struct ib_wc wc = { .opcode = IB_WC_RECV };
	int err;

	if (pkt->info & SROCE_F_FIRST) {
		/*
		 * A UC message dropped half way (IBA 9.8.3.1) leaves its
		 * receive WQE unused: the next message takes it.
		 */
		if (!resp->have_wqe && !sroce_resp_get_wqe(qp)) {
			if (rc) {
				sroce_resp_rnr_nak(qp, pkt->psn);
			} else {
				sroce_count(to_sdev(qp->ibqp.device),
					    SROCE_CNT_UD_DROP);
			}
			pkt->rnr = true;
			return;
		}
		/* A malformed entry of a mapped RQ (uring.c). */
		if (resp->wqe->bad) {
			sroce_resp_send_fail(qp, pkt, rc, -EBADMSG);
			return;
		}
		resp->offset = 0;
		resp->cur = SROCE_MSG_SEND;
	}
	/* FIRST and MIDDLE carry the path MTU exactly, no packet more. */
	if (pkt->paylen > qp->mtu ||
	    (!(pkt->info & SROCE_F_LAST) && pkt->paylen != qp->mtu))
		goto inv_req;
	/*
	 * No message is longer than max_msg_sz (2^31): past it the u32
	 * offset would wrap at 4 GiB and write the receive's start again
	 * (its SGEs, unlike a send's, may add up to more).  Too long for
	 * its receive, as a peer that keeps sending MIDDLE packets is.
	 */
	if (pkt->paylen > SROCE_MAX_MSG_SIZE - resp->offset)
		err = -EINVAL;
	else
		err = sroce_sge_copy(qp, resp->wqe->sge, resp->wqe->num_sge,
				     resp->offset, pkt->payload, pkt->paylen,
				     true);
	if (err) {
		sroce_resp_send_fail(qp, pkt, rc, err);
		return;
	}
	resp->offset += pkt->paylen;
	if (!(pkt->info & SROCE_F_LAST))
		return;

	wc.byte_len = resp->offset;
	if (pkt->info & SROCE_H_IMM) {
		memcpy(&wc.ex.imm_data, pkt->payload - 4, 4);
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	if (pkt->info & SROCE_H_IETH) {
		u32 key = get_unaligned_be32(pkt->payload - 4);

		if (sroce_invalidate(qp, key, true) != IB_WC_SUCCESS) {
			resp->cur = SROCE_MSG_NONE;
			sroce_resp_fatal_wqe(qp, pkt->psn, SROCE_NAK_INV_REQ,
					     IB_WC_REM_INV_REQ_ERR);
			pkt->failed = true;
			return;
		}
		wc.ex.invalidate_rkey = key;
		wc.wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	resp->cur = SROCE_MSG_NONE;
	resp->msn++;
	sroce_resp_complete(qp, &wc, pkt->bth->flags & SROCE_BTH_SE);
	return;

inv_req:
	resp->cur = SROCE_MSG_NONE;
	pkt->failed = true;
	if (!rc) {
		/* UC: a packet not of the MTU's length; dropped, as above. */
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_BAD_HDR);
		return;
	}
	sroce_resp_fatal_wqe(qp, pkt->psn, SROCE_NAK_INV_REQ,
			     IB_WC_REM_INV_REQ_ERR);
}

static void sroce_resp_write(struct sroce_qp *qp, struct sroce_pkt *pkt,
			     bool rc)
{
	struct sroce_resp *resp = &qp->resp;
	struct ib_wc wc = { .opcode = IB_WC_RECV_RDMA_WITH_IMM };

	/*
	 * The QP's access rights before its resources (the responder's order
	 * of checks, IBA 9.7.5.1; rdma_rxe's too), an Invalid Request as for
	 * READ and atomics (IBA's Remote Invalid Request Error: "the operation
	 * is not supported by this receive queue"): an RNR NAK here would make
	 * the requester retry, for ever with rnr_retry 7, what must fail.
	 * Every packet of the message, not only its first: a Modify QP in RTS
	 * may take remote write away while a WRITE is half done, and the rest
	 * of it must not land (rdma_rxe's check_op_valid() runs per packet).
	 */
	if (!(qp->attr.qp_access_flags & IB_ACCESS_REMOTE_WRITE))
		goto inv_req;
	/*
	 * IBA 9.7.5.2.8: an immediate needs a receive WQE.  Without one the
	 * packet gets an RNR NAK before it changes anything, so that the
	 * requester's retry of the same PSN finds the same state.
	 */
	if ((pkt->info & SROCE_H_IMM) && !resp->have_wqe &&
	    !sroce_resp_get_wqe(qp)) {
		if (rc)
			sroce_resp_rnr_nak(qp, pkt->psn);
		else
			sroce_count(to_sdev(qp->ibqp.device),
				    SROCE_CNT_UD_DROP);
		pkt->rnr = true;
		return;
	}
	/* A malformed entry of a mapped RQ (uring.c), before any data. */
	if ((pkt->info & SROCE_H_IMM) && resp->wqe->bad) {
		sroce_resp_send_fail(qp, pkt, rc, -EBADMSG);
		return;
	}
	if (pkt->info & SROCE_F_FIRST) {
		struct sroce_reth *reth = (void *)pkt->ext;
		u32 len = be32_to_cpu(reth->len);

		resp->va = be64_to_cpu(reth->va);
		resp->rkey = be32_to_cpu(reth->rkey);
		resp->resid = len;
		resp->wlen = len;
		sroce_resp_drop_write(qp);
		/* No message is longer than max_msg_sz, as for a READ. */
		if (len > SROCE_MAX_MSG_SIZE)
			goto inv_req;
		if (len) {
			resp->mr = sroce_mr_lookup(qp, resp->rkey, true,
						   IB_ACCESS_REMOTE_WRITE,
						   resp->va, len);
			if (!resp->mr)
				goto access;
		}
		resp->cur = SROCE_MSG_WRITE;
	}
	if (pkt->paylen > resp->resid || pkt->paylen > qp->mtu ||
	    (!(pkt->info & SROCE_F_LAST) && pkt->paylen != qp->mtu) ||
	    ((pkt->info & SROCE_F_LAST) && pkt->paylen != resp->resid))
		goto inv_req;
	/*
	 * Every packet checks the MR again: it may have been invalidated or
	 * deregistered since the message started (a peer must not go on
	 * writing into pages the ULP took back).
	 */
	if (pkt->paylen &&
	    sroce_mr_access(resp->mr, resp->rkey, qp, IB_ACCESS_REMOTE_WRITE,
			    resp->va, pkt->payload, pkt->paylen, true))
		goto access;
	resp->va += pkt->paylen;
	resp->resid -= pkt->paylen;
	if (!(pkt->info & SROCE_F_LAST))
		return;
	sroce_resp_drop_write(qp);
	resp->cur = SROCE_MSG_NONE;
	resp->msn++;
	if (pkt->info & SROCE_H_IMM) {
		wc.byte_len = resp->wlen;
		wc.wc_flags = IB_WC_WITH_IMM;
		memcpy(&wc.ex.imm_data, pkt->payload - 4, 4);
		sroce_resp_complete(qp, &wc, pkt->bth->flags & SROCE_BTH_SE);
	}
	return;

access:
	/*
	 * UC (IBA 9.8.3.1, as rdma_rxe): the message is dropped, not the QP.
	 * RC: the receive WQE an immediate took completes with the error.
	 */
	sroce_resp_drop_write(qp);
	resp->cur = SROCE_MSG_NONE;
	pkt->failed = true;
	if (rc)
		sroce_resp_fatal_wqe(qp, pkt->psn, SROCE_NAK_REM_ACCESS,
				     IB_WC_REM_ACCESS_ERR);
	else
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_UC_DROP);
	return;
inv_req:
	sroce_resp_drop_write(qp);
	resp->cur = SROCE_MSG_NONE;
	pkt->failed = true;
	if (rc)
		sroce_resp_fatal_wqe(qp, pkt->psn, SROCE_NAK_INV_REQ,
				     IB_WC_REM_INV_REQ_ERR);
	else
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_UC_DROP);
}

/* RC and UC requests. */
static void sroce_resp_connected(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_resp *resp = &qp->resp;
	bool rc = qp->ibqp.qp_type == IB_QPT_RC;
	int diff = sroce_psn_diff(pkt->psn, resp->epsn);
	u32 tail;

	if (unlikely(resp->fatal_pending)) {
		/* The QP is on its way to Error (__sroce_resp_fatal()). */
		sroce_count(sdev, SROCE_CNT_RX_BAD_STATE);
		return;
	}
	if (diff < 0 && rc) {
		sroce_resp_duplicate(qp, pkt);
		if (sroce_resp_tx(qp, SROCE_RESP_BUDGET))
			sroce_qp_kick(qp);
		return;
	}
	if (diff > 0 && rc) {
		sroce_count(sdev, SROCE_CNT_RX_OUT_OF_SEQ);
		if (!resp->nak_sent) {
			resp->nak_sent = true;
			sroce_resp_nak_ordered(qp, resp->epsn, SROCE_AETH_NAK |
					       SROCE_NAK_PSN_SEQ);
		}
		return;
	}
	if (diff) {
		/*
		 * UC (IBA 9.8.3.1): a packet other than the expected one ends
		 * the message in progress; a FIRST or ONLY starts a new one
		 * at its PSN, ahead or behind (UC tells no duplicate from a
		 * restart; rdma_rxe resyncs the same way).  Any other packet
		 * is dropped, the expected PSN kept: were it to resync, one
		 * packet with a PSN far ahead would make the QP drop the
		 * sender's next 2^23 packets as old.
		 */
		sroce_count(sdev, SROCE_CNT_RX_OUT_OF_SEQ);
		sroce_resp_drop_write(qp);
		resp->cur = SROCE_MSG_NONE;
		resp->offset = 0;
		if (!(pkt->info & SROCE_F_FIRST))
			return;
		resp->epsn = pkt->psn;
	}
	/* The request a waiting NAK asks for is here: the NAK is moot. */
	resp->nak_sent = false;
	resp->nak_pending = false;

	if (!sroce_resp_seq_ok(qp, pkt->info)) {
		if (rc) {
			sroce_resp_fatal_wqe(qp, pkt->psn, SROCE_NAK_INV_REQ,
					     IB_WC_REM_INV_REQ_ERR);
			return;
		}
		/* UC: a message that lost its start is dropped. */
		sroce_count(sdev, SROCE_CNT_RX_UC_DROP);
		sroce_resp_drop_write(qp);
		resp->cur = SROCE_MSG_NONE;
		resp->epsn = sroce_psn_add(pkt->psn, 1);
		return;
	}
	/*
	 * IBA 11.6.3.1: the first valid request a QP in RTR receives raises
	 * Communication Established, once: a consumer whose CM has not seen
	 * the RTU yet (it was lost) moves the QP to RTS on it
	 * (ib_cm_notify(), rdma_notify()).
	 */
	if (unlikely(qp->state == IB_QPS_RTR) && !qp->comm_est) {
		qp->comm_est = true;
		sroce_qp_note(qp, IB_EVENT_COMM_EST);
	}

	tail = resp->rd_tail;
	if (pkt->info & SROCE_F_SEND)
		sroce_resp_send(qp, pkt, rc);
	else if (pkt->info & SROCE_F_WRITE)
		sroce_resp_write(qp, pkt, rc);
	else if (pkt->info & SROCE_F_READ)
		sroce_resp_read(qp, pkt, NULL);
	else if (pkt->info & SROCE_F_AWRITE)
		sroce_resp_atomic_write(qp, pkt);
	else if (pkt->info & SROCE_F_FLUSH)
		sroce_resp_rdma_flush(qp, pkt);
	else
		sroce_resp_atomic(qp, pkt);
	if (pkt->rnr || pkt->failed || qp->state == IB_QPS_ERR ||
	    resp->fatal_pending)
		return;	/* RNR: epsn stays, the requester comes back */

	if (pkt->info & SROCE_F_READ) {
		struct sroce_reth *reth = (void *)pkt->ext;

		resp->epsn = sroce_psn_add(pkt->psn,
					   sroce_rd_npkts(qp,
							  be32_to_cpu(reth->len)));
	} else {
		resp->epsn = sroce_psn_add(pkt->psn, 1);
	}
	if (pkt->info & SROCE_F_RD_RES) {
		resp->msn++;
		/* Its responses carry the MSN that counts it. */
		if (resp->rd_tail != tail)
			sroce_rd_at(resp, tail)->msn = resp->msn;
	}
	if (!rc)
		return;
	if (resp->rd_tail != tail) {
		if (sroce_resp_tx(qp, SROCE_RESP_BUDGET))
			sroce_qp_kick(qp);
	} else if (pkt->ackreq || (pkt->info & SROCE_F_AWRITE)) {
		/* An atomic write without a resource is answered by an ACK. */
		if (resp->rd_next != resp->rd_tail)
			resp->ack_pending = true;
		else
			sroce_resp_ack_later(qp, pkt->psn);
	}
}

/*
 * Is @pkt's destination one of the device's GIDs, of the netdev it came
 * in on?  The IP stack takes a datagram to any of the host's addresses
 * on any of its netdevs; the port takes one to its own GIDs only (the
 * packet checks of IBA 9.6.1 on the GRH's DGID), and one for a VLAN's
 * GID only through that VLAN (rdma_rxe's rxe_chk_dgid() too).  A
 * connected QP compares with its own GID instead (sroce_pkt_from_peer()).
 */
static bool sroce_dgid_ours(struct sroce_dev *sdev,
			    const struct sroce_pkt *pkt)
{
	const struct ib_gid_attr *attr = ERR_PTR(-ENODEV);
	struct net_device *ndev = NULL;

	rcu_read_lock();
	if (pkt->ifindex)
		ndev = dev_get_by_index_rcu(sdev->sn->net, pkt->ifindex);
	if (ndev || !pkt->ifindex)
		attr = rdma_find_gid_by_port(&sdev->ibdev, &pkt->dgid,
					     IB_GID_TYPE_ROCE_UDP_ENCAP, 1,
					     ndev);
	rcu_read_unlock();
	if (IS_ERR(attr))
		return false;
	rdma_put_gid_attr(attr);
	return true;
}

/* UD and GSI receives (IBA 9.8.4, 10.2.5). */
static void sroce_resp_ud(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_deth *deth = (void *)pkt->ext;
	struct ib_wc wc = {
		.opcode = IB_WC_RECV,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.port_num = 1,
	};
	u8 grh[40] = {};
	int err;

	if (pkt->qpn != SROCE_QPN_MCAST && !sroce_dgid_ours(sdev, pkt)) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_HDR);
		return;
	}
	/* IBA 10.2.5: a Q_Key that is not the QP's is silently dropped. */
	if (be32_to_cpu(deth->qkey) != qp->attr.qkey) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_QKEY);
		return;
	}
	/*
	 * IBA 13.4: a MAD is 256 bytes; a longer GSI datagram is malformed.
	 * It is dropped before it takes a receive, not completed in error:
	 * the MAD layer takes an error completion on QP1 for the QP's own
	 * error and never posts that receive again, so each such datagram
	 * from the wire would leave QP1 one receive short, until no MAD (and
	 * no connection of the CM) gets through.
	 */
	if (qp->ibqp.qp_type == IB_QPT_GSI && pkt->paylen > IB_MGMT_MAD_SIZE) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_HDR);
		return;
	}
	/*
	 * A datagram is one packet of at most the path MTU, which for UD is
	 * the port's (IBA 9.8.3.1; our requester refuses a longer one).
	 */
	if (pkt->paylen > sroce_port_mtu(sdev)) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_HDR);
		return;
	}
	if (!sroce_resp_get_wqe(qp)) {
		sroce_count(sdev, SROCE_CNT_UD_DROP);
		return;
	}
	/* A malformed entry of a mapped RQ (uring.c): a QP error. */
	if (qp->resp.wqe->bad) {
		sroce_resp_wqe_error(qp, IB_WC_LOC_QP_OP_ERR);
		sroce_qp_error(qp);
		return;
	}
	/*
	 * The GRH area: RoCEv2 puts the IPv4 header in its last 20 bytes,
	 * or the whole IPv6 header (as ib_core's ib_get_gids_from_rdma_hdr
	 * expects).
	 */
	if (pkt->ipv4) {
		memcpy(grh + 20, ip_hdr(pkt->skb), sizeof(struct iphdr));
		wc.network_hdr_type = RDMA_NETWORK_IPV4;
	} else {
		memcpy(grh, ipv6_hdr(pkt->skb), sizeof(struct ipv6hdr));
		wc.network_hdr_type = RDMA_NETWORK_IPV6;
	}
	err = sroce_sge_copy(qp, qp->resp.wqe->sge, qp->resp.wqe->num_sge, 0,
			     grh, sizeof(grh), true);
	if (!err)
		err = sroce_sge_copy(qp, qp->resp.wqe->sge,
				     qp->resp.wqe->num_sge, sizeof(grh),
				     pkt->payload, pkt->paylen, true);
	/*
	 * A MAD shorter than 256 bytes: the rest of it zeroed.  The MAD layer
	 * reads the whole MAD, from a buffer it reuses: it posts again the
	 * one its last answer (or an earlier datagram) was in, and an answer
	 * of "unsupported" copies the whole request back to its sender, so
	 * that sender would read what the buffer held before.
	 */
	if (!err && qp->ibqp.qp_type == IB_QPT_GSI &&
	    pkt->paylen < IB_MGMT_MAD_SIZE)
		err = sroce_sge_copy(qp, qp->resp.wqe->sge,
				     qp->resp.wqe->num_sge,
				     sizeof(grh) + pkt->paylen,
				     page_address(ZERO_PAGE(0)),
				     IB_MGMT_MAD_SIZE - pkt->paylen, true);
	/*
	 * A receive WQE that cannot take the datagram, too small for it or
	 * naming memory the QP may not write, completes in error and stops
	 * the QP, as every receive WQE error of an RC or UC QP does (IBA
	 * 10.3.1; rdma_rxe's class A, and RoCE NICs').
	 */
	if (err) {
		sroce_resp_wqe_error(qp, err == -EINVAL ? IB_WC_LOC_LEN_ERR :
						       IB_WC_LOC_PROT_ERR);
		sroce_qp_error(qp);
		return;
	}
	wc.byte_len = sizeof(grh) + pkt->paylen;
	wc.src_qp = be32_to_cpu(deth->sqp) & SROCE_QPN_MASK;
	if (pkt->info & SROCE_H_IMM) {
		memcpy(&wc.ex.imm_data, pkt->payload - 4, 4);
		wc.wc_flags |= IB_WC_WITH_IMM;
	}
	if (skb_mac_header_was_set(pkt->skb) &&
	    skb_mac_header_len(pkt->skb) >= ETH_HLEN) {
		ether_addr_copy(wc.smac, eth_hdr(pkt->skb)->h_source);
		wc.wc_flags |= IB_WC_WITH_SMAC;
	}
	/* The VLAN device it came through (sroce_rcv()). */
	if (pkt->vlan_id < VLAN_N_VID) {
		wc.vlan_id = pkt->vlan_id;
		wc.wc_flags |= IB_WC_WITH_VLAN;
	}
	sroce_resp_complete(qp, &wc, pkt->bth->flags & SROCE_BTH_SE);
}

/**
 * sroce_resp_rcv - handle a request packet
 * @qp: the QP, with qp->lock held (the packet holds a reference)
 * @pkt: the request
 */
void sroce_resp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	lockdep_assert_held(&qp->lock);
	/* The state changed since sroce_rcv() looked, without the lock. */
	if (qp->state < IB_QPS_RTR || qp->state == IB_QPS_ERR) {
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_BAD_STATE);
		return;
	}
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI)
		sroce_resp_ud(qp, pkt);
	else if (sroce_pkt_from_peer(qp, pkt))
		sroce_resp_connected(qp, pkt);
	else
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RX_BAD_SRC);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce transport engine, requester: turns send WQEs into request packets
 * (IBA 9.5, 9.7.3).  RC and UC messages are segmented by the path MTU and
 * numbered with consecutive PSNs; UD messages are one packet.  For RC the
 * requester keeps at most its window (window.c) unacknowledged, at most
 * max_rd_atomic reads, atomics and atomic writes outstanding (IBA
 * 9.7.7.1), honours fences (IBA 10.8.3.3), and asks for an ACK at the end
 * of every message and every SROCE_ACK_EVERY packets; the completer
 * (comp.c) rewinds it for retransmission (go-back-N, IBA 9.7.6.1).
 */
#include <linux/uaccess.h>
#include <asm/unaligned.h>

#include "sroce.h"
#include "trace.h"

/* Packets a WQE takes: one per MTU (at least one); reads: per response. */
static u32 sroce_wqe_npkts(struct sroce_qp *qp, struct sroce_send_wqe *wqe)
{
	switch (wqe->opcode) {
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return 1;
	default:
		return max_t(u32, 1, DIV_ROUND_UP(wqe->length, qp->mtu));
	}
}

static bool sroce_wqe_is_local(const struct sroce_send_wqe *wqe)
{
	return wqe->opcode == IB_WR_REG_MR || wqe->opcode == IB_WR_LOCAL_INV ||
	       wqe->opcode == IB_WR_BIND_MW;
}

/* The BTH opcode of the packet at @offset of @wqe (IBA 9.2.1 table 38). */
static u8 sroce_req_opcode(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			   u32 offset, bool *last)
{
	bool first = offset == 0;
	u8 tp, op;

	*last = wqe->length - offset <= qp->mtu;
	switch (qp->ibqp.qp_type) {
	case IB_QPT_UC:
		tp = IB_OPCODE_UC;
		break;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		*last = true;
		return IB_OPCODE_UD |
		       (wqe->opcode == IB_WR_SEND_WITH_IMM ?
			IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE :
			IB_OPCODE_SEND_ONLY);
	default:
		tp = IB_OPCODE_RC;
	}

	if (wqe->opcode == SROCE_WR_ATOMIC_WRITE) {	/* RC only */
		*last = true;
		return tp | SROCE_OPCODE_ATOMIC_WRITE;
	}
	switch (wqe->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (first && *last)
			op = IB_OPCODE_RDMA_WRITE_ONLY;
		else
			op = first ? IB_OPCODE_RDMA_WRITE_FIRST :
			     *last ? IB_OPCODE_RDMA_WRITE_LAST :
				     IB_OPCODE_RDMA_WRITE_MIDDLE;
		if (*last && wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
			op++;	/* LAST_IMM / ONLY_IMM follow LAST / ONLY */
		break;
	case IB_WR_RDMA_READ:
		*last = true;	/* one request packet */
		op = IB_OPCODE_RDMA_READ_REQUEST;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		*last = true;
		op = IB_OPCODE_COMPARE_SWAP;
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		*last = true;
		op = IB_OPCODE_FETCH_ADD;
		break;
	case IB_WR_SEND_WITH_INV:
		if (*last)
			op = first ? IB_OPCODE_SEND_ONLY_WITH_INVALIDATE :
				     IB_OPCODE_SEND_LAST_WITH_INVALIDATE;
		else
			op = first ? IB_OPCODE_SEND_FIRST :
				     IB_OPCODE_SEND_MIDDLE;
		break;
	default:	/* IB_WR_SEND, IB_WR_SEND_WITH_IMM */
		if (first && *last)
			op = IB_OPCODE_SEND_ONLY;
		else
			op = first ? IB_OPCODE_SEND_FIRST :
			     *last ? IB_OPCODE_SEND_LAST :
				     IB_OPCODE_SEND_MIDDLE;
		if (*last && wqe->opcode == IB_WR_SEND_WITH_IMM)
			op++;
	}
	return tp | op;
}

/*
 * Walk the message of a send WQE from @offset for @len bytes: copy
 * between it and @buf, or (@skb) add its pages to @skb as fragments
 * (zero-copy transmit, sroce_mr_frags()).  Each SGE's MR is checked again
 * as it is used.  Return: 0, -EACCES, or -EMSGSIZE from sroce_mr_frags().
 */
static int sroce_wqe_walk(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			  u32 offset, void *buf, struct sk_buff *skb, u32 len,
			  bool to_mr)
{
	int access = to_mr ? IB_ACCESS_LOCAL_WRITE : 0;
	int err;
	u32 i;

	if (wqe->send_flags & IB_SEND_INLINE) {	/* only ever gathered */
		if (to_mr || offset + len > wqe->length)
			return -EACCES;
		memcpy(buf, sroce_wqe_inline(qp, wqe) + offset, len);
		return 0;
	}
	for (i = 0; i < wqe->num_sge && len; i++) {
		struct sroce_sge *sge = &wqe->sge[i];
		u32 n;

		if (offset >= sge->length) {
			offset -= sge->length;
			continue;
		}
		n = min(len, sge->length - offset);
		if (!sge->mr)
			return -EACCES;
		err = skb ? sroce_mr_frags(sge->mr, sge->lkey,
					   sge->addr + offset, n, skb) :
			    sroce_mr_access(sge->mr, sge->lkey, NULL, access,
					    sge->addr + offset, buf, n, to_mr);
		if (err)
			return err;
		if (buf)
			buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EACCES : 0;
}

/**
 * sroce_wqe_copy - copy between a buffer and the message of a send WQE
 * @qp: the QP
 * @wqe: the WQE (its SGEs' MRs are held)
 * @offset: byte offset into the message
 * @buf: kernel buffer
 * @len: bytes
 * @to_mr: true to scatter into the SGEs (read responses), false to gather
 *
 * Each SGE's MR is checked again as it is used (sroce_mr_access()): it
 * may have been invalidated or deregistered since the WR was posted.
 *
 * Return: 0, or -EACCES when an SGE's MR no longer allows the access.
 */
int sroce_wqe_copy(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		   u32 offset, void *buf, u32 len, bool to_mr)
{
	return sroce_wqe_walk(qp, wqe, offset, buf, NULL, len, to_mr);
}

/*
 * Zero-copy transmit (sroce_zc_ok()): RC requests from user MRs.  A
 * packet's payload is at most one path MTU (<= 4096 bytes): through at
 * most SROCE_ZC_MAX_SGE SGEs it takes at most two fragments per SGE
 * (sroce_mr_frags()), and one more for the trailer, within MAX_SKB_FRAGS.
 */
#define SROCE_ZC_MAX_SGE	7

static bool sroce_wqe_zc_ok(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			    u32 paylen)
{
	u32 i;

	BUILD_BUG_ON(2 * SROCE_ZC_MAX_SGE + 1 > MAX_SKB_FRAGS);
	if (qp->ibqp.qp_type != IB_QPT_RC ||
	    !sroce_zc_ok(to_sdev(qp->ibqp.device), paylen) ||
	    (wqe->send_flags & IB_SEND_INLINE) ||
	    wqe->num_sge > SROCE_ZC_MAX_SGE)
		return false;
	for (i = 0; i < wqe->num_sge; i++)
		if (!wqe->sge[i].mr || wqe->sge[i].mr->kind != SROCE_MR_USER)
			return false;
	return true;
}

/* Send the packet at (req.psn, req.offset) of @wqe; advance the requester. */
/*
 * IBA 9.7.5.1.1 leaves to the requester when to ask for an ACK: at the
 * end of a message, every SROCE_ACK_EVERY packets, and when the window is
 * about to close (the responder may coalesce the others).  RC only.
 */
static bool sroce_req_ackreq(struct sroce_qp *qp, bool last)
{
	struct sroce_req *req = &qp->req;
	bool ackreq;

	req->noack++;
	ackreq = qp->ibqp.qp_type == IB_QPT_RC &&
		 (last || req->noack >= SROCE_ACK_EVERY ||
		  sroce_psn_diff(req->psn, qp->comp.psn) + 1 >=
		  (int)sroce_req_window(qp));
	if (ackreq)
		req->noack = 0;
	return ackreq;
}

/* IBA 9.2.3: the last packet of a solicited SEND or WRITE with immediate. */
static bool sroce_req_solicited(const struct sroce_send_wqe *wqe, bool last)
{
	return last && (wqe->send_flags & IB_SEND_SOLICITED) &&
	       (wqe->opcode == IB_WR_SEND ||
		wqe->opcode == IB_WR_SEND_WITH_IMM ||
		wqe->opcode == IB_WR_SEND_WITH_INV ||
		wqe->opcode == IB_WR_RDMA_WRITE_WITH_IMM);
}

/*
 * The extension headers of a request, in wire order (IBA 9.3): DETH, RETH
 * (@rd_len: the length a read request asks for), AtomicETH, immediate or
 * IETH.
 */
static void sroce_req_ext_headers(struct sroce_qp *qp,
				  const struct sroce_send_wqe *wqe,
				  struct sroce_pkt *pkt, u32 offset, u32 rd_len)
{
	u8 *ext = pkt->ext;

	if (pkt->info & SROCE_H_DETH) {
		struct sroce_deth *deth = (void *)ext;
		/* IBA 10.2.5: a Q_Key with the high bit set means the QP's. */
		u32 qkey = wqe->remote_qkey & IB_QP_SET_QKEY ? qp->attr.qkey :
							   wqe->remote_qkey;

		deth->qkey = cpu_to_be32(qkey);
		deth->sqp = cpu_to_be32(qp->ibqp.qp_num & SROCE_QPN_MASK);
		ext += sizeof(*deth);
	}
	if (pkt->info & SROCE_H_RETH) {
		struct sroce_reth *reth = (void *)ext;

		reth->va = cpu_to_be64(wqe->remote_addr + offset);
		reth->rkey = cpu_to_be32(wqe->rkey);
		reth->len = cpu_to_be32(pkt->info & SROCE_F_READ ? rd_len :
					wqe->length);
		ext += sizeof(*reth);
	}
	if (pkt->info & SROCE_H_ATMETH) {
		struct sroce_atmeth *a = (void *)ext;

		a->va = cpu_to_be64(wqe->remote_addr);
		a->rkey = cpu_to_be32(wqe->rkey);
		if (wqe->opcode == IB_WR_ATOMIC_CMP_AND_SWP) {
			a->swap_add = cpu_to_be64(wqe->swap);
			a->cmp = cpu_to_be64(wqe->compare_add);
		} else {
			a->swap_add = cpu_to_be64(wqe->compare_add);
		}
		ext += sizeof(*a);
	}
	if (pkt->info & SROCE_H_IMM)
		memcpy(ext, &wqe->ex, 4);	/* already big endian */
	if (pkt->info & SROCE_H_IETH)
		put_unaligned_be32(wqe->ex, ext);
}

/*
 * The payload: the WQE's bytes from @offset, as page fragments (@zc) or
 * copied, checked against the MRs again as they are read.  On error the
 * packet is freed.
 */
static int sroce_req_payload(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			     struct sroce_pkt *pkt, u32 offset, u32 paylen,
			     bool zc)
{
	int err = 0;

	if (zc) {
		err = sroce_wqe_walk(qp, wqe, offset, NULL, pkt->skb, paylen,
				     false);
		if (!err)
			err = sroce_pkt_trailer(pkt);
		if (err == -EMSGSIZE)
			err = -EACCES;	/* the bound above says never */
	} else if (wqe->opcode == SROCE_WR_ATOMIC_WRITE) {
		memcpy(pkt->payload, &wqe->swap, sizeof(wqe->swap));
	} else if (paylen) {
		err = sroce_wqe_copy(qp, wqe, offset, pkt->payload, paylen,
				     false);
	}
	if (err) {
		/*
		 * An SGE's MR went away under the WR (IBA 10.6.3.2), or no
		 * memory for the trailer (the packet is built again later).
		 */
		kfree_skb(pkt->skb);
		return err;
	}
	if (zc)
		sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_TX_ZEROCOPY);
	return 0;
}

/* A request left: @npkts PSNs and @len bytes of @wqe are behind us. */
static void sroce_req_advance(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			      u32 info, u32 npkts, u32 len, bool last)
{
	struct sroce_req *req = &qp->req;
	bool fresh = sroce_psn_diff(req->psn, req->high_psn) >= 0;

	/*
	 * Nothing was outstanding: the retry clock starts now, not at the
	 * last progress of an earlier burst (a timer still pending from it
	 * would fire early).
	 */
	if (qp->comp.psn == req->high_psn)
		qp->comp.progress = jiffies;
	/* Its first packet, or the first after an RNR wait (comp.c). */
	if (qp->ibqp.qp_type == IB_QPT_RC && !qp->win_busy)
		sroce_win_busy(qp, true);
	req->psn = sroce_psn_add(req->psn, npkts);
	if (sroce_psn_diff(req->psn, req->high_psn) > 0)
		req->high_psn = req->psn;
	req->offset += len;
	if (info & SROCE_F_RD_RES)
		req->rd_inflight++;
	if (last) {
		req->idx++;
		req->offset = 0;
		if (qp->ibqp.qp_type != IB_QPT_RC)
			wqe->state = SROCE_WQE_DONE;	/* nothing to wait for */
	}
	if (qp->ibqp.qp_type == IB_QPT_RC) {
		if (fresh)
			sroce_comp_time(qp, sroce_psn_add(req->psn,
							  SROCE_PSN_MASK));
		sroce_comp_arm(qp);
	}
}

static int sroce_req_send_one(struct sroce_qp *qp, struct sroce_send_wqe *wqe)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_req *req = &qp->req;
	const struct sroce_av *av = &qp->av;
	u32 offset = req->offset, paylen = 0, npkts = 1, rd_len = 0;
	u32 dqpn = qp->attr.dest_qp_num;
	struct sroce_pkt pkt;
	bool last, zc;
	u8 opcode;
	int err;

	opcode = sroce_req_opcode(qp, wqe, offset, &last);
	if (sroce_op_info(opcode) & SROCE_F_PAYLOAD)
		paylen = min(wqe->length - offset, qp->mtu);
	zc = wqe->opcode != SROCE_WR_ATOMIC_WRITE &&
	     sroce_wqe_zc_ok(qp, wqe, paylen);
	if (zc)
		err = sroce_pkt_alloc_frags(sdev, &pkt, opcode, paylen);
	else
		err = sroce_pkt_alloc(sdev, &pkt, opcode, paylen);
	if (err)
		return err;

	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		av = &wqe->av;
		dqpn = wqe->remote_qpn;
	}
	if (opcode == IB_OPCODE_RDMA_READ_REQUEST) {
		/*
		 * The next chunk of the read, from what is still missing to
		 * the end of its chunk.  Chunks keep their places when a read
		 * is asked for again, so the PSNs of the requests after it
		 * stay those the responder expects (IBA 9.7.5.1.3).
		 */
		u32 chunk = SROCE_READ_CHUNK * qp->mtu;

		rd_len = min(wqe->length, (offset / chunk + 1) * chunk) - offset;
		npkts = max_t(u32, 1, DIV_ROUND_UP(rd_len, qp->mtu));
		last = offset + rd_len >= wqe->length;
	}
	if (sroce_req_solicited(wqe, last))
		pkt.bth->flags |= SROCE_BTH_SE;
	pkt.bth->qpn = cpu_to_be32(dqpn & SROCE_QPN_MASK);
	pkt.bth->apsn = cpu_to_be32(req->psn | (sroce_req_ackreq(qp, last) ?
						SROCE_BTH_ACKREQ : 0));
	sroce_req_ext_headers(qp, wqe, &pkt, offset, rd_len);
	err = sroce_req_payload(qp, wqe, &pkt, offset, paylen, zc);
	if (err)
		return err;

	/* The send may fail; the packet then counts as lost on the wire. */
	if (av == &qp->av)
		sroce_qp_xmit(qp, &pkt, true);	/* RC, UC: PSN order */
	else
		sroce_xmit(sdev, av, NULL, qp->src_port, &pkt);
	sroce_req_advance(qp, wqe, pkt.info, npkts,
			  pkt.info & SROCE_F_READ ? rd_len : paylen, last);
	return 0;
}

/*
 * A local operation of the SQ (IBA 10.6.3.6, 11.4.1.1): REG_MR and
 * LOCAL_INV (mr.c), BIND_MW (mw.c).  Return: the completion status.
 */
static enum ib_wc_status sroce_local_op(struct sroce_qp *qp,
					struct sroce_send_wqe *wqe)
{
	if (wqe->opcode == IB_WR_LOCAL_INV)
		return sroce_invalidate(qp, wqe->ex, false);
	if (wqe->opcode == IB_WR_BIND_MW)
		return sroce_bind_mw(qp, wqe);
	return sroce_mr_fast_reg(qp, wqe);
}

/*
 * May @wqe's next packet leave now?  Not while the QP's share of the
 * window is in flight, nor while its packets fill the transmit queue
 * (resumed by the packet that brings it to LOW, net.c), nor, for a read,
 * atomic or atomic write, while max_rd_atomic of them are pending (IBA
 * 9.7.7.1).
 */
static bool sroce_req_blocked(struct sroce_qp *qp,
			      const struct sroce_send_wqe *wqe)
{
	bool rc = qp->ibqp.qp_type == IB_QPT_RC;

	if (rc && sroce_psn_diff(qp->req.psn, qp->comp.psn) >=
		  (int)sroce_req_window(qp))
		return true;
	if (atomic_read(&qp->skb_out) >= SROCE_SKB_OUT_MAX)
		return true;
	return rc && sroce_wqe_takes_rd_res(wqe->opcode) &&
	       qp->req.rd_inflight >= max_t(u32, qp->attr.max_rd_atomic, 1);
}

/*
 * Start a WQE: local operations run here, at their place in the SQ; the
 * first transmission of the others is numbered.  Returns false when the
 * WQE must wait (fence, read/atomic credits).
 */
static bool sroce_req_start(struct sroce_qp *qp, struct sroce_send_wqe *wqe)
{
	u32 i;

	/*
	 * IBA 10.8.3.3: a fenced WQE waits for the reads, atomics and atomic
	 * writes before it.
	 */
	if ((wqe->send_flags & IB_SEND_FENCE) && qp->req.rd_inflight)
		return false;
	/*
	 * Local invalidate fence (IBA 10.6.5.1, as rdma_rxe): a LOCAL_INV
	 * waits until every WQE before it has completed, so none of them can
	 * still use the MR (a retransmission gathers from it again).
	 */
	if (wqe->opcode == IB_WR_LOCAL_INV && qp->sq.head != qp->req.idx) {
		sroce_comp_run(qp);	/* the finished ones complete now */
		/* One of them may have failed: the SQ flushed them all. */
		if (sroce_sq_flushes(qp->state) || qp->sq.head != qp->req.idx)
			return false;
	}
	if (sroce_wqe_is_local(wqe)) {
		sroce_wqe_done(wqe, sroce_local_op(qp, wqe));
		return true;
	}
	for (i = 0; i < wqe->num_sge; i++) {
		struct sroce_sge *sge = &wqe->sge[i];

		if ((wqe->send_flags & IB_SEND_INLINE) || !sge->length ||
		    sge->mr)
			continue;
		/*
		 * An lkey that named no usable MR when the WR was posted may
		 * name one now: the WRs before it in the SQ have run, and one
		 * was the IB_WR_REG_MR that registered it (rdma_rw and iSER
		 * post REG_MR, then the READ or SEND through it).
		 */
		sge->mr = sroce_mr_lookup(qp, sge->lkey, false,
					  sroce_wqe_is_rd_op(wqe->opcode) ?
					  IB_ACCESS_LOCAL_WRITE : 0,
					  sge->addr, sge->length);
		if (!sge->mr) {
			sroce_wqe_done(wqe, IB_WC_LOC_PROT_ERR);
			return true;
		}
	}
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		/*
		 * A datagram is one packet of at most the port's MTU as it is
		 * now, not as it was when the QP was modified: the netdev's
		 * MTU may have changed since (IBA 9.8.3.1).  A longer one is
		 * not sent and is no error either (C10-93.1.1, as rdma_rxe):
		 * it completes successfully.  An error would end the QP's
		 * send side, and QP1's with it: the MAD layer never posts
		 * receives again on a QP1 that went to Error.
		 */
		u32 mtu = sroce_port_mtu(to_sdev(qp->ibqp.device));

		if (!mtu || wqe->length > mtu) {
			ibdev_dbg(qp->ibqp.device,
				  "QP %u: a %u-byte datagram over the port MTU %u not sent\n",
				  qp->ibqp.qp_num, wqe->length, mtu);
			sroce_wqe_done(wqe, IB_WC_SUCCESS);
			return true;
		}
		qp->mtu = mtu;
	}
	wqe->first_psn = qp->req.psn;
	wqe->npkts = sroce_wqe_npkts(qp, wqe);
	wqe->done = 0;
	wqe->state = SROCE_WQE_PENDING;
	qp->req.offset = 0;
	return true;
}

/* Nothing at or after req.idx starts any more (a WQE before failed). */
static void sroce_req_halt(struct sroce_qp *qp)
{
	qp->req.halt = true;
	qp->req.halt_at = qp->req.idx;
	qp->req.offset = 0;
}

/**
 * sroce_req_run - send what the SQ, the window and the budget allow
 * @qp: the QP, with qp->lock held
 * @budget: packets at most
 *
 * A mapped SQ (uring.c) is looked at whenever the requester reaches the
 * end of what it has; a WQE that completes without a packet (a local
 * operation, an error) costs the budget too, so that a process that keeps
 * its ring full cannot keep the engine here.
 *
 * Return: true if work is left that the budget stopped.
 */
bool sroce_req_run(struct sroce_qp *qp, int budget)
{
	struct sroce_req *req = &qp->req;
	bool rc = qp->ibqp.qp_type == IB_QPT_RC;
	bool completed, dry, gated;
	int err;

	lockdep_assert_held(&qp->lock);
again:
	completed = false;
	dry = false;		/* stopped because nothing is left to send */
	while (budget > 0) {
		struct sroce_send_wqe *wqe;
		enum ib_qp_state state = qp->state;

		if (state != IB_QPS_RTS && state != IB_QPS_SQD)
			break;
		if (qp->comp.rnr_wait)
			break;
		/* Pairs with post_send's release: the WQE is complete. */
		if (req->idx == smp_load_acquire(&qp->sq.tail) &&
		    !(qp->sq.ring && sroce_sq_take(qp, budget))) {
			dry = true;
			break;
		}
		/*
		 * After a WQE that failed locally nothing later starts: the QP
		 * enters Error (UC, UD: SQE) when it completes (IBA 10.3.1);
		 * the WQEs before it may still be resent.
		 */
		if (req->halt && req->idx == req->halt_at)
			break;
		wqe = sroce_sq_wqe(qp, req->idx);
		gated = false;
		if (wqe->state == SROCE_WQE_POSTED) {
			/*
			 * IBA 11.6.3.1: an SQD QP starts no new WQE.  And a
			 * WQE starts when its first packet may leave: one
			 * started is in progress, which SQD lets finish.
			 */
			if (state == IB_QPS_SQD)
				break;
			if (!sroce_wqe_is_local(wqe)) {
				if (sroce_req_blocked(qp, wqe))
					break;
				gated = true;
			}
			if (!sroce_req_start(qp, wqe))
				break;
		}
		if (wqe->state == SROCE_WQE_DONE) {
			req->idx++;
			if (wqe->status != IB_WC_SUCCESS)
				sroce_req_halt(qp);
			completed = true;
			budget--;
			continue;
		}
		/* Once a message: sroce_req_start() moves nothing it reads. */
		if (!gated && sroce_req_blocked(qp, wqe))
			break;
		err = sroce_req_send_one(qp, wqe);
		if (err == -EACCES) {
			/*
			 * A UC message cut short leaves its responder inside
			 * it.  One PSN skipped makes the next message, once
			 * SQE -> RTS sends again, start out of sequence, which
			 * begins it afresh (IBA 9.8.3.1), rather than in
			 * sequence as what would end this one: dropped.
			 */
			if (!rc && req->offset)
				req->psn = sroce_psn_add(req->psn, 1);
			sroce_wqe_done(wqe, IB_WC_LOC_PROT_ERR);
			req->idx++;
			sroce_req_halt(qp);
			completed = true;
			break;
		}
		if (err) {
			/* No packet memory: nothing sent, try again soon. */
			sroce_qp_kick_later(qp);
			break;
		}
		if (wqe->state == SROCE_WQE_DONE)
			completed = true;
		budget--;
	}
	if (completed)
		sroce_comp_run(qp);
	/*
	 * A mapped SQ run dry: will a doorbell be needed?  Only then: a
	 * requester stopped by the window, an RNR wait or a fence is run
	 * again by what stopped it.  Each look costs the budget: a process
	 * that moves its producer index back and forth must not keep the
	 * engine here.
	 */
	if (dry && budget > 0 && qp->sq.ring &&
	    req->idx == READ_ONCE(qp->sq.tail) &&
	    (qp->state == IB_QPS_RTS || qp->state == IB_QPS_SQD) &&
	    sroce_sq_idle(qp)) {
		budget--;
		goto again;
	}
	return budget <= 0;
}

/*
 * Point the requester at comp.psn, the oldest unacknowledged PSN: the
 * first WQE still waiting for its response, at the packet of comp.psn
 * (a read at its first missing response).  False if none waits.
 */
static bool sroce_req_seek(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;
	struct sroce_send_wqe *wqe;
	u32 idx = qp->sq.head;

	wqe = sroce_sq_next_sent(qp, &idx);
	if (!wqe)
		return false;
	req->idx = idx;
	req->psn = qp->comp.psn;
	if (wqe->opcode == IB_WR_RDMA_READ) {
		/* Ask again for what did not arrive. */
		req->offset = wqe->done;
		req->psn = sroce_psn_add(wqe->first_psn, wqe->done / qp->mtu);
	} else if (sroce_psn_diff(qp->comp.psn, wqe->first_psn) < 0) {
		req->offset = 0;
		req->psn = wqe->first_psn;
	} else {
		req->offset = sroce_psn_diff(qp->comp.psn, wqe->first_psn) *
			      qp->mtu;
	}
	req->noack = 0;
	/*
	 * Every read, atomic or atomic write still pending is at or after
	 * this point: all are asked again (the responder drops its answers
	 * to the old ones, resp.c).
	 */
	req->rd_inflight = 0;
	return true;
}

/**
 * sroce_req_rewind - go back to the oldest unacknowledged PSN
 * @qp: the QP, with qp->lock held
 *
 * Go-back-N (IBA 9.7.6.1): the requester resends from comp.psn.  A read
 * resumes where its responses stopped (re-issued for the remaining part).
 */
void sroce_req_rewind(struct sroce_qp *qp)
{
	if (!sroce_req_seek(qp))
		return;
	qp->comp.rtt_on = false;	/* Karn's rule (sroce_comp_time()) */
	sroce_count(to_sdev(qp->ibqp.device), SROCE_CNT_RETRANS);
	trace_sroce_retry(qp, qp->req.psn);
}

/**
 * sroce_req_catch_up - skip what a response acknowledged after a retry
 * @qp: the QP, with qp->lock held
 *
 * After a rewind the requester resends from an old PSN; a late ACK or
 * NAK for packets sent before the rewind moves comp.psn past req.psn.
 * Those packets need not be sent again: resume at comp.psn.
 */
void sroce_req_catch_up(struct sroce_qp *qp)
{
	struct sroce_req *req = &qp->req;

	if (sroce_psn_diff(qp->comp.psn, req->psn) <= 0 || sroce_req_seek(qp))
		return;
	/*
	 * All that was sent is acknowledged: the acknowledged WQEs complete
	 * now (not when the requester passes them again), new ones start at
	 * comp.psn.
	 */
	while (req->idx != smp_load_acquire(&qp->sq.tail) &&
	       sroce_sq_wqe(qp, req->idx)->state == SROCE_WQE_DONE)
		req->idx++;
	req->psn = qp->comp.psn;
	req->offset = 0;
	req->noack = 0;
}

/* Run the send side of @qp from a context that may not (post_send). */
void sroce_qp_kick(struct sroce_qp *qp)
{
	if (!READ_ONCE(qp->dead))
		queue_work(sroce_wq, &qp->tx_work);
}

/* The deferred send side: read responses first, then requests. */
void sroce_tx_work(struct work_struct *work)
{
	struct sroce_qp *qp = container_of(work, struct sroce_qp, tx_work);
	bool more;

	/* Under the lock: destroy sets it under the lock, then waits. */
	spin_lock_bh(&qp->lock);
	if (qp->dead) {
		/*
		 * Destroy waits for the packets still queued (they hold the
		 * QP): handle those received, send those built, start no new
		 * work (a bind run now would outlive the QP's windows' reset).
		 */
		sroce_qp_release(qp);
		sroce_qp_tx_flush(qp);
		/* What those packets completed: the CQs outlive the QP. */
		sroce_qp_deliver_shared(qp);
		return;
	}
	/* WRs posted while a flush ran are flushed here, in order. */
	if (sroce_sq_flushes(qp->state))
		sroce_qp_flush(qp);
	more = sroce_resp_tx(qp, SROCE_REQ_BUDGET);
	more |= sroce_req_run(qp, SROCE_REQ_BUDGET);
	sroce_qp_unlock(qp);
	if (more)
		sroce_qp_kick(qp);
}

/* Is @wr one the QP's type carries?  (Also for mapped SQs, uring.c.) */
bool sroce_wr_ok(struct sroce_qp *qp, const struct ib_send_wr *wr)
{
	/*
	 * Inline data is the payload of a SEND or an RDMA WRITE; a READ or
	 * an atomic has none to carry (its SGEs are where the answer goes).
	 */
	if ((wr->send_flags & IB_SEND_INLINE) &&
	    (sroce_wqe_is_rd_op(wr->opcode) || wr->num_sge > SROCE_MAX_SGE))
		return false;
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		switch (wr->opcode) {
		case IB_WR_SEND:
		case IB_WR_SEND_WITH_IMM:
		case IB_WR_SEND_WITH_INV:
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_WRITE_WITH_IMM:
		case IB_WR_RDMA_READ:
		case IB_WR_ATOMIC_CMP_AND_SWP:
		case IB_WR_ATOMIC_FETCH_AND_ADD:
		case IB_WR_LOCAL_INV:
		case IB_WR_REG_MR:
			return true;
		default:
			return false;
		}
	case IB_QPT_UC:
		switch (wr->opcode) {
		case IB_WR_SEND:
		case IB_WR_SEND_WITH_IMM:
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_WRITE_WITH_IMM:
		case IB_WR_LOCAL_INV:
		case IB_WR_REG_MR:
			return true;
		default:
			return false;
		}
	default:	/* UD, GSI: an AH of the QP's PD (as rdma_rxe) */
		return (wr->opcode == IB_WR_SEND ||
			wr->opcode == IB_WR_SEND_WITH_IMM) && ud_wr(wr)->ah &&
		       ud_wr(wr)->ah->pd == qp->ibqp.pd;
	}
}

/*
 * Inline data is copied at post time (IBA 10.8.3.1: the buffers may be
 * reused once post_send returns).  A user QP's addresses are user
 * addresses: they are copied into @buf before any lock is taken.
 */
static int sroce_inline_fetch(struct sroce_qp *qp, const struct ib_send_wr *wr,
			      u8 *buf, u32 *len)
{
	u32 i, n = 0;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline - n)
			return -EINVAL;
		if (qp->ibqp.uobject) {
			if (copy_from_user(buf + n,
					   u64_to_user_ptr(sge->addr),
					   sge->length))
				return -EFAULT;
		} else {
			memcpy(buf + n, (void *)(uintptr_t)sge->addr,
			       sge->length);
		}
		n += sge->length;
	}
	*len = n;
	return 0;
}

/*
 * Fill a WQE from a WR; takes the references on the MRs its SGEs name.
 * Nothing of the slot's previous WQE survives: the fixed part and every
 * SGE the WR uses are written (an SGE of length 0 holds no MR), and inline
 * data has its own area of the slot, never read as SGEs.
 */
int sroce_wqe_fill(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		   const struct ib_send_wr *wr, const u8 *inl, u32 inl_len)
{
	int access = 0;
	u64 len = 0;
	u32 i;

	memset(wqe, 0, struct_size(wqe, sge, qp->sq.max_sge));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	wqe->status = IB_WC_SUCCESS;
	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		wqe->ex = (__force u32)wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->ex = wr->ex.invalidate_rkey;
		break;
	default:
		break;
	}
	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->remote_addr = rdma_wr(wr)->remote_addr;
		wqe->rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		wqe->remote_addr = atomic_wr(wr)->remote_addr;
		wqe->rkey = atomic_wr(wr)->rkey;
		wqe->compare_add = atomic_wr(wr)->compare_add;
		wqe->swap = atomic_wr(wr)->swap;
		break;
	case IB_WR_REG_MR:
		wqe->send_flags &= ~IB_SEND_INLINE;	/* carries no data */
		/*
		 * A kernel ULP's MR, whose reference is taken here: one of
		 * this device's (its PD is checked when the WR runs), else
		 * the reference would land in another driver's object.
		 */
		if (!reg_wr(wr)->mr ||
		    reg_wr(wr)->mr->device != qp->ibqp.device)
			return -EINVAL;
		wqe->reg_mr = to_smr(reg_wr(wr)->mr);
		/* Held until the WR completes, like any MR a WR names. */
		if (!kref_get_unless_zero(&wqe->reg_mr->elem.ref)) {
			wqe->reg_mr = NULL;
			return -EINVAL;
		}
		wqe->reg_key = reg_wr(wr)->key;
		wqe->reg_access = reg_wr(wr)->access;
		return 0;
	case IB_WR_LOCAL_INV:
		wqe->send_flags &= ~IB_SEND_INLINE;	/* carries no data */
		return 0;
	default:
		break;
	}
	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI) {
		wqe->av = to_sah(ud_wr(wr)->ah)->av;
		wqe->remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->remote_qkey = ud_wr(wr)->remote_qkey;
	}
	if (wr->send_flags & IB_SEND_INLINE) {
		memcpy(sroce_wqe_inline(qp, wqe), inl, inl_len);
		wqe->length = inl_len;
		return 0;
	}
	if (sroce_wqe_is_rd_op(wr->opcode))
		access = IB_ACCESS_LOCAL_WRITE;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *s = &wr->sg_list[i];
		struct sroce_sge *sge = &wqe->sge[i];

		sge->addr = s->addr;
		sge->length = s->length;
		sge->lkey = s->lkey;
		/*
		 * A bad lkey is a completion error, not a post error; one
		 * that names no usable MR yet is looked up again when the WR
		 * starts (sroce_req_start()).
		 */
		sge->mr = s->length ? sroce_mr_lookup(qp, s->lkey, false,
						      access, s->addr,
						      s->length) : NULL;
		len += s->length;
	}
	wqe->num_sge = wr->num_sge;
	/* IBA 9.4.5: an atomic carries 8 bytes back; nothing else fits. */
	if (len > SROCE_MAX_MSG_SIZE ||
	    ((wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
	      wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) && len != 8)) {
		sroce_wqe_release(wqe);
		return -EINVAL;
	}
	wqe->length = len;
	return 0;
}

/**
 * sroce_post_send - queue send WRs and start the requester
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to the first WR not queued
 *
 * A mapped SQ takes WRs from its ring only (uring.c): the command has
 * none (the provider's doorbell: the WRs in the ring are taken and the
 * requester runs) or is refused.
 *
 * Return: 0, -EINVAL (QP state, opcode, SGEs, inline size, a mapped SQ),
 * -ENOMEM (SQ full) or -EFAULT (user inline data).
 */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	/* Pairs with modify_qp's release: the attributes are visible. */
	enum ib_qp_state state = smp_load_acquire(&qp->state);
	u8 inl[SROCE_MAX_INLINE];
	bool flush_later = false, flushed = false;
	unsigned long flags;
	int err = 0;

	/* IBA 10.8.2: posting to a SQ that is not yet RTS is an error. */
	if (state < IB_QPS_RTS || (qp->sq.ring && wr)) {
		*bad_wr = wr;
		return -EINVAL;
	}
	if (qp->sq.ring) {
		/* The doorbell; in Error or SQE the ring's WRs flush. */
		spin_lock_irqsave(&qp->sq.lock, flags);
		state = READ_ONCE(qp->state);
		if (state >= IB_QPS_RTS && !sroce_sq_flushes(state))
			sroce_sq_pull(qp, SROCE_REQ_BUDGET);
		spin_unlock_irqrestore(&qp->sq.lock, flags);
		if (sroce_sq_flushes(state)) {
			sroce_uring_doorbell_err(qp);
			return 0;
		}
	}
	for (; wr; wr = wr->next) {
		bool flush = false;
		u32 inl_len = 0;

		if (!sroce_wr_ok(qp, wr) || wr->num_sge > qp->sq.max_sge) {
			err = -EINVAL;
			break;
		}
		if (wr->send_flags & IB_SEND_INLINE) {
			err = sroce_inline_fetch(qp, wr, inl, &inl_len);
			if (err)
				break;
		}
		/*
		 * The state is decided under sq.lock: a reset empties the SQ
		 * and the Error state flushes it under the same lock, so a WR
		 * is either queued before them (and released or flushed by
		 * them) or sees their state here.
		 */
		spin_lock_irqsave(&qp->sq.lock, flags);
		state = READ_ONCE(qp->state);
		if (state < IB_QPS_RTS) {
			err = -EINVAL;
		} else if (sroce_sq_flushes(state) &&
			   qp->sq.head == qp->sq.tail) {
			/*
			 * IBA 10.3.1: a WR posted in Error or SQE completes
			 * flushed; nothing older is left to complete first.
			 * Under sq.lock: a reset that follows finds the
			 * completion in the CQ and removes it
			 * (sroce_cq_clean()).
			 */
			sroce_flush_wr(qp, ibqp->send_cq, wr->wr_id,
				       sroce_wc_opcode(wr->opcode));
			flush = true;
		} else if (qp->sq.tail - qp->sq.head == qp->sq.size) {
			err = -ENOMEM;
		} else {
			/*
			 * In Error or SQE behind WQEs a flush is completing:
			 * queued, the engine flushes it after them (in order).
			 */
			err = sroce_wqe_fill(qp, sroce_sq_wqe(qp, qp->sq.tail),
					     wr, inl, inl_len);
			if (!err)	/* the requester reads the slot after */
				smp_store_release(&qp->sq.tail,
						  qp->sq.tail + 1);
			if (!err && sroce_sq_flushes(state))
				flush_later = true;
		}
		spin_unlock_irqrestore(&qp->sq.lock, flags);
		if (err)
			break;
		flushed |= flush;
	}
	if (err)
		*bad_wr = wr;
	if (flushed)
		sroce_qp_deliver_posted(qp);
	if (flush_later) {
		sroce_qp_kick(qp);
		return err;
	}

	/*
	 * Run the requester here when we can: in task context, where the
	 * caller holds none of our locks.  From interrupts and softirqs (a
	 * completion handler that posts) the work item runs it.  What it
	 * completes is not delivered inside the post to a kernel ULP
	 * (sroce_qp_deliver_posted()).
	 */
	if (in_task() && !irqs_disabled()) {
		bool more;

		spin_lock_bh(&qp->lock);
		more = sroce_req_run(qp, SROCE_REQ_BUDGET);
		sroce_qp_unlock_posted(qp);
		if (more)
			sroce_qp_kick(qp);
	} else {
		sroce_qp_kick(qp);
	}
	return err;
}

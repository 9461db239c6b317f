// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce QPs: create/query/destroy and the IBA QP state machine (IBA 10.3.1,
 * figure 124): RESET, INIT, RTR, RTS, SQD, SQE, ERR.  Which transitions and
 * attribute masks are legal is ib_core's table (ib_modify_qp_is_ok); this
 * file checks the attribute values against the device and applies them.
 */
#include <linux/etherdevice.h>
#include <linux/slab.h>

#include "sroce.h"

static int sroce_check_caps(struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > SROCE_MAX_QP_WR ||
	    cap->max_send_sge > SROCE_MAX_SGE ||
	    cap->max_inline_data > SROCE_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > SROCE_MAX_QP_WR ||
			   cap->max_recv_sge > SROCE_MAX_SGE))
		return -EINVAL;
	return 0;
}

/*
 * Queue sizes: the power of two at or above what was asked (IBA 11.2.4.1
 * allows more; Create QP answers with what it made).  A queue's u32
 * indexes run free, so only a size that divides 2^32 names the same slot
 * for an index on both sides of their wrap (sroce_queue_slot()).
 */
static u32 sroce_wq_size(u32 wr)
{
	return roundup_pow_of_two(max_t(u32, wr, 1));
}

static int sroce_qp_alloc_queues(struct sroce_qp *qp,
				 struct ib_qp_init_attr *init)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 sge, stride;
	int err;

	/* The WQE, its SGEs, then its own area for inline data (aligned). */
	stride = ALIGN(struct_size_t(struct sroce_send_wqe, sge,
				     cap->max_send_sge) +
		       cap->max_inline_data, 8);
	err = sroce_queue_init(&qp->sq, sroce_wq_size(cap->max_send_wr),
			       stride, cap->max_send_sge);
	if (err)
		return err;
	qp->max_inline = cap->max_inline_data;

	if (!init->srq) {
		sge = max_t(u32, cap->max_recv_sge, 1);
		stride = sizeof(struct sroce_recv_wqe) + sge * sizeof(struct ib_sge);
		err = sroce_queue_init(&qp->rq,
				       sroce_wq_size(cap->max_recv_wr),
				       stride, cap->max_recv_sge);
		if (err) {
			sroce_queue_free(&qp->sq);
			return err;
		}
	}
	return 0;
}

int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_create_qp_resp resp = {};
	struct sroce_qp *qp = to_sqp(ibqp);
	bool map_sq, map_rq;
	u32 map;
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_GSI:
		break;
	default:	/* RoCE has no QP0 (IBA A17.9.1); no XRC, no raw QPs */
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	/* A kernel caller may pass none (uverbs always does): rxe refuses. */
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	if (init->qp_type == IB_QPT_GSI && udata)
		return -EINVAL;
	err = sroce_check_caps(init);
	if (err)
		return err;
	/*
	 * A user QP gets inline data up to the size of the SGEs its WQE
	 * may carry, asked for or not, as from rdma_rxe and NICs (Create QP
	 * may grant more than asked, IBA 11.2.4.1): a mapped slot has that
	 * room anyway (the kernel's own slot grows by it), and rdma-core's
	 * rdma_xclient sends 16 inline bytes on a QP that asked for none.
	 * Kernel ULPs size it themselves.
	 */
	if (udata)
		init->cap.max_inline_data =
			max_t(u32, init->cap.max_inline_data,
			      min_t(u32, init->cap.max_send_sge *
				    sizeof(struct ib_sge), SROCE_MAX_INLINE));
	err = sroce_map_cmd(udata, &map);
	if (err)
		return err;
	/* A UD SQ names address handles, which only the command can. */
	map_sq = (map & SROCE_MAPPED) && (init->qp_type == IB_QPT_RC ||
					 init->qp_type == IB_QPT_UC);
	map_rq = (map & SROCE_MAPPED) && !init->srq;

	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	spin_lock_init(&qp->lock);
	sroce_comp_init(qp);
	INIT_WORK(&qp->tx_work, sroce_tx_work);
	skb_queue_head_init(&qp->txq);
	skb_queue_head_init(&qp->rx_backlog);
	INIT_LIST_HEAD(&qp->resp.ack_node);
	/* The receive WQE the responder works on, whatever its source. */
	qp->resp.wqe = kmalloc(struct_size(qp->resp.wqe, sge, SROCE_MAX_SGE),
			       GFP_KERNEL_ACCOUNT);
	if (!qp->resp.wqe)
		return -ENOMEM;
	err = sroce_qp_alloc_queues(qp, init);
	if (err)
		goto err_wqe;
	if (map_sq) {
		err = sroce_uring_init(&qp->sq, udata, qp->max_inline, true,
				       &resp.sq_mmap_offset);
		if (err)
			goto err_queues;
		resp.flags = SROCE_MAPPED;
		resp.sq_stride = qp->sq.ustride;
	}
	if (map_rq) {
		err = sroce_uring_init(&qp->rq, udata, 0, false,
				       &resp.rq_mmap_offset);
		if (err)
			goto err_queues;
		resp.rq_flags = SROCE_MAPPED;
		resp.rq_stride = qp->rq.ustride;
	}
	err = dst_cache_init(&qp->dst_cache, GFP_KERNEL_ACCOUNT);
	if (err)
		goto err_queues;

	if (udata) {
		resp.sq_entries = qp->sq.size;
		resp.rq_entries = qp->rq.size;
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_dst;
	}

	/*
	 * An id now, published last: from then on packets can find the QP.
	 * Its element outlives it (struct sroce_pool_elem).
	 */
	qp->elem = kzalloc(sizeof(*qp->elem), GFP_KERNEL_ACCOUNT);
	if (!qp->elem) {
		err = -ENOMEM;
		goto err_dst;
	}
	qp->elem->obj = qp;
	if (init->qp_type == IB_QPT_GSI)
		err = sroce_pool_add_id(&sdev->qp_pool, qp->elem, 1);
	else
		err = sroce_pool_add(&sdev->qp_pool, qp->elem);
	if (err) {
		kfree(qp->elem);
		goto err_dst;
	}
	ibqp->qp_num = qp->elem->id;
	err = sroce_cq_attach_qp(qp);
	if (err) {
		sroce_pool_abort(&sdev->qp_pool, qp->elem);
		kfree(qp->elem);
		goto err_dst;
	}
	qp->src_port = sroce_src_port(qp->elem->id);
	qp->ip_id = get_random_u16();
	init->cap.max_send_wr = qp->sq.size;
	if (!init->srq)
		init->cap.max_recv_wr = qp->rq.size;
	sroce_live_inc(SROCE_OBJ_QP);
	sroce_pool_publish(&sdev->qp_pool, qp->elem);
	return 0;

err_dst:
	dst_cache_destroy(&qp->dst_cache);
err_queues:
	sroce_queue_free(&qp->sq);
	sroce_queue_free(&qp->rq);
err_wqe:
	kfree(qp->resp.wqe);
	return err;
}

/* Attribute values the device cannot honour (the masks are ib_core's). */
static int sroce_check_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
			    int mask, struct sroce_av *av)
{
	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index)
		return -EINVAL;
	/*
	 * Up to the port's MTU cap (max_mtu), not its active MTU, as rdma_rxe
	 * and RoCE NICs take it: the passive side of rdma_cm sets the path
	 * MTU of the active side's netdev.  Packets that do not fit the
	 * netdev are dropped and counted (tx_errors), as after the netdev's
	 * MTU shrank, and an RC QP then fails with retry exceeded.
	 */
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	/* 5-bit timers, 3-bit retry counts (IBA 9.7.6.1.3, 9.7.5.2.8). */
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SROCE_MAX_INIT_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SROCE_MAX_RD_ATOMIC)
		return -EINVAL;
	/* 24 bits, and not the multicast QPN, which names no peer QP. */
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SROCE_MAX_QPN)
		return -EINVAL;
	if ((mask & IB_QP_CAP) &&
	    (attr->cap.max_send_wr > qp->sq.size ||
	     attr->cap.max_recv_wr > qp->rq.size))
		return -EINVAL;	/* no QP resize */
	if (mask & IB_QP_AV) {
		int err = sroce_av_from_attr(av, &attr->ah_attr);

		if (err)
			return err;
		/* Connected QPs send to one unicast MAC (A17.4.5). */
		if ((qp->ibqp.qp_type == IB_QPT_RC ||
		     qp->ibqp.qp_type == IB_QPT_UC) &&
		    !is_valid_ether_addr(av->dmac))
			return -EINVAL;
	}
	return 0;
}

/* Keep what query_qp must return (the AV as an sroce_av, without sgid_attr). */
static void sroce_apply_attr(struct sroce_qp *qp, struct ib_qp_attr *attr,
			     int mask, const struct sroce_av *av)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_AV) {
		qp->av = *av;
		dst_cache_reset(&qp->dst_cache);	/* a route to the old one */
		sroce_comp_new_path(qp);	/* and its round trip */
	}
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & 0xffffff;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	/*
	 * A connection's UDP source port: of its flow label, or of both QPNs
	 * when it has none (rdma_get_udp_sport(), the convention ib_verbs.h
	 * sets for RoCEv2 drivers, rdma_rxe's too): a ULP's flow label
	 * steers ECMP, and both ends of a connection hash alike.
	 */
	if (mask & IB_QP_AV)
		qp->src_port = rdma_get_udp_sport(av->flow_label,
						  qp->ibqp.qp_num,
						  a->dest_qp_num);
	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	/* Kept for query_qp, as rdma_rxe does: RoCE has no alternate path. */
	if (mask & IB_QP_PATH_MIG_STATE)
		a->path_mig_state = attr->path_mig_state;
}

static void sroce_qp_event(struct sroce_qp *qp, enum ib_event_type type)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct ib_event ev = {
		.device = ibqp->device,
		.element.qp = ibqp,
		.event = type,
	};

	if (ibqp->event_handler)
		ibqp->event_handler(&ev, ibqp->qp_context);
}

static void sroce_srq_deliver(struct sroce_srq *srq)
{
	struct ib_event ev = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};

	if (READ_ONCE(srq->limit_due) && xchg(&srq->limit_due, false) &&
	    srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
}

/*
 * What the engine noted for the consumers a QP shares with others: its
 * CQs' notifications and overruns, its SRQ's limit.  Also for a QP being
 * destroyed (its own events are not delivered): those consumers outlive
 * it.  The caller holds no lock of ours.
 */
void sroce_qp_deliver_shared(struct sroce_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;

	if (ibqp->send_cq)
		sroce_cq_deliver(to_scq(ibqp->send_cq));
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		sroce_cq_deliver(to_scq(ibqp->recv_cq));
	if (ibqp->srq)
		sroce_srq_deliver(to_ssrq(ibqp->srq));
}

/**
 * sroce_qp_deliver_events - call the consumer for what the engine noted
 * @qp: the QP; the caller holds none of our locks (a handler may poll,
 *	post, or modify this QP)
 *
 * The engine only notes events under its locks: the QP's async events,
 * its CQs' notifications and overruns, its SRQ's limit.  Every path that
 * releases qp->lock calls this after (sroce_qp_unlock()); a post that
 * completes a WR itself goes through sroce_qp_deliver_posted().
 */
void sroce_qp_deliver_events(struct sroce_qp *qp)
{
	/* In this order: a cause before what follows from it. */
	static const enum ib_event_type order[] = {
		IB_EVENT_COMM_EST, IB_EVENT_SQ_DRAINED, IB_EVENT_QP_FATAL,
		IB_EVENT_QP_REQ_ERR, IB_EVENT_QP_ACCESS_ERR,
		IB_EVENT_QP_LAST_WQE_REACHED,
	};
	unsigned int i;

	BUILD_BUG_ON(IB_EVENT_QP_LAST_WQE_REACHED >= BITS_PER_LONG);
	for (i = 0; READ_ONCE(qp->events_due) && i < ARRAY_SIZE(order); i++)
		if (test_and_clear_bit(order[i], &qp->events_due))
			sroce_qp_event(qp, order[i]);
	sroce_qp_deliver_shared(qp);
}

/*
 * Has a kernel ULP's CQ a call due that may not be made inside its post?
 * An overrun (the ULP's event handler), or a notification whose
 * comp_handler is the ULP's own (ib_create_cq()); ib_alloc_cq()'s
 * handlers, which own ibcq->wc, only schedule the poll.
 */
static bool sroce_cq_defer(struct ib_cq *ibcq)
{
	struct sroce_cq *cq = ibcq ? to_scq(ibcq) : NULL;

	return cq && (READ_ONCE(cq->err_due) ||
		      (READ_ONCE(cq->notify_due) && !ibcq->wc));
}

/**
 * sroce_qp_deliver_posted - deliver what a post noted: here, unless a
 *	kernel ULP's own handler is due, which the QP's work item calls
 * @qp: the QP; the caller (post_send, post_recv) holds none of our locks
 *
 * A kernel ULP may hold a lock of its own across ib_post_send() that its
 * completion or event handler takes, or post again from its handler: a
 * RoCE NIC calls the handlers from its interrupt, rdma_rxe from a
 * tasklet, never from inside the post.  Called here, the first would
 * deadlock and the second nest without bound (a UD send or a WR posted in
 * Error completes before the post returns; an ACK the post found waiting
 * completes another).  uverbs' handlers only queue an event for the
 * process, and ib_core's own (ib_alloc_cq()) only schedule its poll: those
 * run here.
 */
void sroce_qp_deliver_posted(struct sroce_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;

	if (!ibqp->uobject &&
	    (READ_ONCE(qp->events_due) || sroce_cq_defer(ibqp->send_cq) ||
	     sroce_cq_defer(ibqp->recv_cq) ||
	     (ibqp->srq && READ_ONCE(to_ssrq(ibqp->srq)->limit_due)))) {
		sroce_qp_kick(qp);
		return;
	}
	sroce_qp_deliver_events(qp);
}

/*
 * The new state of a QP the engine fails, and the completion of the send
 * WQE that failed (@wc, or NULL), under sq.lock: post_send decides under
 * it whether to queue a WR or flush it itself, so no flush of a later WR
 * completes before @wc.  The state is set before @wc shows: a consumer
 * that polls @wc may move the QP on at once (ib_mad moves QP1 from SQE to
 * RTS with IB_QP_CUR_STATE) and must find it in its new state.
 * Return: true if @wc was lost, its CQ full (IB_EVENT_QP_FATAL noted).
 */
static bool sroce_qp_fail_state(struct sroce_qp *qp, enum ib_qp_state state,
				struct ib_wc *wc)
{
	struct sroce_cq *scq = to_scq(qp->ibqp.send_cq);
	unsigned long flags;
	bool lost = false;

	spin_lock_irqsave(&qp->sq.lock, flags);
	/* Pairs with the acquire of lockless readers (receive path). */
	smp_store_release(&qp->state, state);
	if (wc)
		lost = sroce_cq_complete(scq, wc, false) != 0;
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	/* Its CQ overran: IB_EVENT_QP_FATAL too (sroce_qp_complete()). */
	if (lost)
		sroce_qp_note(qp, IB_EVENT_QP_FATAL);
	return lost;
}

/* sroce_qp_error(), after the send WQE that failed completes with @wc. */
static void sroce_qp_error_wc(struct sroce_qp *qp, struct ib_wc *wc)
{
	lockdep_assert_held(&qp->lock);
	if (qp->state == IB_QPS_ERR) {
		if (wc)
			sroce_cq_complete(to_scq(qp->ibqp.send_cq), wc, false);
		return;
	}
	sroce_resp_ack_owed(qp);
	/*
	 * The receive WQE of the message in progress was taken off its
	 * queue: it completes first, flushed (IBA 10.3.1: every WR posted
	 * completes), then the rest.  Before Error is published: a
	 * post_recv that sees Error and an empty queue flushes its WR at
	 * once (post.c), which must not overtake this older one.
	 */
	sroce_resp_flush_wqe(qp);
	sroce_qp_fail_state(qp, IB_QPS_ERR, wc);
	sroce_resp_reset(qp);
	sroce_qp_flush(qp);
	del_timer(&qp->retry_timer);
	del_timer(&qp->rnr_timer);
	qp->comp.rnr_wait = false;
	sroce_win_busy(qp, false);	/* nothing will be acknowledged */
	if (qp->ibqp.srq)
		sroce_qp_note(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/**
 * sroce_qp_error - move a QP to the Error state
 * @qp: the QP, with qp->lock held
 *
 * From the engine (a completion in error, IBA 10.3.1) and from modify_qp:
 * outstanding WRs are flushed, the responder forgets its state, and a QP
 * on an SRQ notes IB_EVENT_QP_LAST_WQE_REACHED (IBA 11.6.3.1: it consumes
 * no more receive WQEs; ib_drain_rq waits for it).
 */
void sroce_qp_error(struct sroce_qp *qp)
{
	sroce_qp_error_wc(qp, NULL);
}

/**
 * sroce_qp_complete - complete a WQE
 * @qp: the QP, with qp->lock held
 * @ibcq: its send or receive CQ
 * @wc: the completion
 * @solicited: the completion is for a solicited message
 *
 * A completion that finds its CQ full, or in error after an overrun, is
 * lost, and the QP cannot go on: IBA C9-218 (a requester class F error)
 * and C11-37 (an affiliated asynchronous error for every work queue that
 * uses an overrun CQ) move it to the Error state, with IB_EVENT_QP_FATAL
 * beside the CQ's IB_EVENT_CQ_ERR.  The responder then sends no ACK for
 * the message whose completion was lost (sroce_resp_rcv() stops at Error).
 *
 * Return: true if the completion was lost and the QP moved to Error.
 */
bool sroce_qp_complete(struct sroce_qp *qp, struct ib_cq *ibcq,
		       const struct ib_wc *wc, bool solicited)
{
	lockdep_assert_held(&qp->lock);
	if (!sroce_cq_complete(to_scq(ibcq), wc, solicited) ||
	    qp->state == IB_QPS_ERR)
		return false;
	sroce_qp_note(qp, IB_EVENT_QP_FATAL);
	sroce_qp_error(qp);
	return true;
}

/**
 * sroce_qp_sq_error - a send WQE failed: Send Queue Error, or Error
 * @qp: the QP, with qp->lock held
 * @wc: the failed WQE's completion, which shows once the state is set
 *
 * IBA 10.3.1: a local error of the send queue of a UC or UD QP (QP1
 * included) ends its send side only.  Its WRs complete flushed, later
 * posts too, while the RQ goes on receiving; Modify QP to RTS resumes
 * sending (ib_mad does so from SQE after a failed send).  An RC QP, and a
 * QP already in Error, goes to Error instead.
 */
void sroce_qp_sq_error(struct sroce_qp *qp, struct ib_wc *wc)
{
	lockdep_assert_held(&qp->lock);
	if (qp->ibqp.qp_type == IB_QPT_RC || qp->state == IB_QPS_ERR) {
		sroce_qp_error_wc(qp, wc);
		return;
	}
	if (qp->state == IB_QPS_SQE) {
		sroce_qp_complete(qp, qp->ibqp.send_cq, wc, false);
		return;
	}
	/* A completion its CQ has no room for ends the QP: Error. */
	if (sroce_qp_fail_state(qp, IB_QPS_SQE, wc)) {
		sroce_qp_error(qp);
		return;
	}
	sroce_qp_flush(qp);
	/* A drain asked for in SQD ended in error: no SQ_DRAINED for it. */
	qp->sqd_notify = false;
}

/*
 * Going back to RESET empties both queues without completions (10.3.1);
 * the WQEs give back their MRs.
 */
static void sroce_qp_reset(struct sroce_qp *qp, enum ib_qp_state cur)
{
	u32 i;

	lockdep_assert_held(&qp->lock);
	/* As on the way to Error: the peer waits for it (9.7.5.1.1). */
	sroce_resp_ack_owed(qp);
	/*
	 * Under sq.lock with the state: post_send decides under it too, so
	 * a WR is either released here or refused (IBA 10.8.2: RESET).
	 */
	spin_lock_irq(&qp->sq.lock);
	/* Pairs with the acquire of lockless readers (receive path). */
	smp_store_release(&qp->state, IB_QPS_RESET);
	/*
	 * A new connection: its first request raises COMM_EST again, and
	 * the old one's, if not delivered yet, would mislead the CM.
	 */
	qp->comm_est = false;
	clear_bit(IB_EVENT_COMM_EST, &qp->events_due);
	qp->sqd_notify = false;
	for (i = qp->sq.head; i != qp->sq.tail; i++)
		sroce_wqe_release(sroce_queue_slot(&qp->sq, i));
	qp->sq.head = 0;
	qp->sq.tail = 0;
	sroce_uring_reset(&qp->sq, true, !sroce_sq_flushes(cur));
	spin_unlock_irq(&qp->sq.lock);
	/*
	 * A receive WQE a SEND in progress took off an SRQ is no longer on
	 * any queue: it completes flushed, as on the way to Error, and the
	 * CQ keeps it (sroce_cq_clean()); one of the QP's own RQ goes with
	 * the RQ.
	 */
	if (qp->ibqp.srq)
		sroce_resp_flush_wqe(qp);
	if (qp->rq.buf) {
		spin_lock_irq(&qp->rq.lock);
		qp->rq.head = 0;
		qp->rq.tail = 0;
		sroce_uring_reset(&qp->rq, false, cur != IB_QPS_ERR);
		spin_unlock_irq(&qp->rq.lock);
	}
	sroce_resp_reset(qp);
	del_timer(&qp->retry_timer);
	del_timer(&qp->rnr_timer);
	sroce_win_busy(qp, false);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	qp->resp.epsn = 0;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	qp->resp.ack_pending = false;
	qp->resp.nak_pending = false;
	qp->resp.ack_due = false;	/* ack_queued: the batch's to clear */
	memset(&qp->attr, 0, sizeof(qp->attr));
	/* query_qp shows no AV until the next RTR sets one (and its route). */
	memset(&qp->av, 0, sizeof(qp->av));
}

/* Engine state that follows from the attributes just applied. */
static void sroce_qp_engine_attr(struct sroce_qp *qp, int mask,
				 enum ib_qp_state cur, enum ib_qp_state next)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);

	if (qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI)
		qp->mtu = sroce_port_mtu(sdev);	/* and again per WQE */
	else if (mask & IB_QP_PATH_MTU)
		qp->mtu = ib_mtu_enum_to_int(qp->attr.path_mtu);
	if (!qp->mtu)
		qp->mtu = 256;
	if (mask & IB_QP_RQ_PSN)
		qp->resp.epsn = qp->attr.rq_psn;
	if (mask & IB_QP_SQ_PSN) {
		qp->req.psn = qp->attr.sq_psn;
		qp->req.high_psn = qp->attr.sq_psn;
		qp->comp.psn = qp->attr.sq_psn;
		qp->comp.gap_psn = U32_MAX;
		qp->comp.seq_nak_psn = U32_MAX;
	}
	if (mask & IB_QP_RETRY_CNT)
		qp->comp.retry = qp->attr.retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		qp->comp.rnr_retry = qp->attr.rnr_retry;
}

/*
 * The engine moved the QP to Error (or Send Queue Error) after modify_qp
 * checked the transition: a move to Error or RESET, still allowed from
 * there, goes on from the new state.  ib_drain_qp() asks for Error and
 * warns when it is refused, and the QP is where it asked anyway.  Such a
 * move takes no attribute but the state (ib_modify_qp_is_ok()), so
 * nothing checked against the old state matters.
 */
static bool sroce_qp_failed_meanwhile(struct sroce_qp *qp, int mask,
				      enum ib_qp_state next)
{
	return (next == IB_QPS_ERR || next == IB_QPS_RESET) &&
	       !(mask & IB_QP_CUR_STATE) &&
	       ib_modify_qp_is_ok(qp->state, next, qp->ibqp.qp_type, mask);
}

int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_rd_res *rd = NULL;
	enum ib_qp_state cur, next;
	bool resize = false;
	struct sroce_av av;
	u32 rd_size = 0;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;
	err = sroce_udata_none(udata);
	if (err)
		return err;

	mutex_lock(&qp->state_lock);
	cur = READ_ONCE(qp->state);
	/* We do not advertise IB_DEVICE_CURR_QP_STATE_MOD. */
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		err = -EINVAL;
		goto out;
	}
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ibdev_dbg(ibqp->device, "QP %u: bad transition %d -> %d mask %#x\n",
			  ibqp->qp_num, cur, next, mask);
		err = -EINVAL;
		goto out;
	}
	err = sroce_check_attr(qp, attr, mask, &av);
	if (err)
		goto out;
	/* Only modify_qp, under state_lock, changes rd_size. */
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		rd_size = sroce_rd_ring_size(attr->max_dest_rd_atomic);
		resize = rd_size != qp->resp.rd_size;
	}
	if (resize && rd_size) {
		rd = kvcalloc(rd_size, sizeof(*rd), GFP_KERNEL_ACCOUNT);
		if (!rd) {
			err = -ENOMEM;
			goto out;
		}
	}

	spin_lock_bh(&qp->lock);
	if (qp->state != cur &&
	    !sroce_qp_failed_meanwhile(qp, mask, next)) {
		sroce_qp_release(qp);
		kvfree(rd);
		err = -EINVAL;
		goto out_flush;
	}
	cur = qp->state;
	/*
	 * IBA 11.6.3.1: the attributes of SQD take effect on a drained SQ;
	 * while WRs are still in flight (resent to a new address, under a
	 * new timeout) only Error or RESET may follow (rdma_rxe allows only
	 * Error, when the state is in the mask).
	 */
	if (cur == IB_QPS_SQD && next != IB_QPS_ERR && next != IB_QPS_RESET &&
	    !sroce_sq_drained(qp)) {
		sroce_qp_release(qp);
		kvfree(rd);
		ibdev_dbg(ibqp->device, "QP %u: SQD still draining\n",
			  ibqp->qp_num);
		err = -EINVAL;
		goto out_flush;
	}
	/* A shrink in SQD must keep the reads and atomics pending. */
	if (resize && sroce_resp_resize(qp, &rd, rd_size)) {
		sroce_qp_release(qp);
		kvfree(rd);
		ibdev_dbg(ibqp->device, "QP %u: max_dest_rd_atomic %u below the pending reads\n",
			  ibqp->qp_num, attr->max_dest_rd_atomic);
		err = -EBUSY;
		goto out_flush;
	}
	/*
	 * A WR posted to a mapped queue in Error (the SQ in SQE) whose
	 * doorbell has not come yet completes flushed (IBA 10.3.1) now, as
	 * one posted through the command did, not later in the new
	 * connection; RESET then removes it from the CQ with the QP's other
	 * completions.
	 */
	if (next == IB_QPS_RESET && sroce_sq_flushes(cur) &&
	    (qp->sq.ring || qp->rq.ring))
		sroce_qp_flush(qp);
	if (next == IB_QPS_RESET && cur != IB_QPS_RESET) {
		sroce_qp_reset(qp, cur);
		sroce_cq_clean(to_scq(ibqp->send_cq), qp);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			sroce_cq_clean(to_scq(ibqp->recv_cq), qp);
	}
	/*
	 * What a mapped queue holds when the QP leaves RESET, or the SQ
	 * when it enters RTS, was posted in Error or raced the way to
	 * RESET: flushed, never sent on the new connection.
	 */
	if (cur == IB_QPS_RESET && next == IB_QPS_INIT) {
		if (qp->rq.ring)
			sroce_uring_flush_stale(qp, &qp->rq);
		if (qp->sq.ring)
			sroce_uring_flush_stale(qp, &qp->sq);
	}
	if (cur == IB_QPS_RTR && next == IB_QPS_RTS && qp->sq.ring)
		sroce_uring_flush_stale(qp, &qp->sq);
	/*
	 * Out of SQE: what was posted while a flush ran completes flushed
	 * now (IBA 10.3.1), before the state lets the requester take WRs;
	 * then the next WQE may start.
	 */
	if (cur == IB_QPS_SQE && next == IB_QPS_RTS) {
		sroce_qp_flush(qp);
		qp->req.halt = false;
	}
	sroce_apply_attr(qp, attr, mask, &av);
	sroce_qp_engine_attr(qp, mask, cur, next);
	if (next == IB_QPS_ERR) {
		sroce_qp_error(qp);
	} else {
		/* Publish the state after the attributes the data path reads. */
		smp_store_release(&qp->state, next);
	}
	/*
	 * The event is asked for by this transition to SQD; query_qp still
	 * reports the attribute as set.
	 */
	if (next == IB_QPS_SQD && cur != IB_QPS_SQD)
		qp->sqd_notify = (mask & IB_QP_EN_SQD_ASYNC_NOTIFY) &&
				 attr->en_sqd_async_notify;
	if (qp->state == IB_QPS_SQD && qp->sqd_notify && sroce_sq_drained(qp)) {
		/* Nothing is in flight once the SQ is empty (11.6.3.1). */
		qp->sqd_notify = false;
		sroce_qp_note(qp, IB_EVENT_SQ_DRAINED);
	}
	/* Leaving SQD (or entering RTS): the requester may go on. */
	if (next == IB_QPS_RTS && sroce_req_run(qp, SROCE_REQ_BUDGET))
		sroce_qp_kick(qp);
	/* The events after state_lock: a handler may modify this QP. */
	sroce_qp_release(qp);
	sroce_qp_tx_flush(qp);
	mutex_unlock(&qp->state_lock);
	kvfree(rd);
	sroce_qp_deliver_events(qp);
	return 0;
out_flush:
	/* The backlog's packets were handled: what they produced goes out. */
	sroce_qp_tx_flush(qp);
	mutex_unlock(&qp->state_lock);
	sroce_qp_deliver_events(qp);
	return err;
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct sroce_qp *qp = to_sqp(ibqp);

	mutex_lock(&qp->state_lock);
	*attr = qp->attr;
	/*
	 * QP1 is bound to its port when it is made (ib_core refuses it
	 * IB_QP_PORT, and ib_mad brings it up without one), as rdma_rxe's.
	 */
	if (qp->ibqp.qp_type == IB_QPT_GSI)
		attr->port_num = 1;
	/* An applied AV always has a MAC (sroce_av_from_attr()). */
	if (!is_zero_ether_addr(qp->av.dmac))
		sroce_av_to_attr(&qp->av, &attr->ah_attr);
	spin_lock_bh(&qp->lock);
	attr->sq_draining = qp->state == IB_QPS_SQD && !sroce_sq_drained(qp);
	/*
	 * The PSNs in use, as rdma_rxe and NICs report them (what "rdma
	 * resource show qp" prints): the next to send and to receive.
	 */
	if (qp->state != IB_QPS_RESET) {
		attr->sq_psn = qp->req.psn & 0xffffff;
		attr->rq_psn = qp->resp.epsn & 0xffffff;
	}
	/* Never 0, which no ib_mtu is: what the QP sends with. */
	if (!attr->path_mtu)
		attr->path_mtu = ib_mtu_int_to_enum(qp->mtu ?: 256);
	/*
	 * A packet that came meanwhile waits on the backlog for the holder:
	 * handled now, what it produced sent, its events after state_lock.
	 * The state is read after it (it may have moved the QP to Error).
	 */
	sroce_qp_release(qp);
	sroce_qp_tx_flush(qp);
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->cap.max_send_wr = qp->sq.size;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_wr = qp->rq.size;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->max_inline;
	mutex_unlock(&qp->state_lock);
	sroce_qp_deliver_events(qp);

	memset(init, 0, sizeof(*init));
	init->event_handler = ibqp->event_handler;
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_type;
	init->qp_type = ibqp->qp_type;
	init->port_num = 1;
	return 0;
}

int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	u32 i;

	/*
	 * The ACK for completions its consumer may have polled leaves.  The
	 * release handles the packets on the backlog while the QP still
	 * responds; the CQ notifications and SRQ limit they may have noted
	 * reach the consumers of those, which outlive the QP.  Not the QP's
	 * own events: its consumer is destroying it.
	 */
	spin_lock_bh(&qp->lock);
	sroce_resp_ack_owed(qp);
	sroce_qp_release(qp);
	sroce_qp_tx_flush(qp);
	sroce_qp_deliver_shared(qp);

	/*
	 * Unpublish and wait for every packet and WR that holds the QP; the
	 * WRs still queued are dropped without completions (IBA 10.2.4.4:
	 * destroying a QP does not complete its outstanding WRs).
	 */
	spin_lock_bh(&qp->lock);
	WRITE_ONCE(qp->dead, true);	/* no timers, no kicks from here on */
	sroce_qp_release(qp);
	sroce_qp_deliver_shared(qp);
	sroce_mcast_detach_all(qp);
	sroce_pool_remove(&sdev->qp_pool, qp->elem, &sdev->ibdev);
	del_timer_sync(&qp->retry_timer);
	del_timer_sync(&qp->rnr_timer);
	cancel_work_sync(&qp->tx_work);
	/*
	 * Its number may serve another QP from now on: no type 2B window
	 * stays bound through it.  After the engine stopped for good, so
	 * that no bind comes after.
	 */
	sroce_mw_qp_gone(qp);
	/* Its packets held it: none is left once the wait above is over. */
	WARN_ON_ONCE(!skb_queue_empty(&qp->txq));
	WARN_ON_ONCE(!skb_queue_empty(&qp->rx_backlog));

	spin_lock_bh(&qp->lock);
	for (i = qp->sq.head; i != qp->sq.tail; i++)
		sroce_wqe_release(sroce_queue_slot(&qp->sq, i));
	sroce_resp_reset(qp);
	sroce_win_busy(qp, false);
	spin_unlock_bh(&qp->lock);
	/* Its completions still in the CQs must not point to it once freed. */
	if (ibqp->send_cq)
		sroce_cq_forget_qp(to_scq(ibqp->send_cq), qp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		sroce_cq_forget_qp(to_scq(ibqp->recv_cq), qp);
	kfree(qp->resp.wqe);
	kvfree(qp->resp.rd);
	dst_cache_destroy(&qp->dst_cache);
	sroce_queue_free(&qp->sq);
	sroce_queue_free(&qp->rq);
	mutex_destroy(&qp->state_lock);
	/* Nothing holds it; a lookup may still read it (pool.c). */
	kfree_rcu(qp->elem, rcu);
	sroce_live_dec(SROCE_OBJ_QP);
	return 0;
}

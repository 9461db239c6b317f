// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce work queues: posting receive WRs, flushing (post_send is the
 * requester's, req.c; the rings of mapped queues are uring.c's).
 *
 * A queue is a ring of fixed-size slots under its own lock.  A WR is
 * accepted or refused as a whole (IBA 11.4.1.1): a refused WR and all after
 * it are reported through *bad_wr, none of them is queued.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"

int sroce_queue_init(struct sroce_queue *q, u32 size, u32 stride, u32 max_sge)
{
	if (sroce_fail(SROCE_FAULT_CREATE))
		return -ENOMEM;
	q->buf = kvcalloc(size, stride, GFP_KERNEL_ACCOUNT);
	if (!q->buf)
		return -ENOMEM;
	spin_lock_init(&q->lock);
	q->size = size;
	q->stride = stride;
	q->max_sge = max_sge;
	q->head = 0;
	q->tail = 0;
	return 0;
}

void sroce_queue_free(struct sroce_queue *q)
{
	sroce_uring_free(q);
	kvfree(q->buf);
	q->buf = NULL;
}

static bool sroce_queue_full(const struct sroce_queue *q)
{
	return q->tail - q->head == q->size;
}

/*
 * A flushed completion carries the WR's opcode, as rdma_rxe's do (IBA
 * leaves it undefined; a consumer may still look).
 */
void sroce_flush_wr(struct sroce_qp *qp, struct ib_cq *ibcq, u64 wr_id,
		    enum ib_wc_opcode opcode)
{
	struct ib_wc wc = {
		.wr_id = wr_id,
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = opcode,
		.qp = &qp->ibqp,
	};

	sroce_cq_complete(to_scq(ibcq), &wc, false);
}

/*
 * The entries of a mapped queue not taken yet complete flushed, one at a
 * time, each after the queue's lock is dropped, @max at most (at most one
 * ring's worth: an honest provider has no more, and a process that writes
 * more gets them flushed by its next doorbell, at its cost).
 * Return: true if it stopped at @max with entries left.
 */
static bool sroce_uring_flush(struct sroce_qp *qp, struct sroce_queue *q,
			      struct ib_cq *ibcq, bool recv, u32 max)
{
	unsigned long flags;
	enum ib_wc_opcode op = IB_WC_RECV;
	u64 wr_id;
	u32 n;

	for (n = 0; n < min(max, q->size); n++) {
		bool more;

		spin_lock_irqsave(&q->lock, flags);
		more = sroce_uring_flush_one(q, &wr_id, recv ? NULL : &op);
		spin_unlock_irqrestore(&q->lock, flags);
		if (!more)
			return false;
		sroce_flush_wr(qp, ibcq, wr_id, op);
	}
	return max < q->size;
}

/**
 * sroce_uring_flush_stale - complete flushed what a mapped queue holds
 *	before the QP takes WRs again
 * @qp: the QP, with qp->lock held, going RESET -> INIT (@q its RQ or
 *	SQ) or RTR -> RTS (@q its SQ): the queue itself is empty
 * @q: the queue
 *
 * The provider refuses posts in RESET, and an SQ post before RTS (IBA
 * 10.8.2), so an entry found here was written by a post in Error that
 * came after the flush on the way to RESET, or by one that raced the
 * transition.  Its post returned success: it completes flushed (IBA
 * 10.3.1), before anything the new connection does, and is never sent.
 */
void sroce_uring_flush_stale(struct sroce_qp *qp, struct sroce_queue *q)
{
	bool recv = q == &qp->rq;
	unsigned long flags;

	lockdep_assert_held(&qp->lock);
	sroce_uring_flush(qp, q, recv ? qp->ibqp.recv_cq : qp->ibqp.send_cq,
			  recv, q->size);
	/*
	 * The flush set the doorbell flag: an idle SQ keeps it (the next
	 * post rings), an RQ in INIT needs none (the responder takes it).
	 */
	if (recv) {
		spin_lock_irqsave(&q->lock, flags);
		WRITE_ONCE(q->ring->doorbell, 0);
		spin_unlock_irqrestore(&q->lock, flags);
	}
}

/* Ring entries a doorbell in Error flushes with softirqs off, at most. */
#define SROCE_UFLUSH_BATCH	256

static bool __sroce_qp_flush(struct sroce_qp *qp, u32 ring_max);

/**
 * sroce_uring_doorbell_err - a doorbell on a mapped queue whose WRs flush
 * @qp: the QP (process context: the doorbell is a uverbs command)
 *
 * IBA 10.3.1: a WR posted in Error, or to the SQ in Send Queue Error,
 * completes flushed.  It does so before the doorbell returns, as a WR
 * posted through the command would: a process that moves the QP to RESET
 * next finds no WR left to drop.
 */
void sroce_uring_doorbell_err(struct sroce_qp *qp)
{
	u32 i, laps = DIV_ROUND_UP(max(qp->sq.size, qp->rq.size),
				   SROCE_UFLUSH_BATCH);
	bool more = true;

	/*
	 * A batch at a time, softirqs back on between: a process that wrote
	 * a ring's worth of entries (or moved its producer so) takes the
	 * flush's time in its own system call, not from every softirq of
	 * the CPU.  One ring's worth in all.
	 */
	for (i = 0; more && i < laps; i++) {
		spin_lock_bh(&qp->lock);
		more = sroce_sq_flushes(qp->state) &&
		       __sroce_qp_flush(qp, SROCE_UFLUSH_BATCH);
		sroce_qp_unlock(qp);
		if (more)
			cond_resched();
	}
}

/* The send half of __sroce_qp_flush(), which both states flush. */
static bool sroce_sq_flush(struct sroce_qp *qp, u32 ring_max)
{
	struct sroce_queue *q = &qp->sq;
	unsigned long flags;
	u32 head, tail;

	lockdep_assert_held(&qp->lock);
	/*
	 * The state flushes the SQ: post_send queues nothing more (it
	 * decides under sq.lock, which the change of state took after
	 * setting it), so the WQEs below the tail read here are all there
	 * are.  They complete outside sq.lock: there may be many.
	 */
	spin_lock_irqsave(&q->lock, flags);
	tail = q->tail;
	spin_unlock_irqrestore(&q->lock, flags);
	for (head = q->head; head != tail; head++) {
		struct sroce_send_wqe *wqe = sroce_queue_slot(q, head);

		sroce_wqe_release(wqe);
		sroce_flush_wr(qp, qp->ibqp.send_cq, wqe->wr_id,
			       sroce_wc_opcode(wqe->opcode));
	}
	spin_lock_irqsave(&q->lock, flags);
	q->head = tail;
	sroce_uring_publish(q);
	spin_unlock_irqrestore(&q->lock, flags);
	qp->req.idx = tail;
	qp->req.rd_inflight = 0;
	return q->ring &&
	       sroce_uring_flush(qp, q, qp->ibqp.send_cq, false, ring_max);
}

/*
 * sroce_qp_flush(), with at most @ring_max entries of each mapped ring.
 * Return: true if a ring has entries left.
 */
static bool __sroce_qp_flush(struct sroce_qp *qp, u32 ring_max)
{
	struct sroce_queue *q = &qp->rq;
	unsigned long flags;
	u32 head, tail;
	bool more;

	more = sroce_sq_flush(qp, ring_max);
	if (qp->state != IB_QPS_ERR || !q->buf)
		return more;
	/* As for the SQ: post_recv queues behind this or flushes itself. */
	spin_lock_irqsave(&q->lock, flags);
	tail = q->tail;
	spin_unlock_irqrestore(&q->lock, flags);
	for (head = q->head; head != tail; head++) {
		struct sroce_recv_wqe *wqe = sroce_queue_slot(q, head);

		sroce_flush_wr(qp, qp->ibqp.recv_cq, wqe->wr_id, IB_WC_RECV);
	}
	spin_lock_irqsave(&q->lock, flags);
	q->head = tail;
	sroce_uring_publish(q);
	spin_unlock_irqrestore(&q->lock, flags);
	if (q->ring)
		more |= sroce_uring_flush(qp, q, qp->ibqp.recv_cq, true,
					  ring_max);
	return more;
}

/**
 * sroce_qp_flush - complete the queued WRs its state flushes
 * @qp: a QP in Error or Send Queue Error, with qp->lock held
 *
 * IBA 10.3.1: in Error all outstanding and later posted WRs complete with
 * IB_WC_WR_FLUSH_ERR, signaled or not; in SQE those of the SQ only.  The
 * RQ is flushed only when the QP has its own (an SRQ's WRs belong to
 * other QPs too).
 */
void sroce_qp_flush(struct sroce_qp *qp)
{
	__sroce_qp_flush(qp, U32_MAX);
}

/* Queue one receive WR (its SGE count checked), with q->lock held. */
static void sroce_recv_wqe_put(struct sroce_queue *q,
			       const struct ib_recv_wr *wr)
{
	struct sroce_recv_wqe *wqe = sroce_queue_slot(q, q->tail);

	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->bad = false;
	memcpy(wqe->sge, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
	q->tail++;
}

/**
 * sroce_queue_post_recv - post receive WRs to a QP's RQ or to an SRQ
 * @q: the receive queue
 * @wr: the first WR
 * @bad_wr: set to the first WR not queued
 *
 * A mapped queue takes WRs from its ring only: the command has none to
 * post (a provider's doorbell) or is refused.
 *
 * Return: 0, -EINVAL (too many SGEs, a mapped queue) or -ENOMEM (queue
 * full).
 */
int sroce_queue_post_recv(struct sroce_queue *q, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int err = 0;

	if (q->ring && wr) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&q->lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge > q->max_sge) {
			err = -EINVAL;
			break;
		}
		if (sroce_queue_full(q)) {
			err = -ENOMEM;
			break;
		}
		sroce_recv_wqe_put(q, wr);
	}
	spin_unlock_irqrestore(&q->lock, flags);
	if (err)
		*bad_wr = wr;
	return err;
}

/**
 * sroce_post_recv - post receive WRs to a QP's own RQ
 * @ibqp: the QP
 * @wr: the first WR
 * @bad_wr: set to the first WR not queued
 *
 * The state is decided under rq.lock, against a reset that empties the RQ
 * and a flush that snapshots it under the same lock: a WR is refused in
 * RESET (IBA 10.8.2), completes flushed at once in Error when nothing
 * older is left to flush, or else queues behind what a flush completes
 * and the engine flushes it in order.
 *
 * Return: 0, -EINVAL (no RQ of its own, RESET, too many SGEs) or -ENOMEM.
 */
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_queue *q = &qp->rq;
	bool flush_later = false, flushed = false;
	unsigned long flags;
	int err = 0;

	if (!q->buf || (q->ring && wr)) {
		/* An SRQ's QP (IBA 10.8.2), or a ring the WRs go through. */
		*bad_wr = wr;
		return -EINVAL;
	}
	/* A doorbell: in Error, what the ring holds completes flushed. */
	if (q->ring && READ_ONCE(qp->state) == IB_QPS_ERR)
		sroce_uring_doorbell_err(qp);
	for (; wr; wr = wr->next) {
		enum ib_qp_state state;
		bool flush = false;

		if (wr->num_sge > q->max_sge) {
			err = -EINVAL;
			break;
		}
		spin_lock_irqsave(&q->lock, flags);
		state = READ_ONCE(qp->state);
		if (state == IB_QPS_RESET) {
			err = -EINVAL;
		} else if (state == IB_QPS_ERR && q->head == q->tail) {
			/* Under rq.lock, as post_send's (sroce_post_send()). */
			sroce_flush_wr(qp, ibqp->recv_cq, wr->wr_id,
				       IB_WC_RECV);
			flush = true;
		} else if (sroce_queue_full(q)) {
			err = -ENOMEM;
		} else {
			sroce_recv_wqe_put(q, wr);
			flush_later |= state == IB_QPS_ERR;
		}
		spin_unlock_irqrestore(&q->lock, flags);
		if (err)
			break;
		flushed |= flush;
	}
	if (err)
		*bad_wr = wr;
	if (flushed)
		sroce_qp_deliver_posted(qp);
	if (flush_later)
		sroce_qp_kick(qp);
	return err;
}

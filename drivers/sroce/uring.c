// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce mapped work queues: the SQ, RQ and SRQ rings of user QPs
 * (sroce-abi.h, struct sroce_wq_ring), so that posting needs no system
 * call while the engine is busy.
 *
 * The process writes WRs into a ring it maps; the kernel copies each entry
 * once into the queue's own slots (struct sroce_queue, post.c), checks the
 * copy as post_send and post_recv check a WR, and works on its copy only:
 * nothing the process writes later reaches the engine.  The ring's
 * producer is the process's word: it is read once per look and bounded by
 * the room the kernel queue has.
 *
 * When the kernel takes entries:
 *   SQ       the requester, whenever it reaches the end of what it has
 *            (after a doorbell, an ACK, a timer).  When it runs dry it
 *            sets the ring's doorbell flag, and the provider follows its
 *            next post with an empty post_send command (sroce_post_send()
 *            with no WR).
 *   RQ, SRQ  the responder, whenever a message needs a receive WQE.
 *   Error    every entry completes flushed (sroce_qp_flush(), the SQ's
 *            in Send Queue Error too); the doorbell flag is set, so that
 *            later posts come through the command and are flushed too
 *            (IBA 10.3.1).
 */
#include <linux/slab.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

/* Receive entries taken per look (the responder needs one at a time). */
#define SROCE_UR_PULL_MAX	64

static void *sroce_uring_slot(struct sroce_queue *q, u32 index)
{
	return q->ring->slot + (size_t)(index & (q->size - 1)) * q->ustride;
}

/*
 * Entries published and not taken, at most what @q has room for and at
 * most @max (a look costs the engine at most its budget's worth).
 */
static u32 sroce_uring_avail(struct sroce_queue *q, u32 max)
{
	/* Pairs with the provider's release store: the entries are written. */
	u32 n = smp_load_acquire(&q->ring->producer) - q->upull;

	return min3(n, q->size - (q->tail - q->head), max);
}

/**
 * sroce_uring_init - give a queue a ring its process maps
 * @q: the queue, @q->size a power of two
 * @udata: the create command's
 * @inline_len: the SQ's inline data bytes (0 for a receive queue)
 * @send: an SQ (struct sroce_send_uwqe slots) or a receive queue
 * @offset: set to the mmap() offset of the ring
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_uring_init(struct sroce_queue *q, struct ib_udata *udata,
		     u32 inline_len, bool send, u64 *offset)
{
	struct ib_ucontext *uctx =
		&rdma_udata_to_drv_context(udata, struct sroce_ucontext,
					   ibuc)->ibuc;
	u32 sge = max_t(u32, q->max_sge, 1);
	struct sroce_wq_ring *ring;
	u32 stride;

	if (send) {
		stride = sizeof(struct sroce_send_uwqe) +
			 max_t(u32, sge * sizeof(struct ib_uverbs_sge),
			       inline_len);
		q->usge = kcalloc(sge, sizeof(*q->usge), GFP_KERNEL_ACCOUNT);
		if (!q->usge)
			return -ENOMEM;
	} else {
		stride = struct_size_t(struct sroce_recv_uwqe, sge, sge);
	}
	stride = ALIGN(stride, 16);
	ring = sroce_mmap_alloc(uctx, struct_size(ring, slot,
						  (size_t)q->size * stride),
				&q->mmap, offset);
	if (IS_ERR(ring)) {
		kfree(q->usge);
		q->usge = NULL;
		return PTR_ERR(ring);
	}
	q->ring = ring;
	q->ustride = stride;
	q->upull = 0;
	/* An SQ is idle; a receive queue is looked at by the responder. */
	ring->doorbell = send;
	return 0;
}

/* The queue is unused: the ring goes once the process unmaps it. */
void sroce_uring_free(struct sroce_queue *q)
{
	if (q->mmap)
		rdma_user_mmap_entry_remove(q->mmap);
	q->mmap = NULL;
	q->ring = NULL;
	kfree(q->usge);
	q->usge = NULL;
}

/* Tell the process which slots are free again (@q->lock held). */
void sroce_uring_publish(struct sroce_queue *q)
{
	if (q->ring)	/* after our slot reads: the process reuses them */
		smp_store_release(&q->ring->consumer,
				  q->upull - (q->tail - q->head));
}

/**
 * sroce_uring_reset - forget what the ring holds (the QP goes to RESET)
 * @q: the queue, emptied, with @q->lock held
 * @doorbell: the doorbell flag from now on
 * @drop: drop the entries not taken yet
 *
 * IBA 10.3.1: WRs are dropped without completions on the way to RESET.
 * From Error (the SQ's ring from SQE) nothing is dropped: what the ring
 * held was flushed just before, and an entry the process wrote since was
 * posted in that state as far as it knew.  Such an entry, or one a post
 * that raced the way to RESET wrote later, completes flushed where the
 * queue next takes WRs (sroce_uring_flush_stale()), never on the QP's
 * next connection.
 */
void sroce_uring_reset(struct sroce_queue *q, bool doorbell, bool drop)
{
	if (!q->ring)
		return;
	if (drop)
		q->upull = READ_ONCE(q->ring->producer);
	WRITE_ONCE(q->ring->doorbell, doorbell);
	sroce_uring_publish(q);
}

/**
 * sroce_uring_flush_one - take one entry of a ring to complete it flushed
 * @q: the queue of a QP in Error (an SQ in SQE), or one leaving RESET or
 *	entering RTS (sroce_uring_flush_stale()), with @q->lock held
 * @wr_id: set to the entry's wr_id
 * @opcode: if not NULL (an SQ), set to the entry's completion opcode
 *
 * Sets the doorbell flag first: an entry published after the look here is
 * followed by a doorbell (sroce-abi.h), which flushes it.
 *
 * Return: false when the ring has no entry left.
 */
bool sroce_uring_flush_one(struct sroce_queue *q, u64 *wr_id,
			   enum ib_wc_opcode *opcode)
{
	const void *slot;
	u32 prod, op;

	WRITE_ONCE(q->ring->doorbell, 1);
	/* Against the provider's producer store, fence, doorbell load. */
	smp_mb();
	/* Pairs with the provider's release store: the entry is written. */
	prod = smp_load_acquire(&q->ring->producer);
	if (prod == q->upull)
		return false;
	/*
	 * A ring holds @size entries: a producer further ahead is a lie, and
	 * flushes no more than one ring's worth (no endless flushing).
	 */
	if (prod - q->upull > q->size)
		q->upull = prod - q->size;
	slot = sroce_uring_slot(q, q->upull);
	/* wr_id leads both kinds of entries. */
	*wr_id = READ_ONCE(*(u64 *)slot);
	/*
	 * The process wrote the opcode: every value maps to a completion
	 * opcode (sroce_wc_opcode()), and the one a process may not post,
	 * REG_MR, completes as a malformed entry does, as IB_WC_SEND.
	 */
	if (opcode) {
		op = READ_ONCE(((const struct sroce_send_uwqe *)slot)->opcode);
		*opcode = op == IB_WR_REG_MR ? IB_WC_SEND : sroce_wc_opcode(op);
	}
	q->upull++;
	sroce_uring_publish(q);
	return true;
}

/**
 * sroce_rq_pull - take the receive WRs the process published
 * @q: a mapped RQ or SRQ, with @q->lock held
 *
 * An entry with more SGEs than the queue allows is kept as a bad WQE: the
 * message that uses it fails (IB_WC_LOC_QP_OP_ERR) instead of placing
 * data through SGEs nobody checked.
 *
 * Return: the entries taken.
 */
u32 sroce_rq_pull(struct sroce_queue *q)
{
	u32 n = sroce_uring_avail(q, SROCE_UR_PULL_MAX);
	u32 i, j;

	for (i = 0; i < n; i++) {
		const struct sroce_recv_uwqe *u = sroce_uring_slot(q, q->upull);
		struct sroce_recv_wqe *wqe = sroce_queue_slot(q, q->tail);
		u32 num = READ_ONCE(u->num_sge);

		wqe->wr_id = READ_ONCE(u->wr_id);
		wqe->bad = num > q->max_sge;
		wqe->num_sge = wqe->bad ? 0 : num;
		for (j = 0; j < wqe->num_sge; j++) {
			wqe->sge[j].addr = READ_ONCE(u->sge[j].addr);
			wqe->sge[j].length = READ_ONCE(u->sge[j].length);
			wqe->sge[j].lkey = READ_ONCE(u->sge[j].lkey);
		}
		q->upull++;
		q->tail++;
	}
	if (n)
		sroce_uring_publish(q);
	return n;
}

/**
 * sroce_rq_posted - receive WQEs a queue holds for the responder
 * @q: an RQ or SRQ, with @q->lock held
 *
 * Those taken in and, for a mapped queue, those the process published and
 * no look has taken yet (sroce_rq_pull() takes at most
 * SROCE_UR_PULL_MAX at a time), at most the queue's size.  What the SRQ
 * limit (IBA 10.2.9.3) compares with: the WQEs posted, not the last look.
 *
 * Return: the count.
 */
u32 sroce_rq_posted(struct sroce_queue *q)
{
	u32 n = q->tail - q->head;

	return q->ring ? n + sroce_uring_avail(q, q->size) : n;
}

/* An SQ entry that is no valid WR: it completes in error, nothing else. */
/*
 * A WQE filled here rather than by sroce_wqe_fill(): nothing of the
 * slot's last user is left.
 */
static void sroce_wqe_start(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			    u64 wr_id, enum ib_wr_opcode opcode,
			    u32 send_flags)
{
	memset(wqe, 0, struct_size(wqe, sge, qp->sq.max_sge));
	wqe->wr_id = wr_id;
	wqe->opcode = opcode;
	wqe->send_flags = send_flags;
	wqe->status = IB_WC_SUCCESS;
}

static void sroce_wqe_bad(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			  u64 wr_id)
{
	sroce_wqe_start(qp, wqe, wr_id, IB_WR_SEND, IB_SEND_SIGNALED);
	wqe->status = IB_WC_LOC_QP_OP_ERR;	/* malformed WQE, IBA 11.6.2 */
	wqe->state = SROCE_WQE_DONE;
}

/*
 * A bind of a memory window (mw.c): no struct ib_send_wr carries one, so
 * the WQE is filled here.  IBA 10.6.7.2: RC and UC QPs bind, UD QPs
 * cannot (their SQs are not mapped either).
 */
static int sroce_uwqe_bind(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			   const struct sroce_send_uwqe *u, u64 wr_id,
			   u32 send_flags)
{
	if (qp->ibqp.qp_type != IB_QPT_RC && qp->ibqp.qp_type != IB_QPT_UC)
		return -EINVAL;
	if (send_flags & IB_SEND_INLINE)
		return -EINVAL;
	sroce_wqe_start(qp, wqe, wr_id, IB_WR_BIND_MW, send_flags);
	wqe->ex = READ_ONCE(u->ex);
	wqe->rkey = READ_ONCE(u->rkey);
	wqe->remote_addr = READ_ONCE(u->bind.addr);
	wqe->compare_add = READ_ONCE(u->bind.length);
	wqe->reg_key = READ_ONCE(u->bind.mr_lkey);
	wqe->reg_access = READ_ONCE(u->bind.access);
	return 0;
}

/*
 * An RDMA Atomic Write (IBA A19.4): 8 bytes from the entry's swap field,
 * taken now as inline data is.  RC only (IBA 1.5 defines no UC one).
 */
static int sroce_uwqe_atomic_write(struct sroce_qp *qp,
				   struct sroce_send_wqe *wqe,
				   const struct sroce_send_uwqe *u, u64 wr_id,
				   u32 send_flags)
{
	if (qp->ibqp.qp_type != IB_QPT_RC || (send_flags & IB_SEND_INLINE))
		return -EINVAL;
	sroce_wqe_start(qp, wqe, wr_id, SROCE_WR_ATOMIC_WRITE, send_flags);
	wqe->remote_addr = READ_ONCE(u->remote_addr);
	wqe->rkey = READ_ONCE(u->rkey);
	wqe->swap = READ_ONCE(u->swap);
	wqe->length = sizeof(wqe->swap);
	return 0;
}

/*
 * Copy one SQ entry into the WR post_send would get, then fill the WQE
 * from it as post_send does.  Each field is read once: the checks and the
 * engine see the same values, whatever the process writes meanwhile.
 */
static int sroce_uwqe_take(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
			   const struct sroce_send_uwqe *u, u64 wr_id)
{
	union {
		struct ib_send_wr wr;
		struct ib_rdma_wr rdma;
		struct ib_atomic_wr atomic;
	} w = {};
	struct sroce_queue *q = &qp->sq;
	const u8 *inl = NULL;
	u32 i, inl_len = 0;

	w.wr.wr_id = wr_id;
	w.wr.opcode = READ_ONCE(u->opcode);
	w.wr.send_flags = READ_ONCE(u->send_flags) &
			  (IB_SEND_FENCE | IB_SEND_SIGNALED |
			   IB_SEND_SOLICITED | IB_SEND_INLINE);
	if (w.wr.opcode == SROCE_WR_ATOMIC_WRITE)
		return sroce_uwqe_atomic_write(qp, wqe, u, wr_id,
					       w.wr.send_flags);
	/* The uverbs opcodes a process may post (never IB_WR_REG_MR). */
	switch (w.wr.opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		w.rdma.remote_addr = READ_ONCE(u->remote_addr);
		w.rdma.rkey = READ_ONCE(u->rkey);
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		w.atomic.remote_addr = READ_ONCE(u->remote_addr);
		w.atomic.rkey = READ_ONCE(u->rkey);
		w.atomic.compare_add = READ_ONCE(u->compare_add);
		w.atomic.swap = READ_ONCE(u->swap);
		break;
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		break;
	case IB_WR_BIND_MW:
		return sroce_uwqe_bind(qp, wqe, u, wr_id, w.wr.send_flags);
	default:
		return -EINVAL;
	}
	/* One union member: the immediate or the rkey to invalidate. */
	w.wr.ex.invalidate_rkey = READ_ONCE(u->ex);
	if (w.wr.send_flags & IB_SEND_INLINE) {
		inl_len = READ_ONCE(u->inline_len);
		if (inl_len > qp->max_inline)
			return -EINVAL;
		/* The process's own bytes: a torn copy is its own loss. */
		inl = (const u8 *)u->sge;
	} else {
		w.wr.num_sge = READ_ONCE(u->num_sge);
		if (w.wr.num_sge > q->max_sge)
			return -EINVAL;
		for (i = 0; i < w.wr.num_sge; i++) {
			q->usge[i].addr = READ_ONCE(u->sge[i].addr);
			q->usge[i].length = READ_ONCE(u->sge[i].length);
			q->usge[i].lkey = READ_ONCE(u->sge[i].lkey);
		}
		w.wr.sg_list = q->usge;
	}
	if (!sroce_wr_ok(qp, &w.wr))
		return -EINVAL;
	return sroce_wqe_fill(qp, wqe, &w.wr, inl, inl_len);
}

/**
 * sroce_sq_pull - take the send WRs the process published
 * @qp: an RC or UC QP with a mapped SQ, with qp->sq.lock held, in RTS
 *      or SQD (where post_send queues)
 * @max: at most this many (positive)
 *
 * Return: the entries taken.
 */
u32 sroce_sq_pull(struct sroce_qp *qp, int max)
{
	struct sroce_queue *q = &qp->sq;
	u32 n = sroce_uring_avail(q, max);
	u32 i;

	lockdep_assert_held(&q->lock);
	for (i = 0; i < n; i++) {
		const struct sroce_send_uwqe *u = sroce_uring_slot(q, q->upull);
		struct sroce_send_wqe *wqe = sroce_sq_wqe(qp, q->tail);
		u64 wr_id = READ_ONCE(u->wr_id);

		if (sroce_uwqe_take(qp, wqe, u, wr_id))
			sroce_wqe_bad(qp, wqe, wr_id);
		q->upull++;
		/* The requester reads the slot after. */
		smp_store_release(&q->tail, q->tail + 1);
	}
	if (n) {
		/* The requester runs after this and sees the SQ busy. */
		WRITE_ONCE(q->ring->doorbell, 0);
		sroce_uring_publish(q);
	}
	return n;
}

/**
 * sroce_sq_take - the requester's look at a mapped SQ
 * @qp: the QP, with qp->lock held
 * @budget: what the requester has left (positive): at most this many
 *
 * Return: the entries taken.
 */
u32 sroce_sq_take(struct sroce_qp *qp, int budget)
{
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&qp->sq.lock, flags);
	n = sroce_sq_pull(qp, budget);
	spin_unlock_irqrestore(&qp->sq.lock, flags);
	return n;
}

/**
 * sroce_sq_idle - the requester ran dry: a doorbell restarts it
 * @qp: the QP, with qp->lock held, its requester at the end of the SQ
 *
 * A WR posted now must leave at once, not at the next ACK: the flag is
 * set, then the ring looked at once more (sroce-abi.h).  Posts made while
 * the requester runs, or while the window or an RNR wait holds it, need
 * no doorbell: it comes back and looks.
 *
 * Return: true if entries came in meanwhile (the requester runs again).
 */
bool sroce_sq_idle(struct sroce_qp *qp)
{
	struct sroce_queue *q = &qp->sq;
	unsigned long flags;
	bool more;

	spin_lock_irqsave(&q->lock, flags);
	WRITE_ONCE(q->ring->doorbell, 1);
	/* Against the provider's producer store, fence, doorbell load. */
	smp_mb();
	more = sroce_uring_avail(q, 1) != 0;
	if (more)
		WRITE_ONCE(q->ring->doorbell, 0);
	spin_unlock_irqrestore(&q->lock, flags);
	return more;
}

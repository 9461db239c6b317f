// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce completion layer: one ring per CQ, protected by its lock, shared by
 * any number of QPs (send and receive sides alike).  This is the shape the
 * NVMe-oF target uses: a CQ per core and many QPs completing into each.
 *
 * IBA rules implemented here:
 *  - 11.4.2.1 poll returns completions in the order they were added;
 *  - 11.4.2.2 req_notify: NEXT_COMP fires on the next completion,
 *    SOLICITED on the next solicited or error completion; one event per
 *    request, and IB_CQ_REPORT_MISSED_EVENTS reports a non-empty CQ;
 *  - 11.6.2 a CQ overrun is an affiliated asynchronous error
 *    (IB_EVENT_CQ_ERR); the overflowing completion is lost and the CQ
 *    stays in error (C11-37); a QP whose completion is lost goes to
 *    Error (C9-218, sroce_qp_complete()).
 *
 * A user CQ whose provider asks for it is mapped (sroce-abi.h): its ring
 * of struct ib_uverbs_wc lives in memory the process maps, and it polls
 * without system calls.  The kernel keeps its own producer index and
 * reads the process's consumer index only to see the ring full.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "sroce.h"

static u32 sroce_cq_count(const struct sroce_cq *cq)
{
	return (cq->tail + cq->size + 1 - cq->head) % (cq->size + 1);
}

/*
 * A mapped ring is full when the process has not taken @size completions;
 * its consumer index is read once and only compared: a value it made up
 * makes the ring look full (an overrun of its own CQ) or not, nothing else.
 */
static bool sroce_cq_full(const struct sroce_cq *cq)
{
	u32 cons;

	if (cq->ring) {
		/* Pairs with the provider's release store of consumer. */
		cons = smp_load_acquire(&cq->ring->consumer);
		return cq->uprod - cons >= cq->size;
	}
	return sroce_cq_count(cq) == cq->size;
}

static bool sroce_cq_empty(const struct sroce_cq *cq)
{
	if (cq->ring)
		return cq->uprod == READ_ONCE(cq->ring->consumer);
	return cq->head == cq->tail;
}

/* A completion in the layout of the uverbs poll command (uverbs_cmd.c). */
static void sroce_wc_to_user(struct ib_uverbs_wc *u, const struct ib_wc *wc)
{
	u->wr_id = wc->wr_id;
	u->status = wc->status;
	u->opcode = wc->opcode;
	u->vendor_err = wc->vendor_err;
	u->byte_len = wc->byte_len;
	u->ex.imm_data = wc->ex.imm_data;	/* or invalidate_rkey */
	u->qp_num = wc->qp->qp_num;
	u->src_qp = wc->src_qp;
	u->wc_flags = wc->wc_flags;
	u->pkey_index = wc->pkey_index;
	u->slid = ib_lid_cpu16(wc->slid);
	u->sl = wc->sl;
	u->dlid_path_bits = wc->dlid_path_bits;
	u->port_num = wc->port_num;
	u->reserved = 0;
}

/* Bytes of a mapped ring of @entries, with timestamps after them or not. */
static size_t sroce_cq_ring_size(u32 entries, bool ts)
{
	return struct_size((struct sroce_cq_ring *)NULL, cqe, entries) +
	       (ts ? array_size(entries, sizeof(u64)) : 0);
}

/* Where a ring's timestamps are: right after its completions. */
static u64 *sroce_cq_ring_ts(struct sroce_cq_ring *ring, u32 entries)
{
	return (u64 *)&ring->cqe[entries];
}

/* The ring of a mapped CQ, in memory the process maps at resp->mmap_offset. */
static int sroce_cq_map(struct sroce_cq *cq, struct ib_udata *udata,
			struct sroce_create_cq_resp *resp, bool ts)
{
	struct sroce_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	void *ring;

	ring = sroce_mmap_alloc(&uctx->ibuc, sroce_cq_ring_size(cq->size, ts),
				&cq->mmap, &resp->mmap_offset);
	if (IS_ERR(ring))
		return PTR_ERR(ring);
	cq->ring = ring;
	resp->flags |= SROCE_MAPPED;
	if (ts) {
		cq->ts = sroce_cq_ring_ts(ring, cq->size);
		resp->flags |= SROCE_CQ_TIMESTAMPS;
	}
	return 0;
}

int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_create_cq_resp resp = { .entries = attr->cqe };
	struct sroce_cq *cq = to_scq(ibcq);
	u32 map;
	int err;

	bool ts = attr->flags & IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;

	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > SROCE_MAX_CQE)
		return -EINVAL;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;
	err = sroce_map_cmd(udata, &map);
	if (err)
		return err;
	/* Only a mapped ring has room for timestamps (struct ib_wc has none). */
	if (ts && !(map & SROCE_MAPPED))
		return -EOPNOTSUPP;
	if (!sroce_charge(&sdev->nr_cq, SROCE_MAX_CQ))
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->ghosts);
	/*
	 * A mapped ring has a power of two of entries: its free-running u32
	 * indexes then name the same slots across their wrap (IBA allows a
	 * CQ larger than asked for; ibcq->cqe says how large, never more
	 * than the device's max_cqe, which a resize to it must take).
	 */
	cq->size = (map & SROCE_MAPPED) ?
		   roundup_pow_of_two(attr->cqe) : attr->cqe;
	ibcq->cqe = min_t(u32, cq->size, SROCE_MAX_CQE);
	resp.entries = cq->size;
	if (sroce_fail(SROCE_FAULT_CREATE)) {
		err = -ENOMEM;
		goto err_count;
	}
	if (map & SROCE_MAPPED) {
		err = sroce_cq_map(cq, udata, &resp, ts);
		if (err)
			goto err_count;
	} else {
		cq->queue = kvcalloc(attr->cqe + 1, sizeof(*cq->queue),
				     GFP_KERNEL_ACCOUNT);
		if (!cq->queue) {
			err = -ENOMEM;
			goto err_count;
		}
		cq->by_uverbs = !!udata;
	}

	if (udata) {
		err = ib_copy_to_udata(udata, &resp,
				       min(udata->outlen, sizeof(resp)));
		if (err)
			goto err_queue;
	}
	sroce_live_inc(SROCE_OBJ_CQ);
	return 0;

err_queue:
	if (cq->mmap)
		rdma_user_mmap_entry_remove(cq->mmap);
	kvfree(cq->queue);
err_count:
	sroce_uncharge(&sdev->nr_cq);
	return err;
}

int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibcq->device);
	struct sroce_cq *cq = to_scq(ibcq);

	struct sroce_ghost *g, *next;

	/*
	 * ib_core refuses while a QP or SRQ still uses the CQ (usecnt), and
	 * a QP's destroy waited for every completion it was producing.
	 */
	list_for_each_entry_safe(g, next, &cq->ghosts, list)
		kfree(g);
	/* The memory goes when the last mapping does (mmap.c). */
	if (cq->mmap)
		rdma_user_mmap_entry_remove(cq->mmap);
	kvfree(cq->queue);
	sroce_uncharge(&sdev->nr_cq);
	sroce_live_dec(SROCE_OBJ_CQ);
	return 0;
}

/*
 * A mapped CQ gets a new ring: the completions not yet consumed move to
 * its start, and the provider maps it (resp) and unmaps the old one, which
 * the kernel no longer writes.
 */
static int sroce_resize_mapped(struct sroce_cq *cq, u32 cqe,
			       struct ib_udata *udata)
{
	struct sroce_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct sroce_ucontext, ibuc);
	struct sroce_create_cq_resp resp = {
		.entries = roundup_pow_of_two(cqe), .flags = SROCE_MAPPED,
	};
	bool ts = cq->ts;
	u64 *new_ts = NULL;
	struct rdma_user_mmap_entry *entry, *old_entry;
	struct sroce_cq_ring *ring, *old;
	u32 n, i, cons;
	int err;

	/* The provider must learn where the new ring is, or lose the CQ. */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	cqe = resp.entries;	/* a power of two, as at create */
	ring = sroce_mmap_alloc(&uctx->ibuc, sroce_cq_ring_size(cqe, ts),
				&entry, &resp.mmap_offset);
	if (IS_ERR(ring))
		return PTR_ERR(ring);
	if (ts) {
		new_ts = sroce_cq_ring_ts(ring, cqe);
		resp.flags |= SROCE_CQ_TIMESTAMPS;
	}
	err = ib_copy_to_udata(udata, &resp, sizeof(resp));
	if (err)
		goto err_entry;

	spin_lock_irq(&cq->lock);
	old = cq->ring;
	cons = READ_ONCE(old->consumer);
	n = cq->uprod - cons;
	/* IBA 11.2.9: not below the fill; nor past a consumer made up. */
	if (n > cqe || n > cq->size) {
		spin_unlock_irq(&cq->lock);
		err = -EINVAL;
		goto err_entry;
	}
	for (i = 0; i < n; i++) {
		ring->cqe[i] = old->cqe[(cons + i) % cq->size];
		if (ts)
			new_ts[i] = cq->ts[(cons + i) % cq->size];
	}
	ring->producer = n;
	cq->ts = new_ts;
	old_entry = cq->mmap;
	cq->ring = ring;
	cq->mmap = entry;
	cq->uprod = n;
	cq->size = cqe;
	cq->ibcq.cqe = min_t(u32, cqe, SROCE_MAX_CQE);
	spin_unlock_irq(&cq->lock);
	rdma_user_mmap_entry_remove(old_entry);
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(entry);
	return err;
}

int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct ib_wc *queue, *old;
	u32 n, i;
	int err;

	if (cqe < 1 || cqe > SROCE_MAX_CQE)
		return -EINVAL;
	err = sroce_udata_none(udata);
	if (err)
		return err;
	if (cq->ring)
		return udata ? sroce_resize_mapped(cq, cqe, udata) : -EINVAL;
	queue = kvcalloc(cqe + 1, sizeof(*queue), GFP_KERNEL_ACCOUNT);
	if (!queue)
		return -ENOMEM;

	spin_lock_irq(&cq->lock);
	n = sroce_cq_count(cq);
	if (n > cqe) {
		/* IBA 11.2.9: resizing below the current fill is an error. */
		spin_unlock_irq(&cq->lock);
		kvfree(queue);
		return -EINVAL;
	}
	for (i = 0; i < n; i++)
		queue[i] = cq->queue[(cq->head + i) % (cq->size + 1)];
	old = cq->queue;
	cq->queue = queue;
	cq->size = cqe;
	cq->head = 0;
	cq->tail = n;
	ibcq->cqe = cqe;
	spin_unlock_irq(&cq->lock);
	kvfree(old);
	return 0;
}

static struct sroce_ghost *to_ghost(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_ghost, ibqp);
}

/*
 * The ghost @qp's completions point to in @cq, a CQ uverbs polls: the
 * send CQ's [0] or the receive CQ's [1] (the same when they are one CQ).
 */
static struct sroce_ghost *sroce_cq_ghost_of(struct sroce_cq *cq,
					     struct sroce_qp *qp)
{
	return qp->ghost[qp->ibqp.send_cq == &cq->ibcq ? 0 : 1];
}

/* Does the ring hold a completion of @ibqp?  With cq->lock held. */
static bool sroce_cq_has(struct sroce_cq *cq, struct ib_qp *ibqp)
{
	u32 i;

	for (i = cq->head; i != cq->tail; i = (i + 1) % (cq->size + 1))
		if (cq->queue[i].qp == ibqp)
			return true;
	return false;
}

/*
 * Remove @ibqp's completions from the ring, keeping the others in order;
 * with @keep_recv, its receive completions stay.  With cq->lock held.
 */
static void sroce_cq_drop(struct sroce_cq *cq, struct ib_qp *ibqp,
			  bool keep_recv)
{
	u32 i, n = cq->head;

	for (i = cq->head; i != cq->tail; i = (i + 1) % (cq->size + 1)) {
		const struct ib_wc *wc = &cq->queue[i];

		if (wc->qp == ibqp && !(keep_recv && (wc->opcode & IB_WC_RECV))) {
			if (cq->by_uverbs)
				to_ghost(wc->qp)->refs--;
			continue;
		}
		if (n != i)
			cq->queue[n] = *wc;
		n = (n + 1) % (cq->size + 1);
	}
	cq->tail = n;
}

/*
 * Ghosts a CQ keeps in its life, at most.  A ghost cannot be freed before
 * the CQ: a poller may still read the QP number through a completion it
 * took (uverbs does, after the poll, without the CQ's lock).  In a kernel
 * CQ, one ghost serves a later QP of the same number and type, which QP
 * numbers given out in turn make rare; past this many, the completions of
 * a destroyed QP are dropped instead.  A consumer that drains a QP before
 * destroying it (ib_drain_qp(), as the kernel's ULPs do) leaves none.  In
 * a CQ uverbs polls, every QP has one (sroce_cq_attach_qp()), reused once
 * nothing points to it: at most this many QPs share such a CQ.  A mapped
 * CQ needs no ghosts.
 */
#define SROCE_CQ_MAX_GHOSTS	1024

/*
 * A ghost for @ibqp in @cq, a CQ uverbs polls.  One that no QP and no
 * completion points to: of its number if there is one, else a new one,
 * else any, given the new number (a poller between its poll and its read
 * of the number may then read the new number: never freed memory).  Not
 * one a destroyed QP's completions still point to: a reset of the new QP
 * would remove those with its own (sroce_cq_clean()).
 * Return: the ghost, or NULL (SROCE_CQ_MAX_GHOSTS in use).
 */
static struct sroce_ghost *sroce_cq_ghost_attach(struct sroce_cq *cq,
						 struct ib_qp *ibqp)
{
	struct sroce_ghost *g, *same = NULL, *spare = NULL, *fresh;
	unsigned long flags;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	spin_lock_irqsave(&cq->lock, flags);
	list_for_each_entry(g, &cq->ghosts, list) {
		if (g->attached || g->refs)
			continue;
		if (g->ibqp.qp_num == ibqp->qp_num) {
			same = g;
			break;
		}
		if (!spare)
			spare = g;
	}
	g = same;
	if (!g && fresh && cq->nr_ghosts < SROCE_CQ_MAX_GHOSTS) {
		g = fresh;
		fresh = NULL;
		g->ibqp.device = ibqp->device;
		list_add(&g->list, &cq->ghosts);
		cq->nr_ghosts++;
	}
	if (!g)
		g = spare;
	if (g) {
		WRITE_ONCE(g->ibqp.qp_num, ibqp->qp_num);
		g->ibqp.qp_type = ibqp->qp_type;
		g->attached = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	kfree(fresh);
	return g;
}

static void sroce_cq_ghost_detach(struct sroce_cq *cq, struct sroce_ghost *g)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	g->attached = false;
	spin_unlock_irqrestore(&cq->lock, flags);
}

/**
 * sroce_cq_attach_qp - a new QP's ghosts in the CQs uverbs polls
 * @qp: the QP, its number set, not published yet
 *
 * uverbs reads a completion's QP number after the poll has returned it,
 * without the CQ's lock, where a destroy_qp in another thread may have
 * freed the QP in between.  In a CQ uverbs polls (not mapped), every
 * completion therefore points to the QP's ghost, which has its number
 * and lives as long as the CQ; sroce_cq_forget_qp() lets it go.
 *
 * Return: 0, or -ENOMEM (also with SROCE_CQ_MAX_GHOSTS QPs on the CQ, or
 * their completions, at once).
 */
int sroce_cq_attach_qp(struct sroce_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct sroce_cq *scq = ibqp->send_cq ? to_scq(ibqp->send_cq) : NULL;
	struct sroce_cq *rcq = ibqp->recv_cq ? to_scq(ibqp->recv_cq) : NULL;

	if (scq && scq->by_uverbs) {
		qp->ghost[0] = sroce_cq_ghost_attach(scq, ibqp);
		if (!qp->ghost[0])
			return -ENOMEM;
	}
	if (rcq == scq) {
		qp->ghost[1] = qp->ghost[0];
	} else if (rcq && rcq->by_uverbs) {
		qp->ghost[1] = sroce_cq_ghost_attach(rcq, ibqp);
		if (!qp->ghost[1]) {
			if (qp->ghost[0])
				sroce_cq_ghost_detach(scq, qp->ghost[0]);
			qp->ghost[0] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* The ghost for @ibqp's number and type, with cq->lock held, or NULL. */
static struct sroce_ghost *sroce_ghost_find(struct sroce_cq *cq,
					    struct ib_qp *ibqp)
{
	struct sroce_ghost *g;

	list_for_each_entry(g, &cq->ghosts, list)
		if (g->ibqp.qp_num == ibqp->qp_num &&
		    g->ibqp.qp_type == ibqp->qp_type)
			return g;
	return NULL;
}

/**
 * sroce_cq_forget_qp - keep a destroyed QP's completions safe to poll
 * @cq: a send or receive CQ of the QP
 * @qp: the QP, being destroyed: its engine is stopped, nothing adds to
 *      @cq for it any more
 *
 * The ring keeps struct ib_wc entries, and a CQ outlives the QPs that
 * share it: after destroy_qp, an entry's wc->qp would point to freed
 * memory, which uverbs reads (the QP number) when it polls.  Such entries
 * are pointed at a ghost QP owned by the CQ, with the same QP number and
 * type, freed with the CQ (SROCE_CQ_MAX_GHOSTS); without one, they are
 * dropped instead (the QP is gone: nobody waits for them).
 */
void sroce_cq_forget_qp(struct sroce_cq *cq, struct sroce_qp *qp)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct sroce_ghost *g, *fresh = NULL;
	unsigned long flags;
	bool room;
	u32 i, n;

	if (cq->ring)
		return;		/* its completions hold QP numbers only */
	if (cq->by_uverbs) {
		/* Its completions point to its ghost already. */
		g = sroce_cq_ghost_of(cq, qp);
		if (g)
			sroce_cq_ghost_detach(cq, g);
		return;
	}
	spin_lock_irqsave(&cq->lock, flags);
	n = sroce_cq_has(cq, ibqp);
	g = n ? sroce_ghost_find(cq, ibqp) : NULL;
	room = cq->nr_ghosts < SROCE_CQ_MAX_GHOSTS;
	spin_unlock_irqrestore(&cq->lock, flags);
	if (!n)
		return;
	if (!g && room) {
		fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
		if (fresh) {
			fresh->ibqp.device = ibqp->device;
			fresh->ibqp.qp_num = ibqp->qp_num;
			fresh->ibqp.qp_type = ibqp->qp_type;
		}
	}

	spin_lock_irqsave(&cq->lock, flags);
	/* Another destroy may have added one meanwhile. */
	if (!g)
		g = sroce_ghost_find(cq, ibqp);
	if (!g && fresh && cq->nr_ghosts < SROCE_CQ_MAX_GHOSTS) {
		g = fresh;
		fresh = NULL;
		list_add(&g->list, &cq->ghosts);
		cq->nr_ghosts++;
	}
	if (g) {
		for (i = cq->head; i != cq->tail; i = (i + 1) % (cq->size + 1))
			if (cq->queue[i].qp == ibqp)
				cq->queue[i].qp = &g->ibqp;
	} else {
		sroce_cq_drop(cq, ibqp, false);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	kfree(fresh);
}

/**
 * sroce_cq_clean - remove a QP's completions on its way to RESET
 * @cq: a send or receive CQ of the QP
 * @qp: the QP entering RESET, with qp->lock held: nothing adds to @cq for
 *	it any more (the post paths flush a WR under its queue's lock, which
 *	the reset took after setting the state)
 *
 * A reset QP starts a new connection, and the completions of the old one
 * not polled yet (the WRs flushed in the Error state) would be taken for
 * the new one's.  RoCE NICs remove them on the way to RESET (mlx4 and mlx5
 * do, in the kernel and in their providers), and rdma-core's tests count
 * on it; the provider of a mapped CQ does so in its ring.  A QP on an SRQ
 * keeps its receive completions: each holds an SRQ WQE the consumer gets
 * back no other way.
 */
void sroce_cq_clean(struct sroce_cq *cq, struct sroce_qp *qp)
{
	unsigned long flags;

	if (cq->ring)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	sroce_cq_drop(cq, cq->by_uverbs ? &sroce_cq_ghost_of(cq, qp)->ibqp :
		      &qp->ibqp, !!qp->ibqp.srq);
	spin_unlock_irqrestore(&cq->lock, flags);
}

/**
 * sroce_cq_complete - add one completion to a CQ
 * @cq: the CQ
 * @wc: the completion
 * @solicited: the completion is for a solicited message
 *
 * Safe from any context, also under the engine's locks: it calls no
 * handler.  What the consumer is to hear of (a notification request that
 * matches, an overrun) is noted on the CQ and delivered by
 * sroce_cq_deliver() once the caller dropped its locks.
 *
 * Return: 0, or -ENOSPC if the CQ overflowed and the completion was lost.
 */
int sroce_cq_complete(struct sroce_cq *cq, const struct ib_wc *wc,
		      bool solicited)
{
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->overflow || sroce_cq_full(cq)) {
		if (!cq->overflow)
			WRITE_ONCE(cq->err_due, true);
		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		return -ENOSPC;
	}
	if (cq->ring) {
		u32 slot = cq->uprod % cq->size;

		sroce_wc_to_user(&cq->ring->cqe[slot], wc);
		if (cq->ts)
			cq->ts[slot] = ktime_get_ns();
		cq->uprod++;
		/* The completion before the index that shows it. */
		smp_store_release(&cq->ring->producer, cq->uprod);
	} else {
		struct ib_wc *slot = &cq->queue[cq->tail];

		*slot = *wc;
		/* Not the QP itself, which may go before uverbs reads it. */
		if (cq->by_uverbs) {
			struct sroce_ghost *g =
				sroce_cq_ghost_of(cq, to_sqp(wc->qp));

			slot->qp = &g->ibqp;
			g->refs++;
		}
		cq->tail = (cq->tail + 1) % (cq->size + 1);
	}
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		WRITE_ONCE(cq->notify_due, true);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return 0;
}

/**
 * sroce_cq_deliver - call the consumer's handlers for what a CQ noted
 * @cq: the CQ; the caller holds none of our locks (a handler may poll,
 *	arm, post or modify a QP)
 *
 * Every path that adds completions calls it when it has let go of its
 * locks (sroce_qp_deliver_events()); a CQ many QPs share hears from
 * whichever gets there first, once per noted event.
 */
void sroce_cq_deliver(struct sroce_cq *cq)
{
	struct ib_cq *ibcq = &cq->ibcq;

	if (READ_ONCE(cq->err_due) && xchg(&cq->err_due, false)) {
		struct ib_event ev = {
			.device = ibcq->device,
			.element.cq = ibcq,
			.event = IB_EVENT_CQ_ERR,
		};

		ibdev_err_ratelimited(ibcq->device, "CQ overrun\n");
		if (ibcq->event_handler)
			ibcq->event_handler(&ev, ibcq->cq_context);
	}
	if (READ_ONCE(cq->notify_due) && xchg(&cq->notify_due, false) &&
	    ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->ring)
		return -EOPNOTSUPP;	/* the process polls its mapping */

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && cq->head != cq->tail) {
		wc[n] = cq->queue[cq->head];
		if (cq->by_uverbs)
			to_ghost(wc[n].qp)->refs--;
		n++;
		cq->head = (cq->head + 1) % (cq->size + 1);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct sroce_cq *cq = to_scq(ibcq);
	u32 type = flags & IB_CQ_SOLICITED_MASK;
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* A pending NEXT_COMP request is not narrowed by a SOLICITED one. */
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = type;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && !sroce_cq_empty(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce memory windows (IBA 10.6.7): type 1, bound by ibv_bind_mw(), and
 * type 2B, bound by a posted IB_WR_BIND_MW and tied to the QP that bound
 * it.  Both are bound by a WQE of the SQ, run by the requester at its
 * place in the SQ (the provider turns ibv_bind_mw() into one, as rdma_rxe's
 * does), so that a bind is ordered with the WRs around it.
 *
 * A window is a struct sroce_mr of kind SROCE_MR_MW in the MRs' index:
 * one rkey lookup finds an MR or a window, and the lifetime layer keeps a
 * window a responder still holds.  It carries the binding: rkey (key), the
 * range (iova, length), the remote rights (access), valid.  A bound
 * window holds a reference on its MR and counts in mr->nr_mw, which keeps
 * the MR from being deregistered or re-registered under it.
 *
 * Accesses through a window are checked in mem.c (sroce_mw_target()).
 */
#include "sroce.h"

#define SROCE_MW_ACCESS (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
			 IB_ACCESS_REMOTE_ATOMIC)
/*
 * Local write is a right of the MR, not of a window (IBA 10.6.7.2.2
 * lists remote rights only).  A bind that asks for it as well is not
 * refused: RoCE NICs and rdma_rxe take it and give the window its
 * remote rights, and rdma-core's own tests bind so.
 */
#define SROCE_MW_IGNORED IB_ACCESS_LOCAL_WRITE
/*
 * Type 2B windows are marked in the MRs' index, so that a QP's destroy
 * (sroce_mw_qp_gone()) walks only them, not every MR of the device.
 * XA_MARK_0 is the allocating xarray's own.
 */
#define SROCE_MW2_MARK XA_MARK_1

/**
 * sroce_alloc_mw - allocate a memory window (IBA 11.2.10.9)
 * @ibmw: allocated by ib_core; its type is 1 or 2 (ib_core checked)
 * @udata: user data (none is expected)
 *
 * A window starts unbound: its rkey allows nothing until a bind.
 *
 * Return: 0, or -ENOMEM at the device's max_mw.
 */
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mr *win;
	int err = sroce_udata_none(udata);

	if (err)
		return err;
	win = sroce_mr_alloc(sdev, 0, SROCE_MR_MW);
	if (IS_ERR(win))
		return PTR_ERR(win);
	win->ibmr.pd = ibmw->pd;
	win->mw_type = ibmw->type;
	win->ibmr.lkey = 0;	/* never an lkey (IBA 10.6.7.1) */
	ibmw->rkey = win->ibmr.rkey;
	to_smw(ibmw)->win = win;
	/* Marked while reserved: a bind finds it only once published. */
	if (win->mw_type == IB_MW_TYPE_2)
		xa_set_mark(&sdev->mr_pool.xa, win->elem.id, SROCE_MW2_MARK);
	sroce_mr_publish(sdev, win);
	return 0;
}

/* Give back the MR a window was bound to (after its lock is dropped). */
static void sroce_mw_release_mr(struct sroce_mr *mr)
{
	if (!mr)
		return;
	atomic_dec(&mr->nr_mw);
	sroce_mr_put(mr);
}

/*
 * The window, whose lock the caller holds, gives no access any more;
 * returns the MR it was bound to, for sroce_mw_release_mr() after the lock.
 */
static struct sroce_mr *sroce_mw_unbind_locked(struct sroce_mr *win)
{
	struct sroce_mr *mr = win->bound;

	win->valid = false;
	win->bound = NULL;
	return mr;
}

/**
 * sroce_dealloc_mw - deallocate a memory window (IBA 11.2.10.10)
 * @ibmw: the window
 *
 * A bound window is invalidated first: from the moment this returns no
 * access goes through it, also from a responder that still holds it (it
 * checks again under the window's lock), and its MR is free to go.
 *
 * Return: 0.
 */
int sroce_dealloc_mw(struct ib_mw *ibmw)
{
	struct sroce_dev *sdev = to_sdev(ibmw->device);
	struct sroce_mr *win = to_smw(ibmw)->win;
	struct sroce_mr *mr;
	unsigned long flags;

	spin_lock_irqsave(&win->lock, flags);
	WRITE_ONCE(win->dead, true);
	mr = sroce_mw_unbind_locked(win);
	spin_unlock_irqrestore(&win->lock, flags);
	sroce_mw_release_mr(mr);
	sroce_pool_unpublish(&sdev->mr_pool, &win->elem);
	sroce_uncharge(&sdev->nr_mw);
	return 0;
}

/*
 * The MR a bind names, checked and counted (IBA 10.6.7.2.2, C10-73,
 * C10-74): a user MR of the QP's PD with the MW Bind right, the range
 * inside it, local write when the window gives remote write or atomic.
 * Counted in nr_mw under the MR's lock, against sroce_dereg_mr().
 */
static struct sroce_mr *sroce_bind_mr(struct sroce_qp *qp, u32 lkey,
				      int access, u64 addr, u64 len)
{
	struct sroce_mr *mr = sroce_mr_get(to_sdev(qp->ibqp.device), lkey);
	unsigned long flags;
	bool ok;

	if (!mr)
		return NULL;
	if (mr->kind != SROCE_MR_USER) {
		sroce_mr_put(mr);
		return NULL;
	}
	/* The PD under the lock: an in-place rereg moves it under it too. */
	spin_lock_irqsave(&mr->lock, flags);
	ok = !mr->dead && !mr->replacing && mr->key == lkey &&
	     READ_ONCE(mr->ibmr.pd) == qp->ibqp.pd &&
	     (mr->access & IB_ACCESS_MW_BIND) &&
	     (!(access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) ||
	      (mr->access & IB_ACCESS_LOCAL_WRITE)) &&
	     addr >= mr->iova && addr + len >= addr &&
	     addr + len - mr->iova <= mr->length;
	if (ok)
		atomic_inc(&mr->nr_mw);
	spin_unlock_irqrestore(&mr->lock, flags);
	if (!ok) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

/**
 * sroce_bind_mw - run an IB_WR_BIND_MW WQE (IBA 10.6.7.2)
 * @qp: the QP whose SQ it is (RC or UC), with qp->lock held
 * @wqe: the WQE (sroce_send_wqe: which fields say what)
 *
 * The window must be of the QP's PD; the new rkey keeps the window's
 * index and sets the consumer's key byte (IBA 10.6.7.2.2).  A
 * type 1 window may be bound again while bound, and a bind of length 0
 * unbinds it; a type 2B window is bound only when free (invalidated) and
 * with a length, and only the QP that bound it may use it (o10-37.2.30,
 * o10-37.2.40).  Zero-based windows are not offered.
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR for any violation.
 */
enum ib_wc_status sroce_bind_mw(struct sroce_qp *qp,
				const struct sroce_send_wqe *wqe)
{
	struct sroce_mr *win, *mr = NULL, *old;
	struct sroce_pool_elem *elem;
	u64 addr = wqe->remote_addr, len = wqe->compare_add;
	int access = wqe->reg_access & ~SROCE_MW_IGNORED;
	unsigned long flags;
	bool ok;

	/*
	 * The window by its index: ibv_mw names it, and a consumer's copy
	 * of its rkey may be behind (a failed bind, a posted type 2 bind).
	 * Only a QP of its PD binds it.
	 */
	elem = sroce_pool_get(&to_sdev(qp->ibqp.device)->mr_pool,
			      wqe->ex >> 8);
	if (!elem)
		return IB_WC_MW_BIND_ERR;
	win = container_of(elem, struct sroce_mr, elem);
	if (win->kind != SROCE_MR_MW || win->ibmr.pd != qp->ibqp.pd ||
	    (wqe->rkey >> 8) != win->elem.id ||
	    (access & ~SROCE_MW_ACCESS) ||
	    (!len && win->mw_type == IB_MW_TYPE_2))
		goto err;
	if (len) {
		mr = sroce_bind_mr(qp, wqe->reg_key, access, addr, len);
		if (!mr)
			goto err;
	}
	spin_lock_irqsave(&win->lock, flags);
	ok = !win->dead && !(win->mw_type == IB_MW_TYPE_2 && win->valid);
	old = NULL;
	if (ok) {
		old = win->bound;
		win->bound = mr;
		win->bound_lkey = wqe->reg_key;
		win->access = access;
		win->iova = addr;
		win->length = len;
		win->mw_qpn = qp->ibqp.qp_num;
		win->valid = len != 0;
		if (win->mw_type == IB_MW_TYPE_2)
			WRITE_ONCE(qp->bound_mw2, true);
		/* Read without the lock by lookups (sroce_mr_get()). */
		WRITE_ONCE(win->key, wqe->rkey);
		win->ibmr.rkey = wqe->rkey;
	}
	spin_unlock_irqrestore(&win->lock, flags);
	sroce_mw_release_mr(ok ? old : mr);
	sroce_mr_put(win);
	return ok ? IB_WC_SUCCESS : IB_WC_MW_BIND_ERR;

err:
	sroce_mr_put(win);
	return IB_WC_MW_BIND_ERR;
}

/**
 * sroce_mw_invalidate - invalidate a type 2B window (IBA 10.6.7.2.5)
 * @qp: the QP of the LOCAL_INV, or that received the SEND_WITH_INV
 * @win: the window @key named, with a reference
 * @key: its rkey
 * @remote: a SEND_WITH_INV: only the QP the window is bound to may
 *
 * Type 1 windows are not invalidated by a WR (o10-37.2.26): they are
 * unbound by a bind of length 0.  Once this returns no access goes
 * through the window.  A window that is already free (a SEND_WITH_INV or
 * its QP's destroy came first) is invalidated again without error, as a
 * fast-register MR is (sroce_invalidate()): ULPs post a LOCAL_INV when
 * unsure whether the peer invalidated, and siw does the same for an STag.
 *
 * Return: IB_WC_SUCCESS or IB_WC_MW_BIND_ERR.
 */
enum ib_wc_status sroce_mw_invalidate(struct sroce_qp *qp,
				      struct sroce_mr *win, u32 key,
				      bool remote)
{
	struct sroce_mr *mr = NULL;
	unsigned long flags;
	bool ok;

	if (win->mw_type != IB_MW_TYPE_2 || win->ibmr.pd != qp->ibqp.pd)
		return IB_WC_MW_BIND_ERR;
	spin_lock_irqsave(&win->lock, flags);
	ok = !win->dead && win->key == key &&
	     (!remote || win->mw_qpn == qp->ibqp.qp_num);
	if (ok)
		mr = sroce_mw_unbind_locked(win);
	spin_unlock_irqrestore(&win->lock, flags);
	sroce_mw_release_mr(mr);
	return ok ? IB_WC_SUCCESS : IB_WC_MW_BIND_ERR;
}

/**
 * sroce_mw_qp_gone - invalidate the type 2B windows a destroyed QP bound
 * @qp: the QP, unpublished (no packet reaches it, no bind runs on it)
 *
 * Such a window is used only through the QP that bound it (o10-37.2.40),
 * which it knows by number.  A later QP gets that number again and must
 * not inherit the window: it goes with its QP, as by a LOCAL_INV (the
 * rkey is dead, the MR is let go, the window may be bound again).  Only
 * a QP that ever bound one walks the index, and only its type 2B
 * windows (SROCE_MW2_MARK).  QP numbers are handed out cyclically
 * (sroce_pool_add()), so the number is not given again while the walk
 * runs.  Called where destroy may sleep.
 */
void sroce_mw_qp_gone(struct sroce_qp *qp)
{
	struct sroce_pool *pool = &to_sdev(qp->ibqp.device)->mr_pool;
	struct sroce_pool_elem *entry;
	unsigned long id;

	if (!READ_ONCE(qp->bound_mw2))
		return;
	xa_for_each_marked(&pool->xa, id, entry, SROCE_MW2_MARK) {
		struct sroce_pool_elem *elem = sroce_pool_get(pool, id);
		struct sroce_mr *win, *mr = NULL;
		unsigned long flags;

		if (!elem)
			continue;
		win = container_of(elem, struct sroce_mr, elem);
		if (win->kind == SROCE_MR_MW && win->mw_type == IB_MW_TYPE_2) {
			spin_lock_irqsave(&win->lock, flags);
			if (win->valid && win->mw_qpn == qp->ibqp.qp_num)
				mr = sroce_mw_unbind_locked(win);
			spin_unlock_irqrestore(&win->lock, flags);
			sroce_mw_release_mr(mr);
		}
		sroce_mr_put(win);
		cond_resched();
	}
}

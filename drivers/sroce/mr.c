// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce memory regions.  Every MR is indexed by its key in the lifetime
 * layer: lkey == rkey == index << 8 | key byte (IBA 10.6.3.4: the low byte
 * is the consumer-owned "key" part that changes on re-registration).
 */
#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/iter.h>

#include "sroce.h"

static enum sroce_obj_type sroce_mr_obj(const struct sroce_mr *mr)
{
	return mr->kind == SROCE_MR_MW ? SROCE_OBJ_MW : SROCE_OBJ_MR;
}

/* The last reference is gone: free in process context (umem release sleeps). */
static void sroce_mr_free_work(struct work_struct *work)
{
	struct sroce_mr *mr = container_of(work, struct sroce_mr, free_work);

	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kvfree(mr->next_pages);
	sroce_live_dec(sroce_mr_obj(mr));
	kfree_rcu(mr, elem.rcu);	/* a lookup may still have loaded it */
}

/* The device limit an MR or a window counts against. */
static atomic_t *sroce_mr_count(struct sroce_dev *sdev, enum sroce_mr_kind kind)
{
	return kind == SROCE_MR_MW ? &sdev->nr_mw : &sdev->nr_mr;
}

static void sroce_mr_release(struct sroce_pool_elem *elem)
{
	struct sroce_mr *mr = container_of(elem, struct sroce_mr, elem);

	queue_work(sroce_free_wq, &mr->free_work);
}

/**
 * sroce_mr_alloc - a new MR (or window) with a reserved key index
 * @sdev: the device
 * @access: its IB_ACCESS_* rights
 * @kind: what it is
 *
 * MRs and windows share one index, so that an rkey finds either, and
 * count against their own limits (max_mr, max_mw).  sroce_mr_publish()
 * makes it reachable once it is complete, sroce_mr_abort() undoes this.
 *
 * Return: the MR, or ERR_PTR(-ENOMEM).
 */
struct sroce_mr *sroce_mr_alloc(struct sroce_dev *sdev, int access,
				enum sroce_mr_kind kind)
{
	atomic_t *count = sroce_mr_count(sdev, kind);
	struct sroce_mr *mr;
	int err;

	if (!sroce_charge(count, kind == SROCE_MR_MW ? SROCE_MAX_MW :
						      SROCE_MAX_MR))
		return ERR_PTR(-ENOMEM);
	mr = sroce_fail(SROCE_FAULT_CREATE) ? NULL :
	     kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		sroce_uncharge(count);
		return ERR_PTR(-ENOMEM);
	}
	err = sroce_pool_add(&sdev->mr_pool, &mr->elem);
	if (err) {
		sroce_uncharge(count);
		kfree(mr);
		return ERR_PTR(err);
	}
	spin_lock_init(&mr->lock);
	INIT_WORK(&mr->free_work, sroce_mr_free_work);
	mr->elem.release = sroce_mr_release;
	mr->access = access;
	mr->kind = kind;
	/*
	 * A random key byte per registration: a stale key that names a reused
	 * index matches once in 256, and no count of registrations brings it
	 * back (IBA 10.6.3.4; rdma_rxe's is random too).
	 */
	mr->key = mr->elem.id << 8 | get_random_u8();
	mr->ibmr.lkey = mr->key;
	mr->ibmr.rkey = mr->key;
	sroce_live_inc(sroce_mr_obj(mr));
	return mr;
}

/* The MR is complete: lookups by key may find it from now on. */
void sroce_mr_publish(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	sroce_pool_publish(&sdev->mr_pool, &mr->elem);
}

/* An MR that was never published: nobody else can hold it. */
void sroce_mr_abort(struct sroce_dev *sdev, struct sroce_mr *mr)
{
	sroce_pool_abort(&sdev->mr_pool, &mr->elem);
	sroce_uncharge(sroce_mr_count(sdev, mr->kind));
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kvfree(mr->next_pages);
	sroce_live_dec(sroce_mr_obj(mr));
	kfree(mr);
}

/* The DMA MR covers all kernel memory: ib_core's virtual DMA gives us
 * kernel virtual addresses (ib_uses_virt_dma()).
 */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct sroce_mr *mr = sroce_mr_alloc(to_sdev(ibpd->device), access,
						 SROCE_MR_DMA);

	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->ibmr.length = U64_MAX;
	mr->length = U64_MAX;
	sroce_mr_publish(to_sdev(ibpd->device), mr);
	return &mr->ibmr;
}

/*
 * The kernel address of every page of a user MR: ib_core's virtual DMA
 * maps user pages to their kernel (direct map) addresses.
 */
static int sroce_mr_umem_pages(struct sroce_mr *mr, struct ib_umem *umem,
			       u64 start)
{
	struct ib_block_iter biter;
	size_t n = ib_umem_num_dma_blocks(umem, PAGE_SIZE);
	u32 i = 0;

	/* SROCE_MAX_MR_SIZE, plus the page an unaligned start adds. */
	if (n > SROCE_MAX_MR_PAGES + 1)
		return -EINVAL;
	mr->pages = kvcalloc(n, sizeof(*mr->pages), GFP_KERNEL_ACCOUNT);
	if (!mr->pages)
		return -ENOMEM;
	rdma_umem_for_each_dma_block(umem, &biter, PAGE_SIZE)
		mr->pages[i++] = rdma_block_iter_dma_address(&biter);
	mr->npages = i;
	mr->max_pages = n;
	mr->page_shift = PAGE_SHIFT;
	mr->page_offset = start & ~PAGE_MASK;
	return 0;
}

#define SROCE_MR_ACCESS (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC | \
			 IB_ACCESS_MW_BIND)

/*
 * The rights a user MR may have, without the optional flags (relaxed
 * ordering) that may be ignored (IB_ACCESS_OPTIONAL), and without
 * IB_ACCESS_HUGETLB, a hint for on-demand paging only (rdma_rxe, siw and
 * mlx5 ignore it on pinned memory).  IBA 10.6.3.1: remote write and
 * remote atomic access need local write.
 */
static int sroce_mr_access_ok(int *access)
{
	*access &= ~(IB_ACCESS_OPTIONAL | IB_ACCESS_HUGETLB);
	if (*access & ~SROCE_MR_ACCESS)
		return -EOPNOTSUPP;
	if ((*access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(*access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/**
 * sroce_reg_user_mr - register user memory
 * @ibpd: the PD
 * @start: user virtual address of the memory
 * @length: its length
 * @iova: the address the MR's users name it by
 * @access: IB_ACCESS_* flags
 * @udata: user data (none is expected)
 *
 * IBA 10.6.3.1: remote write and remote atomic access need local write.
 *
 * Return: the MR, or ERR_PTR(-EINVAL / -EOPNOTSUPP / -ENOMEM / -EFAULT).
 */
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata)
{
	struct ib_umem *umem;
	struct sroce_mr *mr;
	int err;

	err = sroce_udata_none(udata);
	if (err)
		return ERR_PTR(err);
	err = sroce_mr_access_ok(&access);
	if (err)
		return ERR_PTR(err);
	if (!length || length > SROCE_MAX_MR_SIZE)
		return ERR_PTR(-EINVAL);
	/*
	 * No region wraps past 2^64.  And @iova has the page offset of
	 * @start (uverbs checks that too): an 8-byte aligned address of the
	 * MR is then one in its page, and an atomic never spans two pages.
	 */
	if (iova > U64_MAX - (length - 1) || (start ^ iova) & ~PAGE_MASK)
		return ERR_PTR(-EINVAL);

	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	mr = sroce_mr_alloc(to_sdev(ibpd->device), access, SROCE_MR_USER);
	if (IS_ERR(mr)) {
		ib_umem_release(umem);
		return ERR_CAST(mr);
	}
	mr->umem = umem;
	err = sroce_mr_umem_pages(mr, umem, start);
	if (err) {
		sroce_mr_abort(to_sdev(ibpd->device), mr);
		return ERR_PTR(err);
	}
	mr->ibmr.iova = iova;
	mr->ibmr.length = length;
	mr->iova = iova;
	mr->length = length;
	sroce_mr_publish(to_sdev(ibpd->device), mr);
	return &mr->ibmr;
}

/**
 * sroce_rereg_user_mr - change a user MR's translation, access or PD
 * @ibmr: the MR
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_ACCESS, IB_MR_REREG_PD
 * @start: with IB_MR_REREG_TRANS: the new user address
 * @length: with IB_MR_REREG_TRANS: the new length
 * @iova: with IB_MR_REREG_TRANS: the new address its users name it by
 * @access: with IB_MR_REREG_ACCESS: the new IB_ACCESS_* flags
 * @ibpd: the PD of the MR from now on (its own without IB_MR_REREG_PD)
 * @udata: user data (none is expected)
 *
 * IBA 11.2.8, Reregister Memory Region: what is not changed is kept.
 *
 * New access rights or a new PD over the same pages change the MR in
 * place: every access checks the rights again under mr->lock (mem.c), and
 * ib_core moves the MR to the new PD itself when we return NULL.  Rights
 * to write pages that were pinned without them are the exception: those
 * pages may be shared copy-on-write (the zero page of untouched memory),
 * so they are pinned again for writing, like a new translation.
 *
 * A new translation (or that exception) gives a new MR with new keys
 * (IBA 10.6.3.4), which ib_core puts in the old one's place; it then
 * deregisters the old one, whose keys stop working for new accesses at
 * once, while WRs and packets in flight that hold it finish on their own
 * reference: nothing that holds an MR ever sees its translation change.
 * If the new registration fails, the old MR is left as it was.
 *
 * Return: NULL (changed in place), the new MR, or ERR_PTR().
 */
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	unsigned long irqflags;
	struct ib_mr *new;
	bool bound;
	int err;

	err = sroce_udata_none(udata);
	if (err)
		return ERR_PTR(err);
	/* Only memory registered from user space can be registered again. */
	if (mr->kind != SROCE_MR_USER)
		return ERR_PTR(-EINVAL);
	/* IBA 10.6.7.2.6: not while windows are bound to it. */
	if (atomic_read(&mr->nr_mw))
		return ERR_PTR(-EBUSY);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	err = sroce_mr_access_ok(&access);
	if (err)
		return ERR_PTR(err);
	if (!(flags & IB_MR_REREG_TRANS) &&
	    (mr->umem->writable || !(access & IB_ACCESS_LOCAL_WRITE))) {
		/*
		 * A bind counts itself under this lock (mw.c), from the
		 * mapped SQ without any uverbs lock: the check above may be
		 * stale.
		 */
		spin_lock_irqsave(&mr->lock, irqflags);
		bound = atomic_read(&mr->nr_mw);
		if (!bound) {
			mr->access = access;
			/*
			 * ib_core sets the new PD once we return; set here,
			 * under the lock a bind checks the PD under, no bind
			 * can pair the old PD with the MR moved to the new.
			 */
			if (flags & IB_MR_REREG_PD)
				WRITE_ONCE(ibmr->pd, ibpd);
		}
		spin_unlock_irqrestore(&mr->lock, irqflags);
		return bound ? ERR_PTR(-EBUSY) : NULL;
	}
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		length = mr->length;
		iova = mr->iova;
	}
	/*
	 * The new MR takes this one's place and ib_core deregisters this
	 * one; a bind from the mapped SQ between our check and that dereg
	 * would make it fail (-EBUSY), and ib_core would keep the old MR
	 * until the context closes.  Closed to binds first, under the lock
	 * binds count themselves under; opened again if this fails.
	 */
	spin_lock_irqsave(&mr->lock, irqflags);
	bound = atomic_read(&mr->nr_mw);
	if (!bound)
		mr->replacing = true;
	spin_unlock_irqrestore(&mr->lock, irqflags);
	if (bound)
		return ERR_PTR(-EBUSY);
	new = sroce_reg_user_mr(ibpd, start, length, iova, access, udata);
	if (IS_ERR(new)) {
		spin_lock_irqsave(&mr->lock, irqflags);
		mr->replacing = false;
		spin_unlock_irqrestore(&mr->lock, irqflags);
	}
	return new;
}

/**
 * sroce_alloc_mr - allocate a fast-register MR (FRWR)
 * @ibpd: the PD
 * @type: only IB_MR_TYPE_MEM_REG
 * @max_num_sg: pages the MR can map, at most SROCE_MAX_FRMR_PAGES
 *
 * The MR starts invalid; IB_WR_REG_MR gives it the page list map_mr_sg()
 * made.  Two lists: the one in use, and the next (struct sroce_mr).
 *
 * Return: the MR or ERR_PTR(-EINVAL / -EOPNOTSUPP / -ENOMEM).
 */
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg)
{
	struct sroce_mr *mr;
	u64 *pages, *next;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > SROCE_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	pages = kvcalloc(max_num_sg, sizeof(*pages), GFP_KERNEL_ACCOUNT);
	next = kvcalloc(max_num_sg, sizeof(*next), GFP_KERNEL_ACCOUNT);
	if (!pages || !next) {
		kvfree(pages);
		kvfree(next);
		return ERR_PTR(-ENOMEM);
	}
	mr = sroce_mr_alloc(to_sdev(ibpd->device), 0, SROCE_MR_FRWR);
	if (IS_ERR(mr)) {
		kvfree(pages);
		kvfree(next);
		return ERR_CAST(mr);
	}
	mr->pages = pages;
	mr->next_pages = next;
	mr->max_pages = max_num_sg;
	sroce_mr_publish(to_sdev(ibpd->device), mr);
	return &mr->ibmr;
}

static int sroce_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct sroce_mr *mr = to_smr(ibmr);

	if (mr->next_npages == mr->max_pages)
		return -ENOMEM;
	mr->next_pages[mr->next_npages++] = addr;
	return 0;
}

/**
 * sroce_map_mr_sg - make the next page list of a fast-register MR
 * @ibmr: the MR
 * @sg: the scatterlist
 * @sg_nents: its entries
 * @sg_offset: offset into the first entry
 *
 * Into the next list, which the IB_WR_REG_MR posted after this takes up
 * (sroce_mr_fast_reg()): a ULP may remap an MR whose key it has not yet
 * invalidated (iSER posts the LOCAL_INV after), and a peer holding that
 * key must reach the old pages until then, never the new ones.  Under
 * mr->lock, against a REG_MR taking the list up.
 *
 * Return: the number of scatterlist entries mapped.
 */
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset)
{
	struct sroce_mr *mr = to_smr(ibmr);
	unsigned long flags;
	int n;

	/*
	 * A kernel caller's misuse: only FRWR MRs have a next list, and
	 * ib_core takes any page size it is given, which the page walk
	 * (ib_sg_to_pages(), sroce_mr_addr()) needs to be a power of two.
	 * ib_core leaves a size refused here in ibmr: the page shift goes
	 * with the list it was mapped with, to the REG_MR that takes it.
	 */
	if (mr->kind != SROCE_MR_FRWR || !is_power_of_2(ibmr->page_size))
		return -EINVAL;
	spin_lock_irqsave(&mr->lock, flags);
	mr->next_npages = 0;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, sroce_set_page);
	mr->next_page_shift = ilog2(ibmr->page_size);
	mr->next_page_offset = ibmr->iova & (ibmr->page_size - 1);
	mr->next_staged = true;
	spin_unlock_irqrestore(&mr->lock, flags);
	return n;
}

/**
 * sroce_dereg_mr - deregister an MR
 * @ibmr: the MR
 * @udata: user data (unused)
 *
 * Never waits for the MR's holders: a WR stuck in the SQ (endless RNR
 * retries) or a peer that started an RDMA WRITE and fell silent may hold
 * it for ever.  Marked dead under its lock, the MR allows no access from
 * the moment this returns; it is unpublished, and the last holder frees
 * it (user pages stay pinned until then, so nothing touches freed
 * memory).
 *
 * An MR with windows bound to it is not deregistered (IBA 10.6.7.2.6, as
 * rdma_rxe): the windows must be invalidated, unbound or deallocated
 * first.  At process exit ib_core tries again once they are gone.
 *
 * Return: 0, or -EBUSY while windows are bound to the MR.
 */
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct sroce_mr *mr = to_smr(ibmr);
	struct sroce_dev *sdev = to_sdev(ibmr->device);
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	/* A bind counts itself under this lock (mw.c): one of us sees it. */
	if (atomic_read(&mr->nr_mw)) {
		spin_unlock_irqrestore(&mr->lock, flags);
		return -EBUSY;
	}
	WRITE_ONCE(mr->dead, true);
	mr->valid = false;
	spin_unlock_irqrestore(&mr->lock, flags);
	sroce_pool_unpublish(&sdev->mr_pool, &mr->elem);
	sroce_uncharge(&sdev->nr_mr);
	return 0;
}

/**
 * sroce_mr_fast_reg - an IB_WR_REG_MR of the SQ (IBA 10.6.3.6)
 * @qp: the QP, with qp->lock held
 * @wqe: the WQE; it holds a reference on the MR
 *
 * Return: the completion status.
 */
enum ib_wc_status sroce_mr_fast_reg(struct sroce_qp *qp,
				    const struct sroce_send_wqe *wqe)
{
	struct sroce_mr *mr = wqe->reg_mr;
	unsigned long flags;

	/* IBA 10.6.3.6: only a free MR of our PD, keeping its index. */
	if (mr->kind != SROCE_MR_FRWR || mr->ibmr.pd != qp->ibqp.pd ||
	    (wqe->reg_key & ~0xffU) != (mr->key & ~0xffU))
		return IB_WC_MW_BIND_ERR;
	if ((wqe->reg_access & (IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(wqe->reg_access & IB_ACCESS_LOCAL_WRITE))
		return IB_WC_MW_BIND_ERR;
	/*
	 * Zero-based addressing and on-demand paging are not offered:
	 * refused, rather than registered as something else (VA-based).
	 */
	if (wqe->reg_access & (IB_ZERO_BASED | IB_ACCESS_ON_DEMAND))
		return IB_WC_MW_BIND_ERR;
	/* Against every access of the MR, which checks under this lock. */
	spin_lock_irqsave(&mr->lock, flags);
	/*
	 * A valid MR is not free: it must be invalidated first, as rdma_rxe
	 * also requires; re-keying it here would let a peer holding the old
	 * rkey race the new mapping.
	 */
	if (mr->dead || mr->valid) {
		spin_unlock_irqrestore(&mr->lock, flags);
		return IB_WC_MW_BIND_ERR;
	}
	/*
	 * The page list map_mr_sg() made since the last REG_MR, if any
	 * (without one, the MR registers again what it mapped), and the
	 * range as the ULP left it in ibmr.
	 */
	if (mr->next_staged) {
		swap(mr->pages, mr->next_pages);
		mr->npages = mr->next_npages;
		mr->page_shift = mr->next_page_shift;
		mr->page_offset = mr->next_page_offset;
		mr->next_staged = false;
	}
	mr->iova = mr->ibmr.iova;
	mr->length = mr->ibmr.length;
	mr->access = wqe->reg_access;
	/* Read without the lock by lookups (sroce_mr_get()). */
	WRITE_ONCE(mr->key, wqe->reg_key);
	mr->ibmr.lkey = wqe->reg_key;
	mr->ibmr.rkey = wqe->reg_key;
	mr->valid = true;
	spin_unlock_irqrestore(&mr->lock, flags);
	return IB_WC_SUCCESS;
}

/**
 * sroce_invalidate - invalidate by key (IBA 10.6.3.5, 10.6.7.2.5)
 * @qp: the QP (its PD must own the MR or window)
 * @key: the rkey or lkey
 * @remote: a SEND_WITH_INV, not a LOCAL_INV
 *
 * A fast-register MR, or a type 2B window (sroce_mw_invalidate()).
 *
 * Return: IB_WC_SUCCESS, or IB_WC_MW_BIND_ERR for a key that names no
 * such MR or window of the QP's PD.
 */
enum ib_wc_status sroce_invalidate(struct sroce_qp *qp, u32 key, bool remote)
{
	struct sroce_mr *mr = sroce_mr_get(to_sdev(qp->ibqp.device), key);
	enum ib_wc_status status = IB_WC_SUCCESS;
	unsigned long flags;

	if (!mr)
		return IB_WC_MW_BIND_ERR;
	if (mr->kind == SROCE_MR_MW) {
		status = sroce_mw_invalidate(qp, mr, key, remote);
	} else if (mr->kind != SROCE_MR_FRWR || mr->ibmr.pd != qp->ibqp.pd) {
		status = IB_WC_MW_BIND_ERR;
	} else {
		/*
		 * Under the lock every access takes: once this returns, no
		 * packet reads or writes the MR's pages (the ULP may free
		 * them when it sees the invalidation complete).
		 */
		spin_lock_irqsave(&mr->lock, flags);
		/* The key again, under the lock: a REG_MR may have changed it. */
		if (mr->key == key)
			mr->valid = false;
		else
			status = IB_WC_MW_BIND_ERR;
		spin_unlock_irqrestore(&mr->lock, flags);
	}
	sroce_mr_put(mr);
	return status;
}

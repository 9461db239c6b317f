// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce lifetime layer: objects that the data path finds by number (QPs by
 * QPN, MRs by key) are kref-counted and indexed in an xarray.
 *
 * Rules, for every indexed object:
 *  - create: sroce_pool_add() reserves an id (lookups cannot find it yet),
 *    the object is built completely, then sroce_pool_publish() makes it
 *    visible with one reference, the owner's (sroce_pool_abort() gives
 *    the id back on an error path);
 *  - lookup: sroce_pool_get() under RCU, kref_get_unless_zero(), so a
 *    lookup racing with destroy either gets a live object or nothing;
 *  - use: whoever holds a pointer beyond an RCU section holds a reference
 *    (a packet in flight holds its QP, a WR in flight holds its MRs);
 *  - destroy: sroce_pool_remove() unpublishes (no new lookups), drops the
 *    owner's reference and waits until the last holder has put its own.
 *    Only then is the memory given back.  That wait is bounded only where
 *    every holder is transient (a packet being processed holds its QP);
 *    objects that long-lived state may hold (an MR named by a queued WR or
 *    by the responder's message in progress) are instead made unusable by
 *    their destroy and freed by the last put: sroce_pool_unpublish() and
 *    the element's @release.  A reader may still have loaded
 *    the element just before it was unpublished: elements are freed with
 *    kfree_rcu, the object's own (MRs) or, for objects ib_core frees with
 *    a plain kfree (QPs), a separate one (struct sroce_pool_elem).
 *
 * Lock order: the xarray lock is a leaf; nothing is taken under it.
 */
#include "sroce.h"

/* How long a destroy waits for the last user before it says so. */
#define SROCE_POOL_WAIT_WARN	(10 * HZ)

void sroce_pool_init(struct sroce_pool *pool, u32 min, u32 max, u32 count)
{
	xa_init_flags(&pool->xa, XA_FLAGS_ALLOC);
	pool->limit = XA_LIMIT(min, max);
	pool->next = min;
	atomic_set(&pool->count, 0);
	pool->max = count;
}

void sroce_pool_destroy(struct sroce_pool *pool)
{
	WARN_ON(!xa_empty(&pool->xa));
	xa_destroy(&pool->xa);
}

static int sroce_pool_reserve(struct sroce_pool *pool,
			      struct sroce_pool_elem *elem)
{
	if (!sroce_charge(&pool->count, pool->max))
		return -ENOMEM;
	kref_init(&elem->ref);
	init_completion(&elem->done);
	return 0;
}

/**
 * sroce_pool_add - reserve a fresh id for an object being built
 * @pool: the index
 * @elem: the object's lifetime element; @elem->id is set
 *
 * The id is reserved, not yet published: lookups find nothing there until
 * sroce_pool_publish().  Ids are allocated cyclically so that a stale
 * number (a late packet for a destroyed QP) does not reach a new object at
 * once.
 *
 * Return: 0, or -ENOMEM when the pool is at its device limit or full.
 */
int sroce_pool_add(struct sroce_pool *pool, struct sroce_pool_elem *elem)
{
	int err;

	if (sroce_fail(SROCE_FAULT_CREATE))
		return -ENOMEM;
	err = sroce_pool_reserve(pool, elem);
	if (err)
		return err;
	err = xa_alloc_cyclic(&pool->xa, &elem->id, NULL, pool->limit,
			      &pool->next, GFP_KERNEL);
	if (err < 0) {
		sroce_uncharge(&pool->count);
		return err == -EBUSY ? -ENOMEM : err;
	}
	return 0;
}

/**
 * sroce_pool_add_id - reserve a fixed id (QP1) for an object being built
 * @pool: the index
 * @elem: the object's lifetime element
 * @id: the id, outside the pool's allocation range
 *
 * Return: 0, -EBUSY if @id is taken, or -ENOMEM.
 */
int sroce_pool_add_id(struct sroce_pool *pool, struct sroce_pool_elem *elem,
		      u32 id)
{
	int err;

	if (sroce_fail(SROCE_FAULT_CREATE))
		return -ENOMEM;
	err = sroce_pool_reserve(pool, elem);
	if (err)
		return err;
	elem->id = id;
	err = xa_insert(&pool->xa, id, NULL, GFP_KERNEL);
	if (err)
		sroce_uncharge(&pool->count);
	return err;
}

/**
 * sroce_pool_publish - make a fully built object visible to lookups
 * @pool: the index
 * @elem: the element whose id sroce_pool_add() reserved
 *
 * The store has release semantics (rcu_assign_pointer): a lookup that
 * finds the object sees every field written before this call.  The id is
 * reserved, so the store allocates nothing and cannot fail.
 */
void sroce_pool_publish(struct sroce_pool *pool, struct sroce_pool_elem *elem)
{
	WARN_ON(xa_is_err(xa_store(&pool->xa, elem->id, elem, GFP_KERNEL)));
}

/**
 * sroce_pool_abort - give back an id reserved for an object never published
 * @pool: the index
 * @elem: the element
 */
void sroce_pool_abort(struct sroce_pool *pool, struct sroce_pool_elem *elem)
{
	xa_erase(&pool->xa, elem->id);
	sroce_uncharge(&pool->count);
}

/**
 * sroce_pool_get - look an object up and take a reference
 * @pool: the index
 * @id: its id
 *
 * Return: the object's element with a reference the caller must put, or
 * NULL.  Typed wrappers (sroce_qp_get()) turn it into the object.
 */
struct sroce_pool_elem *sroce_pool_get(struct sroce_pool *pool, u32 id)
{
	struct sroce_pool_elem *elem;

	rcu_read_lock();
	elem = xa_load(&pool->xa, id);
	if (elem && !kref_get_unless_zero(&elem->ref))
		elem = NULL;
	rcu_read_unlock();
	return elem;
}

static void sroce_pool_elem_release(struct kref *ref)
{
	struct sroce_pool_elem *elem =
		container_of(ref, struct sroce_pool_elem, ref);

	if (elem->release)
		elem->release(elem);
	else
		complete(&elem->done);
}

void sroce_pool_elem_put(struct sroce_pool_elem *elem)
{
	kref_put(&elem->ref, sroce_pool_elem_release);
}

/**
 * sroce_pool_remove - unpublish an object and wait for its last user
 * @pool: the index
 * @elem: the object's lifetime element
 * @ibdev: the device, for the log
 *
 * Sleeps until every reference taken through sroce_pool_get() is put.  The
 * object is then the caller's; its element may still be read by a lookup
 * that loaded it before the erase, and must be freed with kfree_rcu.
 *
 * The holders are transient (a packet below the driver, a receive in
 * softirq), but a packet may sit long in a qdisc an operator set up (a
 * plug qdisc, a slow tbf) or in a stalled transmit ring: the wait goes
 * on, since the object must outlive them.  After SROCE_POOL_WAIT_WARN it
 * says so, naming the device and the object, and waits on untimed, where
 * the hung-task detector reports a wait that never ends, with its stack.
 */
void sroce_pool_remove(struct sroce_pool *pool, struct sroce_pool_elem *elem,
		       struct ib_device *ibdev)
{
	xa_erase(&pool->xa, elem->id);
	sroce_uncharge(&pool->count);
	sroce_pool_elem_put(elem);
	if (wait_for_completion_timeout(&elem->done, SROCE_POOL_WAIT_WARN))
		return;
	ibdev_warn_ratelimited(ibdev, "the destroy of object %u waits for its last user\n",
			       elem->id);
	wait_for_completion(&elem->done);
}

/**
 * sroce_pool_unpublish - unpublish an object and drop the owner's reference
 * @pool: the index
 * @elem: the element; its @release frees the object at the last put
 *
 * Does not wait: the caller has already made the object unusable to the
 * holders that remain (they check it on every use), and the last of them
 * frees it.  @release must free with kfree_rcu (a lookup may still have
 * loaded the pointer).
 */
void sroce_pool_unpublish(struct sroce_pool *pool,
			  struct sroce_pool_elem *elem)
{
	xa_erase(&pool->xa, elem->id);
	sroce_uncharge(&pool->count);
	sroce_pool_elem_put(elem);
}

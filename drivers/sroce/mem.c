// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce memory access: the checks of IBA 10.6 (keys, PD, access rights,
 * bounds) and copies between packets and registered memory.
 *
 * Registered memory is reached through kernel addresses: a DMA MR names
 * them directly (ib_core's virtual DMA, ib_uses_virt_dma()), user and
 * fast-register MRs keep one address per page.
 */
#include <linux/jump_label.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <asm/unaligned.h>

#include "sroce.h"

/*
 * Copies between packets and registered memory: every payload byte is
 * copied once on each side of a packet.  memcpy() is the kernel's best on
 * a real CPU (one REP MOVSB where the CPU has ERMS).  QEMU's TCG runs REP
 * MOVSB one byte per iteration, each a pass through its translated code
 * (3.2 us a KiB from user space in the benchmark's guests, against 0.7
 * for a loop of 8-byte moves; performance.rst).  So, as for the ICRC
 * (sroce_crc_choose()), both are timed at load and the faster is kept
 * (sroce_copy_choose()).
 */
static DEFINE_STATIC_KEY_FALSE(sroce_copy_by_words);

static void sroce_copy_words(void *dst, const void *src, size_t n)
{
	while (n >= 32) {
		u64 a = get_unaligned((const u64 *)src);
		u64 b = get_unaligned((const u64 *)src + 1);
		u64 c = get_unaligned((const u64 *)src + 2);
		u64 d = get_unaligned((const u64 *)src + 3);

		put_unaligned(a, (u64 *)dst);
		put_unaligned(b, (u64 *)dst + 1);
		put_unaligned(c, (u64 *)dst + 2);
		put_unaligned(d, (u64 *)dst + 3);
		src += 32;
		dst += 32;
		n -= 32;
	}
	for (; n >= 8; n -= 8, src += 8, dst += 8)
		put_unaligned(get_unaligned((const u64 *)src), (u64 *)dst);
	for (; n; n--)
		*(u8 *)dst++ = *(const u8 *)src++;
}

static void sroce_copy(void *dst, const void *src, size_t n)
{
	if (static_branch_unlikely(&sroce_copy_by_words))
		sroce_copy_words(dst, src, n);
	else
		memcpy(dst, src, n);
}

/* Nanoseconds the copy of @len bytes takes, the best of a few runs. */
static u64 sroce_copy_time(void *dst, const void *src, size_t len,
			   bool words)
{
	u64 best = U64_MAX, t;
	int i;

	for (i = 0; i < 8; i++) {
		t = ktime_get_ns();
		if (words)
			sroce_copy_words(dst, src, len);
		else
			memcpy(dst, src, len);
		best = min(best, ktime_get_ns() - t);
	}
	return best;
}

/**
 * sroce_copy_choose - time memcpy() and a word loop once, keep the faster
 *
 * Over a packet's worth of bytes at an odd offset, as payloads come.
 */
void sroce_copy_choose(void)
{
	u64 ns_memcpy, ns_words;
	u8 *buf;

	buf = kmalloc(2 * SZ_4K + 16, GFP_KERNEL);
	if (!buf)
		return;
	get_random_bytes(buf, SZ_4K + 8);
	ns_memcpy = sroce_copy_time(buf + SZ_4K + 13, buf + 3, SZ_4K, false);
	ns_words = sroce_copy_time(buf + SZ_4K + 13, buf + 3, SZ_4K, true);
	if (memcmp(buf + SZ_4K + 13, buf + 3, SZ_4K)) {
		pr_warn("sroce: the word copy is wrong: memcpy\n");
		ns_words = U64_MAX;
	}
	kfree(buf);
	pr_info("sroce: copy: memcpy %llu ns, words %llu ns per 4 KiB: %s\n",
		ns_memcpy, ns_words, ns_words < ns_memcpy ? "words" : "memcpy");
	if (ns_words < ns_memcpy)
		static_branch_enable(&sroce_copy_by_words);
}

/*
 * Is this use of @mr allowed now (IBA 10.6.3.2, 10.6.3.3)?  Called with
 * mr->lock held for MRs that can change, so that the answer still holds
 * while the caller copies.  The page range is checked as well as the
 * byte range: a remapped MR may map fewer pages than before.  A window's
 * rkey is never an lkey (IBA 10.6.7.1).
 */
static bool sroce_mr_ok(const struct sroce_mr *mr, u32 key, bool remote,
			int access, u64 va, u64 len)
{
	u64 last;

	if (READ_ONCE(mr->dead))
		return false;	/* deregistered (DMA MRs: read without lock) */
	if (mr->key != key)
		return false;	/* a window has no lkey: refused below */
	if (access && (mr->access & access) != access)
		return false;
	if ((mr->kind == SROCE_MR_FRWR || mr->kind == SROCE_MR_MW) &&
	    !mr->valid)
		return false;	/* not (or no longer) registered or bound */
	if (mr->kind == SROCE_MR_MW && !remote)
		return false;
	if (!len)
		return true;
	if (va < mr->iova || va + len < va || va + len - mr->iova > mr->length)
		return false;
	if (mr->kind == SROCE_MR_DMA || mr->kind == SROCE_MR_MW)
		return true;
	last = va - mr->iova + mr->page_offset + len - 1;
	return (last >> mr->page_shift) < mr->npages;
}

/*
 * The MR a remote access through window @win reaches, or NULL when the
 * window does not allow it: bound, the rkey, the rights and the range of
 * its binding, and for a type 2B window the QP it was bound through (IBA
 * 10.6.7.2.5).  Called with win->lock held; the caller then takes the
 * MR's lock (nested) and checks the MR too: still registered, not
 * re-keyed (bound_lkey).
 */
static struct sroce_mr *sroce_mw_target(const struct sroce_mr *win,
					const struct sroce_qp *rqp, u32 key,
					int access, u64 va, u64 len)
{
	if (!rqp || !sroce_mr_ok(win, key, true, access, va, len))
		return NULL;
	if (win->mw_type == IB_MW_TYPE_2 && win->mw_qpn != rqp->ibqp.qp_num)
		return NULL;
	return win->bound;
}

/**
 * sroce_mr_lookup - find the MR a key names and check a use of it
 * @qp: the QP the access comes through (its PD must own the MR)
 * @key: the lkey or rkey
 * @remote: true for an rkey (the key must be the MR's rkey)
 * @access: the IB_ACCESS_* rights the use needs (0: local read)
 * @va: first byte accessed
 * @len: bytes accessed
 *
 * The answer holds for now only: whoever keeps the MR checks again on
 * every access (sroce_mr_access()), since it may be invalidated,
 * remapped or deregistered meanwhile.
 *
 * Return: the MR with a reference (sroce_mr_put()), or NULL when the key,
 * PD, rights or bounds do not allow the access (IBA 10.6.3.2, 10.6.3.3).
 */
struct sroce_mr *sroce_mr_lookup(struct sroce_qp *qp, u32 key, bool remote,
				 int access, u64 va, u64 len)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mr *mr = sroce_mr_get(sdev, key);
	unsigned long flags;
	bool ok;

	if (!mr)
		return NULL;
	/* ib_uverbs_rereg_mr() may move the MR to another PD (WRITE_ONCE). */
	if (READ_ONCE(mr->ibmr.pd) != qp->ibqp.pd) {
		sroce_mr_put(mr);
		return NULL;
	}
	if (mr->kind == SROCE_MR_DMA) {	/* never changes: no lock */
		ok = sroce_mr_ok(mr, key, remote, access, va, len);
	} else if (mr->kind == SROCE_MR_MW) {
		ok = remote && !sroce_mr_access(mr, key, qp, access, va, NULL,
						len, false);
	} else {
		spin_lock_irqsave(&mr->lock, flags);
		ok = sroce_mr_ok(mr, key, remote, access, va, len);
		spin_unlock_irqrestore(&mr->lock, flags);
	}
	if (!ok) {
		sroce_mr_put(mr);
		return NULL;
	}
	return mr;
}

/*
 * The kernel address of @va in @mr and how many bytes from there are
 * contiguous (up to @len).  The range was checked by sroce_mr_ok().
 */
static void *sroce_mr_addr(struct sroce_mr *mr, u64 va, u32 len, u32 *n)
{
	u64 off, page_size;
	u32 idx;

	if (mr->kind == SROCE_MR_DMA) {
		*n = len;
		return (void *)(uintptr_t)va;
	}
	page_size = 1ULL << mr->page_shift;
	off = va - mr->iova + mr->page_offset;
	idx = off >> mr->page_shift;
	off &= page_size - 1;
	*n = min_t(u64, len, page_size - off);
	return (void *)(uintptr_t)(mr->pages[idx] + off);
}

/*
 * Check and copy (only check when @buf is NULL); under mr->lock for MRs
 * that can change.
 */
static int sroce_mr_check_copy(struct sroce_mr *mr, u32 key, bool remote,
			       int access, u64 va, void *buf, u32 len,
			       bool to_mr)
{
	if (!sroce_mr_ok(mr, key, remote, access, va, len))
		return -EACCES;
	while (buf && len) {
		u32 n;
		void *p = sroce_mr_addr(mr, va, len, &n);

		if (to_mr)
			sroce_copy(p, buf, n);
		else
			sroce_copy(buf, p, n);
		va += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * A copy through a window: the window's check and the MR's under both
 * locks, so that neither an invalidation of the window nor a change of
 * the MR can come between the check and the copy.
 */
static int sroce_mw_copy(struct sroce_mr *win, u32 key,
			 const struct sroce_qp *rqp, int access, u64 va,
			 void *buf, u32 len, bool to_mr)
{
	struct sroce_mr *mr;
	unsigned long flags;
	int err = -EACCES;

	spin_lock_irqsave(&win->lock, flags);
	mr = sroce_mw_target(win, rqp, key, access, va, len);
	if (mr) {
		spin_lock_nested(&mr->lock, SINGLE_DEPTH_NESTING);
		err = sroce_mr_check_copy(mr, win->bound_lkey, false, 0, va,
					  buf, len, to_mr);
		spin_unlock(&mr->lock);
	}
	spin_unlock_irqrestore(&win->lock, flags);
	return err;
}

/**
 * sroce_mr_access - check a use of an MR and copy, as one step
 * @mr: an MR (or a window) the caller holds a reference on
 * @key: the key the access names (an lkey or an rkey)
 * @rqp: the QP a remote access comes through (@key is an rkey), or NULL
 *       for a local access (@key is an lkey)
 * @access: the IB_ACCESS_* rights the use needs
 * @va: address in the MR
 * @buf: kernel buffer (NULL: check only)
 * @len: bytes
 * @to_mr: direction
 *
 * The MR may have been invalidated, registered again or deregistered since
 * it was looked up (a WRITE spans many packets, a WR waits in the SQ):
 * every access checks it again, and the check and the copy are one
 * critical section against REG_MR, LOCAL_INV, SEND_WITH_INV and dereg_mr,
 * so no byte moves after any of those returned (map_mr_sg only prepares
 * the next REG_MR's page list, sroce_map_mr_sg(); a zero-copy send's
 * packet holds its pages and is read when the device sends it, which may
 * be later, design.rst: sroce_mr_frags()).  The same holds for a
 * window against its invalidation, rebinding and deallocation.  DMA MRs
 * never change and take no lock (every kernel QP uses the PD's DMA lkey).
 *
 * Return: 0, or -EACCES when the MR no longer allows the access.
 */
int sroce_mr_access(struct sroce_mr *mr, u32 key,
		    const struct sroce_qp *rqp, int access, u64 va, void *buf,
		    u32 len, bool to_mr)
{
	unsigned long flags;
	int err;

	if (mr->kind == SROCE_MR_DMA)
		return sroce_mr_check_copy(mr, key, !!rqp, access, va,
					   buf, len, to_mr);
	if (mr->kind == SROCE_MR_MW)
		return sroce_mw_copy(mr, key, rqp, access, va, buf, len,
				     to_mr);
	spin_lock_irqsave(&mr->lock, flags);
	/*
	 * A re-registration may have moved it to another PD, under this
	 * lock (mr.c): checked with the rest, so that no remote access
	 * through the old PD lands after the rereg returned.
	 */
	if (rqp && READ_ONCE(mr->ibmr.pd) != rqp->ibqp.pd)
		err = -EACCES;
	else
		err = sroce_mr_check_copy(mr, key, !!rqp, access, va, buf,
					  len, to_mr);
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/**
 * sroce_mr_frags - add bytes of a user MR to a packet as page fragments
 * @mr: a user MR (SROCE_MR_USER) the caller holds a reference on
 * @key: the lkey the access names
 * @va: address in the MR
 * @len: bytes
 * @skb: the packet (sroce_pkt_alloc_frags()), room for the fragments
 *
 * Zero-copy transmit of an RC request (sroce_zc_ok()).  The check is made
 * under mr->lock like a copy's; unlike a copy's, the bytes are read later,
 * when the ICRC is computed and when the device sends them, from pages
 * the packet holds (sroce_pkt_add_frag()).  A process that writes its
 * send buffer before the WR completes gets what IBA promises it,
 * undefined data: the packet fails its ICRC at the receiver and is sent
 * again.  A fragment never crosses a page, so @len bytes take at most
 * DIV_ROUND_UP(@len, PAGE_SIZE) + 1 fragments.
 *
 * Return: 0, -EACCES when the MR no longer allows the access, or
 * -EMSGSIZE.
 */
int sroce_mr_frags(struct sroce_mr *mr, u32 key, u64 va, u32 len,
		   struct sk_buff *skb)
{
	unsigned long flags;
	int err = 0;

	if (WARN_ON_ONCE(mr->kind != SROCE_MR_USER))
		return -EMSGSIZE;
	spin_lock_irqsave(&mr->lock, flags);
	if (!sroce_mr_ok(mr, key, false, 0, va, len))
		err = -EACCES;
	while (!err && len) {
		u32 n;
		void *p = sroce_mr_addr(mr, va, len, &n);

		err = sroce_pkt_add_frag(skb, p, n);
		va += n;
		len -= n;
	}
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/*
 * Check and execute an atomic (@op: IB_OPCODE_COMPARE_SWAP,
 * IB_OPCODE_FETCH_ADD or SROCE_OPCODE_ATOMIC_WRITE, which stores @swap_add
 * as it came, byte for byte);
 * under mr->lock for MRs that can change.  @remote: @key is an rkey that
 * needs the rights (a window's MR is reached by its lkey: the window had
 * them).
 */
static int sroce_mr_check_atomic(struct sroce_mr *mr, u32 key, bool remote,
				 u64 va, u8 op, u64 cmp, u64 swap_add,
				 u64 *orig)
{
	int access = op == SROCE_OPCODE_ATOMIC_WRITE ? IB_ACCESS_REMOTE_WRITE :
						IB_ACCESS_REMOTE_ATOMIC;
	u64 *p;
	u32 n;

	if ((va & 7) ||
	    !sroce_mr_ok(mr, key, remote, remote ? access : 0, va, 8))
		return -EACCES;
	p = sroce_mr_addr(mr, va, 8, &n);
	/*
	 * The word itself aligned and in one page: an FRWR MR's iova may be
	 * rewritten by its ULP after the mapping (ib_map_mr_sg_zbva()), so
	 * an aligned va need not mean an aligned address.
	 */
	if (n < 8 || !IS_ALIGNED((unsigned long)p, 8))
		return -EACCES;
	if (op == IB_OPCODE_COMPARE_SWAP) {
		*orig = cmpxchg64(p, cmp, swap_add);
	} else if (op == IB_OPCODE_FETCH_ADD) {
		*orig = atomic64_fetch_add(swap_add, (atomic64_t *)p);
	} else {
		/* One store, after every earlier write of the QP (A19.4.2). */
		smp_store_release(p, swap_add);
		*orig = 0;
	}
	return 0;
}

/* An atomic through a window: both checks and the operation, locked. */
static int sroce_mw_atomic(struct sroce_mr *win, u32 key,
			   const struct sroce_qp *rqp, u64 va, u8 op,
			   u64 cmp, u64 swap_add, u64 *orig)
{
	int access = op == SROCE_OPCODE_ATOMIC_WRITE ? IB_ACCESS_REMOTE_WRITE :
						IB_ACCESS_REMOTE_ATOMIC;
	struct sroce_mr *mr;
	unsigned long flags;
	int err = -EACCES;

	spin_lock_irqsave(&win->lock, flags);
	mr = sroce_mw_target(win, rqp, key, access, va, 8);
	if (mr) {
		spin_lock_nested(&mr->lock, SINGLE_DEPTH_NESTING);
		err = sroce_mr_check_atomic(mr, win->bound_lkey, false, va, op,
					    cmp, swap_add, orig);
		spin_unlock(&mr->lock);
	}
	spin_unlock_irqrestore(&win->lock, flags);
	return err;
}

/**
 * sroce_mr_atomic - execute an atomic on an 8-byte target (IBA 9.4.5, A19)
 * @mr: an MR (or a window) the caller holds a reference on
 * @key: the rkey the request names
 * @rqp: the QP the request came through
 * @va: the target, 8-byte aligned (so it never straddles a page)
 * @op: IB_OPCODE_COMPARE_SWAP, IB_OPCODE_FETCH_ADD, or
 *      SROCE_OPCODE_ATOMIC_WRITE (remote write rights instead of remote
 *      atomic ones)
 * @cmp: the compare operand
 * @swap_add: the swap or add operand, or the 8 bytes to write
 * @orig: the value before the operation (0 for a write)
 *
 * Atomic with respect to the CPUs and every other QP (IBA 10.7.2).
 *
 * Return: 0, or -EACCES when the MR does not allow it.
 */
int sroce_mr_atomic(struct sroce_mr *mr, u32 key, const struct sroce_qp *rqp,
		    u64 va, u8 op, u64 cmp, u64 swap_add, u64 *orig)
{
	unsigned long flags;
	int err;

	if (mr->kind == SROCE_MR_DMA)
		return sroce_mr_check_atomic(mr, key, true, va, op, cmp,
					     swap_add, orig);
	if (mr->kind == SROCE_MR_MW)
		return sroce_mw_atomic(mr, key, rqp, va, op, cmp, swap_add,
				       orig);
	spin_lock_irqsave(&mr->lock, flags);
	/* The PD, as for a copy (sroce_mr_access()). */
	if (READ_ONCE(mr->ibmr.pd) != rqp->ibqp.pd)
		err = -EACCES;
	else
		err = sroce_mr_check_atomic(mr, key, true, va, op, cmp,
					    swap_add, orig);
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

/**
 * sroce_sge_copy - copy between a buffer and a WR's scatter/gather list
 * @qp: the QP (for the PD and key checks)
 * @sge: the list
 * @num_sge: its length
 * @offset: byte offset into the list
 * @buf: kernel buffer
 * @len: bytes to copy
 * @to_mr: true to scatter @buf into the list (receive side)
 *
 * Looks up and checks each lkey for the range it covers (local write
 * access for scatter), and copies under the same check.
 *
 * Return: 0, -EINVAL if the list is shorter than @offset + @len, or
 * -EACCES for a key, PD, right or bound violation.
 */
int sroce_sge_copy(struct sroce_qp *qp, const struct ib_sge *sge,
		   u32 num_sge, u32 offset, void *buf, u32 len, bool to_mr)
{
	int access = to_mr ? IB_ACCESS_LOCAL_WRITE : 0;
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct sroce_mr *mr;
		u32 n;
		int err;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		mr = sroce_mr_lookup(qp, sge[i].lkey, false, access,
				     sge[i].addr + offset, n);
		if (!mr)
			return -EACCES;
		err = sroce_mr_access(mr, sge[i].lkey, NULL, access,
				      sge[i].addr + offset, buf, n, to_mr);
		sroce_mr_put(mr);
		if (err)
			return err;
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

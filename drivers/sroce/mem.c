// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce memory access: the checks of IBA 10.6 (keys, PD, access rights,
 * bounds) and copies between packets and registered memory.
 *
 * Registered memory is reached through kernel addresses: a DMA MR names
 * them directly (ib_core's virtual DMA, ib_uses_virt_dma()), user and
 * fast-register MRs keep one address per page.
 */
#include "sroce.h"

/**
 * sroce_mr_lookup - find the MR a key names and check a use of it
 * @qp: the QP the access comes through (its PD must own the MR)
 * @key: the lkey or rkey
 * @remote: true for an rkey (the key must be the MR's rkey)
 * @access: the IB_ACCESS_* right the use needs (0: local read)
 * @va: first byte accessed
 * @len: bytes accessed
 *
 * Return: the MR with a reference (sroce_mr_put()), or NULL when the key,
 * PD, rights or bounds do not allow the access (IBA 10.6.3.2, 10.6.3.3).
 */
struct sroce_mr *sroce_mr_lookup(struct sroce_qp *qp, u32 key, bool remote,
				 int access, u64 va, u64 len)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mr *mr = sroce_mr_get(sdev, key);

	if (!mr)
		return NULL;
	if (mr->ibmr.pd != qp->ibqp.pd)
		goto fail;
	if ((remote ? mr->ibmr.rkey : mr->ibmr.lkey) != key)
		goto fail;
	if (access && !(mr->access & access))
		goto fail;
	if (mr->kind == SROCE_MR_FRWR && !mr->valid)
		goto fail;	/* a fast-register MR not (or no longer) valid */
	if (len && (va < mr->ibmr.iova || va + len < va ||
		    va + len - mr->ibmr.iova > mr->ibmr.length))
		goto fail;
	return mr;
fail:
	sroce_mr_put(mr);
	return NULL;
}

/*
 * The kernel address of @va in @mr and how many bytes from there are
 * contiguous (up to @len).
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
	off = va - mr->ibmr.iova + mr->page_offset;
	idx = off >> mr->page_shift;
	off &= page_size - 1;
	*n = min_t(u64, len, page_size - off);
	return (void *)(uintptr_t)(mr->pages[idx] + off);
}

/**
 * sroce_mr_copy - copy between a buffer and registered memory
 * @mr: the MR, already checked by sroce_mr_lookup() for this range
 * @va: address in the MR
 * @buf: kernel buffer
 * @len: bytes
 * @to_mr: direction
 */
void sroce_mr_copy(struct sroce_mr *mr, u64 va, void *buf, u32 len,
		   bool to_mr)
{
	while (len) {
		u32 n;
		void *p = sroce_mr_addr(mr, va, len, &n);

		if (to_mr)
			memcpy(p, buf, n);
		else
			memcpy(buf, p, n);
		va += n;
		buf += n;
		len -= n;
	}
}

/**
 * sroce_mr_atomic_addr - the kernel address of an 8-byte atomic target
 * @mr: the MR, checked for the 8 bytes at @va
 * @va: the target, 8-byte aligned (so it never straddles a page)
 *
 * Return: the address.
 */
u64 *sroce_mr_atomic_addr(struct sroce_mr *mr, u64 va)
{
	u32 n;

	return sroce_mr_addr(mr, va, 8, &n);
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
 * access for scatter).
 *
 * Return: 0, -EINVAL if the list is shorter than @offset + @len, or
 * -EACCES for a key, PD, right or bound violation.
 */
int sroce_sge_copy(struct sroce_qp *qp, const struct ib_sge *sge,
		   u32 num_sge, u32 offset, void *buf, u32 len, bool to_mr)
{
	u32 i;

	for (i = 0; i < num_sge && len; i++) {
		struct sroce_mr *mr;
		u32 n;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		n = min(len, sge[i].length - offset);
		mr = sroce_mr_lookup(qp, sge[i].lkey, false,
				     to_mr ? IB_ACCESS_LOCAL_WRITE : 0,
				     sge[i].addr + offset, n);
		if (!mr)
			return -EACCES;
		sroce_mr_copy(mr, sge[i].addr + offset, buf, n, to_mr);
		sroce_mr_put(mr);
		buf += n;
		len -= n;
		offset = 0;
	}
	return len ? -EINVAL : 0;
}

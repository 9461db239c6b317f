// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce user mappings: kernel memory that a process maps with mmap() on
 * its uverbs file, at the offset of an rdma_user_mmap_entry (the mapped
 * CQ rings of cq.c, the work queue rings of uring.c).
 *
 * Lifetime: the object that owns the memory removes its entry when it is
 * destroyed; ib_core then calls sroce_mmap_free() once no mmap() is in
 * progress on it.  A mapping that outlives the object keeps the pages
 * themselves (vm_map_pages_zero() takes a reference on each), never the
 * kernel's use of them: the owner stops writing before it removes the
 * entry.  The pages are charged to the memory cgroup of the process that
 * asked for them for as long as they exist (as io_uring's rings are), so
 * that what a process keeps mapped after destroying the object still
 * counts against its limit.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "sroce.h"

/* Driver data from byte @from on must be zero: it means nothing yet. */
static int sroce_udata_zero_from(struct ib_udata *udata, size_t from)
{
	if (udata && udata->inlen > from &&
	    !ib_is_udata_cleared(udata, from, udata->inlen - from))
		return -EOPNOTSUPP;
	return 0;
}

/**
 * sroce_map_cmd - what a create command's provider can use
 * @udata: the command's (NULL for kernel objects)
 * @flags: set to the enum sroce_queue_flags asked for (0 from providers
 *         that send no command of ours)
 *
 * The create commands of CQs, QPs and SRQs share one layout: flags, then
 * a reserved word.  Bits and bytes we do not know are refused, so that
 * they can mean something later.
 *
 * Return: 0, -EOPNOTSUPP or -EFAULT.
 */
int sroce_map_cmd(struct ib_udata *udata, u32 *flags)
{
	struct sroce_create_cq_cmd cmd = {};
	int err;

	BUILD_BUG_ON(sizeof(struct sroce_create_qp_cmd) != sizeof(cmd) ||
		     sizeof(struct sroce_create_srq_cmd) != sizeof(cmd));
	*flags = 0;
	if (!udata || !udata->inlen)
		return 0;
	err = sroce_udata_zero_from(udata, sizeof(cmd));
	if (err)
		return err;
	err = ib_copy_from_udata(&cmd, udata, min(udata->inlen, sizeof(cmd)));
	if (err)
		return err;
	if ((cmd.flags & ~SROCE_MAPPED) || cmd.reserved)
		return -EOPNOTSUPP;
	*flags = cmd.flags;
	return 0;
}

/**
 * sroce_udata_none - check a command that has no driver part of ours
 * @udata: the command's (NULL for kernel objects)
 *
 * Bytes after the core command are refused unless zero, as in
 * sroce_map_cmd(), so that a later ABI can give them a meaning.
 *
 * Return: 0 or -EOPNOTSUPP.
 */
int sroce_udata_none(struct ib_udata *udata)
{
	return sroce_udata_zero_from(udata, 0);
}

struct sroce_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *buf;			/* the kernel's view of @pages */
	struct page **pages;
	unsigned long npages;
	struct mm_struct *mm;		/* charged, or NULL */
};

/*
 * Ring memory is memory a process pins in the kernel by asking for it:
 * it counts against the process's RLIMIT_MEMLOCK, as the pages of its MRs
 * do (ib_umem_get()) and as a RoCE NIC's rings do, which live in pinned
 * user memory; unless it may lock memory (CAP_IPC_LOCK).  The charge
 * ends with the object, as an MR's ends with dereg_mr; pages still mapped
 * then stay charged to the memory cgroup (sroce_mmap_pages()).
 */
static int sroce_mmap_charge(struct sroce_mmap_entry *e)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long npages = e->npages;
	struct mm_struct *mm = current->mm;

	if (!mm)
		return 0;
	if (atomic64_add_return(npages, &mm->pinned_vm) > limit &&
	    !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	mmgrab(mm);
	e->mm = mm;
	return 0;
}

static void sroce_mmap_uncharge(struct sroce_mmap_entry *e)
{
	if (!e->mm)
		return;
	atomic64_sub(e->npages, &e->mm->pinned_vm);
	mmdrop(e->mm);
}

/* Drop our reference on each page; a mapping may hold its own. */
static void sroce_mmap_put_pages(struct sroce_mmap_entry *e)
{
	unsigned long i;

	for (i = 0; i < e->npages && e->pages[i]; i++)
		__free_page(e->pages[i]);
	kvfree(e->pages);
}

/*
 * Zeroed pages charged to the caller's memory cgroup, and one kernel
 * mapping of them.  vmalloc_user() would be one call, but its pages are
 * not charged, and a process could keep them mapped past the object and
 * its RLIMIT_MEMLOCK charge, without bound.  Past the cgroup's limit the
 * create fails (ENOMEM) rather than calling the OOM killer: the process
 * asked for a size, it can ask for less.
 */
static int sroce_mmap_pages(struct sroce_mmap_entry *e)
{
	unsigned long i;

	e->pages = kvcalloc(e->npages, sizeof(*e->pages), GFP_KERNEL_ACCOUNT);
	if (!e->pages)
		return -ENOMEM;
	for (i = 0; i < e->npages; i++) {
		e->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					 __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
		if (!e->pages[i])
			goto err;
	}
	e->buf = vmap(e->pages, e->npages, VM_MAP, PAGE_KERNEL);
	if (!e->buf)
		goto err;
	return 0;

err:
	sroce_mmap_put_pages(e);
	return -ENOMEM;
}

static void sroce_mmap_free_pages(struct sroce_mmap_entry *e)
{
	vunmap(e->buf);
	sroce_mmap_put_pages(e);
}

/**
 * sroce_mmap_alloc - zeroed memory that the process of @uctx may map
 * @uctx: the user context
 * @size: bytes (rounded up to pages)
 * @entry: set to the entry, for rdma_user_mmap_entry_remove()
 * @offset: set to the mmap() offset the provider is told
 *
 * The memory counts against the process's RLIMIT_MEMLOCK until the entry is
 * freed (sroce_mmap_charge()).
 *
 * Return: the memory, or an ERR_PTR (-ENOMEM past that limit).
 */
void *sroce_mmap_alloc(struct ib_ucontext *uctx, size_t size,
		       struct rdma_user_mmap_entry **entry, u64 *offset)
{
	struct sroce_mmap_entry *e;
	int err;

	size = PAGE_ALIGN(size);
	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->npages = size >> PAGE_SHIFT;
	err = sroce_mmap_charge(e);
	if (err)
		goto err_entry;
	err = sroce_mmap_pages(e);
	if (err)
		goto err_charge;
	err = rdma_user_mmap_entry_insert(uctx, &e->rdma, size);
	if (err)
		goto err_buf;
	*entry = &e->rdma;
	*offset = rdma_user_mmap_get_offset(&e->rdma);
	return e->buf;

err_buf:
	sroce_mmap_free_pages(e);
err_charge:
	sroce_mmap_uncharge(e);
err_entry:
	kfree(e);
	return ERR_PTR(err);
}

/* ib_device_ops.mmap: the whole of one entry's memory, shared. */
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *entry;
	struct sroce_mmap_entry *e;
	int err;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* Checks the offset and that the length is the entry's. */
	entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!entry)
		return -EINVAL;
	e = container_of(entry, struct sroce_mmap_entry, rdma);
	/* As remap_vmalloc_range(): no growing with mremap, not in cores. */
	vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
	err = vm_map_pages_zero(vma, e->pages, e->npages);
	rdma_user_mmap_entry_put(entry);
	return err;
}

/* ib_device_ops.mmap_free: the entry was removed and is unused. */
void sroce_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct sroce_mmap_entry *e = container_of(entry,
						  struct sroce_mmap_entry,
						  rdma);

	sroce_mmap_free_pages(e);
	sroce_mmap_uncharge(e);
	kfree(e);
}

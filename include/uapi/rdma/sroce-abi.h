/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * sroce user/kernel ABI, shared by sroce.ko and libsroce-rdmav34.so.
 *
 * Every structure here is passed through ib_udata and is versioned by
 * SROCE_ABI_VERSION (the uverbs_abi_ver of the device): the provider refuses
 * a kernel whose ABI version it does not know.  All fields are fixed width
 * and naturally aligned so that 32- and 64-bit user space see one layout.
 *
 * Design (see Documentation/uabi.rst): queues and CQ rings live in kernel
 * memory that user space maps with mmap() at the offsets the kernel returns
 * (rdma_user_mmap_entry), so that the data path can run without system
 * calls.
 */
#ifndef SROCE_ABI_USER_H
#define SROCE_ABI_USER_H

#include <linux/types.h>
#include <rdma/ib_user_verbs.h>

#define SROCE_ABI_VERSION	1

/*
 * Our driver id for libibverbs' VERBS_DRIVER_ID() match.  It is private and
 * deliberately far outside enum rdma_driver_id (upstream ids are small
 * consecutive numbers), so it cannot collide with an upstream driver.
 */
#define SROCE_DRIVER_ID		0x5352

/* The UDP destination port of RoCEv2 (IBA Annex A17.2.1). */
#define SROCE_ROCEV2_UDP_DPORT	4791

/*
 * Queue mapping.  A provider that can use a mapped ring asks for it with
 * SROCE_MAPPED in the command's flags; a response whose flags have
 * SROCE_MAPPED set describes a ring the provider mmap()s at mmap_offset
 * and uses without system calls.  Without the flag the provider goes
 * through the kernel commands (ibv_cmd_poll_cq, ibv_cmd_post_send and
 * friends), as providers that do not know the flag always do.  CQs, the
 * RQs and SRQs, and the SQs of RC and UC QPs are mapped (a UD SQ names
 * address handles, which only the command can).
 */
enum sroce_queue_flags {
	SROCE_MAPPED = 1 << 0,
	SROCE_CQ_TIMESTAMPS = 1 << 1,	/* responses only: see sroce_cq_ring */
};

/* ibv_create_cq command, after the core command (optional: 0 flags). */
struct sroce_create_cq_cmd {
	__u32 flags;		/* enum sroce_queue_flags the provider can use */
	__u32 reserved;		/* 0 */
};

/*
 * A mapped CQ: this header, then `entries` completions in the uverbs
 * layout (struct ib_uverbs_wc, as the poll command returns them), in
 * PAGE_ALIGN(sizeof(struct sroce_cq_ring) + entries * 48) bytes.  A CQ
 * created with IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION (ibv_create_cq_ex
 * with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) answers SROCE_CQ_TIMESTAMPS:
 * `entries` __u64 timestamps follow the completions, one per slot, and
 * the ring takes entries * 56 bytes instead.  A timestamp is the
 * kernel's CLOCK_MONOTONIC in nanoseconds when the completion was
 * written: the device clock runs at 1 GHz (hca_core_clock 1000000 kHz).  Both
 * indexes run freely; a completion's slot is its index modulo `entries`.
 * The kernel writes a completion, then producer (a release store); the
 * provider reads producer (an acquire load), the completions before it,
 * then stores consumer.  The kernel reads consumer only to see the ring
 * full (a CQ overrun, IB_EVENT_CQ_ERR): whatever the process writes there
 * can only lose it its own completions.
 */
struct sroce_cq_ring {
	__u32 producer;
	__u32 reserved0[15];	/* producer and consumer: own cache lines */
	__u32 consumer;
	__u32 reserved1[15];
	struct ib_uverbs_wc cqe[];
};

/*
 * ibv_create_cq response, after the core response; ibv_resize_cq of a
 * mapped CQ answers with one too (a new ring, the old one is unused).
 */
struct sroce_create_cq_resp {
	__aligned_u64 mmap_offset;
	__u32 entries;		/* ring entries (>= the requested cqe) */
	__u32 flags;		/* enum sroce_queue_flags */
};

/* ibv_create_qp and ibv_create_srq commands, after the core command. */
struct sroce_create_qp_cmd {
	__u32 flags;		/* enum sroce_queue_flags the provider can use */
	__u32 reserved;		/* 0 */
};

struct sroce_create_srq_cmd {
	__u32 flags;		/* enum sroce_queue_flags the provider can use */
	__u32 reserved;		/* 0 */
};

/*
 * A mapped work queue (SQ, RQ or SRQ): this header, then `entries` slots
 * of `stride` bytes (entries is a power of two; indexes run freely, an
 * entry's slot is its index modulo entries).
 *
 * The provider writes an entry, then producer (a release store).  The
 * kernel copies each entry once, checks the copy and never reads the slot
 * again; it then stores consumer: the entries before consumer are done
 * with (taken and, for the SQ, completed), their slots free.  A slot
 * holds a struct sroce_send_uwqe (SQ) or struct sroce_recv_uwqe (RQ, SRQ).
 *
 * doorbell is the kernel's: while it is non-zero the kernel does not look
 * at the ring by itself, and a provider that has just published entries
 * makes the post command with no WRs (the doorbell).  It is set when the
 * SQ's requester runs dry (it has sent all it has), when the QP is in
 * Error, and on the SQ in Send Queue Error (entries posted then complete
 * flushed through the doorbell).
 * Entries a post wrote while the QP went to Reset complete flushed when
 * the QP leaves Reset (both rings) and, for the SQ, when it enters RTS.
 * The provider publishes producer, then fences (sequentially
 * consistent), then reads doorbell; the kernel sets doorbell, fences, then
 * reads producer once more, so that one of the two always sees the other.
 * What the process writes into the ring can lose it its own work
 * requests, nothing else: an entry that is not a valid WR completes with
 * IB_WC_LOC_QP_OP_ERR.
 */
struct sroce_wq_ring {
	__u32 producer;
	__u32 reserved0[15];	/* producer and consumer: own cache lines */
	__u32 consumer;
	__u32 doorbell;
	__u32 reserved1[14];
	__u8 slot[];
};

/*
 * An SQ entry.  opcode and send_flags are the IB_UVERBS_WR_* and
 * IB_UVERBS_SEND_* values (SEND, SEND_WITH_IMM, SEND_WITH_INV,
 * RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ, the two atomics,
 * LOCAL_INV, BIND_MW) and 15, RDMA Atomic Write (IB_UVERBS_WR_ATOMIC_WRITE
 * of later kernels), whose 8 bytes travel in swap, as they are in memory
 * (it completes with opcode 9, IB_UVERBS_WC_ATOMIC_WRITE).  With
 * IB_UVERBS_SEND_INLINE the slot carries inline_len bytes of data where
 * sge[] would be, and num_sge is unused.
 *
 * BIND_MW (ibv_bind_mw, a posted IBV_WR_BIND_MW, ibv_wr_bind_mw) names
 * the window by ex (its rkey now), gives its new rkey in rkey (the same
 * index, a new key byte) and the binding in bind: the range, the lkey of
 * the MR, the window's IB_UVERBS_ACCESS_* remote rights.  Only a mapped SQ
 * carries it: the uverbs post_send command has no bind.
 */
struct sroce_send_uwqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	__u32 ex;		/* immediate data (big endian), or an rkey */
	__u32 rkey;
	union {
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
		};
		struct {
			__aligned_u64 addr;
			__aligned_u64 length;
			__u32 mr_lkey;
			__u32 access;
		} bind;
	};
	struct ib_uverbs_sge sge[];
};

/* An RQ or SRQ entry. */
struct sroce_recv_uwqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
	struct ib_uverbs_sge sge[];
};

/* ibv_create_qp response, after the core response. */
struct sroce_create_qp_resp {
	__aligned_u64 sq_mmap_offset;
	__aligned_u64 rq_mmap_offset;
	__u32 sq_entries;
	__u32 rq_entries;
	__u32 flags;		/* enum sroce_queue_flags (the SQ's) */
	__u32 rq_flags;		/* enum sroce_queue_flags (the RQ's) */
	__u32 sq_stride;
	__u32 rq_stride;
};

/* ibv_create_srq response, after the core response. */
struct sroce_create_srq_resp {
	__aligned_u64 mmap_offset;
	__u32 entries;
	__u32 flags;		/* enum sroce_queue_flags */
	__u32 stride;
	__u32 reserved;
};

#endif /* SROCE_ABI_USER_H */

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce - a software RoCEv2 provider for ib_core.
 *
 * Map of the driver (one file per concern):
 *   main.c    module init/exit, "rdma link" type, device list, netdev events
 *   device.c  the ib_device_ops table, device/port queries, port state
 *   pool.c    lifetime layer: kref'd objects indexed by xarray + RCU
 *   pd.c      protection domains
 *   ah.c      address handles (the RoCEv2 address vector)
 *   srq.c     shared receive queues
 *   cq.c      completion layer: the shared CQ ring
 *   qp.c      QP objects and the IBA QP state machine
 *   post.c    work request queues (post_recv, flush)
 *   mr.c      memory regions, fast registration, invalidation
 *   mw.c      memory windows (type 1 and type 2B): alloc, bind, invalidate
 *   mmap.c    kernel memory user space maps (mapped rings)
 *   uring.c   mapped work queues: SQ, RQ and SRQ rings without system calls
 * Transport engine:
 *   hdr.h     RoCEv2 wire format, opcode table, PSN arithmetic
 *   net.c     transmit, ICRC
 *   rcv.c     receive: packet checks, dispatch, the loopback queue
 *   netns.c   the UDP 4791 sockets of each network namespace
 *   mem.c     memory access checks and copies
 *   req.c     requester (post_send)
 *   comp.c    completer: ACKs, responses, retry and RNR timers
 *   window.c  RC window control: the device's window, shared
 *   resp.c    responder
 *   mcast.c   multicast groups: attach/detach, delivery to every QP
 *   counters.c  rdma statistic counters, rdma res engine state
 *   pma.c     Performance Management Agent: the counters as IB port counters
 *   fault.c   fault injection knobs (debug kernels only)
 *   kunit.c   KUnit suites (kernels with KUnit only)
 *   trace.h   tracepoints
 *
 * Lock order (outermost first):
 *   sroce_dev_lock (main.c) is a leaf: nothing else is taken under it.
 *   sdev->mcg_lock (mcast.c) is a leaf; the netdev's address list is
 *   changed after it is dropped.
 *   qp->state_lock -> qp->lock (engine) -> qp->sq.lock / qp->rq.lock /
 *   srq->rq.lock -> cq->lock
 *   pool xarray locks are leaves, as is sdev->pma_lock (pma.c).
 *   No consumer handler (comp_handler, event handlers) runs under any of
 *   them: the engine notes what is due, sroce_qp_deliver_events() calls.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/completion.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <net/dst_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#include "hdr.h"

#define SROCE_DRV_NAME		"sroce"

/*
 * Device limits.  query_device reports exactly these and every create path
 * enforces them, so a ULP that sizes itself from query_device never fails.
 * Each is a count the kernel test client fills to the last one
 * (tests/kernel/sroce_test.c); what an object costs is in admin-guide.rst.
 * QPNs and MR/window key indexes are 24 bits: these stay well inside.
 */
#define SROCE_MAX_QP		65536
#define SROCE_MAX_QP_WR		32768
#define SROCE_MAX_SGE		32
#define SROCE_MAX_SGE_RD	32
#define SROCE_MAX_CQ		65536
#define SROCE_MAX_CQE		262143	/* a mapped ring: 2^18 slots */
#define SROCE_MAX_MR		262144
#define SROCE_MAX_MW		65536	/* windows share the MRs' key space */
#define SROCE_MAX_PD		65536
#define SROCE_MAX_AH		65536
#define SROCE_MAX_SRQ		65536
#define SROCE_MAX_MCG		1024	/* multicast groups per device */
/*
 * Buckets of a device's group index: a datagram to a group is looked up
 * in softirq, for any host that sends one, so not by a walk of them all.
 */
#define SROCE_MCG_HASH_BITS	6
#define SROCE_MAX_MCG_QPS	32	/* QPs attached to one group */
#define SROCE_MAX_MCG_ATTACH	4096	/* attachments per device */
#define SROCE_MAX_SRQ_WR	32768
#define SROCE_MAX_INLINE	256
/*
 * Responder resources per QP (max_dest_rd_atomic), as rdma_rxe offers: a
 * ring allocated when the consumer sets them (resp.c).
 */
#define SROCE_MAX_RD_ATOMIC	128
/*
 * Initiator depth: only a counter on our side, so as deep as peers'
 * responders go (rdma_rxe offers 128; perftest sets the initiator depth
 * to the peer's responder resources).
 */
#define SROCE_MAX_INIT_RD_ATOMIC	128
/*
 * Pages of a user MR at most: their addresses are one array (mr.c), which
 * kvmalloc() refuses (with a warning) at INT_MAX bytes; one page more for
 * a start inside a page.  About 1 TiB; what a process can pin
 * (RLIMIT_MEMLOCK) is the limit a user meets first.
 */
#define SROCE_MAX_MR_PAGES	(INT_MAX / sizeof(u64) - 1)
#define SROCE_MAX_MR_SIZE	((u64)SROCE_MAX_MR_PAGES << PAGE_SHIFT)
#define SROCE_MAX_MSG_SIZE	BIT(31)
#define SROCE_PORT_GID_TBL_LEN	1024	/* as rdma_rxe's */
#define SROCE_MAX_FRMR_PAGES	512
#define SROCE_VENDOR_ID		0xffffff	/* no IEEE OUI: a software device */

/*
 * The QPNs of ordinary QPs: 0 and 1 are QP0 and QP1 (GSI); 0xFFFFFF is no
 * QP's, it addresses a multicast group (IBA 10.5, SROCE_QPN_MCAST).
 */
#define SROCE_MIN_QPN		16
#define SROCE_MAX_QPN		((1U << 24) - 2)

/*
 * Largest header stack in front of a RoCEv2 payload: IPv6 (40) + UDP (8) +
 * BTH (12) + the largest extension header, AtomicETH (28), + ICRC (4).  The
 * port's active MTU is the largest IB MTU that still fits the netdev MTU
 * with all of it (IBA A17.3).
 */
#define SROCE_MAX_HDR_LEN	(40 + 8 + 12 + 28 + 4)

/* Object types of the lifetime layer; also the live-object counters. */
enum sroce_obj_type {
	SROCE_OBJ_DEV,
	SROCE_OBJ_UCTX,
	SROCE_OBJ_PD,
	SROCE_OBJ_CQ,
	SROCE_OBJ_QP,
	SROCE_OBJ_SRQ,
	SROCE_OBJ_MR,
	SROCE_OBJ_MW,
	SROCE_OBJ_AH,
	SROCE_OBJ_MCG,
	SROCE_OBJ_MCA,
	SROCE_OBJ_MAX,
};

extern atomic_t sroce_live[SROCE_OBJ_MAX];
extern bool sroce_rx_lo;
extern const char *const sroce_obj_name[SROCE_OBJ_MAX];

/*
 * Charge one object against a device limit; false when the device has
 * @max already.  sroce_uncharge() gives it back.
 */
static inline bool sroce_charge(atomic_t *count, u32 max)
{
	if (atomic_inc_return(count) > max) {
		atomic_dec(count);
		return false;
	}
	return true;
}

static inline void sroce_uncharge(atomic_t *count)
{
	atomic_dec(count);
}

static inline void sroce_live_inc(enum sroce_obj_type t)
{
	atomic_inc(&sroce_live[t]);
}

static inline void sroce_live_dec(enum sroce_obj_type t)
{
	atomic_dec(&sroce_live[t]);
}

/**
 * struct sroce_pool - an index of kref-counted objects (lifetime layer)
 * @xa: id -> object, published only once the object is fully built
 * @limit: the range of ids handed out
 * @next: cursor for cyclic allocation (ids are not reused at once)
 * @count: objects currently published, bounded by @max
 * @max: the device limit for this object type
 */
struct sroce_pool {
	struct xarray xa;
	struct xa_limit limit;
	u32 next;
	atomic_t count;
	u32 max;
};

/**
 * struct sroce_pool_elem - what the index points to, for every object
 * @ref: the object's references; the owner holds one
 * @done: completed when the last reference is gone (no @release)
 * @release: called at the last put instead, for objects freed by their
 *           last holder (MRs: sroce_pool_unpublish()); from any context
 * @obj: the object (QPs: their element is allocated apart, see below)
 * @id: the index (QPN, MR key index)
 * @rcu: the element goes with kfree_rcu: a lookup may have loaded it
 *
 * Embedded in the objects we free ourselves (MRs, kfree_rcu).  A QP's
 * memory is ib_core's, which frees it with a plain kfree() as soon as
 * destroy_qp returns: its element is a small allocation of its own that
 * outlives it by an RCU grace period (kfree_rcu), so that destroying a
 * QP never waits for a grace period (synchronize_rcu() per QP made
 * tearing down thousands of QPs take minutes).
 */
struct sroce_pool_elem {
	struct kref ref;
	struct completion done;
	void (*release)(struct sroce_pool_elem *elem);
	void *obj;
	u32 id;
	struct rcu_head rcu;
};

/* Per-device data-path counters, shown by "rdma statistic" (counters.c). */
enum sroce_counter {
	SROCE_CNT_TX_PKTS,
	SROCE_CNT_RX_PKTS,
	SROCE_CNT_TX_ERR,
	SROCE_CNT_RX_BAD_HDR,
	SROCE_CNT_RX_BAD_ICRC,
	SROCE_CNT_RX_NO_QP,
	SROCE_CNT_RX_BAD_STATE,
	SROCE_CNT_RX_DUP,
	SROCE_CNT_RX_OUT_OF_SEQ,
	SROCE_CNT_RETRANS,
	SROCE_CNT_RETRY_TIMEOUT,
	SROCE_CNT_RNR_NAK_SENT,
	SROCE_CNT_RNR_NAK_RCVD,
	SROCE_CNT_SEQ_NAK_SENT,
	SROCE_CNT_SEQ_NAK_RCVD,
	SROCE_CNT_ERR_NAK_SENT,
	SROCE_CNT_UD_DROP,
	SROCE_CNT_RX_BAD_QKEY,
	SROCE_CNT_RX_MCAST,
	SROCE_CNT_RX_BAD_PKEY,
	SROCE_CNT_RX_BAD_SRC,
	SROCE_CNT_ACK_SENT,
	SROCE_CNT_ACK_COALESCED,
	SROCE_CNT_TX_ZEROCOPY,
	SROCE_CNT_TX_BATCHED,
	SROCE_CNT_RX_DEFERRED,
	SROCE_CNT_TX_BYTES,
	SROCE_CNT_RX_BYTES,
	SROCE_CNT_TX_MCAST,
	SROCE_CNT_RX_UC_DROP,
	SROCE_CNT_LINK_DOWNED,
	SROCE_CNT_RX_CNP,
	SROCE_CNT_MAX,
};

/* Per CPU: every packet counts, on whichever CPU handles it. */
struct sroce_stats {
	u64 c[SROCE_CNT_MAX];
};

/**
 * struct sroce_net - the RoCEv2 sockets of one network namespace (netns.c)
 * @net: the namespace
 * @sock4: UDP 4791 over IPv4, while @users
 * @sock6: UDP 4791 over IPv6, while @users (NULL: IPv6 disabled)
 * @users: the devices whose netdev is in @net
 */
struct sroce_net {
	struct net *net;
	struct socket *sock4;
	struct socket *sock6;
	unsigned int users;
};

struct sroce_dev {
	struct ib_device ibdev;
	struct list_head list;		/* sroce_dev_list, under sroce_dev_lock */
	struct net_device *ndev;	/* held (dev_hold) until dealloc_driver */
	struct sroce_net *sn;		/* the netdev's namespace, ditto */
	bool registered;		/* under sroce_dev_lock */
	bool ndev_gone;			/* its NETDEV_UNREGISTER came, ditto */
	struct ib_device_attr attrs;	/* what query_device reports */

	struct sroce_pool qp_pool;
	struct sroce_pool mr_pool;
	atomic_t nr_pd, nr_cq, nr_srq, nr_ah;	/* against the device limits */
	atomic_t nr_mr, nr_mw;		/* both in mr_pool: charged apart */
	atomic_t win_busy;		/* RC QPs with packets unacked */
	atomic_t rx_backlog;		/* packets on its QPs' backlogs */

	struct sroce_stats __percpu *stats;	/* from registration on */
	/* the PMA's last unicast counts: they never go back (pma.c) */
	spinlock_t pma_lock;
	u64 pma_ucast_tx, pma_ucast_rx;

	spinlock_t port_lock;		/* protects port_state, port_mtu */
	enum ib_port_state port_state;	/* last state reported to ib_core */
	int port_mtu;			/* last active MTU reported */

	/* leaf lock: the groups, their counts, and every QP's nr_mcg */
	spinlock_t mcg_lock;
	/* struct sroce_mcg by MGID (mcast.c) */
	DECLARE_HASHTABLE(mcg_hash, SROCE_MCG_HASH_BITS);
	u32 mcg_seed;			/* its hash key (mcast.c) */
	u32 nr_mcg, nr_mcg_attach;
};

/**
 * struct sroce_mcg - a multicast group of one device (mcast.c)
 * @node: in sroce_dev.mcg_hash
 * @mgid: the group's GID: an IPv4-mapped or IPv6 multicast address
 * @nr_qps: how many of @qp are used
 * @qp: the attached UD QPs; a QP leaves every group before it is freed
 */
struct sroce_mcg {
	struct hlist_node node;
	union ib_gid mgid;
	int nr_qps;
	struct sroce_qp *qp[SROCE_MAX_MCG_QPS];
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
};

/**
 * struct sroce_cq - the completion layer's ring
 * @ibcq: ib_core's CQ
 * @lock: protects everything below; taken by every QP that completes here
 * @queue: the kernel ring (NULL when mapped): @size + 1 entries, one always
 *         empty to tell full from empty
 * @size: completions the CQ holds (a mapped ring: a power of two of them)
 * @head: the @queue index of the oldest completion, the next one polled
 * @tail: the @queue index the next completion is written to
 * @notify: the pending req_notify_cq request (0, or IB_CQ_SOLICITED /
 *          IB_CQ_NEXT_COMP)
 * @overflow: set once a completion was lost; the CQ is then in error
 *            (IBA 11.4.2.1: CQ overrun is an affiliated asynchronous error)
 * @notify_due: a completion matched @notify: comp_handler is to be called
 * @err_due: the overrun is to be reported (IB_EVENT_CQ_ERR)
 * @ghosts: what the completions of destroyed QPs point to (struct
 *          sroce_ghost, for @queue), freed with the CQ; with @by_uverbs,
 *          what every completion points to
 * @nr_ghosts: the length of @ghosts, at most SROCE_CQ_MAX_GHOSTS
 * @by_uverbs: a user CQ that is not mapped: uverbs polls it and reads a
 *             completion's QP number after the poll, without the lock
 * @ring: a mapped CQ (sroce-abi.h): the ring user space polls
 * @ts: @ring's completion timestamps, or NULL
 * @uprod: completions written to @ring: ours, not @ring's producer
 * @mmap: @ring's mmap entry
 */
struct sroce_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* see above */
	struct ib_wc *queue;
	u32 size;
	u32 head;
	u32 tail;
	u32 notify;
	bool overflow;
	bool notify_due;
	bool err_due;
	struct list_head ghosts;
	u32 nr_ghosts;
	bool by_uverbs;
	struct sroce_cq_ring *ring;
	u64 *ts;
	u32 uprod;
	struct rdma_user_mmap_entry *mmap;
};

/*
 * What a completion points to instead of its QP, with the QP's number
 * and type: in a kernel CQ once the QP is destroyed (sroce_cq_forget_qp()),
 * in a CQ uverbs polls always (sroce_cq_attach_qp()).  Freed with the CQ.
 * @refs and @attached: the latter kind only, under the CQ's lock: the
 * completions in the ring that point to it, and whether a live QP does.
 */
struct sroce_ghost {
	struct list_head list;
	struct ib_qp ibqp;
	u32 refs;
	bool attached;
};

/**
 * struct sroce_av - a RoCEv2 address vector (AHs, connected QPs)
 * @sgid: our source GID (an IPv4-mapped or IPv6 address)
 * @dgid: the destination GID
 * @dmac: the next hop's MAC, resolved by ib_core / rdma_cm
 * @net_type: RDMA_NETWORK_IPV4 or RDMA_NETWORK_IPV6, from the source GID
 * @sgid_index: the GID table index, for query
 * @hop_limit: IP TTL / hop limit
 * @traffic_class: IP DSCP/ECN byte
 * @flow_label: IPv6 flow label
 * @sl: service level, 0 to 15 (its low three bits: the 802.1p priority)
 * @static_rate: the enum ib_rate asked for, kept for query only: sroce
 *		 does not pace a flow (no inter-packet delay)
 * @ifindex: the netdev of the source GID: the bound netdev, or a VLAN
 *	     device on top of it (ib_core adds GIDs for those too)
 */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u16 sgid_index;			/* of SROCE_PORT_GID_TBL_LEN */
	u8 net_type;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 static_rate;
	u32 flow_label;
	int ifindex;
};

struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_av av;
};

/* What a struct sroce_mr is (sroce_mr.kind). */
enum sroce_mr_kind {
	SROCE_MR_DMA,		/* kernel addresses, all memory */
	SROCE_MR_USER,		/* pinned user pages */
	SROCE_MR_FRWR,		/* fast-register page list */
	SROCE_MR_MW,		/* a memory window onto a user MR */
};

/**
 * struct sroce_mr - a memory region, or a memory window
 * @ibmr: ib_core's MR (a window's is private, see below)
 * @elem: the MR's entry in sroce_dev.mr_pool (its key index, references)
 * @lock: serialises every access to the memory (check and copy) with what
 *        changes what the MR maps or allows: REG_MR, invalidation and
 *        dereg; and map_mr_sg with REG_MR (a leaf lock; DMA MRs never
 *        change and take no lock).  A window's lock is taken outside the
 *        lock of the MR it is bound to (spin_lock_nested), never the
 *        other way round.
 * @kind: DMA, user, fast-register, or a window (mw.c)
 * @access: IB_ACCESS_* flags (a window: the remote rights of its binding)
 * @umem: user MRs only
 * @pages: kernel addresses of the MR's pages (user and fast-register MRs;
 *         a DMA MR has none and names kernel addresses directly)
 * @max_pages: entries of @pages
 * @npages: entries of @pages in use
 * @page_shift: log2 of the page size of @pages
 * @page_offset: offset of the MR's first byte in @pages[0]
 * @iova: the address accesses name the MR's first byte by
 * @length: the MR's length in bytes (a window: its bound range).  @iova
 *          and @length are what accesses check, not ibmr's: for a
 *          fast-register MR ib_sg_to_pages() and the ULP (xprtrdma's
 *          XID in the top bits, ib_map_mr_sg_zbva()) rewrite those ahead
 *          of the IB_WR_REG_MR that makes them the MR's.
 * @next_pages: fast-register MRs: the page list map_mr_sg() built for the
 *              next IB_WR_REG_MR, which swaps it with @pages; until then
 *              the MR (and a key not yet invalidated) maps what it did
 *              (IBA 10.6.3.6: the registration takes effect when the WR
 *              executes)
 * @next_npages: entries of @next_pages in use
 * @next_page_shift: log2 of their page size, from the ibmr.page_size that
 *                   ib_map_mr_sg() set for them (a later call it refuses
 *                   leaves its own page size there)
 * @next_page_offset: offset of the first byte in @next_pages[0]
 * @next_staged: map_mr_sg() made @next_pages since the last REG_MR (else
 *               a REG_MR registers the list in use again)
 * @valid: fast-register MRs: between IB_WR_REG_MR and invalidation;
 *         windows: bound
 * @dead: deregistered: every later access fails; the last holder frees
 * @nr_mw: MRs: windows bound to it (dereg and rereg refuse while any is)
 * @replacing: user MRs: a rereg is registering a new translation to take
 *             its place, and a bind to it fails from then on (ib_core
 *             deregisters it after; a window bound meanwhile would make
 *             that dereg fail and leave this MR, keys and all)
 * @mw_type: windows: IB_MW_TYPE_1 or IB_MW_TYPE_2 (type 2B)
 * @mw_qpn: bound type 2 windows: the only QP they may be used through
 * @bound: bound windows: the MR, with a reference
 * @bound_lkey: the MR's lkey at bind time: a re-keyed MR is another one
 * @key: the key accesses must name (an MR's lkey and rkey, a window's
 *       rkey), set at allocation, by REG_MR and by a bind.  Not ibmr's:
 *       a ULP's ib_update_fast_reg_key() writes those ahead of the REG_MR
 *       that carries the new key, while the old key must still work
 *       (iSER and rdma_rw post LOCAL_INV of it first).
 * @free_work: frees the MR at the last put (ib_umem_release() sleeps)
 *
 * A window lives in the MRs' index so that one rkey lookup finds either;
 * its ibmr is private (ib_core sees the struct ib_mw of struct sroce_mw).
 */
struct sroce_mr {
	struct ib_mr ibmr;
	struct sroce_pool_elem elem;
	spinlock_t lock;		/* see above */
	enum sroce_mr_kind kind;
	int access;
	struct ib_umem *umem;
	u64 *pages;
	u32 max_pages;
	u32 npages;
	u32 page_shift;
	u32 page_offset;
	u64 iova;
	u64 length;
	u64 *next_pages;
	u32 next_npages;
	u32 next_page_shift;
	u32 next_page_offset;
	bool next_staged;
	bool valid;
	bool dead;
	atomic_t nr_mw;
	bool replacing;
	u8 mw_type;
	u32 mw_qpn;
	struct sroce_mr *bound;
	u32 bound_lkey;
	u32 key;
	struct work_struct free_work;
};

/* What ib_core allocates for an ib_mw: the window itself is in the index. */
struct sroce_mw {
	struct ib_mw ibmw;
	struct sroce_mr *win;
};

/*
 * An SGE of a posted send WR, with the MR its lkey named: a WR in flight
 * holds a reference on every MR it uses until it completes (NULL when the
 * lkey named no MR: the WR then completes with IB_WC_LOC_PROT_ERR).
 */
struct sroce_sge {
	u64 addr;
	u32 length;
	u32 lkey;
	struct sroce_mr *mr;
};

/* Where a send WQE is in the transport engine. */
enum sroce_wqe_state {
	SROCE_WQE_POSTED,	/* not started by the requester */
	SROCE_WQE_PENDING,	/* (partly) sent, waiting for its response */
	SROCE_WQE_DONE,		/* all sent, unacknowledged transports */
};

/**
 * struct sroce_send_wqe - one posted send WR, as the engine needs it
 * @wr_id: the WR's wr_id, for its completion
 * @opcode: the WR's opcode (IB_WR_*, or SROCE_WR_ATOMIC_WRITE)
 * @send_flags: the WR's IB_SEND_* flags
 * @num_sge: entries of @sge in use
 * @length: message length in bytes (inline data: in @sge's space)
 * @ex: immediate data (BE) or invalidate rkey
 * @remote_addr: RDMA and atomic WRs: the remote address
 * @rkey: RDMA and atomic WRs: the remote key
 * @compare_add: atomics: the compare (CMP_AND_SWP) or add (FETCH_AND_ADD)
 *               operand
 * @swap: CMP_AND_SWP: the swap operand
 * @remote_qpn: UD WRs: the destination QPN
 * @remote_qkey: UD WRs: the Q_Key (high bit set: the QP's own, IBA 10.2.5)
 * @av: UD WRs: the destination, copied from the AH at post time
 * @reg_mr: IB_WR_REG_MR, with a reference
 * @reg_key: REG_MR: the key; BIND_MW: MR lkey
 * @reg_access: REG_MR, BIND_MW: the rights
 * @state: where the WQE is in the transport engine
 * @status: the status it completes with (IB_WC_SUCCESS until it fails)
 * @first_psn: PSN of its first packet (set when the requester starts it)
 * @npkts: packets (request PSNs: a read has one per response packet)
 * @done: read WQEs: response bytes already placed
 * @sge: the WR's SGEs, each with the MR its lkey named
 *
 * SROCE_WR_ATOMIC_WRITE carries its 8 bytes in @swap (@length is 8).
 *
 * IB_WR_BIND_MW (from a mapped SQ only: uverbs has no command for it)
 * names the window by @ex (its rkey now) and gives @rkey (its next rkey),
 * @remote_addr and @compare_add (the range), @reg_key (the MR's lkey) and
 * @reg_access (the window's rights).
 */
struct sroce_send_wqe {
	u64 wr_id;
	enum ib_wr_opcode opcode;
	u32 send_flags;
	u32 num_sge;
	u32 length;
	u32 ex;
	u64 remote_addr;
	u32 rkey;
	u64 compare_add;
	u64 swap;
	u32 remote_qpn;
	u32 remote_qkey;
	struct sroce_av av;
	struct sroce_mr *reg_mr;
	u32 reg_key;
	int reg_access;
	enum sroce_wqe_state state;
	enum ib_wc_status status;
	u32 first_psn;
	u32 npkts;
	u32 done;
	struct sroce_sge sge[];
};

/*
 * A posted receive WR.  @bad: taken from a mapped ring malformed (too many
 * SGEs); it completes with IB_WC_LOC_QP_OP_ERR when a message needs it.
 */
struct sroce_recv_wqe {
	u64 wr_id;
	u32 num_sge;
	bool bad;
	struct ib_sge sge[];
};

/**
 * struct sroce_queue - a work queue of fixed-size slots
 * @lock: protects the indexes and the slots
 * @buf: @size slots of @stride bytes
 * @size: slots of @buf, WRs the queue holds: a power of two, so that
 *        the free-running indexes name the same slot across their wrap
 * @stride: bytes per slot of @buf
 * @max_sge: SGEs a WR may carry
 * @head: count of WRs consumed (free running; the slot is modulo @size)
 * @tail: count of WRs posted
 * @ring: a mapped queue's ring (uring.c), which the process writes and the
 *        kernel copies WRs from into @buf; NULL when not mapped
 * @mmap: the ring's mmap entry
 * @ustride: bytes per ring slot
 * @upull: ring entries taken (free running, as the ring's producer)
 * @usge: the SGEs of the SQ entry being taken (a private copy)
 */
struct sroce_queue {
	spinlock_t lock;		/* see above */
	void *buf;
	u32 size;
	u32 stride;
	u32 max_sge;
	u32 head;
	u32 tail;
	struct sroce_wq_ring *ring;
	struct rdma_user_mmap_entry *mmap;
	u32 ustride;
	u32 upull;
	struct ib_sge *usge;
};

struct sroce_srq {
	struct ib_srq ibsrq;
	struct sroce_queue rq;
	u32 limit;			/* IB_SRQ_LIMIT, armed when non-zero */
	bool limit_due;			/* IB_EVENT_SRQ_LIMIT_REACHED to deliver */
};

/**
 * struct sroce_req - requester state (req.c)
 * @idx: the SQ index of the WQE being sent (sq.head <= idx <= sq.tail)
 * @psn: the PSN of the next packet to send
 * @high_psn: one past the highest PSN sent (@psn goes back on a retry;
 *	a response to a packet before @high_psn is still one to ours)
 * @offset: bytes of WQE @idx already sent
 * @noack: packets sent since the last one that asked for an ACK
 * @rd_inflight: reads, atomics and atomic writes sent and not yet answered
 * @cwnd: after a retry timeout, the packets it may keep unacknowledged
 *	until its window is reopened (window.c); 0: no such limit
 * @halt: a WQE failed locally: nothing from @halt_at on starts
 * @halt_at: the SQ index after the failed WQE
 */
struct sroce_req {
	u32 idx;
	u32 psn;
	u32 high_psn;
	u32 offset;
	u32 noack;
	u32 rd_inflight;
	u32 cwnd;
	bool halt;
	u32 halt_at;
};

/**
 * struct sroce_comp - completer state (comp.c)
 * @psn: the oldest PSN not yet acknowledged
 * @gap_psn: the @psn a loss was last reacted to
 * @seq_nak_psn: the PSN last gone back for on a sequence or RNR NAK
 * @retry: transport retries left (IBA 9.7.6.1.3 retry_cnt)
 * @rnr_retry: RNR retries left (7: infinite)
 * @rnr_wait: the requester is stopped until the RNR timer fires
 * @backoff: retry timeouts since a round trip was last measured; each
 *	doubles the next timeout
 * @rtt_on: a round trip is being timed: the ACK of @rtt_psn ends it
 * @rtt_psn: the last PSN of the request being timed
 * @rtt_at: jiffies when that request was sent
 * @srtt: the smoothed round trip, jiffies * 8 (0: none measured yet)
 * @rttvar: its mean deviation, jiffies * 4
 * @progress: jiffies of the last acknowledged progress
 */
struct sroce_comp {
	u32 psn;
	u32 gap_psn;
	u32 seq_nak_psn;
	u32 retry;
	u32 rnr_retry;
	u8 backoff;
	bool rnr_wait;
	bool rtt_on;
	u32 rtt_psn;
	unsigned long rtt_at;
	u32 srtt;
	u32 rttvar;
	unsigned long progress;
};

/* A READ as the requester first asked for it (struct sroce_rd_res). */
struct sroce_rd_first {
	u32 psn;
	u32 npkts;
	u64 va;
	u32 len;
};

/**
 * struct sroce_rd_res - a read, atomic or atomic write the responder answers
 * @op: IB_OPCODE_RDMA_READ_REQUEST, IB_OPCODE_COMPARE_SWAP,
 *	IB_OPCODE_FETCH_ADD or SROCE_OPCODE_ATOMIC_WRITE (answered by an RDMA
 *	READ Response Only without payload)
 * @psn: PSN of the request (of the first response packet)
 * @npkts: response packets
 * @sent: response packets sent; @npkts means done
 * @va: reads: the address of the request (of the first byte to send);
 *	atomics and atomic writes: the target, which a duplicate must name
 * @len: reads: the length of the request in bytes
 * @rkey: reads: the rkey of the request (checked every packet); atomics
 *	and atomic writes: the request's, which a duplicate must name
 * @mr: reads: the source MR, with a reference while packets remain
 * @orig: atomics: the value before the operation (replayed on duplicates)
 * @msn: the MSN its responses carry: the responder's once it took the
 *	request, not once later requests moved it (the response is theirs in
 *	PSN order)
 * @first: reads: the READ as the requester first asked for it, which a
 *	duplicate must fall within; an answer to a duplicate inherits it, so
 *	that a retry from the READ's start matches while any answer survives
 */
struct sroce_rd_res {
	u8 op;
	u32 psn;
	u32 npkts;
	u32 sent;
	u64 va;
	u32 len;
	u32 rkey;
	struct sroce_mr *mr;
	u64 orig;
	u32 msn;
	struct sroce_rd_first first;
};

/*
 * The multi-packet message a responder is in (IBA 9.7.4.1.3): a MIDDLE or
 * LAST packet must continue one of its kind.
 */
enum sroce_resp_msg {
	SROCE_MSG_NONE,
	SROCE_MSG_SEND,
	SROCE_MSG_WRITE,
};

/**
 * struct sroce_resp - responder state (resp.c)
 * @epsn: the expected PSN of the next request
 * @msn: messages completed (carried in every AETH)
 * @nak_sent: a PSN sequence NAK was sent for @epsn (IBA 9.7.5.1.2: once)
 * @ack_pending: an ACK waits behind read responses
 * @nak_pending: an RNR or sequence NAK for @epsn waits behind read
 *	responses
 * @nak_syndrome: the AETH syndrome of the waiting NAK
 * @fatal_pending: a class C/D error NAK (@fatal_code for @fatal_psn, with
 *	an async event if @fatal_event) waits for the read responses queued
 *	before it, and the QP enters Error after it (sroce_resp_tx()); the
 *	requests that come meanwhile are dropped
 * @fatal_event: see @fatal_pending
 * @fatal_code: see @fatal_pending
 * @fatal_psn: see @fatal_pending
 * @ack_due: a coalesced ACK of (@ack_psn, @ack_msn) waits for the end of
 *	the receive batch (resp.c)
 * @ack_queued: the QP is on a CPU's list of QPs with an ACK due, with a
 *	reference, linked by @ack_node
 * @ack_psn: the PSN the coalesced ACK acknowledges
 * @ack_msn: the MSN the coalesced ACK carries
 * @ack_node: in a CPU's list of QPs with an ACK due
 * @have_wqe: @wqe holds a receive WQE taken off the RQ or SRQ and not yet
 *	completed
 * @cur: the multi-packet message in progress, if any
 * @wqe: the receive WQE of the SEND in progress (a copy), valid while
 *	@have_wqe
 * @offset: bytes of the message in progress placed so far
 * @mr: the target of the RDMA WRITE in progress, with a reference
 * @rkey: the rkey of the RDMA WRITE in progress (checked every packet)
 * @va: next address of the RDMA WRITE in progress
 * @resid: bytes of the RDMA WRITE in progress still expected
 * @wlen: length of the RDMA WRITE in progress (its RETH's), the byte_len
 *	of its completion when it carries an immediate
 * @rd: read and atomic resources, a ring of @rd_size (sroce_resp_resize())
 * @rd_size: entries of @rd: sroce_rd_ring_size(), a power of two (the
 *	free-running indices below wrap with it) or 0; from
 *	RESET until the next RTR the ring of the last connection, cleared
 * @rd_next: the first resource with response packets to send
 * @rd_tail: the next free resource
 */
struct sroce_resp {
	u32 epsn;
	u32 msn;
	bool nak_sent;
	bool ack_pending;
	bool nak_pending;
	u8 nak_syndrome;
	bool fatal_pending;
	bool fatal_event;
	u8 fatal_code;
	u32 fatal_psn;
	bool ack_due;
	bool ack_queued;
	u32 ack_psn;
	u32 ack_msn;
	struct list_head ack_node;
	bool have_wqe;
	enum sroce_resp_msg cur;
	struct sroce_recv_wqe *wqe;
	u32 offset;
	struct sroce_mr *mr;
	u32 rkey;
	u64 va;
	u32 resid;
	u32 wlen;
	struct sroce_rd_res *rd;
	u32 rd_size;
	u32 rd_next;
	u32 rd_tail;
};

struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_pool_elem *elem;	/* allocated apart (lifetime layer) */

	struct mutex state_lock;	/* serialises modify_qp and destroy */
	enum ib_qp_state state;		/* read locklessly on the data path */
	struct ib_qp_attr attr;		/* what modify_qp set, but the AV */
	struct sroce_av av;		/* the destination of RC/UC QPs */
	enum ib_sig_type sq_sig_type;

	struct sroce_queue sq;
	struct sroce_queue rq;
	u32 max_inline;
	/*
	 * What its completions point to on a send [0] and receive [1] CQ
	 * that uverbs polls (struct sroce_cq.by_uverbs), or NULL.
	 */
	struct sroce_ghost *ghost[2];

	/*
	 * Transport engine.  @lock serialises all of one QP's work (no PSN
	 * reordering); QPs run in parallel.  Taken with BH off, never from
	 * hard IRQ: post_send from such a context defers to @tx_work.
	 */
	spinlock_t lock;		/* see above */
	bool dead;			/* destroy started: no timers, no work */
	unsigned long events_due;	/* BIT(IB_EVENT_*) to deliver */
	bool sqd_notify;		/* SQ_DRAINED asked for, not yet noted */
	bool comm_est;			/* IB_EVENT_COMM_EST noted since RESET */
	bool bound_mw2;			/* bound a type 2B window (mw.c) */
	u16 src_port;			/* UDP source port (per-QP entropy) */
	u16 ip_id;			/* next IPv4 ID (net.c), under lock */
	struct dst_cache dst_cache;	/* the route to av, under lock */
	u32 nr_mcg;			/* groups attached to, under mcg_lock */
	u32 mtu;			/* path MTU in bytes */
	struct sroce_req req;
	struct sroce_comp comp;
	bool win_busy;		/* counted in sdev->win_busy (window.c) */
	struct sroce_resp resp;
	struct timer_list retry_timer;
	struct timer_list rnr_timer;
	struct work_struct tx_work;

	/*
	 * Transmit queue (net.c): packets built under @lock, in PSN order,
	 * leave after it is released (sroce_qp_unlock()), sent by one CPU
	 * at a time (@tx_busy bit 0).  Each holds the QP until the stack
	 * frees it; @skb_out counts the requests among them, and the
	 * requester stops at SROCE_SKB_OUT_MAX so that a window of packets
	 * does not land in the device's queue at once.
	 */
	struct sk_buff_head txq;
	unsigned long tx_busy;
	atomic_t skb_out;
	/*
	 * Receive backlog (rcv.c): packets that found @lock taken, handled
	 * by its holder before it releases it (sroce_qp_release()).
	 */
	struct sk_buff_head rx_backlog;
};

/* A QP's packets below the driver, at most; the requester resumes at LOW. */
#define SROCE_SKB_OUT_MAX	128
#define SROCE_SKB_OUT_LOW	64

static inline struct sroce_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct sroce_dev, ibdev);
}

static inline struct sroce_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct sroce_ucontext, ibuc);
}

static inline struct sroce_pd *to_spd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct sroce_pd, ibpd);
}

static inline struct sroce_cq *to_scq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, ibcq);
}

static inline struct sroce_ah *to_sah(struct ib_ah *ibah)
{
	return container_of(ibah, struct sroce_ah, ibah);
}

static inline struct sroce_srq *to_ssrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, ibsrq);
}

static inline struct sroce_qp *to_sqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, ibqp);
}

static inline struct sroce_mr *to_smr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct sroce_mr, ibmr);
}

static inline struct sroce_mw *to_smw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct sroce_mw, ibmw);
}

/**
 * struct sroce_pkt - a RoCEv2 packet being built or parsed
 * @sdev: received packets: the device they are for
 * @skb: the packet's socket buffer
 * @qp: received packets: the QP they are for, with a reference
 * @hdr: the BTH (start of the transport headers)
 * @bth: the same, as a struct
 * @ext: the first extension header
 * @payload: the payload (NULL: the payload is in page fragments)
 * @icrc: where the ICRC goes
 * @paylen: payload bytes, without pad and ICRC
 * @info: sroce_op_info() of the opcode (with SROCE_H_DETH for UD)
 * @qpn: received packets: the destination QPN of the BTH
 * @psn: received packets: the PSN of the BTH
 * @opcode: the BTH opcode
 * @pad: pad bytes between the payload and the ICRC (BTH PadCnt)
 * @ackreq: received packets: the BTH's AckReq bit
 * @ipv4: received packets: they came over IPv4, not IPv6
 * @rnr: the responder answered with an RNR NAK
 * @failed: the responder answered with a NAK and the QP is in Error
 * @sport: received packets: the UDP source port
 * @vlan_id: received packets: the VLAN device's id they came through, or
 *	VLAN_N_VID (their netdev may be gone when a backlog handles them)
 * @ifindex: received packets: the index of the netdev they came in on (a
 *	VLAN device's for a tagged one), or 0 from the loopback queue
 * @sgid: received packets: the source IP address, as a GID (IPv4-mapped
 *	over IPv4)
 * @dgid: received packets: the destination IP address, as a GID
 */
struct sroce_pkt {
	struct sroce_dev *sdev;
	struct sk_buff *skb;
	struct sroce_qp *qp;
	union {
		u8 *hdr;
		struct sroce_bth *bth;
	};
	u8 *ext;
	u8 *payload;
	u8 *icrc;
	u32 paylen;
	u32 info;
	u32 qpn;
	u32 psn;
	u8 opcode;
	u8 pad;
	bool ackreq;
	bool ipv4;
	bool rnr;
	bool failed;
	u16 sport;
	u16 vlan_id;
	int ifindex;
	union ib_gid sgid;
	union ib_gid dgid;
};

/**
 * sroce_pkt_from_peer - is a packet from the peer of a connected QP?
 * @qp: an RC or UC QP, with qp->lock held (modify_qp changes the AV)
 * @pkt: a received packet
 *
 * A connected QP talks to one address (IBA 9.6.1.5 checks the source of
 * a reliable connection; RoCEv2 names it by IP address): a packet from
 * any other, or to another of our addresses, is not for this QP, however
 * well it guessed the QPN and PSN.  And through its source GID's netdev:
 * a packet for a VLAN's address that came in untagged (or on another
 * VLAN) crossed no router into that VLAN (rdma_rxe's rxe_chk_dgid()).
 */
static inline bool sroce_pkt_from_peer(const struct sroce_qp *qp,
				       const struct sroce_pkt *pkt)
{
	return !memcmp(&pkt->sgid, &qp->av.dgid, sizeof(pkt->sgid)) &&
	       !memcmp(&pkt->dgid, &qp->av.sgid, sizeof(pkt->dgid)) &&
	       (!pkt->ifindex || pkt->ifindex == qp->av.ifindex);
}

/*
 * A long RDMA READ is asked for in requests of at most this many response
 * packets, each a responder resource of its own: the window then bounds
 * read responses in flight as it bounds requests (up to one chunk past
 * it: the window is checked before a request, which takes the PSNs of
 * all its responses).  Chunks start at multiples of it (req.c, comp.c).
 */
#define SROCE_READ_CHUNK	64
/* PSNs further back than this are not duplicates but garbage. */
#define SROCE_PSN_WINDOW	0x400000	/* an int: compared with PSN diffs */

extern struct workqueue_struct *sroce_wq;
extern struct workqueue_struct *sroce_free_wq;	/* MR frees (mr.c) */

static inline void sroce_count(struct sroce_dev *sdev, enum sroce_counter c)
{
	this_cpu_inc(sdev->stats->c[c]);
}

/*
 * RDMA Atomic Write (IBA 1.5, annex A19): 8 bytes written at once.  Linux
 * 6.1's verbs have no name for it, so these are the values later kernels
 * and rdma-core 43+ give it (IB_UVERBS_WR_ATOMIC_WRITE,
 * IB_UVERBS_WC_ATOMIC_WRITE).  Only a mapped SQ carries one: uverbs'
 * post command and kernel ULPs cannot.
 */
#define SROCE_WR_ATOMIC_WRITE	((enum ib_wr_opcode)15)
#define SROCE_WC_ATOMIC_WRITE	((enum ib_wc_opcode)9)

static inline bool sroce_wqe_is_rd_op(enum ib_wr_opcode op)
{
	return op == IB_WR_RDMA_READ || op == IB_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * Does a WR take one of the responder's resources, and so count against
 * max_rd_atomic (IBA 9.7.7.1)?  Reads and atomics, and an Atomic Write
 * (IBA 1.5, A19.4.2), which is answered like a READ, where an ACK of a
 * later PSN may also complete it (sroce_comp_ack()).
 */
static inline bool sroce_wqe_takes_rd_res(enum ib_wr_opcode op)
{
	return sroce_wqe_is_rd_op(op) || op == SROCE_WR_ATOMIC_WRITE;
}

/* head and tail run freely; the slot is the index modulo the size. */
static inline void *sroce_queue_slot(struct sroce_queue *q, u32 index)
{
	return q->buf + (size_t)(index & (q->size - 1)) * q->stride;
}

/*
 * A send slot is the WQE, max_sge SGEs, then max_inline bytes of inline
 * data: inline data never overlays the SGEs (qp.c sizes the slots).
 */
static inline u8 *sroce_wqe_inline(struct sroce_qp *qp,
				   struct sroce_send_wqe *wqe)
{
	return (u8 *)wqe + qp->sq.stride - qp->max_inline;
}

/* The send WQE at (free-running) SQ index @idx. */
static inline struct sroce_send_wqe *
sroce_sq_wqe(struct sroce_qp *qp, u32 idx)
{
	return sroce_queue_slot(&qp->sq, idx);
}

/**
 * sroce_sq_next_sent - the next WQE sent and not answered yet, in SQ order
 * @qp: the QP, with qp->lock held
 * @idx: the SQ index to look from; set to the WQE's
 *
 * WQEs done are passed over; the first one not sent yet ends the walk
 * (none after it was sent either).  Up to the tail: after a retry, WQEs
 * past the requester's index were sent too.
 *
 * Return: the WQE, or NULL.
 */
static inline struct sroce_send_wqe *
sroce_sq_next_sent(struct sroce_qp *qp, u32 *idx)
{
	/* Acquire: the slots up to the tail as their poster wrote them. */
	for (; *idx != smp_load_acquire(&qp->sq.tail); (*idx)++) {
		struct sroce_send_wqe *wqe = sroce_sq_wqe(qp, *idx);

		if (wqe->state == SROCE_WQE_POSTED)
			return NULL;
		if (wqe->state == SROCE_WQE_PENDING)
			return wqe;
	}
	return NULL;
}

/**
 * sroce_sq_drained - has every WQE the requester started completed?
 * @qp: the QP, with qp->lock held
 *
 * The SQD drain of IBA 11.6.3.1: the requester starts no WQE in SQD, so
 * the SQ is drained when it waits at the oldest WQE and that one was never
 * started.  req.idx alone does not say it: a NAK or a timeout sends the
 * requester back to the oldest unacknowledged WQE, which is in flight.
 *
 * Return: true when nothing is in flight.
 */
static inline bool sroce_sq_drained(struct sroce_qp *qp)
{
	u32 head = qp->sq.head;

	if (qp->req.idx != head || qp->req.offset)
		return false;
	/* Pairs with the poster's release of the tail after the slot. */
	return head == smp_load_acquire(&qp->sq.tail) ||
	       sroce_sq_wqe(qp, head)->state == SROCE_WQE_POSTED;
}

/*
 * Does the SQ flush in @state?  In Error, and in Send Queue Error (IBA
 * 10.3.1: an SQ that failed locally completes its WRs flushed, while the
 * RQ of the UC or UD QP goes on receiving).
 */
static inline bool sroce_sq_flushes(enum ib_qp_state state)
{
	return state == IB_QPS_ERR || state == IB_QPS_SQE;
}

/* A send WQE is finished with @status; it completes in SQ order (comp.c). */
static inline void sroce_wqe_done(struct sroce_send_wqe *wqe,
				  enum ib_wc_status status)
{
	wqe->status = status;
	wqe->state = SROCE_WQE_DONE;
}

/* main.c */
int sroce_add_link(const char *ibdev_name, struct net_device *ndev);
void sroce_forget_device(struct sroce_dev *sdev);
int sroce_enable_driver(struct ib_device *ibdev);

/* device.c */
void sroce_init_device(struct sroce_dev *sdev);
int sroce_register_device(struct sroce_dev *sdev, const char *name);
void sroce_port_event(struct sroce_dev *sdev);
int sroce_active_mtu(const struct net_device *ndev);
u32 sroce_port_mtu(struct sroce_dev *sdev);

/* pool.c - lifetime layer */
void sroce_pool_init(struct sroce_pool *pool, u32 min, u32 max, u32 count);
void sroce_pool_destroy(struct sroce_pool *pool);
int sroce_pool_add(struct sroce_pool *pool, struct sroce_pool_elem *elem);
int sroce_pool_add_id(struct sroce_pool *pool, struct sroce_pool_elem *elem,
		      u32 id);
void sroce_pool_publish(struct sroce_pool *pool, struct sroce_pool_elem *elem);
void sroce_pool_abort(struct sroce_pool *pool, struct sroce_pool_elem *elem);
void sroce_pool_unpublish(struct sroce_pool *pool,
			  struct sroce_pool_elem *elem);
struct sroce_pool_elem *sroce_pool_get(struct sroce_pool *pool, u32 id);
void sroce_pool_elem_put(struct sroce_pool_elem *elem);
void sroce_pool_remove(struct sroce_pool *pool, struct sroce_pool_elem *elem,
		       struct ib_device *ibdev);

/* A QP by QPN, with a reference (a packet in flight holds its QP). */
static inline struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_pool_elem *elem = sroce_pool_get(&sdev->qp_pool, qpn);

	return elem ? elem->obj : NULL;
}

/* Another reference on a QP that the caller knows alive, or false. */
static inline bool sroce_qp_hold(struct sroce_qp *qp)
{
	return kref_get_unless_zero(&qp->elem->ref);
}

static inline void sroce_qp_put(struct sroce_qp *qp)
{
	sroce_pool_elem_put(qp->elem);
}

/*
 * An MR by lkey/rkey, with a reference (a WR in flight holds its MRs).
 * The index finds it, the whole key must match.
 */
static inline struct sroce_mr *sroce_mr_get(struct sroce_dev *sdev, u32 key)
{
	struct sroce_pool_elem *elem = sroce_pool_get(&sdev->mr_pool, key >> 8);
	struct sroce_mr *mr;

	if (!elem)
		return NULL;
	mr = container_of(elem, struct sroce_mr, elem);
	/* REG_MR changes the key under mr->lock; checked again there. */
	if (READ_ONCE(mr->key) != key) {
		sroce_pool_elem_put(elem);
		return NULL;
	}
	return mr;
}

static inline void sroce_mr_put(struct sroce_mr *mr)
{
	sroce_pool_elem_put(&mr->elem);
}

/* pd.c */
int sroce_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* ah.c */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr);
void sroce_av_to_attr(const struct sroce_av *av, struct rdma_ah_attr *attr);
int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int sroce_destroy_ah(struct ib_ah *ibah, u32 flags);

/* srq.c */
int sroce_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int sroce_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int sroce_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int sroce_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int sroce_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);

/* cq.c - completion layer */
int sroce_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int sroce_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int sroce_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int sroce_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int sroce_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int sroce_cq_complete(struct sroce_cq *cq, const struct ib_wc *wc,
		      bool solicited);
void sroce_cq_deliver(struct sroce_cq *cq);
void sroce_cq_forget_qp(struct sroce_cq *cq, struct sroce_qp *qp);
int sroce_cq_attach_qp(struct sroce_qp *qp);
void sroce_cq_clean(struct sroce_cq *cq, struct sroce_qp *qp);

/* qp.c */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
void sroce_qp_error(struct sroce_qp *qp);
bool sroce_qp_complete(struct sroce_qp *qp, struct ib_cq *ibcq,
		       const struct ib_wc *wc, bool solicited);
void sroce_qp_sq_error(struct sroce_qp *qp, struct ib_wc *wc);
void sroce_qp_deliver_events(struct sroce_qp *qp);
void sroce_qp_deliver_posted(struct sroce_qp *qp);

/* The QP events sroce_qp_deliver_events() delivers. */
#define SROCE_QP_EVENTS	(BIT(IB_EVENT_COMM_EST) | BIT(IB_EVENT_SQ_DRAINED) | \
			 BIT(IB_EVENT_QP_FATAL) | BIT(IB_EVENT_QP_REQ_ERR) | \
			 BIT(IB_EVENT_QP_ACCESS_ERR) | \
			 BIT(IB_EVENT_QP_LAST_WQE_REACHED))

/* Note an async event of @qp for sroce_qp_deliver_events(). */
static inline void sroce_qp_note(struct sroce_qp *qp, enum ib_event_type type)
{
	if (!WARN_ON_ONCE(!(BIT(type) & SROCE_QP_EVENTS)))
		set_bit(type, &qp->events_due);
}

void sroce_qp_deliver_shared(struct sroce_qp *qp);

/* mcast.c - multicast groups */
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 lid);
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 lid);
void sroce_mcast_detach_all(struct sroce_qp *qp);
int sroce_mcast_rcv(struct sroce_pkt *pkt);

/* fault.c - fault injection knobs (debug kernels only) */
enum sroce_fault { SROCE_FAULT_CREATE, SROCE_FAULT_PACKET };
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
bool sroce_fail(enum sroce_fault f);
void sroce_fault_init(struct dentry *dir);
#else
static inline bool sroce_fail(enum sroce_fault f) { return false; }
static inline void sroce_fault_init(struct dentry *dir) { }
#endif

/* mmap.c - user mappings */
int sroce_map_cmd(struct ib_udata *udata, u32 *flags);
int sroce_udata_none(struct ib_udata *udata);
void *sroce_mmap_alloc(struct ib_ucontext *uctx, size_t size,
		       struct rdma_user_mmap_entry **entry, u64 *offset);
int sroce_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void sroce_mmap_free(struct rdma_user_mmap_entry *entry);

/* netns.c - the sockets of each network namespace */
struct sroce_net *sroce_net_get(struct net *net);
void sroce_net_put(struct sroce_net *sn);
int sroce_netns_init(void);
void sroce_netns_exit(void);

/* rcv.c - RoCEv2 packets in */
int sroce_encap_rcv(struct sock *sk, struct sk_buff *skb);
int sroce_loop_queue(struct sk_buff *skb);
void sroce_loop_init(void);
/*
 * Backlogged packets one release of qp->lock handles, at most: the rest
 * go to the QP's work item, so a flood of packets for one QP from other
 * CPUs cannot keep a post or a modify_qp in the driver with softirqs off.
 */
#define SROCE_RX_BACKLOG_BUDGET	512
int sroce_rx_backlog_run(struct sroce_qp *qp, int budget);
void sroce_qp_rcv_locked(struct sroce_qp *qp, struct sroce_pkt *pkt);
bool sroce_qp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt);
void sroce_qp_release(struct sroce_qp *qp) __releases(&qp->lock);
void sroce_loop_exit(void);

/* net.c - RoCEv2 packets out, ICRC */
int sroce_net_init(void);
void sroce_net_exit(void);
u16 sroce_src_port(u32 qpn);
u32 sroce_icrc(const void *nethdr, bool ipv4, const u8 *bth, u32 len);
u32 sroce_icrc_frags(const struct sk_buff *skb, bool ipv4, const u8 *bth);
u32 sroce_tx_batch(struct sk_buff *skb, struct sk_buff_head *txq, u32 max);
int sroce_pkt_alloc_frags(struct sroce_dev *sdev, struct sroce_pkt *pkt,
			  u8 opcode, u32 paylen);
int sroce_pkt_add_frag(struct sk_buff *skb, void *p, u32 n);
int sroce_pkt_trailer(struct sroce_pkt *pkt);
bool sroce_zc_ok(struct sroce_dev *sdev, u32 paylen);
int sroce_pkt_alloc(struct sroce_dev *sdev, struct sroce_pkt *pkt, u8 opcode,
		    u32 paylen);
void sroce_qp_xmit(struct sroce_qp *qp, struct sroce_pkt *pkt, bool req);
void sroce_qp_tx_flush(struct sroce_qp *qp);
void sroce_qp_unlock(struct sroce_qp *qp) __releases(&qp->lock);
void sroce_qp_unlock_posted(struct sroce_qp *qp) __releases(&qp->lock);
int sroce_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
	       struct dst_cache *cache, u16 src_port, struct sroce_pkt *pkt);

/* mem.c - memory access checks and copies */
struct sroce_mr *sroce_mr_lookup(struct sroce_qp *qp, u32 key, bool remote,
				 int access, u64 va, u64 len);
int sroce_mr_frags(struct sroce_mr *mr, u32 key, u64 va, u32 len,
		   struct sk_buff *skb);
void sroce_copy_choose(void);
int sroce_mr_access(struct sroce_mr *mr, u32 key,
		    const struct sroce_qp *rqp, int access, u64 va, void *buf,
		    u32 len, bool to_mr);
int sroce_mr_atomic(struct sroce_mr *mr, u32 key, const struct sroce_qp *rqp,
		    u64 va, u8 op, u64 cmp, u64 swap_add, u64 *orig);
int sroce_sge_copy(struct sroce_qp *qp, const struct ib_sge *sge,
		   u32 num_sge, u32 offset, void *buf, u32 len, bool to_mr);

/* uring.c - mapped work queues */
int sroce_uring_init(struct sroce_queue *q, struct ib_udata *udata,
		     u32 inline_len, bool send, u64 *offset);
void sroce_uring_free(struct sroce_queue *q);
void sroce_uring_publish(struct sroce_queue *q);
void sroce_uring_reset(struct sroce_queue *q, bool doorbell, bool drop);
bool sroce_uring_flush_one(struct sroce_queue *q, u64 *wr_id,
			   enum ib_wc_opcode *opcode);
u32 sroce_rq_pull(struct sroce_queue *q);
u32 sroce_rq_posted(struct sroce_queue *q);
u32 sroce_sq_pull(struct sroce_qp *qp, int max);
u32 sroce_sq_take(struct sroce_qp *qp, int budget);
bool sroce_sq_idle(struct sroce_qp *qp);

/* req.c - requester */
#define SROCE_REQ_BUDGET	64	/* packets per run of the requester */
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
bool sroce_req_run(struct sroce_qp *qp, int budget);
void sroce_req_rewind(struct sroce_qp *qp);
void sroce_req_catch_up(struct sroce_qp *qp);
void sroce_qp_kick(struct sroce_qp *qp);
void sroce_qp_kick_later(struct sroce_qp *qp);
void sroce_tx_work(struct work_struct *work);
int sroce_wqe_copy(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		   u32 offset, void *buf, u32 len, bool to_mr);
bool sroce_wr_ok(struct sroce_qp *qp, const struct ib_send_wr *wr);
int sroce_wqe_fill(struct sroce_qp *qp, struct sroce_send_wqe *wqe,
		   const struct ib_send_wr *wr, const u8 *inl, u32 inl_len);

/* comp.c - completer */
enum ib_wc_opcode sroce_wc_opcode(enum ib_wr_opcode op);
void sroce_comp_init(struct sroce_qp *qp);
void sroce_comp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt);
bool sroce_comp_run(struct sroce_qp *qp);
void sroce_comp_arm(struct sroce_qp *qp);
void sroce_comp_time(struct sroce_qp *qp, u32 psn);
void sroce_comp_new_path(struct sroce_qp *qp);
void sroce_comp_timing(struct sroce_qp *qp, u32 *srtt_ms, u32 *retry_ms);
void sroce_wqe_release(struct sroce_send_wqe *wqe);

/* window.c - RC window control */
/*
 * The requester asks for an ACK at least every SROCE_ACK_EVERY packets,
 * and a QP's share of the window is never below that: when the share
 * shrinks under a QP, the packets it sent without asking for an ACK are
 * fewer than its share, so it may still send the one that asks.
 */
#define SROCE_ACK_EVERY		32
#define SROCE_WIN_MIN		SROCE_ACK_EVERY
u32 sroce_win_size(struct sroce_qp *qp);
u32 sroce_req_window(struct sroce_qp *qp);
void sroce_win_timeout(struct sroce_qp *qp);
void sroce_win_acked(struct sroce_qp *qp, u32 npkts);
void sroce_win_busy(struct sroce_qp *qp, bool busy);

/* resp.c - responder */
void sroce_resp_init(void);
void sroce_resp_exit(void);
void sroce_resp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt);
bool sroce_resp_tx(struct sroce_qp *qp, int budget);
void sroce_resp_ack_owed(struct sroce_qp *qp);
void sroce_resp_reset(struct sroce_qp *qp);
int sroce_resp_resize(struct sroce_qp *qp, struct sroce_rd_res **rd, u32 size);
u32 sroce_rd_ring_size(u8 max_dest_rd_atomic);
struct sroce_rd_res *sroce_rd_alloc(struct sroce_qp *qp);
bool sroce_rd_dup_replace(struct sroce_qp *qp, u32 psn);
void sroce_resp_flush_wqe(struct sroce_qp *qp);

/* counters.c */
struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num);
u64 sroce_counter(struct sroce_dev *sdev, enum sroce_counter c);
int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index);
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);

/* pma.c */
int sroce_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		      const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		      const struct ib_mad *in, struct ib_mad *out,
		      size_t *out_mad_size, u16 *out_mad_pkey_index);

/* post.c */
int sroce_queue_init(struct sroce_queue *q, u32 size, u32 stride, u32 max_sge);
void sroce_queue_free(struct sroce_queue *q);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int sroce_queue_post_recv(struct sroce_queue *q, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr);
void sroce_qp_flush(struct sroce_qp *qp);
void sroce_flush_wr(struct sroce_qp *qp, struct ib_cq *ibcq, u64 wr_id,
		    enum ib_wc_opcode opcode);
void sroce_uring_doorbell_err(struct sroce_qp *qp);
void sroce_uring_flush_stale(struct sroce_qp *qp, struct sroce_queue *q);

/* mr.c */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *sroce_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct sroce_mr *sroce_mr_alloc(struct sroce_dev *sdev, int access,
				enum sroce_mr_kind kind);
void sroce_mr_publish(struct sroce_dev *sdev, struct sroce_mr *mr);
void sroce_mr_abort(struct sroce_dev *sdev, struct sroce_mr *mr);
enum ib_wc_status sroce_mr_fast_reg(struct sroce_qp *qp,
				    const struct sroce_send_wqe *wqe);
enum ib_wc_status sroce_invalidate(struct sroce_qp *qp, u32 key, bool remote);

/* mw.c */
int sroce_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int sroce_dealloc_mw(struct ib_mw *ibmw);
enum ib_wc_status sroce_bind_mw(struct sroce_qp *qp,
				const struct sroce_send_wqe *wqe);
enum ib_wc_status sroce_mw_invalidate(struct sroce_qp *qp,
				      struct sroce_mr *win, u32 key,
				      bool remote);
void sroce_mw_qp_gone(struct sroce_qp *qp);

#endif /* SROCE_H */

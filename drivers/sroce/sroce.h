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
 *   post.c    work request queues (post_send/post_recv, flush)
 *   mr.c      memory regions
 *
 * Lock order (outermost first):
 *   sroce_dev_lock (main.c) is a leaf: nothing else is taken under it.
 *   qp->state_lock -> qp->sq.lock / qp->rq.lock -> cq->lock
 *   pool xarray locks are leaves.
 */
#ifndef SROCE_H
#define SROCE_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#define SROCE_DRV_NAME		"sroce"

/*
 * Device limits.  query_device reports exactly these and every create path
 * enforces them, so a ULP that sizes itself from query_device never fails.
 */
#define SROCE_MAX_QP		4096
#define SROCE_MAX_QP_WR		4096
#define SROCE_MAX_SGE		32
#define SROCE_MAX_SGE_RD	32
#define SROCE_MAX_CQ		4096
#define SROCE_MAX_CQE		32767
#define SROCE_MAX_MR		65536
#define SROCE_MAX_PD		4096
#define SROCE_MAX_AH		4096
#define SROCE_MAX_SRQ		1024
#define SROCE_MAX_SRQ_WR	4096
#define SROCE_MAX_INLINE	256
#define SROCE_MAX_RD_ATOMIC	16
#define SROCE_MAX_MR_SIZE	BIT_ULL(32)
#define SROCE_MAX_MSG_SIZE	BIT(31)
#define SROCE_PORT_GID_TBL_LEN	64
#define SROCE_MAX_FRMR_PAGES	512
#define SROCE_VENDOR_ID		0xffffff	/* no IEEE OUI: a software device */

/* The first QPN handed to an ordinary QP; 0 and 1 are QP0 and QP1 (GSI). */
#define SROCE_MIN_QPN		16
#define SROCE_MAX_QPN		((1U << 24) - 1)

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
	SROCE_OBJ_AH,
	SROCE_OBJ_MAX,
};

extern atomic_t sroce_live[SROCE_OBJ_MAX];
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
 * @sync_rcu: ib_core frees these objects without an RCU grace period, so
 *            removal waits for one
 */
struct sroce_pool {
	struct xarray xa;
	struct xa_limit limit;
	u32 next;
	atomic_t count;
	u32 max;
	bool sync_rcu;
};

/**
 * struct sroce_pool_elem - embedded in every indexed object
 * @ref: the object's references; the owner holds one
 * @done: completed when the last reference is gone
 * @id: the index (QPN, MR key index)
 * @rcu: for objects we free ourselves (kfree_rcu)
 */
struct sroce_pool_elem {
	struct kref ref;
	struct completion done;
	u32 id;
	struct rcu_head rcu;
};

struct sroce_dev {
	struct ib_device ibdev;
	struct list_head list;		/* sroce_dev_list, under sroce_dev_lock */
	struct net_device *ndev;	/* held (dev_hold) until dealloc_driver */
	bool registered;		/* under sroce_dev_lock */
	struct ib_device_attr attrs;	/* what query_device reports */

	struct sroce_pool qp_pool;
	struct sroce_pool mr_pool;
	atomic_t nr_pd, nr_cq, nr_srq, nr_ah;	/* against the device limits */
	atomic_t mr_key_byte;		/* the low byte of the next MR key */

	spinlock_t port_lock;		/* protects port_state, port_mtu */
	enum ib_port_state port_state;	/* last state reported to ib_core */
	int port_mtu;			/* last active MTU reported */
};

struct sroce_ucontext {
	struct ib_ucontext ibuc;
};

struct sroce_pd {
	struct ib_pd ibpd;
};

/**
 * struct sroce_cq - the completion layer's ring
 * @lock: protects everything below; taken by every QP that completes here
 * @queue: @size + 1 entries, one always empty to tell full from empty
 * @notify: the pending req_notify_cq request (0, or IB_CQ_SOLICITED /
 *          IB_CQ_NEXT_COMP)
 * @overflow: set once a completion was lost; the CQ is then in error
 *            (IBA 11.4.2.1: CQ overrun is an affiliated asynchronous error)
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
 * @sl: service level (802.1p priority)
 */
struct sroce_av {
	union ib_gid sgid;
	union ib_gid dgid;
	u8 dmac[ETH_ALEN];
	u8 net_type;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u32 flow_label;
};

struct sroce_ah {
	struct ib_ah ibah;
	struct sroce_av av;
};

struct sroce_mr {
	struct ib_mr ibmr;
	struct sroce_pool_elem elem;
	int access;
	struct ib_umem *umem;		/* user MRs only */
	u64 *pages;			/* fast-register MRs: the page list */
	u32 max_pages;
	u32 npages;
};

struct sroce_send_wqe {
	struct ib_send_wr wr;		/* sg_list points into @sge */
	struct ib_sge sge[];
};

struct sroce_recv_wqe {
	u64 wr_id;
	u32 num_sge;
	struct ib_sge sge[];
};

/**
 * struct sroce_queue - a work queue of fixed-size slots
 * @lock: protects the indexes and the slots
 * @buf: @size slots of @stride bytes
 * @max_sge: SGEs a WR may carry
 * @head: count of WRs consumed (free running; the slot is modulo @size)
 * @tail: count of WRs posted
 */
struct sroce_queue {
	spinlock_t lock;		/* see above */
	void *buf;
	u32 size;
	u32 stride;
	u32 max_sge;
	u32 head;
	u32 tail;
};

struct sroce_srq {
	struct ib_srq ibsrq;
	struct sroce_queue rq;
	u32 limit;			/* IB_SRQ_LIMIT, armed when non-zero */
};

struct sroce_qp {
	struct ib_qp ibqp;
	struct sroce_pool_elem elem;

	struct mutex state_lock;	/* serialises modify_qp and destroy */
	enum ib_qp_state state;		/* read locklessly on the data path */
	struct ib_qp_attr attr;		/* what modify_qp set, but the AV */
	struct sroce_av av;		/* the destination of RC/UC QPs */
	enum ib_sig_type sq_sig_type;

	struct sroce_queue sq;
	struct sroce_queue rq;
	u32 max_inline;
};

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

/* main.c */
int sroce_add_link(const char *ibdev_name, struct net_device *ndev);
void sroce_forget_device(struct sroce_dev *sdev);

/* device.c */
void sroce_init_device(struct sroce_dev *sdev);
int sroce_register_device(struct sroce_dev *sdev, const char *name);
void sroce_port_event(struct sroce_dev *sdev);
int sroce_active_mtu(const struct net_device *ndev);

/* pool.c - lifetime layer */
void sroce_pool_init(struct sroce_pool *pool, u32 min, u32 max, u32 count,
		     bool sync_rcu);
void sroce_pool_destroy(struct sroce_pool *pool);
int sroce_pool_add(struct sroce_pool *pool, struct sroce_pool_elem *elem);
int sroce_pool_add_id(struct sroce_pool *pool, struct sroce_pool_elem *elem,
		      u32 id);
struct sroce_pool_elem *sroce_pool_get(struct sroce_pool *pool, u32 id);
void sroce_pool_elem_put(struct sroce_pool_elem *elem);
void sroce_pool_remove(struct sroce_pool *pool, struct sroce_pool_elem *elem);

/* A QP by QPN, with a reference (a packet in flight holds its QP). */
static inline struct sroce_qp *sroce_qp_get(struct sroce_dev *sdev, u32 qpn)
{
	struct sroce_pool_elem *elem = sroce_pool_get(&sdev->qp_pool, qpn);

	return elem ? container_of(elem, struct sroce_qp, elem) : NULL;
}

static inline void sroce_qp_put(struct sroce_qp *qp)
{
	sroce_pool_elem_put(&qp->elem);
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
	if (mr->ibmr.lkey != key && mr->ibmr.rkey != key) {
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

/* qp.c */
int sroce_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int sroce_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int sroce_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int sroce_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* post.c */
int sroce_queue_init(struct sroce_queue *q, u32 size, u32 stride, u32 max_sge);
void sroce_queue_free(struct sroce_queue *q);
int sroce_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int sroce_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int sroce_queue_post_recv(struct sroce_queue *q, const struct ib_recv_wr *wr,
			  const struct ib_recv_wr **bad_wr);
void sroce_qp_flush(struct sroce_qp *qp);

/* mr.c */
struct ib_mr *sroce_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *sroce_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int sroce_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
struct ib_mr *sroce_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
int sroce_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* SROCE_H */

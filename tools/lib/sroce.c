// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libsroce-rdmav34.so: the libibverbs provider of sroce devices.
 *
 * libibverbs loads it through /etc/libibverbs.d/sroce.driver and matches
 * devices by the kernel's driver id (SROCE_DRIVER_ID), never by name.
 *
 * Queues are mapped (include/uapi/rdma/sroce-abi.h, SROCE_MAPPED): the
 * kernel writes completions into a ring this library maps, and
 * ibv_poll_cq reads them without a system call; ibv_post_recv and
 * ibv_post_srq_recv write receive WRs into rings the kernel takes them
 * from; ibv_post_send of an RC or UC QP writes its ring and makes a system
 * call (the doorbell) only when the kernel says its requester ran dry.  A queue
 * the kernel does not map (a UD SQ, an older kernel, or SROCE_MAPPED=0 in
 * the environment) goes through the uverbs commands.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/sroce-abi.h>

#include "verbs_provider.h"

/*
 * The kernel ABI (sroce-abi.h): sroce.ko and this library must agree on
 * these structures byte for byte, the commands and responses as well as
 * the mapped rings and their entries (of those with a flexible array, the
 * part before it).  A size that changes here is an ABI change: it needs
 * the kernel's side changed with it and a new SROCE_ABI_VERSION.  A CQ
 * ring holds struct ib_uverbs_wc, an SQ or RQ entry struct ib_uverbs_sge:
 * their sizes are part of the rings' layout too.
 */
_Static_assert(sizeof(struct sroce_create_cq_cmd) == 8, "kernel ABI");
_Static_assert(sizeof(struct sroce_create_cq_resp) == 16, "kernel ABI");
_Static_assert(sizeof(struct sroce_create_qp_cmd) == 8, "kernel ABI");
_Static_assert(sizeof(struct sroce_create_qp_resp) == 40, "kernel ABI");
_Static_assert(sizeof(struct sroce_create_srq_cmd) == 8, "kernel ABI");
_Static_assert(sizeof(struct sroce_create_srq_resp) == 24, "kernel ABI");
_Static_assert(sizeof(struct sroce_cq_ring) == 128, "kernel ABI");
_Static_assert(sizeof(struct sroce_wq_ring) == 128, "kernel ABI");
_Static_assert(sizeof(struct sroce_send_uwqe) == 56, "kernel ABI");
_Static_assert(sizeof(struct sroce_recv_uwqe) == 16, "kernel ABI");
_Static_assert(sizeof(struct ib_uverbs_wc) == 48, "kernel ABI");
_Static_assert(sizeof(struct ib_uverbs_sge) == 16, "kernel ABI");

struct sroce_device {
	struct verbs_device vdev;
};

struct sroce_context {
	struct verbs_context vctx;
};

struct sroce_cq {
	struct verbs_cq vcq;
	/* A mapped CQ: the ring, its size, and what we consumed. */
	struct sroce_cq_ring *ring;	/* NULL after a failed resize */
	int mapped;			/* made with a ring (fixed) */
	uint64_t *ts;			/* completion timestamps, or NULL */
	size_t ring_len;
	uint32_t entries;
	uint32_t cons;
	uint64_t cur_ts;		/* the current completion's timestamp */
	pthread_spinlock_t lock;	/* ibv_poll_cq may run in threads */
	/* ibv_start_poll(): the completion the read_* calls return. */
	struct ibv_wc cur;
};

/*
 * The ibv_wr_* work-request API (ibv_qp_ex): WRs are built here between
 * wr_start and wr_complete, then posted whole or not at all (ibv_wr_post(3):
 * "the entire posting will be aborted"): into the mapped SQ when all are
 * valid and fit, or over the uverbs command when the provider finds none
 * invalid (there the kernel may still find the SQ full part way).
 */
#define SROCE_MAX_SGE_USER	32	/* the kernel's SROCE_MAX_SGE */
#define SROCE_MAX_INLINE_USER	256	/* the kernel's SROCE_MAX_INLINE */

struct sroce_wr {
	struct ibv_send_wr wr;
	struct ibv_sge sge[SROCE_MAX_SGE_USER];
	uint8_t inl[SROCE_MAX_INLINE_USER];
};

/* A mapped work queue (struct sroce_wq_ring): an SQ, RQ or SRQ. */
struct sroce_wq {
	struct sroce_wq_ring *ring;	/* NULL: through the commands */
	size_t ring_len;
	uint32_t entries;
	uint32_t stride;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t prod;			/* entries written (ours) */
	pthread_spinlock_t lock;	/* posts may come from threads */
};

struct sroce_qp {
	struct verbs_qp vqp;
	struct sroce_wq sq;
	struct sroce_wq rq;
	/*
	 * The state as our modify_qp last set it.  Posting is refused in
	 * the states IBA 10.8.2 names; the states the kernel moves to by
	 * itself (SQE, Error) are handled there, through the doorbell.
	 */
	enum ibv_qp_state state;
	/*
	 * ibv_wr_start() to ibv_wr_complete()/abort() is one thread's at a
	 * time (ibv_wr_post(3), CONCURRENCY): @wr_lock, held between them.
	 */
	pthread_spinlock_t wr_lock;
	struct sroce_wr *wrs;		/* the batch being built */
	unsigned int nwr;
	unsigned int max_wr;
	int err;			/* the first error of the batch */
};

struct sroce_srq {
	struct ibv_srq srq;
	struct sroce_wq rq;
};

/* From the object libibverbs hands us to ours, which contains it. */
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline struct sroce_device *to_sdev(struct verbs_device *vdev)
{
	return container_of(vdev, struct sroce_device, vdev);
}

static inline struct sroce_context *to_sctx(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct sroce_context, vctx.context);
}

static inline struct sroce_cq *to_scq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct sroce_cq, vcq.cq);
}

static inline struct sroce_cq *cqx_to_scq(struct ibv_cq_ex *cqx)
{
	return container_of(cqx, struct sroce_cq, vcq.cq_ex);
}

static inline struct sroce_qp *to_sqp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct sroce_qp, vqp.qp);
}

static inline struct sroce_qp *qpx_to_sqp(struct ibv_qp_ex *qpx)
{
	return container_of(qpx, struct sroce_qp, vqp.qp_ex);
}

static inline struct sroce_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct sroce_srq, srq);
}

/* Commands and responses: the core one, then ours. */
struct sroce_cq_cmd {
	struct ibv_create_cq core;
	struct sroce_create_cq_cmd drv;
};

struct sroce_cq_resp {
	struct ib_uverbs_create_cq_resp core;
	struct sroce_create_cq_resp drv;
};

struct sroce_cq_ex_cmd {
	struct ibv_create_cq_ex core;
	struct sroce_create_cq_cmd drv;
};

struct sroce_cq_ex_resp {
	struct ib_uverbs_ex_create_cq_resp core;
	struct sroce_create_cq_resp drv;
};

/* ibv_resize_cq answers as ibv_create_cq does (a new ring). */
struct sroce_cq_resize_resp {
	struct ib_uverbs_resize_cq_resp core;
	struct sroce_create_cq_resp drv;
};

struct sroce_qp_cmd {
	struct ibv_create_qp core;
	struct sroce_create_qp_cmd drv;
};

struct sroce_qp_resp {
	struct ib_uverbs_create_qp_resp core;
	struct sroce_create_qp_resp drv;
};

struct sroce_srq_cmd {
	struct ibv_create_srq core;
	struct sroce_create_srq_cmd drv;
};

struct sroce_srq_resp {
	struct ib_uverbs_create_srq_resp core;
	struct sroce_create_srq_resp drv;
};

/*
 * Ask the kernel for mapped queues, unless the environment says
 * SROCE_MAPPED=0 (none) or SROCE_MAPPED=cq (CQs only): to compare, or to
 * test the command path.
 */
static uint32_t sroce_map_flags(int work_queue)
{
	const char *env = getenv("SROCE_MAPPED");

	if (env && (!strcmp(env, "0") || (work_queue && !strcmp(env, "cq"))))
		return 0;
	return SROCE_MAPPED;
}

static int sroce_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr,
				 size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	int err;

	err = ibv_cmd_query_device_any(ctx, input, attr, attr_size, &resp,
				       &resp_size);
	/* The kernel's number, as sysfs fw_ver prints it. */
	if (!err)
		snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
			 "%llu", (unsigned long long)resp.base.fw_ver);
	return err;
}

static int sroce_query_port(struct ibv_context *ctx, uint8_t port,
			    struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *sroce_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	err = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	return pd;
}

static int sroce_dealloc_pd(struct ibv_pd *pd)
{
	int err = ibv_cmd_dealloc_pd(pd);

	if (!err)
		free(pd);
	return err;
}

static struct ibv_mr *sroce_reg_mr(struct ibv_pd *pd, void *addr,
				   size_t length, uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int err;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	err = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(vmr);
		errno = err;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * The kernel registers the memory again as a new MR with new keys (what
 * is not changed is kept); libibverbs takes the keys from its answer and
 * updates the rest of the ibv_mr itself.
 */
static int sroce_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;
	int err;

	err = ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
			       access, pd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err)
		errno = err;
	return err;
}

static int sroce_dereg_mr(struct verbs_mr *vmr)
{
	int err = ibv_cmd_dereg_mr(vmr);

	if (!err)
		free(vmr);
	return err;
}

/*
 * Memory windows (IBA 10.6.7).  The kernel binds them from the SQ (a
 * mapped SQ only: the post_send command has no bind), so that a bind is
 * ordered with the WRs around it.
 */
static struct ibv_mw *sroce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

static int sroce_dealloc_mw(struct ibv_mw *mw)
{
	int err = ibv_cmd_dealloc_mw(mw);

	if (err)
		return err;
	free(mw);
	return 0;
}

/* A binding libibverbs' rules allow (the kernel checks it all again). */
static int sroce_bind_info_ok(const struct ibv_mw_bind_info *bi)
{
	if (!bi->mr && (bi->addr || bi->length))
		return EINVAL;
	/* Local write, the MR's right, is ignored as the kernel does. */
	if (bi->mw_access_flags & ~(unsigned int)(IBV_ACCESS_REMOTE_WRITE |
						   IBV_ACCESS_REMOTE_READ |
						   IBV_ACCESS_REMOTE_ATOMIC |
						   IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;	/* zero-based windows are not offered */
	return 0;
}

static int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad);

/*
 * ibv_bind_mw binds a type 1 window: one IBV_WR_BIND_MW WR with the next
 * rkey.  mw->rkey takes the new rkey once the WR is posted, for a posted
 * IBV_WR_BIND_MW too; the completion tells whether the bind took effect.
 */
static int sroce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
			 struct ibv_mw_bind *mb)
{
	struct ibv_send_wr wr = {}, *bad;
	int err;

	if (mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd)
		return EINVAL;
	err = sroce_bind_info_ok(&mb->bind_info);
	if (err)
		return err;
	wr.wr_id = mb->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mb->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mb->bind_info;
	return sroce_post_send(qp, &wr, &bad);
}

/* Map the ring the kernel made for @cq; false if it cannot be. */
static int sroce_cq_map(struct ibv_context *ctx, struct sroce_cq *cq,
			const struct sroce_create_cq_resp *drv)
{
	long page = sysconf(_SC_PAGESIZE);
	int ts = !!(drv->flags & SROCE_CQ_TIMESTAMPS);
	size_t len = sizeof(struct sroce_cq_ring) +
		     (size_t)drv->entries * (sizeof(struct ib_uverbs_wc) +
					     (ts ? sizeof(uint64_t) : 0));
	void *p;

	/* A power of two: the free-running indexes wrap onto the same slots. */
	if (!drv->entries || (drv->entries & (drv->entries - 1)))
		return EINVAL;
	len = (len + page - 1) & ~(size_t)(page - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 (off_t)drv->mmap_offset);
	if (p == MAP_FAILED)
		return errno;
	cq->ring = p;
	cq->ts = ts ? (uint64_t *)&cq->ring->cqe[drv->entries] : NULL;
	cq->ring_len = len;
	cq->entries = drv->entries;
	cq->cons = 0;
	return 0;
}

/* A CQ of ours, its poll lock ready; NULL with errno set. */
static struct sroce_cq *sroce_cq_new(void)
{
	struct sroce_cq *cq = calloc(1, sizeof(*cq));
	int err;

	if (!cq)
		return NULL;
	err = pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	if (err) {
		free(cq);
		errno = err;
		return NULL;
	}
	return cq;
}

static void sroce_cq_free(struct sroce_cq *cq)
{
	pthread_spin_destroy(&cq->lock);
	free(cq);
}

/*
 * The kernel made @cq (@err from its command): map its ring if it has
 * one.  On failure the kernel's CQ is destroyed, @cq freed, errno set.
 */
static int sroce_cq_ready(struct ibv_context *ctx, struct sroce_cq *cq,
			  int err, const struct sroce_create_cq_resp *drv)
{
	if (!err && (drv->flags & SROCE_MAPPED)) {
		err = sroce_cq_map(ctx, cq, drv);
		if (err)
			ibv_cmd_destroy_cq(&cq->vcq.cq);
		cq->mapped = 1;
	}
	if (err) {
		sroce_cq_free(cq);
		errno = err;
	}
	return err;
}

static struct ibv_cq *sroce_create_cq(struct ibv_context *ctx, int cqe,
				      struct ibv_comp_channel *channel,
				      int comp_vector)
{
	struct sroce_cq_resp resp = {};
	struct sroce_cq_cmd cmd = { .drv.flags = sroce_map_flags(0) };
	struct sroce_cq *cq = sroce_cq_new();
	int err;

	if (!cq)
		return NULL;
	err = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.core, sizeof(cmd), &resp.core,
				sizeof(resp));
	if (sroce_cq_ready(ctx, cq, err, &resp.drv))
		return NULL;
	return &cq->vcq.cq;
}

/*
 * The kernel's completion flags (enum ib_wc_flags), as uverbs passes them
 * on, into libibverbs' (enum ibv_wc_flags): the two agree on GRH and
 * WITH_IMM only.  The kernel's WITH_INVALIDATE (bit 2) is IBV_WC_WITH_INV
 * (bit 3) and its IP_CSUM_OK (bit 3) IBV_WC_IP_CSUM_OK (bit 2); its SMAC,
 * VLAN and network header type bits would read as tag-matching flags and
 * are the kernel's own.
 */
#define SROCE_KWC_WITH_INVALIDATE	(1u << 2)
#define SROCE_KWC_IP_CSUM_OK		(1u << 3)

static unsigned int sroce_wc_flags(unsigned int k)
{
	unsigned int f = k & (IBV_WC_GRH | IBV_WC_WITH_IMM);

	if (k & SROCE_KWC_WITH_INVALIDATE)
		f |= IBV_WC_WITH_INV;
	if (k & SROCE_KWC_IP_CSUM_OK)
		f |= IBV_WC_IP_CSUM_OK;
	return f;
}

/* One completion of a mapped ring, as the process sees it. */
static void sroce_wc_read(struct ibv_wc *w, const struct ib_uverbs_wc *u)
{
	w->wr_id = u->wr_id;
	w->status = u->status;
	w->opcode = u->opcode;
	w->vendor_err = u->vendor_err;
	w->byte_len = u->byte_len;
	w->imm_data = u->ex.imm_data;	/* or invalidated_rkey */
	w->qp_num = u->qp_num;
	w->src_qp = u->src_qp;
	w->wc_flags = sroce_wc_flags(u->wc_flags);
	w->pkey_index = u->pkey_index;
	w->slid = u->slid;
	w->sl = u->sl;
	w->dlid_path_bits = u->dlid_path_bits;
}

/*
 * The kernel's producer index (acquire: the completions before it as the
 * kernel wrote them), at most a ring ahead of ours: one further could
 * only come from a thread that scribbled over the shared page, and would
 * have a poll hand out the same slots again, or a clean walk 2^32 of them.
 */
static uint32_t sroce_cq_producer(struct sroce_cq *cq)
{
	uint32_t prod = __atomic_load_n(&cq->ring->producer, __ATOMIC_ACQUIRE);

	return prod - cq->cons > cq->entries ? cq->cons + cq->entries : prod;
}

/*
 * ibv_poll_cq of a mapped CQ: the completions the kernel published before
 * its producer index (acquire), then our consumer index (release), which
 * tells the kernel those slots are free.
 */
static int sroce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct sroce_cq *cq = to_scq(ibcq);
	uint32_t prod;
	int n, i;

	if (cq->mapped) {
		pthread_spin_lock(&cq->lock);
		if (cq->ring) {	/* a resize may have failed meanwhile */
			prod = sroce_cq_producer(cq);
			for (n = 0; n < ne && cq->cons != prod; n++, cq->cons++)
				sroce_wc_read(&wc[n], &cq->ring->cqe[cq->cons %
								     cq->entries]);
			if (n)
				__atomic_store_n(&cq->ring->consumer, cq->cons,
						 __ATOMIC_RELEASE);
			pthread_spin_unlock(&cq->lock);
			return n;
		}
		pthread_spin_unlock(&cq->lock);
	}
	n = ibv_cmd_poll_cq(ibcq, ne, wc);
	for (i = 0; i < n; i++)
		wc[i].wc_flags = sroce_wc_flags(wc[i].wc_flags);
	return n;
}

/*
 * The extended CQ (ibv_create_cq_ex): ibv_start_poll() takes the CQ's lock
 * and makes the oldest completion current, ibv_next_poll() the next one,
 * the read_* calls read the current one, and ibv_end_poll() gives the
 * slots taken back to the kernel (the consumer index) and unlocks.  An
 * empty CQ at ibv_start_poll() returns ENOENT with the lock released: the
 * caller must not call ibv_end_poll() then.
 */
#define SROCE_WC_TS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
		     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define SROCE_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			IBV_WC_EX_WITH_DLID_PATH_BITS | SROCE_WC_TS)

/* Make the next completion current; ENOENT if there is none. */
static int sroce_cq_take(struct sroce_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	if (cq->ring) {
		uint32_t prod = sroce_cq_producer(cq);

		if (cq->cons == prod)
			return ENOENT;
		sroce_wc_read(&cq->cur, &cq->ring->cqe[cq->cons % cq->entries]);
		if (cq->ts)
			cq->cur_ts = cq->ts[cq->cons % cq->entries];
		cq->cons++;
	} else {
		int n = ibv_cmd_poll_cq(&cq->vcq.cq, 1, &cq->cur);

		if (n != 1)
			return n < 0 ? errno : ENOENT;
		cq->cur.wc_flags = sroce_wc_flags(cq->cur.wc_flags);
	}
	cqx->wr_id = cq->cur.wr_id;
	cqx->status = cq->cur.status;
	return 0;
}

static void sroce_end_poll(struct ibv_cq_ex *cqx)
{
	struct sroce_cq *cq = cqx_to_scq(cqx);

	if (cq->ring)
		__atomic_store_n(&cq->ring->consumer, cq->cons,
				 __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
}

static int sroce_start_poll(struct ibv_cq_ex *cqx,
			    struct ibv_poll_cq_attr *attr)
{
	struct sroce_cq *cq = cqx_to_scq(cqx);
	int err;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	err = sroce_cq_take(cq);
	if (err)
		pthread_spin_unlock(&cq->lock);
	return err;
}

static int sroce_next_poll(struct ibv_cq_ex *cqx)
{
	return sroce_cq_take(cqx_to_scq(cqx));
}

static enum ibv_wc_opcode sroce_read_opcode(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.opcode;
}

static uint32_t sroce_read_vendor_err(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.vendor_err;
}

static uint32_t sroce_read_byte_len(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.byte_len;
}

/* Also ibv_wc_read_invalidated_rkey(): the same field. */
static __be32 sroce_read_imm_data(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.imm_data;
}

static uint32_t sroce_read_qp_num(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.qp_num;
}

static uint32_t sroce_read_src_qp(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.src_qp;
}

static unsigned int sroce_read_wc_flags(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.wc_flags;
}

static uint32_t sroce_read_slid(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.slid;
}

static uint8_t sroce_read_sl(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.sl;
}

static uint8_t sroce_read_dlid_path_bits(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur.dlid_path_bits;
}

/*
 * Completion timestamps (sroce-abi.h): the kernel's CLOCK_MONOTONIC in ns
 * when it wrote the completion, a 1 GHz device clock.  The wall clock
 * time adds the offset between the two clocks now (an NTP step between
 * the completion and the read moves it, as on hardware clocks).
 */
static uint64_t sroce_read_completion_ts(struct ibv_cq_ex *cqx)
{
	return cqx_to_scq(cqx)->cur_ts;
}

static uint64_t sroce_clock_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t sroce_read_completion_wallclock_ns(struct ibv_cq_ex *cqx)
{
	uint64_t mono = sroce_clock_ns(CLOCK_MONOTONIC);

	return cqx_to_scq(cqx)->cur_ts + (sroce_clock_ns(CLOCK_REALTIME) - mono);
}

/*
 * ibv_query_rt_values_ex: the device clock now, as mlx5 reports its
 * cycles (all in tv_nsec), so that it compares with completion
 * timestamps.
 */
static int sroce_query_rt_values(struct ibv_context *ctx,
				 struct ibv_values_ex *values)
{
	uint32_t mask = values->comp_mask;

	values->comp_mask = 0;
	if (mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = sroce_clock_ns(CLOCK_MONOTONIC);
		values->comp_mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	return 0;
}

static void sroce_cq_ex_init(struct sroce_cq *cq)
{
	struct ibv_cq_ex *cqx = &cq->vcq.cq_ex;

	cqx->start_poll = sroce_start_poll;
	cqx->next_poll = sroce_next_poll;
	cqx->end_poll = sroce_end_poll;
	cqx->read_opcode = sroce_read_opcode;
	cqx->read_vendor_err = sroce_read_vendor_err;
	cqx->read_byte_len = sroce_read_byte_len;
	cqx->read_imm_data = sroce_read_imm_data;
	cqx->read_qp_num = sroce_read_qp_num;
	cqx->read_src_qp = sroce_read_src_qp;
	cqx->read_wc_flags = sroce_read_wc_flags;
	cqx->read_slid = sroce_read_slid;
	cqx->read_sl = sroce_read_sl;
	cqx->read_dlid_path_bits = sroce_read_dlid_path_bits;
	cqx->read_completion_ts = sroce_read_completion_ts;
	cqx->read_completion_wallclock_ns = sroce_read_completion_wallclock_ns;
}

/*
 * Every flag the device can honour is taken; what it lacks is refused:
 * VLAN, flow tag and tag matching fields, a parent domain, and
 * IGNORE_OVERRUN (an overrun is reported, IBA 11.4.2.1).  Completion
 * timestamps need the mapped ring (the poll command carries none): the
 * kernel refuses them without it (SROCE_MAPPED=0), with EOPNOTSUPP.
 */
static int sroce_destroy_cq(struct ibv_cq *ibcq);

static struct ibv_cq_ex *sroce_create_cq_ex(struct ibv_context *ctx,
					    struct ibv_cq_init_attr_ex *attr)
{
	struct sroce_cq_ex_cmd cmd = { .drv.flags = sroce_map_flags(0) };
	struct sroce_cq_ex_resp resp = {};
	struct sroce_cq *cq;
	int err = EOPNOTSUPP;

	if (attr->wc_flags & ~(uint64_t)SROCE_WC_FLAGS)
		goto err;
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD))
		goto err;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		goto err;
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    attr->parent_domain)
		goto err;
	cq = sroce_cq_new();
	if (!cq)
		return NULL;
	/*
	 * libibverbs asks for timestamps from wc_flags itself; the last
	 * argument is its own flag (timestamps may be ignored over the
	 * legacy command), which they may not.
	 */
	err = ibv_cmd_create_cq_ex(ctx, attr, &cq->vcq, &cmd.core, sizeof(cmd),
				   &resp.core, sizeof(resp), 0);
	if (sroce_cq_ready(ctx, cq, err, &resp.drv))
		return NULL;
	/* Timestamps asked and granted, or the CQ is no use. */
	if ((attr->wc_flags & SROCE_WC_TS) && !cq->ts) {
		sroce_destroy_cq(&cq->vcq.cq);
		errno = EOPNOTSUPP;
		return NULL;
	}
	sroce_cq_ex_init(cq);
	return &cq->vcq.cq_ex;

err:
	errno = err;
	return NULL;
}

/*
 * A mapped CQ moves to a new ring (the kernel copied what we had not
 * polled to its start): map it, then unmap the old one.  Under the poll
 * lock: no poll reads a ring in between.
 */
static int sroce_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sroce_cq *cq = to_scq(ibcq);
	struct sroce_cq_resize_resp resp = {};
	struct sroce_cq_ring *old;
	struct ibv_resize_cq cmd;
	size_t old_len;
	int err;

	pthread_spin_lock(&cq->lock);
	/* Read under the lock: two resizes must not both unmap one ring. */
	old = cq->ring;
	old_len = cq->ring_len;
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd, sizeof(cmd), &resp.core,
				sizeof(resp));
	if (!err && cq->mapped) {	/* after a failed remap too */
		err = sroce_cq_map(ibcq->context, cq, &resp.drv);
		if (old)
			munmap(old, old_len);
		/*
		 * The kernel writes only the new ring now: without it, polls
		 * go to the kernel and fail (EOPNOTSUPP) rather than find the
		 * CQ empty for ever.
		 */
		if (err)
			cq->ring = NULL;
	}
	pthread_spin_unlock(&cq->lock);
	return err;
}

static int sroce_destroy_cq(struct ibv_cq *ibcq)
{
	struct sroce_cq *cq = to_scq(ibcq);
	int err = ibv_cmd_destroy_cq(ibcq);

	if (err)
		return err;
	if (cq->ring)
		munmap(cq->ring, cq->ring_len);
	sroce_cq_free(cq);
	return 0;
}

/*
 * Mapped work queues.  An entry is written, then the producer index (a
 * release store); the kernel's consumer index says which slots are free.
 */
static int sroce_wq_map(struct ibv_context *ctx, struct sroce_wq *wq,
			uint64_t offset, uint32_t entries, uint32_t stride,
			size_t min_stride)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	void *p;

	/* A power of two: the free-running indexes wrap onto the same slots. */
	if (!entries || (entries & (entries - 1)) || stride < min_stride ||
	    stride % 8)
		return EINVAL;
	len = sizeof(struct sroce_wq_ring) + (size_t)entries * stride;
	len = (len + page - 1) & ~(size_t)(page - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		 (off_t)offset);
	if (p == MAP_FAILED)
		return errno;
	wq->ring = p;
	wq->ring_len = len;
	wq->entries = entries;
	wq->stride = stride;
	wq->prod = 0;
	return 0;
}

static void sroce_wq_unmap(struct sroce_wq *wq)
{
	if (wq->ring)
		munmap(wq->ring, wq->ring_len);
	wq->ring = NULL;
}

static void *sroce_wq_slot(struct sroce_wq *wq, uint32_t index)
{
	return (char *)wq->ring->slot +
	       (size_t)(index & (wq->entries - 1)) * wq->stride;
}

static int sroce_wq_full(struct sroce_wq *wq)
{
	uint32_t cons = __atomic_load_n(&wq->ring->consumer, __ATOMIC_ACQUIRE);

	return wq->prod - cons >= wq->entries;
}

/*
 * Publish what was written; true if the kernel asks for a doorbell.  The
 * fence orders our producer store before the load of its flag, as the
 * kernel orders its flag store before its look at our producer.
 */
static int sroce_wq_publish(struct sroce_wq *wq)
{
	__atomic_store_n(&wq->ring->producer, wq->prod, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&wq->ring->doorbell, __ATOMIC_RELAXED) != 0;
}

/* Is @wr one the QP can carry?  The kernel checks again (sroce_wr_ok). */
static int sroce_send_wr_ok(struct sroce_qp *qp, const struct ibv_send_wr *wr,
			    uint32_t *inline_len)
{
	int rc = qp->vqp.qp.qp_type == IBV_QPT_RC;
	uint64_t len = 0;
	int i;

	switch (wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (!rc)
			return EINVAL;
		break;
	case IBV_WR_ATOMIC_WRITE:
		/* The 8 bytes to write: one SGE, read when posted (inline). */
		if (!rc || (wr->send_flags & IBV_SEND_INLINE) ||
		    wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		return 0;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw || (wr->send_flags & IBV_SEND_INLINE) ||
		    wr->bind_mw.mw->pd != qp->vqp.qp.pd)
			return EINVAL;
		return sroce_bind_info_ok(&wr->bind_mw.bind_info);
	default:
		return EINVAL;
	}
	/* Inline or not, as the command path and rdma_rxe check it. */
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (wr->opcode == IBV_WR_RDMA_READ ||
		    wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    len > qp->sq.max_inline)
			return EINVAL;
		*inline_len = len;
		return 0;
	}
	/* IBA 9.4.5: an atomic carries 8 bytes back. */
	if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	     wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) && len != 8)
		return EINVAL;
	return 0;
}

static int sroce_sq_write(struct sroce_qp *qp, struct ibv_send_wr *wr)
{
	struct sroce_send_uwqe *u;
	uint32_t inline_len = 0;
	int err, i;

	err = sroce_send_wr_ok(qp, wr, &inline_len);
	if (err)
		return err;
	if (sroce_wq_full(&qp->sq))
		return ENOMEM;
	u = sroce_wq_slot(&qp->sq, qp->sq.prod);
	u->wr_id = wr->wr_id;
	u->opcode = wr->opcode;
	u->send_flags = wr->send_flags;
	u->ex = wr->opcode == IBV_WR_SEND_WITH_INV ||
		wr->opcode == IBV_WR_LOCAL_INV ? wr->invalidate_rkey :
						 wr->imm_data;
	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

		u->ex = wr->bind_mw.mw->rkey;
		u->rkey = wr->bind_mw.rkey;
		u->bind.addr = bi->addr;
		u->bind.length = bi->length;
		u->bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
		u->bind.access = bi->mw_access_flags;
		u->num_sge = 0;
		u->inline_len = 0;
		qp->sq.prod++;
		/* The window's rkey from now on, if the bind succeeds. */
		wr->bind_mw.mw->rkey = wr->bind_mw.rkey;
		return 0;
	}
	if (wr->opcode == IBV_WR_ATOMIC_WRITE) {
		u->remote_addr = wr->wr.rdma.remote_addr;
		u->rkey = wr->wr.rdma.rkey;
		memcpy(&u->swap, (void *)(uintptr_t)wr->sg_list[0].addr, 8);
		u->num_sge = 0;
		u->inline_len = 0;
		qp->sq.prod++;
		return 0;
	}
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		u->remote_addr = wr->wr.atomic.remote_addr;
		u->rkey = wr->wr.atomic.rkey;
		u->compare_add = wr->wr.atomic.compare_add;
		u->swap = wr->wr.atomic.swap;
	} else {
		u->remote_addr = wr->wr.rdma.remote_addr;
		u->rkey = wr->wr.rdma.rkey;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		char *p = (char *)u->sge;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			p += wr->sg_list[i].length;
		}
		u->inline_len = inline_len;
		u->num_sge = 0;
	} else {
		for (i = 0; i < wr->num_sge; i++) {
			u->sge[i].addr = wr->sg_list[i].addr;
			u->sge[i].length = wr->sg_list[i].length;
			u->sge[i].lkey = wr->sg_list[i].lkey;
		}
		u->num_sge = wr->num_sge;
		u->inline_len = 0;
	}
	qp->sq.prod++;
	return 0;
}

/*
 * The first WR of a list for the uverbs command that the kernel would
 * refuse or libibverbs could not even pass (it reads a UD WR's AH, and
 * copies num_sge entries), with its error in @err; NULL if none.  The
 * command has no bind: the mapped SQ carries those.
 */
static struct ibv_send_wr *sroce_cmd_send_bad(struct sroce_qp *qp,
					      struct ibv_send_wr *wr, int *err)
{
	int ud = qp->vqp.qp.qp_type == IBV_QPT_UD;

	for (; wr; wr = wr->next) {
		*err = EINVAL;
		if (wr->opcode == IBV_WR_BIND_MW) {
			*err = EOPNOTSUPP;
			return wr;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
			return wr;
		if (ud && (!wr->wr.ud.ah || (wr->opcode != IBV_WR_SEND &&
					     wr->opcode != IBV_WR_SEND_WITH_IMM)))
			return wr;
	}
	return NULL;
}

/*
 * Post @wr over the uverbs command.  ibv_post_send(3): the WRs before the
 * first bad one are posted, *@bad is that one; with @all (ibv_wr_complete())
 * none is.  The kernel may still refuse one further on (a full SQ).
 */
static int sroce_cmd_post_send(struct sroce_qp *qp, struct ibv_send_wr *wr,
			       struct ibv_send_wr **bad, int all)
{
	struct ibv_send_wr *first_bad, *prev;
	int err = 0, ret;

	first_bad = sroce_cmd_send_bad(qp, wr, &err);
	if (!first_bad)
		return ibv_cmd_post_send(&qp->vqp.qp, wr, bad);
	if (first_bad != wr && !all) {
		for (prev = wr; prev->next != first_bad; prev = prev->next)
			;
		prev->next = NULL;	/* the list up to it, for a moment */
		ret = ibv_cmd_post_send(&qp->vqp.qp, wr, bad);
		prev->next = first_bad;
		if (ret)
			return ret;
	}
	*bad = first_bad;
	return err;
}

/*
 * Write @wr into the mapped SQ, under its lock.  With @all, every WR is
 * checked and the room for all of them is, before any is written: a
 * batch of ibv_wr_complete() goes whole or not at all (ibv_wr_post(3)).
 */
static int sroce_sq_post(struct sroce_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad, int all)
{
	struct ibv_send_wr *w;
	uint32_t n = 0, inl, cons;
	int err;

	if (all) {
		for (w = wr; w; w = w->next, n++) {
			err = sroce_send_wr_ok(qp, w, &inl);
			if (err) {
				*bad = w;
				return err;
			}
		}
		cons = __atomic_load_n(&qp->sq.ring->consumer,
				       __ATOMIC_ACQUIRE);
		if (qp->sq.entries - (qp->sq.prod - cons) < n) {
			*bad = wr;
			return ENOMEM;
		}
	}
	for (; wr; wr = wr->next) {
		err = sroce_sq_write(qp, wr);
		if (err) {
			*bad = wr;
			return err;
		}
	}
	return 0;
}

/*
 * ibv_post_send: an RC or UC QP writes its mapped SQ and rings the doorbell
 * (an empty post_send command) only when the kernel asked for one.
 */
static int __sroce_post_send(struct sroce_qp *qp, struct ibv_send_wr *wr,
			     struct ibv_send_wr **bad, int all)
{
	struct ibv_send_wr *none;
	uint32_t start;
	int err, db = 0;

	if (!qp->sq.ring)
		return sroce_cmd_post_send(qp, wr, bad, all);
	/* IBA 10.8.2: no posting to an SQ before RTS. */
	if (__atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) < IBV_QPS_RTS) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->sq.lock);
	start = qp->sq.prod;
	err = sroce_sq_post(qp, wr, bad, all);
	if (qp->sq.prod != start)
		db = sroce_wq_publish(&qp->sq);
	pthread_spin_unlock(&qp->sq.lock);
	/* The WRs are queued: a failed doorbell shows in their completions. */
	if (db)
		ibv_cmd_post_send(&qp->vqp.qp, NULL, &none);
	return err;
}

static int sroce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			   struct ibv_send_wr **bad)
{
	return __sroce_post_send(to_sqp(ibqp), wr, bad, 0);
}

/*
 * The first receive WR that the command would refuse or libibverbs could
 * not pass (it copies num_sge entries); *@prev the one before it, if any.
 */
static struct ibv_recv_wr *sroce_recv_bad(struct ibv_recv_wr *wr,
					  uint32_t max_sge,
					  struct ibv_recv_wr **prev)
{
	for (*prev = NULL; wr; *prev = wr, wr = wr->next)
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
			return wr;
	return NULL;
}

/* Write receive WRs into a mapped RQ or SRQ; true if a doorbell is due. */
static int sroce_rq_write(struct sroce_wq *wq, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad, int *db)
{
	uint32_t start = wq->prod;
	int err = 0, i;

	for (; wr; wr = wr->next) {
		struct sroce_recv_uwqe *u;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = EINVAL;
		} else if (sroce_wq_full(wq)) {
			err = ENOMEM;
		}
		if (err) {
			*bad = wr;
			break;
		}
		u = sroce_wq_slot(wq, wq->prod);
		u->wr_id = wr->wr_id;
		u->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			u->sge[i].addr = wr->sg_list[i].addr;
			u->sge[i].length = wr->sg_list[i].length;
			u->sge[i].lkey = wr->sg_list[i].lkey;
		}
		wq->prod++;
	}
	if (wq->prod != start)
		*db = sroce_wq_publish(wq);
	return err;
}

/*
 * ibv_post_recv: no system call, but in Error (the kernel's doorbell
 * flag), where the doorbell has the WRs complete flushed (IBA 10.3.1).
 */
static int sroce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr **bad)
{
	struct sroce_qp *qp = to_sqp(ibqp);
	struct ibv_recv_wr *none;
	int err, db = 0;

	if (!qp->rq.ring) {
		struct ibv_recv_wr *first_bad, *prev;

		first_bad = sroce_recv_bad(wr, qp->rq.max_sge, &prev);
		if (!first_bad)
			return ibv_cmd_post_recv(ibqp, wr, bad);
		if (prev) {	/* ibv_post_recv(3): those before it go */
			prev->next = NULL;
			err = ibv_cmd_post_recv(ibqp, wr, bad);
			prev->next = first_bad;
			if (err)
				return err;
		}
		*bad = first_bad;
		return EINVAL;
	}
	/* IBA 10.8.2: no posting to an RQ in RESET. */
	if (__atomic_load_n(&qp->state, __ATOMIC_ACQUIRE) == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq.lock);
	err = sroce_rq_write(&qp->rq, wr, bad, &db);
	pthread_spin_unlock(&qp->rq.lock);
	if (db)
		ibv_cmd_post_recv(ibqp, NULL, &none);
	return err;
}

static int sroce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			       struct ibv_recv_wr **bad)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	struct ibv_recv_wr *none;
	int err, db = 0;

	if (!srq->rq.ring) {
		struct ibv_recv_wr *first_bad, *prev;

		first_bad = sroce_recv_bad(wr, srq->rq.max_sge, &prev);
		if (!first_bad)
			return ibv_cmd_post_srq_recv(ibsrq, wr, bad);
		if (prev) {
			prev->next = NULL;
			err = ibv_cmd_post_srq_recv(ibsrq, wr, bad);
			prev->next = first_bad;
			if (err)
				return err;
		}
		*bad = first_bad;
		return EINVAL;
	}
	pthread_spin_lock(&srq->rq.lock);
	err = sroce_rq_write(&srq->rq, wr, bad, &db);
	pthread_spin_unlock(&srq->rq.lock);
	if (db)
		ibv_cmd_post_srq_recv(ibsrq, NULL, &none);
	return err;
}

/* A new WR of the batch, with the fields every opcode sets. */
static struct ibv_send_wr *sroce_wr_new(struct ibv_qp_ex *qpx,
					enum ibv_wr_opcode opcode)
{
	struct sroce_qp *qp = qpx_to_sqp(qpx);
	struct sroce_wr *w;

	if (qp->err)
		return NULL;
	if (qp->nwr == qp->max_wr) {
		qp->err = ENOMEM;	/* more than the SQ can hold */
		return NULL;
	}
	w = &qp->wrs[qp->nwr++];
	memset(&w->wr, 0, sizeof(w->wr));
	w->wr.wr_id = qpx->wr_id;
	w->wr.send_flags = qpx->wr_flags;
	w->wr.opcode = opcode;
	w->wr.sg_list = w->sge;
	return &w->wr;
}

/* The WR the wr_set_* calls complete: the last one started. */
static struct sroce_wr *sroce_wr_cur(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sqp(qpx);

	if (qp->err || !qp->nwr) {
		if (!qp->err)
			qp->err = EINVAL;
		return NULL;
	}
	return &qp->wrs[qp->nwr - 1];
}

static void sroce_wr_start(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sqp(qpx);

	pthread_spin_lock(&qp->wr_lock);
	qp->nwr = 0;
	qp->err = 0;
}

static int sroce_wr_complete(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sqp(qpx);
	struct ibv_send_wr *bad;
	unsigned int i;
	int err = qp->err;

	if (!err && qp->nwr) {
		for (i = 0; i + 1 < qp->nwr; i++)
			qp->wrs[i].wr.next = &qp->wrs[i + 1].wr;
		qp->wrs[qp->nwr - 1].wr.next = NULL;
		err = __sroce_post_send(qp, &qp->wrs[0].wr, &bad, 1);
	}
	qp->nwr = 0;
	qp->err = 0;
	pthread_spin_unlock(&qp->wr_lock);
	return err;
}

static void sroce_wr_abort(struct ibv_qp_ex *qpx)
{
	struct sroce_qp *qp = qpx_to_sqp(qpx);

	qp->nwr = 0;
	qp->err = 0;
	pthread_spin_unlock(&qp->wr_lock);
}

static void sroce_wr_send(struct ibv_qp_ex *qpx)
{
	sroce_wr_new(qpx, IBV_WR_SEND);
}

static void sroce_wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void sroce_wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

static void sroce_wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			  uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
	wr->imm_data = imm;
}

static void sroce_wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t addr)
{
	sroce_wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void sroce_wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
				    uint64_t addr, __be32 imm)
{
	sroce_wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void sroce_wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t addr)
{
	sroce_wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void sroce_wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
			    uint32_t rkey, uint64_t addr, uint64_t cmp_add,
			    uint64_t swap)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.compare_add = cmp_add;
	wr->wr.atomic.swap = swap;
}

static void sroce_wr_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			     uint64_t addr, uint64_t cmp, uint64_t swap)
{
	sroce_wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, cmp, swap);
}

static void sroce_wr_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
			       uint64_t addr, uint64_t add)
{
	sroce_wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void sroce_wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = rkey;
}

/*
 * RDMA Atomic Write (IBA 1.5): the 8 bytes are copied into the WR's own
 * buffer now (as inline data), its one SGE.
 */
static void sroce_wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
				  uint64_t addr, const void *data)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, IBV_WR_ATOMIC_WRITE);
	struct sroce_wr *w;

	if (!wr)
		return;
	w = sroce_wr_cur(qpx);
	memcpy(w->inl, data, 8);
	w->sge[0] = (struct ibv_sge){ (uintptr_t)w->inl, 8, 0 };
	wr->num_sge = 1;
	wr->wr.rdma.remote_addr = addr;
	wr->wr.rdma.rkey = rkey;
}

static void sroce_wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
			     uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct ibv_send_wr *wr = sroce_wr_new(qpx, IBV_WR_BIND_MW);

	if (wr) {
		wr->bind_mw.mw = mw;
		wr->bind_mw.rkey = rkey;
		wr->bind_mw.bind_info = *bi;
	}
}

static void sroce_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
				 uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct sroce_wr *w = sroce_wr_cur(qpx);

	if (!w)
		return;
	w->wr.wr.ud.ah = ah;
	w->wr.wr.ud.remote_qpn = remote_qpn;
	w->wr.wr.ud.remote_qkey = remote_qkey;
}

static void sroce_wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
				  const struct ibv_sge *sg_list)
{
	struct sroce_wr *w = sroce_wr_cur(qpx);

	if (!w)
		return;
	if (num_sge > SROCE_MAX_SGE_USER) {
		qpx_to_sqp(qpx)->err = EINVAL;
		return;
	}
	memcpy(w->sge, sg_list, num_sge * sizeof(*sg_list));
	w->wr.num_sge = num_sge;
}

static void sroce_wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey,
			     uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	sroce_wr_set_sge_list(qpx, 1, &sge);
}

/* Inline data is copied now: the caller may reuse its buffers at once. */
static void sroce_wr_set_inline_data_list(struct ibv_qp_ex *qpx,
					  size_t num_buf,
					  const struct ibv_data_buf *buf)
{
	struct sroce_wr *w = sroce_wr_cur(qpx);
	size_t i, n = 0;

	if (!w)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf[i].length > sizeof(w->inl) - n) {
			qpx_to_sqp(qpx)->err = EINVAL;
			return;
		}
		memcpy(w->inl + n, buf[i].addr, buf[i].length);
		n += buf[i].length;
	}
	w->sge[0].addr = (uintptr_t)w->inl;
	w->sge[0].length = n;
	w->sge[0].lkey = 0;
	w->wr.num_sge = 1;
	w->wr.send_flags |= IBV_SEND_INLINE;
}

static void sroce_wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
				     size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	sroce_wr_set_inline_data_list(qpx, 1, &buf);
}

#define SROCE_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			IBV_QP_EX_WITH_SEND_WITH_INV | \
			IBV_QP_EX_WITH_RDMA_WRITE | \
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			IBV_QP_EX_WITH_RDMA_READ | \
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
			IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | \
			IBV_QP_EX_WITH_ATOMIC_WRITE)

/* What each QP type carries (ibv_wr_post(3): creation fails for more). */
#define SROCE_UC_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			   IBV_QP_EX_WITH_RDMA_WRITE | \
			   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			   IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define SROCE_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

static int sroce_qp_ex_init(struct sroce_qp *qp,
			    struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	uint64_t ops = attr->qp_type == IBV_QPT_RC ? SROCE_SEND_OPS :
		       attr->qp_type == IBV_QPT_UC ? SROCE_UC_SEND_OPS :
		       SROCE_UD_SEND_OPS;

	if (attr->send_ops_flags & ~ops)
		return EOPNOTSUPP;
	/* A batch can hold as many WRs as the SQ (the caps granted). */
	qp->max_wr = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1;
	qp->wrs = calloc(qp->max_wr, sizeof(*qp->wrs));
	if (!qp->wrs)
		return ENOMEM;
	qpx->wr_start = sroce_wr_start;
	qpx->wr_complete = sroce_wr_complete;
	qpx->wr_abort = sroce_wr_abort;
	qpx->wr_send = sroce_wr_send;
	qpx->wr_send_imm = sroce_wr_send_imm;
	qpx->wr_send_inv = sroce_wr_send_inv;
	qpx->wr_rdma_write = sroce_wr_rdma_write;
	qpx->wr_rdma_write_imm = sroce_wr_rdma_write_imm;
	qpx->wr_rdma_read = sroce_wr_rdma_read;
	qpx->wr_atomic_cmp_swp = sroce_wr_cmp_swp;
	qpx->wr_atomic_fetch_add = sroce_wr_fetch_add;
	qpx->wr_local_inv = sroce_wr_local_inv;
	qpx->wr_bind_mw = sroce_wr_bind_mw;
	qpx->wr_atomic_write = sroce_wr_atomic_write;
	qpx->wr_set_ud_addr = sroce_wr_set_ud_addr;
	qpx->wr_set_sge = sroce_wr_set_sge;
	qpx->wr_set_sge_list = sroce_wr_set_sge_list;
	qpx->wr_set_inline_data = sroce_wr_set_inline_data;
	qpx->wr_set_inline_data_list = sroce_wr_set_inline_data_list;
	qp->vqp.comp_mask |= VERBS_QP_EX;
	return 0;
}

/* Map the QP's rings the kernel made; the limits are the granted caps. */
static int sroce_qp_map(struct ibv_context *ctx, struct sroce_qp *qp,
			const struct ibv_qp_init_attr_ex *attr,
			const struct sroce_create_qp_resp *drv)
{
	const struct ibv_qp_cap *cap = &attr->cap;
	size_t min;
	int err;

	qp->sq.max_sge = cap->max_send_sge;
	qp->sq.max_inline = cap->max_inline_data;
	qp->rq.max_sge = cap->max_recv_sge;
	if (drv->flags & SROCE_MAPPED) {
		min = cap->max_send_sge * sizeof(struct ib_uverbs_sge);
		if (min < cap->max_inline_data)
			min = cap->max_inline_data;
		min += sizeof(struct sroce_send_uwqe);
		err = sroce_wq_map(ctx, &qp->sq, drv->sq_mmap_offset,
				   drv->sq_entries, drv->sq_stride, min);
		if (err)
			return err;
	}
	if (drv->rq_flags & SROCE_MAPPED) {
		min = sizeof(struct sroce_recv_uwqe) +
		      cap->max_recv_sge * sizeof(struct ib_uverbs_sge);
		err = sroce_wq_map(ctx, &qp->rq, drv->rq_mmap_offset,
				   drv->rq_entries, drv->rq_stride, min);
		if (err) {
			sroce_wq_unmap(&qp->sq);
			return err;
		}
	}
	return 0;
}

static void sroce_qp_free(struct sroce_qp *qp)
{
	sroce_wq_unmap(&qp->sq);
	sroce_wq_unmap(&qp->rq);
	pthread_spin_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	pthread_spin_destroy(&qp->wr_lock);
	free(qp->wrs);
	free(qp);
}

/*
 * Every comp_mask bit libibverbs defines is taken, and refused only when
 * its value asks for what the device lacks: no XRC (the QP type says so,
 * not the domain), no create flags (rdma_rxe's provider takes 0 too), no
 * TSO, no receive-side scaling, no send op beyond SROCE_SEND_OPS.  A bit
 * this library does not know is refused.
 */
static int sroce_qp_attr_ok(const struct ibv_qp_init_attr_ex *attr)
{
	uint32_t mask = attr->comp_mask;

	if (mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
		     IBV_QP_INIT_ATTR_CREATE_FLAGS |
		     IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
		     IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
		     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return EOPNOTSUPP;
	if (attr->qp_type == IBV_QPT_XRC_SEND ||
	    attr->qp_type == IBV_QPT_XRC_RECV)
		return EOPNOTSUPP;
	if (!(mask & IBV_QP_INIT_ATTR_PD) || !attr->pd)
		return EINVAL;
	if ((mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) && attr->max_tso_header)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags & ~(uint64_t)SROCE_SEND_OPS))
		return EOPNOTSUPP;
	if ((mask & IBV_QP_INIT_ATTR_IND_TABLE) && attr->rwq_ind_tbl)
		return EOPNOTSUPP;
	if ((mask & IBV_QP_INIT_ATTR_RX_HASH) &&
	    (attr->rx_hash_conf.rx_hash_function ||
	     attr->rx_hash_conf.rx_hash_key_len ||
	     attr->rx_hash_conf.rx_hash_fields_mask))
		return EOPNOTSUPP;
	return 0;
}

static struct ibv_qp *sroce_create_qp_ex(struct ibv_context *ctx,
					 struct ibv_qp_init_attr_ex *attr)
{
	struct sroce_qp_cmd cmd = { .drv.flags = sroce_map_flags(1) };
	struct sroce_qp_resp resp = {};
	struct sroce_qp *qp;
	uint32_t mask;
	int err;

	err = sroce_qp_attr_ok(attr);
	if (err) {
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->wr_lock, PTHREAD_PROCESS_PRIVATE);
	qp->state = IBV_QPS_RESET;
	/* The bits whose values ask for nothing stay with us (see above). */
	mask = attr->comp_mask;
	attr->comp_mask &= IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	err = ibv_cmd_create_qp_ex(ctx, &qp->vqp, attr, &cmd.core, sizeof(cmd),
				   &resp.core, sizeof(resp));
	attr->comp_mask = mask;
	if (err)
		goto err_free;
	err = sroce_qp_map(ctx, qp, attr, &resp.drv);
	if (!err && (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		err = sroce_qp_ex_init(qp, attr);
	if (err) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err_free;
	}
	return &qp->vqp.qp;

err_free:
	sroce_qp_free(qp);
	errno = err;
	return NULL;
}

static struct ibv_qp *sroce_create_qp(struct ibv_pd *pd,
				      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {};
	struct ibv_qp *qp;

	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = sroce_create_qp_ex(pd->context, &ex);
	if (qp)
		memcpy(attr, &ex, sizeof(*attr));	/* the caps granted */
	return qp;
}

static int sroce_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			  int mask, struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

/*
 * On a QP's way to RESET its completions not polled yet leave a mapped
 * ring, as the kernel removes them from a ring it polls (sroce_cq_clean()
 * in cq.c): a new connection must not take the old one's flushed WRs for
 * its own.  The kernel writes only the slots from its producer index on,
 * so those from our consumer index to the producer read here are ours to
 * move: walking back from the newest, the kept ones move up over the
 * removed, in order, and the consumer index passes the freed slots.
 * Receive completions of a QP on an SRQ stay: each holds an SRQ WQE.
 */
static void sroce_cq_clean(struct ibv_cq *ibcq, uint32_t qpn, int srq)
{
	struct sroce_cq *cq = to_scq(ibcq);
	uint32_t prod, i, freed = 0;

	if (!cq->mapped)
		return;
	pthread_spin_lock(&cq->lock);
	if (!cq->ring) {	/* a failed resize: the kernel's to poll */
		pthread_spin_unlock(&cq->lock);
		return;
	}
	prod = sroce_cq_producer(cq);
	for (i = prod; i != cq->cons; ) {
		struct ib_uverbs_wc *e = &cq->ring->cqe[--i % cq->entries];
		uint32_t to = (i + freed) % cq->entries;

		if (e->qp_num == qpn && !(srq && (e->opcode & IBV_WC_RECV))) {
			freed++;
			continue;
		}
		if (!freed)
			continue;
		cq->ring->cqe[to] = *e;
		if (cq->ts)
			cq->ts[to] = cq->ts[i % cq->entries];
	}
	if (freed) {
		cq->cons += freed;
		__atomic_store_n(&cq->ring->consumer, cq->cons,
				 __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&cq->lock);
}

static int sroce_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int mask)
{
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (err || !(mask & IBV_QP_STATE))
		return err;
	/* Posts in other threads read it: after the kernel's change. */
	__atomic_store_n(&to_sqp(ibqp)->state, attr->qp_state,
			 __ATOMIC_RELEASE);
	if (attr->qp_state == IBV_QPS_RESET) {
		sroce_cq_clean(ibqp->send_cq, ibqp->qp_num, !!ibqp->srq);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			sroce_cq_clean(ibqp->recv_cq, ibqp->qp_num,
				       !!ibqp->srq);
	}
	return 0;
}

static int sroce_destroy_qp(struct ibv_qp *ibqp)
{
	int err = ibv_cmd_destroy_qp(ibqp);

	if (!err)
		sroce_qp_free(to_sqp(ibqp));
	return err;
}

static struct ibv_srq *sroce_create_srq(struct ibv_pd *pd,
					struct ibv_srq_init_attr *attr)
{
	struct sroce_srq_cmd cmd = { .drv.flags = sroce_map_flags(1) };
	struct sroce_srq_resp resp = {};
	struct sroce_srq *srq;
	int err;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);
	err = ibv_cmd_create_srq(pd, &srq->srq, attr, &cmd.core, sizeof(cmd),
				 &resp.core, sizeof(resp));
	if (err)
		goto err_free;
	srq->rq.max_sge = attr->attr.max_sge;
	if (resp.drv.flags & SROCE_MAPPED) {
		err = sroce_wq_map(pd->context, &srq->rq, resp.drv.mmap_offset,
				   resp.drv.entries, resp.drv.stride,
				   sizeof(struct sroce_recv_uwqe) +
				   attr->attr.max_sge *
				   sizeof(struct ib_uverbs_sge));
		if (err) {
			ibv_cmd_destroy_srq(&srq->srq);
			goto err_free;
		}
	}
	return &srq->srq;

err_free:
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	errno = err;
	return NULL;
}

static int sroce_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			    int mask)
{
	struct ibv_modify_srq cmd;

	return ibv_cmd_modify_srq(srq, attr, mask, &cmd, sizeof(cmd));
}

static int sroce_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

static int sroce_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sroce_srq *srq = to_ssrq(ibsrq);
	int err = ibv_cmd_destroy_srq(ibsrq);

	if (!err) {
		sroce_wq_unmap(&srq->rq);
		pthread_spin_destroy(&srq->rq.lock);
		free(srq);
	}
	return err;
}

static struct ibv_ah *sroce_create_ah(struct ibv_pd *pd,
				      struct ibv_ah_attr *attr)
{
	struct ib_uverbs_create_ah_resp resp;
	struct ibv_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	/* The kernel resolves the destination MAC (ib_resolve_eth_dmac). */
	err = ibv_cmd_create_ah(pd, ah, attr, &resp, sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	return ah;
}

static int sroce_destroy_ah(struct ibv_ah *ah)
{
	int err = ibv_cmd_destroy_ah(ah);

	if (!err)
		free(ah);
	return err;
}

static void sroce_free_context(struct ibv_context *ibctx)
{
	struct sroce_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static const struct verbs_context_ops sroce_ctx_ops = {
	.alloc_mw = sroce_alloc_mw,
	.alloc_pd = sroce_alloc_pd,
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = sroce_bind_mw,
	.create_ah = sroce_create_ah,
	.create_cq = sroce_create_cq,
	.create_qp = sroce_create_qp,
	.create_qp_ex = sroce_create_qp_ex,
	.create_cq_ex = sroce_create_cq_ex,
	.create_srq = sroce_create_srq,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = sroce_free_context,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_device_ex = sroce_query_device_ex,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_rt_values = sroce_query_rt_values,
	.query_srq = sroce_query_srq,
	.reg_mr = sroce_reg_mr,
	.rereg_mr = sroce_rereg_mr,
	.req_notify_cq = ibv_cmd_req_notify_cq,
	.resize_cq = sroce_resize_cq,
};

static struct verbs_context *sroce_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct ib_uverbs_get_context_resp resp;
	struct ibv_get_context cmd;
	struct sroce_context *ctx;

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
				(struct verbs_context *)offsetof(struct sroce_context, vctx),
				SROCE_DRIVER_ID);
	if (!ctx)
		return NULL;
	if (ibv_cmd_get_context(&ctx->vctx, &cmd, sizeof(cmd), &resp,
				sizeof(resp))) {
		verbs_uninit_context(&ctx->vctx);
		free(ctx);
		return NULL;
	}
	verbs_set_ops(&ctx->vctx, &sroce_ctx_ops);
	return &ctx->vctx;
}

static struct verbs_device *sroce_alloc_device(struct verbs_sysfs_dev *sdev)
{
	struct sroce_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->vdev : NULL;
}

static void sroce_uninit_device(struct verbs_device *vdev)
{
	free(to_sdev(vdev));
}

static const struct verbs_match_ent sroce_match_table[] = {
	{ .u.driver_id = SROCE_DRIVER_ID, .kind = VERBS_MATCH_DRIVER_ID },
	{},
};

static const struct verbs_device_ops sroce_dev_ops = {
	.name = "sroce",
	.match_min_abi_version = SROCE_ABI_VERSION,
	.match_max_abi_version = SROCE_ABI_VERSION,
	.match_table = sroce_match_table,
	.alloc_device = sroce_alloc_device,
	.uninit_device = sroce_uninit_device,
	.alloc_context = sroce_alloc_context,
};

static void __attribute__((constructor)) sroce_register(void)
{
	verbs_register_driver_34(&sroce_dev_ops);
}

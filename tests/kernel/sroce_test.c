// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_test - an in-kernel ULP that exercises an sroce device through the
 * kernel verbs API, the way rdma_cm users and NVMe-oF do, and reports KTAP.
 *
 * On load it registers an ib_client; for every sroce device (matched by
 * driver id) it runs the suite once and stores the KTAP text in
 * /sys/kernel/debug/sroce_test/<device>.  tests/vm/objects.sh reads it.
 */
#include <linux/debugfs.h>
#include <linux/etherdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>
#include <rdma/sroce-abi.h>

#define SROCE_TEST_BUF	(64 * 1024)

struct sroce_test {
	struct ib_device *dev;
	struct dentry *file;
	char *buf;
	size_t len;
	int n;
	int failed;
	struct completion sq_drained;
	struct completion last_wqe;
	atomic_t cq_events;		/* IB_EVENT_CQ_ERR seen */
	atomic_t comp_calls;		/* comp_handler calls */
	atomic_t comp_in_post;		/* ... inside our own post */
	struct task_struct *poster;	/* in ib_post_send/recv now */
	atomic_t flushed;		/* wr_cqe done callbacks */
	atomic_t traffic_ok;		/* successful traffic completions */
	atomic_t traffic_bad;
	wait_queue_head_t wq;
};

static void sroce_test_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct sroce_test *t = cq->cq_context;

	if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&t->flushed);
	wake_up(&t->wq);
}

static struct ib_cqe sroce_test_cqe = { .done = sroce_test_done };

/* Traffic completions: counted by status, in whatever poll context. */
static void sroce_test_traffic_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct sroce_test *t = cq->cq_context;

	if (wc->status == IB_WC_SUCCESS)
		atomic_inc(&t->traffic_ok);
	else
		atomic_inc(&t->traffic_bad);
	wake_up(&t->wq);
}

static struct ib_cqe sroce_test_traffic_cqe = {
	.done = sroce_test_traffic_done,
};

static struct dentry *sroce_test_dir;

static __printf(3, 4) void sroce_test_ok(struct sroce_test *t, bool ok,
					 const char *fmt, ...)
{
	va_list args;

	t->n++;
	if (!ok)
		t->failed++;
	t->len += scnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len,
			    "%sok %d - ", ok ? "" : "not ", t->n);
	va_start(args, fmt);
	t->len += vscnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len, fmt,
			     args);
	va_end(args);
	t->len += scnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len, "\n");
}

/* ok when @ptr is a valid pointer; reports the errno otherwise */
static void sroce_test_ptr(struct sroce_test *t, const void *ptr,
			   const char *what)
{
	sroce_test_ok(t, !IS_ERR_OR_NULL(ptr), "%s (%ld)", what,
		      IS_ERR(ptr) ? PTR_ERR(ptr) : 0L);
}

/* ok when @ptr is ERR_PTR(@err) */
static void sroce_test_err(struct sroce_test *t, const void *ptr, long err,
			   const char *what)
{
	sroce_test_ok(t, IS_ERR(ptr) && PTR_ERR(ptr) == err,
		      "%s fails with %ld (%ld)", what, err,
		      IS_ERR(ptr) ? PTR_ERR(ptr) : 0L);
}

static void sroce_test_rc(struct sroce_test *t, int rc, int want,
			  const char *what)
{
	sroce_test_ok(t, rc == want, "%s: %d (want %d)", what, rc, want);
}

/* The first RoCE v2 GID with an IPv4 address, or index 0. */
static int sroce_test_sgid_index(struct ib_device *dev)
{
	const struct ib_gid_attr *attr;
	int i;

	for (i = 0; i < dev->port_data[1].immutable.gid_tbl_len; i++) {
		attr = rdma_get_gid_attr(dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_v4mapped((struct in6_addr *)attr->gid.raw)) {
			rdma_put_gid_attr(attr);
			return i;
		}
		rdma_put_gid_attr(attr);
	}
	return 0;
}

static void sroce_test_ah_attr(struct ib_device *dev,
			       struct rdma_ah_attr *ah, int sgid_index)
{
	static const u8 mac[ETH_ALEN] = { 0x02, 0, 0, 0x5e, 0, 1 };
	union ib_gid dgid;

	memset(ah, 0, sizeof(*ah));
	rdma_query_gid(dev, 1, sgid_index, &dgid);
	ah->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah, 1);
	rdma_ah_set_grh(ah, &dgid, 0, sgid_index, 64, 0);
	memcpy(ah->roce.dmac, mac, ETH_ALEN);
}

/* Chain @n receive WRs with wr_ids 0..n-1 (after @base). */
static void sroce_test_chain(struct ib_recv_wr *rwr, int n, u64 base)
{
	int i;

	for (i = 0; i < n; i++) {
		rwr[i].wr_id = base + i;
		rwr[i].next = i < n - 1 ? &rwr[i + 1] : NULL;
	}
}

static void sroce_test_qp_event(struct ib_event *ev, void *ctx)
{
	struct sroce_test *t = ctx;

	if (ev->event == IB_EVENT_SQ_DRAINED)
		complete(&t->sq_drained);
	if (ev->event == IB_EVENT_QP_LAST_WQE_REACHED)
		complete(&t->last_wqe);
}

static void sroce_test_cq_event(struct ib_event *ev, void *ctx)
{
	struct sroce_test *t = ctx;

	if (ev->event == IB_EVENT_CQ_ERR)
		atomic_inc(&t->cq_events);
}

static void sroce_test_comp(struct ib_cq *cq, void *ctx)
{
	struct sroce_test *t = ctx;

	if (READ_ONCE(t->poster) == current)
		atomic_inc(&t->comp_in_post);
	atomic_inc(&t->comp_calls);
	wake_up(&t->wq);
}

/*
 * A WR posted in Error completes flushed: its comp_handler is called after
 * the post returned (from the QP's work item), as a NIC calls it from its
 * interrupt, never inside the post (a ULP may hold a lock across the post
 * that its handler takes, or post from the handler).
 */
static void sroce_test_flush_handler(struct sroce_test *t, struct ib_qp *qp,
				     struct ib_cq *cq, bool send)
{
	struct ib_send_wr swr = {
		.wr_id = 20, .opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_recv_wr rwr = { .wr_id = 10 };
	const struct ib_send_wr *sbad;
	const struct ib_recv_wr *rbad;
	struct ib_wc wc[2];
	int err, n;

	atomic_set(&t->comp_calls, 0);
	atomic_set(&t->comp_in_post, 0);
	ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	WRITE_ONCE(t->poster, current);
	if (send)
		err = ib_post_send(qp, &swr, &sbad);
	else
		err = ib_post_recv(qp, &rwr, &rbad);
	WRITE_ONCE(t->poster, NULL);
	wait_event_timeout(t->wq, atomic_read(&t->comp_calls), 2 * HZ);
	n = ib_poll_cq(cq, 2, wc);
	sroce_test_ok(t, !err && n == 1 && wc[0].status == IB_WC_WR_FLUSH_ERR &&
		      wc[0].wr_id == (send ? 20 : 10) &&
		      atomic_read(&t->comp_calls) == 1 &&
		      !atomic_read(&t->comp_in_post),
		      "%s in Error: flushed, comp_handler called after the post, not inside it (%d, %d, %d calls, %d inside)",
		      send ? "post_send" : "post_recv", err, n,
		      atomic_read(&t->comp_calls),
		      atomic_read(&t->comp_in_post));
}

static struct ib_qp *sroce_test_rc_qp(struct sroce_test *t, struct ib_pd *pd,
				      struct ib_cq *scq, struct ib_cq *rcq)
{
	struct ib_qp_init_attr init = {
		.event_handler = sroce_test_qp_event,
		.qp_context = t,
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = {
			.max_send_wr = 16, .max_recv_wr = 16,
			.max_send_sge = 2, .max_recv_sge = 2,
			.max_inline_data = 64,
		},
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};

	return ib_create_qp(pd, &init);
}

/* RESET -> INIT -> RTR -> RTS for an RC QP towards @dest_qpn. */
static int sroce_test_connect_rnr(struct sroce_test *t, struct ib_qp *qp,
				  u32 dest_qpn, int sgid_index, u8 rnr_retry);

static int sroce_test_connect(struct sroce_test *t, struct ib_qp *qp,
			      u32 dest_qpn, int sgid_index)
{
	return sroce_test_connect_rnr(t, qp, dest_qpn, sgid_index, 7);
}

/*
 * The first PSN of both ends of the next connection.  A reconnect of the
 * same QPs starts elsewhere in the PSN space, as peers choose a fresh PSN
 * per connection: packets of the last one still in flight (a cut-short
 * WRITE's retransmissions) are then old duplicates, not requests.
 */
static u32 sroce_test_psn = 0x123;

static int sroce_test_connect_rnr(struct sroce_test *t, struct ib_qp *qp,
				  u32 dest_qpn, int sgid_index, u8 rnr_retry)
{
	struct ib_qp_attr a = {};
	int err;

	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			    IB_ACCESS_REMOTE_ATOMIC;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_1024;
	a.dest_qp_num = dest_qpn;
	/* Both ends of these QPs start at the same PSN (peers exchange it). */
	a.rq_psn = sroce_test_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	sroce_test_ah_attr(t->dev, &a.ah_attr, sgid_index);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTS;
	a.sq_psn = sroce_test_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 4;
	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_SQ_PSN |
			    IB_QP_TIMEOUT | IB_QP_RETRY_CNT |
			    IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC);
}

static void sroce_test_limits(struct sroce_test *t, struct ib_pd *pd,
			      struct ib_cq *cq)
{
	struct ib_device_attr *da = &t->dev->attrs;
	struct ib_cq_init_attr cqa = { .cqe = da->max_cqe + 1 };
	struct ib_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_srq_init_attr sinit = {
		.attr = { .max_wr = da->max_srq_wr + 1, .max_sge = 1 },
	};
	struct ib_cq *bad_cq;
	struct ib_qp *qp;
	struct ib_srq *srq;
	struct ib_mr *mr;

	sroce_test_ok(t, da->max_qp > 0 && da->max_qp_wr > 0 &&
		      da->max_send_sge > 0 && da->max_cqe > 0 &&
		      da->max_mr > 0 && da->max_pd > 0,
		      "query_device reports limits (qp %d wr %d sge %d cqe %d)",
		      da->max_qp, da->max_qp_wr, da->max_send_sge, da->max_cqe);

	bad_cq = ib_create_cq(t->dev, NULL, NULL, NULL, &cqa);
	sroce_test_err(t, bad_cq, -EINVAL, "CQ with max_cqe + 1 entries");
	if (!IS_ERR(bad_cq))
		ib_destroy_cq(bad_cq);
	cqa.cqe = da->max_cqe;
	bad_cq = ib_create_cq(t->dev, NULL, NULL, NULL, &cqa);
	sroce_test_ptr(t, bad_cq, "CQ with max_cqe entries");
	if (!IS_ERR(bad_cq))
		ib_destroy_cq(bad_cq);

	/* At the limits: as many WRs as query_device says, each queue. */
	init.cap.max_send_wr = da->max_qp_wr;
	init.cap.max_recv_wr = da->max_qp_wr;
	qp = ib_create_qp(pd, &init);
	sroce_test_ptr(t, qp, "QP with max_qp_wr send and receive WRs");
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	init.cap.max_recv_wr = 1;
	sinit.attr.max_wr = da->max_srq_wr;
	srq = ib_create_srq(pd, &sinit);
	sroce_test_ptr(t, srq, "SRQ with max_srq_wr WRs");
	if (!IS_ERR(srq))
		ib_destroy_srq(srq);
	sinit.attr.max_wr = da->max_srq_wr + 1;

	init.cap.max_send_wr = da->max_qp_wr + 1;
	qp = ib_create_qp(pd, &init);
	sroce_test_err(t, qp, -EINVAL, "QP with max_qp_wr + 1 send WRs");
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	init.cap.max_send_wr = 1;
	init.cap.max_recv_sge = da->max_recv_sge + 1;
	qp = ib_create_qp(pd, &init);
	sroce_test_err(t, qp, -EINVAL, "QP with max_recv_sge + 1 SGEs");
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	init.cap.max_recv_sge = 1;
	init.cap.max_inline_data = SZ_64K;
	qp = ib_create_qp(pd, &init);
	sroce_test_err(t, qp, -EINVAL, "QP with 64 KiB inline data");
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	init.cap.max_inline_data = 0;
	init.recv_cq = NULL;
	qp = ib_create_qp(pd, &init);
	sroce_test_err(t, qp, -EINVAL, "QP without a receive CQ");
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);
	init.recv_cq = init.send_cq;
	init.qp_type = IB_QPT_SMI;
	qp = ib_create_qp(pd, &init);
	sroce_test_ok(t, IS_ERR(qp), "no QP0 on RoCE (%ld)",
		      IS_ERR(qp) ? PTR_ERR(qp) : 0L);
	if (!IS_ERR(qp))
		ib_destroy_qp(qp);

	srq = ib_create_srq(pd, &sinit);
	sroce_test_err(t, srq, -EINVAL, "SRQ with max_srq_wr + 1 WRs");
	if (!IS_ERR(srq))
		ib_destroy_srq(srq);

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG,
			 da->max_fast_reg_page_list_len + 1);
	sroce_test_err(t, mr, -EINVAL, "FRWR MR longer than max_fast_reg_page_list_len");
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);
}

/* The objects sroce_test_fill() fills a device with, one kind at a time. */
enum sroce_fill_kind {
	SROCE_FILL_PD, SROCE_FILL_CQ, SROCE_FILL_QP, SROCE_FILL_SRQ,
	SROCE_FILL_AH, SROCE_FILL_MR, SROCE_FILL_MAX,
};

static const char *const sroce_fill_name[SROCE_FILL_MAX] = {
	"PD", "CQ", "QP", "SRQ", "AH", "MR",
};

/* The smallest object of @kind: what costs a device a count, little else. */
static void *sroce_fill_new(struct sroce_test *t, int kind, struct ib_pd *pd,
			    struct ib_cq *cq, int sgid_index)
{
	struct ib_cq_init_attr cqa = { .cqe = 1 };
	struct ib_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_srq_init_attr si = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct rdma_ah_attr ah;

	switch (kind) {
	case SROCE_FILL_PD:
		return ib_alloc_pd(t->dev, 0);
	case SROCE_FILL_CQ:
		return ib_create_cq(t->dev, NULL, NULL, NULL, &cqa);
	case SROCE_FILL_QP:
		return ib_create_qp(pd, &qi);
	case SROCE_FILL_SRQ:
		return ib_create_srq(pd, &si);
	case SROCE_FILL_AH:
		sroce_test_ah_attr(t->dev, &ah, sgid_index);
		return rdma_create_ah(pd, &ah, 0);
	default:
		return ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	}
}

static void sroce_fill_free(int kind, void *o)
{
	switch (kind) {
	case SROCE_FILL_PD:
		ib_dealloc_pd(o);
		break;
	case SROCE_FILL_CQ:
		ib_destroy_cq(o);
		break;
	case SROCE_FILL_QP:
		ib_destroy_qp(o);
		break;
	case SROCE_FILL_SRQ:
		ib_destroy_srq(o);
		break;
	case SROCE_FILL_AH:
		rdma_destroy_ah(o, 0);
		break;
	default:
		ib_dereg_mr(o);
	}
}

/*
 * Fill the device with objects of @kind up to its limit @max: the next
 * one fails with -ENOMEM, and after one is freed one more can be made
 * (the limit stopped it, not memory).  The device already has a few of
 * some kinds (ib_mad's PD, CQ, QP1 and the PD's DMA MR; this client's
 * PD and CQ): at most 16 fewer are made.  Also reports what one costs,
 * from the memory available before and after.
 */
static void sroce_test_fill_dev(struct sroce_test *t, int kind, int max,
				struct ib_pd *pd, struct ib_cq *cq,
				int sgid_index)
{
	const char *name = sroce_fill_name[kind];
	long avail = si_mem_available();
	ktime_t start = ktime_get();
	void **o;
	long err = 0, bytes;
	int n, i;

	o = kvcalloc(max + 1, sizeof(*o), GFP_KERNEL);
	if (!o) {
		sroce_test_ok(t, false, "%s: room to fill the device", name);
		return;
	}
	for (n = 0; n <= max; n++) {
		o[n] = sroce_fill_new(t, kind, pd, cq, sgid_index);
		if (IS_ERR(o[n])) {
			err = PTR_ERR(o[n]);
			break;
		}
		if (!(n % 1024))
			cond_resched();
	}
	bytes = n ? (avail - si_mem_available()) * PAGE_SIZE / n : 0;
	sroce_test_ok(t, err == -ENOMEM && n <= max && n >= max - 16,
		      "%s: %d made up to the device's %d, the next fails with -ENOMEM (%ld)",
		      name, n, max, err);
	t->len += scnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len,
			    "# %s: about %ld bytes each, %lld ms for %d\n",
			    name, bytes,
			    ktime_ms_delta(ktime_get(), start), n);
	if (n) {
		sroce_fill_free(kind, o[n - 1]);
		o[n - 1] = sroce_fill_new(t, kind, pd, cq, sgid_index);
		sroce_test_ok(t, !IS_ERR(o[n - 1]),
			      "%s: one freed, one more made (%ld)", name,
			      IS_ERR(o[n - 1]) ? PTR_ERR(o[n - 1]) : 0L);
		if (IS_ERR(o[n - 1]))
			n--;
	}
	for (i = n - 1; i >= 0; i--) {
		sroce_fill_free(kind, o[i]);
		if (!(i % 1024))
			cond_resched();
	}
	kvfree(o);
}

/*
 * The fills make hundreds of thousands of objects: seconds on a stock
 * kernel, too long under KASAN and kmemleak, and no use under fault
 * injection.  The VM tests turn them off there (fill=0).
 */
static bool fill = true;
module_param(fill, bool, 0444);
MODULE_PARM_DESC(fill, "fill the device to each count limit (default true)");

static void sroce_test_fills(struct sroce_test *t, struct ib_pd *pd,
			     int sgid_index)
{
	struct ib_device_attr *da = &t->dev->attrs;
	const int max[SROCE_FILL_MAX] = {
		da->max_pd, da->max_cq, da->max_qp, da->max_srq, da->max_ah,
		da->max_mr,
	};
	struct ib_cq *cq;
	int kind;

	if (!fill)
		return;
	cq = ib_alloc_cq(t->dev, t, 1, 0, IB_POLL_DIRECT);
	sroce_test_ptr(t, cq, "a CQ for the QPs that fill the device");
	if (IS_ERR(cq))
		return;
	for (kind = 0; kind < SROCE_FILL_MAX; kind++)
		sroce_test_fill_dev(t, kind, max[kind], pd, cq, sgid_index);
	ib_free_cq(cq);
}

static void sroce_test_qp_states(struct sroce_test *t, struct ib_pd *pd,
				 int sgid_index)
{
	struct ib_cq_init_attr cqa = { .cqe = 64 };
	struct ib_qp_init_attr init;
	struct ib_qp_attr a = {};
	struct ib_recv_wr rwr[3] = {};
	const struct ib_recv_wr *bad;
	struct ib_wc wc[8];
	struct ib_cq *cq;
	struct ib_qp *qp;
	int err, n;

	cq = ib_create_cq(t->dev, NULL, NULL, NULL, &cqa);
	sroce_test_ptr(t, cq, "ib_create_cq (polled directly)");
	if (IS_ERR(cq))
		return;
	qp = sroce_test_rc_qp(t, pd, cq, cq);
	sroce_test_ptr(t, qp, "ib_create_qp RC with explicit caps");
	if (IS_ERR(qp))
		goto out_cq;
	sroce_test_ok(t, qp->qp_num >= 16, "QPN %u is not a special QPN",
		      qp->qp_num);

	err = ib_query_qp(qp, &a, IB_QP_STATE, &init);
	sroce_test_ok(t, !err && a.qp_state == IB_QPS_RESET &&
		      init.cap.max_send_wr >= 16 && init.cap.max_inline_data >= 64,
		      "new QP is RESET with the caps asked for (%d)", err);

	rwr[0].wr_id = 1;
	err = ib_post_recv(qp, &rwr[0], &bad);
	sroce_test_rc(t, err, -EINVAL, "post_recv in RESET");

	a.qp_state = IB_QPS_RTS;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	sroce_test_rc(t, err, -EINVAL, "RESET -> RTS is not a transition");

	/*
	 * No "port 2" case here: ib_core 6.1 reads the port's data in
	 * _ib_modify_qp before any check (KASAN: out of bounds), so a kernel
	 * caller must not pass one.  uverbs checks it; tests/user does it.
	 */
	a.qp_state = IB_QPS_INIT;
	a.port_num = 1;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	sroce_test_rc(t, err, 0, "RESET -> INIT");

	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_RTR;
	a.path_mtu = IB_MTU_4096 + 1;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	sroce_test_ah_attr(t->dev, &a.ah_attr, sgid_index);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	sroce_test_rc(t, err, -EINVAL, "RTR with a path MTU above the port's");

	a.path_mtu = IB_MTU_1024;
	eth_zero_addr(a.ah_attr.roce.dmac);
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_AV | IB_QP_PATH_MTU |
			   IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	sroce_test_rc(t, err, -EINVAL, "RTR without a resolved destination MAC");

	a.qp_state = IB_QPS_RESET;
	ib_modify_qp(qp, &a, IB_QP_STATE);
	err = sroce_test_connect(t, qp, qp->qp_num, sgid_index);
	sroce_test_rc(t, err, 0, "RESET -> INIT -> RTR -> RTS");

	memset(&a, 0, sizeof(a));
	err = ib_query_qp(qp, &a, IB_QP_STATE | IB_QP_PATH_MTU |
			  IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_SQ_PSN |
			  IB_QP_TIMEOUT | IB_QP_AV, &init);
	sroce_test_ok(t, !err && a.qp_state == IB_QPS_RTS &&
		      a.path_mtu == IB_MTU_1024 && a.dest_qp_num == qp->qp_num &&
		      a.rq_psn == sroce_test_psn &&
		      a.sq_psn == sroce_test_psn && a.timeout == 14 &&
		      rdma_ah_read_grh(&a.ah_attr)->sgid_index == sgid_index,
		      "query_qp returns what was set (%d)", err);

	/* IBA 11.6.3.1: SQD with an empty SQ is drained at once. */
	init_completion(&t->sq_drained);
	memset(&a, 0, sizeof(a));
	a.qp_state = IB_QPS_SQD;
	a.en_sqd_async_notify = 1;
	err = ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_EN_SQD_ASYNC_NOTIFY);
	sroce_test_rc(t, err, 0, "RTS -> SQD");
	sroce_test_ok(t, wait_for_completion_timeout(&t->sq_drained, HZ),
		      "IB_EVENT_SQ_DRAINED raised");
	memset(&a, 0, sizeof(a));
	err = ib_query_qp(qp, &a, IB_QP_EN_SQD_ASYNC_NOTIFY, &init);
	sroce_test_ok(t, !err && a.en_sqd_async_notify == 1,
		      "query_qp in SQD: en_sqd_async_notify still as set (%d, %d)",
		      err, a.en_sqd_async_notify);
	a.qp_state = IB_QPS_RTS;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	sroce_test_rc(t, err, 0, "SQD -> RTS");

	/* IBA 10.3.1: entering ERR flushes every queued WR. */
	sroce_test_chain(rwr, 3, 100);
	err = ib_post_recv(qp, &rwr[0], &bad);
	sroce_test_rc(t, err, 0, "post 3 receives");
	a.qp_state = IB_QPS_ERR;
	err = ib_modify_qp(qp, &a, IB_QP_STATE);
	sroce_test_rc(t, err, 0, "RTS -> ERR");
	n = ib_poll_cq(cq, ARRAY_SIZE(wc), wc);
	sroce_test_ok(t, n == 3 && wc[0].wr_id == 100 && wc[2].wr_id == 102 &&
		      wc[0].status == IB_WC_WR_FLUSH_ERR &&
		      wc[0].opcode == IB_WC_RECV && wc[0].qp == qp,
		      "3 receives flushed in order (%d)", n);
	rwr[0].next = NULL;
	err = ib_post_recv(qp, &rwr[0], &bad);
	n = ib_poll_cq(cq, ARRAY_SIZE(wc), wc);
	sroce_test_ok(t, !err && n == 1 && wc[0].status == IB_WC_WR_FLUSH_ERR,
		      "a receive posted in ERR is flushed (%d, %d)", err, n);

	/* Destroy order: the CQ is in use by the QP. */
	err = ib_destroy_cq_user(cq, NULL);
	sroce_test_rc(t, err, -EBUSY, "destroying a CQ a QP uses");
	err = ib_destroy_qp(qp);
	sroce_test_rc(t, err, 0, "ib_destroy_qp");
out_cq:
	err = ib_destroy_cq_user(cq, NULL);
	sroce_test_rc(t, err, 0, "ib_destroy_cq once unused");
}

/* The driver's SROCE_CQ_MAX_GHOSTS (cq.c), documented in design.rst. */
#define SROCE_TEST_GHOSTS	1024

/*
 * Completions outlive their QP in a kernel CQ: polled after the destroy,
 * each reads its own QP's number, up to the ghosts a CQ keeps; past
 * those, a destroyed QP's completions are dropped, so that a consumer
 * who destroys QPs without polling cannot grow the CQ's memory for ever.
 * (QP numbers are given out in turn: each QP here has one of its own, and
 * a ghost each.)
 */
static void sroce_test_cq_ghosts(struct sroce_test *t, struct ib_pd *pd)
{
	const int nr = SROCE_TEST_GHOSTS + 8;
	struct ib_cq_init_attr cqa = { .cqe = nr };
	struct ib_qp_attr init = { .qp_state = IB_QPS_INIT, .port_num = 1 };
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	struct ib_recv_wr rwr = {};
	const struct ib_recv_wr *bad;
	int i, made = 0, n = 0, right = 0;
	struct ib_wc wc;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u32 *qpn;

	qpn = kcalloc(nr, sizeof(*qpn), GFP_KERNEL);
	cq = ib_create_cq(t->dev, NULL, NULL, NULL, &cqa);
	sroce_test_ptr(t, cq, "CQ for destroyed QPs' completions");
	sroce_test_ok(t, qpn, "memory for the QP numbers");
	if (IS_ERR(cq) || !qpn)
		goto out;
	for (i = 0; i < nr; i++) {
		qp = sroce_test_rc_qp(t, pd, cq, cq);
		if (IS_ERR(qp))
			break;
		rwr.wr_id = i;
		/* In Error with an empty RQ: flushed at once (IBA 10.3.1). */
		if (!ib_modify_qp(qp, &init, IB_QP_STATE | IB_QP_PKEY_INDEX |
				  IB_QP_PORT | IB_QP_ACCESS_FLAGS) &&
		    !ib_modify_qp(qp, &a, IB_QP_STATE) &&
		    !ib_post_recv(qp, &rwr, &bad))
			qpn[made++] = qp->qp_num;
		ib_destroy_qp(qp);
	}
	while (ib_poll_cq(cq, 1, &wc) == 1) {
		right += wc.wr_id == n && wc.status == IB_WC_WR_FLUSH_ERR &&
			 wc.qp->qp_num == qpn[n];
		n++;
	}
	sroce_test_ok(t, made == nr && n == SROCE_TEST_GHOSTS && right == n,
		      "destroyed QPs' completions: %d of %d kept, %d with their QP numbers",
		      n, made, right);
out:
	if (!IS_ERR(cq))
		ib_destroy_cq(cq);
	kfree(qpn);
}

/* Completion layer: notification, missed events, overflow, resize. */
static void sroce_test_cq(struct sroce_test *t, struct ib_pd *pd,
			  int sgid_index)
{
	struct ib_cq_init_attr cqa = { .cqe = 4 };
	struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
	struct ib_recv_wr rwr[8] = {};
	const struct ib_recv_wr *bad;
	struct ib_wc wc[8];
	struct ib_cq *cq;
	struct ib_qp *qp;
	int err, n;

	cq = ib_create_cq(t->dev, sroce_test_comp, sroce_test_cq_event, t,
			  &cqa);
	sroce_test_ptr(t, cq, "CQ of 4 with handlers");
	if (IS_ERR(cq))
		return;
	qp = sroce_test_rc_qp(t, pd, cq, cq);
	if (IS_ERR(qp)) {
		sroce_test_ptr(t, qp, "QP on it");
		goto out_cq;
	}
	sroce_test_connect(t, qp, qp->qp_num, sgid_index);
	sroce_test_chain(rwr, 3, 0);
	ib_post_recv(qp, rwr, &bad);
	atomic_set(&t->comp_calls, 0);
	err = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP);
	ib_modify_qp(qp, &a, IB_QP_STATE);
	sroce_test_ok(t, !err && atomic_read(&t->comp_calls) == 1,
		      "one comp_handler call per NEXT_COMP request (%d)",
		      atomic_read(&t->comp_calls));
	err = ib_req_notify_cq(cq, IB_CQ_NEXT_COMP |
			       IB_CQ_REPORT_MISSED_EVENTS);
	sroce_test_rc(t, err, 1, "REPORT_MISSED_EVENTS on a non-empty CQ");
	err = ib_resize_cq(cq, 2);
	sroce_test_rc(t, err, -EINVAL, "resize below the CQ's fill");
	err = ib_resize_cq(cq, 16);
	n = ib_poll_cq(cq, 8, wc);
	sroce_test_ok(t, !err && n == 3 && wc[0].wr_id == 0 && wc[2].wr_id == 2,
		      "resize to 16 keeps the completions in order (%d, %d)",
		      err, n);
	ib_resize_cq(cq, 4);
	sroce_test_flush_handler(t, qp, cq, false);
	sroce_test_flush_handler(t, qp, cq, true);
	ib_destroy_qp(qp);

	/* Eight flushes into a CQ of four: overrun (IBA 11.6.2). */
	qp = sroce_test_rc_qp(t, pd, cq, cq);
	if (IS_ERR(qp))
		goto out_cq;
	sroce_test_connect(t, qp, qp->qp_num, sgid_index);
	sroce_test_chain(rwr, 8, 0);
	ib_post_recv(qp, rwr, &bad);
	atomic_set(&t->cq_events, 0);
	ib_modify_qp(qp, &a, IB_QP_STATE);
	sroce_test_ok(t, atomic_read(&t->cq_events) == 1,
		      "CQ overrun raises IB_EVENT_CQ_ERR once (%d)",
		      atomic_read(&t->cq_events));
	n = ib_poll_cq(cq, 8, wc);
	sroce_test_ok(t, n == 4 && wc[0].wr_id == 0 && wc[3].wr_id == 3,
		      "the completions before the overrun are kept (%d)", n);
	ib_destroy_qp(qp);
out_cq:
	ib_destroy_cq(cq);
	sroce_test_cq_ghosts(t, pd);
}

static void sroce_test_srq(struct sroce_test *t, struct ib_pd *pd,
			   struct ib_cq *cq)
{
	struct ib_srq_init_attr sinit = {
		.attr = { .max_wr = 32, .max_sge = 2, .srq_limit = 4 },
	};
	struct ib_qp_init_attr init = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ib_recv_wr rwr = { .wr_id = 7 };
	const struct ib_recv_wr *bad;
	struct ib_srq_attr sa;
	struct ib_srq *srq;
	struct ib_qp *qp;
	int err;

	srq = ib_create_srq(pd, &sinit);
	sroce_test_ptr(t, srq, "ib_create_srq");
	if (IS_ERR(srq))
		return;
	err = ib_query_srq(srq, &sa);
	sroce_test_ok(t, !err && sa.max_wr == 32 && sa.srq_limit == 4,
		      "query_srq (%d)", err);
	err = ib_post_srq_recv(srq, &rwr, &bad);
	sroce_test_rc(t, err, 0, "post_srq_recv");
	init.srq = srq;
	init.event_handler = sroce_test_qp_event;
	init.qp_context = t;
	qp = ib_create_qp(pd, &init);
	sroce_test_ptr(t, qp, "RC QP on the SRQ");
	if (!IS_ERR(qp)) {
		struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };

		err = ib_destroy_srq_user(srq, NULL);
		sroce_test_rc(t, err, -EBUSY, "destroying an SRQ a QP uses");
		err = ib_post_recv(qp, &rwr, &bad);
		sroce_test_rc(t, err, -EINVAL, "post_recv on a QP with an SRQ");
		init_completion(&t->last_wqe);
		err = sroce_test_connect(t, qp, qp->qp_num,
					 sroce_test_sgid_index(t->dev));
		if (!err)
			err = ib_modify_qp(qp, &a, IB_QP_STATE);
		sroce_test_ok(t, !err && wait_for_completion_timeout(&t->last_wqe, HZ),
			      "SRQ QP to ERR raises LAST_WQE_REACHED (%d)", err);
		ib_destroy_qp(qp);
	}
	err = ib_destroy_srq_user(srq, NULL);
	sroce_test_rc(t, err, 0, "ib_destroy_srq once unused");
}

static void sroce_test_mr_ah(struct sroce_test *t, struct ib_pd *pd,
			     int sgid_index)
{
	struct rdma_ah_attr ah_attr;
	struct scatterlist sg[4];
	struct ib_mr *mr;
	struct ib_ah *ah;
	void *buf;
	int n, i;

	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 16);
	sroce_test_ptr(t, mr, "ib_alloc_mr FRWR, 16 pages");
	buf = kmalloc(4 * PAGE_SIZE, GFP_KERNEL);
	if (!IS_ERR(mr) && buf) {
		sg_init_table(sg, 4);
		for (i = 0; i < 4; i++)
			sg_set_buf(&sg[i], buf + i * PAGE_SIZE, PAGE_SIZE);
		/* As a ULP does: DMA-map first (virtual DMA for sroce). */
		n = ib_dma_map_sg(t->dev, sg, 4, DMA_BIDIRECTIONAL);
		if (n == 4)
			n = ib_map_mr_sg(mr, sg, 4, NULL, PAGE_SIZE);
		sroce_test_ok(t, n == 4 && mr->length == 4 * PAGE_SIZE &&
			      mr->iova == (u64)(uintptr_t)buf,
			      "ib_map_mr_sg maps 4 pages (%d, length %llu)", n,
			      mr->length);
		if (n == 4) {
			/* Misuse: a page size no power of two, or 0. */
			int odd = ib_map_mr_sg(mr, sg, 4, NULL, 3000);
			int zero = ib_map_mr_sg(mr, sg, 4, NULL, 0);

			sroce_test_ok(t, odd == -EINVAL && zero == -EINVAL,
				      "ib_map_mr_sg with page size 3000 or 0: EINVAL (%d, %d)",
				      odd, zero);
		}
		ib_dma_unmap_sg(t->dev, sg, 4, DMA_BIDIRECTIONAL);
	}
	kfree(buf);
	if (!IS_ERR(mr))
		ib_dereg_mr(mr);

	sroce_test_ah_attr(t->dev, &ah_attr, sgid_index);
	ah = rdma_create_ah(pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	sroce_test_ptr(t, ah, "rdma_create_ah for RoCE v2");
	if (!IS_ERR(ah)) {
		struct rdma_ah_attr q;

		sroce_test_ok(t, !rdma_query_ah(ah, &q) &&
			      rdma_ah_read_grh(&q)->sgid_index == sgid_index &&
			      ether_addr_equal(q.roce.dmac, ah_attr.roce.dmac),
			      "rdma_query_ah returns the address");
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	}
	rdma_ah_set_grh(&ah_attr, NULL, 0,
			t->dev->port_data[1].immutable.gid_tbl_len - 1, 64, 0);
	ah = rdma_create_ah(pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
	sroce_test_ok(t, IS_ERR(ah), "AH with an empty sgid_index fails (%ld)",
		      IS_ERR(ah) ? PTR_ERR(ah) : 0L);
	if (!IS_ERR(ah))
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
}

/* Poll one completion from a DIRECT CQ, for at most 5 seconds. */
static int sroce_test_poll(struct ib_cq *cq, struct ib_wc *wc)
{
	unsigned long end = jiffies + 5 * HZ;

	while (time_before(jiffies, end)) {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 0;
		usleep_range(100, 200);
	}
	return -ETIMEDOUT;
}

static void sroce_test_fill(u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		p[i] = (u8)(i * 7 + seed);
}

static bool sroce_test_same(const u8 *p, u32 len, u8 seed)
{
	u32 i;

	for (i = 0; i < len; i++)
		if (p[i] != (u8)(i * 7 + seed))
			return false;
	return true;
}

#define SROCE_TEST_DATA	(128 * 1024)

/* Post one send WR on @qp and wait for its completion on @cq. */
static int sroce_test_send(struct ib_qp *qp, struct ib_cq *cq,
			   struct ib_send_wr *wr, struct ib_wc *wc)
{
	const struct ib_send_wr *bad;
	int err;

	wr->send_flags |= IB_SEND_SIGNALED;
	err = ib_post_send(qp, wr, &bad);
	if (err)
		return err;
	err = sroce_test_poll(cq, wc);
	if (err)
		return err;
	return wc->status == IB_WC_SUCCESS ? 0 : -EIO;
}

/* Back to RESET, then connected again, CQs empty. */
static int sroce_test_reconnect(struct sroce_test *t, struct ib_qp *qa,
				struct ib_qp *qb, struct ib_cq *cqa,
				struct ib_cq *cqb, int sgid_index, u8 rnr_retry)
{
	struct ib_qp_attr r = { .qp_state = IB_QPS_RESET };
	struct ib_wc wc;

	while (ib_poll_cq(cqa, 1, &wc) > 0 || ib_poll_cq(cqb, 1, &wc) > 0)
		;
	sroce_test_psn = (sroce_test_psn + 0x100000) & 0xffffff;
	return ib_modify_qp(qa, &r, IB_QP_STATE) ?:
	       ib_modify_qp(qb, &r, IB_QP_STATE) ?:
	       sroce_test_connect_rnr(t, qa, qb->qp_num, sgid_index,
				      rnr_retry) ?:
	       sroce_test_connect_rnr(t, qb, qa->qp_num, sgid_index, 7);
}

/*
 * Error paths of the data path (IBA 9.9.3): a write past the end of the
 * target MR and a read of an MR without remote read access end in
 * IB_WC_REM_ACCESS_ERR with nothing written; a SEND without a receive WQE
 * and rnr_retry 0 ends in IB_WC_RNR_RETRY_EXC_ERR, the responder staying
 * in RTS.
 */
static noinline_for_stack void
sroce_test_errors(struct sroce_test *t, struct ib_qp *qa, struct ib_qp *qb,
		  struct ib_cq *cqa, struct ib_cq *cqb, struct ib_mr *mr,
		  u8 *a, u8 *b, u64 da, u64 db, u32 lkey, int sgid_index)
{
	struct ib_sge sge = { .addr = da, .length = 100, .lkey = lkey };
	struct ib_rdma_wr wr = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .sg_list = &sge,
			.num_sge = 1 },
		.rkey = mr->rkey,
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV,
				  .ex.invalidate_rkey = mr->rkey };
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR },
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	struct ib_qp_attr qattr;
	struct ib_qp_init_attr init;
	struct ib_wc wc = {};
	int err;

	/* RDMA WRITE of 100 bytes, 50 of them past the end of the MR */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	memset(b, 0x5a, SROCE_TEST_DATA);
	memset(a, 0xa5, 100);
	wr.remote_addr = mr->iova + mr->length - 50;
	err = err ?: sroce_test_send(qa, cqa, &wr.wr, &wc);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_REM_ACCESS_ERR &&
		      b[SROCE_TEST_DATA - 50] == 0x5a &&
		      b[SROCE_TEST_DATA - 1] == 0x5a,
		      "write past the MR's end: IB_WC_REM_ACCESS_ERR, nothing written (%d, %d)",
		      err, wc.status);

	/* LOCAL_INV, then REG_MR without remote read; RDMA READ of it */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
	sroce_test_ok(t, !err && wc.opcode == IB_WC_LOCAL_INV,
		      "IB_WR_LOCAL_INV (%d)", err);
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.key = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	wr.wr.opcode = IB_WR_RDMA_READ;
	wr.rkey = mr->rkey;
	wr.remote_addr = mr->iova;
	memset(a, 0, 100);
	err = err ?: sroce_test_send(qa, cqa, &wr.wr, &wc);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_REM_ACCESS_ERR &&
		      !a[0] && !a[99],
		      "read of an MR without remote read: IB_WC_REM_ACCESS_ERR (%d, %d)",
		      err, wc.status);

	/* SEND with no receive posted, rnr_retry 0 */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 0);
	wr.wr.opcode = IB_WR_SEND;
	err = err ?: sroce_test_send(qa, cqa, &wr.wr, &wc);
	ib_query_qp(qb, &qattr, IB_QP_STATE, &init);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_RNR_RETRY_EXC_ERR &&
		      qattr.qp_state == IB_QPS_RTS,
		      "SEND without a receive, rnr_retry 0: IB_WC_RNR_RETRY_EXC_ERR, responder still RTS (%d, %d, %d)",
		      err, wc.status, qattr.qp_state);

	/* A REG_MR naming no MR: refused at the post, the QP unharmed. */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	reg.mr = NULL;
	if (!err) {
		const struct ib_send_wr *bad;

		err = ib_post_send(qb, &reg.wr, &bad);
	}
	reg.mr = mr;
	sroce_test_rc(t, err, -EINVAL, "IB_WR_REG_MR of no MR (NULL)");

	/* IBA 10.6.3.6: REG_MR of an MR that is still valid (not free) */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_MW_BIND_ERR,
		      "IB_WR_REG_MR of a valid MR: IB_WC_MW_BIND_ERR (%d, %d)",
		      err, wc.status);

	/* A zero-based FRWR is not offered: refused, not made VA-based. */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	inv.ex.invalidate_rkey = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
	sroce_test_rc(t, err, 0, "IB_WR_LOCAL_INV of the MR");
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.key = mr->rkey;
	reg.access |= IB_ZERO_BASED;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_MW_BIND_ERR,
		      "IB_WR_REG_MR with IB_ZERO_BASED: IB_WC_MW_BIND_ERR (%d, %d)",
		      err, wc.status);
	/* The MR, free, takes the registration without it. */
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	reg.access &= ~IB_ZERO_BASED;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	sroce_test_rc(t, err, 0, "then IB_WR_REG_MR without it");
}

/*
 * An FRWR whose iova a ULP set apart from its pages' offset: an atomic to
 * an aligned address whose word is not aligned in the kernel fails after
 * its R_Key was found good, with IB_WC_REM_ACCESS_ERR at once (a failed
 * atomic leaves no answer to send before its NAK), not after the
 * requester's retries.  The MR is registered at its own iova again after.
 */
static noinline_for_stack void
sroce_test_atomic_kaddr(struct sroce_test *t, struct ib_qp *qa,
			struct ib_qp *qb, struct ib_cq *cqa, struct ib_cq *cqb,
			struct ib_mr *mr, u8 *b, u64 da, u32 lkey,
			int sgid_index)
{
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV };
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR },
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC,
	};
	struct ib_sge sge = { .addr = da, .length = 8, .lkey = lkey };
	struct ib_atomic_wr awr = {
		.wr = { .opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
			.sg_list = &sge, .num_sge = 1 },
		.compare_add = 1,
	};
	u64 iova = mr->iova;
	struct ib_wc wc = {};
	int i, err;

	for (i = 0; i < 2; i++) {
		err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
		inv.ex.invalidate_rkey = mr->rkey;
		err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
		reg.key = mr->rkey;
		/* First the word at b + 4 is at iova + 8; then as it was. */
		mr->iova = i ? iova : iova + 4;
		err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
		if (i)
			break;
		memset(b, 0, 16);
		awr.remote_addr = iova + 8;
		awr.rkey = mr->rkey;
		err = err ?: sroce_test_send(qa, cqa, &awr.wr, &wc);
		sroce_test_ok(t, err == -EIO &&
			      wc.status == IB_WC_REM_ACCESS_ERR &&
			      !memchr_inv(b, 0, 16),
			      "FETCH_ADD whose word is misaligned in the kernel: IB_WC_REM_ACCESS_ERR at once (%d, %d)",
			      err, wc.status);
	}
	sroce_test_rc(t, err, 0, "the MR registered at its own iova again");
}

/*
 * The chain iSER and rdma_rw post to reuse an FRWR MR, all at once:
 * ib_update_fast_reg_key() gives the MR its next key first, then LOCAL_INV
 * of the old key, REG_MR of the new one and a SEND whose SGE names the new
 * lkey.  The WRs of one SQ take effect in order (IBA 10.8.3): the old key
 * still names the MR when LOCAL_INV runs, the new lkey does when the SEND
 * runs, though neither did when the chain was posted.
 */
static noinline_for_stack void
sroce_test_frwr_chain(struct sroce_test *t, struct ib_qp *qa,
		      struct ib_qp *qb, struct ib_cq *cqa, struct ib_cq *cqb,
		      struct ib_mr *mr, u8 *a, u8 *b, u64 da, u32 lkey,
		      int sgid_index)
{
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV,
				  .send_flags = IB_SEND_SIGNALED,
				  .ex.invalidate_rkey = mr->rkey };
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ,
	};
	struct ib_sge ssge = { .length = 100 };
	struct ib_send_wr send = { .opcode = IB_WR_SEND,
				   .send_flags = IB_SEND_SIGNALED,
				   .sg_list = &ssge, .num_sge = 1 };
	struct ib_sge rsge = { .addr = da, .length = 100, .lkey = lkey };
	struct ib_recv_wr rwr = { .wr_id = 7, .sg_list = &rsge,
				  .num_sge = 1 };
	enum ib_wc_opcode want[] = { IB_WC_LOCAL_INV, IB_WC_REG_MR,
				     IB_WC_SEND };
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_wc wc = {};
	int i, err, good = 0;

	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	err = err ?: ib_post_recv(qa, &rwr, &rbad);
	sroce_test_fill(b, 100, 0x61);
	memset(a, 0, 100);
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.key = mr->rkey;
	ssge.addr = mr->iova;
	ssge.lkey = mr->lkey;
	inv.next = &reg.wr;
	reg.wr.next = &send;
	err = err ?: ib_post_send(qb, &inv, &bad);
	for (i = 0; !err && i < ARRAY_SIZE(want); i++) {
		err = sroce_test_poll(cqb, &wc);
		good += !err && wc.status == IB_WC_SUCCESS &&
			wc.opcode == want[i];
	}
	sroce_test_ok(t, !err && good == ARRAY_SIZE(want),
		      "LOCAL_INV of the old key, REG_MR and a SEND through the new lkey, posted at once (%d, last status %d)",
		      err, wc.status);
	err = err ?: sroce_test_poll(cqa, &wc);
	sroce_test_ok(t, !err && wc.status == IB_WC_SUCCESS &&
		      wc.byte_len == 100 && sroce_test_same(a, 100, 0x61),
		      "the SEND carried the MR's bytes (%d, %d)", err,
		      wc.status);
}

/* Map @mr to the one page at DMA address @dma. */
static int sroce_test_map_page(struct ib_mr *mr, u64 dma)
{
	struct scatterlist sg;

	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = dma;
	sg_dma_len(&sg) = PAGE_SIZE;
	return ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE) == 1 ? 0 : -EINVAL;
}

/*
 * A ULP may map an FRWR MR anew before it invalidates the old key (iSER
 * does): the new page list takes effect with the REG_MR that follows
 * (IBA 10.6.3.6), so the old key still reaches the old page, never the
 * new one; after LOCAL_INV and REG_MR the new key reaches the new page
 * and the old key nothing (that last READ leaves both QPs in Error).
 */
static noinline_for_stack void
sroce_test_frwr_remap(struct sroce_test *t, struct ib_qp *qa,
		      struct ib_qp *qb, struct ib_cq *cqa, struct ib_cq *cqb,
		      struct ib_mr *mr, u8 *a, u8 *b, u64 da, u64 db, u32 lkey,
		      int sgid_index)
{
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV };
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR },
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ,
	};
	struct ib_sge sge = { .addr = da, .length = 64, .lkey = lkey };
	struct ib_rdma_wr rd = {
		.wr = { .opcode = IB_WR_RDMA_READ, .sg_list = &sge,
			.num_sge = 1 },
	};
	struct scatterlist sg;
	struct ib_wc wc = {};
	int err, refused;
	u32 old_rkey;

	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	sroce_test_fill(b, 64, 0x31);
	sroce_test_fill(b + PAGE_SIZE, 64, 0x47);
	/* Page 0 of b, registered with a new key (the old one invalidated). */
	inv.ex.invalidate_rkey = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
	err = err ?: sroce_test_map_page(mr, db);
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.key = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	err = err ?: sroce_test_map_page(mr, db + PAGE_SIZE);
	/*
	 * A map it refuses (page size 0, which ib_core leaves in the MR)
	 * changes nothing of the list the REG_MR below registers.
	 */
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = db;
	sg_dma_len(&sg) = PAGE_SIZE;
	refused = ib_map_mr_sg(mr, &sg, 1, NULL, 0);
	/* Mapped to page 1 now, but neither invalidated nor registered. */
	old_rkey = mr->rkey;
	memset(a, 0, 64);
	rd.remote_addr = db;
	rd.rkey = old_rkey;
	err = err ?: sroce_test_send(qa, cqa, &rd.wr, &wc);
	sroce_test_ok(t, !err && sroce_test_same(a, 64, 0x31),
		      "an FRWR mapped anew: its key not yet invalidated still reads the old page (%d, %d)",
		      err, wc.status);
	inv.ex.invalidate_rkey = old_rkey;
	err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.key = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
	memset(a, 0, 64);
	rd.remote_addr = db + PAGE_SIZE;
	rd.rkey = mr->rkey;
	err = err ?: sroce_test_send(qa, cqa, &rd.wr, &wc);
	sroce_test_ok(t, !err && sroce_test_same(a, 64, 0x47) &&
		      refused == -EINVAL,
		      "... and after LOCAL_INV and REG_MR the new key reads the new page, a map refused in between (%d, %d, %d)",
		      err, wc.status, refused);
	rd.rkey = old_rkey;
	err = sroce_test_send(qa, cqa, &rd.wr, &wc);
	sroce_test_ok(t, err == -EIO && wc.status == IB_WC_REM_ACCESS_ERR,
		      "... and the old key reads nothing (%d, %d)", err,
		      wc.status);
}

/*
 * IBA 11.6.3.1: SQD is drained when no WR is in flight.  A SEND that the
 * responder answers with RNR NAKs (no receive posted) is in flight though
 * the requester went back to it: no IB_EVENT_SQ_DRAINED until it
 * completes.
 */
static noinline_for_stack void
sroce_test_sqd_rnr(struct sroce_test *t, struct ib_qp *qa, struct ib_qp *qb,
		   struct ib_cq *cqa, struct ib_cq *cqb, u64 da, u64 db,
		   u32 lkey, int sgid_index)
{
	struct ib_sge ssge = { .addr = da, .length = 100, .lkey = lkey };
	struct ib_send_wr send = { .opcode = IB_WR_SEND,
				   .send_flags = IB_SEND_SIGNALED,
				   .sg_list = &ssge, .num_sge = 1 };
	struct ib_sge rsge = { .addr = db, .length = 100, .lkey = lkey };
	struct ib_recv_wr rwr = { .wr_id = 8, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_qp_attr a = { .qp_state = IB_QPS_SQD,
				.en_sqd_async_notify = 1 };
	const struct ib_recv_wr *rbad;
	const struct ib_send_wr *bad;
	struct ib_qp_init_attr init;
	struct ib_qp_attr q = {};
	struct ib_wc wc = {};
	bool early;
	int err;

	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	err = err ?: ib_post_send(qa, &send, &bad);
	init_completion(&t->sq_drained);
	err = err ?: ib_modify_qp(qa, &a, IB_QP_STATE |
				  IB_QP_EN_SQD_ASYNC_NOTIFY);
	/* RNR NAKs come every 0.64 ms (min_rnr_timer 12) meanwhile. */
	early = wait_for_completion_timeout(&t->sq_drained, HZ / 5);
	err = err ?: ib_query_qp(qa, &q, IB_QP_STATE, &init);
	sroce_test_ok(t, !err && !early && q.qp_state == IB_QPS_SQD &&
		      q.sq_draining,
		      "SQD while a SEND meets RNR NAKs: not drained (%d, %d, %d)",
		      err, early, q.sq_draining);
	/* IBA 11.6.3.1: SQD's attributes wait for the drain. */
	a.qp_state = IB_QPS_RTS;
	sroce_test_rc(t, ib_modify_qp(qa, &a, IB_QP_STATE), -EINVAL,
		      "SQD -> RTS while draining is refused");
	a.timeout = 10;
	sroce_test_rc(t, ib_modify_qp(qa, &a, IB_QP_TIMEOUT), -EINVAL,
		      "SQD -> SQD with a new timeout while draining is refused");
	err = err ?: ib_post_recv(qb, &rwr, &rbad);
	sroce_test_ok(t, !err &&
		      wait_for_completion_timeout(&t->sq_drained, 5 * HZ),
		      "IB_EVENT_SQ_DRAINED once the SEND is acknowledged (%d)",
		      err);
	err = err ?: sroce_test_poll(cqa, &wc);
	sroce_test_ok(t, !err && wc.status == IB_WC_SUCCESS,
		      "the SEND completes (%d, %d)", err, wc.status);
	err = err ?: sroce_test_poll(cqb, &wc);
	a.qp_state = IB_QPS_RTS;
	err = err ?: ib_modify_qp(qa, &a, IB_QP_STATE);
	sroce_test_rc(t, err, 0, "its receive completes; SQD -> RTS");
}

/*
 * An MR invalidated in the middle of a peer's RDMA WRITE (IBA 10.6.3.5):
 * once LOCAL_INV has completed, the ULP may reuse the pages, so not one
 * more byte may land in them.  The WRITE of the whole MR (128 packets) and
 * the LOCAL_INV of its target race; whichever wins, the target must be
 * the same after the WRITE ended as when the invalidation completed.
 */
#ifndef SROCE_TEST_INV_ROUNDS
#define SROCE_TEST_INV_ROUNDS 8
#endif

static noinline_for_stack void
sroce_test_inv_race(struct sroce_test *t, struct ib_qp *qa, struct ib_qp *qb,
		    struct ib_cq *cqa, struct ib_cq *cqb, struct ib_mr *mr,
		    u8 *a, u8 *b, u64 da, u32 lkey, int sgid_index)
{
	struct ib_sge sge = { .addr = da, .length = SROCE_TEST_DATA,
			      .lkey = lkey };
	struct ib_rdma_wr wr = {
		.wr = { .opcode = IB_WR_RDMA_WRITE, .sg_list = &sge,
			.num_sge = 1, .send_flags = IB_SEND_SIGNALED },
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR },
		.mr = mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	int rounds = 0, cut = 0, late = 0, err = 0, i;
	const char *step = "re-register";
	const struct ib_send_wr *bad;
	struct ib_wc wc = {};
	u8 *snap;

	snap = kvmalloc(SROCE_TEST_DATA, GFP_KERNEL);
	if (!snap) {
		sroce_test_ok(t, false, "invalidation during a WRITE: no memory");
		return;
	}
	memset(a, 0xab, SROCE_TEST_DATA);
	for (i = 0; i < SROCE_TEST_INV_ROUNDS && !err; i++) {
		err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
		/* A fresh key for the MR, registered for remote writes. */
		inv.ex.invalidate_rkey = mr->rkey;
		err = err ?: sroce_test_send(qb, cqb, &inv, &wc);
		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
		reg.key = mr->rkey;
		err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);
		if (err)
			break;
		memset(b, 0, SROCE_TEST_DATA);
		wr.rkey = mr->rkey;
		wr.remote_addr = mr->iova;
		inv.ex.invalidate_rkey = mr->rkey;
		step = "LOCAL_INV";
		err = ib_post_send(qa, &wr.wr, &bad) ?:
		      sroce_test_send(qb, cqb, &inv, &wc);
		/* The pages are the ULP's again from here on. */
		memcpy(snap, b, SROCE_TEST_DATA);
		if (!err)
			step = "WRITE";
		err = err ?: sroce_test_poll(cqa, &wc);
		if (err)
			break;
		step = "";
		rounds++;
		if (wc.status != IB_WC_SUCCESS)
			cut++;
		if (memcmp(snap, b, SROCE_TEST_DATA))
			late++;
	}
	kvfree(snap);
	if (err) {	/* where it stopped, for the log */
		struct ib_qp_init_attr init;
		struct ib_qp_attr sa = {}, sb = {};

		ib_query_qp(qa, &sa, IB_QP_STATE | IB_QP_SQ_PSN, &init);
		ib_query_qp(qb, &sb, IB_QP_STATE | IB_QP_RQ_PSN, &init);
		pr_info("sroce_test: inv_race stopped in round %d: A state %d sq_psn %u, B state %d rq_psn %u\n",
			i, sa.qp_state, sa.sq_psn, sb.qp_state, sb.rq_psn);
	}
	sroce_test_ok(t, !err && rounds == SROCE_TEST_INV_ROUNDS && !late,
		      "invalidation during a WRITE: no byte lands after LOCAL_INV completed (%d rounds, %d cut short, %d with late bytes, err %d %s, status %d)",
		      rounds, cut, late, err, step, wc.status);
}

/*
 * Local invalidate fence (IBA 10.6.5.1): an RDMA READ into an FRWR MR,
 * then at once LOCAL_INV of that MR on the same QP.  The invalidation must
 * wait until the READ has completed, so the READ lands whole and
 * succeeds, then the LOCAL_INV completes.
 */
static noinline_for_stack void
sroce_test_lif(struct sroce_test *t, struct ib_pd *pd, struct ib_qp *qa,
	       struct ib_qp *qb, struct ib_cq *cqa, struct ib_cq *cqb,
	       struct ib_mr *mr, u8 *a, u8 *b, u64 da, int sgid_index)
{
	struct ib_sge sge = { .length = SROCE_TEST_DATA };
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV, .wr_id = 2,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_rdma_wr rd = {
		.wr = { .opcode = IB_WR_RDMA_READ, .wr_id = 1, .sg_list = &sge,
			.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
			.next = &inv },
	};
	struct ib_reg_wr reg = { .wr = { .opcode = IB_WR_REG_MR } };
	struct ib_wc wc1 = {}, wc2 = {}, wc = {};
	const struct ib_send_wr *bad;
	struct ib_mr *src = NULL;
	struct scatterlist sg;
	int err;

	/* The source: A's buffer, registered for remote reads on A's side. */
	src = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, SROCE_TEST_DATA / PAGE_SIZE);
	if (IS_ERR(src)) {
		sroce_test_ptr(t, src, "local invalidate fence: ib_alloc_mr");
		return;
	}
	sg_init_one(&sg, a, SROCE_TEST_DATA);
	sg_dma_address(&sg) = da;
	sg_dma_len(&sg) = SROCE_TEST_DATA;
	err = sroce_test_reconnect(t, qa, qb, cqa, cqb, sgid_index, 7);
	if (!err && ib_map_mr_sg(src, &sg, 1, NULL, PAGE_SIZE) != 1)
		err = -EINVAL;
	reg.mr = src;
	reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ;
	reg.key = src->rkey;
	err = err ?: sroce_test_send(qa, cqa, &reg.wr, &wc);
	/* The sink: B's buffer (@mr, invalid now), for local writes. */
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
	reg.mr = mr;
	reg.access = IB_ACCESS_LOCAL_WRITE;
	reg.key = mr->rkey;
	err = err ?: sroce_test_send(qb, cqb, &reg.wr, &wc);

	sroce_test_fill(a, SROCE_TEST_DATA, 0x33);
	memset(b, 0, SROCE_TEST_DATA);
	sge.addr = mr->iova;
	sge.lkey = mr->lkey;
	rd.remote_addr = src->iova;
	rd.rkey = src->rkey;
	inv.ex.invalidate_rkey = mr->lkey;
	err = err ?: ib_post_send(qb, &rd.wr, &bad);
	err = err ?: sroce_test_poll(cqb, &wc1);
	err = err ?: sroce_test_poll(cqb, &wc2);
	sroce_test_ok(t, !err && wc1.wr_id == 1 && wc1.status == IB_WC_SUCCESS &&
		      wc2.wr_id == 2 && wc2.status == IB_WC_SUCCESS &&
		      sroce_test_same(b, SROCE_TEST_DATA, 0x33),
		      "local invalidate fence: a READ into an MR, then LOCAL_INV of it: the READ lands whole (%d, status %d then %d)",
		      err, wc1.status, wc2.status);
	ib_dereg_mr(src);
}

/*
 * The data path from kernel space, two RC QPs of one device talking over
 * loopback: SEND into two SGEs, fast registration (IB_WR_REG_MR) of the
 * target, RDMA WRITE, RDMA READ, both atomics, then a bad rkey: remote
 * access error on the requester, both QPs in Error, receives flushed.
 */
static noinline_for_stack void
sroce_test_data(struct sroce_test *t, struct ib_pd *pd,
		int sgid_index)
{
	struct ib_cq *cqa = NULL, *cqb = NULL;
	struct ib_qp *qa = NULL, *qb = NULL;
	struct ib_mr *mr = NULL;
	u8 *a = NULL, *b = NULL;
	u64 da = 0, db = 0, *w;
	struct scatterlist sg;
	struct ib_wc wc;
	u32 lkey = pd->local_dma_lkey;
	int err;

	a = kzalloc(SROCE_TEST_DATA, GFP_KERNEL);
	b = kzalloc(SROCE_TEST_DATA, GFP_KERNEL);
	cqa = ib_alloc_cq(t->dev, t, 64, 0, IB_POLL_DIRECT);
	cqb = ib_alloc_cq(t->dev, t, 64, 0, IB_POLL_DIRECT);
	if (!a || !b || IS_ERR(cqa) || IS_ERR(cqb)) {
		sroce_test_ok(t, false, "data path: buffers and CQs");
		goto out;
	}
	da = ib_dma_map_single(t->dev, a, SROCE_TEST_DATA, DMA_BIDIRECTIONAL);
	db = ib_dma_map_single(t->dev, b, SROCE_TEST_DATA, DMA_BIDIRECTIONAL);
	qa = sroce_test_rc_qp(t, pd, cqa, cqa);
	qb = sroce_test_rc_qp(t, pd, cqb, cqb);
	if (IS_ERR(qa) || IS_ERR(qb)) {
		sroce_test_ok(t, false, "data path: two RC QPs");
		goto out;
	}
	err = sroce_test_connect(t, qa, qb->qp_num, sgid_index) ?:
	      sroce_test_connect(t, qb, qa->qp_num, sgid_index);
	sroce_test_rc(t, err, 0, "data path: QPs connected over loopback");
	if (err)
		goto out;

	{	/* SEND 40000 bytes into two receive SGEs */
		struct ib_sge rsge[2] = {
			{ .addr = db + 1, .length = 20000, .lkey = lkey },
			{ .addr = db + 30001, .length = 30000, .lkey = lkey },
		};
		struct ib_sge ssge = { .addr = da, .length = 40000,
				       .lkey = lkey };
		struct ib_recv_wr rwr = { .wr_id = 7, .sg_list = rsge,
					  .num_sge = 2 };
		struct ib_send_wr swr = { .wr_id = 8, .sg_list = &ssge,
					  .num_sge = 1, .opcode = IB_WR_SEND };
		const struct ib_recv_wr *rbad;
		struct ib_wc rwc = {};

		sroce_test_fill(a, 40000, 1);
		err = ib_post_recv(qb, &rwr, &rbad) ?:
		      sroce_test_send(qa, cqa, &swr, &wc) ?:
		      sroce_test_poll(cqb, &rwc);
		sroce_test_ok(t, !err && rwc.status == IB_WC_SUCCESS &&
			      rwc.byte_len == 40000 && rwc.wr_id == 7 &&
			      sroce_test_same(b + 1, 20000, 1) &&
			      sroce_test_same(b + 30001, 20000, (20000 * 7 + 1) & 0xff),
			      "SEND 40000 bytes into two SGEs (%d, status %d/%d, len %u)",
			      err, wc.status, rwc.status, rwc.byte_len);
	}

	/* Fast registration of B's buffer for remote access. */
	mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, SROCE_TEST_DATA / PAGE_SIZE);
	if (IS_ERR(mr)) {
		sroce_test_ptr(t, mr, "ib_alloc_mr");
		mr = NULL;
		goto out;
	}
	sg_init_one(&sg, b, SROCE_TEST_DATA);
	sg_dma_address(&sg) = db;
	sg_dma_len(&sg) = SROCE_TEST_DATA;
	err = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	{
		struct ib_reg_wr reg = {
			.wr = { .opcode = IB_WR_REG_MR, .wr_id = 9 },
			.mr = mr,
			.access = IB_ACCESS_LOCAL_WRITE |
				  IB_ACCESS_REMOTE_WRITE |
				  IB_ACCESS_REMOTE_READ |
				  IB_ACCESS_REMOTE_ATOMIC,
		};

		ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey) & 0xff);
		reg.key = mr->rkey;
		err = err == 1 ? sroce_test_send(qb, cqb, &reg.wr, &wc) : -EINVAL;
		sroce_test_ok(t, !err && wc.opcode == IB_WC_REG_MR,
			      "IB_WR_REG_MR of 128 KiB (%d)", err);
	}
	if (err)
		goto out;

	{	/* RDMA WRITE 50001 bytes to an unaligned remote address */
		struct ib_sge sge = { .addr = da + 5, .length = 50001,
				      .lkey = lkey };
		struct ib_rdma_wr wr = {
			.wr = { .opcode = IB_WR_RDMA_WRITE, .sg_list = &sge,
				.num_sge = 1 },
			.remote_addr = mr->iova + 3,
			.rkey = mr->rkey,
		};

		memset(b, 0, SROCE_TEST_DATA);
		sroce_test_fill(a + 5, 50001, 2);
		err = sroce_test_send(qa, cqa, &wr.wr, &wc);
		sroce_test_ok(t, !err && sroce_test_same(b + 3, 50001, 2) &&
			      !b[2] && !b[50004],
			      "RDMA WRITE 50001 bytes (%d)", err);

		/* ... and RDMA READ it back */
		memset(a, 0, SROCE_TEST_DATA);
		wr.wr.opcode = IB_WR_RDMA_READ;
		sge.addr = da + 100;
		err = sroce_test_send(qa, cqa, &wr.wr, &wc);
		sroce_test_ok(t, !err && wc.opcode == IB_WC_RDMA_READ &&
			      wc.byte_len == 50001 &&
			      sroce_test_same(a + 100, 50001, 2) && !a[99],
			      "RDMA READ 50001 bytes (%d)", err);
	}

	{	/* atomics on an 8-byte aligned word */
		struct ib_sge sge = { .addr = da, .length = 8, .lkey = lkey };
		struct ib_atomic_wr wr = {
			.wr = { .opcode = IB_WR_ATOMIC_FETCH_AND_ADD,
				.sg_list = &sge, .num_sge = 1 },
			.remote_addr = mr->iova + 64,
			.rkey = mr->rkey,
			.compare_add = 5,
		};

		w = (u64 *)(b + 64);
		*w = 100;
		err = sroce_test_send(qa, cqa, &wr.wr, &wc);
		sroce_test_ok(t, !err && *(u64 *)a == 100 && *w == 105,
			      "FETCH_ADD returns 100, leaves 105 (%d)", err);
		wr.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
		wr.compare_add = 105;
		wr.swap = 7;
		err = sroce_test_send(qa, cqa, &wr.wr, &wc);
		sroce_test_ok(t, !err && *(u64 *)a == 105 && *w == 7,
			      "CMP_AND_SWP swaps 105 for 7 (%d)", err);
	}

	{	/* a bad rkey: remote access error, both QPs in Error */
		struct ib_sge sge = { .addr = da, .length = 100, .lkey = lkey };
		struct ib_rdma_wr wr = {
			.wr = { .opcode = IB_WR_RDMA_WRITE, .sg_list = &sge,
				.num_sge = 1 },
			.remote_addr = mr->iova,
			.rkey = mr->rkey ^ 0x80,
		};
		struct ib_recv_wr rwr = { .wr_id = 11 };
		const struct ib_recv_wr *rbad;
		struct ib_qp_attr qa_attr, qb_attr;
		struct ib_qp_init_attr init;
		struct ib_wc rwc = {};

		err = ib_post_recv(qb, &rwr, &rbad);
		err = err ?: sroce_test_send(qa, cqa, &wr.wr, &wc);
		sroce_test_ok(t, err == -EIO &&
			      wc.status == IB_WC_REM_ACCESS_ERR,
			      "bad rkey: IB_WC_REM_ACCESS_ERR (%d, status %d)",
			      err, wc.status);
		err = sroce_test_poll(cqb, &rwc);
		ib_query_qp(qa, &qa_attr, IB_QP_STATE, &init);
		ib_query_qp(qb, &qb_attr, IB_QP_STATE, &init);
		sroce_test_ok(t, !err && rwc.status == IB_WC_WR_FLUSH_ERR &&
			      qa_attr.qp_state == IB_QPS_ERR &&
			      qb_attr.qp_state == IB_QPS_ERR,
			      "both QPs in Error, the receive flushed (%d, %d)",
			      err, rwc.status);
	}
	sroce_test_errors(t, qa, qb, cqa, cqb, mr, a, b, da, db, lkey,
			  sgid_index);
	sroce_test_atomic_kaddr(t, qa, qb, cqa, cqb, mr, b, da, lkey,
				sgid_index);
	sroce_test_frwr_chain(t, qa, qb, cqa, cqb, mr, a, b, da, lkey,
			      sgid_index);
	sroce_test_sqd_rnr(t, qa, qb, cqa, cqb, da, db, lkey, sgid_index);
	sroce_test_inv_race(t, qa, qb, cqa, cqb, mr, a, b, da, lkey,
			    sgid_index);
	sroce_test_lif(t, pd, qa, qb, cqa, cqb, mr, a, b, da, sgid_index);
	sroce_test_frwr_remap(t, qa, qb, cqa, cqb, mr, a, b, da, db, lkey,
			      sgid_index);
out:
	if (mr)
		ib_dereg_mr(mr);
	if (!IS_ERR_OR_NULL(qa))
		ib_destroy_qp(qa);
	if (!IS_ERR_OR_NULL(qb))
		ib_destroy_qp(qb);
	if (da)
		ib_dma_unmap_single(t->dev, da, SROCE_TEST_DATA,
				    DMA_BIDIRECTIONAL);
	if (db)
		ib_dma_unmap_single(t->dev, db, SROCE_TEST_DATA,
				    DMA_BIDIRECTIONAL);
	if (!IS_ERR_OR_NULL(cqa))
		ib_free_cq(cqa);
	if (!IS_ERR_OR_NULL(cqb))
		ib_free_cq(cqb);
	kfree(a);
	kfree(b);
}

static const enum ib_poll_context sroce_test_poll_ctx[] = {
	IB_POLL_DIRECT, IB_POLL_SOFTIRQ, IB_POLL_WORKQUEUE,
	IB_POLL_UNBOUND_WORKQUEUE,
};

/*
 * Concurrent traffic on the shared CQs: every QP (connected to itself)
 * sends 4 messages to its own 4 receives; 256 completions in 4 CQs of
 * all poll contexts, each accounted for exactly once.
 */
static noinline_for_stack void
sroce_test_traffic(struct sroce_test *t, struct ib_pd *pd,
		   struct ib_qp **qp, int nqp)
{
	const int per = 4, len = 256;
	u8 *buf = kzalloc(nqp * per * len * 2, GFP_KERNEL);
	u64 dma;
	int i, j, bad = 0, want = nqp * per * 2;

	if (!buf) {
		sroce_test_ok(t, false, "traffic buffer");
		return;
	}
	dma = ib_dma_map_single(t->dev, buf, nqp * per * len * 2,
				DMA_BIDIRECTIONAL);
	atomic_set(&t->traffic_ok, 0);
	atomic_set(&t->traffic_bad, 0);
	for (i = 0; i < nqp; i++) {
		for (j = 0; j < per; j++) {
			u64 off = (u64)(i * per + j) * len * 2;
			struct ib_sge rs = { .addr = dma + off + len,
					     .length = len,
					     .lkey = pd->local_dma_lkey };
			struct ib_sge ss = { .addr = dma + off, .length = len,
					     .lkey = pd->local_dma_lkey };
			struct ib_recv_wr rwr = {
				.wr_cqe = &sroce_test_traffic_cqe,
				.sg_list = &rs, .num_sge = 1,
			};
			struct ib_send_wr swr = {
				.wr_cqe = &sroce_test_traffic_cqe,
				.sg_list = &ss, .num_sge = 1,
				.opcode = IB_WR_SEND,
				.send_flags = IB_SEND_SIGNALED,
			};
			const struct ib_recv_wr *rbad;
			const struct ib_send_wr *sbad;

			sroce_test_fill(buf + off, len, i * per + j);
			if (ib_post_recv(qp[i], &rwr, &rbad) ||
			    ib_post_send(qp[i], &swr, &sbad))
				bad++;
		}
	}
	for (i = 0; i < 500 && atomic_read(&t->traffic_ok) +
			      atomic_read(&t->traffic_bad) < want; i++) {
		/* QP i's CQs are i % 4 and (i + 1) % 4: QP 0's first is DIRECT. */
		ib_process_cq_direct(qp[0]->send_cq, -1);
		wait_event_timeout(t->wq, atomic_read(&t->traffic_ok) +
				   atomic_read(&t->traffic_bad) >= want,
				   HZ / 100);
	}
	for (i = 0; i < nqp * per; i++)
		if (!sroce_test_same(buf + (u64)i * len * 2 + len, len, i))
			bad++;
	sroce_test_ok(t, !bad && atomic_read(&t->traffic_ok) == want &&
		      !atomic_read(&t->traffic_bad),
		      "32 QPs x 4 messages over 4 shared CQs: %d of %d completions, %d errors, %d bad",
		      atomic_read(&t->traffic_ok), want,
		      atomic_read(&t->traffic_bad), bad);
	ib_dma_unmap_single(t->dev, dma, nqp * per * len * 2,
			    DMA_BIDIRECTIONAL);
	kfree(buf);
}

/* The NVMe-oF shape: 1 PD, 32 QPs over 4 CQs, 64 MRs, 8 AHs. */
static void sroce_test_shape(struct sroce_test *t, struct ib_pd *pd,
			     int sgid_index)
{
	struct ib_cq *cq[4] = {};
	struct ib_qp *qp[32] = {};
	struct ib_mr *mr[64] = {};
	struct ib_ah *ah[8] = {};
	struct rdma_ah_attr ah_attr;
	int i, nqp = 0, nmr = 0, nah = 0, ncq = 0, err, bad = 0;

	for (i = 0; i < 4; i++) {
		cq[i] = ib_alloc_cq(t->dev, t, 256, 0, sroce_test_poll_ctx[i]);
		if (IS_ERR(cq[i]))
			cq[i] = NULL;
		else
			ncq++;
	}
	sroce_test_ok(t, ncq == 4,
		      "ib_alloc_cq in DIRECT, SOFTIRQ, WORKQUEUE, UNBOUND_WORKQUEUE");
	if (ncq != 4)
		goto out;
	for (i = 0; i < 32; i++) {
		qp[i] = sroce_test_rc_qp(t, pd, cq[i % 4], cq[(i + 1) % 4]);
		if (IS_ERR(qp[i])) {
			qp[i] = NULL;
			continue;
		}
		nqp++;
		err = sroce_test_connect(t, qp[i], qp[i]->qp_num, sgid_index);
		if (err)
			bad++;
	}
	sroce_test_ok(t, nqp == 32 && !bad,
		      "32 RC QPs sharing 4 CQs, all RTS (%d, %d bad)", nqp, bad);
	for (i = 0; i < 64; i++) {
		mr[i] = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 32);
		if (IS_ERR(mr[i]))
			mr[i] = NULL;
		else
			nmr++;
	}
	sroce_test_ok(t, nmr == 64, "64 FRWR MRs (%d)", nmr);
	for (i = 0; i < 64 && mr[i]; i++)
		if (i && mr[i]->lkey == mr[0]->lkey)
			bad++;
	sroce_test_ok(t, !bad, "MR keys are distinct");
	sroce_test_traffic(t, pd, qp, nqp);
	sroce_test_ah_attr(t->dev, &ah_attr, sgid_index);
	for (i = 0; i < 8; i++) {
		ah[i] = rdma_create_ah(pd, &ah_attr, RDMA_CREATE_AH_SLEEPABLE);
		if (IS_ERR(ah[i]))
			ah[i] = NULL;
		else
			nah++;
	}
	sroce_test_ok(t, nah == 8, "8 AHs (%d)", nah);

	/* Flush 2 receives per QP: every completion reaches its ULP callback
	 * in its CQ's poll context.
	 */
	atomic_set(&t->flushed, 0);
	for (i = 0; i < 32 && qp[i]; i++) {
		struct ib_recv_wr rwr[2] = {
			{ .wr_cqe = &sroce_test_cqe, .next = &rwr[1] },
			{ .wr_cqe = &sroce_test_cqe },
		};
		struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };
		const struct ib_recv_wr *bad_wr;

		if (ib_post_recv(qp[i], rwr, &bad_wr) ||
		    ib_modify_qp(qp[i], &a, IB_QP_STATE))
			bad++;
	}
	/* cq[0] is IB_POLL_DIRECT: its owner polls it. */
	ib_process_cq_direct(cq[0], -1);
	wait_event_timeout(t->wq, atomic_read(&t->flushed) == 64, 5 * HZ);
	sroce_test_ok(t, !bad && atomic_read(&t->flushed) == 64,
		      "64 flushes reach their callbacks in all poll contexts (%d)",
		      atomic_read(&t->flushed));
out:
	for (i = 0; i < 8; i++)
		if (ah[i])
			rdma_destroy_ah(ah[i], RDMA_DESTROY_AH_SLEEPABLE);
	for (i = 0; i < 64; i++)
		if (mr[i])
			ib_dereg_mr(mr[i]);
	for (i = 0; i < 32; i++)
		if (qp[i])
			ib_destroy_qp(qp[i]);
	for (i = 0; i < 4; i++)
		if (cq[i])
			ib_free_cq(cq[i]);
}

/* Is @mac in the multicast filter of @ndev? */
static bool sroce_test_mc_listed(struct net_device *ndev, const u8 *mac)
{
	struct netdev_hw_addr *ha;
	bool found = false;

	netif_addr_lock_bh(ndev);
	netdev_for_each_mc_addr(ha, ndev)
		if (ether_addr_equal(ha->addr, mac))
			found = true;
	netif_addr_unlock_bh(ndev);
	return found;
}

/*
 * Multicast attach and detach (IBA 10.5, 11.3): the first QP in a group
 * puts the group's MAC in the netdev's filter, the last one out takes it
 * away; detaching what is not attached is -EINVAL; a QP still attached
 * cannot be destroyed.
 */
static void sroce_test_mcast(struct sroce_test *t, struct ib_qp *qa,
			     struct ib_qp *qb, int sgid_index)
{
	/* ff0e::77 and its MAC (RFC 2464 7) */
	union ib_gid mgid = { .raw = { 0xff, 0x0e, [15] = 0x77 } };
	union ib_gid mgid2 = { .raw = { 0xff, 0x02, [15] = 0x77 } };
	static const u8 mac[ETH_ALEN] = { 0x33, 0x33, 0, 0, 0, 0x77 };
	const struct ib_gid_attr *ga = rdma_get_gid_attr(t->dev, 1, sgid_index);
	struct net_device *ndev;
	int err;

	sroce_test_ptr(t, ga, "mcast: the GID's netdev");
	if (IS_ERR(ga))
		return;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(ga);
	if (!IS_ERR(ndev))
		dev_hold(ndev);
	rcu_read_unlock();
	rdma_put_gid_attr(ga);
	if (IS_ERR(ndev))
		return;
	err = ib_attach_mcast(qa, &mgid, 0) ?: ib_attach_mcast(qb, &mgid, 0);
	sroce_test_ok(t, !err && sroce_test_mc_listed(ndev, mac),
		      "mcast: two QPs attached, the MAC in the filter (%d)",
		      err);
	sroce_test_rc(t, ib_attach_mcast(qa, &mgid, 0), -EEXIST,
		      "mcast: attaching again");
	sroce_test_rc(t, ib_destroy_qp(qa), -EBUSY,
		      "mcast: destroy of an attached QP");
	err = ib_detach_mcast(qa, &mgid, 0);
	sroce_test_ok(t, !err && sroce_test_mc_listed(ndev, mac),
		      "mcast: one QP detached, the group stays (%d)", err);
	sroce_test_rc(t, ib_detach_mcast(qa, &mgid, 0), -EINVAL,
		      "mcast: detach of a QP not attached");
	/* ff02::77: another group, the same MAC; each holds its entry. */
	err = ib_attach_mcast(qa, &mgid2, 0) ?: ib_detach_mcast(qb, &mgid, 0);
	sroce_test_ok(t, !err && sroce_test_mc_listed(ndev, mac),
		      "mcast: a group of the same MAC keeps it in the filter when the first goes (%d)",
		      err);
	err = ib_detach_mcast(qa, &mgid2, 0);
	sroce_test_ok(t, !err && !sroce_test_mc_listed(ndev, mac),
		      "mcast: last QP detached, the MAC out of the filter (%d)",
		      err);
	dev_put(ndev);
}

/* RESET -> INIT -> RTR -> RTS for a UD QP with Q_Key @qkey. */
static int sroce_test_ud_up(struct ib_qp *qp, u32 qkey)
{
	struct ib_qp_attr a = {
		.qp_state = IB_QPS_INIT, .port_num = 1, .qkey = qkey,
	};
	struct ib_qp_attr rtr = { .qp_state = IB_QPS_RTR };
	struct ib_qp_attr rts = { .qp_state = IB_QPS_RTS, .sq_psn = 0x42 };

	return ib_modify_qp(qp, &a, IB_QP_STATE | IB_QP_PKEY_INDEX |
			    IB_QP_PORT | IB_QP_QKEY) ?:
	       ib_modify_qp(qp, &rtr, IB_QP_STATE) ?:
	       ib_modify_qp(qp, &rts, IB_QP_STATE | IB_QP_SQ_PSN);
}

/* One UD send of @sge to @dqpn with Q_Key @qkey; waits for its completion. */
static int sroce_test_ud_send(struct ib_qp *qp, struct ib_cq *cq,
			      struct ib_ah *ah, u32 dqpn, u32 qkey,
			      struct ib_sge *sge, struct ib_wc *wc)
{
	struct ib_ud_wr wr = {
		.wr = { .opcode = IB_WR_SEND, .sg_list = sge, .num_sge = 1 },
		.ah = ah, .remote_qpn = dqpn, .remote_qkey = qkey,
	};

	return sroce_test_send(qp, cq, &wr.wr, wc);
}

/*
 * UD between two QPs of the device (IBA 9.8.4, 10.2.5, A17.4.5): the
 * receive gets the 40-byte GRH area (the IPv4 header in its last 20 bytes),
 * IB_WC_GRH, the source QPN and the network header type; a wrong Q_Key is
 * dropped; a WR Q_Key with the high bit set sends the QP's own Q_Key; a
 * message larger than the port's MTU is not sent, and is no error.
 */
static noinline_for_stack void
sroce_test_ud(struct sroce_test *t, struct ib_pd *pd, int sgid_index)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_UD,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp *qa = NULL, *qb = NULL, *qc = NULL;
	struct ib_cq_init_attr lcqa = { .cqe = 4 };
	struct rdma_ah_attr attr;
	struct ib_sge ssge, rsge;
	struct ib_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 };
	struct ib_ah *ah = NULL;
	struct ib_wc wc;
	struct ib_cq *cq, *rcq, *lcq = NULL;
	u64 dma;
	u8 *buf;
	int err, n;

	buf = kzalloc(8192, GFP_KERNEL);
	if (!buf)
		return;
	dma = ib_dma_map_single(t->dev, buf, 8192, DMA_BIDIRECTIONAL);
	ssge = (struct ib_sge){ .addr = dma, .length = 256,
				.lkey = pd->local_dma_lkey };
	rsge = (struct ib_sge){ .addr = dma + 4096, .length = 4096,
				.lkey = pd->local_dma_lkey };
	cq = ib_alloc_cq(t->dev, t, 16, 0, IB_POLL_DIRECT);
	rcq = IS_ERR(cq) ? cq : ib_alloc_cq(t->dev, t, 16, 0, IB_POLL_DIRECT);
	sroce_test_ptr(t, rcq, "UD: send and receive CQs");
	if (IS_ERR(rcq)) {
		if (!IS_ERR(cq))
			ib_free_cq(cq);
		goto out_buf;
	}
	init.send_cq = cq;
	init.recv_cq = rcq;
	qa = ib_create_qp(pd, &init);
	qb = IS_ERR(qa) ? qa : ib_create_qp(pd, &init);
	sroce_test_ptr(t, qb, "UD: two QPs");
	if (IS_ERR(qb))
		goto out;
	err = sroce_test_ud_up(qa, 0x1111) ?: sroce_test_ud_up(qb, 0x2222);
	sroce_test_rc(t, err, 0, "UD: both QPs to RTS with their Q_Keys");
	sroce_test_ah_attr(t->dev, &attr, sgid_index);
	ah = rdma_create_ah(pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	sroce_test_ptr(t, ah, "UD: AH to our own GID");
	if (err || IS_ERR(ah))
		goto out;

	/* A good send: what the receive completion must say. */
	sroce_test_fill(buf, 256, 1);
	err = ib_post_recv(qb, &rwr, NULL) ?:
	      sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x2222, &ssge, &wc) ?:
	      sroce_test_poll(rcq, &wc);
	sroce_test_ok(t, !err && wc.status == IB_WC_SUCCESS &&
		      wc.qp == qb && wc.byte_len == 40 + 256 &&
		      (wc.wc_flags & IB_WC_GRH) && wc.src_qp == qa->qp_num &&
		      (wc.wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE) &&
		      wc.network_hdr_type == RDMA_NETWORK_IPV4 &&
		      buf[4096 + 20] >> 4 == 4 &&
		      sroce_test_same(buf + 4096 + 40, 256, 1),
		      "UD: received with GRH area, src_qp, IPv4 header type (%d, status %d, len %u)",
		      err, wc.status, wc.byte_len);

	/* A wrong Q_Key is dropped; the next good one arrives instead. */
	sroce_test_fill(buf, 256, 2);
	err = ib_post_recv(qb, &rwr, NULL) ?:
	      sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x3333, &ssge, &wc);
	sroce_test_fill(buf, 256, 3);
	err = err ?:
	      sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x2222, &ssge, &wc) ?:
	      sroce_test_poll(rcq, &wc);
	sroce_test_ok(t, !err && wc.qp == qb && wc.status == IB_WC_SUCCESS &&
		      sroce_test_same(buf + 4096 + 40, 256, 3),
		      "UD: a wrong Q_Key is dropped (%d)", err);

	/* High bit set: the sender's own Q_Key goes on the wire. */
	err = ib_modify_qp(qa, &(struct ib_qp_attr){ .qkey = 0x2222 },
			   IB_QP_QKEY);
	sroce_test_fill(buf, 256, 4);
	err = err ?: ib_post_recv(qb, &rwr, NULL) ?:
	      sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x80000000, &ssge,
				 &wc) ?:
	      sroce_test_poll(rcq, &wc);
	sroce_test_ok(t, !err && wc.qp == qb && wc.status == IB_WC_SUCCESS &&
		      sroce_test_same(buf + 4096 + 40, 256, 4),
		      "UD: a WR Q_Key with the high bit sends the QP's (%d)",
		      err);

	/*
	 * Larger than the port's MTU (IBA 9.8.3.1): not sent and no error
	 * (C10-93.1.1).  The receive posted for it takes the next datagram.
	 */
	ssge.length = 4096;
	err = ib_post_recv(qb, &rwr, NULL) ?:
	      sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x2222, &ssge, &wc);
	msleep(300);
	sroce_test_ok(t, !err && wc.status == IB_WC_SUCCESS &&
		      ib_poll_cq(rcq, 1, &wc) == 0,
		      "UD: a send above the MTU completes, nothing arrives (%d, %d)",
		      err, wc.status);
	ssge.length = 256;
	sroce_test_fill(buf, 256, 5);
	err = sroce_test_ud_send(qa, cq, ah, qb->qp_num, 0x2222, &ssge, &wc) ?:
	      sroce_test_poll(rcq, &wc);
	sroce_test_ok(t, !err && wc.status == IB_WC_SUCCESS && wc.qp == qb &&
		      sroce_test_same(buf + 4096 + 40, 256, 5),
		      "UD: ... and the QP sends the next one (%d)", err);

	/*
	 * A UD send completes inside its post (the requester runs there):
	 * the comp_handler of a CQ of ib_create_cq(), the ULP's own, is
	 * called after the post returned, from the QP's work item.
	 */
	lcq = ib_create_cq(t->dev, sroce_test_comp, NULL, t, &lcqa);
	init.send_cq = lcq;
	qc = IS_ERR(lcq) ? ERR_CAST(lcq) : ib_create_qp(pd, &init);
	init.send_cq = cq;
	err = IS_ERR(qc) ? PTR_ERR(qc) : sroce_test_ud_up(qc, 0x1111);
	atomic_set(&t->comp_calls, 0);
	atomic_set(&t->comp_in_post, 0);
	err = err ?: ib_req_notify_cq(lcq, IB_CQ_NEXT_COMP) ?:
	      ib_post_recv(qb, &rwr, NULL);
	if (!err) {
		struct ib_ud_wr uwr = {
			.wr = { .wr_id = 7, .opcode = IB_WR_SEND,
				.send_flags = IB_SEND_SIGNALED,
				.sg_list = &ssge, .num_sge = 1 },
			.ah = ah, .remote_qpn = qb->qp_num,
			.remote_qkey = 0x2222,
		};

		WRITE_ONCE(t->poster, current);
		err = ib_post_send(qc, &uwr.wr, NULL);
		WRITE_ONCE(t->poster, NULL);
		wait_event_timeout(t->wq, atomic_read(&t->comp_calls), 2 * HZ);
	}
	n = err ? 0 : ib_poll_cq(lcq, 1, &wc);
	sroce_test_ok(t, !err && n == 1 && wc.status == IB_WC_SUCCESS &&
		      wc.wr_id == 7 && atomic_read(&t->comp_calls) == 1 &&
		      !atomic_read(&t->comp_in_post),
		      "UD: a send completed inside its post: an ib_create_cq() comp_handler called after the post (%d, %d, %d calls, %d inside)",
		      err, n, atomic_read(&t->comp_calls),
		      atomic_read(&t->comp_in_post));
	if (!err)
		sroce_test_poll(rcq, &wc);	/* its receive */
	sroce_test_mcast(t, qa, qb, sgid_index);
out:
	if (!IS_ERR_OR_NULL(qc))
		ib_destroy_qp(qc);
	if (!IS_ERR_OR_NULL(lcq))
		ib_destroy_cq(lcq);
	if (!IS_ERR_OR_NULL(ah))
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	if (!IS_ERR_OR_NULL(qb))
		ib_destroy_qp(qb);
	if (!IS_ERR_OR_NULL(qa))
		ib_destroy_qp(qa);
	ib_free_cq(rcq);
	ib_free_cq(cq);
out_buf:
	ib_dma_unmap_single(t->dev, dma, 8192, DMA_BIDIRECTIONAL);
	kfree(buf);
}

/* The cases that want a CQ of their own beside the PD. */
static void sroce_test_with_cq(struct sroce_test *t, struct ib_pd *pd,
			       void (*run)(struct sroce_test *t,
					   struct ib_pd *pd, struct ib_cq *cq))
{
	struct ib_cq *cq = ib_alloc_cq(t->dev, t, 64, 0, IB_POLL_DIRECT);

	sroce_test_ptr(t, cq, "ib_alloc_cq");
	if (IS_ERR(cq))
		return;
	run(t, pd, cq);
	ib_free_cq(cq);
}

static void sroce_test_case_limits(struct sroce_test *t, struct ib_pd *pd,
				   int sgid_index)
{
	sroce_test_with_cq(t, pd, sroce_test_limits);
}

static void sroce_test_case_srq(struct sroce_test *t, struct ib_pd *pd,
				int sgid_index)
{
	sroce_test_with_cq(t, pd, sroce_test_srq);
}

/*
 * The areas, in order.  Each makes and frees its own objects on the
 * shared PD, so a failure in one is reported and the next still runs.
 */
static const struct sroce_test_case {
	const char *name;
	void (*run)(struct sroce_test *t, struct ib_pd *pd, int sgid_index);
} sroce_test_cases[] = {
	{ "device and object limits", sroce_test_case_limits },
	{ "shared receive queues", sroce_test_case_srq },
	{ "objects filled to the device limits", sroce_test_fills },
	{ "QP state machine", sroce_test_qp_states },
	{ "completion queues", sroce_test_cq },
	{ "memory regions and address handles", sroce_test_mr_ah },
	{ "RC data transfer", sroce_test_data },
	{ "queue shapes", sroce_test_shape },
	{ "UD and Q_Keys", sroce_test_ud },
};

static void sroce_test_run(struct sroce_test *t)
{
	int sgid_index = sroce_test_sgid_index(t->dev);
	struct ib_pd *pd;
	unsigned int i;

	t->len += scnprintf(t->buf, SROCE_TEST_BUF, "KTAP version 1\n");
	pd = ib_alloc_pd(t->dev, 0);
	sroce_test_ptr(t, pd, "ib_alloc_pd");
	if (IS_ERR(pd))
		goto out;
	sroce_test_ok(t, pd->local_dma_lkey == t->dev->local_dma_lkey ||
		      pd->__internal_mr, "PD has a local DMA lkey");
	for (i = 0; i < ARRAY_SIZE(sroce_test_cases); i++) {
		t->len += scnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len,
				    "# %s\n", sroce_test_cases[i].name);
		sroce_test_cases[i].run(t, pd, sgid_index);
	}
	ib_dealloc_pd(pd);
out:
	t->len += scnprintf(t->buf + t->len, SROCE_TEST_BUF - t->len,
			    "1..%d\n# %d passed, %d failed\n", t->n,
			    t->n - t->failed, t->failed);
}

static ssize_t sroce_test_read(struct file *f, char __user *ubuf,
			       size_t count, loff_t *pos)
{
	struct sroce_test *t = f->private_data;

	return simple_read_from_buffer(ubuf, count, pos, t->buf, t->len);
}

static const struct file_operations sroce_test_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.read = sroce_test_read,
	.llseek = default_llseek,
};

static struct ib_client sroce_test_client;

static int sroce_test_add(struct ib_device *dev)
{
	struct sroce_test *t;

	if (dev->ops.driver_id != SROCE_DRIVER_ID)
		return -EOPNOTSUPP;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->buf = kvzalloc(SROCE_TEST_BUF, GFP_KERNEL);
	if (!t->buf) {
		kfree(t);
		return -ENOMEM;
	}
	t->dev = dev;
	init_waitqueue_head(&t->wq);
	sroce_test_run(t);
	t->file = debugfs_create_file(dev_name(&dev->dev), 0444, sroce_test_dir,
				      t, &sroce_test_fops);
	ib_set_client_data(dev, &sroce_test_client, t);
	return 0;
}

static void sroce_test_remove(struct ib_device *dev, void *data)
{
	struct sroce_test *t = data;

	debugfs_remove(t->file);
	kvfree(t->buf);
	kfree(t);
}

static struct ib_client sroce_test_client = {
	.name = "sroce_test",
	.add = sroce_test_add,
	.remove = sroce_test_remove,
};

static int __init sroce_test_init(void)
{
	int err;

	sroce_test_dir = debugfs_create_dir("sroce_test", NULL);
	err = ib_register_client(&sroce_test_client);
	if (err)
		debugfs_remove_recursive(sroce_test_dir);
	return err;
}

static void __exit sroce_test_exit(void)
{
	ib_unregister_client(&sroce_test_client);
	debugfs_remove_recursive(sroce_test_dir);
}

module_init(sroce_test_init);
module_exit(sroce_test_exit);

MODULE_DESCRIPTION("sroce in-kernel verbs test client");
MODULE_LICENSE("Dual BSD/GPL");

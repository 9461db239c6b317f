// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_hostile - attack the kernel through verbs, as any unprivileged
 * process can, and check that every answer is a clean error (a post error
 * or an error completion), never a crash, a hang or memory written where
 * it must not be.  The provider posts and polls through kernel commands,
 * so every WR field given here reaches sroce_post_send as it is.
 *
 * Usage: sroce_hostile [DEVICE [CASES]]   (default sroce0, cases abcdefghijk)
 * Prints TAP; exits 0 iff every check passed.
 *
 * One device, loopback: two RC QPs of one PD connected to each other over
 * the device's first RoCE v2 IPv4 GID.  The cases:
 *  a. SQ slots filled with inline data shaped like the kernel's SGEs (with
 *     non-canonical MR pointers), then reused by WRs with zero-length SGEs
 *     and by {0, 8}-byte SGE lists; the ring wraps several times;
 *  b. atomics and RDMA READ with IBV_SEND_INLINE;
 *  c. atomics with zero-length SGEs, an 8-byte result split over two MRs,
 *     and results of 4 and 16 bytes;
 *  d. bad lkeys, addresses and lengths, too many SGEs, wr_id patterns;
 *  e. RNR on RDMA WRITE with immediate and on SEND (IBA 9.7.5: recoverable);
 *  f. post_send racing modify_qp to ERR and to RESET, then dereg_mr;
 *  g. dereg_mr of an MR a WR stuck in RNR retries holds;
 *  h. the mapped CQ rings (sroce-abi.h) scribbled by the process: a
 *     consumer index far ahead makes the kernel see the ring full (a CQ
 *     overrun, IBV_EVENT_CQ_ERR), nothing else; the other CQs still work;
 *  i. the mapped SQ and RQ rings scribbled by the process: a malformed SQ
 *     entry and a malformed RQ entry complete with IBV_WC_LOC_QP_OP_ERR,
 *     then rings of garbage cost the QPs, and nothing else;
 *  j. raw uverbs write() commands whose driver data (RESIZE_CQ of a
 *     kernel and of a mapped CQ, ALLOC_PD, GET_CONTEXT) holds a byte the
 *     driver does not know: EOPNOTSUPP; the same with zeros is carried out;
 *  k. a consumer that never polls overruns its CQ, at the requester and at
 *     the responder: IBV_EVENT_CQ_ERR, and the QP whose completion was
 *     lost goes to Error with IBV_EVENT_QP_FATAL (IBA C9-218, C11-37); a
 *     SEND whose receive completion was lost is not acknowledged.
 *
 * Each case runs in a child process with its own device context: a case
 * that crashes, or a kernel path that never returns, costs that case only,
 * and the parent never waits on a process that sleeps uninterruptibly in
 * the kernel (a signal cannot interrupt such a sleep, so alarm() could not
 * either).  The child reports through a pipe:
 *   "T1 text" / "T0 text"   a passed / failed check
 *   "S text"                a call that has not returned: the child is stuck
 *   anything else           a diagnostic
 * Every wait has a deadline (SROCE_TIMEOUT_SCALE multiplies them).  A
 * child that cannot be killed (D state) ends the run with the diagnosis.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/sroce-abi.h>

#include "tap.h"

#define SQ_DEPTH	16
#define RQ_DEPTH	32
#define MAX_SEND_SGE	4
#define MAX_RECV_SGE	4
#define MAX_INLINE	256
#define MAX_BATCH	64

/* One registered buffer per case: four 64 KiB regions. */
#define BUF_SIZE	(256 * 1024)
#define SRC(d)		((d)->buf)
#define DST(d)		((d)->buf + 65536)
#define RCV(d)		((d)->buf + 131072)
#define RES(d)		((d)->buf + 196608)
#define RSLOT		512	/* receive slots in RCV */
#define NRSLOT		32

#define POISON		0xdead000000000000ULL	/* non-canonical */

static const char *dev_name = "sroce0";
static int scale = 1;		/* SROCE_TIMEOUT_SCALE */
#define WAIT_MS		(10000 * scale)	/* one completion, at most */

/* ---------------------------------------------------------------------- */
/* Both sides: time and patterns. */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint8_t pat(uint32_t seed, uint32_t i)
{
	return (uint8_t)((i * 7 + seed * 13 + (i >> 8)) ^ (seed >> 3));
}

static void fill(uint8_t *p, uint32_t seed, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(seed, i);
}

/* ---------------------------------------------------------------------- */
/* Child side: reporting through the pipe (stdout). */

static void ok(int cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void diag(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void stuck(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void ok(int cond, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("T%d %s\n", cond ? 1 : 0, line);	/* one write: atomic */
	fflush(stdout);
}

static void diag(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("# %s\n", line);
	fflush(stdout);
}

static void stuck(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("S %s\n", line);
	fflush(stdout);
}

static const char *wcs(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

static const char *errs(int err)
{
	return err ? strerror(err) : "0";
}

/*
 * The guard: a thread that watches one call at a time.  Past @fail_s it
 * reports a failed check (the call is too slow); past @stuck_s it reports
 * the child stuck, and the parent gives up on it.
 */
static struct {
	pthread_mutex_t lock;
	pthread_t thread;
	int running;
	const char *op;
	double start, fail_s, stuck_s;
	int failed, stuck;
} guard = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *guard_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&guard.lock);
		if (guard.op) {
			double t = now() - guard.start;

			if (guard.fail_s > 0 && t > guard.fail_s &&
			    !guard.failed) {
				guard.failed = 1;
				ok(0, "%s returns within %.0f s (still blocked)",
				   guard.op, guard.fail_s);
			}
			if (t > guard.stuck_s && !guard.stuck) {
				guard.stuck = 1;
				stuck("%s has not returned after %.0f s: the process sleeps in the kernel",
				      guard.op, guard.stuck_s);
			}
		}
		pthread_mutex_unlock(&guard.lock);
		msleep(50);
	}
	return NULL;
}

static void guard_begin(const char *op, double fail_s, double stuck_s)
{
	pthread_mutex_lock(&guard.lock);
	if (!guard.running &&
	    !pthread_create(&guard.thread, NULL, guard_main, NULL)) {
		pthread_detach(guard.thread);
		guard.running = 1;
	}
	guard.op = op;
	guard.start = now();
	guard.fail_s = fail_s;
	guard.stuck_s = stuck_s;
	guard.failed = 0;
	guard.stuck = 0;
	pthread_mutex_unlock(&guard.lock);
}

/* Returns 1 if the guard already reported the call as too slow. */
static int guard_end(void)
{
	int failed;

	pthread_mutex_lock(&guard.lock);
	guard.op = NULL;
	failed = guard.failed || guard.stuck;
	pthread_mutex_unlock(&guard.lock);
	return failed;
}

/* ---------------------------------------------------------------------- */
/* Child side: device, QP pairs, completions. */

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;	/* BUF_SIZE at buf, every access right */
	uint8_t *buf;
	union ibv_gid gid;
	int sgid;
	unsigned int rslot;	/* next receive slot */
};

struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];	/* qp[i] completes on cq[i] */
	struct ibv_qp_cap cap;	/* granted to qp[0] */
	int cqe, rnr_retry;
	int rq_out;		/* receives on qp[1] not completed */
};

/* The first RoCE v2 GID with an IPv4 address. */
static int find_gid(struct ibv_context *ctx, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < 64; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			*gid = e.gid;
			return i;
		}
	}
	return -1;
}

static int dev_open(struct dev *d)
{
	struct ibv_device **list;
	int i, n;

	memset(d, 0, sizeof(*d));
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			d->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!d->ctx) {
		diag("cannot open %s: %s", dev_name, strerror(errno));
		return -1;
	}
	d->sgid = find_gid(d->ctx, &d->gid);
	if (d->sgid < 0) {
		diag("%s has no RoCE v2 IPv4 GID", dev_name);
		return -1;
	}
	d->pd = ibv_alloc_pd(d->ctx);
	d->buf = aligned_alloc(4096, BUF_SIZE);
	if (!d->pd || !d->buf) {
		diag("ibv_alloc_pd / buffer: %s", strerror(errno));
		return -1;
	}
	memset(d->buf, 0, BUF_SIZE);
	d->mr = ibv_reg_mr(d->pd, d->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!d->mr) {
		diag("ibv_reg_mr: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Free what dev_open made; 0 if every call succeeded. */
static int dev_close(struct dev *d)
{
	int err, bad = 0;

	if (d->mr) {
		err = ibv_dereg_mr(d->mr);
		if (err)
			diag("ibv_dereg_mr: %s", strerror(err));
		bad |= err;
		if (!err)
			free(d->buf);	/* else the kernel may still use it */
	} else {
		free(d->buf);
	}
	if (d->pd) {
		err = ibv_dealloc_pd(d->pd);
		if (err)
			diag("ibv_dealloc_pd: %s", strerror(err));
		bad |= err;
	}
	if (d->ctx) {
		err = ibv_close_device(d->ctx);
		if (err)
			diag("ibv_close_device: %d", err);
		bad |= err;
	}
	return bad;
}

static struct ibv_qp *create_rc(struct dev *d, struct ibv_cq *cq,
				struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = SQ_DEPTH, .max_recv_wr = RQ_DEPTH,
			.max_send_sge = MAX_SEND_SGE,
			.max_recv_sge = MAX_RECV_SGE,
			.max_inline_data = MAX_INLINE,
		},
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);

	if (!qp)
		diag("ibv_create_qp: %s", strerror(errno));
	else if (cap)
		*cap = ia.cap;
	return qp;
}

static int modify_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static const char *state_str(int s)
{
	static const char *const names[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	return s >= 0 && s < 7 ? names[s] : "?";
}

/* RESET -> INIT -> RTR -> RTS, to @dqpn on our own GID. */
static int qp_connect(struct dev *d, struct ibv_qp *qp, uint32_t dqpn,
		      uint32_t sq_psn, uint32_t rq_psn, int rnr_retry)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err) {
		diag("modify QP %u to INIT: %s", qp->qp_num, strerror(err));
		return err;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = d->gid;
	a.ah_attr.grh.sgid_index = d->sgid;
	a.ah_attr.grh.hop_limit = 64;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err) {
		diag("modify QP %u to RTR: %s", qp->qp_num, strerror(err));
		return err;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 1;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (err)
		diag("modify QP %u to RTS: %s", qp->qp_num, strerror(err));
	return err;
}

static uint32_t next_psn(void)
{
	static uint32_t psn = 0x1234;

	psn = (psn * 1103515245u + 12345u) & 0xffffff;
	return psn;
}

/* Connect qp[0] and qp[1] to each other with fresh PSNs. */
static int pair_connect(struct dev *d, struct pair *p)
{
	uint32_t psn[2] = { next_psn(), next_psn() };
	int i;

	for (i = 0; i < 2; i++)
		if (qp_connect(d, p->qp[i], p->qp[!i]->qp_num, psn[i], psn[!i],
			       p->rnr_retry))
			return -1;
	return 0;
}

static int pair_close(struct pair *p)
{
	int i, err, bad = 0;

	for (i = 0; i < 2; i++) {
		if (!p->qp[i])
			continue;
		err = ibv_destroy_qp(p->qp[i]);
		if (err)
			diag("ibv_destroy_qp: %s", strerror(err));
		else
			p->qp[i] = NULL;
		bad |= err;
	}
	for (i = 0; i < 2; i++) {
		if (!p->cq[i])
			continue;
		err = ibv_destroy_cq(p->cq[i]);
		if (err)
			diag("ibv_destroy_cq: %s", strerror(err));
		else
			p->cq[i] = NULL;
		bad |= err;
	}
	p->rq_out = 0;
	return bad;
}

static int pair_open(struct dev *d, struct pair *p, int cqe, int rnr_retry)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->cqe = cqe;
	p->rnr_retry = rnr_retry;
	for (i = 0; i < 2; i++) {
		p->cq[i] = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
		if (!p->cq[i]) {
			diag("ibv_create_cq: %s", strerror(errno));
			goto fail;
		}
		p->qp[i] = create_rc(d, p->cq[i], i ? NULL : &p->cap);
		if (!p->qp[i])
			goto fail;
	}
	if (pair_connect(d, p))
		goto fail;
	return 0;
fail:
	pair_close(p);
	return -1;
}

/* A fresh pair when either QP left RTS (an error completion moves it). */
static int ensure(struct dev *d, struct pair *p)
{
	if (p->qp[0] && p->qp[1] && qp_state(p->qp[0]) == IBV_QPS_RTS &&
	    qp_state(p->qp[1]) == IBV_QPS_RTS)
		return 0;
	if (pair_close(p))
		return -1;
	return pair_open(d, p, p->cqe, p->rnr_retry);
}

static int renew(struct dev *d, struct pair *p)
{
	if (pair_close(p))
		return -1;
	return pair_open(d, p, p->cqe, p->rnr_retry);
}

/* Up to @n completions of @cq within @ms milliseconds: how many came. */
static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	double end = now() + ms / 1000.0;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0) {
			diag("ibv_poll_cq: %d", r);
			break;
		}
		got += r;
		if (got == n || now() > end)
			break;
		if (!r)
			usleep(100);
	}
	return got;
}

static int post_send1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	wr->next = NULL;
	return ibv_post_send(qp, wr, &bad);
}

/* @n receives of @len bytes on qp[1], one receive slot each (wr_id). */
static int post_recvs(struct dev *d, struct pair *p, int n, uint32_t len)
{
	int i, err;

	for (i = 0; i < n; i++) {
		unsigned int slot = d->rslot++ % NRSLOT;
		struct ibv_sge sge = {
			(uintptr_t)RCV(d) + slot * RSLOT, len, d->mr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = slot, .sg_list = &sge, .num_sge = 1,
		}, *bad;

		err = ibv_post_recv(p->qp[1], &wr, &bad);
		if (err) {
			diag("ibv_post_recv: %s", strerror(err));
			return -1;
		}
		p->rq_out++;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* a. Fake kernel SGEs in inline data, then zero-length SGEs in the slots. */

struct fake_sge {		/* the kernel's struct sroce_sge */
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
	uint64_t mr;
};

/* @len bytes of plausible SGEs whose MR pointers are non-canonical. */
static void craft(uint8_t *out, size_t len, struct dev *d, uint64_t addr,
		  uint32_t length)
{
	size_t off;

	for (off = 0; off < len; off += sizeof(struct fake_sge)) {
		struct fake_sge f = {
			.addr = addr ? addr : (uintptr_t)d->buf + off,
			.length = length ? length : 64 + off,
			.lkey = d->mr->lkey,
			.mr = POISON | (off << 4),
		};
		size_t n = len - off < sizeof(f) ? len - off : sizeof(f);

		memcpy(out + off, &f, n);
	}
}

/*
 * Post @n WRs (as one chain or one by one), wait for their completions on
 * cq[0] and for the receives their SENDs consume on cq[1], check the data
 * of every successful one.  Strict: every WR must be accepted and succeed;
 * otherwise refusals and error completions pass, wrong data never does.
 * Returns -1 on a timeout (the case stops), else 0.
 */
static int run_batch(struct dev *d, struct pair *p, struct ibv_send_wr *wr,
		     int n, int chain, int strict, const char *what)
{
	static uint8_t expect[MAX_BATCH][RSLOT];
	uint32_t elen[MAX_BATCH];
	int acc[MAX_BATCH], nacc = 0, nsend = 0, nrecv, refused = 0;
	int good = 0, errors = 0, baddata = 0, i, k, got, rgot;
	struct ibv_wc wc[MAX_BATCH], rwc[MAX_BATCH];
	enum ibv_wc_status first = IBV_WC_SUCCESS;
	struct ibv_send_wr *bad;
	int err = 0;

	/* What each WR carries, gathered now, and clean targets. */
	for (i = 0; i < n; i++) {
		elen[i] = 0;
		for (k = 0; k < wr[i].num_sge; k++) {
			uint32_t l = wr[i].sg_list[k].length;

			if (l && elen[i] + l <= RSLOT)
				memcpy(expect[i] + elen[i],
				       (void *)(uintptr_t)wr[i].sg_list[k].addr,
				       l);
			elen[i] += l;
		}
		if (wr[i].opcode == IBV_WR_SEND)
			nsend++;
		else if (elen[i] <= RSLOT)
			memset((void *)(uintptr_t)wr[i].wr.rdma.remote_addr, 0,
			       elen[i] + 8);
	}
	if (nsend > p->rq_out &&
	    post_recvs(d, p, nsend - p->rq_out, RSLOT))
		return -1;

	if (chain) {
		for (i = 0; i < n; i++)
			wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		bad = NULL;
		err = ibv_post_send(p->qp[0], wr, &bad);
		for (i = 0; i < n; i++) {
			acc[i] = !err || (bad && &wr[i] < bad);
			nacc += acc[i];
		}
		refused = n - nacc;
		for (i = 0; i < n; i++)
			wr[i].next = NULL;
	} else {
		for (i = 0; i < n; i++) {
			int e = post_send1(p->qp[0], &wr[i]);

			acc[i] = !e;
			nacc += !e;
			if (e) {
				refused++;
				if (!err)
					err = e;
			}
		}
	}

	got = poll_n(p->cq[0], wc, nacc, WAIT_MS);
	if (got < nacc) {
		ok(0, "%s: %d of %d completions in %d s", what, got, nacc,
		   WAIT_MS / 1000);
		return -1;
	}
	nsend = 0;
	for (i = 0, k = 0; i < n; i++) {
		if (!acc[i])
			continue;
		if (wc[k].wr_id != wr[i].wr_id)
			diag("%s: completion %d has wr_id %#llx, not %#llx",
			     what, k, (unsigned long long)wc[k].wr_id,
			     (unsigned long long)wr[i].wr_id);
		if (wc[k].status == IBV_WC_SUCCESS) {
			good++;
			if (wr[i].opcode == IBV_WR_SEND)
				nsend++;
		} else {
			errors++;
			if (first == IBV_WC_SUCCESS)
				first = wc[k].status;
		}
		k++;
	}
	/* The receives of the successful SENDs, in order. */
	rgot = poll_n(p->cq[1], rwc, nsend, errors ? 200 : WAIT_MS);
	p->rq_out -= rgot;
	nrecv = 0;
	for (i = 0, k = 0; i < n; i++) {
		if (!acc[i])
			continue;
		if (wc[k++].status != IBV_WC_SUCCESS || elen[i] > RSLOT)
			continue;
		if (wr[i].opcode == IBV_WR_SEND) {
			struct ibv_wc *r = &rwc[nrecv++];

			if (nrecv > rgot || r->status != IBV_WC_SUCCESS ||
			    r->byte_len != elen[i] ||
			    memcmp(RCV(d) + r->wr_id % NRSLOT * RSLOT,
				   expect[i], elen[i])) {
				baddata++;
				if (nrecv <= rgot)
					diag("%s: WR %d: receive %s, %u bytes (%u sent)",
					     what, i, wcs(r->status),
					     r->byte_len, elen[i]);
			}
		} else if (memcmp((void *)(uintptr_t)wr[i].wr.rdma.remote_addr,
				  expect[i], elen[i])) {
			baddata++;
			diag("%s: WR %d: the written data differs", what, i);
		}
	}
	if (strict)
		ok(!refused && good == n && !baddata,
		   "%s: %d accepted, %d succeeded, %d with wrong data%s%s",
		   what, nacc, good, baddata, errors ? ", first error " : "",
		   errors ? wcs(first) : "");
	else
		ok(!baddata,
		   "%s: all complete (%d refused%s%s, %d succeeded, %d errors%s%s), none with wrong data",
		   what, refused, refused ? ": " : "",
		   refused ? strerror(err) : "", good, errors,
		   errors ? ", first " : "", errors ? wcs(first) : "");
	if (errors || rgot < nsend) {
		diag("%s: renewing the QP pair", what);
		if (renew(d, p))
			return -1;
	}
	return 0;
}

/* 8 bytes written and read back: the pair still moves data. */
static int still_works(struct dev *d, struct pair *p, const char *what)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x5a, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc;
	int good = 0;

	if (ensure(d, p)) {
		ok(0, "%s: a working QP pair", what);
		return -1;
	}
	fill(SRC(d), 99, 8);
	memset(DST(d), 0, 8);
	memset(RES(d), 0, 8);
	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	wr.wr.rdma.rkey = d->mr->rkey;
	if (!post_send1(p->qp[0], &wr) &&
	    poll_n(p->cq[0], &wc, 1, WAIT_MS) == 1 &&
	    wc.status == IBV_WC_SUCCESS) {
		sge.addr = (uintptr_t)RES(d);
		wr.opcode = IBV_WR_RDMA_READ;
		if (!post_send1(p->qp[0], &wr) &&
		    poll_n(p->cq[0], &wc, 1, WAIT_MS) == 1 &&
		    wc.status == IBV_WC_SUCCESS)
			good = !memcmp(RES(d), SRC(d), 8) &&
			       !memcmp(DST(d), SRC(d), 8);
	}
	ok(good, "%s: RDMA WRITE and READ back still move the right data",
	   what);
	return good ? 0 : -1;
}

static void case_a(struct dev *d)
{
	static uint8_t crafted[MAX_INLINE];
	struct ibv_sge sge[MAX_BATCH][MAX_SEND_SGE];
	struct ibv_send_wr wr[MAX_BATCH];
	struct pair p;
	char what[96];
	int r, i, k, n;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "a: a connected QP pair");
		return;
	}
	n = p.cap.max_send_wr < MAX_BATCH ? (int)p.cap.max_send_wr : MAX_BATCH;
	diag("a: SQ of %d slots, max_inline %u, max_send_sge %u", n,
	     p.cap.max_inline_data, p.cap.max_send_sge);
	craft(crafted, sizeof(crafted), d, 0, 0);

	for (r = 0; r < 4; r++) {
		/* Inline WRITEs and SENDs whose bytes look like SGEs. */
		memset(wr, 0, sizeof(wr));
		for (i = 0; i < n; i++) {
			wr[i].wr_id = 0xa0000 + r * 256 + i;
			wr[i].sg_list = sge[i];
			wr[i].send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
			if (i % 4 == 1) {
				sge[i][0] = (struct ibv_sge){
					(uintptr_t)crafted, 100, 0 };
				sge[i][1] = (struct ibv_sge){
					(uintptr_t)crafted + 100,
					MAX_INLINE - 100, 0 };
				wr[i].num_sge = 2;
			} else {
				sge[i][0] = (struct ibv_sge){
					(uintptr_t)crafted,
					i % 4 == 2 ? MAX_INLINE - 24 - i :
						     MAX_INLINE, 0 };
				wr[i].num_sge = 1;
			}
			if (i % 3 == 2) {
				wr[i].opcode = IBV_WR_SEND;
			} else {
				wr[i].opcode = IBV_WR_RDMA_WRITE;
				wr[i].wr.rdma.remote_addr =
					(uintptr_t)DST(d) + i * RSLOT;
				wr[i].wr.rdma.rkey = d->mr->rkey;
			}
		}
		snprintf(what, sizeof(what),
			 "a: round %d: %d inline WRs of fake kernel SGEs fill the SQ%s",
			 r + 1, n, r % 2 ? "" : " (one chain)");
		if (run_batch(d, &p, wr, n, r % 2 == 0, 1, what))
			goto out;

		/* The same slots: 2..4 SGEs, all of length 0. */
		memset(wr, 0, sizeof(wr));
		for (i = 0; i < n; i++) {
			wr[i].wr_id = 0xa1000 + r * 256 + i;
			wr[i].sg_list = sge[i];
			wr[i].num_sge = 2 + i % 3;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			for (k = 0; k < wr[i].num_sge; k++)
				sge[i][k] = (struct ibv_sge){
					i % 4 == 3 ? POISON + k * 8 :
					(uintptr_t)SRC(d) + 64 * k, 0,
					d->mr->lkey };
			if (i % 2) {
				wr[i].opcode = IBV_WR_SEND;
			} else {
				wr[i].opcode = IBV_WR_RDMA_WRITE;
				wr[i].wr.rdma.remote_addr =
					(uintptr_t)DST(d) + i * RSLOT;
				wr[i].wr.rdma.rkey = d->mr->rkey;
			}
		}
		snprintf(what, sizeof(what),
			 "a: round %d: %d WRs of 2-4 zero-length SGEs in the same slots",
			 r + 1, n);
		if (run_batch(d, &p, wr, n, 0, 0, what))
			goto out;

		/* And {0}, {8} (or {8}, {0}, {0}): 8 bytes each. */
		fill(SRC(d) + 2048, 1000 + r, 16 * MAX_BATCH);
		memset(wr, 0, sizeof(wr));
		for (i = 0; i < n; i++) {
			struct ibv_sge zero = {
				(uintptr_t)SRC(d) + 1024 + 16 * i, 0,
				d->mr->lkey };
			struct ibv_sge eight = {
				(uintptr_t)SRC(d) + 2048 + 16 * i, 8,
				d->mr->lkey };

			wr[i].wr_id = 0xa2000 + r * 256 + i;
			wr[i].sg_list = sge[i];
			wr[i].send_flags = IBV_SEND_SIGNALED;
			if (i % 3 == 2) {
				sge[i][0] = eight;
				sge[i][1] = zero;
				sge[i][2] = zero;
				wr[i].num_sge = 3;
			} else {
				sge[i][0] = zero;
				sge[i][1] = eight;
				wr[i].num_sge = 2;
			}
			if (i % 2) {
				wr[i].opcode = IBV_WR_SEND;
			} else {
				wr[i].opcode = IBV_WR_RDMA_WRITE;
				wr[i].wr.rdma.remote_addr =
					(uintptr_t)DST(d) + i * RSLOT;
				wr[i].wr.rdma.rkey = d->mr->rkey;
			}
		}
		snprintf(what, sizeof(what),
			 "a: round %d: %d WRs of {0, 8}-byte SGE lists in the same slots",
			 r + 1, n);
		if (run_batch(d, &p, wr, n, r % 2, 0, what))
			goto out;
	}
	still_works(d, &p, "a: after the ring wrapped 12 times");
out:
	pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* b. Atomics and RDMA READ with IBV_SEND_INLINE. */

static int inline_rd(struct dev *d, struct pair *p, enum ibv_wr_opcode op,
		     const char *name)
{
	uint8_t crafted[48], before[64];
	uint64_t *target = (uint64_t *)(DST(d) + 4096), tv = 0x1000;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0xb0 + op, .sg_list = &sge, .num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc;
	int err;

	if (ensure(d, p)) {
		ok(0, "b: %s: a working QP pair", name);
		return -1;
	}
	/* The inline bytes describe an 8-byte SGE at RES: never use it. */
	craft(crafted, sizeof(crafted), d, (uintptr_t)RES(d), 8);
	memset(RES(d), 0x5a, sizeof(before));
	memcpy(before, RES(d), sizeof(before));
	*target = tv;
	sge = (struct ibv_sge){ (uintptr_t)crafted, sizeof(crafted), 0 };
	if (op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = (uintptr_t)target;
		wr.wr.rdma.rkey = d->mr->rkey;
	} else {
		wr.wr.atomic.remote_addr = (uintptr_t)target;
		wr.wr.atomic.rkey = d->mr->rkey;
		wr.wr.atomic.compare_add = op == IBV_WR_ATOMIC_CMP_AND_SWP ?
					   tv : 1;
		wr.wr.atomic.swap = 0x2000;
	}
	err = post_send1(p->qp[0], &wr);
	if (err) {
		ok(err == EINVAL, "b: %s with IBV_SEND_INLINE: post refused (%s)",
		   name, strerror(err));
		return 0;
	}
	if (poll_n(p->cq[0], &wc, 1, WAIT_MS) != 1) {
		ok(0, "b: %s with IBV_SEND_INLINE: no completion in %d s",
		   name, WAIT_MS / 1000);
		return -1;
	}
	ok(wc.status != IBV_WC_SUCCESS && !memcmp(RES(d), before, sizeof(before)),
	   "b: %s with IBV_SEND_INLINE: accepted, then %s%s", name,
	   wc.status == IBV_WC_SUCCESS ? "succeeded: the inline bytes served as an SGE" :
	   "completed in error: ", wc.status == IBV_WC_SUCCESS ? "" : wcs(wc.status));
	if (memcmp(RES(d), before, sizeof(before)))
		diag("b: %s: the buffer the inline bytes name was written", name);
	if (*target != tv)
		diag("b: %s: the remote word changed to %#llx", name,
		     (unsigned long long)*target);
	return 0;
}

static void case_b(struct dev *d)
{
	struct pair p;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "b: a connected QP pair");
		return;
	}
	if (!inline_rd(d, &p, IBV_WR_ATOMIC_FETCH_AND_ADD, "FETCH_ADD") &&
	    !inline_rd(d, &p, IBV_WR_ATOMIC_CMP_AND_SWP, "CMP_AND_SWP") &&
	    !inline_rd(d, &p, IBV_WR_RDMA_READ, "RDMA READ"))
		still_works(d, &p, "b: afterwards");
	pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* c. Atomics and their result SGEs. */

#define ATOMIC_V	0x1122334455667788ULL

/*
 * FETCH_ADD 1 to the word at DST+4096 (holding ATOMIC_V) with @sge.
 * @must_fail: only a refusal or an error completion pass.  Otherwise a
 * refusal passes, or success with @check() true.  Returns -1 to stop.
 */
static int atomic_sges(struct dev *d, struct pair *p, struct ibv_sge *sge,
		       int nsge, int must_fail, int (*check)(struct dev *),
		       const char *what)
{
	volatile uint64_t *target = (uint64_t *)(DST(d) + 4096);
	struct ibv_send_wr wr = {
		.wr_id = 0xc0, .sg_list = sge, .num_sge = nsge,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc;
	int err;

	if (ensure(d, p)) {
		ok(0, "c: %s: a working QP pair", what);
		return -1;
	}
	*target = ATOMIC_V;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = d->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	err = post_send1(p->qp[0], &wr);
	if (err) {
		ok(1, "c: %s: post refused (%s)", what, strerror(err));
		return 0;
	}
	if (poll_n(p->cq[0], &wc, 1, WAIT_MS) != 1) {
		ok(0, "c: %s: no completion in %d s", what, WAIT_MS / 1000);
		return -1;
	}
	if (must_fail)
		ok(wc.status != IBV_WC_SUCCESS, "c: %s: accepted, then %s",
		   what, wc.status == IBV_WC_SUCCESS ? "succeeded" :
		   wcs(wc.status));
	else
		ok(wc.status == IBV_WC_SUCCESS && check(d) &&
		   *target == ATOMIC_V + 1,
		   "c: %s: accepted, then %s, result %s, target %s", what,
		   wcs(wc.status), check(d) ? "right" : "WRONG",
		   *target == ATOMIC_V + 1 ? "incremented" : "NOT incremented");
	return 0;
}

static int res_is_v(struct dev *d)
{
	uint64_t v;

	memcpy(&v, RES(d), 8);
	return v == ATOMIC_V;
}

/* The split case: two pages registered apart, a guard page between. */
static uint8_t *split_pg;

static int split_ok(struct dev *d)
{
	uint64_t v;
	int i, good = 1;

	(void)d;
	memcpy(&v, split_pg + 4092, 4);
	memcpy((uint8_t *)&v + 4, split_pg + 8192, 4);
	good = v == ATOMIC_V;
	for (i = 4084; i < 4092; i++)
		good &= split_pg[i] == 0xcc;
	for (i = 4096; i < 8192; i++)
		good &= split_pg[i] == 0xee;
	for (i = 8196; i < 8204; i++)
		good &= split_pg[i] == 0xdd;
	return good;
}

static void case_c(struct dev *d)
{
	struct ibv_mr *mr1 = NULL, *mr2 = NULL;
	struct ibv_sge sge[2];
	struct pair p;
	uint64_t v;
	int err;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "c: a connected QP pair");
		return;
	}
	memset(RES(d), 0x5a, 64);
	sge[0] = (struct ibv_sge){ (uintptr_t)RES(d) + 64, 0, d->mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)RES(d), 8, d->mr->lkey };
	if (atomic_sges(d, &p, sge, 2, 0, res_is_v,
			"FETCH_ADD into SGEs {0 bytes}, {8 bytes}"))
		goto out;
	memset(RES(d), 0x5a, 64);
	sge[0] = (struct ibv_sge){ (uintptr_t)RES(d), 8, d->mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)RES(d) + 64, 0, d->mr->lkey };
	if (atomic_sges(d, &p, sge, 2, 0, res_is_v,
			"FETCH_ADD into SGEs {8 bytes}, {0 bytes}"))
		goto out;

	/* {4 bytes at the end of MR1}, {4 bytes in MR2}. */
	split_pg = aligned_alloc(4096, 3 * 4096);
	if (!split_pg) {
		ok(0, "c: memory for the split result");
		goto out;
	}
	memset(split_pg, 0xcc, 4096);
	memset(split_pg + 4096, 0xee, 4096);
	memset(split_pg + 8192, 0xdd, 4096);
	memset(split_pg + 4092, 0xaa, 4);
	memset(split_pg + 8192, 0xbb, 4);
	mr1 = ibv_reg_mr(d->pd, split_pg, 4096, IBV_ACCESS_LOCAL_WRITE);
	mr2 = ibv_reg_mr(d->pd, split_pg + 8192, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr1 || !mr2) {
		ok(0, "c: two one-page MRs (%s)", strerror(errno));
		goto out;
	}
	sge[0] = (struct ibv_sge){ (uintptr_t)split_pg + 4092, 4, mr1->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)split_pg + 8192, 4, mr2->lkey };
	if (atomic_sges(d, &p, sge, 2, 0, split_ok,
			"FETCH_ADD into {4 bytes at the end of MR1}, {4 bytes of MR2}"))
		goto out;
	memcpy(&v, split_pg + 4092, 4);
	memcpy((uint8_t *)&v + 4, split_pg + 8192, 4);
	if (v != ATOMIC_V && v != 0xbbbbbbbbaaaaaaaaULL)
		diag("c: split result %#llx (want %#llx)",
		     (unsigned long long)v, (unsigned long long)ATOMIC_V);
	if (split_pg[4096] != 0xee)
		diag("c: the page after MR1 (not registered) was written");

	/* Results of 4 and 16 bytes. */
	sge[0] = (struct ibv_sge){ (uintptr_t)RES(d), 4, d->mr->lkey };
	if (atomic_sges(d, &p, sge, 1, 1, NULL, "FETCH_ADD into 4 bytes"))
		goto out;
	sge[0] = (struct ibv_sge){ (uintptr_t)RES(d), 16, d->mr->lkey };
	if (atomic_sges(d, &p, sge, 1, 1, NULL, "FETCH_ADD into 16 bytes"))
		goto out;
	sge[0] = (struct ibv_sge){ (uintptr_t)RES(d), 8, d->mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)RES(d) + 8, 8, d->mr->lkey };
	if (atomic_sges(d, &p, sge, 2, 1, NULL,
			"FETCH_ADD into two SGEs of 8 bytes"))
		goto out;
	still_works(d, &p, "c: afterwards");
out:
	pair_close(&p);
	err = 0;
	if (mr1)
		err |= ibv_dereg_mr(mr1);
	if (mr2)
		err |= ibv_dereg_mr(mr2);
	if (err)
		diag("c: ibv_dereg_mr of the split MRs failed");
	else
		free(split_pg);
}

/* ---------------------------------------------------------------------- */
/* d. Bad keys, addresses, lengths, SGE counts; wr_id patterns. */

/*
 * Post @wr on qp[0]: a clean failure is a post error or an error
 * completion.  With @recv a receive of 4 KiB is posted on qp[1] first (a
 * SEND that got through would otherwise wait in RNR retries).
 */
static int expect_fail(struct dev *d, struct pair *p, struct ibv_send_wr *wr,
		       int recv, const char *what)
{
	struct ibv_wc wc;
	int err;

	if (ensure(d, p)) {
		ok(0, "d: %s: a working QP pair", what);
		return -1;
	}
	if (recv && !p->rq_out && post_recvs(d, p, 1, RSLOT))
		return -1;
	err = post_send1(p->qp[0], wr);
	if (err) {
		ok(1, "d: %s: post refused (%s)", what, strerror(err));
		return 0;
	}
	if (poll_n(p->cq[0], &wc, 1, WAIT_MS) != 1) {
		ok(0, "d: %s: no completion in %d s", what, WAIT_MS / 1000);
		return -1;
	}
	ok(wc.status != IBV_WC_SUCCESS && wc.wr_id == wr->wr_id,
	   "d: %s: accepted, then %s%s", what,
	   wc.status == IBV_WC_SUCCESS ? "succeeded" : wcs(wc.status),
	   wc.wr_id == wr->wr_id ? "" : " (wrong wr_id)");
	return 0;
}

static uint32_t xs32(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* A receive SGE qp[1] cannot use; qp[0] SENDs 64 bytes to it. */
static int bad_recv(struct dev *d, struct pair *p, struct ibv_sge *rsge,
		    const char *what)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 64, d->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xd5, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr rwr = {
		.wr_id = 0xd6, .sg_list = rsge, .num_sge = 1,
	}, *rbad;
	struct ibv_wc swc, rwc;
	int err, ns, nr;

	if (renew(d, p)) {	/* no receive of ours may be first */
		ok(0, "d: %s: a working QP pair", what);
		return -1;
	}
	err = ibv_post_recv(p->qp[1], &rwr, &rbad);
	if (err) {
		ok(1, "d: %s: post_recv refused (%s)", what, strerror(err));
		return 0;
	}
	err = post_send1(p->qp[0], &wr);
	if (err) {
		ok(0, "d: %s: the SEND to it is refused (%s)", what,
		   strerror(err));
		return 0;
	}
	ns = poll_n(p->cq[0], &swc, 1, WAIT_MS);
	nr = poll_n(p->cq[1], &rwc, 1, WAIT_MS);
	ok(ns == 1 && nr == 1 && rwc.status != IBV_WC_SUCCESS &&
	   rwc.wr_id == 0xd6,
	   "d: %s: the receive completes in error (%s), the SEND completes (%s)",
	   what, nr ? wcs(rwc.status) : "none",
	   ns ? wcs(swc.status) : "none");
	return ns == 1 && nr == 1 ? 0 : -1;
}

static void case_d(struct dev *d)
{
	static const uint64_t ids[4] = {
		0, ~0ULL, 0x8000000000000000ULL, 0x0123456789abcdefULL,
	};
	struct ibv_sge sge[2], *many;
	struct ibv_send_wr wr, wrs[4];
	struct ibv_recv_wr rwr, rwrs[4], *rbad;
	struct ibv_mr *tmp, *ro;
	struct ibv_wc wc[4];
	struct pair p;
	uint32_t seed = 0x2545f491, stale, key;
	char what[96];
	int i, err, got, good, nmany = 65536;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "d: a connected QP pair");
		return;
	}
	diag("d: granted max_send_sge %u, max_recv_sge %u", p.cap.max_send_sge,
	     p.cap.max_recv_sge);
#define WRITE64(a, l, k) do {						\
		sge[0] = (struct ibv_sge){ (a), (l), (k) };		\
		memset(&wr, 0, sizeof(wr));				\
		wr.wr_id = 0xd0; wr.sg_list = sge; wr.num_sge = 1;	\
		wr.opcode = IBV_WR_RDMA_WRITE;				\
		wr.send_flags = IBV_SEND_SIGNALED;			\
		wr.wr.rdma.remote_addr = (uintptr_t)DST(d);		\
		wr.wr.rdma.rkey = d->mr->rkey;				\
	} while (0)
#define TRY(what, recv) do {						\
		if (expect_fail(d, &p, &wr, recv, what))		\
			goto out;					\
	} while (0)

	WRITE64((uintptr_t)SRC(d), 64, 0);
	TRY("RDMA WRITE from lkey 0", 0);
	for (i = 0; i < 8; i++) {
		do
			key = xs32(&seed);
		while (key == d->mr->lkey);
		WRITE64((uintptr_t)SRC(d), 64, key);
		snprintf(what, sizeof(what), "RDMA WRITE from random lkey %#x",
			 key);
		TRY(what, 0);
	}
	WRITE64((uintptr_t)SRC(d), 64, d->mr->lkey ^ 0x5a);
	TRY("RDMA WRITE from our lkey with another key byte", 0);
	WRITE64((uintptr_t)SRC(d), 64, d->mr->lkey + 0x100);
	TRY("RDMA WRITE from the lkey of the next MR index", 0);
	tmp = ibv_reg_mr(d->pd, SRC(d), 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!tmp) {
		ok(0, "d: a temporary MR (%s)", strerror(errno));
		goto out;
	}
	stale = tmp->lkey;
	err = ibv_dereg_mr(tmp);
	if (err) {
		ok(0, "d: ibv_dereg_mr of an idle MR (%s)", strerror(err));
		goto out;
	}
	WRITE64((uintptr_t)SRC(d), 64, stale);
	TRY("RDMA WRITE from the lkey of a deregistered MR", 0);
	WRITE64((uintptr_t)d->buf - 4096, 64, d->mr->lkey);
	TRY("RDMA WRITE from below the MR", 0);
	WRITE64((uintptr_t)d->buf + BUF_SIZE - 32, 64, d->mr->lkey);
	TRY("RDMA WRITE from a range crossing the end of the MR", 0);
	WRITE64((uintptr_t)d->buf + BUF_SIZE, 64, d->mr->lkey);
	TRY("RDMA WRITE from past the MR", 0);
	WRITE64(0, 64, d->mr->lkey);
	TRY("RDMA WRITE from address 0", 0);
	WRITE64(~0ULL - 31, 64, d->mr->lkey);
	TRY("RDMA WRITE from a range wrapping around 2^64", 0);
	WRITE64((uintptr_t)SRC(d), 0xffffffffu, d->mr->lkey);
	TRY("RDMA WRITE of length 0xffffffff", 0);
	WRITE64((uintptr_t)SRC(d), 0x80000000u, d->mr->lkey);
	sge[1] = sge[0];
	wr.num_sge = 2;
	TRY("RDMA WRITE of two 2 GiB SGEs", 0);
	WRITE64((uintptr_t)SRC(d), 64, 0);
	wr.opcode = IBV_WR_SEND;
	TRY("SEND from lkey 0", 1);
	WRITE64((uintptr_t)SRC(d), 64, d->mr->lkey + 0x100);
	wr.opcode = IBV_WR_SEND;
	TRY("SEND from a foreign lkey", 1);

	/* Local writes into memory registered without LOCAL_WRITE. */
	ro = ibv_reg_mr(d->pd, RES(d) + 4096, 4096, 0);
	if (!ro) {
		ok(0, "d: a read-only MR (%s)", strerror(errno));
		goto out;
	}
	WRITE64((uintptr_t)RES(d) + 4096, 64, ro->lkey);
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	if (expect_fail(d, &p, &wr, 0, "RDMA READ into a read-only MR"))
		goto out_ro;
	WRITE64((uintptr_t)RES(d) + 4096, 8, ro->lkey);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)DST(d) + 4096;
	wr.wr.atomic.rkey = d->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	if (expect_fail(d, &p, &wr, 0, "FETCH_ADD into a read-only MR"))
		goto out_ro;
	err = ibv_dereg_mr(ro);
	ro = NULL;
	if (err)
		diag("d: ibv_dereg_mr of the read-only MR: %s", strerror(err));

	/* More SGEs than the QP has: EINVAL, on both queues. */
	many = calloc(nmany, sizeof(*many));
	if (!many) {
		ok(0, "d: memory for SGE lists");
		goto out;
	}
	for (i = 0; i < nmany; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)SRC(d) + (i % 64) * 8, 8,
					    d->mr->lkey };
	if (ensure(d, &p)) {
		ok(0, "d: a working QP pair");
		free(many);
		goto out;
	}
	WRITE64((uintptr_t)SRC(d), 8, d->mr->lkey);
	wr.sg_list = many;
	wr.num_sge = p.cap.max_send_sge + 1;
	err = post_send1(p.qp[0], &wr);
	ok(err == EINVAL, "d: post_send with max_send_sge + 1 SGEs: EINVAL (%s)",
	   errs(err));
	wr.num_sge = 33;
	err = post_send1(p.qp[0], &wr);
	ok(err == EINVAL, "d: post_send with 33 SGEs: EINVAL (%s)", errs(err));
	wr.num_sge = 4000;
	err = post_send1(p.qp[0], &wr);
	ok(err != 0, "d: post_send with 4000 SGEs: refused (%s)", errs(err));
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0xd7;
	rwr.sg_list = many;
	rwr.num_sge = p.cap.max_recv_sge + 1;
	err = ibv_post_recv(p.qp[1], &rwr, &rbad);
	ok(err == EINVAL, "d: post_recv with max_recv_sge + 1 SGEs: EINVAL (%s)",
	   errs(err));
	rwr.num_sge = 1024;
	err = ibv_post_recv(p.qp[1], &rwr, &rbad);
	ok(err != 0, "d: post_recv with 1024 SGEs: refused (%s)", errs(err));
	rwr.num_sge = 4000;
	err = ibv_post_recv(p.qp[1], &rwr, &rbad);
	ok(err != 0, "d: post_recv with 4000 SGEs: refused (%s)", errs(err));
	rwr.num_sge = nmany;
	err = ibv_post_recv(p.qp[1], &rwr, &rbad);
	ok(err != 0, "d: post_recv with 65536 SGEs: refused (%s)", errs(err));
	free(many);
	ok(qp_state(p.qp[0]) == IBV_QPS_RTS && qp_state(p.qp[1]) == IBV_QPS_RTS,
	   "d: refused posts leave both QPs in RTS");

	/* Receive SGEs the responder cannot use. */
	sge[1] = (struct ibv_sge){ (uintptr_t)RCV(d), 4096, 0 };
	if (bad_recv(d, &p, &sge[1], "receive SGE with lkey 0"))
		goto out;
	sge[1] = (struct ibv_sge){ (uintptr_t)RCV(d), 16, d->mr->lkey };
	if (bad_recv(d, &p, &sge[1], "receive of 16 bytes for a 64-byte SEND"))
		goto out;
	sge[1] = (struct ibv_sge){ (uintptr_t)d->buf + BUF_SIZE - 16, 64,
				   d->mr->lkey };
	if (bad_recv(d, &p, &sge[1], "receive SGE crossing the end of the MR"))
		goto out;

	/* wr_id patterns come back as they went, in order. */
	if (ensure(d, &p)) {
		ok(0, "d: a working QP pair");
		goto out;
	}
	sge[0] = (struct ibv_sge){ (uintptr_t)SRC(d), 8, d->mr->lkey };
	memset(wrs, 0, sizeof(wrs));
	for (i = 0; i < 4; i++) {
		wrs[i].wr_id = ids[i];
		wrs[i].sg_list = sge;
		wrs[i].num_sge = 1;
		wrs[i].opcode = IBV_WR_RDMA_WRITE;
		wrs[i].send_flags = IBV_SEND_SIGNALED;
		wrs[i].wr.rdma.remote_addr = (uintptr_t)DST(d) + i * 8;
		wrs[i].wr.rdma.rkey = d->mr->rkey;
		wrs[i].next = i < 3 ? &wrs[i + 1] : NULL;
	}
	for (i = 0; i < 2; i++) {	/* RTS, then ERR (flushed) */
		struct ibv_send_wr *bad;
		int k;

		if (i == 1 && (err = modify_state(p.qp[0], IBV_QPS_ERR))) {
			ok(0, "d: RTS -> ERR (%s)", strerror(err));
			goto out;
		}
		err = ibv_post_send(p.qp[0], wrs, &bad);
		got = err ? 0 : poll_n(p.cq[0], wc, 4, WAIT_MS);
		good = got == 4;
		for (k = 0; k < got; k++)
			good &= wc[k].wr_id == ids[k] &&
				(wc[k].status == IBV_WC_SUCCESS) == !i;
		ok(good, "d: wr_ids 0, ~0, 1<<63, 0x0123456789abcdef %s (%s, %d completions)",
		   i ? "flushed in ERR" : "complete in order", errs(err), got);
	}
	if (renew(d, &p)) {
		ok(0, "d: a working QP pair");
		goto out;
	}
	memset(rwrs, 0, sizeof(rwrs));
	sge[1] = (struct ibv_sge){ (uintptr_t)RCV(d), 64, d->mr->lkey };
	for (i = 0; i < 4; i++) {
		rwrs[i].wr_id = ids[i];
		rwrs[i].sg_list = &sge[1];
		rwrs[i].num_sge = 1;
		rwrs[i].next = i < 3 ? &rwrs[i + 1] : NULL;
	}
	err = ibv_post_recv(p.qp[1], rwrs, &rbad);
	if (!err)
		err = modify_state(p.qp[1], IBV_QPS_ERR);
	got = err ? 0 : poll_n(p.cq[1], wc, 4, WAIT_MS);
	good = got == 4;
	for (i = 0; i < got; i++)
		good &= wc[i].wr_id == ids[i] &&
			wc[i].status == IBV_WC_WR_FLUSH_ERR;
	ok(good, "d: receives with those wr_ids flushed in order by RTS -> ERR (%s, %d)",
	   errs(err), got);
	still_works(d, &p, "d: afterwards");
	goto out;
out_ro:
	if (ro && ibv_dereg_mr(ro))
		diag("d: ibv_dereg_mr of the read-only MR failed");
out:
	pair_close(&p);
#undef WRITE64
#undef TRY
}

/* ---------------------------------------------------------------------- */
/* e. RNR: the receive comes 200 ms late; the message must get through. */

static int rnr_one(struct dev *d, struct pair *p, enum ibv_wr_opcode op,
		   uint32_t len)
{
	const char *name = op == IBV_WR_SEND ? "SEND" : "RDMA WRITE with immediate";
	uint32_t imm = 0x5eed0000 + len, seed = len + op;
	struct ibv_sge sge = { (uintptr_t)SRC(d), len, d->mr->lkey };
	struct ibv_sge rsge = { (uintptr_t)RCV(d), 16384, d->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xe0, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	};
	struct ibv_recv_wr rwr = {
		.wr_id = 0xe1, .sg_list = &rsge, .num_sge = 1,
	}, *rbad;
	enum ibv_wc_opcode rop = op == IBV_WR_SEND ? IBV_WC_RECV :
						     IBV_WC_RECV_RDMA_WITH_IMM;
	uint8_t *where = op == IBV_WR_SEND ? RCV(d) : DST(d);
	struct ibv_wc swc, rwc;
	int err, ns, nr, s0, s1;

	if (renew(d, p)) {
		ok(0, "e: %s %u B: a fresh QP pair", name, len);
		return -1;
	}
	fill(SRC(d), seed, len);
	memset(DST(d), 0, len + 64);
	memset(RCV(d), 0, len + 64);
	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	wr.wr.rdma.rkey = d->mr->rkey;
	err = post_send1(p->qp[0], &wr);
	if (err) {
		ok(0, "e: %s %u B: post_send (%s)", name, len, strerror(err));
		return 0;
	}
	msleep(200);
	ns = ibv_poll_cq(p->cq[0], 1, &swc);
	if (ns == 1)
		diag("e: %s %u B completed (%s) before any receive was posted",
		     name, len, wcs(swc.status));
	err = ibv_post_recv(p->qp[1], &rwr, &rbad);
	if (err) {
		ok(0, "e: %s %u B: post_recv (%s)", name, len, strerror(err));
		return -1;
	}
	if (ns != 1)
		ns = poll_n(p->cq[0], &swc, 1, WAIT_MS);
	nr = poll_n(p->cq[1], &rwc, 1, ns == 1 &&
		    swc.status != IBV_WC_SUCCESS ? 500 : WAIT_MS);
	ok(ns == 1 && swc.status == IBV_WC_SUCCESS && swc.wr_id == 0xe0,
	   "e: %s %u B after RNR: the sender completes successfully (%s)",
	   name, len, ns == 1 ? wcs(swc.status) : "no completion");
	ok(nr == 1 && rwc.status == IBV_WC_SUCCESS && rwc.opcode == rop &&
	   rwc.wr_id == 0xe1 && rwc.byte_len == len &&
	   (op == IBV_WR_SEND ||
	    ((rwc.wc_flags & IBV_WC_WITH_IMM) && ntohl(rwc.imm_data) == imm)),
	   "e: %s %u B after RNR: the receive completes (%s, opcode %d, %u bytes, imm %#x)",
	   name, len, nr == 1 ? wcs(rwc.status) : "no completion",
	   nr == 1 ? (int)rwc.opcode : -1, nr == 1 ? rwc.byte_len : 0,
	   nr == 1 && (rwc.wc_flags & IBV_WC_WITH_IMM) ? ntohl(rwc.imm_data) : 0);
	ok(!memcmp(where, SRC(d), len) && where[len] == 0,
	   "e: %s %u B after RNR: the data arrived intact", name, len);
	s0 = qp_state(p->qp[0]);
	s1 = qp_state(p->qp[1]);
	ok(s0 == IBV_QPS_RTS && s1 == IBV_QPS_RTS,
	   "e: %s %u B after RNR: both QPs still RTS (%s, %s)", name, len,
	   state_str(s0), state_str(s1));
	return ns == 1 ? 0 : -1;
}

/*
 * RDMA WRITE WITH IMMEDIATE to a QP without remote write access and
 * without a receive: the access check comes first (IBA 9.7.5.1.5's order,
 * as rdma_rxe), not an RNR NAK that the requester, with rnr_retry 7,
 * would retry for ever.  An operation the QP does not enable is an
 * Invalid Request (as for READ and atomics; rdma_rxe's check_op_valid()).
 */
static void rnr_no_access(struct dev *d, struct pair *p)
{
	struct ibv_qp_attr a = { .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0xacce55, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc = {};
	int n = 0;

	if (renew(d, p) ||
	    ibv_modify_qp(p->qp[1], &a, IBV_QP_ACCESS_FLAGS)) {
		ok(0, "e: a pair whose responder has no remote write access");
		return;
	}
	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	wr.wr.rdma.rkey = d->mr->rkey;
	if (!post_send1(p->qp[0], &wr))
		n = poll_n(p->cq[0], &wc, 1, 3000 * scale);
	ok(n == 1 && wc.status == IBV_WC_REM_INV_REQ_ERR,
	   "e: WRITE_WITH_IMM without access and without a receive: %s, not an endless RNR",
	   n ? wcs(wc.status) : "no completion");
}

static void case_e(struct dev *d)
{
	struct pair p;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "e: a connected QP pair");
		return;
	}
	if (!rnr_one(d, &p, IBV_WR_RDMA_WRITE_WITH_IMM, 100) &&
	    !rnr_one(d, &p, IBV_WR_RDMA_WRITE_WITH_IMM, 5000) &&
	    !rnr_one(d, &p, IBV_WR_SEND, 100))
		rnr_one(d, &p, IBV_WR_SEND, 5000);
	rnr_no_access(d, &p);
	pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* f. post_send racing modify_qp to ERR and to RESET. */

struct race {
	struct dev *d;
	struct ibv_qp *qp;
	atomic_int stop;
	atomic_long posted;	/* posts that returned 0 */
	atomic_long polled;	/* their completions, polled by main */
	atomic_long lost;	/* given up on (keeps the throttle going) */
	atomic_int pause;	/* main asks the poster to hold still */
	atomic_int paused;	/* the poster is between two posts, holding */
	atomic_long last;	/* the wr_id of the poster's latest post */
	long stale_below;	/* polled after RESET, a wr_id up to this is
				 * a completion RESET should have removed */
	long einval, enomem, other;
	int other_err;
};

static void *race_poster(void *arg)
{
	struct race *r = arg;
	struct dev *d = r->d;
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	uint64_t seq = 0;
	int err;

	wr.wr.rdma.rkey = d->mr->rkey;
	while (!atomic_load(&r->stop)) {
		if (atomic_load(&r->pause)) {
			atomic_store(&r->paused, 1);
			while (atomic_load(&r->pause) && !atomic_load(&r->stop))
				usleep(20);
			atomic_store(&r->paused, 0);
			continue;
		}
		/* At most 64 completions waiting: the CQ never overflows. */
		if (atomic_load(&r->posted) - atomic_load(&r->polled) -
		    atomic_load(&r->lost) >= 64) {
			usleep(20);
			continue;
		}
		wr.wr_id = ++seq;
		atomic_store(&r->last, (long)seq);
		wr.wr.rdma.remote_addr = (uintptr_t)DST(d) + (seq % 64) * 8;
		err = post_send1(r->qp, &wr);
		if (!err) {
			atomic_fetch_add(&r->posted, 1);
		} else if (err == EINVAL) {
			r->einval++;
		} else if (err == ENOMEM) {
			r->enomem++;
		} else {
			r->other++;
			r->other_err = err;
		}
	}
	return NULL;
}

struct race_stats {
	long success, flush, other, stale;
	enum ibv_wc_status first_other;
};

static void race_collect(struct race *r, struct ibv_cq *cq,
			 struct race_stats *st)
{
	struct ibv_wc wc[64];
	int n, i;

	while ((n = ibv_poll_cq(cq, 64, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if ((long)wc[i].wr_id <= r->stale_below)
				st->stale++;
			if (wc[i].status == IBV_WC_SUCCESS) {
				st->success++;
			} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				st->flush++;
			} else {
				if (!st->other)
					st->first_other = wc[i].status;
				st->other++;
			}
		}
		atomic_fetch_add(&r->polled, n);
	}
}

/* Wait until every post that returned 0 has its completion. */
static long race_settle(struct race *r, struct ibv_cq *cq,
			struct race_stats *st, double secs)
{
	double end = now() + secs;
	long missing;

	for (;;) {
		race_collect(r, cq, st);
		missing = atomic_load(&r->posted) - atomic_load(&r->polled) -
			  atomic_load(&r->lost);
		if (missing <= 0 || now() > end)
			return missing;
		usleep(100);
	}
}

/*
 * Bring both QPs back: qp[0] (in ERR or RESET) to RESET unless @peer_only,
 * qp[1] through ERR to RESET; then both connected with fresh PSNs, the
 * target first (the poster starts as soon as qp[0] is RTS again).
 */
static int race_reconnect(struct dev *d, struct pair *p, int peer_only)
{
	uint32_t psn[2] = { next_psn(), next_psn() };
	int err = 0;

	if (!peer_only)
		err = modify_state(p->qp[0], IBV_QPS_RESET);
	if (!err)
		err = modify_state(p->qp[1], IBV_QPS_ERR);
	if (!err)
		err = modify_state(p->qp[1], IBV_QPS_RESET);
	if (err) {
		diag("f: modify to ERR/RESET: %s", strerror(err));
		return -1;
	}
	if (qp_connect(d, p->qp[1], p->qp[0]->qp_num, psn[1], psn[0],
		       p->rnr_retry) ||
	    qp_connect(d, p->qp[0], p->qp[1]->qp_num, psn[0], psn[1],
		       p->rnr_retry))
		return -1;
	return 0;
}

static void case_f(struct dev *d)
{
	int cycles = scale > 1 ? 60 : 200, resets = scale > 1 ? 20 : 50;
	struct race r = { .d = d };
	struct race_stats st = { 0 };
	long missing, lost_cycles = 0;
	pthread_t thread;
	struct pair p;
	double t, dt;
	int c, err, slow;

	if (pair_open(d, &p, 4096, 7)) {
		ok(0, "f: a connected QP pair");
		return;
	}
	r.qp = p.qp[0];
	if (pthread_create(&thread, NULL, race_poster, &r)) {
		ok(0, "f: a posting thread");
		pair_close(&p);
		return;
	}

	/* RTS -> ERR (racing posts) -> RESET -> RTS. */
	for (c = 0; c < cycles; c++) {
		long start = atomic_load(&r.posted);

		t = now();
		while (now() - t < 0.002 && atomic_load(&r.posted) - start < 4)
			race_collect(&r, p.cq[0], &st);
		err = modify_state(p.qp[0], IBV_QPS_ERR);
		if (err) {
			ok(0, "f: cycle %d: RTS -> ERR under posts (%s)", c,
			   strerror(err));
			break;
		}
		/* Stay in ERR a moment: posts land on the QP in ERR too. */
		start = atomic_load(&r.posted);
		t = now();
		while (now() - t < 0.003 && atomic_load(&r.posted) - start < 4)
			race_collect(&r, p.cq[0], &st);
		/* Flushes are immediate; after a first loss, wait less. */
		missing = race_settle(&r, p.cq[0], &st,
				      lost_cycles ? 0.2 * scale : 2.0 * scale);
		if (missing > 0) {
			diag("f: cycle %d: %ld WRs posted OK have no completion after ERR",
			     c, missing);
			atomic_fetch_add(&r.lost, missing);
			if (++lost_cycles == 5) {
				diag("f: stopping after 5 cycles that lost completions");
				break;
			}
		}
		/*
		 * RESET removes the QP's completions not polled yet, as RoCE
		 * NICs do: those of the WRs posted in ERR since the settle
		 * above are not waited for.  The poster holds still meanwhile,
		 * so that each of its posts is counted on the side of RESET
		 * it was made on (RESET racing posts is the next loop's).
		 */
		atomic_store(&r.pause, 1);
		t = now();
		while (!atomic_load(&r.paused) && now() - t < 5.0 * scale)
			usleep(20);
		if (!atomic_load(&r.paused))
			diag("f: cycle %d: the poster did not hold still", c);
		r.stale_below = atomic_load(&r.last);
		err = modify_state(p.qp[0], IBV_QPS_RESET);
		if (!err) {
			race_collect(&r, p.cq[0], &st);
			atomic_store(&r.lost, atomic_load(&r.posted) -
				     atomic_load(&r.polled));
		}
		atomic_store(&r.pause, 0);
		if (err || race_reconnect(d, &p, 1)) {
			ok(0, "f: cycle %d: ERR -> RESET -> RTS under posts", c);
			break;
		}
	}
	atomic_store(&r.stop, 1);
	pthread_join(thread, NULL);
	if (!modify_state(p.qp[0], IBV_QPS_ERR))
		race_settle(&r, p.cq[0], &st, 2.0 * scale);
	missing = atomic_load(&r.posted) - atomic_load(&r.polled) -
		  atomic_load(&r.lost);
	diag("f: posts: %ld OK, %ld EINVAL, %ld ENOMEM, %ld other%s%s",
	     atomic_load(&r.posted), r.einval, r.enomem, r.other,
	     r.other ? ", last " : "", r.other ? strerror(r.other_err) : "");
	diag("f: completions: %ld success, %ld flushed, %ld other%s%s",
	     st.success, st.flush, st.other, st.other ? ", first " : "",
	     st.other ? wcs(st.first_other) : "");
	r.stale_below = 0;
	diag("f: completions of the old connection polled after RESET: %ld",
	     st.stale);
	ok(c == cycles && !lost_cycles && missing == 0 && !st.stale,
	   "f: %d of %d cycles RTS -> ERR -> RESET -> RTS racing post_send: every WR posted OK completed, or its completion was removed by RESET (%ld posted, %ld completions, %ld removed, %ld missing)",
	   c, cycles, atomic_load(&r.posted), atomic_load(&r.polled),
	   atomic_load(&r.lost), missing);

	/* RTS -> RESET directly (racing posts), the peer through ERR. */
	if (race_reconnect(d, &p, 0)) {
		ok(0, "f: QPs back to RTS");
		goto out;
	}
	atomic_store(&r.stop, 0);
	atomic_store(&r.lost, atomic_load(&r.posted) - atomic_load(&r.polled));
	if (pthread_create(&thread, NULL, race_poster, &r)) {
		ok(0, "f: a posting thread");
		goto out;
	}
	for (c = 0; c < resets; c++) {
		long start = atomic_load(&r.posted);

		t = now();
		while (now() - t < 0.002 && atomic_load(&r.posted) - start < 4)
			race_collect(&r, p.cq[0], &st);
		err = modify_state(p.qp[0], IBV_QPS_RESET);
		if (err) {
			diag("f: RTS -> RESET under posts: %s", strerror(err));
			break;
		}
		race_collect(&r, p.cq[0], &st);
		/* What RESET discarded completes never: not waited for. */
		atomic_store(&r.lost, atomic_load(&r.posted) -
			     atomic_load(&r.polled));
		if (race_reconnect(d, &p, 1))
			break;
	}
	atomic_store(&r.stop, 1);
	pthread_join(thread, NULL);
	race_collect(&r, p.cq[0], &st);
	ok(c == resets, "f: %d of %d cycles RTS -> RESET -> RTS racing post_send",
	   c, resets);

	/* Everything the WRs held must be given back. */
	guard_begin("f: ibv_destroy_qp after the races", 5.0 * scale,
		    30.0 * scale);
	err = pair_close(&p);
	slow = guard_end();
	if (!slow)
		ok(!err, "f: the QPs and CQs are destroyed (%s)", errs(err));
	guard_begin("f: ibv_dereg_mr after the races", 5.0 * scale,
		    30.0 * scale);
	t = now();
	err = ibv_dereg_mr(d->mr);
	dt = now() - t;
	slow = guard_end();
	if (slow)
		diag("f: ibv_dereg_mr returned %s after %.1f s", errs(err), dt);
	else
		ok(!err, "f: ibv_dereg_mr of the MR every WR used returns 0 within %d s (%s, %.2f s)",
		   5 * scale, errs(err), dt);
	if (!err)
		d->mr = NULL;
	return;
out:
	pair_close(&p);
}

/* ---------------------------------------------------------------------- */
/* g. dereg_mr of an MR a WR stuck in RNR retries holds. */

struct rescue {
	struct dev *d;
	struct pair *p;
	double t0;
	atomic_int done, rescued;
};

/* If dereg_mr blocks, post the receive the WR waits for: it may return. */
static void *rescue_main(void *arg)
{
	struct rescue *r = arg;
	struct ibv_sge rsge = { (uintptr_t)RCV(r->d), 4096, r->d->mr->lkey };
	struct ibv_recv_wr rwr = {
		.wr_id = 0x91, .sg_list = &rsge, .num_sge = 1,
	}, *bad;
	int err;

	while (!atomic_load(&r->done) && now() - r->t0 < 5.0 * scale)
		msleep(10);
	if (atomic_load(&r->done))
		return NULL;
	ok(0, "g: ibv_dereg_mr of an MR held by a WR in RNR retries returns within %d s (0 or EBUSY): still blocked",
	   5 * scale);
	err = ibv_post_recv(r->p->qp[1], &rwr, &bad);
	diag("g: posted the receive the SEND waits for (%s), so the WR can complete",
	     errs(err));
	atomic_store(&r->rescued, 1);
	return NULL;
}

static void case_g(struct dev *d)
{
	struct rescue res = { .d = d };
	struct ibv_sge rsge = { (uintptr_t)RCV(d), 4096, d->mr->lkey };
	struct ibv_recv_wr rwr = {
		.wr_id = 0x91, .sg_list = &rsge, .num_sge = 1,
	}, *rbad;
	struct ibv_send_wr wr = {
		.wr_id = 0x90, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_mr *mr = NULL;
	struct ibv_wc swc, rwc;
	uint8_t *mbuf = NULL;
	struct ibv_sge sge;
	pthread_t thread;
	struct pair p;
	int err, n, ns, nr;
	double dt;

	if (pair_open(d, &p, 256, 7)) {
		ok(0, "g: a connected QP pair");
		return;
	}
	res.p = &p;
	mbuf = aligned_alloc(4096, 4096);
	mr = mbuf ? ibv_reg_mr(d->pd, mbuf, 4096, IBV_ACCESS_LOCAL_WRITE) :
		    NULL;
	if (!mr) {
		ok(0, "g: an MR for the SEND (%s)", strerror(errno));
		goto out;
	}
	fill(mbuf, 7, 4096);
	sge = (struct ibv_sge){ (uintptr_t)mbuf, 64, mr->lkey };
	wr.sg_list = &sge;
	err = post_send1(p.qp[0], &wr);
	if (err) {
		ok(0, "g: a SEND to a QP without receives (%s)", strerror(err));
		goto out;
	}
	msleep(200);
	n = ibv_poll_cq(p.cq[0], 1, &swc);
	ok(n == 0, "g: the SEND waits in RNR retries (rnr_retry 7)%s%s",
	   n == 1 ? ": it completed, " : "", n == 1 ? wcs(swc.status) : "");
	if (n)
		goto out;

	res.t0 = now();
	if (pthread_create(&thread, NULL, rescue_main, &res)) {
		ok(0, "g: a helper thread");
		goto out;
	}
	guard_begin("g: ibv_dereg_mr of an MR a stuck WR holds", 0,
		    20.0 * scale);
	err = ibv_dereg_mr(mr);
	dt = now() - res.t0;
	guard_end();
	atomic_store(&res.done, 1);
	pthread_join(thread, NULL);
	if (!atomic_load(&res.rescued))
		ok(err == 0 || err == EBUSY,
		   "g: ibv_dereg_mr of an MR held by a WR in RNR retries returns %s in %.2f s (0 or EBUSY)",
		   errs(err), dt);
	else
		diag("g: ibv_dereg_mr returned %s after %.1f s, once the WR could complete",
		     errs(err), dt);
	if (!err)
		mr = NULL;

	/* The SEND must still end: with its data, or in error. */
	if (!atomic_load(&res.rescued) &&
	    (err = ibv_post_recv(p.qp[1], &rwr, &rbad)))
		diag("g: post_recv: %s", strerror(err));
	ns = poll_n(p.cq[0], &swc, 1, WAIT_MS);
	nr = ns == 1 && swc.status == IBV_WC_SUCCESS ?
	     poll_n(p.cq[1], &rwc, 1, WAIT_MS) : 0;
	ok(ns == 1 && (swc.status != IBV_WC_SUCCESS ||
		       (nr == 1 && rwc.status == IBV_WC_SUCCESS &&
			rwc.byte_len == 64)),
	   "g: the SEND ends once its receive is posted (%s; receive %s)",
	   ns == 1 ? wcs(swc.status) : "no completion",
	   nr == 1 ? wcs(rwc.status) : "none");
	if (nr == 1 && memcmp(RCV(d), mbuf, 64))
		diag("g: the data received differs from what was sent");
	if (mr) {
		guard_begin("g: ibv_dereg_mr once the WR completed", 5.0 * scale,
			    20.0 * scale);
		err = ibv_dereg_mr(mr);
		if (!guard_end())
			ok(!err, "g: ibv_dereg_mr once the WR completed (%s)",
			   errs(err));
		if (!err)
			mr = NULL;
	}
out:
	pair_close(&p);
	if (mr && (err = ibv_dereg_mr(mr)))
		diag("g: ibv_dereg_mr: %s", strerror(err));
	else
		mr = NULL;
	if (!mr)
		free(mbuf);	/* else the kernel may still use it */
}

/* ---------------------------------------------------------------------- */
/* The parent: one child per case, results relayed as TAP. */

static void child(void (*fn)(struct dev *), char letter)
{
	struct dev d;
	int bad;

	if (dev_open(&d)) {
		ok(0, "%c: open %s, its GID, a PD and an MR", letter, dev_name);
		dev_close(&d);
		exit(0);
	}
	fn(&d);
	guard_begin("ibv_dereg_mr/ibv_dealloc_pd/ibv_close_device", 5.0 * scale,
		    30.0 * scale);
	bad = dev_close(&d);
	if (!guard_end())
		ok(!bad, "%c: the case's MR, PD and context are freed", letter);
	exit(0);
}

/* The state, wait channel and kernel stack of each thread of @pid. */
static void diagnose(pid_t pid)
{
	char path[320], line[256];
	struct dirent *e;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char state = '?', *p;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid,
			 e->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fgets(line, sizeof(line), f) &&
			    (p = strrchr(line, ')')) && p[1] && p[2])
				state = p[2];
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", (int)pid,
			 e->d_name);
		line[0] = 0;
		f = fopen(path, "r");
		if (f) {
			if (!fgets(line, sizeof(line), f))
				line[0] = 0;
			fclose(f);
		}
		printf("# task %s: state %c, wchan %s\n", e->d_name, state,
		       line[0] ? line : "?");
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", (int)pid,
			 e->d_name);
		f = fopen(path, "r");
		if (f) {
			while (fgets(line, sizeof(line), f))
				printf("#   %s", line);
			fclose(f);
		}
	}
	closedir(dir);
	fflush(stdout);
}

/* Wait up to @secs for @pid to exit; 1 if it did (status in *st). */
static int reap(pid_t pid, int *st, double secs)
{
	double end = now() + secs;

	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;	/* not ours any more */
		if (now() > end)
			return 0;
		msleep(20);
	}
}

/* One line from a child. */
static int relay(char *line, int *results)
{
	if (line[0] == 'T' && (line[1] == '0' || line[1] == '1') &&
	    line[2] == ' ') {
		tap(line[1] == '1', "%s", line + 3);
		(*results)++;
	} else if (line[0] == 'S' && line[1] == ' ') {
		tap(0, "%s", line + 2);
		(*results)++;
		return 1;
	} else if (line[0] == '#') {
		printf("%s\n", line);
	} else {
		printf("# %s\n", line);
	}
	return 0;
}

/*
 * The uverbs mappings of this process (/proc/self/maps): with only the
 * pair's CQs mapped, they are the CQ rings.  Returns how many, up to max.
 */
static int uverbs_maps(uint8_t **addr, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (strstr(line, "/dev/infiniband/uverbs") &&
		    sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			addr[n++] = (uint8_t *)lo;
	}
	fclose(f);
	return n;
}

/* Every word of a mapping's first page: garbage derived from @seed. */
static void ring_garbage(uint8_t *ring, uint32_t seed)
{
	uint32_t *w = (uint32_t *)ring;
	unsigned int k;

	for (k = 0; k < 4096 / 4; k++)
		w[k] = seed ^ (k * 2654435761u);
}

/* An async event of type @type within @ms (the context's async fd). */
static int async_event(struct dev *d, enum ibv_event_type type, int ms)
{
	struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int found = 0;

	while (!found && poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(d->ctx, &ev))
			break;
		found = ev.event_type == type;
		ibv_ack_async_event(&ev);
	}
	return found;
}

static void case_h(struct dev *d)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	uint8_t *ring[4];
	struct ibv_wc wc[8];
	struct pair p;
	int i, n, got = 0;

	/* Only the CQs mapped: the mappings are the CQ rings. */
	setenv("SROCE_MAPPED", "cq", 1);
	if (pair_open(d, &p, 4, 7)) {
		ok(0, "h: a QP pair");
		return;
	}
	unsetenv("SROCE_MAPPED");
	n = uverbs_maps(ring, 4);
	ok(n == 2, "h: both CQ rings are mapped (%d mappings)", n);
	if (n != 2)
		goto out;
	/* Consumer (offset 64) far ahead of the producer (offset 0). */
	for (i = 0; i < n; i++)
		*(volatile uint32_t *)(ring[i] + 64) =
			*(volatile uint32_t *)ring[i] + 100000;
	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	wr.wr.rdma.rkey = d->mr->rkey;
	for (i = 0; i < 3; i++) {
		wr.wr_id = i;
		if (post_send1(p.qp[0], &wr))
			break;
	}
	ok(async_event(d, IBV_EVENT_CQ_ERR, 5000 * scale),
	   "h: a consumer index far ahead: the kernel sees the ring full, IBV_EVENT_CQ_ERR");
	got = poll_n(p.cq[0], wc, 8, 200);
	diag("h: %d completions polled from the scribbled ring", got);
	/* Every word of both headers and rings: garbage. */
	for (i = 0; i < n; i++)
		ring_garbage(ring[i], 0xdeadbeef);
	for (i = 0; i < 3; i++) {
		wr.wr_id = 10 + i;
		if (post_send1(p.qp[0], &wr))
			break;
	}
	msleep(200);
	got = poll_n(p.cq[0], wc, 8, 200);
	diag("h: %d completions from a ring of garbage", got);
out:
	ok(!pair_close(&p), "h: the QPs and CQs of scribbled rings are destroyed");
	n = uverbs_maps(ring, 4);
	ok(n == 0, "h: their mappings are gone (%d left)", n);
	still_works(d, &p, "h: after the scribbled rings");
	pair_close(&p);
}

/* i. The mapped SQ and RQ rings (struct sroce_wq_ring) scribbled. */

#define WQ_SLOTS	128	/* offsetof(struct sroce_wq_ring, slot) */

static uint32_t ring_word(uint8_t *ring, size_t off)
{
	return __atomic_load_n((uint32_t *)(ring + off), __ATOMIC_ACQUIRE);
}

static void ring_set(uint8_t *ring, size_t off, uint32_t v)
{
	__atomic_store_n((uint32_t *)(ring + off), v, __ATOMIC_RELEASE);
}

/* The slot strides the kernel gives the pair's QPs (qp.c, uring.c). */
static size_t sq_stride(void)
{
	size_t data = MAX_SEND_SGE * sizeof(struct ib_uverbs_sge);

	if (data < MAX_INLINE)
		data = MAX_INLINE;
	return (sizeof(struct sroce_send_uwqe) + data + 15) & ~(size_t)15;
}

static size_t rq_stride(void)
{
	return (sizeof(struct sroce_recv_uwqe) +
		MAX_RECV_SGE * sizeof(struct ib_uverbs_sge) + 15) & ~(size_t)15;
}

/* The one mapping whose producer word (offset 0) went from @was to +1. */
static uint8_t *ring_moved(uint8_t **ring, const uint32_t *was, int n)
{
	uint8_t *found = NULL;
	int i;

	for (i = 0; i < n; i++) {
		if (ring_word(ring[i], 0) != was[i] + 1)
			continue;
		if (found)
			return NULL;
		found = ring[i];
	}
	return found;
}

/* Publish behind the RQ's entries one with 1000 SGEs, wr_id 0xbad6. */
static void rq_bad_entry(uint8_t *rq)
{
	uint32_t prod = ring_word(rq, 0);
	struct sroce_recv_uwqe *ru =
		(void *)(rq + WQ_SLOTS + (prod % RQ_DEPTH) * rq_stride());

	ru->wr_id = 0xbad6;
	ru->num_sge = 1000;
	ring_set(rq, 0, prod + 1);
}

static void case_i(struct dev *d)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	uint8_t *ring[8], *sq, *rq;
	uint32_t was[8], prod;
	struct sroce_send_uwqe *su;
	struct ibv_wc wc[8];
	struct pair p;
	int i, k, n, got;

	if (pair_open(d, &p, 64, 7)) {
		ok(0, "i: a QP pair");
		return;
	}
	n = uverbs_maps(ring, 8);
	ok(n == 6, "i: 2 CQ rings and the SQ and RQ rings of 2 QPs mapped (%d mappings)",
	   n);
	if (n != 6)
		goto out;

	/*
	 * A SEND to a QP without receives stays in RNR retries: the SQ is
	 * busy, the kernel takes what follows it from the ring by itself.
	 */
	for (i = 0; i < n; i++)
		was[i] = ring_word(ring[i], 0);
	wr.wr_id = 1;
	if (post_send1(p.qp[0], &wr)) {
		ok(0, "i: a SEND posted");
		goto out;
	}
	sq = ring_moved(ring, was, n);
	ok(sq != NULL, "i: the SQ ring of the sending QP found");
	if (!sq)
		goto out;
	msleep(50);
	/* Behind it, an entry with an opcode no WR has. */
	prod = ring_word(sq, 0);
	su = (void *)(sq + WQ_SLOTS + (prod % SQ_DEPTH) * sq_stride());
	memset(su, 0, sizeof(*su));
	su->wr_id = 0xbad5;
	su->opcode = 0x55;
	ring_set(sq, 0, prod + 1);

	/* Then a receive, and behind it one with 1000 SGEs. */
	for (i = 0; i < n; i++)
		was[i] = ring_word(ring[i], 0);
	if (post_recvs(d, &p, 1, 64)) {
		ok(0, "i: a receive posted");
		goto out;
	}
	rq = ring_moved(ring, was, n);
	ok(rq != NULL, "i: the RQ ring of the receiving QP found");
	if (!rq)
		goto out;
	rq_bad_entry(rq);

	/* The first SEND lands in the good receive, then RNR ends. */
	got = poll_n(p.cq[0], wc, 2, WAIT_MS);
	ok(got == 2 && wc[0].wr_id == 1 && wc[0].status == IBV_WC_SUCCESS &&
	   wc[1].wr_id == 0xbad5 && wc[1].status == IBV_WC_LOC_QP_OP_ERR,
	   "i: the SEND completes, then the malformed SQ entry with IBV_WC_LOC_QP_OP_ERR (%d: %s, %s)",
	   got, got > 0 ? wcs(wc[0].status) : "-",
	   got > 1 ? wcs(wc[1].status) : "-");
	ok(qp_state(p.qp[0]) == IBV_QPS_ERR, "i: the sending QP is in ERR");

	got = poll_n(p.cq[1], wc, 1, WAIT_MS);
	ok(got == 1 && wc[0].status == IBV_WC_SUCCESS,
	   "i: the good receive completes (%d)", got);
	p.rq_out = 0;
	pair_close(&p);

	/* A pair again; the SEND now meets the malformed receive. */
	if (pair_open(d, &p, 64, 7)) {
		ok(0, "i: a second QP pair");
		return;
	}
	n = uverbs_maps(ring, 8);
	for (i = 0; i < n; i++)
		was[i] = ring_word(ring[i], 0);
	if (post_recvs(d, &p, 1, 64) || !(rq = ring_moved(ring, was, n))) {
		ok(0, "i: the RQ ring of the receiving QP found");
		goto out;
	}
	/* The good receive is taken by the first SEND, this by the second. */
	rq_bad_entry(rq);
	for (k = 0; k < 2; k++) {
		wr.wr_id = 10 + k;
		post_send1(p.qp[0], &wr);
	}
	got = poll_n(p.cq[1], wc, 2, WAIT_MS);
	ok(got == 2 && wc[0].status == IBV_WC_SUCCESS &&
	   wc[1].wr_id == 0xbad6 && wc[1].status == IBV_WC_LOC_QP_OP_ERR,
	   "i: a good receive, then the malformed RQ entry with IBV_WC_LOC_QP_OP_ERR (%d: %s, %s)",
	   got, got > 0 ? wcs(wc[0].status) : "-",
	   got > 1 ? wcs(wc[1].status) : "-");
	got = poll_n(p.cq[0], wc, 2, WAIT_MS);
	ok(got == 2 && wc[0].status == IBV_WC_SUCCESS &&
	   wc[1].status != IBV_WC_SUCCESS,
	   "i: the SEND into it fails at the requester (%d: %s)", got,
	   got > 1 ? wcs(wc[1].status) : "-");
	p.rq_out = 0;
	pair_close(&p);

	/* Every word of every ring: garbage; then posts through them. */
	if (pair_open(d, &p, 64, 7)) {
		ok(0, "i: a third QP pair");
		return;
	}
	n = uverbs_maps(ring, 8);
	for (i = 0; i < n; i++)
		ring_garbage(ring[i], 0xfeedface);
	for (k = 0; k < 4; k++) {
		wr.wr_id = 20 + k;
		wr.opcode = k & 1 ? IBV_WR_RDMA_WRITE : IBV_WR_SEND;
		wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
		wr.wr.rdma.rkey = d->mr->rkey;
		post_send1(p.qp[k & 1], &wr);
	}
	post_recvs(d, &p, 2, 64);
	msleep(300);
	got = poll_n(p.cq[0], wc, 8, 200);
	got += poll_n(p.cq[1], wc, 8, 200);
	diag("i: %d completions from rings of garbage", got);
	p.rq_out = 0;
out:
	ok(!pair_close(&p), "i: the QPs and CQs of scribbled rings are destroyed");
	n = uverbs_maps(ring, 8);
	ok(n == 0, "i: their mappings are gone (%d left)", n);
	still_works(d, &p, "i: after the scribbled rings");
	pair_close(&p);
}

/* Run one case in a child; 1 if the run must stop (a child is stuck). */
static int run_case(char letter, void (*fn)(struct dev *), const char *title)
{
	double end = now() + 180.0 * scale;
	int fds[2], results = 0, stuck_child = 0, st, eof = 0;
	char buf[16384];
	size_t len = 0;
	pid_t pid;

	printf("# case %c: %s\n", letter, title);
	fflush(stdout);
	if (pipe(fds)) {
		tap(0, "%c: pipe: %s", letter, strerror(errno));
		return 0;
	}
	pid = fork();
	if (pid < 0) {
		tap(0, "%c: fork: %s", letter, strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[1]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		child(fn, letter);
	}
	close(fds[1]);

	while (!eof && !stuck_child) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int left = (int)((end - now()) * 1000);
		ssize_t n;
		char *nl;

		if (left <= 0)
			break;
		if (poll(&pfd, 1, left < 1000 ? left : 1000) <= 0)
			continue;
		n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			eof = 1;
			if (len) {	/* a last line without newline */
				buf[len] = 0;
				stuck_child |= relay(buf, &results);
				len = 0;
			}
			break;
		}
		len += n;
		buf[len] = 0;
		while (!stuck_child && (nl = strchr(buf, '\n'))) {
			*nl = 0;
			stuck_child |= relay(buf, &results);
			len -= nl + 1 - buf;
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1) {	/* an overlong line */
			stuck_child |= relay(buf, &results);
			len = 0;
		}
	}
	close(fds[0]);

	if (eof && !stuck_child) {
		/* Closing the context can take the kernel a moment. */
		if (!reap(pid, &st, 30.0 * scale)) {
			tap(0, "%c: the test process does not exit", letter);
			stuck_child = 1;
		} else if (WIFSIGNALED(st)) {
			tap(0, "%c: the test process died of signal %d (%s)",
			    letter, WTERMSIG(st), strsignal(WTERMSIG(st)));
			return 0;
		} else if (WIFEXITED(st) && WEXITSTATUS(st)) {
			tap(0, "%c: the test process exited with %d", letter,
			    WEXITSTATUS(st));
			return 0;
		} else if (!results) {
			tap(0, "%c: the case reported nothing", letter);
			return 0;
		} else {
			return 0;
		}
	} else if (!stuck_child) {
		tap(0, "%c: the case did not finish in %.0f s", letter,
		    180.0 * scale);
	}

	printf("# case %c: the test process (pid %d) is stuck:\n", letter,
	       (int)pid);
	diagnose(pid);
	kill(pid, SIGKILL);
	if (reap(pid, &st, 5.0)) {
		printf("# it was killed; going on\n");
		return 0;
	}
	printf("# it cannot be killed: it sleeps uninterruptibly in the kernel; giving up\n");
	return 1;
}

/*
 * Raw uverbs write() commands, as a process that skips libibverbs can send
 * them: the driver data after the core command is ours to read, and bytes
 * we define no meaning for must be zero (so that they can mean something
 * later), as in ibv_create_cq's sroce_create_cq_cmd.  RESIZE_CQ, ALLOC_PD
 * and GET_CONTEXT have no command of ours.
 *
 * raw_write: the command @c of @len bytes (a struct ib_uverbs_cmd_hdr
 * first) with its header filled in; 0 or the errno.
 */
static int raw_write(int fd, void *c, size_t len, __u32 command,
		     size_t resp_len)
{
	struct ib_uverbs_cmd_hdr *hdr = c;

	hdr->command = command;
	hdr->in_words = len / 4;
	hdr->out_words = resp_len / 4;
	return write(fd, c, len) == (ssize_t)len ? 0 : errno;
}

static int raw_resize(struct ibv_cq *cq, int cqe, __u64 word)
{
	struct {
		struct ib_uverbs_resize_cq_resp core;
		struct sroce_create_cq_resp drv;
	} resp = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq cmd;
		__u64 driver[2];
	} c = {
		.cmd = {
			.response = (uintptr_t)&resp,
			.cq_handle = cq->handle,
			.cqe = cqe,
		},
		.driver = { 0, word },
	};

	return raw_write(cq->context->cmd_fd, &c, sizeof(c),
			 IB_USER_VERBS_CMD_RESIZE_CQ, sizeof(resp));
}

/* A PD libibverbs does not know of: the context's close frees it. */
static int raw_alloc_pd(struct ibv_context *ctx, __u64 word)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_alloc_pd cmd;
		__u64 driver[1];
	} c = {
		.cmd = { .response = (uintptr_t)&resp },
		.driver = { word },
	};

	return raw_write(ctx->cmd_fd, &c, sizeof(c),
			 IB_USER_VERBS_CMD_ALLOC_PD, sizeof(resp));
}

/* A context of its own, on a new file of the uverbs device @uverbs. */
static int raw_get_context(const char *uverbs, __u64 word)
{
	struct {
		struct ib_uverbs_get_context_resp core;
		__u64 driver[4];
	} resp = {};
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_get_context cmd;
		__u64 driver[2];
	} c = {
		.cmd = { .response = (uintptr_t)&resp },
		.driver = { word, 0 },
	};
	char path[64];
	int fd, err;

	snprintf(path, sizeof(path), "/dev/infiniband/%s", uverbs);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	err = raw_write(fd, &c, sizeof(c), IB_USER_VERBS_CMD_GET_CONTEXT,
			sizeof(resp));
	if (!err)
		close(resp.core.async_fd);
	close(fd);
	return err;
}

static void case_j(struct dev *d)
{
	struct ibv_cq *cq[2];
	struct ibv_wc wc;
	int i, err;

	/* cq[0] in the kernel's memory, cq[1] a mapped ring. */
	for (i = 0; i < 2; i++) {
		setenv("SROCE_MAPPED", i ? "cq" : "0", 1);
		cq[i] = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
		unsetenv("SROCE_MAPPED");
		if (!cq[i]) {
			ok(0, "j: a CQ (%s)", strerror(errno));
			if (i)
				ibv_destroy_cq(cq[0]);
			return;
		}
	}
	for (i = 0; i < 2; i++) {
		err = raw_resize(cq[i], 32, 1ULL << 40);
		ok(err == EOPNOTSUPP,
		   "j: RESIZE_CQ of a %s CQ with a nonzero byte after the core command: EOPNOTSUPP (%s)",
		   i ? "mapped" : "kernel", strerror(err));
		ok(ibv_poll_cq(cq[i], 1, &wc) == 0, "j: ... and the CQ still polls (empty)");
	}
	/* Zeros are accepted; the provider does not learn of this resize,
	 * so the CQs are only destroyed afterwards. */
	for (i = 0; i < 2; i++) {
		err = raw_resize(cq[i], 64, 0);
		ok(!err, "j: the same RESIZE_CQ with zeros there is carried out on the %s CQ (%s)",
		   i ? "mapped" : "kernel", strerror(err));
	}
	for (i = 0; i < 2; i++)
		ok(!ibv_destroy_cq(cq[i]), "j: the resized CQ is destroyed");

	err = raw_alloc_pd(d->ctx, 1ULL << 63);
	ok(err == EOPNOTSUPP,
	   "j: ALLOC_PD with a nonzero byte after the core command: EOPNOTSUPP (%s)",
	   strerror(err));
	err = raw_alloc_pd(d->ctx, 0);
	ok(!err, "j: ALLOC_PD with zeros there: a PD (%s)", strerror(err));

	err = raw_get_context(d->ctx->device->dev_name, 0xa5);
	ok(err == EOPNOTSUPP,
	   "j: GET_CONTEXT with a nonzero byte after the core command: EOPNOTSUPP (%s)",
	   strerror(err));
	err = raw_get_context(d->ctx->device->dev_name, 0);
	ok(!err, "j: GET_CONTEXT with zeros there: a context (%s)", strerror(err));
}

/* ---------------------------------------------------------------------- */
/* k. CQ overrun: the QP whose completion is lost goes to Error. */

/*
 * Async events within @ms: bit 0 for IBV_EVENT_QP_FATAL of @qp, bit 1 for
 * IBV_EVENT_CQ_ERR of @cq.
 */
static int fatal_events(struct dev *d, struct ibv_qp *qp, struct ibv_cq *cq,
			int ms)
{
	struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };
	double end = now() + ms / 1000.0;
	struct ibv_async_event ev;
	int seen = 0;

	while (seen != 3 && now() < end &&
	       poll(&pfd, 1, (int)((end - now()) * 1000) + 1) == 1) {
		if (ibv_get_async_event(d->ctx, &ev))
			break;
		if (ev.event_type == IBV_EVENT_QP_FATAL && ev.element.qp == qp)
			seen |= 1;
		else if (ev.event_type == IBV_EVENT_CQ_ERR &&
			 ev.element.cq == cq)
			seen |= 2;
		else
			diag("k: async event %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	return seen;
}

/*
 * The completions of @cq within 500 ms, which must be successful, with
 * wr_id @base, @base + 1, ... (modulo @mod): how many, or -1.
 */
static int polled_in_order(struct ibv_cq *cq, uint64_t base, uint64_t mod)
{
	struct ibv_wc wc[SQ_DEPTH];
	int got, i;

	got = poll_n(cq, wc, SQ_DEPTH, 500);
	for (i = 0; i < got; i++)
		if (wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].wr_id != (base + i) % mod)
			return -1;
	return got;
}

/* A port counter of the device (hw_counters), or -1. */
static long long port_counter(struct dev *d, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s",
		 ibv_get_device_name(d->ctx->device), name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static void case_k_requester(struct dev *d, struct pair *p, int cqe)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int i, seen, got;

	wr.wr.rdma.remote_addr = (uintptr_t)DST(d);
	wr.wr.rdma.rkey = d->mr->rkey;
	for (i = 0; i < cqe + 2; i++) {
		wr.wr_id = i;
		if (post_send1(p->qp[0], &wr))
			break;
	}
	ok(i == cqe + 2, "k: %d signaled WRITEs posted to a CQ of %d", i, cqe);
	seen = fatal_events(d, p->qp[0], p->cq[0], 5000 * scale);
	ok(seen & 2, "k: requester: IBV_EVENT_CQ_ERR");
	ok(seen & 1, "k: requester: IBV_EVENT_QP_FATAL for the QP that lost its completion");
	ok(qp_state(p->qp[0]) == IBV_QPS_ERR, "k: requester: the QP is in Error (%s)",
	   state_str(qp_state(p->qp[0])));
	got = polled_in_order(p->cq[0], 0, UINT64_MAX);
	ok(got == cqe, "k: requester: the %d completions before the overrun, in order, no more (%d)",
	   cqe, got);
	ok(qp_state(p->qp[1]) == IBV_QPS_RTS,
	   "k: requester: its peer, whose CQ did not overrun, is still in RTS");
}

static void case_k_responder(struct dev *d, struct pair *p, int cqe)
{
	struct ibv_sge sge = { (uintptr_t)SRC(d), 8, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	unsigned int base = d->rslot % NRSLOT;
	long long acks, acks_after;
	struct ibv_wc wc;
	int i, seen, got;

	if (post_recvs(d, p, cqe + 1, 64)) {
		ok(0, "k: responder: receives posted");
		return;
	}
	/* cqe SENDs, each completed at the sender: the receive CQ fills. */
	for (i = 0; i < cqe; i++) {
		wr.wr_id = i;
		if (post_send1(p->qp[0], &wr) ||
		    poll_n(p->cq[0], &wc, 1, 5000 * scale) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			break;
	}
	ok(i == cqe, "k: responder: %d SENDs fill its receive CQ (%d)", cqe, i);
	/* Every ACK of those was sent: the sender completed them. */
	acks = port_counter(d, "ack_sent");
	wr.wr_id = cqe;
	ok(!post_send1(p->qp[0], &wr), "k: responder: one more SEND posted");
	seen = fatal_events(d, p->qp[1], p->cq[1], 5000 * scale);
	ok(seen & 2, "k: responder: IBV_EVENT_CQ_ERR");
	ok(seen & 1, "k: responder: IBV_EVENT_QP_FATAL for the QP that lost its completion");
	ok(qp_state(p->qp[1]) == IBV_QPS_ERR, "k: responder: the QP is in Error (%s)",
	   state_str(qp_state(p->qp[1])));
	/*
	 * Its receive completion was lost: no ACK leaves for it (the sender
	 * resends it meanwhile, into a QP in Error), and it never completes
	 * successfully at the sender.
	 */
	got = poll_n(p->cq[0], &wc, 1, 500 * scale);
	acks_after = port_counter(d, "ack_sent");
	ok(acks >= 0 && acks_after == acks,
	   "k: responder: no ACK for the SEND whose receive completion was lost (%lld, then %lld)",
	   acks, acks_after);
	ok(got == 0 || wc.status != IBV_WC_SUCCESS,
	   "k: responder: that SEND does not complete successfully (%s)",
	   got ? ibv_wc_status_str(wc.status) : "no completion yet");
	got = polled_in_order(p->cq[1], base, NRSLOT);
	ok(got == cqe, "k: responder: the %d receive completions before the overrun, no more (%d)",
	   cqe, got);
}

/* Both CQ paths: the mapped rings, then the uverbs commands. */
static void case_k(struct dev *d)
{
	static const char *const how[] = { "1", "0" };
	struct pair p;
	unsigned int m;
	int cqe;

	for (m = 0; m < 2; m++) {
		diag("k: SROCE_MAPPED=%s", how[m]);
		setenv("SROCE_MAPPED", how[m], 1);
		if (pair_open(d, &p, 4, 7)) {
			ok(0, "k: a QP pair");
			break;
		}
		cqe = p.cq[0]->cqe;
		if (cqe > SQ_DEPTH - 2 || p.cq[1]->cqe != cqe) {
			ok(0, "k: CQs of 4 entries (%d, %d)", cqe, p.cq[1]->cqe);
			pair_close(&p);
			break;
		}
		case_k_requester(d, &p, cqe);
		if (renew(d, &p)) {
			ok(0, "k: a fresh QP pair");
			break;
		}
		case_k_responder(d, &p, cqe);
		ok(!pair_close(&p), "k: the QPs and CQs are destroyed");
	}
	unsetenv("SROCE_MAPPED");
}

/* ---------------------------------------------------------------------- */
/*
 * l. A ring's worth of WRs posted in Error: the post's one doorbell has
 * every one complete flushed, in order, before it returns (IBA 10.3.1),
 * although the kernel flushes a mapped ring in batches with softirqs on
 * between them.
 */

#define L_WRS	1000

static void case_l(struct dev *d)
{
	static struct ibv_send_wr swr[L_WRS];
	static struct ibv_recv_wr rwr[L_WRS];
	static struct ibv_wc wc[L_WRS + 1];
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = L_WRS, .max_recv_wr = L_WRS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_send_wr *sbad;
	struct ibv_recv_wr *rbad;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int i, k, err, got;
	int good;

	cq = ibv_create_cq(d->ctx, 2 * L_WRS, NULL, NULL, 0);
	if (!cq) {
		ok(0, "l: a CQ of %d (%s)", 2 * L_WRS, strerror(errno));
		return;
	}
	ia.send_cq = cq;
	ia.recv_cq = cq;
	qp = ibv_create_qp(d->pd, &ia);
	if (!qp) {
		ok(0, "l: an RC QP of %d WRs each way (%s)", L_WRS,
		   strerror(errno));
		goto out_cq;
	}
	err = qp_connect(d, qp, qp->qp_num, 0, 0, 7);
	if (!err)
		err = modify_state(qp, IBV_QPS_ERR);
	if (err) {
		ok(0, "l: RESET -> RTS -> ERR (%s)", strerror(err));
		goto out_qp;
	}
	memset(swr, 0, sizeof(swr));
	memset(rwr, 0, sizeof(rwr));
	for (i = 0; i < L_WRS; i++) {
		swr[i].wr_id = 0x10000 | i;
		swr[i].opcode = IBV_WR_SEND;
		swr[i].send_flags = IBV_SEND_SIGNALED;
		swr[i].next = i < L_WRS - 1 ? &swr[i + 1] : NULL;
		rwr[i].wr_id = 0x20000 | i;
		rwr[i].next = i < L_WRS - 1 ? &rwr[i + 1] : NULL;
	}
	for (k = 0; k < 2; k++) {
		err = k ? ibv_post_recv(qp, rwr, &rbad) :
			  ibv_post_send(qp, swr, &sbad);
		/* At once: they completed before the post returned. */
		got = err ? 0 : poll_n(cq, wc, L_WRS, 0);
		good = got == L_WRS;
		for (i = 0; i < got; i++)
			good &= wc[i].wr_id == (uint64_t)((k + 1) << 16 | i) &&
				wc[i].status == IBV_WC_WR_FLUSH_ERR;
		/* Nothing more comes. */
		good &= ibv_poll_cq(cq, 1, wc + L_WRS) == 0;
		ok(good, "l: %d %s posted in Error in one chain: each flushed once, in order, by the post (%s, %d)",
		   L_WRS, k ? "receives" : "SENDs", errs(err), got);
	}
out_qp:
	ok(!ibv_destroy_qp(qp), "l: the QP is destroyed");
out_cq:
	ibv_destroy_cq(cq);
}

int main(int argc, char **argv)
{
	static const struct {
		char letter;
		void (*fn)(struct dev *);
		const char *title;
	} cases[] = {
		{ 'a', case_a, "inline fake kernel SGEs, then zero-length SGEs in the same SQ slots" },
		{ 'b', case_b, "atomics and RDMA READ with IBV_SEND_INLINE" },
		{ 'c', case_c, "atomic result SGEs: zero-length, split over two MRs, 4 and 16 bytes" },
		{ 'd', case_d, "bad lkeys, addresses, lengths and SGE counts; wr_id patterns" },
		{ 'e', case_e, "RNR on RDMA WRITE with immediate and on SEND is recovered" },
		{ 'f', case_f, "post_send racing modify_qp to ERR and RESET, then dereg_mr" },
		{ 'g', case_g, "dereg_mr of an MR held by a WR stuck in RNR retries" },
		{ 'h', case_h, "mapped CQ rings scribbled by their process" },
		{ 'i', case_i, "mapped SQ and RQ rings scribbled by their process" },
		{ 'j', case_j, "raw uverbs commands with bytes after the core command" },
		{ 'k', case_k, "CQ overrun: the QP whose completion is lost goes to Error" },
		{ 'l', case_l, "a ring's worth of WRs posted in Error, flushed by one doorbell" },
	};
	const char *which = "abcdefghijkl", *s = getenv("SROCE_TIMEOUT_SCALE");
	struct ibv_device **list;
	unsigned int i;
	int n, found = 0;

	if (argc > 1)
		dev_name = argv[1];
	if (argc > 2)
		which = argv[2];
	if (argc > 3 || (argc > 1 && argv[1][0] == '-')) {
		fprintf(stderr, "usage: %s [DEVICE [CASES]]   (default sroce0 abcdefghijkl)\n",
			argv[0]);
		return 2;
	}
	if (s && atoi(s) > 1)
		scale = atoi(s);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);

	list = ibv_get_device_list(&n);
	for (i = 0; list && (int)i < n; i++)
		found |= !strcmp(ibv_get_device_name(list[i]), dev_name);
	if (list)
		ibv_free_device_list(list);
	tap(found, "libibverbs lists %s", dev_name);
	if (found) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (!strchr(which, cases[i].letter))
				continue;
			if (run_case(cases[i].letter, cases[i].fn,
				     cases[i].title))
				break;
		}
	}
	return tap_end();
}

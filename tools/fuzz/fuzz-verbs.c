// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_fuzz_verbs - a seeded, reproducible random verbs fuzzer.
 *
 * Usage: sroce_fuzz_verbs [-d DEV] [-s SEED] [-n OPS] [-t THREADS]
 *                         [-T SECONDS] [-w SECONDS] [-x]
 *   -d  device (sroce0)          -s  seed (default: time and pid, printed)
 *   -n  operations per thread (20000)      -t  threads (1, at most 32)
 *   -T  stop after this many seconds (0: no limit; -n still applies)
 *   -w  the longest any single call may take (10 s, times
 *       SROCE_TIMEOUT_SCALE); longer is a hang
 *   -x  avoid the known dereg_mr hang: before an MR is deregistered, the
 *       QPs that posted WRs naming it are moved to ERR (their WRs flush)
 *
 * Each thread keeps a small random population of PDs, CQs (small ones, to
 * provoke overflows), MRs, QPs (RC, UC, UD, and invalid types), AHs and
 * SRQs on one shared device context, and does random operations on them:
 * create and destroy in any order (a PD, CQ or SRQ still in use must be
 * refused with EBUSY), modify_qp with random states, masks and values,
 * connects of its own QPs over the device's own GID so traffic flows,
 * post_send with every opcode (and invalid ones), random flags, SGE lists
 * of 0..max+2 entries with valid, invalid and stale keys, inline sizes
 * around max_inline; post_recv and post_srq_recv alike; poll_cq,
 * req_notify_cq, queries, multicast attach, and now and then a fork()
 * whose child posts a few WRs and exits.  Four posts in ten are well
 * formed (a QP in RTS, valid SGEs and remote ranges) so that traffic
 * really flows, through RNR waits, retries, flushes and CQ overruns.  The
 * fuzzer attacks the kernel with bad values only: every pointer it hands
 * libibverbs is valid, and memory it registers stays allocated while
 * registered (memory registered past an allocation's end is registered
 * without write rights).
 *
 * Reproducible: with one thread, a seed gives the same sequence of calls
 * and arguments as long as the kernel answers them alike (nothing the
 * fuzzer decides depends on timing: completions are counted, never acted
 * upon).  With several threads each thread's sequence is reproducible,
 * their interleaving is not.
 *
 * Invariants checked:
 *  - no call takes longer than -w seconds, no thread stops making progress
 *    (a supervisor process watches the fuzzing process through shared
 *    memory: it never waits on a process asleep in the kernel);
 *  - every completion carries a wr_id this thread posted, for the QP it
 *    names; no queue completes more WRs than were posted to it;
 *  - at the end every QP goes to ERR, and every send WR posted OK to a QP
 *    that signals all WRs, and every receive WR posted OK, completes
 *    (success or flushed), unless the CQ reported an overflow
 *    (IBV_EVENT_CQ_ERR) or the QP went through RESET since;
 *  - a PD, CQ or SRQ with users is not destroyed (EBUSY);
 *  - everything is destroyed at the end.
 * Prints what it did (counts per operation, errors by errno, completion
 * statuses) and TAP: "ok 1 - N operations, seed S, no hang",
 * "ok 2 - no invariant broken".  Exit 0 iff both passed.
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
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MAX_THREADS	32
#define NPD		3
#define NCQ		4
#define NMR		8
#define NQP		8
#define NAH		4
#define NMW		4
#define NSCRIBBLED	16
#define NSRQ		2
#define NSTALE		16
#define MAX_CHAIN	4
#define MAX_SGES	1024	/* the longest SGE list handed over */
#define SCRATCH		8192	/* inline data source, never registered */
#define ERRMAX		134	/* errno values counted one by one */
#define NSTATUS		32

/* wr_id: magic | kind | thread | object uid | epoch | serial. */
#define WR_MAGIC	0xf5ULL
enum { K_SEND, K_RECV, K_SRQ };

static uint64_t wrid(int kind, int tid, uint16_t uid, uint8_t epoch,
		     uint32_t serial)
{
	return WR_MAGIC << 56 | (uint64_t)kind << 54 |
	       (uint64_t)(tid & 63) << 48 | (uint64_t)uid << 32 |
	       (uint64_t)epoch << 24 | (serial & 0xffffff);
}

/* ---------------------------------------------------------------------- */
/* Options and the shared watch area. */

static const char *dev_name = "sroce0";
static unsigned long long seed;
static long nops = 20000;
static int nthreads = 1, seconds, avoid_hang, scale = 1;
static double limit = 10;	/* seconds a call may take */

struct watch {
	char op[48];
	atomic_llong since;	/* ns, CLOCK_MONOTONIC (system-wide) */
	atomic_int busy, active;
	atomic_long nops;
};

static struct watch *watch;	/* MAX_THREADS + 1: the worker's main */

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double now(void)
{
	return now_ns() / 1e9;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void mark(int slot, const char *op)
{
	struct watch *w = &watch[slot];

	strncpy(w->op, op, sizeof(w->op) - 1);
	atomic_store(&w->since, now_ns());
	atomic_store(&w->busy, 1);
}

static void unmark(int slot)
{
	atomic_store(&watch[slot].busy, 0);
	atomic_fetch_add(&watch[slot].nops, 1);
}

/* A call the supervisor times. */
#define CALL(t, name, expr) ({			\
	mark((t)->wslot, name);			\
	__auto_type _r = (expr);		\
	unmark((t)->wslot);			\
	_r;					\
})

/* ---------------------------------------------------------------------- */
/* The fuzzing process: device, threads, objects. */

enum op {
	OP_ALLOC_PD, OP_DEALLOC_PD, OP_CREATE_CQ, OP_RESIZE_CQ, OP_DESTROY_CQ,
	OP_REG_MR, OP_DEREG_MR, OP_CREATE_QP, OP_MODIFY_QP, OP_CONNECT,
	OP_QUERY_QP, OP_DESTROY_QP, OP_CREATE_AH, OP_DESTROY_AH,
	OP_CREATE_SRQ, OP_MODIFY_SRQ, OP_QUERY_SRQ, OP_DESTROY_SRQ,
	OP_POST_SEND, OP_POST_RECV, OP_POST_SRQ_RECV, OP_POLL_CQ,
	OP_NOTIFY_CQ, OP_QUERY, OP_MCAST, OP_FORK, OP_ALLOC_MW,
	OP_DEALLOC_MW, OP_BIND_MW, NOPS
};

static const struct {
	const char *name;
	int weight;
} opinfo[NOPS] = {
	[OP_ALLOC_PD] = { "alloc_pd", 2 },
	[OP_DEALLOC_PD] = { "dealloc_pd", 2 },
	[OP_CREATE_CQ] = { "create_cq", 4 },
	[OP_RESIZE_CQ] = { "resize_cq", 1 },
	[OP_DESTROY_CQ] = { "destroy_cq", 3 },
	[OP_REG_MR] = { "reg_mr", 6 },
	[OP_DEREG_MR] = { "dereg_mr", 4 },
	[OP_CREATE_QP] = { "create_qp", 7 },
	[OP_MODIFY_QP] = { "modify_qp", 8 },
	[OP_CONNECT] = { "connect", 7 },
	[OP_QUERY_QP] = { "query_qp", 2 },
	[OP_DESTROY_QP] = { "destroy_qp", 4 },
	[OP_CREATE_AH] = { "create_ah", 2 },
	[OP_DESTROY_AH] = { "destroy_ah", 1 },
	[OP_CREATE_SRQ] = { "create_srq", 1 },
	[OP_MODIFY_SRQ] = { "modify_srq", 1 },
	[OP_QUERY_SRQ] = { "query_srq", 1 },
	[OP_DESTROY_SRQ] = { "destroy_srq", 1 },
	[OP_POST_SEND] = { "post_send", 30 },
	[OP_POST_RECV] = { "post_recv", 12 },
	[OP_POST_SRQ_RECV] = { "post_srq_recv", 3 },
	[OP_POLL_CQ] = { "poll_cq", 20 },
	[OP_NOTIFY_CQ] = { "req_notify_cq", 2 },
	[OP_QUERY] = { "query", 2 },
	[OP_MCAST] = { "attach/detach_mcast", 1 },
	[OP_FORK] = { "fork", 1 },
	[OP_ALLOC_MW] = { "alloc_mw", 2 },
	[OP_DEALLOC_MW] = { "dealloc_mw", 1 },
	[OP_BIND_MW] = { "bind_mw", 4 },
};

struct stats {
	long calls[NOPS], ok[NOPS];
	long err[NOPS][ERRMAX + 1];	/* [ERRMAX]: other */
	long wr[3], wr_ok[3];		/* posted, accepted: send/recv/srq */
	long wc[NSTATUS];		/* completions by status */
	long stale_wc, forks, forks_lost;
	long ring_garbage;		/* completions of scribbled rings */
};

struct fpd {
	struct ibv_pd *pd;
	uint32_t gen;			/* children name their PD by it */
};

struct fcq {
	struct ibv_cq *cq;
	atomic_int overflow;		/* IBV_EVENT_CQ_ERR seen */
};

struct fmr {
	struct ibv_mr *mr;
	void *buf;
	uint64_t addr, len;
	uint32_t pdgen;
	int access;
	unsigned int qpmask;		/* QP slots that posted with it */
};

struct fqp {
	struct ibv_qp *qp;
	int type, scq, rcq, srq;
	uint32_t pdgen;
	struct ibv_qp_cap cap;
	int sig_all, untracked, state;
	uint16_t uid;
	uint8_t epoch;			/* one more at every RESET */
	uint32_t qkey;
	long sposted, scompl, rposted, rcompl;	/* of this epoch */
	union ibv_gid mg[4];		/* multicast groups attached */
	uint16_t mlid[4];		/* with the LID uverbs keeps for them */
	int nmg;
};

struct fah {
	struct ibv_ah *ah;
	uint32_t pdgen;
};

struct fmw {
	struct ibv_mw *mw;
	uint32_t pdgen;
};

struct fsrq {
	struct ibv_srq *srq;
	uint32_t pdgen;
	uint16_t uid;
	long posted, compl;
};

struct thr {
	int id, wslot;
	uint64_t rng;
	pthread_t thread;
	struct ibv_comp_channel *ch;
	struct fpd pd[NPD];
	struct fcq cq[NCQ];
	struct fmr mr[NMR];
	struct fqp qp[NQP];
	struct fah ah[NAH];
	struct fmw mw[NMW];
	struct fsrq srq[NSRQ];
	uint32_t stale[NSTALE];
	int nstale;
	uint32_t scribbled[NSCRIBBLED];	/* QPNs whose rings a child wrote */
	int nscribbled;
	uint32_t pdgen, serial;
	uint16_t uid;
	uint8_t *scratch;
	struct ibv_sge *sges;		/* MAX_SGES */
	long ops;
	int violations;
	struct stats st;
};

static struct ibv_context *ctx;
static union ibv_gid gid;
static int sgid;
static struct ibv_device_attr dattr;
static struct thr *thr;
static atomic_int violations, stop_events;
static atomic_long events[32];
static double t_end;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line to stdout (the supervisor's pipe), written at once. */
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("%s\n", line);
	fflush(stdout);
}

static void violation(struct thr *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void violation(struct thr *t, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	t->violations++;
	if (atomic_fetch_add(&violations, 1) < 50)
		say("# VIOLATION (thread %d, op %ld): %s", t->id, t->ops, line);
}

/* xorshift64*, one per thread. */
static uint64_t rnd(struct thr *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint32_t rn(struct thr *t, uint32_t n)
{
	return n ? (uint32_t)(rnd(t) % n) : 0;
}

static int chance(struct thr *t, int pct)
{
	return rn(t, 100) < (uint32_t)pct;
}

/* A value from the edges, or any. */
static uint32_t any32(struct thr *t)
{
	static const uint32_t v[] = {
		0, 1, 2, 3, 7, 8, 31, 63, 64, 255, 256, 4095, 4096, 65535,
		65536, 0xffffff, 0x1000000, 0x7fffffff, 0x80000000,
		0xfffffffe, 0xffffffff,
	};

	return chance(t, 60) ? v[rn(t, sizeof(v) / sizeof(v[0]))] :
			       (uint32_t)rnd(t);
}

static void record(struct thr *t, enum op op, int err)
{
	t->st.calls[op]++;
	if (!err)
		t->st.ok[op]++;
	else
		t->st.err[op][err > 0 && err < ERRMAX ? err : ERRMAX]++;
}

static int errno_or(int fallback)
{
	return errno ? errno : fallback;
}

/* A random used (or free) slot of an array of structs with @field. */
#define PICK(t, arr, field, used) ({					\
	int _i, _c = 0, _r = -1;					\
	for (_i = 0; _i < (int)(sizeof(arr) / sizeof((arr)[0])); _i++)	\
		if (!!(arr)[_i].field == (used) && rn(t, ++_c) == 0)	\
			_r = _i;					\
	_r;								\
})
#define USED(t, arr, field)	PICK(t, arr, field, 1)
#define FREE(t, arr, field)	PICK(t, arr, field, 0)

static int pd_children(struct thr *t, uint32_t gen)
{
	int i, n = 0;

	for (i = 0; i < NMR; i++)
		n += t->mr[i].mr && t->mr[i].pdgen == gen;
	for (i = 0; i < NQP; i++)
		n += t->qp[i].qp && t->qp[i].pdgen == gen;
	for (i = 0; i < NAH; i++)
		n += t->ah[i].ah && t->ah[i].pdgen == gen;
	for (i = 0; i < NSRQ; i++)
		n += t->srq[i].srq && t->srq[i].pdgen == gen;
	for (i = 0; i < NMW; i++)
		n += t->mw[i].mw && t->mw[i].pdgen == gen;
	return n;
}

static int cq_users(struct thr *t, int c)
{
	int i, n = 0;

	for (i = 0; i < NQP; i++)
		n += t->qp[i].qp && (t->qp[i].scq == c || t->qp[i].rcq == c);
	return n;
}

static int srq_users(struct thr *t, int s)
{
	int i, n = 0;

	for (i = 0; i < NQP; i++)
		n += t->qp[i].qp && t->qp[i].srq == s;
	return n;
}

static struct fqp *qp_by_uid(struct thr *t, uint16_t uid)
{
	int i;

	for (i = 0; i < NQP; i++)
		if (t->qp[i].qp && t->qp[i].uid == uid)
			return &t->qp[i];
	return NULL;
}

static uint16_t new_uid(struct thr *t)
{
	if (!++t->uid)
		t->uid = 1;
	return t->uid;
}

/* A QP went to RESET: its queued WRs were discarded, start counting anew. */
static void new_epoch(struct thr *t, struct fqp *q)
{
	int slot = q - t->qp, i;

	q->epoch++;
	q->sposted = q->scompl = q->rposted = q->rcompl = 0;
	for (i = 0; i < NMR; i++)
		t->mr[i].qpmask &= ~(1u << slot);
}

/* Completion events of the thread's channel: read and acked at once. */
static void drain_channel(struct thr *t)
{
	struct ibv_cq *cq;
	void *cctx;
	int n = 0;

	if (!t->ch)
		return;
	while (n < 1000 && !ibv_get_cq_event(t->ch, &cq, &cctx)) {
		ibv_ack_cq_events(cq, 1);
		n++;
	}
}

/* ---------------------------------------------------------------------- */
/* Completions and the accounting of posted WRs. */

static void handle_wc(struct thr *t, struct ibv_wc *wc)
{
	unsigned int kind, tid, uid, epoch;
	struct fqp *q;
	int i;

	t->st.wc[wc->status < NSTATUS ? wc->status : NSTATUS - 1]++;
	if (wc->wr_id >> 56 != WR_MAGIC) {
		/*
		 * A forked child posted into this QP's mapped rings behind our
		 * provider's back (op_fork): the rings' indexes may have gone
		 * back, and the kernel took stale slots as WRs.  The process's
		 * own loss (sroce-abi.h), on that QP only.
		 */
		for (i = 0; i < NSCRIBBLED; i++) {
			if (t->scribbled[i] && t->scribbled[i] == wc->qp_num) {
				t->st.ring_garbage++;
				return;
			}
		}
		violation(t, "a completion with wr_id %#llx, never posted (%s, QP %u)",
			  (unsigned long long)wc->wr_id,
			  ibv_wc_status_str(wc->status), wc->qp_num);
		return;
	}
	kind = wc->wr_id >> 54 & 3;
	tid = wc->wr_id >> 48 & 63;
	uid = wc->wr_id >> 32 & 0xffff;
	epoch = wc->wr_id >> 24 & 0xff;
	if ((int)tid != t->id) {
		violation(t, "a completion of thread %u's WR (wr_id %#llx) on a CQ of thread %d",
			  tid, (unsigned long long)wc->wr_id, t->id);
		return;
	}
	if (kind == K_SRQ) {
		for (i = 0; i < NSRQ; i++) {
			struct fsrq *s = &t->srq[i];

			if (!s->srq || s->uid != uid)
				continue;
			if (++s->compl > s->posted)
				violation(t, "SRQ %u: %ld completions for %ld receives posted OK",
					  uid, s->compl, s->posted);
			return;
		}
		t->st.stale_wc++;
		return;
	}
	if (kind != K_SEND && kind != K_RECV) {
		violation(t, "a completion with wr_id %#llx of no kind we post",
			  (unsigned long long)wc->wr_id);
		return;
	}
	q = qp_by_uid(t, uid);
	if (!q || q->epoch != epoch) {
		t->st.stale_wc++;	/* a destroyed QP, or before a RESET */
		return;
	}
	if (wc->qp_num != q->qp->qp_num)
		violation(t, "a completion of a WR of QP %u names QP %u (%s)",
			  q->qp->qp_num, wc->qp_num,
			  ibv_wc_status_str(wc->status));
	if (kind == K_SEND && ++q->scompl > q->sposted && !q->untracked)
		violation(t, "QP %u: %ld send completions for %ld sends posted OK",
			  q->qp->qp_num, q->scompl, q->sposted);
	if (kind == K_RECV && ++q->rcompl > q->rposted && !q->untracked)
		violation(t, "QP %u: %ld receive completions for %ld receives posted OK",
			  q->qp->qp_num, q->rcompl, q->rposted);
}

static int poll_one_cq(struct thr *t, int c, int max)
{
	struct ibv_wc wc[64];
	int n, i;

	if (max > 64)
		max = 64;
	n = CALL(t, "ibv_poll_cq", ibv_poll_cq(t->cq[c].cq, max, wc));
	if (n > max) {
		violation(t, "ibv_poll_cq returned %d completions for %d asked",
			  n, max);
		n = max;
	}
	for (i = 0; i < n; i++)
		handle_wc(t, &wc[i]);
	return n;
}

/* ---------------------------------------------------------------------- */
/* Object operations. */

static void op_alloc_pd(struct thr *t)
{
	int i = FREE(t, t->pd, pd);
	struct ibv_pd *pd;

	if (i < 0)
		return;
	errno = 0;
	pd = CALL(t, "ibv_alloc_pd", ibv_alloc_pd(ctx));
	record(t, OP_ALLOC_PD, pd ? 0 : errno_or(ERRMAX));
	if (pd) {
		t->pd[i].pd = pd;
		t->pd[i].gen = ++t->pdgen;
	}
}

static void op_dealloc_pd(struct thr *t)
{
	int i = USED(t, t->pd, pd), kids, err;

	if (i < 0)
		return;
	kids = pd_children(t, t->pd[i].gen);
	err = CALL(t, "ibv_dealloc_pd", ibv_dealloc_pd(t->pd[i].pd));
	record(t, OP_DEALLOC_PD, err);
	if (kids && !err)
		violation(t, "ibv_dealloc_pd of a PD with %d children succeeded",
			  kids);
	else if (kids && err != EBUSY)
		violation(t, "ibv_dealloc_pd of a PD with %d children: %s, not EBUSY",
			  kids, strerror(err));
	if (!err)
		t->pd[i].pd = NULL;	/* children keep a generation no PD has */
}

static void op_create_cq(struct thr *t)
{
	int i = FREE(t, t->cq, cq), r = rn(t, 100), cqe, chan, vec;
	struct ibv_cq *cq;

	if (i < 0)
		return;
	if (r < 50)
		cqe = 1 + rn(t, 16);
	else if (r < 88)
		cqe = 17 + rn(t, 496);
	else if (r < 92)
		cqe = 0;
	else if (r < 95)
		cqe = -1 - (int)rn(t, 3);
	else
		cqe = chance(t, 50) ? dattr.max_cqe + 1 : (int)any32(t);
	chan = t->ch && chance(t, 30);
	vec = chance(t, 90) ? 0 : (int)any32(t);
	atomic_store(&t->cq[i].overflow, 0);
	errno = 0;
	cq = CALL(t, "ibv_create_cq",
		  ibv_create_cq(ctx, cqe, &t->cq[i], chan ? t->ch : NULL, vec));
	record(t, OP_CREATE_CQ, cq ? 0 : errno_or(ERRMAX));
	if (cq)
		t->cq[i].cq = cq;
}

static void op_resize_cq(struct thr *t)
{
	int i = USED(t, t->cq, cq), cqe, err;

	if (i < 0)
		return;
	cqe = chance(t, 80) ? 1 + (int)rn(t, 512) : (int)any32(t);
	err = CALL(t, "ibv_resize_cq", ibv_resize_cq(t->cq[i].cq, cqe));
	record(t, OP_RESIZE_CQ, err);
}

static void op_destroy_cq(struct thr *t)
{
	int i = USED(t, t->cq, cq), users, err, k;

	if (i < 0)
		return;
	users = cq_users(t, i);
	drain_channel(t);
	err = CALL(t, "ibv_destroy_cq", ibv_destroy_cq(t->cq[i].cq));
	record(t, OP_DESTROY_CQ, err);
	if (users && !err) {
		violation(t, "ibv_destroy_cq of a CQ %d QPs use succeeded",
			  users);
		for (k = 0; k < NQP; k++) {
			struct fqp *q = &t->qp[k];

			if (!q->qp || (q->scq != i && q->rcq != i))
				continue;
			q->untracked = 1;
			if (q->scq == i)
				q->scq = -1;
			if (q->rcq == i)
				q->rcq = -1;
		}
	} else if (users && err != EBUSY) {
		violation(t, "ibv_destroy_cq of a CQ %d QPs use: %s, not EBUSY",
			  users, strerror(err));
	}
	if (!err)
		t->cq[i].cq = NULL;
}

static int rand_access(struct thr *t)
{
	static const int extra[] = {
		IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED,
		IBV_ACCESS_ON_DEMAND, IBV_ACCESS_HUGETLB,
		IBV_ACCESS_RELAXED_ORDERING, 1 << 30,
	};
	int r = rn(t, 100), a;

	if (r < 70) {
		a = IBV_ACCESS_LOCAL_WRITE;
		if (chance(t, 60))
			a |= IBV_ACCESS_REMOTE_WRITE;
		if (chance(t, 60))
			a |= IBV_ACCESS_REMOTE_READ;
		if (chance(t, 40))
			a |= IBV_ACCESS_REMOTE_ATOMIC;
		if (chance(t, 40))
			a |= IBV_ACCESS_MW_BIND;
		return a;
	}
	if (r < 80)
		return chance(t, 50) ? 0 : IBV_ACCESS_REMOTE_READ;
	if (r < 90)	/* remote write or atomic without local write */
		return chance(t, 50) ? IBV_ACCESS_REMOTE_WRITE :
				       IBV_ACCESS_REMOTE_ATOMIC |
				       IBV_ACCESS_REMOTE_READ;
	return IBV_ACCESS_LOCAL_WRITE |
	       extra[rn(t, sizeof(extra) / sizeof(extra[0]))];
}

static void op_reg_mr(struct thr *t)
{
	static const size_t sizes[] = {
		1, 7, 64, 512, 4095, 4096, 4097, 12289, 65536 + 13, 1 << 20,
	};
	int i = FREE(t, t->mr, mr), p = USED(t, t->pd, pd), r, access;
	size_t buflen, off = 0, avail;
	uint64_t len;
	struct ibv_mr *mr;
	void *buf;

	if (i < 0 || p < 0)
		return;
	buflen = sizes[rn(t, sizeof(sizes) / sizeof(sizes[0]))];
	if (posix_memalign(&buf, 4096, buflen))
		return;
	memset(buf, 0, buflen);
	if (chance(t, 30))
		off = rn(t, buflen < 4096 ? buflen : 4096);
	avail = buflen - off;
	r = rn(t, 100);
	if (r < 8)
		len = 0;
	else if (r < 16)
		len = 1;
	else if (r < 30)
		len = 1 + rn(t, avail);
	else if (r < 88)
		len = avail;
	else if (r < 93)
		len = avail + 1 + rn(t, 8192);
	else if (r < 97)
		len = (1ULL << 32) - 1;
	else
		len = 1ULL << 40;
	/*
	 * Past our allocation only read rights: nothing may be written
	 * there, by the kernel or a peer (the memory is not ours to give).
	 */
	if (len > avail)
		access = chance(t, 50) ? 0 : IBV_ACCESS_REMOTE_READ;
	else
		access = rand_access(t);
	errno = 0;
	mr = CALL(t, "ibv_reg_mr",
		  ibv_reg_mr(t->pd[p].pd, (uint8_t *)buf + off, len, access));
	record(t, OP_REG_MR, mr ? 0 : errno_or(ERRMAX));
	if (!mr) {
		free(buf);
		return;
	}
	t->mr[i] = (struct fmr){
		.mr = mr, .buf = buf, .addr = (uintptr_t)buf + off, .len = len,
		.pdgen = t->pd[p].gen, .access = access,
	};
}

static int modify_state(struct thr *t, struct fqp *q, enum ibv_qp_state s)
{
	struct ibv_qp_attr a = { .qp_state = s };
	int err = CALL(t, "ibv_modify_qp", ibv_modify_qp(q->qp, &a,
							 IBV_QP_STATE));

	if (!err) {
		if (s == IBV_QPS_RESET)
			new_epoch(t, q);
		q->state = s;
	}
	return err;
}

static void op_dereg_mr(struct thr *t)
{
	int i = USED(t, t->mr, mr), err, k;
	struct fmr *m;
	uint32_t lkey;

	if (i < 0)
		return;
	m = &t->mr[i];
	lkey = m->mr->lkey;
	if (avoid_hang) {	/* flush the WRs that may hold it */
		for (k = 0; k < NQP; k++)
			if ((m->qpmask & 1u << k) && t->qp[k].qp)
				modify_state(t, &t->qp[k], IBV_QPS_ERR);
	}
	err = CALL(t, "ibv_dereg_mr", ibv_dereg_mr(m->mr));
	record(t, OP_DEREG_MR, err);
	if (err)
		return;
	t->stale[t->nstale++ % NSTALE] = lkey;	/* for stale-key WRs */
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

static void op_create_qp(struct thr *t)
{
	static const enum ibv_qp_type bad_types[] = {
		0, 1, 5, IBV_QPT_RAW_PACKET, 0x7f,
	};
	int i = FREE(t, t->qp, qp), p = USED(t, t->pd, pd);
	int s = USED(t, t->cq, cq), r = USED(t, t->cq, cq), k, sr = -1;
	struct ibv_qp_init_attr ia = { 0 };
	enum ibv_qp_type type;
	struct ibv_qp *qp;

	if (i < 0 || p < 0 || s < 0)
		return;
	if (chance(t, 40))
		r = s;
	k = rn(t, 100);
	type = k < 40 ? IBV_QPT_RC : k < 60 ? IBV_QPT_UC : k < 92 ? IBV_QPT_UD :
	       bad_types[rn(t, sizeof(bad_types) / sizeof(bad_types[0]))];
	if ((type == IBV_QPT_RC || type == IBV_QPT_UD) && chance(t, 25))
		sr = USED(t, t->srq, srq);
	if (chance(t, 85)) {
		static const uint32_t inl[] = { 0, 16, 64, 128, 255, 256 };

		ia.cap.max_send_wr = 1 + rn(t, 64);
		ia.cap.max_recv_wr = rn(t, 64);
		ia.cap.max_send_sge = rn(t, 5);
		ia.cap.max_recv_sge = rn(t, 5);
		ia.cap.max_inline_data = chance(t, 70) ?
			inl[rn(t, sizeof(inl) / sizeof(inl[0]))] : rn(t, 257);
	} else {
		ia.cap.max_send_wr = chance(t, 50) ? (uint32_t)dattr.max_qp_wr + 1 :
						     any32(t);
		ia.cap.max_recv_wr = chance(t, 50) ? rn(t, 64) : any32(t);
		ia.cap.max_send_sge = chance(t, 50) ? (uint32_t)dattr.max_sge + 1 :
						      any32(t);
		ia.cap.max_recv_sge = chance(t, 50) ? rn(t, 5) : any32(t);
		ia.cap.max_inline_data = chance(t, 50) ? 257 : any32(t);
	}
	ia.qp_type = type;
	ia.send_cq = t->cq[s].cq;
	ia.recv_cq = t->cq[r].cq;
	ia.srq = sr >= 0 ? t->srq[sr].srq : NULL;
	ia.sq_sig_all = chance(t, 50);
	ia.qp_context = &t->qp[i];
	errno = 0;
	qp = CALL(t, "ibv_create_qp", ibv_create_qp(t->pd[p].pd, &ia));
	record(t, OP_CREATE_QP, qp ? 0 : errno_or(ERRMAX));
	if (!qp)
		return;
	t->qp[i] = (struct fqp){
		.qp = qp, .type = type, .scq = s, .rcq = r, .srq = sr,
		.pdgen = t->pd[p].gen, .cap = ia.cap, .sig_all = ia.sq_sig_all,
		.state = IBV_QPS_RESET, .uid = new_uid(t),
		.qkey = chance(t, 80) ? 0x11110000 : (uint32_t)rnd(t) & 0x7fffffff,
	};
}

static void op_destroy_qp(struct thr *t)
{
	int i = USED(t, t->qp, qp), err, k;

	if (i < 0)
		return;
	err = CALL(t, "ibv_destroy_qp", ibv_destroy_qp(t->qp[i].qp));
	record(t, OP_DESTROY_QP, err);
	if (err)
		return;
	for (k = 0; k < NMR; k++)
		t->mr[k].qpmask &= ~(1u << i);
	memset(&t->qp[i], 0, sizeof(t->qp[i]));
}

/* A GID to send to: mostly our own, else neighbours, multicast, junk. */
static void rand_dgid(struct thr *t, union ibv_gid *g)
{
	int r = rn(t, 100), k;

	*g = gid;
	if (r < 75)
		return;
	if (r < 80) {		/* another host of our IPv4 subnet */
		g->raw[15] = 200 + rn(t, 50);
	} else if (r < 85) {	/* IPv4 multicast */
		g->raw[12] = 224;
		g->raw[13] = 0;
		g->raw[14] = 0;
		g->raw[15] = 1 + rn(t, 250);
	} else if (r < 90) {	/* IPv6 multicast */
		memset(g, 0, sizeof(*g));
		g->raw[0] = 0xff;
		g->raw[1] = 0x0e;
		g->raw[15] = 1;
	} else if (r < 93) {
		memset(g, 0, sizeof(*g));
	} else {
		for (k = 0; k < 16; k++)
			g->raw[k] = rnd(t);
	}
}

static void rand_ah_attr(struct thr *t, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->is_global = chance(t, 92);
	a->port_num = chance(t, 92) ? 1 : any32(t) & 0xff;
	a->sl = chance(t, 80) ? 0 : rn(t, 16);
	a->dlid = chance(t, 80) ? 0 : any32(t) & 0xffff;
	a->static_rate = chance(t, 90) ? 0 : rn(t, 20);
	a->src_path_bits = chance(t, 90) ? 0 : any32(t) & 0x7f;
	rand_dgid(t, &a->grh.dgid);
	a->grh.sgid_index = chance(t, 85) ? (uint32_t)sgid : any32(t) & 0xff;
	a->grh.hop_limit = chance(t, 80) ? 64 : any32(t) & 0xff;
	a->grh.traffic_class = chance(t, 80) ? 0 : any32(t) & 0xff;
	a->grh.flow_label = chance(t, 80) ? 0 : any32(t) & 0xfffff;
}

static void op_create_ah(struct thr *t)
{
	int i = FREE(t, t->ah, ah), p = USED(t, t->pd, pd);
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	if (i < 0 || p < 0)
		return;
	rand_ah_attr(t, &a);
	errno = 0;
	ah = CALL(t, "ibv_create_ah", ibv_create_ah(t->pd[p].pd, &a));
	record(t, OP_CREATE_AH, ah ? 0 : errno_or(ERRMAX));
	if (ah) {
		t->ah[i].ah = ah;
		t->ah[i].pdgen = t->pd[p].gen;
	}
}

static void op_destroy_ah(struct thr *t)
{
	int i = USED(t, t->ah, ah), err;

	if (i < 0)
		return;
	err = CALL(t, "ibv_destroy_ah", ibv_destroy_ah(t->ah[i].ah));
	record(t, OP_DESTROY_AH, err);
	if (!err)
		t->ah[i].ah = NULL;
}

static void op_create_srq(struct thr *t)
{
	int i = FREE(t, t->srq, srq), p = USED(t, t->pd, pd);
	struct ibv_srq_init_attr a = { 0 };
	struct ibv_srq *srq;

	if (i < 0 || p < 0)
		return;
	if (chance(t, 85)) {
		a.attr.max_wr = 1 + rn(t, 64);
		a.attr.max_sge = rn(t, 5);
		a.attr.srq_limit = chance(t, 70) ? 0 : rn(t, a.attr.max_wr + 2);
	} else {
		a.attr.max_wr = chance(t, 50) ? 0 : any32(t);
		a.attr.max_sge = chance(t, 50) ? (uint32_t)dattr.max_sge + 1 :
						 any32(t);
		a.attr.srq_limit = any32(t);
	}
	a.srq_context = &t->srq[i];
	errno = 0;
	srq = CALL(t, "ibv_create_srq", ibv_create_srq(t->pd[p].pd, &a));
	record(t, OP_CREATE_SRQ, srq ? 0 : errno_or(ERRMAX));
	if (srq)
		t->srq[i] = (struct fsrq){
			.srq = srq, .pdgen = t->pd[p].gen, .uid = new_uid(t),
		};
}

static void op_modify_srq(struct thr *t)
{
	int i = USED(t, t->srq, srq), mask, err;
	struct ibv_srq_attr a = { 0 };

	if (i < 0)
		return;
	mask = chance(t, 80) ? IBV_SRQ_LIMIT :
	       chance(t, 50) ? IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT : (int)any32(t);
	a.max_wr = chance(t, 50) ? rn(t, 64) : any32(t);
	a.max_sge = any32(t);
	a.srq_limit = chance(t, 70) ? rn(t, 64) : any32(t);
	err = CALL(t, "ibv_modify_srq", ibv_modify_srq(t->srq[i].srq, &a,
							mask));
	record(t, OP_MODIFY_SRQ, err);
}

static void op_query_srq(struct thr *t)
{
	int i = USED(t, t->srq, srq), err;
	struct ibv_srq_attr a;

	if (i < 0)
		return;
	err = CALL(t, "ibv_query_srq", ibv_query_srq(t->srq[i].srq, &a));
	record(t, OP_QUERY_SRQ, err);
}

static void op_destroy_srq(struct thr *t)
{
	int i = USED(t, t->srq, srq), users, err;

	if (i < 0)
		return;
	users = srq_users(t, i);
	err = CALL(t, "ibv_destroy_srq", ibv_destroy_srq(t->srq[i].srq));
	record(t, OP_DESTROY_SRQ, err);
	if (users && !err) {
		int k;

		violation(t, "ibv_destroy_srq of an SRQ %d QPs use succeeded",
			  users);
		for (k = 0; k < NQP; k++)
			if (t->qp[k].qp && t->qp[k].srq == i) {
				t->qp[k].srq = -1;
				t->qp[k].untracked = 1;
			}
	} else if (users && err != EBUSY) {
		violation(t, "ibv_destroy_srq of an SRQ %d QPs use: %s, not EBUSY",
			  users, strerror(err));
	}
	if (!err)
		memset(&t->srq[i], 0, sizeof(t->srq[i]));
}

/* ---------------------------------------------------------------------- */
/* QP state changes. */

static uint32_t rand_qpn(struct thr *t)
{
	int k = USED(t, t->qp, qp);

	if (k >= 0 && chance(t, 70))
		return t->qp[k].qp->qp_num;
	return chance(t, 50) ? rn(t, 1 << 24) : any32(t);
}

/* Every attribute, random; the mask decides which are read. */
static void rand_attr(struct thr *t, struct ibv_qp_attr *a, int sane)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = rn(t, sane ? 7 : 9);
	a->cur_qp_state = rn(t, 8);
	a->path_mtu = sane ? IBV_MTU_256 + rn(t, 3) : any32(t) & 7;
	a->path_mig_state = rn(t, 4);
	a->qkey = sane ? 0x11110000 : any32(t);
	a->rq_psn = sane ? rn(t, 1 << 24) : any32(t);
	a->sq_psn = sane ? rn(t, 1 << 24) : any32(t);
	a->dest_qp_num = rand_qpn(t);
	a->qp_access_flags = sane ? rand_access(t) & 0xf : any32(t);
	rand_ah_attr(t, &a->ah_attr);
	rand_ah_attr(t, &a->alt_ah_attr);
	a->pkey_index = sane || chance(t, 50) ? 0 : any32(t) & 0xffff;
	a->alt_pkey_index = any32(t) & 0xffff;
	a->en_sqd_async_notify = rn(t, 2);
	a->sq_draining = rn(t, 2);
	a->max_rd_atomic = sane ? rn(t, 129) : any32(t) & 0xff;
	a->max_dest_rd_atomic = sane ? rn(t, 129) : any32(t) & 0xff;
	a->min_rnr_timer = sane ? rn(t, 32) : any32(t) & 0xff;
	a->port_num = sane || chance(t, 50) ? 1 : any32(t) & 0xff;
	a->timeout = sane ? rn(t, 24) : any32(t) & 0xff;
	a->retry_cnt = sane ? rn(t, 8) : any32(t) & 0xff;
	a->rnr_retry = sane ? rn(t, 8) : any32(t) & 0xff;
	a->alt_port_num = any32(t) & 0xff;
	a->alt_timeout = any32(t) & 0xff;
	a->rate_limit = any32(t);
}

/* The mask ib_core expects to reach @state (IBA 10.3, table 91). */
static int std_mask(int type, int state)
{
	switch (state) {
	case IBV_QPS_INIT:
		return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       (type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	case IBV_QPS_RTR:
		if (type == IBV_QPT_UD)
			return IBV_QP_STATE;
		return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       (type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER : 0);
	case IBV_QPS_RTS:
		return IBV_QP_STATE | IBV_QP_SQ_PSN |
		       (type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC : 0);
	case IBV_QPS_SQD:
		return IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY;
	default:
		return IBV_QP_STATE;
	}
}

static void op_modify_qp(struct thr *t)
{
	int i = USED(t, t->qp, qp), sane = chance(t, 60), mask, err;
	struct fqp *q;
	struct ibv_qp_attr a;

	if (i < 0)
		return;
	q = &t->qp[i];
	rand_attr(t, &a, sane);
	if (sane) {
		mask = std_mask(q->type, a.qp_state);
		if (chance(t, 25))	/* an optional or a wrong extra */
			mask |= 1 << rn(t, 21);
		if (chance(t, 10))
			mask &= ~(1 << rn(t, 21));
	} else {
		mask = (int)(rnd(t) & ((1 << 21) - 1));
		if (chance(t, 10))
			mask |= 1 << (21 + rn(t, 10));
	}
	if (chance(t, 5)) {	/* a whole path change at once */
		mask |= IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE;
	}
	err = CALL(t, "ibv_modify_qp", ibv_modify_qp(q->qp, &a, mask));
	record(t, OP_MODIFY_QP, err);
	if (!err && (mask & IBV_QP_STATE)) {
		if (a.qp_state == IBV_QPS_RESET)
			new_epoch(t, q);
		q->state = a.qp_state;
	}
}

/* RESET -> INIT -> RTR -> RTS towards @dqpn (RC, UC) or alone (UD). */
static int bring_up(struct thr *t, struct fqp *q, uint32_t dqpn,
		    uint32_t sq_psn, uint32_t rq_psn)
{
	static const int states[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	struct ibv_qp_attr a;
	int k, err;

	err = modify_state(t, q, IBV_QPS_RESET);
	for (k = 0; k < 3 && !err; k++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = states[k];
		a.port_num = 1;
		a.pkey_index = 0;
		a.qkey = q->qkey;
		a.qp_access_flags = chance(t, 90) ?
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC :
			rand_access(t) & 0xf;
		a.path_mtu = chance(t, 70) ? IBV_MTU_1024 : IBV_MTU_256 + rn(t, 3);
		a.dest_qp_num = dqpn;
		a.rq_psn = rq_psn;
		a.sq_psn = sq_psn;
		a.max_dest_rd_atomic = rn(t, 5);
		a.max_rd_atomic = rn(t, 5);
		a.min_rnr_timer = chance(t, 70) ? 1 + rn(t, 12) : rn(t, 32);
		a.timeout = chance(t, 80) ? 8 + rn(t, 8) : rn(t, 24);
		a.retry_cnt = rn(t, 8);
		a.rnr_retry = chance(t, 50) ? 7 : rn(t, 8);
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = gid;
		a.ah_attr.grh.sgid_index = sgid;
		a.ah_attr.grh.hop_limit = 64;
		err = CALL(t, "ibv_modify_qp",
			   ibv_modify_qp(q->qp, &a, std_mask(q->type,
							     states[k])));
		if (!err)
			q->state = states[k];
	}
	return err;
}

static void op_connect(struct thr *t)
{
	int i = USED(t, t->qp, qp), k, j = -1, c = 0, err;
	uint32_t psn[2] = { rn(t, 1 << 24), rn(t, 1 << 24) };
	struct fqp *a, *b;

	if (i < 0)
		return;
	a = &t->qp[i];
	if (a->type != IBV_QPT_RC && a->type != IBV_QPT_UC &&
	    a->type != IBV_QPT_UD)
		return;
	if (a->type == IBV_QPT_UD) {
		err = bring_up(t, a, 0, psn[0], 0);
		record(t, OP_CONNECT, err);
		return;
	}
	/* A peer of the same type, now and then the QP itself. */
	for (k = 0; k < NQP; k++)
		if (k != i && t->qp[k].qp && t->qp[k].type == a->type &&
		    rn(t, ++c) == 0)
			j = k;
	if (j < 0 || chance(t, 10))
		j = i;
	b = &t->qp[j];
	err = bring_up(t, b, a->qp->qp_num, psn[1], psn[0]);
	if (!err && j != i)
		err = bring_up(t, a, b->qp->qp_num, psn[0], psn[1]);
	record(t, OP_CONNECT, err);
}

static void op_query_qp(struct thr *t)
{
	int i = USED(t, t->qp, qp), mask, err;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	if (i < 0)
		return;
	mask = chance(t, 50) ? (1 << 21) - 1 : (int)any32(t);
	err = CALL(t, "ibv_query_qp", ibv_query_qp(t->qp[i].qp, &a, mask,
						    &ia));
	/*
	 * The state read back is not kept: when the engine moved the QP
	 * depends on timing, and later choices must depend on the seed only.
	 */
	record(t, OP_QUERY_QP, err);
}

/* ---------------------------------------------------------------------- */
/* Work requests. */

/* A local SGE: a key that is ours, stale, foreign or none; any range. */
static void rand_sge(struct thr *t, struct ibv_sge *s)
{
	int m = USED(t, t->mr, mr), r = rn(t, 100);
	uint64_t off;

	if (m >= 0 && r < 75) {
		struct fmr *f = &t->mr[m];

		s->lkey = f->mr->lkey;
		off = f->len ? rnd(t) % f->len : 0;
		r = rn(t, 100);
		if (r < 70) {
			uint64_t room = f->len - off;

			s->addr = f->addr + off;
			s->length = chance(t, 10) || !room ? 0 :
				    1 + rnd(t) % (room < 65536 ? room : 65536);
		} else if (r < 80) {	/* across the end */
			s->addr = f->addr + f->len - rn(t, 8);
			s->length = 1 + rn(t, 64);
		} else if (r < 90) {	/* before the start */
			s->addr = f->addr - 1 - rn(t, 4096);
			s->length = 1 + rn(t, 64);
		} else {
			s->addr = rnd(t);
			s->length = any32(t);
		}
	} else {
		if (r < 85 && t->nstale)
			s->lkey = t->stale[rn(t, t->nstale < NSTALE ?
					       t->nstale : NSTALE)];
		else if (r < 95)
			s->lkey = (uint32_t)rnd(t);
		else
			s->lkey = 0;
		s->addr = chance(t, 50) ? (uintptr_t)t->scratch : rnd(t);
		s->length = chance(t, 80) ? 1 + rn(t, 4096) : any32(t);
	}
	if (chance(t, 3))
		s->length = chance(t, 50) ? 0xffffffff : 0x80000000;
}

/* Inline data from the scratch buffer, about max_inline bytes in all. */
/*
 * The provider maps the queues of RC and UC QPs (SROCE_MAPPED unset or not
 * 0): it copies inline data itself, as every provider with mapped queues
 * does, so a bad inline pointer is the caller's fault (SIGSEGV), not a
 * kernel's EFAULT; and a forked child that posts writes rings it shares
 * with its parent.
 */
static int mapped;

static void rand_inline(struct thr *t, struct ibv_sge *s, int n, int max,
			int bad_ptrs)
{
	const uint32_t sizes[] = {
		0, 1, max ? max - 1 : 0, max, max + 1, 255, 256, 257, 1024,
	};
	uint32_t total = chance(t, 80) ?
		sizes[rn(t, sizeof(sizes) / sizeof(sizes[0]))] :
		rn(t, max + 2);
	int k;

	for (k = 0; k < n; k++) {
		uint32_t part = k == n - 1 ? total : rn(t, total + 1);

		if (part > SCRATCH / 2)
			part = SCRATCH / 2;
		s[k].addr = (uintptr_t)t->scratch + rn(t, SCRATCH / 2);
		s[k].length = part;
		s[k].lkey = chance(t, 80) ? 0 : (uint32_t)rnd(t);
		total -= part;
		/* user memory that is not there */
		if (bad_ptrs && chance(t, 3))
			s[k].addr = chance(t, 50) ? 0 : rnd(t);
	}
}

/* A remote address and rkey: ours mostly, in range or not. */
static void rand_remote(struct thr *t, uint64_t *addr, uint32_t *rkey,
			int atomic)
{
	int m = USED(t, t->mr, mr), w = USED(t, t->mw, mw);

	if (m >= 0 && chance(t, 75)) {
		struct fmr *f = &t->mr[m];

		/* A window's rkey, bound or not, to anywhere in an MR. */
		*rkey = w >= 0 && chance(t, 15) ? t->mw[w].mw->rkey :
						  f->mr->rkey;
		*addr = f->addr + (f->len ? rnd(t) % f->len : 0);
		if (atomic && chance(t, 80))
			*addr &= ~7ULL;
		if (chance(t, 10))
			*addr = f->addr + f->len - rn(t, 16);
	} else {
		*rkey = chance(t, 20) ? 0 : (uint32_t)rnd(t);
		*addr = rnd(t);
	}
}

static int rand_opcode_valid(struct thr *t, int type)
{
	static const int rc[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV, IBV_WR_ATOMIC_WRITE,
	};
	static const int uc[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};

	if (type == IBV_QPT_RC)
		return rc[rn(t, sizeof(rc) / sizeof(rc[0]))];
	if (type == IBV_QPT_UC)
		return uc[rn(t, sizeof(uc) / sizeof(uc[0]))];
	return chance(t, 50) ? IBV_WR_SEND : IBV_WR_SEND_WITH_IMM;
}

/* Mostly one that fits the QP type; else any number. */
static int rand_opcode(struct thr *t, int type)
{
	if (chance(t, 85))
		return rand_opcode_valid(t, type);
	return chance(t, 70) ? (int)rn(t, 16) : (int)any32(t);
}

/* An MR of @pdgen (0: any PD) with the rights @need, within reason. */
static int pick_mr(struct thr *t, uint32_t pdgen, int need)
{
	int k, c = 0, m = -1;

	for (k = 0; k < NMR; k++) {
		struct fmr *f = &t->mr[k];

		if (f->mr && f->len && f->len <= (1 << 20) &&
		    (!pdgen || f->pdgen == pdgen) &&
		    (f->access & need) == need && rn(t, ++c) == 0)
			m = k;
	}
	return m;
}

/* A valid local SGE of at most @max bytes; random when no MR fits. */
static void clean_sge(struct thr *t, struct ibv_sge *s, uint32_t pdgen,
		      int need, uint32_t max)
{
	int m = pick_mr(t, pdgen, need);
	uint64_t off, room;

	if (m < 0 || !max) {
		rand_sge(t, s);
		return;
	}
	off = rnd(t) % t->mr[m].len;
	room = t->mr[m].len - off;
	if (room > max)
		room = max;
	s->lkey = t->mr[m].mr->lkey;
	s->addr = t->mr[m].addr + off;
	s->length = chance(t, 5) ? 0 : 1 + rnd(t) % room;
}

/* A valid remote range of @len bytes (8-aligned for atomics). */
static void clean_remote(struct thr *t, uint64_t *addr, uint32_t *rkey,
			 int need, uint64_t len, int atomic)
{
	int m = pick_mr(t, 0, need);
	struct fmr *f;
	uint64_t first;

	if (m < 0) {
		rand_remote(t, addr, rkey, atomic);
		return;
	}
	f = &t->mr[m];
	*rkey = f->mr->rkey;
	first = atomic ? (f->addr + 7) & ~7ULL : f->addr;
	if (first + len > f->addr + f->len) {
		*addr = first;	/* too long for it: a remote error */
		return;
	}
	*addr = first + rnd(t) % (f->addr + f->len - len - first + 1);
	if (atomic)
		*addr &= ~7ULL;
}

/* A QP in @state as far as we know (any QP if none). */
static int pick_qp(struct thr *t, int state)
{
	int k, c = 0, q = -1;

	for (k = 0; k < NQP; k++)
		if (t->qp[k].qp && t->qp[k].state == state && rn(t, ++c) == 0)
			q = k;
	return q >= 0 ? q : USED(t, t->qp, qp);
}

/*
 * A WR meant to work: a valid opcode, SGEs and remote range.  @w->sg_list
 * has room for the QP's max_send_sge entries.
 */
static void clean_send(struct thr *t, struct fqp *q, struct ibv_send_wr *w)
{
	int op = rand_opcode_valid(t, q->type), k, n, need_local = 0;
	uint32_t max = q->type == IBV_QPT_UD ? 1024 : 16384, total = 0;
	int atomic = op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		     op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	int awrite = op == IBV_WR_ATOMIC_WRITE;

	w->opcode = op;
	w->send_flags = (chance(t, 70) ? IBV_SEND_SIGNALED : 0) |
			(chance(t, 10) ? IBV_SEND_SOLICITED : 0) |
			(chance(t, 10) ? IBV_SEND_FENCE : 0);
	if (op == IBV_WR_RDMA_READ || atomic)
		need_local = IBV_ACCESS_LOCAL_WRITE;
	if (awrite) {
		/* Its 8 bytes are read when posted, as inline data is. */
		n = 1;
		w->sg_list[0] = (struct ibv_sge){ (uintptr_t)t->scratch, 8, 0 };
	} else if (atomic) {
		n = 1;
		clean_sge(t, w->sg_list, q->pdgen, need_local, 8);
		w->sg_list[0].length = 8;
	} else if (op != IBV_WR_RDMA_READ && q->cap.max_inline_data &&
		   chance(t, 30)) {
		n = q->cap.max_send_sge ? 1 + rn(t, q->cap.max_send_sge) : 1;
		w->send_flags |= IBV_SEND_INLINE;
		rand_inline(t, w->sg_list, n, q->cap.max_inline_data,
			    !mapped || q->type == IBV_QPT_UD);
		for (k = 0, total = 0; k < n; k++)
			total += w->sg_list[k].length;
		if (total > q->cap.max_inline_data) {	/* keep it valid */
			n = 1;
			w->sg_list[0].length = q->cap.max_inline_data;
			w->sg_list[0].addr = (uintptr_t)t->scratch;
		}
	} else {
		n = rn(t, q->cap.max_send_sge + 1);
		for (k = 0; k < n; k++) {
			clean_sge(t, &w->sg_list[k], q->pdgen, need_local,
				  max - total);
			total += w->sg_list[k].length;
		}
	}
	w->num_sge = n;
	for (k = 0, total = 0; k < n; k++)
		total += w->sg_list[k].length;
	if (atomic) {
		clean_remote(t, &w->wr.atomic.remote_addr, &w->wr.atomic.rkey,
			     IBV_ACCESS_REMOTE_ATOMIC, 8, 1);
		w->wr.atomic.compare_add = rn(t, 4);
		w->wr.atomic.swap = rnd(t);
	} else if (awrite) {
		clean_remote(t, &w->wr.rdma.remote_addr, &w->wr.rdma.rkey,
			     IBV_ACCESS_REMOTE_WRITE, 8, 1);
	} else if (op == IBV_WR_RDMA_READ) {
		clean_remote(t, &w->wr.rdma.remote_addr, &w->wr.rdma.rkey,
			     IBV_ACCESS_REMOTE_READ, total, 0);
	} else if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		clean_remote(t, &w->wr.rdma.remote_addr, &w->wr.rdma.rkey,
			     IBV_ACCESS_REMOTE_WRITE, total, 0);
	}
}

static int rand_send_flags(struct thr *t)
{
	int f = 0;

	if (chance(t, 60))
		f |= IBV_SEND_SIGNALED;
	if (chance(t, 20))
		f |= IBV_SEND_INLINE;
	if (chance(t, 10))
		f |= IBV_SEND_FENCE;
	if (chance(t, 10))
		f |= IBV_SEND_SOLICITED;
	if (chance(t, 3))
		f |= IBV_SEND_IP_CSUM;
	if (chance(t, 3))
		f |= 1 << rn(t, 32);
	return f;
}

static int rand_nsge(struct thr *t, uint32_t max, int chain)
{
	static const int big[] = { 33, 100, 256, 1000 };
	int n;

	if (chance(t, 95))
		return rn(t, max + 3);
	n = big[rn(t, 4)];
	return chain > 1 && n > MAX_SGES / MAX_CHAIN ? MAX_SGES / MAX_CHAIN : n;
}

/* Where in the chain @bad is: the WRs before it were posted. */
static int accepted(struct thr *t, void *first, void *bad, size_t size,
		    int n, int err, const char *what)
{
	int k;

	if (!err)
		return n;
	for (k = 0; k < n; k++)
		if ((uint8_t *)first + k * size == bad)
			return k;
	violation(t, "%s failed (%s) with bad_wr %p outside the list of %d",
		  what, strerror(err), bad, n);
	return 0;
}

static void note_mr_users(struct thr *t, int slot, struct ibv_sge *s, int n)
{
	int k, m;

	for (k = 0; k < n; k++)
		for (m = 0; m < NMR; m++)
			if (t->mr[m].mr && t->mr[m].mr->lkey == s[k].lkey)
				t->mr[m].qpmask |= 1u << slot;
}

static struct ibv_ah *any_ah(struct thr *t)
{
	int k = USED(t, t->ah, ah);

	if (k < 0) {
		op_create_ah(t);
		k = USED(t, t->ah, ah);
	}
	return k < 0 ? NULL : t->ah[k].ah;
}

static void op_post_send(struct thr *t)
{
	struct ibv_send_wr wr[MAX_CHAIN], *bad = NULL;
	int clean = chance(t, 40), n, k, used = 0, err, acc;
	int i = clean ? pick_qp(t, IBV_QPS_RTS) : USED(t, t->qp, qp);
	struct fqp *q;

	if (i < 0)
		return;
	q = &t->qp[i];
	n = chance(t, 85) ? 1 : 2 + rn(t, MAX_CHAIN - 1);
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < n; k++) {
		struct ibv_send_wr *w = &wr[k];
		int nsge = rand_nsge(t, q->cap.max_send_sge, n), s;

		if (used + nsge > MAX_SGES)
			nsge = MAX_SGES - used;
		w->next = k + 1 < n ? &wr[k + 1] : NULL;
		w->wr_id = wrid(K_SEND, t->id, q->uid, q->epoch, t->serial++);
		w->opcode = rand_opcode(t, q->type);
		w->send_flags = rand_send_flags(t);
		w->sg_list = &t->sges[used];
		w->num_sge = nsge;
		if (clean && q->cap.max_send_sge <= MAX_SGES / MAX_CHAIN) {
			clean_send(t, q, w);
			nsge = w->num_sge;
		} else if (w->send_flags & IBV_SEND_INLINE &&
			   (chance(t, 90) || (mapped && q->type != IBV_QPT_UD)))
			rand_inline(t, w->sg_list, nsge,
				    q->cap.max_inline_data,
				    !mapped || q->type == IBV_QPT_UD);
		else if (w->opcode == IBV_WR_ATOMIC_WRITE)
			/* read when posted, as inline data: valid pointers */
			rand_inline(t, w->sg_list, nsge, 8,
				    !mapped || q->type != IBV_QPT_RC);
		else
			for (s = 0; s < nsge; s++)
				rand_sge(t, &w->sg_list[s]);
		used += nsge;
		w->imm_data = htonl(any32(t));
		if (q->type == IBV_QPT_UD) {
			/* libibverbs reads the AH: it must be a live one. */
			int p = clean ? pick_qp(t, IBV_QPS_RTS) : USED(t, t->qp, qp);

			w->wr.ud.ah = any_ah(t);
			if (!w->wr.ud.ah)
				return;
			w->wr.ud.remote_qpn = p >= 0 && chance(t, 70) ?
				t->qp[p].qp->qp_num : rand_qpn(t);
			w->wr.ud.remote_qkey = p >= 0 && chance(t, 70) ?
				t->qp[p].qkey : any32(t);
		} else if (clean) {
			/* clean_send() chose the remote range */
		} else if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			rand_remote(t, &w->wr.atomic.remote_addr,
				    &w->wr.atomic.rkey, 1);
			w->wr.atomic.compare_add = rnd(t);
			w->wr.atomic.swap = rnd(t);
		} else {
			rand_remote(t, &w->wr.rdma.remote_addr,
				    &w->wr.rdma.rkey, 0);
			if (w->opcode == IBV_WR_SEND_WITH_INV ||
			    chance(t, 10))
				w->invalidate_rkey = w->wr.rdma.rkey;
		}
	}
	t->st.wr[K_SEND] += n;
	err = CALL(t, "ibv_post_send", ibv_post_send(q->qp, wr, &bad));
	record(t, OP_POST_SEND, err);
	acc = accepted(t, wr, bad, sizeof(wr[0]), n, err, "ibv_post_send");
	t->st.wr_ok[K_SEND] += acc;
	q->sposted += acc;
	for (k = 0; k < acc; k++)
		note_mr_users(t, i, wr[k].sg_list, wr[k].num_sge);
}

/*
 * Memory windows: allocated of any type, deallocated bound or not, and
 * bound by ibv_bind_mw() or a posted IBV_WR_BIND_MW with random MRs,
 * ranges and rights (most binds are refused: a wrong type, PD, QP state,
 * an MR without IBV_ACCESS_MW_BIND, a range outside it).  An MR with a
 * window bound to it refuses deregistration (EBUSY), so the memory a
 * window reaches stays the fuzzer's.
 */
static void op_alloc_mw(struct thr *t)
{
	static const int bad[] = { 0, 3, 255, -1 };
	int i = FREE(t, t->mw, mw), p = USED(t, t->pd, pd), type;
	struct ibv_mw *mw;

	if (i < 0 || p < 0)
		return;
	type = chance(t, 90) ? 1 + (int)rn(t, 2) : bad[rn(t, 4)];
	errno = 0;
	mw = CALL(t, "ibv_alloc_mw",
		  ibv_alloc_mw(t->pd[p].pd, (enum ibv_mw_type)type));
	record(t, OP_ALLOC_MW, mw ? 0 : errno_or(ERRMAX));
	if (mw && type != 1 && type != 2)
		violation(t, "ibv_alloc_mw of type %d succeeded", type);
	if (mw)
		t->mw[i] = (struct fmw){ .mw = mw, .pdgen = t->pd[p].gen };
}

static void op_dealloc_mw(struct thr *t)
{
	int i = USED(t, t->mw, mw), err;

	if (i < 0)
		return;
	err = CALL(t, "ibv_dealloc_mw", ibv_dealloc_mw(t->mw[i].mw));
	record(t, OP_DEALLOC_MW, err);
	if (err)
		violation(t, "ibv_dealloc_mw: %s", strerror(err));
	else
		t->mw[i].mw = NULL;
}

/* A binding: mostly of an MR of @pdgen that allows binds, in its range. */
static void rand_bind_info(struct thr *t, struct ibv_mw_bind_info *bi,
			   uint32_t pdgen)
{
	static const unsigned int extra[] = {
		IBV_ACCESS_ZERO_BASED, IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_MW_BIND, 1u << 30,
	};
	int m = pick_mr(t, chance(t, 70) ? pdgen : 0,
			chance(t, 80) ? IBV_ACCESS_MW_BIND : 0);
	struct fmr *f = m >= 0 ? &t->mr[m] : NULL;

	memset(bi, 0, sizeof(*bi));
	if (f && chance(t, 90)) {
		bi->mr = f->mr;
		bi->addr = f->addr + (f->len ? rnd(t) % f->len : 0);
		bi->length = f->addr + f->len - bi->addr;
		bi->length = bi->length ? 1 + rnd(t) % bi->length : 0;
		if (chance(t, 10))
			bi->length = rnd(t);
		if (chance(t, 10))
			bi->addr = rnd(t);
	}
	bi->mw_access_flags = rn(t, 8) & (IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ |
					  IBV_ACCESS_REMOTE_ATOMIC);
	if (!bi->mw_access_flags)
		bi->mw_access_flags = IBV_ACCESS_REMOTE_READ;
	if (chance(t, 5))
		bi->mw_access_flags |= extra[rn(t, 4)];
}

static void op_bind_mw(struct thr *t)
{
	int i = chance(t, 70) ? pick_qp(t, IBV_QPS_RTS) : USED(t, t->qp, qp);
	int w = USED(t, t->mw, mw), k, c = 0, err;
	struct ibv_send_wr wr = {}, *bad = NULL;
	struct fqp *q;

	if (i < 0 || w < 0)
		return;
	q = &t->qp[i];
	/* Mostly a window of the QP's PD (any type). */
	for (k = 0; k < NMW && chance(t, 70); k++)
		if (t->mw[k].mw && t->mw[k].pdgen == q->pdgen &&
		    rn(t, ++c) == 0)
			w = k;
	wr.wr_id = wrid(K_SEND, t->id, q->uid, q->epoch, t->serial++);
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = rand_send_flags(t) & ~IBV_SEND_INLINE;
	wr.bind_mw.mw = t->mw[w].mw;
	wr.bind_mw.rkey = chance(t, 90) ? ibv_inc_rkey(t->mw[w].mw->rkey) :
					  any32(t);
	rand_bind_info(t, &wr.bind_mw.bind_info, q->pdgen);
	t->st.wr[K_SEND]++;
	if (chance(t, 50)) {
		struct ibv_mw_bind mb = {
			.wr_id = wr.wr_id, .send_flags = wr.send_flags,
			.bind_info = wr.bind_mw.bind_info,
		};

		err = CALL(t, "ibv_bind_mw",
			   ibv_bind_mw(q->qp, t->mw[w].mw, &mb));
	} else {
		err = CALL(t, "ibv_post_send",
			   ibv_post_send(q->qp, &wr, &bad));
	}
	record(t, OP_BIND_MW, err);
	if (!err) {
		t->st.wr_ok[K_SEND]++;
		q->sposted++;
	}
}

/* Receive WRs for a QP (@srq < 0) or an SRQ. */
static void op_post_recv(struct thr *t, int to_srq)
{
	struct ibv_recv_wr wr[MAX_CHAIN], *bad = NULL;
	int i, n, k, s, used = 0, err, acc, clean = chance(t, 40);
	uint32_t max, pdgen;
	uint16_t uid;
	uint8_t epoch = 0;

	if (to_srq) {
		i = USED(t, t->srq, srq);
		if (i < 0)
			return;
		uid = t->srq[i].uid;
		pdgen = t->srq[i].pdgen;
		max = 4;
	} else {
		i = clean ? pick_qp(t, IBV_QPS_RTS) : USED(t, t->qp, qp);
		if (i < 0)
			return;
		uid = t->qp[i].uid;
		pdgen = t->qp[i].pdgen;
		epoch = t->qp[i].epoch;
		max = t->qp[i].cap.max_recv_sge;
	}
	n = chance(t, 85) ? 1 : 2 + rn(t, MAX_CHAIN - 1);
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < n; k++) {
		int nsge = clean ? (int)rn(t, max + 1) : rand_nsge(t, max, n);

		if (used + nsge > MAX_SGES)
			nsge = MAX_SGES - used;
		wr[k].next = k + 1 < n ? &wr[k + 1] : NULL;
		wr[k].wr_id = wrid(to_srq ? K_SRQ : K_RECV, t->id, uid, epoch,
				   t->serial++);
		wr[k].sg_list = &t->sges[used];
		wr[k].num_sge = nsge;
		for (s = 0; s < nsge; s++) {
			if (clean)
				clean_sge(t, &wr[k].sg_list[s], pdgen,
					  IBV_ACCESS_LOCAL_WRITE, 4096);
			else
				rand_sge(t, &wr[k].sg_list[s]);
		}
		used += nsge;
	}
	t->st.wr[to_srq ? K_SRQ : K_RECV] += n;
	if (to_srq) {
		err = CALL(t, "ibv_post_srq_recv",
			   ibv_post_srq_recv(t->srq[i].srq, wr, &bad));
		record(t, OP_POST_SRQ_RECV, err);
		acc = accepted(t, wr, bad, sizeof(wr[0]), n, err,
			       "ibv_post_srq_recv");
		t->srq[i].posted += acc;
	} else {
		err = CALL(t, "ibv_post_recv",
			   ibv_post_recv(t->qp[i].qp, wr, &bad));
		record(t, OP_POST_RECV, err);
		acc = accepted(t, wr, bad, sizeof(wr[0]), n, err,
			       "ibv_post_recv");
		t->qp[i].rposted += acc;
		for (k = 0; k < acc; k++)
			note_mr_users(t, i, wr[k].sg_list, wr[k].num_sge);
	}
	t->st.wr_ok[to_srq ? K_SRQ : K_RECV] += acc;
}

static void op_poll_cq(struct thr *t)
{
	int i = USED(t, t->cq, cq), n;

	if (i < 0)
		return;
	n = poll_one_cq(t, i, chance(t, 10) ? 0 : 1 + rn(t, 64));
	record(t, OP_POLL_CQ, n < 0 ? EIO : 0);
	if (chance(t, 20))
		drain_channel(t);
}

static void op_notify_cq(struct thr *t)
{
	int i = USED(t, t->cq, cq), err;

	if (i < 0)
		return;
	err = CALL(t, "ibv_req_notify_cq",
		   ibv_req_notify_cq(t->cq[i].cq, rn(t, 2)));
	record(t, OP_NOTIFY_CQ, err);
	drain_channel(t);
}

static void op_query(struct thr *t)
{
	struct ibv_device_attr_ex dx;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid g;
	uint16_t pkey;
	int err = 0;

	switch (rn(t, 5)) {
	case 0:
		err = CALL(t, "ibv_query_device", ibv_query_device(ctx, &da));
		break;
	case 1:
		err = CALL(t, "ibv_query_device_ex",
			   ibv_query_device_ex(ctx, NULL, &dx));
		break;
	case 2:
		err = CALL(t, "ibv_query_port",
			   ibv_query_port(ctx, chance(t, 80) ? 1 :
					  any32(t) & 0xff, &pa));
		break;
	case 3:
		err = CALL(t, "ibv_query_gid",
			   ibv_query_gid(ctx, chance(t, 90) ? 1 : rn(t, 3),
					 chance(t, 50) ? rn(t, 16) :
					 (int)(any32(t) & 0x7fff), &g));
		break;
	default:
		err = CALL(t, "ibv_query_pkey",
			   ibv_query_pkey(ctx, chance(t, 90) ? 1 : rn(t, 3),
					  chance(t, 50) ? 0 :
					  (int)(any32(t) & 0x7fff), &pkey));
		break;
	}
	record(t, OP_QUERY, err < 0 ? errno_or(ERRMAX) : err);
}

/* Is @q known to be attached to (@g, @lid)? */
static int mcast_known(const struct fqp *q, const union ibv_gid *g,
		       uint16_t lid)
{
	int k;

	for (k = 0; k < q->nmg; k++)
		if (!memcmp(&q->mg[k], g, sizeof(*g)) && q->mlid[k] == lid)
			return 1;
	return 0;
}

/* Drop (@g, @lid) from the groups @q is known to be attached to. */
static void mcast_forget(struct fqp *q, const union ibv_gid *g, uint16_t lid)
{
	int k;

	for (k = 0; k < q->nmg; k++) {
		if (!memcmp(&q->mg[k], g, sizeof(*g)) && q->mlid[k] == lid) {
			q->nmg--;
			q->mg[k] = q->mg[q->nmg];
			q->mlid[k] = q->mlid[q->nmg];
			return;
		}
	}
}

static void op_mcast(struct thr *t)
{
	int i = USED(t, t->qp, qp), err, k;
	union ibv_gid g;
	uint16_t lid;

	if (i < 0)
		return;
	memset(&g, 0, sizeof(g));
	if (chance(t, 70)) {
		g.raw[0] = 0xff;
		g.raw[1] = 0x0e;
		g.raw[15] = rn(t, 4);
	} else {
		rand_dgid(t, &g);
	}
	lid = any32(t);
	if (chance(t, 60)) {
		err = CALL(t, "ibv_attach_mcast",
			   ibv_attach_mcast(t->qp[i].qp, &g, lid));
		record(t, OP_MCAST, err);
		/* Remembered, so that teardown can detach (ib_core keeps an
		 * attached QP from being destroyed: EBUSY).  uverbs matches a
		 * detach on the GID and the LID, and attaching a pair it
		 * already has succeeds without a second entry: remembered
		 * once, never detached here.
		 */
		if (!err && mcast_known(&t->qp[i], &g, lid))
			return;
		if (!err && t->qp[i].nmg < 4) {
			t->qp[i].mlid[t->qp[i].nmg] = lid;
			t->qp[i].mg[t->qp[i].nmg++] = g;
		} else if (!err) {
			CALL(t, "ibv_detach_mcast",
			     ibv_detach_mcast(t->qp[i].qp, &g, lid));
		}
		return;
	}
	if (t->qp[i].nmg && chance(t, 50)) {
		k = rn(t, t->qp[i].nmg);
		g = t->qp[i].mg[k];
		lid = t->qp[i].mlid[k];
	}
	err = CALL(t, "ibv_detach_mcast",
		   ibv_detach_mcast(t->qp[i].qp, &g, lid));
	record(t, OP_MCAST, err);
	if (!err)
		mcast_forget(&t->qp[i], &g, lid);
}

/*
 * fork(): the child posts up to 3 sends and 3 receives to one of our QPs
 * through the inherited context, then _exit()s with how many were taken.
 * It calls nothing but ibv_post_send/ibv_post_recv (no locks, no malloc).
 */
static void op_fork(struct thr *t)
{
	int i = USED(t, t->qp, qp), k, st = -1, sok = 0, rok = 0;
	struct fqp *q;
	double end;
	pid_t pid;

	if (i < 0)
		return;
	q = &t->qp[i];
	if (q->type == IBV_QPT_UD && !any_ah(t))
		return;
	t->st.forks++;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		record(t, OP_FORK, errno);
		return;
	}
	if (pid == 0) {
		for (k = 0; k < 3; k++) {
			struct ibv_sge sge;
			struct ibv_send_wr w = { 0 }, *bad;
			struct ibv_recv_wr r = { 0 }, *rbad;

			rand_sge(t, &sge);
			w.wr_id = wrid(K_SEND, t->id, q->uid, q->epoch,
				       t->serial + k);
			w.sg_list = &sge;
			w.num_sge = 1;
			w.opcode = rand_opcode(t, q->type);
			w.send_flags = IBV_SEND_SIGNALED;
			/* Read when posted, as inline data: a valid pointer. */
			if (w.opcode == IBV_WR_ATOMIC_WRITE)
				sge = (struct ibv_sge){ (uintptr_t)t->scratch,
							8, 0 };
			if (q->type == IBV_QPT_UD) {
				int a = USED(t, t->ah, ah);

				if (a < 0)
					break;
				w.wr.ud.ah = t->ah[a].ah;
				w.wr.ud.remote_qpn = q->qp->qp_num;
				w.wr.ud.remote_qkey = q->qkey;
			} else {
				rand_remote(t, &w.wr.rdma.remote_addr,
					    &w.wr.rdma.rkey, 0);
			}
			sok += !ibv_post_send(q->qp, &w, &bad);
			r.wr_id = wrid(K_RECV, t->id, q->uid, q->epoch,
				       t->serial + 8 + k);
			r.sg_list = &sge;
			r.num_sge = 1;
			rok += !ibv_post_recv(q->qp, &r, &rbad);
		}
		_exit(sok | rok << 2);
	}
	t->serial += 16;
	mark(t->wslot, "waiting for a forked child");
	end = now() + limit + 1;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			st = -1;
			break;
		}
		if (now() > end) {
			/* The supervisor has called it a hang by now. */
			kill(pid, SIGKILL);
			st = -1;
			break;
		}
		msleep(2);
	}
	unmark(t->wslot);
	if (mapped) {
		/* The child wrote rings behind our provider's back. */
		q->untracked = 1;
		t->scribbled[t->nscribbled++ % NSCRIBBLED] = q->qp->qp_num;
		record(t, OP_FORK, 0);
	} else if (st != -1 && WIFEXITED(st)) {
		q->sposted += WEXITSTATUS(st) & 3;
		q->rposted += WEXITSTATUS(st) >> 2 & 3;
		record(t, OP_FORK, 0);
	} else {
		q->untracked = 1;	/* what it posted is unknown */
		t->st.forks_lost++;
		record(t, OP_FORK, ERRMAX);
	}
}

/* ---------------------------------------------------------------------- */
/* A thread's life. */

static int weight_total;	/* of opinfo[], set before the threads start */

static enum op pick_op(struct thr *t)
{
	int r = rn(t, weight_total), k;

	for (k = 0; k < NOPS; k++) {
		r -= opinfo[k].weight;
		if (r < 0)
			return k;
	}
	return OP_POLL_CQ;
}

static void do_op(struct thr *t, enum op op)
{
	switch (op) {
	case OP_ALLOC_PD: op_alloc_pd(t); break;
	case OP_DEALLOC_PD: op_dealloc_pd(t); break;
	case OP_CREATE_CQ: op_create_cq(t); break;
	case OP_RESIZE_CQ: op_resize_cq(t); break;
	case OP_DESTROY_CQ: op_destroy_cq(t); break;
	case OP_REG_MR: op_reg_mr(t); break;
	case OP_DEREG_MR: op_dereg_mr(t); break;
	case OP_CREATE_QP: op_create_qp(t); break;
	case OP_MODIFY_QP: op_modify_qp(t); break;
	case OP_CONNECT: op_connect(t); break;
	case OP_QUERY_QP: op_query_qp(t); break;
	case OP_DESTROY_QP: op_destroy_qp(t); break;
	case OP_CREATE_AH: op_create_ah(t); break;
	case OP_DESTROY_AH: op_destroy_ah(t); break;
	case OP_CREATE_SRQ: op_create_srq(t); break;
	case OP_MODIFY_SRQ: op_modify_srq(t); break;
	case OP_QUERY_SRQ: op_query_srq(t); break;
	case OP_DESTROY_SRQ: op_destroy_srq(t); break;
	case OP_POST_SEND: op_post_send(t); break;
	case OP_POST_RECV: op_post_recv(t, 0); break;
	case OP_POST_SRQ_RECV: op_post_recv(t, 1); break;
	case OP_POLL_CQ: op_poll_cq(t); break;
	case OP_NOTIFY_CQ: op_notify_cq(t); break;
	case OP_QUERY: op_query(t); break;
	case OP_MCAST: op_mcast(t); break;
	case OP_FORK: op_fork(t); break;
	case OP_ALLOC_MW: op_alloc_mw(t); break;
	case OP_DEALLOC_MW: op_dealloc_mw(t); break;
	case OP_BIND_MW: op_bind_mw(t); break;
	case NOPS: break;
	}
}

/* Do the tracked queues of the thread all balance? */
static int balanced(struct thr *t, int report)
{
	int i, good = 1;

	for (i = 0; i < NQP; i++) {
		struct fqp *q = &t->qp[i];
		int over;

		if (!q->qp || q->untracked || q->scq < 0 || q->rcq < 0)
			continue;
		over = atomic_load(&t->cq[q->scq].overflow);
		if (q->sig_all && !over && q->scompl != q->sposted) {
			good = 0;
			if (report)
				violation(t, "QP %u (type %d) in ERR: %ld of %ld sends posted OK completed",
					  q->qp->qp_num, q->type, q->scompl,
					  q->sposted);
		}
		over = atomic_load(&t->cq[q->rcq].overflow);
		if (q->srq < 0 && !over && q->rcompl != q->rposted) {
			good = 0;
			if (report)
				violation(t, "QP %u (type %d) in ERR: %ld of %ld receives posted OK completed",
					  q->qp->qp_num, q->type, q->rcompl,
					  q->rposted);
		}
	}
	return good;
}

static void poll_all(struct thr *t)
{
	int c;

	for (c = 0; c < NCQ; c++)
		if (t->cq[c].cq)
			while (poll_one_cq(t, c, 64) > 0)
				;
	drain_channel(t);
}

static void teardown_fail(struct thr *t, const char *what, int err)
{
	violation(t, "teardown: %s failed: %s", what, strerror(err));
}

/* Flush, check the accounting, destroy everything. */
static void teardown(struct thr *t)
{
	double end;
	int i, err;

	for (i = 0; i < NQP; i++) {
		struct fqp *q = &t->qp[i];

		if (!q->qp)
			continue;
		err = modify_state(t, q, IBV_QPS_ERR);
		if (err) {
			q->untracked = 1;
			if (q->state != IBV_QPS_RESET)
				violation(t, "teardown: QP %u to ERR: %s",
					  q->qp->qp_num, strerror(err));
		}
	}
	end = now() + 5.0 * scale;
	do {
		poll_all(t);
		if (balanced(t, 0))
			break;
		msleep(10);
	} while (now() < end);
	if (!balanced(t, 0)) {
		msleep(500);	/* an overflow event may still be on its way */
		poll_all(t);
	}
	balanced(t, 1);

	for (i = 0; i < NQP; i++) {
		if (!t->qp[i].qp)
			continue;
		while (t->qp[i].nmg) {
			err = CALL(t, "ibv_detach_mcast",
				   ibv_detach_mcast(t->qp[i].qp,
						    &t->qp[i].mg[0],
						    t->qp[i].mlid[0]));
			if (err)
				teardown_fail(t, "ibv_detach_mcast", err);
			mcast_forget(&t->qp[i], &t->qp[i].mg[0],
				     t->qp[i].mlid[0]);
		}
		err = CALL(t, "ibv_destroy_qp", ibv_destroy_qp(t->qp[i].qp));
		if (err)
			teardown_fail(t, "ibv_destroy_qp", err);
		else
			t->qp[i].qp = NULL;
	}
	for (i = 0; i < NSRQ; i++) {
		if (!t->srq[i].srq)
			continue;
		err = CALL(t, "ibv_destroy_srq", ibv_destroy_srq(t->srq[i].srq));
		if (err)
			teardown_fail(t, "ibv_destroy_srq", err);
		else
			t->srq[i].srq = NULL;
	}
	for (i = 0; i < NAH; i++) {
		if (!t->ah[i].ah)
			continue;
		err = CALL(t, "ibv_destroy_ah", ibv_destroy_ah(t->ah[i].ah));
		if (err)
			teardown_fail(t, "ibv_destroy_ah", err);
		else
			t->ah[i].ah = NULL;
	}
	/* Windows first: an MR with one bound refuses to go. */
	for (i = 0; i < NMW; i++) {
		if (!t->mw[i].mw)
			continue;
		err = CALL(t, "ibv_dealloc_mw", ibv_dealloc_mw(t->mw[i].mw));
		if (err)
			teardown_fail(t, "ibv_dealloc_mw", err);
		else
			t->mw[i].mw = NULL;
	}
	for (i = 0; i < NMR; i++) {
		if (!t->mr[i].mr)
			continue;
		err = CALL(t, "ibv_dereg_mr", ibv_dereg_mr(t->mr[i].mr));
		if (err) {
			teardown_fail(t, "ibv_dereg_mr", err);
		} else {
			free(t->mr[i].buf);
			t->mr[i].mr = NULL;
		}
	}
	drain_channel(t);
	for (i = 0; i < NCQ; i++) {
		if (!t->cq[i].cq)
			continue;
		err = CALL(t, "ibv_destroy_cq", ibv_destroy_cq(t->cq[i].cq));
		if (err)
			teardown_fail(t, "ibv_destroy_cq", err);
		else
			t->cq[i].cq = NULL;
	}
	if (t->ch) {
		err = CALL(t, "ibv_destroy_comp_channel",
			   ibv_destroy_comp_channel(t->ch));
		if (err)
			teardown_fail(t, "ibv_destroy_comp_channel", err);
		else
			t->ch = NULL;
	}
	for (i = 0; i < NPD; i++) {
		if (!t->pd[i].pd)
			continue;
		err = CALL(t, "ibv_dealloc_pd", ibv_dealloc_pd(t->pd[i].pd));
		if (err)
			teardown_fail(t, "ibv_dealloc_pd", err);
		else
			t->pd[i].pd = NULL;
	}
}

static void *thread_main(void *arg)
{
	struct thr *t = arg;

	atomic_store(&watch[t->wslot].active, 1);
	t->ch = CALL(t, "ibv_create_comp_channel",
		     ibv_create_comp_channel(ctx));
	if (t->ch)
		fcntl(t->ch->fd, F_SETFL, fcntl(t->ch->fd, F_GETFL) | O_NONBLOCK);
	while (t->ops < nops && (!seconds || now() < t_end)) {
		do_op(t, pick_op(t));
		t->ops++;
		atomic_fetch_add(&watch[t->wslot].nops, 1);
	}
	teardown(t);
	atomic_store(&watch[t->wslot].active, 0);
	return NULL;
}

/* Affiliated and device events: read and acked at once (destroy waits). */
static void *event_main(void *arg)
{
	struct ibv_async_event ev;
	struct pollfd pfd;

	(void)arg;
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	while (!atomic_load(&stop_events)) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		atomic_fetch_add(&events[ev.event_type & 31], 1);
		if (ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq &&
		    ev.element.cq->cq_context)
			atomic_store(&((struct fcq *)
				       ev.element.cq->cq_context)->overflow, 1);
		ibv_ack_async_event(&ev);
	}
	return NULL;
}

/* The first RoCE v2 GID with an IPv4 address. */
static int find_gid(union ibv_gid *g)
{
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < 64; i++) {
		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
		    !memcmp(e.gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) {
			*g = e.gid;
			return i;
		}
	}
	return -1;
}

static const char *errname(int e)
{
	static char buf[16];

	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case ENOSYS: return "ENOSYS";
	case EOVERFLOW: return "EOVERFLOW";
	case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case ENETUNREACH: return "ENETUNREACH";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ERRMAX: return "other";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

static void report(struct stats *s, double secs, long total)
{
	char line[1024];
	int k, e, n;

	say("# seed %llu, %d thread(s), %ld operations in %.1f s",
	    seed, nthreads, total, secs);
	say("# %-20s %8s %8s  errors", "operation", "calls", "ok");
	for (k = 0; k < NOPS; k++) {
		n = 0;
		line[0] = 0;
		for (e = 1; e <= ERRMAX; e++)
			if (s->err[k][e] && n < (int)sizeof(line) - 40)
				n += snprintf(line + n, sizeof(line) - n,
					      " %s %ld", errname(e),
					      s->err[k][e]);
		say("# %-20s %8ld %8ld %s", opinfo[k].name, s->calls[k],
		    s->ok[k], line);
	}
	say("# WRs posted (accepted): send %ld (%ld), recv %ld (%ld), srq recv %ld (%ld)",
	    s->wr[K_SEND], s->wr_ok[K_SEND], s->wr[K_RECV], s->wr_ok[K_RECV],
	    s->wr[K_SRQ], s->wr_ok[K_SRQ]);
	n = 0;
	line[0] = 0;
	for (k = 0; k < NSTATUS; k++)
		if (s->wc[k] && n < (int)sizeof(line) - 60)
			n += snprintf(line + n, sizeof(line) - n, " %s %ld",
				      ibv_wc_status_str(k), s->wc[k]);
	say("# completions:%s%s (of destroyed or reset QPs: %ld)",
	    line, n ? "" : " none", s->stale_wc);
	n = 0;
	line[0] = 0;
	for (k = 0; k < 32; k++)
		if (atomic_load(&events[k]) && n < (int)sizeof(line) - 60)
			n += snprintf(line + n, sizeof(line) - n, " %s %ld",
				      ibv_event_type_str(k),
				      atomic_load(&events[k]));
	say("# async events:%s", n ? line : " none");
	say("# forks %ld (children lost or killed: %ld; completions of rings a child wrote: %ld)",
	    s->forks, s->forks_lost, s->ring_garbage);
}

/* The fuzzing process; its exit status: 0, or 1 if an invariant broke. */
static int fuzz(void)
{
	int wmain = MAX_THREADS, i, k, e, err;
	struct ibv_device **list;
	struct stats *sum;
	pthread_t evt;
	double t0;
	long total = 0;

	for (k = 0; k < NOPS; k++)
		weight_total += opinfo[k].weight;
	mark(wmain, "ibv_open_device");
	list = ibv_get_device_list(&k);
	for (i = 0; list && i < k && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	unmark(wmain);
	if (!ctx) {
		say("# cannot open %s: %s", dev_name, strerror(errno));
		return 3;
	}
	sgid = find_gid(&gid);
	if (sgid < 0 || ibv_query_device(ctx, &dattr)) {
		say("# %s: no RoCE v2 IPv4 GID, or query_device failed",
		    dev_name);
		return 3;
	}
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	if (pthread_create(&evt, NULL, event_main, NULL)) {
		say("# cannot start the event thread");
		return 3;
	}
	thr = calloc(nthreads, sizeof(*thr));
	if (!thr)
		return 3;
	t0 = now();
	t_end = t0 + seconds;
	for (i = 0; i < nthreads; i++) {
		struct thr *t = &thr[i];
		uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;

		/* splitmix64: well-spread, never zero thread seeds */
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		t->rng = (z ^ (z >> 31)) | 1;
		t->id = i;
		t->wslot = i;
		t->scratch = calloc(1, SCRATCH);
		t->sges = calloc(MAX_SGES, sizeof(*t->sges));
		if (!t->scratch || !t->sges)
			return 3;
		memset(t->scratch, 0xa5, SCRATCH);
	}
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&thr[i].thread, NULL, thread_main, &thr[i])) {
			say("# cannot start thread %d", i);
			return 3;
		}
	for (i = 0; i < nthreads; i++)
		pthread_join(thr[i].thread, NULL);
	atomic_store(&stop_events, 1);
	pthread_join(evt, NULL);

	sum = calloc(1, sizeof(*sum));
	if (!sum)
		return 3;
	for (i = 0; i < nthreads; i++) {
		struct stats *s = &thr[i].st;

		total += thr[i].ops;
		for (k = 0; k < NOPS; k++) {
			sum->calls[k] += s->calls[k];
			sum->ok[k] += s->ok[k];
			for (e = 0; e <= ERRMAX; e++)
				sum->err[k][e] += s->err[k][e];
		}
		for (k = 0; k < 3; k++) {
			sum->wr[k] += s->wr[k];
			sum->wr_ok[k] += s->wr_ok[k];
		}
		for (k = 0; k < NSTATUS; k++)
			sum->wc[k] += s->wc[k];
		sum->stale_wc += s->stale_wc;
		sum->forks += s->forks;
		sum->forks_lost += s->forks_lost;
		sum->ring_garbage += s->ring_garbage;
	}
	report(sum, now() - t0, total);
	mark(wmain, "ibv_close_device");
	err = ibv_close_device(ctx);
	unmark(wmain);
	if (err)
		say("# ibv_close_device: %d", err);
	say("RESULT ops=%ld violations=%d", total, atomic_load(&violations));
	return atomic_load(&violations) ? 1 : 0;
}

/* ---------------------------------------------------------------------- */
/* The supervisor: watches the fuzzing process, never waits on it blindly. */

/* The state and kernel stack of each thread of @pid. */
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
		printf("# task %s: state %c\n", e->d_name, state);
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

static int reap(pid_t pid, int *st, double secs)
{
	double end = now() + secs;

	for (;;) {
		pid_t r = waitpid(pid, st, WNOHANG);

		if (r == pid)
			return 1;
		if (r < 0 && errno != EINTR)
			return 1;
		if (now() > end)
			return 0;
		msleep(20);
	}
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-d DEV] [-s SEED] [-n OPS] [-t THREADS] [-T SECONDS] [-w SECONDS] [-x]\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	long ops_total = 0, last_nops[MAX_THREADS + 1] = { 0 };
	double last_prog[MAX_THREADS + 1], t_last = 0;
	int opt, fds[2], st = 0, exited = 0, viol = -1, hang = 0, eof = 0, i;
	const char *s = getenv("SROCE_TIMEOUT_SCALE");
	char buf[8192], hangmsg[256] = "";
	size_t len = 0;
	pid_t pid;

	seed = (unsigned long long)time(NULL) ^
	       ((unsigned long long)getpid() << 32);
	while ((opt = getopt(argc, argv, "d:s:n:t:T:w:xh")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'n': nops = atol(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'T': seconds = atoi(optarg); break;
		case 'w': limit = atof(optarg); break;
		case 'x': avoid_hang = 1; break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc || nthreads < 1 || nthreads > MAX_THREADS ||
	    nops < 0 || seconds < 0 || limit <= 0)
		usage(argv[0]);
	if (s && atoi(s) > 1)
		scale = atoi(s);
	limit *= scale;
	s = getenv("SROCE_MAPPED");
	mapped = !s || (strcmp(s, "0") && strcmp(s, "cq"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	printf("# sroce_fuzz_verbs: seed %llu (replay: -d %s -s %llu -n %ld -t %d -w %g%s)\n",
	       seed, dev_name, seed, nops, nthreads, limit / scale,
	       avoid_hang ? " -x" : "");
	if (seconds)
		printf("# stopping after %d s at the latest\n", seconds);

	watch = mmap(NULL, sizeof(*watch) * (MAX_THREADS + 1),
		     PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (watch == MAP_FAILED || pipe(fds)) {
		perror("mmap/pipe");
		return 2;
	}
	memset(watch, 0, sizeof(*watch) * (MAX_THREADS + 1));
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 2;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[1]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		exit(fuzz());
	}
	close(fds[1]);
	for (i = 0; i <= MAX_THREADS; i++)
		last_prog[i] = now();

	/* Relay its output; watch its calls; until it exits. */
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		double t = now();
		ssize_t n;
		char *nl;

		if (eof)
			msleep(50);
		else if (!exited && poll(&pfd, 1, 200) > 0) {
			n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
			if (n == 0)
				eof = 1;
			if (n > 0) {
				len += n;
				buf[len] = 0;
				while ((nl = strchr(buf, '\n'))) {
					*nl = 0;
					if (sscanf(buf, "RESULT ops=%ld violations=%d",
						   &ops_total, &viol) != 2)
						printf("%s%s\n", buf[0] == '#' ?
						       "" : "# ", buf);
					len -= nl + 1 - buf;
					memmove(buf, nl + 1, len + 1);
				}
				if (len == sizeof(buf) - 1) {
					printf("# %s\n", buf);
					len = 0;
				}
			}
		}
		if (!exited && waitpid(pid, &st, WNOHANG) == pid)
			exited = 1;
		if (exited) {
			/* Drain what is left (a stuck grandchild may hold the pipe). */
			double end = now() + 1;

			while (!eof && now() < end) {
				pfd.revents = 0;
				if (poll(&pfd, 1, 50) <= 0)
					break;
				n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
				if (n <= 0)
					break;
				len += n;
				buf[len] = 0;
				while ((nl = strchr(buf, '\n'))) {
					*nl = 0;
					if (sscanf(buf, "RESULT ops=%ld violations=%d",
						   &ops_total, &viol) != 2)
						printf("%s%s\n", buf[0] == '#' ?
						       "" : "# ", buf);
					len -= nl + 1 - buf;
					memmove(buf, nl + 1, len + 1);
				}
			}
			break;
		}
		if (t - t_last < 0.2)
			continue;
		t_last = t;
		for (i = 0; i <= MAX_THREADS && !hang; i++) {
			struct watch *w = &watch[i];
			long n2 = atomic_load(&w->nops);

			if (n2 != last_nops[i]) {
				last_nops[i] = n2;
				last_prog[i] = t;
			}
			if (atomic_load(&w->busy) &&
			    t - atomic_load(&w->since) / 1e9 > limit) {
				snprintf(hangmsg, sizeof(hangmsg),
					 "%s %d has been in %.40s for %.1f s",
					 i == MAX_THREADS ? "the main thread" :
					 "thread", i == MAX_THREADS ? 0 : i,
					 w->op,
					 t - atomic_load(&w->since) / 1e9);
				hang = 1;
			} else if (atomic_load(&w->active) &&
				   !atomic_load(&w->busy) &&
				   t - last_prog[i] > 3 * limit) {
				snprintf(hangmsg, sizeof(hangmsg),
					 "thread %d made no progress for %.1f s (last call %.40s)",
					 i, t - last_prog[i], w->op);
				hang = 1;
			}
		}
		if (hang)
			break;
	}
	close(fds[0]);

	if (hang) {
		printf("not ok 1 - hang: %s (seed %llu)\n", hangmsg, seed);
		printf("# the fuzzing process (pid %d):\n", (int)pid);
		diagnose(pid);
		kill(pid, SIGKILL);
		if (!reap(pid, &st, 5.0))
			printf("# it cannot be killed: a thread sleeps uninterruptibly in the kernel\n");
		printf("not ok 2 - invariants not all checked: the run did not finish\n");
		printf("1..2\n");
		return 1;
	}
	if (WIFSIGNALED(st)) {
		printf("not ok 1 - the fuzzing process died of signal %d (%s), seed %llu\n",
		       WTERMSIG(st), strsignal(WTERMSIG(st)), seed);
		printf("not ok 2 - invariants not all checked: the run did not finish\n");
		printf("1..2\n");
		return 1;
	}
	if (WEXITSTATUS(st) > 1 || viol < 0) {
		printf("not ok 1 - the fuzzing process failed (exit %d), seed %llu\n",
		       WEXITSTATUS(st), seed);
		printf("not ok 2 - invariants not all checked: the run did not finish\n");
		printf("1..2\n");
		return 1;
	}
	printf("ok 1 - %ld operations, seed %llu, no hang\n", ops_total, seed);
	printf("%sok 2 - no invariant broken (%d violations)\n",
	       viol ? "not " : "", viol);
	printf("1..2\n");
	return viol ? 1 : 0;
}

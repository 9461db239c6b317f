// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_integrity - move patterned data over an RC QP with every opcode and
 * check every byte: SEND (into scattered, unaligned receive buffers), RDMA
 * WRITE, WRITE with immediate, RDMA READ, and the two atomics; message
 * sizes that are not multiples of the MTU, multi-SGE and unaligned offsets
 * on both sides.  Works with any libibverbs device (sroce, rdma_rxe).
 *
 * The client drives, the server answers over a TCP control connection:
 *   server: sroce_integrity -d DEV -g GID [-p PORT]
 *   client: sroce_integrity -d DEV -g GID [-p PORT] [-n ROUNDS] SERVER
 * Prints TAP (client side) and exits non-zero on any mismatch, error
 * completion or timeout (60 s per completion: a hang is a failure).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <sys/socket.h>

#include "tap.h"

#define REGION		(4u << 20)	/* each of src, dst, target */
#define MAX_MSG		((1u << 20) + 3)
#define TIMEOUT_S	60

static const uint32_t sizes[] = {
	1, 7, 64, 1000, 1024, 1025, 4095, 4097, 12289, 65537, MAX_MSG,
};

struct peer {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf;		/* src | dst | target */
static struct peer me, them;
static int ctl;			/* the TCP control connection */

#define SRC	(buf)
#define DST	(buf + REGION)
#define TGT	(buf + 2 * REGION)

static void die(const char *what)
{
	fprintf(stderr, "sroce_integrity: %s: %s\n", what, strerror(errno));
	exit(2);
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

/* Index of the first wrong byte, or -1. */
static long verify(const uint8_t *p, uint32_t seed, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pat(seed, i))
			return i;
	return -1;
}

/* Control channel: one text line per message. */
static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(ctl, line, n) != n)
		die("control write");
}

static void hear(char *line, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		if (read(ctl, line + n, 1) != 1)
			die("control read");
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
}

static int wait_wc(struct ibv_wc *wc)
{
	time_t end = time(NULL) + TIMEOUT_S;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0) {
		if (time(NULL) > end) {
			fprintf(stderr, "no completion in %d s\n", TIMEOUT_S);
			return -1;
		}
	}
	if (n < 0)
		return -1;
	if (wc->status != IBV_WC_SUCCESS)
		fprintf(stderr, "completion error: %s (wr_id %lu)\n",
			ibv_wc_status_str(wc->status), (unsigned long)wc->wr_id);
	return wc->status == IBV_WC_SUCCESS ? 0 : -1;
}

/* Split [addr, addr+len) into up to 3 SGEs of uneven size. */
static int split(struct ibv_sge *sge, uint8_t *addr, uint32_t len)
{
	uint32_t a = len / 3, b = len / 2;
	int n = 0;

	if (len < 3) {
		sge[0] = (struct ibv_sge){ (uintptr_t)addr, len, mr->lkey };
		return 1;
	}
	sge[n++] = (struct ibv_sge){ (uintptr_t)addr, a, mr->lkey };
	sge[n++] = (struct ibv_sge){ (uintptr_t)addr + a, b - a, mr->lkey };
	sge[n++] = (struct ibv_sge){ (uintptr_t)addr + b, len - b, mr->lkey };
	return n;
}

static int post_send(enum ibv_wr_opcode op, uint8_t *local, uint32_t len,
		     uint64_t raddr, uint64_t cmp_add, uint64_t swap,
		     uint32_t imm)
{
	struct ibv_sge sge[3];
	struct ibv_send_wr wr = {
		.wr_id = op,
		.sg_list = sge,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),
	}, *bad;
	struct ibv_wc wc;

	wr.num_sge = split(sge, local, len);
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		/* One 8-byte buffer for the original value (IBA 9.4.5). */
		sge[0] = (struct ibv_sge){ (uintptr_t)local, 8, mr->lkey };
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = them.rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = them.rkey;
	}
	if (ibv_post_send(qp, &wr, &bad) || wait_wc(&wc))
		return -1;
	/* A send that carried an immediate says so (as rxe and mlx5). */
	if (!(wc.wc_flags & IBV_WC_WITH_IMM) !=
	    !(op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_SEND_WITH_IMM)) {
		fprintf(stderr, "send completion of opcode %d: wc_flags %#x\n",
			op, wc.wc_flags);
		return -1;
	}
	return 0;
}

static int post_recv(uint8_t *local, uint32_t len)
{
	struct ibv_sge sge[3];
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = sge }, *bad;

	wr.num_sge = len ? split(sge, local, len) : 0;
	return ibv_post_recv(qp, &wr, &bad);
}

static void setup(const char *dev, int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 3, .max_recv_sge = 3 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list[i]) {
		errno = ENODEV;
		die(dev);
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, 3 * REGION);
	if (!pd || !cq || !buf)
		die("pd/cq/buffer");
	memset(buf, 0, 3 * REGION);
	mr = ibv_reg_mr(pd, buf, 3 * REGION, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	if (!mr)
		die("ibv_reg_mr");
	qia.send_cq = cq;
	qia.recv_cq = cq;
	qp = ibv_create_qp(pd, &qia);
	if (!qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	if (ibv_query_gid(ctx, 1, gid_index, &me.gid))
		die("ibv_query_gid");
	srand(getpid() ^ time(NULL));
	me.qpn = qp->qp_num;
	me.psn = rand() & 0xffffff;
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)TGT;
	ibv_free_device_list(list);
}

static void connect_qp(int gid_index, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = mtu,
		.dest_qp_num = them.qpn,
		.rq_psn = them.psn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = them.gid, .sgid_index = gid_index,
				 .hop_limit = 64 },
		},
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = me.psn;
	a.max_rd_atomic = 4;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

static void exchange(void)
{
	char line[256], gid[64];

	inet_ntop(AF_INET6, me.gid.raw, gid, sizeof(gid));
	say("%u %u %u %llu %s", me.qpn, me.psn, me.rkey,
	    (unsigned long long)me.addr, gid);
	hear(line, sizeof(line));
	if (sscanf(line, "%u %u %u %llu %63s", &them.qpn, &them.psn,
		   &them.rkey, (unsigned long long *)&them.addr, gid) != 5 ||
	    inet_pton(AF_INET6, gid, them.gid.raw) != 1) {
		errno = EPROTO;
		die("exchange");
	}
}

/* Server: answer the client's requests until it says BYE. */
static int serve(void)
{
	char line[256];
	unsigned int seed, off, len, imm;
	unsigned long long v;
	struct ibv_wc wc;

	for (;;) {
		hear(line, sizeof(line));
		if (sscanf(line, "CHECK %u %u %u", &seed, &off, &len) == 3) {
			long bad = verify(TGT + off, seed, len);

			say(bad < 0 ? "OK" : "BAD at %ld", bad);
		} else if (sscanf(line, "RECV %u %u", &off, &len) == 2) {
			memset(DST, 0, off + len + 64);
			say(post_recv(DST + off, len) ? "ERR" : "READY");
		} else if (sscanf(line, "GOT %u %u %u %u", &seed, &off, &len,
				  &imm) == 4) {
			int bad = wait_wc(&wc) || wc.byte_len != len;

			if (imm != ~0u)
				bad |= !(wc.wc_flags & IBV_WC_WITH_IMM) ||
				       ntohl(wc.imm_data) != imm;
			if (!bad && imm == ~0u)
				bad = verify(DST + off, seed, len) >= 0 ||
				      DST[off + len] != 0;
			if (!bad && imm != ~0u)
				bad = verify(TGT + off, seed, len) >= 0;
			say(bad ? "BAD len %u flags %#x" : "OK", wc.byte_len,
			    wc.wc_flags);
		} else if (sscanf(line, "WORD %u", &off) == 1) {
			memcpy(&v, TGT + off, 8);
			say("%llu", v);
		} else if (!strcmp(line, "BYE")) {
			return 0;
		} else {
			say("ERR");
		}
	}
}

static int ask_ok(const char *fmt, ...)
{
	char cmd[128], line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	say("%s", cmd);
	hear(line, sizeof(line));
	if (strcmp(line, "OK") && strcmp(line, "READY"))
		fprintf(stderr, "server: %s (to %s)\n", line, cmd);
	return !strcmp(line, "OK") || !strcmp(line, "READY");
}

static void round_trip(uint32_t len, unsigned int r)
{
	uint32_t seed = len * 31 + r, soff = 1 + r % 7, roff = 3 + r % 13;
	int good;
	long bad;

	/* RDMA WRITE: scattered source, unaligned remote address. */
	fill(SRC + soff, seed, len);
	good = !post_send(IBV_WR_RDMA_WRITE, SRC + soff, len, them.addr + roff,
			  0, 0, 0) &&
	       ask_ok("CHECK %u %u %u", seed, roff, len);
	tap(good, "RDMA WRITE %u bytes (round %u)", len, r);

	/* RDMA READ it back into a different, unaligned place. */
	memset(DST, 0, len + 64);
	good = !post_send(IBV_WR_RDMA_READ, DST + roff, len, them.addr + roff,
			  0, 0, 0);
	bad = verify(DST + roff, seed, len);
	tap(good && bad < 0 && DST[roff + len] == 0,
	   "RDMA READ %u bytes (round %u)%s", len, r,
	   bad >= 0 ? ": data differs" : "");

	/* SEND into three receive SGEs. */
	seed++;
	fill(SRC + soff, seed, len);
	good = ask_ok("RECV %u %u", roff, len) &&
	       !post_send(IBV_WR_SEND, SRC + soff, len, 0, 0, 0, 0) &&
	       ask_ok("GOT %u %u %u %u", seed, roff, len, ~0u);
	tap(good, "SEND %u bytes (round %u)", len, r);

	/* WRITE with immediate: data and a receive completion. */
	seed++;
	fill(SRC + soff, seed, len);
	good = ask_ok("RECV 0 0") &&
	       !post_send(IBV_WR_RDMA_WRITE_WITH_IMM, SRC + soff, len,
			  them.addr + roff, 0, 0, seed) &&
	       ask_ok("GOT %u %u %u %u", seed, roff, len, seed);
	tap(good, "RDMA WRITE with immediate %u bytes (round %u)", len, r);
}

static void atomics(unsigned int rounds)
{
	uint64_t *res = (uint64_t *)SRC, expect = 0, v;
	char line[64];
	unsigned int i;
	int good = 1;

	/* Start from a known word: write zero. */
	memset(SRC + 64, 0, 8);
	good &= !post_send(IBV_WR_RDMA_WRITE, SRC + 64, 8, them.addr + 64,
			   0, 0, 0);
	for (i = 0; i < rounds * 8; i++) {
		good &= !post_send(IBV_WR_ATOMIC_FETCH_AND_ADD, SRC, 8,
				   them.addr + 64, i + 1, 0, 0);
		good &= *res == expect;
		expect += i + 1;
	}
	say("WORD 64");
	hear(line, sizeof(line));
	v = strtoull(line, NULL, 10);
	tap(good && v == expect, "FETCH_ADD x%u: returned values and result %llu",
	   rounds * 8, (unsigned long long)v);

	good = !post_send(IBV_WR_ATOMIC_CMP_AND_SWP, SRC, 8, them.addr + 64,
			  expect + 1, 42, 0) && *res == expect;	/* no swap */
	good &= !post_send(IBV_WR_ATOMIC_CMP_AND_SWP, SRC, 8, them.addr + 64,
			   expect, 42, 0) && *res == expect;	/* swap */
	say("WORD 64");
	hear(line, sizeof(line));
	tap(good && strtoull(line, NULL, 10) == 42,
	   "CMP_AND_SWP: compare fails, then swaps");
}

int main(int argc, char **argv)
{
	const char *dev = "sroce0", *port = "18600", *server = NULL;
	int gid_index = 1, rounds = 2, opt, mtu = IBV_MTU_1024;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	unsigned int i, r;

	while ((opt = getopt(argc, argv, "d:g:p:n:m:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'p': port = optarg; break;
		case 'n': rounds = atoi(optarg); break;
		case 'm':
			mtu = atoi(optarg) == 4096 ? IBV_MTU_4096 :
			      atoi(optarg) == 2048 ? IBV_MTU_2048 :
			      IBV_MTU_1024;
			break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gid] [-p port] [-n rounds] [-m mtu] [server]\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		server = argv[optind];
	setup(dev, gid_index);

	hints.ai_flags = server ? 0 : AI_PASSIVE;
	if (getaddrinfo(server, port, &hints, &ai))
		die("getaddrinfo");
	ctl = socket(ai->ai_family, SOCK_STREAM, 0);
	if (ctl < 0)
		die("socket");
	if (server) {
		time_t end = time(NULL) + 30;

		/* The server may not listen yet: try for a while. */
		while (connect(ctl, ai->ai_addr, ai->ai_addrlen)) {
			if (time(NULL) > end)
				die("connect");
			usleep(100000);
		}
	} else {
		int one = 1, l = ctl;

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, ai->ai_addr, ai->ai_addrlen) || listen(l, 1))
			die("bind/listen");
		ctl = accept(l, NULL, NULL);
		if (ctl < 0)
			die("accept");
		close(l);
	}
	freeaddrinfo(ai);
	exchange();
	connect_qp(gid_index, mtu);
	if (!server)
		return serve();

	for (r = 0; r < (unsigned int)rounds; r++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			round_trip(sizes[i], r);
	atomics(rounds);
	say("BYE");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return tap_end();
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_wire_target - the victim of a fictitious remote peer, for the wire
 * attacks of tools/fuzz/ (roce_packet.py, fuzz-wire) and tests/vm/wire.sh.
 *
 * Creates on DEVICE one CQ, an RC, a UC and a UD QP, a 64 KiB MR with
 * remote write, read and atomic access filled with a known pattern, and
 * buffers for receives and sends.  RC and UC are connected to PEER (an
 * IPv4 or IPv6 address: GID ::ffff:PEER or PEER; the caller makes the
 * address resolve, e.g. a static neighbour), then every QP is moved to RTS.
 *
 * Prints one line of JSON with what an attacker needs (QPNs, PSNs, rkey,
 * MR address and length, Q_Key, the pattern), then obeys line commands on
 * stdin and answers each with one line of JSON ({"ok": true, ...} or
 * {"ok": false, "error": "..."}); QP is rc, uc or ud:
 *
 *   info                         the first line again
 *   post_recv QP N               N receives, one 8 KiB slot each (zeroed);
 *                                receive wr_ids count from 1, sends' from
 *                                2^40
 *   rdump WR_ID OFF LEN          hex of the slot of receive WR_ID
 *   post_send QP OP LEN [RADDR RKEY [IMM]]
 *                                OP: send send_imm write write_imm read
 *                                cas faa (RC/UC to the peer, UD to the
 *                                peer's QPN with our Q_Key)
 *   poll [MS [N]]                completions: until N or MS ms (0: drain)
 *   state QP                     ibv_query_qp state
 *   status                       every QP's state and the completions
 *                                the CQ has (poll 0, state rc/uc/ud)
 *   dump OFF LEN                 hex of MR bytes (also after dereg)
 *   verify                       MR bytes that differ from the pattern
 *   fill                         restore the pattern
 *   dereg / reg                  ibv_dereg_mr (timed) / register it again
 *   destroy QP                   ibv_destroy_qp, timed
 *   error QP                     move QP to the Error state
 *   reconnect QP [RQ_PSN SQ_PSN] RESET -> INIT -> RTR -> RTS again
 *   access QP FLAGS              RTS -> RTS with these remote access flags
 *   quit                         destroy everything, exit 0
 *
 * Every wait is bounded: poll by its MS (at most 60 s); the rest are verbs
 * calls that return (a dereg or destroy that does not is the bug to find;
 * the caller times it).  EOF on stdin is quit.
 *
 * Usage: sroce_wire_target [-d DEV] [-g GID_INDEX] [-q PEER_QPN]
 *            [-r RQ_PSN] [-s SQ_PSN] [-m MTU] [-t TIMEOUT] [-n MIN_RNR]
 *            [-k QKEY] [-c CQE] [-e RETRY_CNT] PEER
 * (-c: the CQ's entries, 4096; -e: the RC QP's retry_cnt, 7.)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MR_LEN		(64u << 10)
#define SBUF_LEN	(64u << 10)
#define RSLOT		8192u
#define RSLOTS		64u
#define CQ_LEN		4096
#define MAX_SEND_WR	64
#define MAX_RECV_WR	256
#define LINE_MAX_LEN	512
/* Receive wr_ids count from 1, send wr_ids from 2^40: never the same. */
#define SEND_ID_BASE	(1ull << 40)

enum { QP_RC, QP_UC, QP_UD, QP_NUM };

struct tqp {
	const char *name;
	enum ibv_qp_type type;
	struct ibv_qp *qp;
	uint32_t rq_psn, sq_psn;
};

static struct tqp qps[QP_NUM] = {
	{ .name = "rc", .type = IBV_QPT_RC },
	{ .name = "uc", .type = IBV_QPT_UC },
	{ .name = "ud", .type = IBV_QPT_UD },
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr, *rmr, *smr;
static struct ibv_ah *ah;
static uint8_t *buf, *rbuf, *sbuf;
static union ibv_gid sgid, dgid;
static int sgid_index = -1, peer_v4;
static char peer_text[INET6_ADDRSTRLEN], sgid_text[INET6_ADDRSTRLEN];
static const char *dev_name = "sroce0";
static uint32_t peer_qpn = 0x99, qkey = 0x11111111;
static uint32_t opt_rq_psn = 0x100, opt_sq_psn = 0x200;
static int opt_mtu = 1024, opt_timeout = 18, opt_min_rnr = 12;
static int opt_cqe = CQ_LEN, opt_retry = 7;
static uint64_t next_recv_id = 1, next_send_id = SEND_ID_BASE;

/* The MR's pattern: byte i is (i ^ i >> 8 ^ 0x5a) & 255. */
static uint8_t pat(uint32_t i)
{
	return (uint8_t)(i ^ (i >> 8) ^ 0x5a);
}

static void fill_pattern(uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(i);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "sroce_wire_target: %s: %s\n", what, strerror(err));
	exit(2);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* {"ok": false, "error": "WHAT ARG"}; ARG (user input) is escaped. */
static void fail(const char *what, const char *arg)
{
	printf("{\"ok\": false, \"error\": \"%s", what);
	for (; arg && *arg; arg++) {
		if (*arg == '"' || *arg == '\\')
			printf("\\%c", *arg);
		else if ((unsigned char)*arg >= 0x20 && *arg != 0x7f)
			putchar(*arg);
	}
	printf("\"}\n");
}

static void hex(const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		printf("%02x", p[i]);
}

static enum ibv_mtu mtu_enum(int mtu)
{
	switch (mtu) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return IBV_MTU_1024;
	}
}

static const char *state_name(enum ibv_qp_state s)
{
	static const char *const names[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

static const char *wc_opcode_name(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_ATOMIC_WRITE: return "ATOMIC_WRITE";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "OTHER";
	}
}

/* The first RoCE v2 GID of the peer's family (IPv4-mapped, or global IPv6). */
static int find_gid(void)
{
	static const uint8_t v4map[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < 64; i++) {
		int mapped;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		mapped = !memcmp(e.gid.raw, v4map, sizeof(v4map));
		if (peer_v4 ? mapped :
		    !mapped && !(e.gid.raw[0] == 0xfe && (e.gid.raw[1] & 0xc0) == 0x80)) {
			sgid = e.gid;
			return i;
		}
	}
	return -1;
}

static void gid_text(const union ibv_gid *gid, char *out)
{
	inet_ntop(AF_INET6, gid->raw, out, INET6_ADDRSTRLEN);
}

static struct tqp *find_qp(const char *name)
{
	int i;

	for (i = 0; i < QP_NUM; i++)
		if (name && !strcmp(name, qps[i].name))
			return &qps[i];
	return NULL;
}

static void ah_attr(struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->is_global = 1;
	a->port_num = 1;
	a->grh.dgid = dgid;
	a->grh.sgid_index = sgid_index;
	a->grh.hop_limit = 64;
}

/* RESET -> INIT -> RTR -> RTS with the PSNs in @t. */
static int connect_qp(struct tqp *t)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	int err;

	if (t->type == IBV_QPT_UD) {
		a.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (t->type == IBV_QPT_RC)
			a.qp_access_flags |= IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	err = ibv_modify_qp(t->qp, &a, mask);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (t->type != IBV_QPT_UD) {
		a.path_mtu = mtu_enum(opt_mtu);
		a.dest_qp_num = peer_qpn;
		a.rq_psn = t->rq_psn;
		ah_attr(&a.ah_attr);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
	}
	if (t->type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = opt_min_rnr;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	err = ibv_modify_qp(t->qp, &a, mask);
	if (err)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = t->sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (t->type == IBV_QPT_RC) {
		a.timeout = opt_timeout;
		a.retry_cnt = opt_retry;
		a.rnr_retry = 7;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(t->qp, &a, mask);
}

static int create_qp(struct tqp *t)
{
	struct ibv_qp_init_attr init = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = t->type,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = MAX_SEND_WR, .max_recv_wr = MAX_RECV_WR,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};

	t->qp = ibv_create_qp(pd, &init);
	if (!t->qp)
		return errno;
	t->rq_psn = opt_rq_psn;
	t->sq_psn = opt_sq_psn;
	return connect_qp(t);
}

static void print_info(void)
{
	int i;

	printf("{\"ok\": true, \"dev\": \"%s\", \"gid_index\": %d, \"gid\": \"%s\", "
	       "\"peer\": \"%s\", \"peer_qpn\": %u, \"mtu\": %d, \"qkey\": %u, "
	       "\"min_rnr_timer\": %d, \"timeout\": %d, \"qp\": {",
	       dev_name, sgid_index, sgid_text, peer_text, peer_qpn, opt_mtu,
	       qkey, opt_min_rnr, opt_timeout);
	for (i = 0; i < QP_NUM; i++)
		printf("%s\"%s\": {\"qpn\": %u, \"rq_psn\": %u, \"sq_psn\": %u}",
		       i ? ", " : "", qps[i].name,
		       qps[i].qp ? qps[i].qp->qp_num : 0, qps[i].rq_psn,
		       qps[i].sq_psn);
	printf("}, \"mr\": {\"addr\": %" PRIu64 ", \"len\": %u, \"rkey\": %u, "
	       "\"lkey\": %u}, \"recv_slot\": %u, \"recv_slots\": %u, "
	       "\"pattern\": \"(i ^ i >> 8 ^ 0x5a) & 255\", \"pid\": %d}\n",
	       (uint64_t)(uintptr_t)buf, MR_LEN, mr ? mr->rkey : 0,
	       mr ? mr->lkey : 0, RSLOT, RSLOTS, (int)getpid());
}

static uint8_t *recv_slot(uint64_t wr_id)
{
	return rbuf + ((wr_id - 1) % RSLOTS) * RSLOT;
}

static void cmd_post_recv(struct tqp *t, const char *arg)
{
	int n = arg ? atoi(arg) : 1, i, err = 0;
	uint64_t first = next_recv_id;

	if (n < 1 || n > MAX_RECV_WR) {
		fail("bad count: ", arg);
		return;
	}
	for (i = 0; i < n && !err; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)recv_slot(next_recv_id),
			.length = RSLOT,
			.lkey = rmr->lkey,
		};
		struct ibv_recv_wr wr = {
			.wr_id = next_recv_id, .sg_list = &sge, .num_sge = 1,
		}, *bad;

		memset(recv_slot(next_recv_id), 0, RSLOT);
		err = ibv_post_recv(t->qp, &wr, &bad);
		if (!err)
			next_recv_id++;
	}
	printf("{\"ok\": %s, \"rc\": %d, \"wr_ids\": [", err ? "false" : "true",
	       err);
	for (; first < next_recv_id; first++)
		printf("%" PRIu64 "%s", first,
		       first + 1 < next_recv_id ? ", " : "");
	printf("]}\n");
}

static void cmd_rdump(char **arg)
{
	uint64_t id = arg[0] ? strtoull(arg[0], NULL, 0) : 0;
	uint32_t off = arg[1] ? strtoul(arg[1], NULL, 0) : 0;
	uint32_t len = arg[2] ? strtoul(arg[2], NULL, 0) : 0;

	if (!id || off > RSLOT || len > RSLOT - off) {
		fail("bad range", NULL);
		return;
	}
	printf("{\"ok\": true, \"hex\": \"");
	hex(recv_slot(id) + off, len);
	printf("\"}\n");
}

static int send_opcode(const char *op, enum ibv_wr_opcode *wr_op)
{
	static const struct { const char *name; enum ibv_wr_opcode op; } ops[] = {
		{ "send", IBV_WR_SEND }, { "send_imm", IBV_WR_SEND_WITH_IMM },
		{ "write", IBV_WR_RDMA_WRITE },
		{ "write_imm", IBV_WR_RDMA_WRITE_WITH_IMM },
		{ "read", IBV_WR_RDMA_READ },
		{ "cas", IBV_WR_ATOMIC_CMP_AND_SWP },
		{ "faa", IBV_WR_ATOMIC_FETCH_AND_ADD },
		{ "awrite", IBV_WR_ATOMIC_WRITE },
	};
	unsigned int i;

	for (i = 0; op && i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(op, ops[i].name)) {
			*wr_op = ops[i].op;
			return 0;
		}
	}
	return -1;
}

/* post_send QP OP LEN [RADDR RKEY [IMM]] */
static void cmd_post_send(struct tqp *t, char **arg)
{
	uint32_t len = arg[1] ? strtoul(arg[1], NULL, 0) : 0;
	struct ibv_sge sge = {
		.addr = (uintptr_t)sbuf, .length = len, .lkey = smr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = next_send_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint64_t raddr = arg[2] ? strtoull(arg[2], NULL, 0) : 0;
	uint32_t rkey = arg[3] ? strtoul(arg[3], NULL, 0) : 0;
	int err;

	if (send_opcode(arg[0], &wr.opcode) || len > SBUF_LEN) {
		fail("bad opcode or length: ", arg[0]);
		return;
	}
	if (arg[3] && arg[4])
		wr.imm_data = htonl(strtoul(arg[4], NULL, 0));
	switch (wr.opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		sge.length = 8;
		wr.num_sge = 1;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.swap = 2;
		break;
	case IBV_WR_ATOMIC_WRITE:	/* its 8 bytes: one SGE */
		sge.length = 8;
		wr.num_sge = 1;
		/* fallthrough */
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		break;
	default:
		break;
	}
	if (t->type == IBV_QPT_UD) {
		if (!ah) {
			fail("no address handle to the peer", NULL);
			return;
		}
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = peer_qpn;
		wr.wr.ud.remote_qkey = qkey;
	}
	err = ibv_post_send(t->qp, &wr, &bad);
	if (!err)
		next_send_id++;
	printf("{\"ok\": %s, \"rc\": %d, \"wr_id\": %" PRIu64 "}\n",
	       err ? "false" : "true", err, (uint64_t)wr.wr_id);
}

static const char *qp_name(uint32_t qpn)
{
	int i;

	for (i = 0; i < QP_NUM; i++)
		if (qps[i].qp && qps[i].qp->qp_num == qpn)
			return qps[i].name;
	return "?";
}

static void print_wc(const struct ibv_wc *wc, int first)
{
	printf("%s{\"wr_id\": %" PRIu64 ", \"status\": %d, \"status_str\": \"%s\", "
	       "\"opcode\": \"%s\", \"byte_len\": %u, \"imm\": %u, "
	       "\"qp\": \"%s\", \"src_qp\": %u, \"wc_flags\": %u}",
	       first ? "" : ", ", (uint64_t)wc->wr_id, wc->status,
	       ibv_wc_status_str(wc->status),
	       wc->status == IBV_WC_SUCCESS ? wc_opcode_name(wc->opcode) : "?",
	       wc->byte_len, (wc->wc_flags & IBV_WC_WITH_IMM) ?
	       ntohl(wc->imm_data) : 0, qp_name(wc->qp_num), wc->src_qp,
	       wc->wc_flags);
}

/* poll [MS [N]]: what the CQ has, waiting up to MS ms for N completions. */
static void cmd_poll(char **arg)
{
	long ms = arg[0] ? strtol(arg[0], NULL, 0) : 0;
	long want = arg[1] ? strtol(arg[1], NULL, 0) : -1;
	double end;
	long got = 0;
	int n;

	if (ms < 0 || ms > 60000)
		ms = 60000;
	end = now_ms() + ms;
	printf("{\"ok\": true, \"wc\": [");
	for (;;) {
		struct ibv_wc wc;

		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			break;
		if (n == 1) {
			print_wc(&wc, !got);
			got++;
			continue;
		}
		if ((want >= 0 && got >= want) || now_ms() >= end)
			break;
		usleep(1000);
	}
	printf("], \"rc\": %d}\n", n < 0 ? n : 0);
}


static int qp_state(struct tqp *t, enum ibv_qp_state *state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int err;

	if (!t->qp)
		return -1;
	err = ibv_query_qp(t->qp, &a, IBV_QP_STATE, &init);
	if (!err)
		*state = a.qp_state;
	return err;
}

/* Every QP's state, then what the CQ holds: the fuzzer's one question. */
static void cmd_status(void)
{
	enum ibv_qp_state st;
	struct ibv_wc wc;
	int i, n = 0;

	printf("{\"ok\": true, \"state\": {");
	for (i = 0; i < QP_NUM; i++)
		printf("%s\"%s\": \"%s\"", i ? ", " : "", qps[i].name,
		       qp_state(&qps[i], &st) ? "NONE" : state_name(st));
	printf("}, \"wc\": [");
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		print_wc(&wc, !n++);
	printf("]}\n");
}

static void cmd_state(struct tqp *t)
{
	enum ibv_qp_state st;

	if (qp_state(t, &st)) {
		fail("ibv_query_qp failed on ", t->name);
		return;
	}
	printf("{\"ok\": true, \"state\": \"%s\"}\n", state_name(st));
}

static void cmd_dump(char **arg)
{
	uint32_t off = arg[0] ? strtoul(arg[0], NULL, 0) : 0;
	uint32_t len = arg[1] ? strtoul(arg[1], NULL, 0) : 0;

	if (off > MR_LEN || len > MR_LEN - off) {
		fail("bad range", NULL);
		return;
	}
	printf("{\"ok\": true, \"hex\": \"");
	hex(buf + off, len);
	printf("\"}\n");
}

static void cmd_verify(void)
{
	uint32_t i, changed = 0;
	long first = -1, last = -1;

	for (i = 0; i < MR_LEN; i++) {
		if (buf[i] == pat(i))
			continue;
		changed++;
		if (first < 0)
			first = i;
		last = i;
	}
	printf("{\"ok\": true, \"changed\": %u, \"first\": %ld, \"last\": %ld}\n",
	       changed, first, last);
}

static void cmd_fill(void)
{
	fill_pattern(buf, MR_LEN);
	printf("{\"ok\": true}\n");
}

static int reg_mr(void)
{
	mr = ibv_reg_mr(pd, buf, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC);
	return mr ? 0 : errno;
}

static void cmd_dereg(void)
{
	double t0;
	int err;

	if (!mr) {
		fail("no MR", NULL);
		return;
	}
	t0 = now_ms();
	err = ibv_dereg_mr(mr);
	if (!err)
		mr = NULL;
	printf("{\"ok\": %s, \"rc\": %d, \"ms\": %.1f}\n", err ? "false" : "true",
	       err, now_ms() - t0);
}

static void cmd_reg(void)
{
	int err;

	if (mr) {
		fail("MR is registered", NULL);
		return;
	}
	err = reg_mr();
	printf("{\"ok\": %s, \"rc\": %d, \"rkey\": %u}\n", err ? "false" : "true",
	       err, mr ? mr->rkey : 0);
}

static void cmd_destroy(struct tqp *t)
{
	double t0;
	int err;

	if (!t->qp) {
		fail("destroyed: ", t->name);
		return;
	}
	t0 = now_ms();
	err = ibv_destroy_qp(t->qp);
	if (!err)
		t->qp = NULL;
	printf("{\"ok\": %s, \"rc\": %d, \"ms\": %.1f}\n", err ? "false" : "true",
	       err, now_ms() - t0);
}

static void cmd_error(struct tqp *t)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int err;

	if (!t->qp) {
		fail("destroyed: ", t->name);
		return;
	}
	err = ibv_modify_qp(t->qp, &a, IBV_QP_STATE);
	printf("{\"ok\": %s, \"rc\": %d}\n", err ? "false" : "true", err);
}

/* The QP's remote access rights, changed in RTS (RTS to RTS). */
static void cmd_access(struct tqp *t, const char *flags)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.qp_access_flags = flags ? strtoul(flags, NULL, 0) : 0,
	};
	int err;

	err = ibv_modify_qp(t->qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS);
	printf("{\"ok\": %s, \"rc\": %d}\n", err ? "false" : "true", err);
}

/* Attach the QP to a multicast group (an IPv6 or IPv4-mapped address). */
static void cmd_attach(struct tqp *t, const char *group)
{
	union ibv_gid gid;
	int err;

	if (!group || inet_pton(AF_INET6, group, gid.raw) != 1) {
		fail("bad group: ", group ? group : "(none)");
		return;
	}
	err = ibv_attach_mcast(t->qp, &gid, 0);
	printf("{\"ok\": %s, \"rc\": %d}\n", err ? "false" : "true", err);
}

static void cmd_reconnect(struct tqp *t, char **arg)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int err;

	if (!t->qp) {
		fail("destroyed: ", t->name);
		return;
	}
	if (arg[0])
		t->rq_psn = strtoul(arg[0], NULL, 0) & 0xffffff;
	if (arg[0] && arg[1])
		t->sq_psn = strtoul(arg[1], NULL, 0) & 0xffffff;
	err = ibv_modify_qp(t->qp, &a, IBV_QP_STATE);
	if (!err)
		err = connect_qp(t);
	printf("{\"ok\": %s, \"rc\": %d, \"rq_psn\": %u, \"sq_psn\": %u}\n",
	       err ? "false" : "true", err, t->rq_psn, t->sq_psn);
}

static void teardown(void)
{
	int i;

	for (i = 0; i < QP_NUM; i++)
		if (qps[i].qp)
			ibv_destroy_qp(qps[i].qp);
	if (ah)
		ibv_destroy_ah(ah);
	if (mr)
		ibv_dereg_mr(mr);
	ibv_dereg_mr(rmr);
	ibv_dereg_mr(smr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

/* One command line; returns 0 on quit. */
static int command(char *line)
{
	char *w[8] = { NULL }, *save = NULL, *tok;
	struct tqp *t;
	int n = 0;

	for (tok = strtok_r(line, " \t\r\n", &save); tok && n < 8;
	     tok = strtok_r(NULL, " \t\r\n", &save))
		w[n++] = tok;
	if (!n)
		return 1;
	t = find_qp(w[1]);

	if (!strcmp(w[0], "quit"))
		return 0;
	if (!strcmp(w[0], "info"))
		print_info();
	else if (!strcmp(w[0], "poll"))
		cmd_poll(w + 1);
	else if (!strcmp(w[0], "dump"))
		cmd_dump(w + 1);
	else if (!strcmp(w[0], "rdump"))
		cmd_rdump(w + 1);
	else if (!strcmp(w[0], "status"))
		cmd_status();
	else if (!strcmp(w[0], "verify"))
		cmd_verify();
	else if (!strcmp(w[0], "fill"))
		cmd_fill();
	else if (!strcmp(w[0], "dereg"))
		cmd_dereg();
	else if (!strcmp(w[0], "reg"))
		cmd_reg();
	else if (!t)
		fail("unknown command or QP: ", w[0]);
	else if (!t->qp)
		fail("destroyed: ", t->name);
	else if (!strcmp(w[0], "post_recv"))
		cmd_post_recv(t, w[2]);
	else if (!strcmp(w[0], "post_send"))
		cmd_post_send(t, w + 2);
	else if (!strcmp(w[0], "state"))
		cmd_state(t);
	else if (!strcmp(w[0], "destroy"))
		cmd_destroy(t);
	else if (!strcmp(w[0], "error"))
		cmd_error(t);
	else if (!strcmp(w[0], "reconnect"))
		cmd_reconnect(t, w + 2);
	else if (!strcmp(w[0], "access"))
		cmd_access(t, w[2]);
	else if (!strcmp(w[0], "attach"))
		cmd_attach(t, w[2]);
	else
		fail("unknown command: ", w[0]);
	return 1;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-d DEV] [-g GID_INDEX] [-q PEER_QPN] "
		"[-r RQ_PSN] [-s SQ_PSN] [-m MTU] [-t TIMEOUT] [-n MIN_RNR] "
		"[-k QKEY] [-c CQE] [-e RETRY_CNT] PEER\n", prog);
	exit(2);
}

static void setup(void)
{
	struct ibv_device **list, *dev = NULL;
	struct ibv_ah_attr aa;
	int i, n, err;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev_name))
			dev = list[i];
	if (!dev)
		die(dev_name, ENODEV);
	ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device", errno);
	ibv_free_device_list(list);
	if (sgid_index < 0)
		sgid_index = find_gid();
	else if (ibv_query_gid(ctx, 1, sgid_index, &sgid))
		sgid_index = -1;
	if (sgid_index < 0)
		die("no RoCE v2 GID of the peer's address family", ENOENT);
	gid_text(&sgid, sgid_text);

	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, opt_cqe, NULL, NULL, 0);
	if (!pd || !cq)
		die("ibv_alloc_pd/ibv_create_cq", errno);
	if (posix_memalign((void **)&buf, 4096, MR_LEN) ||
	    posix_memalign((void **)&rbuf, 4096, RSLOT * RSLOTS) ||
	    posix_memalign((void **)&sbuf, 4096, SBUF_LEN))
		die("posix_memalign", ENOMEM);
	fill_pattern(buf, MR_LEN);
	fill_pattern(sbuf, SBUF_LEN);
	memset(rbuf, 0, RSLOT * RSLOTS);
	err = reg_mr();
	rmr = ibv_reg_mr(pd, rbuf, RSLOT * RSLOTS, IBV_ACCESS_LOCAL_WRITE);
	smr = ibv_reg_mr(pd, sbuf, SBUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (err || !rmr || !smr)
		die("ibv_reg_mr", err ? err : errno);
	for (i = 0; i < QP_NUM; i++) {
		err = create_qp(&qps[i]);
		if (err)
			die(qps[i].name, err);
	}
	ah_attr(&aa);
	ah = ibv_create_ah(pd, &aa);	/* UD sends only: optional */
	if (!ah)
		fprintf(stderr, "sroce_wire_target: no AH to %s: %s\n",
			peer_text, strerror(errno));
}

int main(int argc, char **argv)
{
	char line[LINE_MAX_LEN];
	struct in6_addr a6;
	struct in_addr a4;
	int opt;

	while ((opt = getopt(argc, argv, "d:g:q:r:s:m:t:n:k:c:e:")) != -1) {
		switch (opt) {
		case 'd': dev_name = optarg; break;
		case 'g': sgid_index = atoi(optarg); break;
		case 'q': peer_qpn = strtoul(optarg, NULL, 0) & 0xffffff; break;
		case 'r': opt_rq_psn = strtoul(optarg, NULL, 0) & 0xffffff; break;
		case 's': opt_sq_psn = strtoul(optarg, NULL, 0) & 0xffffff; break;
		case 'm': opt_mtu = atoi(optarg); break;
		case 't': opt_timeout = atoi(optarg); break;
		case 'n': opt_min_rnr = atoi(optarg) & 0x1f; break;
		case 'k': qkey = strtoul(optarg, NULL, 0); break;
		case 'c': opt_cqe = atoi(optarg); break;
		case 'e': opt_retry = atoi(optarg) & 7; break;
		default: usage(argv[0]);
		}
	}
	if (optind >= argc)
		usage(argv[0]);
	if (inet_pton(AF_INET, argv[optind], &a4) == 1) {
		peer_v4 = 1;
		memset(&dgid, 0, sizeof(dgid));
		dgid.raw[10] = 0xff;
		dgid.raw[11] = 0xff;
		memcpy(&dgid.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, argv[optind], &a6) == 1) {
		memcpy(dgid.raw, &a6, 16);
	} else {
		usage(argv[0]);
	}
	snprintf(peer_text, sizeof(peer_text), "%s", argv[optind]);

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	print_info();
	while (fgets(line, sizeof(line), stdin) && command(line))
		;
	teardown();
	printf("{\"ok\": true, \"bye\": true}\n");
	return 0;
}

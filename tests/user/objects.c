// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce_objects - verbs objects from user space, through libibverbs and the
 * sroce provider: create, query, modify, destroy, and the misuse cases
 * (limits, bad access flags, wrong destroy order, invalid handles).
 *
 * Usage: sroce_objects [DEVICE]   (default sroce0).  Prints TAP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>

#include "common.h"

/* Post @n receives to a QP in Error: each completes flushed at once. */
static int flushed(struct ibv_qp *qp, uint64_t first, int n)
{
	struct ibv_recv_wr wr = {}, *bad;
	int i, err = 0;

	for (i = 0; i < n && !err; i++) {
		wr.wr_id = first + i;
		err = ibv_post_recv(qp, &wr, &bad);
	}
	return err;
}

/* RESET -> INIT -> ERR (ib_core has no RESET -> ERR): a QP that flushes. */
static int to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	int err = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	qa.qp_state = IBV_QPS_ERR;
	return err ?: ibv_modify_qp(qp, &qa, IBV_QP_STATE);
}

/*
 * ibv_create_qp_ex: each comp_mask bit is honoured, and refused only when
 * its value asks for what the device lacks (rdma_rxe takes create flags 0).
 */
static void qp_ex_masks(struct ibv_context *ctx, struct ibv_pd *pd,
			struct ibv_cq *cq)
{
	static const struct {
		const char *what;
		uint32_t mask;
		uint64_t value;
		int err;
	} cases[] = {
		{ "create flags 0", IBV_QP_INIT_ATTR_CREATE_FLAGS, 0, 0 },
		{ "create flag BLOCK_SELF_MCAST_LB",
		  IBV_QP_INIT_ATTR_CREATE_FLAGS,
		  IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, EOPNOTSUPP },
		{ "max_tso_header 0", IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 0, 0 },
		{ "max_tso_header 64", IBV_QP_INIT_ATTR_MAX_TSO_HEADER, 64,
		  EOPNOTSUPP },
		{ "no indirection table", IBV_QP_INIT_ATTR_IND_TABLE, 0, 0 },
		{ "no receive hash", IBV_QP_INIT_ATTR_RX_HASH, 0, 0 },
		{ "a receive hash", IBV_QP_INIT_ATTR_RX_HASH, 1, EOPNOTSUPP },
		{ "an XRC domain bit on an RC QP", IBV_QP_INIT_ATTR_XRCD, 0, 0 },
		{ "send ops: SEND and RDMA WRITE",
		  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		  IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE, 0 },
		{ "send ops: BIND_MW and LOCAL_INV",
		  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		  IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV, 0 },
		{ "send ops: TSO (no TSO)",
		  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, IBV_QP_EX_WITH_TSO,
		  EOPNOTSUPP },
		{ "an unknown comp_mask bit", 1u << 20, 0, EOPNOTSUPP },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibv_qp_init_attr_ex a = {
			.qp_type = IBV_QPT_RC,
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
			.comp_mask = IBV_QP_INIT_ATTR_PD | cases[i].mask,
			.pd = pd,
			.create_flags = cases[i].value,
			.max_tso_header = cases[i].value,
			.send_ops_flags = cases[i].value,
		};
		struct ibv_qp *qp;

		if (cases[i].mask == IBV_QP_INIT_ATTR_RX_HASH)
			a.rx_hash_conf.rx_hash_function = cases[i].value;
		errno = 0;
		qp = ibv_create_qp_ex(ctx, &a);
		if (!cases[i].err)
			tap(qp != NULL, "ibv_create_qp_ex with %s (%d)",
			   cases[i].what, errno);
		else
			tap(!qp && errno == cases[i].err,
			   "ibv_create_qp_ex with %s: %s (%d)", cases[i].what,
			   strerror(cases[i].err), errno);
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/*
 * The extended CQ: flags the device lacks refused, an empty CQ, then a
 * WRITE WITH IMMEDIATE from a QP to itself polled with ibv_start_poll /
 * ibv_next_poll / ibv_end_poll and read with the ibv_wc_read_* calls.
 */
static void cq_ex(struct ibv_context *ctx, struct ibv_pd *pd,
		  struct ibv_mr *mr, char *buf, int sgid, union ibv_gid *gid)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			    IBV_WC_EX_WITH_SL,
	}, bad_ca;
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)buf, 100, mr->lkey };
	struct ibv_send_wr swr = {
		.wr_id = 8, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0x1234),
		.wr.rdma = { (uintptr_t)buf + 2048, mr->rkey },
	}, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 7 }, *rbad;
	struct ibv_poll_cq_attr pa = {};
	struct wcx {
		uint64_t wr_id;
		int status, opcode;
		uint32_t len, qpn, flags;
		__be32 imm;
	} wc[2] = {}, tmp;
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp;
	int got = 0, tries, err;

	bad_ca = ca;
	bad_ca.wc_flags |= IBV_WC_EX_WITH_CVLAN;
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &bad_ca);
	tap(!cqx && errno == EOPNOTSUPP,
	   "ibv_create_cq_ex with VLAN fields: EOPNOTSUPP (%d)", errno);
	bad_ca = ca;
	bad_ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	bad_ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &bad_ca);
	tap(!cqx && errno == EOPNOTSUPP,
	   "ibv_create_cq_ex IGNORE_OVERRUN: EOPNOTSUPP (%d)", errno);
	cqx = ibv_create_cq_ex(ctx, &ca);
	tap(cqx != NULL, "ibv_create_cq_ex (%d)", errno);
	if (!cqx)
		return;
	err = ibv_start_poll(cqx, &pa);
	tap(err == ENOENT, "ibv_start_poll of an empty CQ: ENOENT (%d)", err);
	if (!err)
		ibv_end_poll(cqx);
	qi.send_cq = qi.recv_cq = ibv_cq_ex_to_cq(cqx);
	qp = ibv_create_qp(pd, &qi);
	err = qp ? to_rts(qp, sgid, gid) : -1;
	tap(!err, "a QP connected to itself on the extended CQ (%d)", err);
	if (err)
		goto out;
	memset(buf, 0x5a, 100);
	memset(buf + 2048, 0, 100);
	err = ibv_post_recv(qp, &rwr, &rbad) ||
	      ibv_post_send(qp, &swr, &sbad);
	tap(!err, "post a receive and a WRITE WITH IMMEDIATE (%d)", err);
	for (tries = 0; !err && got < 2 && tries < 5000; tries++) {
		if (ibv_start_poll(cqx, &pa)) {
			usleep(1000);
			continue;
		}
		do {
			wc[got].wr_id = cqx->wr_id;
			wc[got].status = cqx->status;
			wc[got].opcode = ibv_wc_read_opcode(cqx);
			wc[got].len = ibv_wc_read_byte_len(cqx);
			wc[got].qpn = ibv_wc_read_qp_num(cqx);
			wc[got].flags = ibv_wc_read_wc_flags(cqx);
			wc[got].imm = ibv_wc_read_imm_data(cqx);
			got++;
		} while (got < 2 && !ibv_next_poll(cqx));
		ibv_end_poll(cqx);
	}
	tap(got == 2, "two completions polled (%d)", got);
	if (wc[0].wr_id == 7) {	/* the receive first: send, then receive */
		tmp = wc[0];
		wc[0] = wc[1];
		wc[1] = tmp;
	}
	tap(wc[0].wr_id == 8 && wc[0].status == IBV_WC_SUCCESS &&
	   wc[0].opcode == IBV_WC_RDMA_WRITE && wc[1].wr_id == 7 &&
	   wc[1].status == IBV_WC_SUCCESS,
	   "both succeed: the WRITE (%d, opcode %d), the receive (%d)",
	   wc[0].status, wc[0].opcode, wc[1].status);
	tap(wc[1].opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc[1].len == 100 &&
	   wc[1].imm == htonl(0x1234) && wc[1].flags == IBV_WC_WITH_IMM &&
	   wc[1].qpn == qp->qp_num,
	   "the receive reads opcode %d, byte_len %u, imm 0x%x, flags 0x%x, qp %u",
	   wc[1].opcode, wc[1].len, ntohl(wc[1].imm), wc[1].flags, wc[1].qpn);
	tap(!memcmp(buf, buf + 2048, 100), "the data arrived");
	err = ibv_start_poll(cqx, &pa);
	tap(err == ENOENT, "the CQ is empty again (%d)", err);
	if (!err)
		ibv_end_poll(cqx);
	/*
	 * More completions than the ring holds, in batches: each
	 * ibv_end_poll() must give the slots back, or the CQ overruns.
	 */
	swr.opcode = IBV_WR_RDMA_WRITE;
	err = 0;
	for (got = 0, tries = 0; !err && got < 4 * 24 && tries < 20000; ) {
		int i;

		for (i = 0; i < 4 && !err; i++) {
			swr.wr_id = 100 + got + i;
			err = ibv_post_send(qp, &swr, &sbad);
		}
		for (i = 0; !err && i < 4 && tries < 20000; tries++) {
			if (ibv_start_poll(cqx, &pa)) {
				usleep(1000);
				continue;
			}
			do {
				if (cqx->status != IBV_WC_SUCCESS ||
				    cqx->wr_id != (uint64_t)(100 + got))
					err = -1;
				got++;
				i++;
			} while (i < 4 && !ibv_next_poll(cqx));
			ibv_end_poll(cqx);
		}
	}
	tap(got == 4 * 24 && !err,
	   "96 WRITEs in batches of 4 polled in order, no overrun (%d, %d)",
	   got, err);
out:
	if (qp)
		ibv_destroy_qp(qp);
	tap(!ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), "ibv_destroy_cq of an extended CQ");
}

static uint64_t raw_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(ctx, &v) ||
	    !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull +
	       (uint64_t)v.raw_clock.tv_nsec;
}

/* One completion of @cqx within 5 s: its wr_id, timestamps and status. */
static int poll_ts(struct ibv_cq_ex *cqx, uint64_t *wr_id, uint64_t *ts,
		   uint64_t *wall)
{
	struct ibv_poll_cq_attr pa = {};
	int tries, st;

	for (tries = 0; tries < 5000; tries++) {
		if (!ibv_start_poll(cqx, &pa)) {
			*wr_id = cqx->wr_id;
			st = cqx->status;
			*ts = ibv_wc_read_completion_ts(cqx);
			*wall = ibv_wc_read_completion_wallclock_ns(cqx);
			ibv_end_poll(cqx);
			return st;
		}
		usleep(1000);
	}
	return -1;
}

/*
 * Completion timestamps: the device clock (hca_core_clock, the mask),
 * ibv_query_rt_values_ex before and after, two WRITEs stamped in order
 * between them, the wall clock time near the system's, and a timestamp
 * that survives ibv_resize_cq.  @mapped: over the uverbs commands
 * (SROCE_MAPPED=0) a CQ with timestamps is refused.
 */
static void cq_ts(struct ibv_context *ctx, struct ibv_pd *pd,
		  struct ibv_mr *mr, char *buf, int sgid, union ibv_gid *gid,
		  int mapped)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 8,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ibv_send_wr swr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)buf + 4096, mr->rkey },
	}, *bad;
	struct ibv_device_attr_ex da;
	struct ibv_cq_ex *cqx;
	struct ibv_qp *qp = NULL;
	uint64_t t0, t1, t2, id[3] = {}, ts[3] = {}, wall[3] = {}, now;
	struct timespec rt;
	int err, st[3] = { -1, -1, -1 };

	err = ibv_query_device_ex(ctx, NULL, &da);
	tap(!err && da.hca_core_clock == 1000000 &&
	   da.completion_timestamp_mask == UINT64_MAX,
	   "a 1 GHz device clock of 64 bits (%llu kHz, mask %#llx)",
	   (unsigned long long)da.hca_core_clock,
	   (unsigned long long)da.completion_timestamp_mask);
	t0 = raw_clock(ctx);
	tap(t0 != 0, "ibv_query_rt_values_ex reads the raw clock");
	errno = 0;
	cqx = ibv_create_cq_ex(ctx, &ca);
	if (!mapped) {
		tap(!cqx && errno == EOPNOTSUPP,
		   "completion timestamps over the uverbs commands: EOPNOTSUPP (%d)",
		   errno);
		if (cqx)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
		return;
	}
	tap(cqx != NULL, "ibv_create_cq_ex with completion timestamps (%d)",
	   errno);
	if (!cqx)
		return;
	qi.send_cq = qi.recv_cq = ibv_cq_ex_to_cq(cqx);
	qp = ibv_create_qp(pd, &qi);
	err = qp ? to_rts(qp, sgid, gid) : -1;
	swr.wr_id = 1;
	err = err ? err : ibv_post_send(qp, &swr, &bad);
	st[0] = err ? -1 : poll_ts(cqx, &id[0], &ts[0], &wall[0]);
	usleep(2000);
	swr.wr_id = 2;
	err = err ? err : ibv_post_send(qp, &swr, &bad);
	st[1] = err ? -1 : poll_ts(cqx, &id[1], &ts[1], &wall[1]);
	t1 = raw_clock(ctx);
	clock_gettime(CLOCK_REALTIME, &rt);
	now = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	tap(st[0] == IBV_WC_SUCCESS && st[1] == IBV_WC_SUCCESS && id[0] == 1 &&
	   id[1] == 2, "two WRITEs complete on it (%d, %d)", st[0], st[1]);
	tap(t0 < ts[0] && ts[0] + 2000000 <= ts[1] && ts[1] <= t1,
	   "their timestamps are in order, between two raw clock reads, 2 ms apart (%llu, +%llu, +%llu, +%llu ns)",
	   (unsigned long long)t0, (unsigned long long)(ts[0] - t0),
	   (unsigned long long)(ts[1] - t0), (unsigned long long)(t1 - t0));
	/* Each read converts with the clocks' offset then: a little jitter. */
	tap(wall[1] <= now && now - wall[1] < 5000000000ull &&
	   llabs((long long)(wall[1] - wall[0]) - (long long)(ts[1] - ts[0])) <
	   1000000,
	   "the wall clock times: the system's, as far apart (%lld ns before now)",
	   (long long)(now - wall[1]));
	/* A completion waiting through ibv_resize_cq keeps its timestamp. */
	swr.wr_id = 3;
	err = err ? err : ibv_post_send(qp, &swr, &bad);
	usleep(200000);
	t2 = raw_clock(ctx);
	err = err ? err : ibv_resize_cq(ibv_cq_ex_to_cq(cqx), 64);
	st[2] = err ? -1 : poll_ts(cqx, &id[2], &ts[2], &wall[2]);
	tap(!err && st[2] == IBV_WC_SUCCESS && id[2] == 3 && t1 < ts[2] &&
	   ts[2] < t2, "a completion moved by ibv_resize_cq keeps its timestamp (%d, %d)",
	   err, st[2]);
	if (qp)
		ibv_destroy_qp(qp);
	tap(!ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)),
	   "ibv_destroy_cq of a CQ with timestamps");
}

/*
 * One RDMA WRITE of @len bytes from (@lkey, @src) to (@rkey, @dst), with
 * IBV_SEND_* @flags, between two fresh RC QPs of @pd (one send SGE, no
 * inline data asked for) connected to each other; the status of its
 * completion (-1: none).  Two QPs: a QP connected to itself would flush
 * the WRITE when its responder side fails it, before the NAK arrives.
 * Fresh ones each time: a failed WRITE leaves both in Error.
 */
static int rdma_status_flags(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
			     union ibv_gid *gid, enum ibv_wr_opcode op,
			     unsigned int flags, uint32_t lkey, void *local,
			     uint32_t rkey, uint64_t remote, uint32_t len)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)local, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 77, .sg_list = &sge, .num_sge = 1,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED | flags,
		.wr.rdma = { remote, rkey },
	}, *bad;
	struct ibv_qp *req, *resp;
	struct ibv_wc wc;
	int n = 0, tries;

	req = ibv_create_qp(pd, &qi);
	resp = ibv_create_qp(pd, &qi);
	if (req && resp && !to_rts_peer(req, resp->qp_num, sgid, gid) &&
	    !to_rts_peer(resp, req->qp_num, sgid, gid) &&
	    !ibv_post_send(req, &wr, &bad))
		for (tries = 0; !n && tries < 5000; tries++) {
			n = ibv_poll_cq(cq, 1, &wc);
			if (!n)
				usleep(1000);
		}
	if (req)
		ibv_destroy_qp(req);
	if (resp)
		ibv_destroy_qp(resp);
	return n == 1 && wc.wr_id == 77 ? (int)wc.status : -1;
}

static int rdma_status(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
		       union ibv_gid *gid, enum ibv_wr_opcode op,
		       uint32_t lkey, void *local, uint32_t rkey,
		       uint64_t remote, uint32_t len)
{
	return rdma_status_flags(pd, cq, sgid, gid, op, 0, lkey, local, rkey,
				 remote, len);
}

/* An RDMA WRITE of @len bytes from @src (@lkey) to @dst (@rkey). */
static int write_status(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
			union ibv_gid *gid, uint32_t lkey, void *src,
			uint32_t rkey, void *dst, uint32_t len)
{
	return rdma_status(pd, cq, sgid, gid, IBV_WR_RDMA_WRITE, lkey, src,
			   rkey, (uintptr_t)dst, len);
}

/*
 * A QP that asked for no inline data gets room for the size of its SGEs,
 * as from rdma_rxe and NICs (rdma-core's rdma_xclient counts on it), and
 * an inline RDMA WRITE of that many bytes lands.
 */
static void inline_grant(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
			 union ibv_gid *gid)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qi);
	static uint8_t dst[64];
	uint8_t src[16];
	struct ibv_mr *mr;
	int st = -1;

	tap(qp && qi.cap.max_inline_data >= 16,
	   "a QP asking for no inline data gets %u bytes (1 SGE)",
	   qi.cap.max_inline_data);
	if (qp)
		ibv_destroy_qp(qp);
	mr = ibv_reg_mr(pd, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	memset(src, 0x6b, sizeof(src));
	/* rdma_status() asks for the same caps: no inline data. */
	if (mr)
		st = rdma_status_flags(pd, cq, sgid, gid, IBV_WR_RDMA_WRITE,
				       IBV_SEND_INLINE, 0, src, mr->rkey,
				       (uintptr_t)dst + 8, sizeof(src));
	tap(st == IBV_WC_SUCCESS && dst[8] == 0x6b && dst[23] == 0x6b &&
	   !dst[7] && !dst[24],
	   "an inline RDMA WRITE of 16 bytes on it lands (%d)", st);
	if (mr)
		ibv_dereg_mr(mr);
}

/*
 * max_mr_size: an MR larger than 4 GiB works beyond the 4 GiB mark, and
 * one byte past the device's limit is refused.  The 4 GiB + 2 MiB are one
 * 2 MiB memfd mapped 2049 times in a row, so the VM needs no 4 GiB.
 */
static void big_mr(struct ibv_device_attr *da, struct ibv_pd *pd,
		   struct ibv_cq *cq, int sgid, union ibv_gid *gid)
{
	const size_t win = 2 << 20, len = (4ULL << 30) + win;
	const size_t at = (4ULL << 30) + 4096;
	char got[64], want[64];
	struct ibv_mr *big = NULL, *dst;
	size_t off, huge;
	char *p;
	int fd, st, mapped = 1;

	fd = memfd_create("sroce-big-mr", 0);
	p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0);
	if (fd < 0 || ftruncate(fd, win) || p == MAP_FAILED) {
		tap(0, "big MR: a 2 MiB memfd and 4 GiB of address space (%d)",
		   errno);
		return;
	}
	for (off = 0; off < len && mapped; off += win)
		mapped = mmap(p + off, win, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
	memset(want, 0x6b, sizeof(want));
	errno = 0;
	if (mapped && pwrite(fd, want, sizeof(want), at % win) == sizeof(want))
		big = ibv_reg_mr(pd, p, len, IBV_ACCESS_REMOTE_READ);
	tap(big != NULL && da->max_mr_size >= len,
	   "big MR: 4 GiB + 2 MiB registered (%d; max_mr_size %#llx)", errno,
	   (unsigned long long)da->max_mr_size);
	dst = ibv_reg_mr(pd, got, sizeof(got), IBV_ACCESS_LOCAL_WRITE);
	if (big && dst) {
		memset(got, 0, sizeof(got));
		st = rdma_status(pd, cq, sgid, gid, IBV_WR_RDMA_READ, dst->lkey,
				 got, big->rkey, (uintptr_t)(p + at),
				 sizeof(got));
		tap(st == IBV_WC_SUCCESS && !memcmp(got, want, sizeof(got)),
		   "big MR: a READ 4 GiB + 4 KiB into it returns what is there (%d)",
		   st);
		st = rdma_status(pd, cq, sgid, gid, IBV_WR_RDMA_READ, dst->lkey,
				 got, big->rkey, (uintptr_t)(p + len - 8), 16);
		tap(st == IBV_WC_REM_ACCESS_ERR,
		   "big MR: a READ across its end: REM_ACCESS_ERR (%d)", st);
	}
	if (dst)
		ibv_dereg_mr(dst);
	if (big)
		ibv_dereg_mr(big);
	/* Its iova the last page of the address space and one more. */
	errno = 0;
	big = ibv_reg_mr_iova(pd, p, 8192, UINT64_MAX - 4095,
			      IBV_ACCESS_REMOTE_READ);
	tap(!big && errno == EINVAL,
	   "an MR whose iova range wraps past 2^64 is refused with EINVAL (%d)",
	   errno);
	if (big)
		ibv_dereg_mr(big);
	munmap(p, len);
	close(fd);

	/* max_mr_size + 1 page of address space, never touched. */
	huge = da->max_mr_size + 4096;
	p = mmap(NULL, huge, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		tap(0, "big MR: mmap of max_mr_size + 4 KiB (%d)", errno);
		return;
	}
	errno = 0;
	big = ibv_reg_mr(pd, p, da->max_mr_size + 1, IBV_ACCESS_REMOTE_READ);
	tap(!big && errno == EINVAL,
	   "big MR: max_mr_size + 1 bytes is refused with EINVAL (%d)", errno);
	if (big)
		ibv_dereg_mr(big);
	munmap(p, huge);
}

/*
 * ibv_rereg_mr: a new translation, new access rights, a new PD; what is
 * not changed is kept, the old keys stop working, and a failed
 * re-registration leaves the MR as it was.
 */
static void rereg(struct ibv_context *ctx, struct ibv_pd *pd,
		  struct ibv_cq *cq, int sgid, union ibv_gid *gid)
{
	static char src[4096], a[4096], b[4096], z[3 * 4096];
	struct ibv_mr *smr, *mr, *rmr;
	struct ibv_pd *pd2;
	uint32_t old_rkey;
	int rc, st;

	smr = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	mr = ibv_reg_mr(pd, a, sizeof(a), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	pd2 = ibv_alloc_pd(ctx);
	tap(smr && mr && pd2, "two MRs and a second PD for ibv_rereg_mr");
	if (!smr || !mr || !pd2)
		goto out;
	memset(src, 0x3c, sizeof(src));
	old_rkey = mr->rkey;

	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b,
			  sizeof(b), 0);
	tap(!rc && mr->addr == (void *)b && mr->length == sizeof(b) &&
	   mr->rkey != old_rkey && mr->lkey == mr->rkey,
	   "ibv_rereg_mr: new translation, new keys (%d)", rc);
	st = write_status(pd, cq, sgid, gid, smr->lkey, src, mr->rkey, b, 512);
	tap(st == IBV_WC_SUCCESS && b[0] == 0x3c && b[511] == 0x3c && !a[0],
	   "a WRITE lands in the new memory, not the old (%d)", st);
	st = write_status(pd, cq, sgid, gid, smr->lkey, src, old_rkey, a, 512);
	tap(st == IBV_WC_REM_ACCESS_ERR && !a[0],
	   "the old rkey no longer works (%d)", st);

	errno = 0;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			  (void *)4096, 4096, 0);
	tap(rc == IBV_REREG_MR_ERR_CMD && mr->addr == (void *)b,
	   "ibv_rereg_mr to unmapped memory fails (%d, errno %d)", rc, errno);
	st = write_status(pd, cq, sgid, gid, smr->lkey, src, mr->rkey, b, 512);
	tap(st == IBV_WC_SUCCESS, "the MR still works after the failure (%d)",
	   st);
	rc = ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0);
	tap(rc == IBV_REREG_MR_ERR_CMD, "ibv_rereg_mr changing nothing: refused (%d)",
	   rc);

	old_rkey = mr->rkey;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	tap(!rc && mr->addr == (void *)b && mr->rkey == old_rkey,
	   "ibv_rereg_mr: new access in place, translation and keys kept (%d)",
	   rc);
	st = write_status(pd, cq, sgid, gid, smr->lkey, src, mr->rkey, b, 512);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "a WRITE to it without remote write access fails (%d)", st);
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_REMOTE_WRITE);
	tap(rc == IBV_REREG_MR_ERR_CMD,
	   "remote write without local write is refused (%d)", rc);

	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD |
			  IBV_REREG_MR_CHANGE_ACCESS, pd2, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	tap(!rc && mr->pd == pd2, "ibv_rereg_mr: a new PD (%d)", rc);
	st = write_status(pd, cq, sgid, gid, smr->lkey, src, mr->rkey, b, 512);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "a QP of the old PD cannot use it (%d)", st);
	st = write_status(pd2, cq, sgid, gid, mr->lkey, b, mr->rkey, b + 1024,
			  512);
	tap(st == IBV_WC_SUCCESS, "a QP of the new PD can (%d)", st);
	errno = 0;
	tap(ibv_dealloc_pd(pd2) == EBUSY, "the new PD is in use by the MR");

	/*
	 * Write access to memory registered read-only and never touched:
	 * its pages may be the shared zero page; the kernel must pin them
	 * again for writing (a new MR), not just allow the write.
	 */
	rmr = ibv_reg_mr(pd, z, sizeof(z), 0);
	tap(rmr != NULL, "a read-only MR over untouched memory");
	if (rmr) {
		old_rkey = rmr->rkey;
		rc = ibv_rereg_mr(rmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				  IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE);
		tap(!rc && rmr->rkey != old_rkey,
		   "ibv_rereg_mr to writable: pinned again, new keys (%d)", rc);
		st = write_status(pd, cq, sgid, gid, smr->lkey, src, rmr->rkey,
				  z + 4096, 512);
		tap(st == IBV_WC_SUCCESS && z[4096] == 0x3c && z[4096 + 511] == 0x3c,
		   "a WRITE to it lands in the process's memory (%d)", st);
		tap(!ibv_dereg_mr(rmr), "ibv_dereg_mr of it");
	}
out:
	if (mr)
		tap(!ibv_dereg_mr(mr), "ibv_dereg_mr after ibv_rereg_mr");
	if (smr)
		ibv_dereg_mr(smr);
	if (pd2)
		ibv_dealloc_pd(pd2);
}

/* The next completion of @cq within 5 s: 1, or 0 when none came. */
static int poll_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = 0, tries;

	for (tries = 0; !n && tries < 5000; tries++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (!n)
			usleep(1000);
	}
	return n == 1;
}

/* Post one WR on @qp and return the status of its completion (-1: none). */
static int post_status(struct ibv_qp *qp, struct ibv_cq *cq,
		       struct ibv_send_wr *wr, enum ibv_wc_opcode *op)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(qp, wr, &bad) || !poll_wc(cq, &wc) ||
	    wc.wr_id != wr->wr_id)
		return -1;
	if (op)
		*op = wc.opcode;
	return wc.status;
}

/*
 * The status of ibv_bind_mw() of type 1 window @mw on a fresh QP
 * connected to itself (-1: none).  A bind that fails leaves the window as
 * it was: its rkey is put back.
 */
static int bind_status(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
		       union ibv_gid *gid, struct ibv_mw *mw,
		       struct ibv_mw_bind_info *bi)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_mw_bind mb = { .wr_id = 9, .send_flags = IBV_SEND_SIGNALED,
				  .bind_info = *bi };
	uint32_t rkey = mw->rkey;
	struct ibv_qp *qp = ibv_create_qp(pd, &qi);
	struct ibv_wc wc;
	int st = -1;

	if (qp && !to_rts(qp, sgid, gid) && !ibv_bind_mw(qp, mw, &mb) &&
	    poll_wc(cq, &wc) && wc.wr_id == 9)
		st = wc.status;
	if (st != IBV_WC_SUCCESS)
		mw->rkey = rkey;
	if (qp)
		ibv_destroy_qp(qp);
	return st;
}

/*
 * ibv_rereg_mr with a new translation racing binds to the same MR.  The
 * new MR takes the old one's place and ib_core then deregisters the old
 * one; a window bound to the old one in between made that dereg fail, and
 * the old MR (keys, pinned pages, PD reference) stayed until the context
 * closed: its PD could not be freed.  A thread binds a type 2 window to
 * the MR through its current lkey and invalidates it, over and over
 * (resetting its QP after a bind that failed), while this one registers
 * the MR again over two buffers in turn.
 */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct bind_race {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	int sgid;
	union ibv_gid *gid;
	int stop;
	int binds, failed, resets;
};

static int race_post(struct bind_race *r, int bind, uint32_t rkey)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(r->qp);
	struct ibv_mw_bind_info bi = {
		.mr = r->mr, .addr = (uintptr_t)r->mr->addr, .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_wc wc;

	ibv_wr_start(x);
	x->wr_id = bind;
	x->wr_flags = IBV_SEND_SIGNALED;
	if (bind)
		ibv_wr_bind_mw(x, r->mw, rkey, &bi);
	else
		ibv_wr_local_inv(x, rkey);
	if (ibv_wr_complete(x) || !poll_wc(r->cq, &wc))
		return -1;
	return wc.status;
}

static void *race_binder(void *arg)
{
	struct bind_race *r = arg;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	uint32_t rkey = r->mw->rkey;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		rkey = ibv_inc_rkey(rkey);
		if (race_post(r, 1, rkey) == IBV_WC_SUCCESS) {
			__atomic_fetch_add(&r->binds, 1, __ATOMIC_RELAXED);
			if (race_post(r, 0, rkey) == IBV_WC_SUCCESS)
				continue;
		}
		r->failed++;
		/* A failed WR moved the QP to Error: start it again. */
		if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE) ||
		    to_rts(r->qp, r->sgid, r->gid))
			break;
		r->resets++;
	}
	return NULL;
}

static void rereg_bind_race(struct ibv_context *ctx, int sgid,
			    union ibv_gid *gid)
{
	static char bufs[2][16384] __attribute__((aligned(4096)));
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 2, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV,
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	struct bind_race r = { .sgid = sgid, .gid = gid };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	int i, ok, rc, done = 0, busy = 0, other = 0;
	pthread_t th;
	double t0;

	r.cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	r.mr = pd ? ibv_reg_mr(pd, bufs[0], sizeof(bufs[0]), access) : NULL;
	r.mw = pd ? ibv_alloc_mw(pd, IBV_MW_TYPE_2) : NULL;
	xa.pd = pd;
	xa.send_cq = xa.recv_cq = r.cq;
	r.qp = r.cq && pd ? ibv_create_qp_ex(ctx, &xa) : NULL;
	ok = r.mr && r.mw && r.qp && !to_rts(r.qp, sgid, gid) &&
	     !pthread_create(&th, NULL, race_binder, &r);
	tap(ok, "rereg/bind race: a PD, an MR, a type 2 window, a QP, a thread");
	if (!ok)
		goto out;
	/*
	 * 2000 reregs, and on until 20 binds went through between them: most
	 * binds fail against a rereg (a stale lkey, the MR closed to binds),
	 * and 2000 reregs can be over before one succeeds.
	 */
	t0 = now_s();
	for (i = 1; (i <= 2000 ||
		     __atomic_load_n(&r.binds, __ATOMIC_RELAXED) < 20) &&
		    now_s() - t0 < 10; i++) {
		rc = ibv_rereg_mr(r.mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				  bufs[i & 1], sizeof(bufs[0]), 0);
		if (!rc)
			done++;
		else if (rc == IBV_REREG_MR_ERR_CMD && errno == EBUSY)
			busy++;
		else if (!other++)
			printf("# rereg: %d, errno %d\n", rc, errno);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	printf("# %d reregs: %d done, %d refused (window bound); %d binds, "
	       "%d failed, %d QP resets, in %.1f s\n", i - 1, done, busy,
	       r.binds, r.failed, r.resets, now_s() - t0);
	tap(!other && done && r.binds,
	    "rereg/bind race: each rereg done or refused with EBUSY, binds "
	    "done between (%d other)", other);
out:
	if (r.mw)
		ibv_dealloc_mw(r.mw);
	if (r.qp)
		ibv_destroy_qp(r.qp);
	if (r.mr)
		ibv_dereg_mr(r.mr);
	if (r.cq)
		ibv_destroy_cq(r.cq);
	rc = pd ? ibv_dealloc_pd(pd) : -1;
	tap(!rc, "rereg/bind race: the PD is free after it: no replaced MR "
	    "was kept (%d)", rc);
}

/*
 * A CQ that uverbs polls (not mapped) while another thread destroys QPs
 * whose flushed completions wait in it: uverbs reads a completion's QP
 * number after the poll, and once read it from the QP destroy had freed
 * (a KASAN report on the debug kernel).  Every completion polled must
 * name one of the QPs made, and each QP's four must all arrive.
 */
#define RACE_QPS	300

struct poll_race {
	struct ibv_cq *cq;
	uint32_t qpn[RACE_QPS];
	int made;
	int stop;
	int polled, strangers;
};

static void *race_poller(void *arg)
{
	struct poll_race *r = arg;
	struct ibv_wc wc[8];
	int n, i, j, made, stop;

	do {
		stop = __atomic_load_n(&r->stop, __ATOMIC_ACQUIRE);
		n = ibv_poll_cq(r->cq, 8, wc);
		/* After the poll: a QP's number is stored before its WRs. */
		made = __atomic_load_n(&r->made, __ATOMIC_ACQUIRE);
		for (i = 0; i < n; i++) {
			for (j = 0; j < made && wc[i].qp_num != r->qpn[j]; j++)
				;
			r->strangers += j == made;
			r->polled++;
		}
	} while (n > 0 || !stop);
	return NULL;
}

static void poll_destroy_race(struct ibv_context *ctx, struct ibv_pd *pd)
{
	static char buf[64];
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp_attr e = { .qp_state = IBV_QPS_ERR };
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), 0 };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct poll_race r = { 0 };
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	pthread_t th;
	int i, j, ok, fails = 0;

	r.cq = ibv_create_cq(ctx, 4 * RACE_QPS, NULL, NULL, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ok = r.cq && mr && !pthread_create(&th, NULL, race_poller, &r);
	tap(ok, "poll/destroy race: a CQ polled through uverbs, a poller thread");
	if (!ok)
		goto out;
	sge.lkey = mr->lkey;
	qi.send_cq = qi.recv_cq = r.cq;
	for (i = 0; i < RACE_QPS; i++) {
		qp = ibv_create_qp(pd, &qi);
		if (!qp) {
			fails++;
			continue;
		}
		r.qpn[i] = qp->qp_num;
		__atomic_store_n(&r.made, i + 1, __ATOMIC_RELEASE);
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			fails++;
		for (j = 0; j < 4; j++)
			fails += !!ibv_post_recv(qp, &rwr, &rbad);
		/* Flushed now: four completions, then the QP goes. */
		fails += !!ibv_modify_qp(qp, &e, IBV_QP_STATE);
		fails += !!ibv_destroy_qp(qp);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	tap(!fails && r.polled == 4 * RACE_QPS && !r.strangers,
	    "poll/destroy race: %d QPs, %d of %d completions polled, each of "
	    "a QP made (%d not; %d calls failed)", RACE_QPS, r.polled,
	    4 * RACE_QPS, r.strangers, fails);
out:
	if (r.cq)
		ibv_destroy_cq(r.cq);
	if (mr)
		ibv_dereg_mr(mr);
}

/*
 * The QPs one CQ that uverbs polls serves at once: 1024 (each has its
 * ghost there, SROCE_CQ_MAX_GHOSTS); the next create fails with ENOMEM,
 * and once they are gone as many can be made again.
 */
static void ghost_cap(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp **qp = calloc(1100, sizeof(*qp));
	int i, n = 0, err = 0, again;

	qi.send_cq = qi.recv_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!qp || !qi.send_cq) {
		tap(0, "ghost cap: a CQ");
		goto out;
	}
	for (i = 0; i < 1100; i++) {
		errno = 0;
		qp[i] = ibv_create_qp(pd, &qi);
		if (!qp[i]) {
			err = errno;
			break;
		}
		n++;
	}
	tap(n == 1024 && err == ENOMEM,
	    "ghost cap: 1024 QPs on one CQ uverbs polls, the next ENOMEM (%d, %d)",
	    n, err);
	for (i = 0; i < n; i++)
		ibv_destroy_qp(qp[i]);
	for (i = 0, again = 0; i < 1024; i++) {
		qp[i] = ibv_create_qp(pd, &qi);
		again += !!qp[i];
	}
	tap(again == 1024, "ghost cap: once they are gone, 1024 again (%d)",
	    again);
	for (i = 0; i < 1024; i++)
		if (qp[i])
			ibv_destroy_qp(qp[i]);
out:
	if (qi.send_cq)
		ibv_destroy_cq(qi.send_cq);
	free(qp);
}

/* The next async event of @ctx within @ms ms in @ev (to ack): 0, or -1. */
static int async_event_of(struct ibv_context *ctx, int ms,
			  struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1 || ibv_get_async_event(ctx, ev))
		return -1;
	return 0;
}

/* The next async event of @ctx within @ms ms: its type, or -1. */
static int async_event(struct ibv_context *ctx, int ms)
{
	struct ibv_async_event ev;
	int type;

	if (async_event_of(ctx, ms, &ev))
		return -1;
	type = ev.event_type;
	ibv_ack_async_event(&ev);
	return type;
}

/*
 * Create SRQ: srq_limit is "irrelevant for ibv_create_srq" (its man page;
 * mlx5 ignores it), so a value above max_wr is no error and arms nothing;
 * max_sge 0 is granted 1 (as rdma_rxe), which a receive may then use.
 */
static void srq_create_attrs(struct ibv_pd *pd)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 0,
						  .srq_limit = 0xdeadbeef } };
	struct ibv_srq_attr qa = {};
	struct ibv_srq *srq;
	int err = -1;

	srq = ibv_create_srq(pd, &si);
	if (srq)
		err = ibv_query_srq(srq, &qa);
	tap(srq && !err && qa.srq_limit == 0 && qa.max_sge == 1 &&
	    si.attr.max_sge == 1 && qa.max_wr >= 16,
	    "an SRQ created with srq_limit 0xdeadbeef and max_sge 0: no limit armed, one SGE (%d, limit %u, max_sge %u/%u, max_wr %u)",
	    err, qa.srq_limit, qa.max_sge, si.attr.max_sge, qa.max_wr);
	if (srq)
		ibv_destroy_srq(srq);
}

/*
 * The SRQ limit (IBA 10.2.9.3): armed at 100 over 200 posted receives,
 * it fires once when fewer than 100 are left, not before, and is then
 * disarmed.  A mapped SRQ's receives reach the kernel 64 at a time: the
 * first message once fired the event at 63 left.
 */
static void srq_limit(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
		      union ibv_gid *gid)
{
	static char buf[64];
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 256,
						  .max_sge = 1 } };
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 128, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_srq_attr sa = { .srq_limit = 100 };
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), 0 };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc[16];
	int i, n, got = 0, ev, ev2;

	cq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	srq = ibv_create_srq(pd, &si);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (cq && srq && mr) {
		qi.send_cq = qi.recv_cq = cq;
		qi.srq = srq;
		a = ibv_create_qp(pd, &qi);
		qi.srq = NULL;
		b = ibv_create_qp(pd, &qi);
	}
	n = a && b && !to_rts_peer(a, b->qp_num, sgid, gid) &&
	    !to_rts_peer(b, a->qp_num, sgid, gid);
	sge.lkey = mr ? mr->lkey : 0;
	for (i = 0; n && i < 200; i++)
		n = !ibv_post_srq_recv(srq, &rwr, &rbad);
	n = n && !ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT);
	tap(n, "SRQ limit: 200 receives posted, the limit armed at 100");
	if (!n)
		goto out;

	/* Drain what earlier tests left: no event of theirs counts here. */
	while (async_event(ctx, 0) >= 0)
		;
	ibv_post_send(b, &wr, &bad);
	for (i = 0; i < 5000 && !got; i++) {
		got = ibv_poll_cq(cq, 1, wc) == 1 && wc[0].status == IBV_WC_SUCCESS;
		if (!got)
			usleep(1000);
	}
	ev = async_event(ctx, 500);
	tap(got && ev < 0,
	   "SRQ limit: one receive taken of 200, no limit event (%d)", ev);
	for (i = 0, got = 0; i < 100; i++)
		if (ibv_post_send(b, &wr, &bad))
			break;
	for (n = 0; n < 20000 && got < 100; n++) {
		int k = ibv_poll_cq(cq, 16, wc), j;

		for (j = 0; j < k; j++)
			got += wc[j].status == IBV_WC_SUCCESS;
		if (!k)
			usleep(1000);
	}
	ev = async_event(ctx, 3000);
	ev2 = async_event(ctx, 300);
	tap(got >= 100 && ev == IBV_EVENT_SRQ_LIMIT_REACHED && ev2 < 0,
	   "SRQ limit: 99 receives left, the event fires once (%d, %d)", ev,
	   ev2);
	sa.srq_limit = 100;
	n = ibv_query_srq(srq, &sa);
	tap(!n && sa.srq_limit == 0, "SRQ limit: disarmed after it (%d, %u)", n,
	   sa.srq_limit);
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (srq)
		ibv_destroy_srq(srq);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

/*
 * The async events within @ms ms: how many of @type for @qp; in @others
 * how many of another type for @qp, in @foreign (if not NULL) how many
 * for anything else.
 */
static int qp_events(struct ibv_context *ctx, int ms, struct ibv_qp *qp,
		     enum ibv_event_type type, int *others, int *foreign)
{
	struct ibv_async_event ev;
	int n = 0, f = 0;

	*others = 0;
	while (!async_event_of(ctx, ms, &ev)) {
		if (ev.element.qp == qp && ev.event_type == type)
			n++;
		else if (ev.element.qp == qp)
			++*others;
		else
			f++;
		ibv_ack_async_event(&ev);
	}
	if (foreign)
		*foreign = f;
	return n;
}

/*
 * @n SENDs from @from (every WR signaled), each received on the other QP
 * of @cq: how many of the 2 * @n completions came, successful.
 */
static int sends(struct ibv_qp *from, struct ibv_cq *cq, struct ibv_sge *sge,
		 int n)
{
	struct ibv_send_wr wr = { .sg_list = sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	struct ibv_wc wc;
	int i, k, got = 0;

	for (i = 0; i < n; i++) {
		if (ibv_post_send(from, &wr, &bad))
			break;
		for (k = 0; k < 5000 && got < 2 * (i + 1); k++) {
			if (ibv_poll_cq(cq, 1, &wc) == 1)
				got += wc.status == IBV_WC_SUCCESS;
			else
				usleep(1000);
		}
	}
	return got;
}

/* @n receives on @qp. */
static int recvs(struct ibv_qp *qp, struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr rwr = { .sg_list = sge, .num_sge = 1 }, *bad;

	while (n--)
		if (ibv_post_recv(qp, &rwr, &bad))
			return -1;
	return 0;
}

/* RTR to RTS, as to_rts_rd() does it. */
static int rtr_to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr qa = {
		.qp_state = IBV_QPS_RTS, .sq_psn = 1, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1,
	};

	return ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * The responder's async events (IBA 11.6.3.1).  Communication Established:
 * a QP in RTR that receives its first valid request raises
 * IBV_EVENT_COMM_EST, once until RESET (a CM whose RTU was lost moves the
 * QP to RTS on it); a QP whose first request comes in RTS raises none.
 * Local Access Violation: an RDMA WRITE with an R_Key the responder does
 * not know consumes no receive WQE, so the responder's consumer hears of
 * its QP's move to Error from IBV_EVENT_QP_ACCESS_ERR (rd_resources()
 * checks IBV_EVENT_QP_REQ_ERR).
 */
static void resp_events(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
			union ibv_gid *gid)
{
	static char buf[64];
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC, .sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), 0 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE }, *bad;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *a = NULL, *b = NULL;
	int n, got, est_a, est_b, oth_a, oth_b, st;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;

	cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	if (cq && mr) {
		qi.send_cq = qi.recv_cq = cq;
		a = ibv_create_qp(pd, &qi);
		b = ibv_create_qp(pd, &qi);
	}
	sge.lkey = mr ? mr->lkey : 0;
	n = a && b && !to_rts_peer(a, b->qp_num, sgid, gid) &&
	    !to_rtr_rd(b, a->qp_num, sgid, gid, 1) && !recvs(b, &sge, 4) &&
	    !recvs(a, &sge, 1);
	tap(n, "COMM_EST: a QP in RTS and its peer in RTR with 4 receives");
	if (!n)
		goto out;
	while (async_event(ctx, 0) >= 0)
		;
	/* Two SENDs to b in RTR, then two once it is in RTS, one to a. */
	got = sends(a, cq, &sge, 2);
	est_b = qp_events(ctx, 300, b, IBV_EVENT_COMM_EST, &oth_b, &n);
	tap(got == 4 && est_b == 1 && !oth_b && !n,
	    "COMM_EST: once for the QP in RTR, of 2 SENDs (%d completions, %d COMM_EST, %d others, %d for a)",
	    got, est_b, oth_b, n);
	got = rtr_to_rts(b) ? 0 : sends(a, cq, &sge, 2);
	got += sends(b, cq, &sge, 1);
	est_a = qp_events(ctx, 300, a, IBV_EVENT_COMM_EST, &oth_a, &n);
	tap(got == 6 && !est_a && !oth_a && !n,
	    "COMM_EST: none for 2 more SENDs in RTS, none for a QP whose first request came in RTS (%d completions, %d, %d others, %d for b)",
	    got, est_a, oth_a, n);

	/*
	 * Query QP reports the PSNs in use, as rdma_rxe and NICs do: a sent
	 * 4 SENDs from PSN 1, b received them and sent 1; and the path
	 * migration state a modify set (RoCE has no alternate path).
	 */
	{
		struct ibv_qp_attr qa_a = {}, qa_b = {};
		struct ibv_qp_init_attr qia;
		int e1, e2, e3;

		qa.path_mig_state = IBV_MIG_REARM;
		e1 = ibv_modify_qp(a, &qa, IBV_QP_PATH_MIG_STATE);
		e2 = ibv_query_qp(a, &qa_a, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN |
				  IBV_QP_PATH_MIG_STATE, &qia);
		e3 = ibv_query_qp(b, &qa_b, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
				  &qia);
		tap(!e1 && !e2 && !e3 && qa_a.sq_psn == 5 && qa_b.rq_psn == 5 &&
		    qa_b.sq_psn == 2 && qa_a.rq_psn == 2 &&
		    qa_a.path_mig_state == IBV_MIG_REARM,
		    "query_qp: the next PSNs (a sq %u rq %u, b sq %u rq %u: 5 2 2 5) and the path migration state set (%d, %d %d %d)",
		    qa_a.sq_psn, qa_a.rq_psn, qa_b.sq_psn, qa_b.rq_psn,
		    qa_a.path_mig_state, e1, e2, e3);
	}

	/* RESET starts a new connection: the event comes again. */
	n = !ibv_modify_qp(a, &qa, IBV_QP_STATE) &&
	    !ibv_modify_qp(b, &qa, IBV_QP_STATE) &&
	    !to_rts_peer(a, b->qp_num, sgid, gid) &&
	    !to_rtr_rd(b, a->qp_num, sgid, gid, 1) && !recvs(b, &sge, 1);
	got = n ? sends(a, cq, &sge, 1) : 0;
	est_b = qp_events(ctx, 300, b, IBV_EVENT_COMM_EST, &oth_b, NULL);
	tap(got == 2 && est_b == 1 && !oth_b,
	    "COMM_EST: once more after RESET, RTR again (%d completions, %d COMM_EST, %d others)",
	    got, est_b, oth_b);

	/* An RDMA WRITE with an R_Key of nothing, to b (still in RTR). */
	wr.wr.rdma.remote_addr = (uintptr_t)buf;
	wr.wr.rdma.rkey = mr->rkey ^ 0x5a5a5a00;
	st = -1;
	if (!ibv_post_send(a, &wr, &bad) && poll_wc(cq, &wc))
		st = wc.status;
	n = qp_events(ctx, 1000, b, IBV_EVENT_QP_ACCESS_ERR, &oth_b, NULL);
	memset(&qa, 0, sizeof(qa));
	ibv_query_qp(b, &qa, IBV_QP_STATE, &qi);
	tap(st == IBV_WC_REM_ACCESS_ERR && n == 1 && !oth_b &&
	    qa.qp_state == IBV_QPS_ERR,
	    "a WRITE with an unknown R_Key: remote access error, the responder in Error with IBV_EVENT_QP_ACCESS_ERR (%s, %d events, %d others, state %d)",
	    st >= 0 ? ibv_wc_status_str(st) : "none", n, oth_b,
	    qa.qp_state);
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
}

/*
 * Responder resources (IBA 9.7.7.1): a responder given max_qp_rd_atom of
 * them answers as many READs posted at once, and one more is refused at
 * RTR; a responder given none answers a READ with NAK Invalid Request, as
 * rdma_rxe does.
 */
static void rd_resources(struct ibv_pd *pd, const struct ibv_device_attr *da,
			 int sgid, union ibv_gid *gid)
{
	int max = da->max_qp_rd_atom, i, n = 0, bad_data = 0;
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = max, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	uint64_t *buf = calloc(2 * max, sizeof(*buf));
	struct ibv_send_wr *wr = calloc(max, sizeof(*wr)), *bad;
	struct ibv_sge *sge = calloc(max, sizeof(*sge));
	struct ibv_qp *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int err;

	cq = ibv_create_cq(pd->context, 2 * max, NULL, NULL, 0);
	mr = buf ? ibv_reg_mr(pd, buf, 2 * max * sizeof(*buf),
			      IBV_ACCESS_LOCAL_WRITE |
			      IBV_ACCESS_REMOTE_READ) : NULL;
	if (cq && mr && wr && sge) {
		qi.send_cq = cq;
		qi.recv_cq = cq;
		a = ibv_create_qp(pd, &qi);
		b = ibv_create_qp(pd, &qi);
	}
	if (!a || !b || max < 1 || da->max_qp_init_rd_atom < max) {
		tap(0, "responder resources: QPs, CQ and MR (max_qp_rd_atom %d, max_qp_init_rd_atom %d)",
		    max, da->max_qp_init_rd_atom);
		goto out;
	}
	err = to_rts_rd(b, a->qp_num, sgid, gid, 1, max + 1);
	tap(err == EINVAL, "RTR with max_qp_rd_atom + 1 = %d responder resources fails with EINVAL (%d)",
	    max + 1, err);
	c = ibv_create_qp(pd, &qi);
	err = c ? to_rts_rd(c, a->qp_num, sgid, gid,
			    da->max_qp_init_rd_atom + 1, 1) : -1;
	tap(err == EINVAL, "RTS with max_qp_init_rd_atom + 1 = %d reads outstanding fails with EINVAL (%d)",
	    da->max_qp_init_rd_atom + 1, err);
	if (c)
		ibv_destroy_qp(c);
	err = to_rts_rd(a, b->qp_num, sgid, gid, max, 1) ?:
	      to_rts_rd(b, a->qp_num, sgid, gid, 1, max);
	tap(!err, "RTS with %d reads outstanding and %d responder resources (%d)",
	    max, max, err);
	for (i = 0; i < max; i++) {
		buf[i] = 0x5a00000000000000ull + i;
		sge[i] = (struct ibv_sge){ (uintptr_t)&buf[max + i], 8,
					   mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma = { (uintptr_t)&buf[i], mr->rkey },
			.next = i + 1 < max ? &wr[i + 1] : NULL,
		};
	}
	if (!err && !ibv_post_send(a, wr, &bad))
		for (n = 0; n < max && poll_wc(cq, &wc) &&
		     wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)n; n++)
			;
	for (i = 0; i < max; i++)
		bad_data += buf[max + i] != buf[i];
	tap(n == max && !bad_data,
	    "%d READs posted at once complete in order, data right (%d completed, %d wrong)",
	    max, n, bad_data);

	c = ibv_create_qp(pd, &qi);
	d = ibv_create_qp(pd, &qi);
	err = c && d ? to_rts_rd(c, d->qp_num, sgid, gid, 1, 1) ?:
		       to_rts_rd(d, c->qp_num, sgid, gid, 1, 0) : -1;
	wr[0].next = NULL;
	n = -1;
	if (!err && !ibv_post_send(c, wr, &bad) && poll_wc(cq, &wc))
		n = wc.status;
	tap(n == IBV_WC_REM_INV_REQ_ERR,
	    "a READ to a responder without resources: remote invalid request (%d: %s)",
	    n, n >= 0 ? ibv_wc_status_str(n) : "none");
	/* It consumed no receive WQE: IBA 11.6.3.1 says why d is in Error. */
	n = d ? qp_events(pd->context, 1000, d, IBV_EVENT_QP_REQ_ERR, &i,
			  NULL) : 0;
	tap(n == 1 && !i,
	    "... and the responder's consumer gets IBV_EVENT_QP_REQ_ERR (%d, %d others)",
	    n, i);
	/* Resources before the R_Key (rdma_rxe's order): a bad one too. */
	if (c)
		ibv_destroy_qp(c);
	if (d)
		ibv_destroy_qp(d);
	c = ibv_create_qp(pd, &qi);
	d = ibv_create_qp(pd, &qi);
	err = c && d ? to_rts_rd(c, d->qp_num, sgid, gid, 1, 1) ?:
		       to_rts_rd(d, c->qp_num, sgid, gid, 1, 0) : -1;
	wr[0].wr.rdma.rkey = mr->rkey ^ 0x100;
	n = -1;
	if (!err && !ibv_post_send(c, wr, &bad) && poll_wc(cq, &wc))
		n = wc.status;
	wr[0].wr.rdma.rkey = mr->rkey;
	tap(n == IBV_WC_REM_INV_REQ_ERR,
	    "... and with a bad R_Key: remote invalid request still (%d: %s)",
	    n, n >= 0 ? ibv_wc_status_str(n) : "none");
	if (d)	/* its event, not for a later check to find */
		qp_events(pd->context, 1000, d, IBV_EVENT_QP_REQ_ERR, &i, NULL);

	/* RESET forgets the connection: no AV, no peer, no resources. */
	{
		struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
		struct ibv_qp_init_attr qia;

		err = ibv_modify_qp(a, &qa, IBV_QP_STATE);
		memset(&qa, 0xff, sizeof(qa));
		err = err ?: ibv_query_qp(a, &qa, IBV_QP_STATE | IBV_QP_AV |
					  IBV_QP_DEST_QPN |
					  IBV_QP_MAX_DEST_RD_ATOMIC, &qia);
		tap(!err && qa.qp_state == IBV_QPS_RESET &&
		    !qa.ah_attr.is_global && !qa.dest_qp_num &&
		    !qa.max_dest_rd_atomic,
		    "query_qp after RESET shows no AV, peer or responder resources (%d: global %d, dest_qp %u, %u)",
		    err, qa.ah_attr.is_global, qa.dest_qp_num,
		    qa.max_dest_rd_atomic);
	}
out:
	if (d)
		ibv_destroy_qp(d);
	if (c)
		ibv_destroy_qp(c);
	if (b)
		ibv_destroy_qp(b);
	if (a)
		ibv_destroy_qp(a);
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	free(sge);
	free(wr);
	free(buf);
}

/*
 * max_mw windows can be allocated (the device has none of its own), the
 * next one fails with ENOMEM, and after one is freed one more can be.
 */
static void mw_fill(struct ibv_pd *pd, int max)
{
	struct ibv_mw **mw = calloc(max + 1, sizeof(*mw));
	int n = 0, err = 0;

	if (!mw) {
		tap(0, "room for max_mw windows");
		return;
	}
	for (n = 0; n <= max; n++) {
		errno = 0;
		mw[n] = ibv_alloc_mw(pd, n % 2 ? IBV_MW_TYPE_2 : IBV_MW_TYPE_1);
		if (!mw[n]) {
			err = errno;
			break;
		}
	}
	tap(n == max && err == ENOMEM,
	   "%d windows made, max_mw %d; the next fails with ENOMEM (%d)", n,
	   max, err);
	if (n) {
		ibv_dealloc_mw(mw[n - 1]);
		mw[n - 1] = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
		tap(mw[n - 1] != NULL, "one freed, one more made (%d)", errno);
		if (!mw[n - 1])
			n--;
	}
	while (n--)
		ibv_dealloc_mw(mw[n]);
	free(mw);
}

/* One signaled ibv_wr_atomic_write(): its completion status, or -1. */
static int awrite_status(struct ibv_qp_ex *ax, struct ibv_cq *cq,
			 uint64_t wr_id, uint32_t rkey, uint64_t addr,
			 const uint64_t *v)
{
	struct ibv_wc wc;

	ibv_wr_start(ax);
	ax->wr_id = wr_id;
	ax->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(ax, rkey, addr, v);
	if (ibv_wr_complete(ax) || !poll_wc(cq, &wc) || wc.wr_id != wr_id)
		return -1;
	return wc.status;
}

/*
 * RDMA Atomic Write (IBA 1.5, A19.4) through ibv_wr_atomic_write() and a
 * posted IBV_WR_ATOMIC_WRITE: 8 bytes land at once; a misaligned target is
 * an invalid request, an MR without remote write a remote access error, a
 * responder without resources an invalid request.  Over the uverbs
 * commands (@mapped 0) it is refused: the command has no such opcode.
 */
static void atomic_write(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
			 union ibv_gid *gid, int mapped)
{
	static uint64_t target[4], src = 0x0123456789abcdefull;
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE |
				  IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct ibv_mr *tmr, *romr, *smr;
	struct ibv_cq *cq;
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_qp_ex *ax;
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	uint64_t v = 0x1122334455667788ull;
	int rc, st, pass;

	tmr = ibv_reg_mr(pd, target, sizeof(target), IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE);
	romr = ibv_reg_mr(pd, target, sizeof(target), IBV_ACCESS_REMOTE_READ);
	smr = ibv_reg_mr(pd, &src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	for (pass = 0; pass < (mapped ? 3 : 1) && tmr && romr && smr && cq;
	     pass++) {
		xa.send_cq = xa.recv_cq = cq;
		a = ibv_create_qp_ex(ctx, &xa);
		b = ibv_create_qp_ex(ctx, &xa);
		/* Pass 2: b has no responder resources (max_dest_rd_atomic). */
		if (!a || !b || to_rts_peer(a, b->qp_num, sgid, gid) ||
		    to_rts_rd(b, a->qp_num, sgid, gid, 1, pass == 2 ? 0 : 1))
			break;
		ax = ibv_qp_to_qp_ex(a);
		if (pass == 0) {
			ibv_wr_start(ax);
			ax->wr_id = 1;
			ax->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_atomic_write(ax, tmr->rkey,
					    (uintptr_t)&target[1], &v);
			rc = ibv_wr_complete(ax);
			if (!mapped) {
				tap(rc != 0,
				   "RDMA Atomic Write over the uverbs commands is refused (%d)",
				   rc);
				break;
			}
			st = !rc && poll_wc(cq, &wc) && wc.wr_id == 1 ?
			     (int)wc.status : -1;
			tap(st == IBV_WC_SUCCESS &&
			   wc.opcode == IBV_WC_ATOMIC_WRITE &&
			   target[1] == v && !target[0] && !target[2],
			   "ibv_wr_atomic_write: 8 bytes land, IBV_WC_ATOMIC_WRITE (%d, %d)",
			   rc, st);
			sge = (struct ibv_sge){ (uintptr_t)&src, 8, smr->lkey };
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 2;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_ATOMIC_WRITE;
			wr.wr.rdma.remote_addr = (uintptr_t)&target[2];
			wr.wr.rdma.rkey = tmr->rkey;
			st = post_status(a, cq, &wr, NULL);
			tap(st == IBV_WC_SUCCESS && target[2] == src,
			   "a posted IBV_WR_ATOMIC_WRITE (its SGE's 8 bytes) (%d)",
			   st);
			st = awrite_status(ax, cq, 3, tmr->rkey,
					   (uintptr_t)&target[3] - 4, &v);
			tap(st == IBV_WC_REM_INV_REQ_ERR && !target[3],
			   "a misaligned target: IBV_WC_REM_INV_REQ_ERR (%d)", st);
		} else if (pass == 2) {
			/*
			 * It takes a responder resource, as a READ does
			 * (IBA 1.5, A19.4.2; rdma_rxe 6.2+).
			 */
			st = awrite_status(ax, cq, 5, tmr->rkey,
					   (uintptr_t)&target[0], &v);
			tap(st == IBV_WC_REM_INV_REQ_ERR && !target[0],
			   "to a responder without resources: IBV_WC_REM_INV_REQ_ERR (%d)",
			   st);
		} else {
			st = awrite_status(ax, cq, 4, romr->rkey,
					   (uintptr_t)&target[0], &v);
			tap(st == IBV_WC_REM_ACCESS_ERR && !target[0],
			   "an MR without remote write: IBV_WC_REM_ACCESS_ERR (%d)",
			   st);
		}
		ibv_destroy_qp(a);
		ibv_destroy_qp(b);
		a = b = NULL;
		while (ibv_poll_cq(cq, 1, &wc) > 0)
			;	/* the flushes of the failed pair */
	}
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (cq)
		ibv_destroy_cq(cq);
	if (smr)
		ibv_dereg_mr(smr);
	if (romr)
		ibv_dereg_mr(romr);
	if (tmr)
		ibv_dereg_mr(tmr);
}

static int sqe_to_rts(struct ibv_qp *qp, uint32_t dqpn, int sgid,
		      union ibv_gid *gid);

/*
 * Completions on @cq: polled until @want came or @ms passed (a debug
 * kernel under emulation is slow), then what else is there at once.
 */
static int wc_count(struct ibv_cq *cq, int want, int ms)
{
	struct ibv_wc wc[8];
	int n = 0, got, t;

	for (t = 0; n < want && t < ms; t++) {
		got = ibv_poll_cq(cq, 8, wc);
		if (got > 0)
			n += got;
		else
			usleep(1000);
	}
	while ((got = ibv_poll_cq(cq, 8, wc)) > 0)
		n += got;
	return n;
}

/*
 * Posting as ibv_post_send(3) and ibv_wr_post(3) tell: a list posts the
 * WRs before the first bad one, *bad_wr is that one; an ibv_wr_* batch
 * goes whole or not at all; a bad WR is refused with EINVAL and never
 * reaches libibverbs' own copying (a UD WR without an AH, num_sge -1),
 * on the mapped SQ and over the commands alike; a QP type that cannot
 * carry a send op is not created with it.
 */
static void post_lists(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
		       union ibv_gid *gid)
{
	static const struct {
		enum ibv_qp_type type;
		uint64_t ops;
		int ok;
		const char *what;
	} types[] = {
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_WRITE, 1, "UC, RDMA WRITE" },
		{ IBV_QPT_UC, IBV_QP_EX_WITH_RDMA_READ, 0, "UC, RDMA READ" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_SEND_WITH_IMM, 1, "UD, SEND_WITH_IMM" },
		{ IBV_QPT_UD, IBV_QP_EX_WITH_RDMA_WRITE, 0, "UD, RDMA WRITE" },
	};
	static char buf[4][64];
	struct ibv_qp_init_attr_ex xa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
	};
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_recv_wr rwr[2], *rbad = NULL;
	struct ibv_qp *a = NULL, *b = NULL, *u = NULL;
	struct ibv_qp_init_attr ia;
	struct ibv_sge sge[34];
	struct ibv_qp_attr qa;
	struct ibv_qp_ex *ax;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	unsigned int i, max_sge;
	int rc, n;

	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!mr || !cq) {
		tap(0, "post lists: an MR and a CQ");
		goto out;
	}
	xa.send_cq = xa.recv_cq = cq;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct ibv_qp *q;

		xa.qp_type = types[i].type;
		xa.send_ops_flags = IBV_QP_EX_WITH_SEND | types[i].ops;
		errno = 0;
		q = ibv_create_qp_ex(ctx, &xa);
		tap(types[i].ok ? q != NULL : !q && errno == EOPNOTSUPP,
		   "ibv_create_qp_ex, send ops %s: %s (%d)", types[i].what,
		   types[i].ok ? "created" : "EOPNOTSUPP", errno);
		if (q)
			ibv_destroy_qp(q);
	}

	xa.qp_type = IBV_QPT_RC;
	xa.send_ops_flags = IBV_QP_EX_WITH_SEND;
	a = ibv_create_qp_ex(ctx, &xa);
	b = ibv_create_qp_ex(ctx, &xa);
	if (!a || !b || to_rts_peer(a, b->qp_num, sgid, gid) ||
	    to_rts_peer(b, a->qp_num, sgid, gid) ||
	    ibv_query_qp(a, &qa, IBV_QP_CAP, &ia)) {
		tap(0, "post lists: an RC pair in RTS");
		goto out;
	}
	max_sge = qa.cap.max_send_sge;
	for (i = 0; i < 34; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf[i % 4], 16, mr->lkey };
	for (i = 0; i < 6; i++) {
		struct ibv_recv_wr r = { .wr_id = 100 + i, .sg_list = sge,
					 .num_sge = 1 };

		if (ibv_post_recv(b, &r, &rbad))
			break;
	}

	/* An ibv_wr_* batch whose last WR has too many SGEs: none goes. */
	ax = ibv_qp_to_qp_ex(a);
	ibv_wr_start(ax);
	ax->wr_flags = IBV_SEND_SIGNALED;
	ax->wr_id = 1;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, mr->lkey, (uintptr_t)buf[0], 16);
	ax->wr_id = 2;
	ibv_wr_send(ax);
	ibv_wr_set_sge_list(ax, max_sge + 1 <= 34 ? max_sge + 1 : 34, sge);
	rc = ibv_wr_complete(ax);
	n = wc_count(cq, 1, 300);	/* a WR sent would complete by then */
	tap(rc == EINVAL && n == 0,
	   "ibv_wr_complete with a bad last WR: EINVAL, nothing posted (%d, %d completions)",
	   rc, n);
	ibv_wr_start(ax);
	ax->wr_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < 2; i++) {
		ax->wr_id = 3 + i;
		ibv_wr_send(ax);
		ibv_wr_set_sge(ax, mr->lkey, (uintptr_t)buf[0], 16);
	}
	rc = ibv_wr_complete(ax);
	n = wc_count(cq, 4, 10000);
	tap(rc == 0 && n == 4,
	   "then a good batch of 2: both sent and received (%d, %d completions)",
	   rc, n);

	/* ibv_post_send: a good WR, then num_sge -1: the first goes. */
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 2; i++) {
		wr[i].wr_id = 10 + i;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].sg_list = sge;
		wr[i].num_sge = 1;
		wr[i].next = i ? NULL : &wr[1];
	}
	wr[1].num_sge = -1;
	rc = ibv_post_send(a, wr, &bad);
	n = wc_count(cq, 2, 10000);
	tap(rc == EINVAL && bad == &wr[1] && n == 2 && wr[0].next == &wr[1],
	   "ibv_post_send of a good WR and one of num_sge -1: EINVAL, bad_wr the second, the first sent (%d, %d completions)",
	   rc, n);

	/* ibv_post_recv: a good WR, then one over max_recv_sge. */
	memset(rwr, 0, sizeof(rwr));
	rwr[0] = (struct ibv_recv_wr){ .wr_id = 20, .sg_list = sge,
				       .num_sge = 1, .next = &rwr[1] };
	rwr[1] = (struct ibv_recv_wr){ .wr_id = 21, .sg_list = sge,
				       .num_sge = 33 };
	rc = ibv_post_recv(b, rwr, &rbad);
	tap(rc == EINVAL && rbad == &rwr[1] && rwr[0].next == &rwr[1],
	   "ibv_post_recv of a good WR and one of 33 SGEs: EINVAL, bad_wr the second (%d)",
	   rc);

	/* A UD WR without an address handle: EINVAL, no crash. */
	xa.qp_type = IBV_QPT_UD;
	u = ibv_create_qp_ex(ctx, &xa);
	if (!u || sqe_to_rts(u, 0, sgid, gid)) {
		tap(0, "post lists: a UD QP in RTS");
		goto out;
	}
	memset(wr, 0, sizeof(wr));
	wr[0] = (struct ibv_send_wr){ .wr_id = 30, .opcode = IBV_WR_SEND,
				      .sg_list = sge, .num_sge = 1,
				      .send_flags = IBV_SEND_SIGNALED };
	wr[0].wr.ud.remote_qpn = u->qp_num;
	wr[0].wr.ud.remote_qkey = 0x11111111;
	rc = ibv_post_send(u, wr, &bad);
	tap(rc == EINVAL && bad == &wr[0],
	   "ibv_post_send on UD without an AH: EINVAL (%d)", rc);
	ax = ibv_qp_to_qp_ex(u);
	ibv_wr_start(ax);
	ax->wr_id = 31;
	ibv_wr_send(ax);
	ibv_wr_set_sge(ax, mr->lkey, (uintptr_t)buf[0], 16);
	rc = ibv_wr_complete(ax);
	tap(rc == EINVAL, "ibv_wr_complete on UD without ibv_wr_set_ud_addr: EINVAL (%d)",
	   rc);
	wc_count(cq, 0, 0);
out:
	if (u)
		ibv_destroy_qp(u);
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (cq) {
		wc_count(cq, 0, 0);
		ibv_destroy_cq(cq);
	}
	if (mr)
		ibv_dereg_mr(mr);
}

/*
 * Memory windows (IBA 10.6.7): type 1 bound by ibv_bind_mw(), type 2B by
 * a posted IBV_WR_BIND_MW and by ibv_wr_bind_mw(); the range and rights
 * of a binding, a type 2B window usable through its own QP only, local
 * and remote invalidation, unbinding, the binds IBA forbids, an MR that
 * cannot go while a window is bound to it, deallocation while bound.
 * @mapped: without the mapped SQ (SROCE_MAPPED=0) a bind is refused.
 */
static void windows(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
		    union ibv_gid *gid, int mapped)
{
	static char src[4096], w[8192];
	struct ibv_qp_init_attr_ex xa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_BIND_MW |
				  IBV_QP_EX_WITH_LOCAL_INV |
				  IBV_QP_EX_WITH_SEND,
	};
	struct ibv_mw *mw1 = NULL, *mw2 = NULL, *mw3 = NULL;
	struct ibv_mr *smr, *wmr, *nobind, *ro;
	struct ibv_cq *cq = NULL, *tcq = NULL;
	struct ibv_qp *a = NULL, *b = NULL, *c = NULL;
	struct ibv_qp_ex *bx;
	struct ibv_mw_bind mb = { .wr_id = 1, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw_bind_info bi;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr = { .wr_id = 30, .sg_list = &sge,
				   .num_sge = 1 }, *rbad;
	struct ibv_wc wc, wc2;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	enum ibv_wc_opcode op = 0;
	uint32_t old, rkey2, rkey3;
	int rc, st;

	smr = ibv_reg_mr(pd, src, sizeof(src), IBV_ACCESS_LOCAL_WRITE);
	wmr = ibv_reg_mr(pd, w, sizeof(w), IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_MW_BIND);
	nobind = ibv_reg_mr(pd, w, sizeof(w), IBV_ACCESS_LOCAL_WRITE);
	ro = ibv_reg_mr(pd, w, sizeof(w), IBV_ACCESS_MW_BIND);
	mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	mw3 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	tap(smr && wmr && nobind && ro && mw1 && mw2 && mw3 &&
	   mw1->type == IBV_MW_TYPE_1 && mw2->type == IBV_MW_TYPE_2 &&
	   mw1->rkey != mw2->rkey,
	   "ibv_alloc_mw of type 1 and type 2, MRs with IBV_ACCESS_MW_BIND (%d)",
	   errno);
	errno = 0;
	tap(!ibv_alloc_mw(pd, 3) && errno == EINVAL,
	   "ibv_alloc_mw of type 3 is refused (%d)", errno);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	tcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	xa.send_cq = xa.recv_cq = cq;
	a = cq ? ibv_create_qp_ex(ctx, &xa) : NULL;
	b = cq ? ibv_create_qp_ex(ctx, &xa) : NULL;
	tap(a && b && !to_rts_peer(a, b->qp_num, sgid, gid) &&
	   !to_rts_peer(b, a->qp_num, sgid, gid),
	   "two RC QPs with BIND_MW among their send ops, connected");
	if (!smr || !wmr || !nobind || !ro || !mw1 || !mw2 || !mw3 || !a ||
	    !b || !tcq)
		goto out;
	bx = ibv_qp_to_qp_ex(b);
	memset(src, 0x5a, sizeof(src));

	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, mw1->rkey,
			  w + 1024, 64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "a WRITE through an unbound window fails (%d)", st);
	mb.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)w + 1024, .length = 1024,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	if (!mapped) {
		rc = ibv_bind_mw(b, mw1, &mb);
		tap(rc == EOPNOTSUPP,
		   "ibv_bind_mw over the uverbs commands: EOPNOTSUPP (%d)", rc);
		goto out;
	}

	/* Type 1: ibv_bind_mw. */
	old = mw1->rkey;
	rc = ibv_bind_mw(b, mw1, &mb);
	st = !rc && poll_wc(cq, &wc) && wc.wr_id == 1 ? (int)wc.status : -1;
	tap(!rc && st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW &&
	   mw1->rkey != old && (mw1->rkey >> 8) == (old >> 8),
	   "type 1: ibv_bind_mw completes (IBV_WC_BIND_MW), new key byte (%d, %d)",
	   rc, st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, mw1->rkey,
			  w + 1024, 512);
	tap(st == IBV_WC_SUCCESS && w[1024] == 0x5a && w[1535] == 0x5a &&
	   !w[1536] && !w[1023],
	   "type 1: a WRITE through it lands in its range (%d)", st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, mw1->rkey,
			  w + 1536, 1024);
	tap(st == IBV_WC_REM_ACCESS_ERR && !w[1536],
	   "type 1: a WRITE across its end fails (%d)", st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, wmr->rkey,
			  w + 1024, 64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "the MR's own rkey gives no remote access (%d)", st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, old, w + 1024, 64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "the window's rkey before the bind no longer works (%d)", st);
	memset(src, 0, 64);
	st = rdma_status(pd, tcq, sgid, gid, IBV_WR_RDMA_READ, smr->lkey, src,
			 mw1->rkey, (uintptr_t)w + 1024, 64);
	tap(st == IBV_WC_SUCCESS && src[0] == 0x5a && src[63] == 0x5a,
	   "type 1: a READ through it (%d)", st);
	memset(src, 0x5a, sizeof(src));
	rc = ibv_dereg_mr(wmr);
	tap(rc == EBUSY, "ibv_dereg_mr of an MR with a window bound: EBUSY (%d)",
	   rc);
	rc = ibv_rereg_mr(wmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE);
	tap(rc == IBV_REREG_MR_ERR_CMD,
	   "ibv_rereg_mr of an MR with a window bound is refused (%d)", rc);
	rc = ibv_bind_mw(b, mw2, &mb);
	tap(rc == EINVAL, "ibv_bind_mw of a type 2 window: EINVAL (%d)", rc);

	/* Type 2B: a posted IBV_WR_BIND_MW, then ibv_wr_bind_mw. */
	rkey2 = ibv_inc_rkey(mw2->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = rkey2;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)w + 4096, .length = 2048,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	st = post_status(b, cq, &wr, &op);
	tap(st == IBV_WC_SUCCESS && op == IBV_WC_BIND_MW,
	   "type 2: a posted IBV_WR_BIND_MW completes (%d)", st);
	sge = (struct ibv_sge){ (uintptr_t)src, 200, smr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)w + 4096;
	wr.wr.rdma.rkey = rkey2;
	st = post_status(a, cq, &wr, NULL);
	tap(st == IBV_WC_SUCCESS && w[4096] == 0x5a && w[4295] == 0x5a &&
	   !w[4296], "type 2: a WRITE to the QP that bound it (%d)", st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, rkey2, w + 4096,
			  64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "type 2: a WRITE to another QP of the PD fails (%d)", st);
	ibv_wr_start(bx);
	bx->wr_id = 4;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(bx, rkey2);
	rc = ibv_wr_complete(bx);
	st = !rc && poll_wc(cq, &wc) && wc.wr_id == 4 ? (int)wc.status : -1;
	tap(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
	   "type 2: LOCAL_INV of it (%d, %d)", rc, st);
	rkey3 = ibv_inc_rkey(rkey2);
	bi = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)w + 4096, .length = 2048,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	ibv_wr_start(bx);
	bx->wr_id = 5;
	bx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_bind_mw(bx, mw2, rkey3, &bi);
	rc = ibv_wr_complete(bx);
	st = !rc && poll_wc(cq, &wc) && wc.wr_id == 5 ? (int)wc.status : -1;
	tap(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
	   "type 2: bound again after the invalidation, by ibv_wr_bind_mw (%d, %d)",
	   rc, st);

	/* Unbinding a type 1 window, and binds IBA forbids. */
	mb.bind_info = (struct ibv_mw_bind_info){};
	mb.wr_id = 6;
	rc = ibv_bind_mw(b, mw1, &mb);
	st = !rc && poll_wc(cq, &wc) && wc.wr_id == 6 ? (int)wc.status : -1;
	tap(st == IBV_WC_SUCCESS, "type 1: a bind of length 0 unbinds (%d, %d)",
	   rc, st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, mw1->rkey,
			  w + 1024, 64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "type 1: a WRITE after the unbind fails (%d)", st);
	mb.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)w, .length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	mb.wr_id = 7;
	rc = ibv_bind_mw(b, mw1, &mb);
	st = !rc && poll_wc(cq, &wc) && wc.wr_id == 7 ? (int)wc.status : -1;
	tap(st == IBV_WC_SUCCESS, "type 1: bound again (%d, %d)", rc, st);
	bi = (struct ibv_mw_bind_info){
		.mr = nobind, .addr = (uintptr_t)w, .length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ,
	};
	st = bind_status(pd, tcq, sgid, gid, mw3, &bi);
	tap(st == IBV_WC_MW_BIND_ERR,
	   "a bind to an MR without IBV_ACCESS_MW_BIND: IBV_WC_MW_BIND_ERR (%d)",
	   st);
	bi.mr = wmr;
	bi.length = sizeof(w) + 1;
	st = bind_status(pd, tcq, sgid, gid, mw3, &bi);
	tap(st == IBV_WC_MW_BIND_ERR,
	   "a bind beyond the MR's end: IBV_WC_MW_BIND_ERR (%d)", st);
	bi.mr = ro;
	bi.length = 64;
	bi.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	st = bind_status(pd, tcq, sgid, gid, mw3, &bi);
	tap(st == IBV_WC_MW_BIND_ERR,
	   "remote write through an MR without local write: IBV_WC_MW_BIND_ERR (%d)",
	   st);
	bi.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	st = bind_status(pd, tcq, sgid, gid, mw3, &bi);
	tap(st == IBV_WC_SUCCESS, "remote read through it is fine (%d)", st);
	/* Local write is the MR's right: a bind may name it, it is ignored. */
	bi.mw_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE;
	st = bind_status(pd, tcq, sgid, gid, mw3, &bi);
	tap(st == IBV_WC_SUCCESS,
	   "local write among a window's rights is ignored, as by RoCE NICs (%d)",
	   st);
	st = write_status(pd, tcq, sgid, gid, smr->lkey, src, mw3->rkey, w, 64);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "and the window gives no remote write (%d)", st);

	/* Remote invalidation: SEND_WITH_INV names the type 2 window. */
	sge = (struct ibv_sge){ (uintptr_t)src + 2048, 64, smr->lkey };
	rc = ibv_post_recv(b, &rwr, &rbad);
	sge = (struct ibv_sge){ (uintptr_t)src, 16, smr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 31;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey3;
	rc = rc ? rc : ibv_post_send(a, &wr, &bad);
	st = !rc && poll_wc(cq, &wc) && poll_wc(cq, &wc2);
	if (st && wc.wr_id != 30)
		wc = wc2;
	tap(st && wc.wr_id == 30 && wc.status == IBV_WC_SUCCESS &&
	   (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey3,
	   "type 2: SEND_WITH_INV invalidates it, the receive says so (%d)", rc);
	sge = (struct ibv_sge){ (uintptr_t)src, 64, smr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 32;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)w + 4096;
	wr.wr.rdma.rkey = rkey3;
	st = post_status(a, cq, &wr, NULL);
	tap(st == IBV_WC_REM_ACCESS_ERR,
	   "type 2: a WRITE after the remote invalidation fails (%d)", st);
	/*
	 * A ULP unsure whether its peer invalidated posts a LOCAL_INV
	 * anyway: a free window, like a free MR, takes it without error.
	 * On a fresh QP: the access error above stopped both.
	 */
	ibv_destroy_qp(a);
	a = ibv_create_qp_ex(ctx, &xa);
	st = -1;
	if (a && !to_rts(a, sgid, gid)) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 35;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = rkey3;
		st = post_status(a, cq, &wr, &op);
	}
	memset(&qa, 0, sizeof(qa));
	rc = a ? ibv_query_qp(a, &qa, IBV_QP_STATE, &qia) : -1;
	tap(st == IBV_WC_SUCCESS && op == IBV_WC_LOCAL_INV && !rc &&
	   qa.qp_state == IBV_QPS_RTS,
	   "type 2: LOCAL_INV of the window already invalidated succeeds, the QP stays in RTS (%d, %d)",
	   st, rc);

	/* Type 1 windows are not invalidated by a WR (o10-37.2.26). */
	if (a && qa.qp_state == IBV_QPS_RTS) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 33;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = mw1->rkey;
		st = post_status(a, cq, &wr, NULL);
	} else {
		st = -1;
	}
	tap(st == IBV_WC_MW_BIND_ERR,
	   "LOCAL_INV of a type 1 window: IBV_WC_MW_BIND_ERR (%d)", st);

	/*
	 * A type 2B window goes with the QP that bound it: its number may
	 * serve the next QP, which must not inherit the window.
	 */
	c = ibv_create_qp_ex(ctx, &xa);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 34;
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(rkey3);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = wmr, .addr = (uintptr_t)w + 4096, .length = 2048,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	st = c && !to_rts(c, sgid, gid) ? post_status(c, cq, &wr, NULL) : -1;
	tap(st == IBV_WC_SUCCESS, "type 2: bound by a third QP (%d)", st);
	if (c)
		ibv_destroy_qp(c);
	c = NULL;
	c = ibv_create_qp_ex(ctx, &xa);
	wr.wr_id = 35;
	wr.bind_mw.rkey = ibv_inc_rkey(wr.bind_mw.rkey);
	st = c && !to_rts(c, sgid, gid) ? post_status(c, cq, &wr, NULL) : -1;
	tap(st == IBV_WC_SUCCESS,
	   "type 2: free once that QP is destroyed: a new QP binds it (%d)",
	   st);
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (c)
		ibv_destroy_qp(c);
	/* Deallocation while bound unbinds: the MR can go after. */
	if (mw1)
		tap(!ibv_dealloc_mw(mw1), "ibv_dealloc_mw of a bound window");
	if (mw2)
		ibv_dealloc_mw(mw2);
	if (mw3)
		ibv_dealloc_mw(mw3);
	if (wmr)
		tap(!ibv_dereg_mr(wmr), "ibv_dereg_mr once no window is bound");
	if (ro)
		ibv_dereg_mr(ro);
	if (nobind)
		ibv_dereg_mr(nobind);
	if (smr)
		ibv_dereg_mr(smr);
	if (cq)
		ibv_destroy_cq(cq);
	if (tcq)
		ibv_destroy_cq(tcq);
}

/*
 * A QP's way to RESET removes its completions not polled yet from the CQ
 * it shares, as RoCE NICs do (mlx4, mlx5, hns): a new connection does not
 * poll the old one's flushed WRs.  Those of the other QP stay, in order.
 */
static void reset_clean(struct ibv_pd *pd)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RESET };
	struct ibv_cq *cq = ibv_create_cq(pd->context, 16, NULL, NULL, 0);
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_wc wc[16];
	int n, err, i;

	if (cq) {
		qi.send_cq = cq;
		qi.recv_cq = cq;
		a = ibv_create_qp(pd, &qi);
		b = ibv_create_qp(pd, &qi);
	}
	tap(cq && a && b, "reset: a CQ two QPs share");
	if (!a || !b)
		goto out;
	err = to_err(a) ?: to_err(b);
	/* 14 polled first: what RESET compacts wraps around the ring. */
	for (i = 0; i < 2 && !err; i++) {
		err = flushed(b, 80, 7);
		n = err ? 0 : ibv_poll_cq(cq, 16, wc);
		if (n != 7)
			err = err ?: -1;
	}
	/* Interleaved: a 100, b 200, a 101, b 201, a 102. */
	for (i = 0; i < 5 && !err; i++)
		err = flushed(i & 1 ? b : a, (i & 1 ? 200 : 100) + i / 2, 1);
	err = err ?: ibv_modify_qp(a, &qa, IBV_QP_STATE);
	tap(!err, "reset: both in ERR, 14 flushed and polled, 5 more flushed, one QP back to RESET (%d)",
	   err);
	n = ibv_poll_cq(cq, 16, wc);
	tap(n == 2 && wc[0].wr_id == 200 && wc[1].wr_id == 201 &&
	   wc[0].qp_num == b->qp_num && wc[1].qp_num == b->qp_num,
	   "reset: only the other QP's 2 completions are left, in order (%d)",
	   n);
	err = to_err(a) ?: flushed(a, 103, 1);
	n = err ? -1 : ibv_poll_cq(cq, 16, wc);
	tap(n == 1 && wc[0].wr_id == 103 && wc[0].status == IBV_WC_WR_FLUSH_ERR,
	   "reset: the QP used again completes as before (%d, %d)", err, n);
out:
	if (a)
		ibv_destroy_qp(a);
	if (b)
		ibv_destroy_qp(b);
	if (cq)
		ibv_destroy_cq(cq);
}

/*
 * ibv_resize_cq with completions waiting (a mapped CQ moves them to its
 * new ring): up, then below the fill (EINVAL, IBA 11.2.9); every
 * completion polls once, in order.
 */
static void resize(struct ibv_pd *pd)
{
	struct ibv_qp_init_attr qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_cq *cq = ibv_create_cq(pd->context, 4, NULL, NULL, 0);
	struct ibv_wc wc[16];
	struct ibv_qp *qp;
	int n, i, err, order = 1;

	tap(cq != NULL, "resize: ibv_create_cq of 4");
	if (!cq)
		return;
	qi.send_cq = cq;
	qi.recv_cq = cq;
	qp = ibv_create_qp(pd, &qi);
	if (!qp) {
		tap(0, "resize: ibv_create_qp (%d)", errno);
		ibv_destroy_cq(cq);
		return;
	}
	err = to_err(qp) ?: flushed(qp, 100, 3);
	tap(!err, "resize: 3 completions waiting (%d)", err);
	err = ibv_resize_cq(cq, 16);
	tap(!err && cq->cqe >= 16, "resize: to 16 with 3 waiting (%d, cqe %d)",
	   err, cq->cqe);
	err = flushed(qp, 103, 6);
	tap(!err, "resize: 6 more after it (%d)", err);
	err = ibv_resize_cq(cq, 4);
	tap(err == EINVAL, "resize: to 4 with 9 waiting: EINVAL (%d)", err);
	n = ibv_poll_cq(cq, 16, wc);
	for (i = 0; i < n; i++)
		order &= wc[i].wr_id == 100 + (uint64_t)i &&
			 wc[i].status == IBV_WC_WR_FLUSH_ERR;
	tap(n == 9 && order, "resize: the 9 completions poll once, in order (%d)",
	   n);
	tap(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq), "resize: destroyed");
}

/* The completion of @wr_id on @cq: its status, or -1 (none, another). */
static int wc_of(struct ibv_cq *cq, uint64_t wr_id)
{
	struct ibv_wc wc;

	if (!poll_wc(cq, &wc) || wc.wr_id != wr_id)
		return -1;
	return wc.status;
}

/*
 * From any state through RESET to RTR, connected to itself, then RTS
 * with these retry values: ibv_modify_qp's answer to that last step.
 */
static int rts_with(struct ibv_qp *qp, int sgid, union ibv_gid *gid,
		    uint8_t timeout, uint8_t retry_cnt, uint8_t rnr_retry)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int err = ibv_modify_qp(qp, &a, IBV_QP_STATE);

	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
	err = err ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	rtr_attr(&a, qp->qp_num, sgid, gid);
	err = err ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	if (err)
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1,
				  .timeout = timeout, .retry_cnt = retry_cnt,
				  .rnr_retry = rnr_retry, .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* RESET to RTS: a UD QP, or a UC QP connected to QP @dqpn at @gid. */
static int sqe_to_rts(struct ibv_qp *qp, uint32_t dqpn, int sgid,
		      union ibv_gid *gid)
{
	int ud = qp->qp_type == IBV_QPT_UD;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | (ud ? IBV_QP_QKEY :
					   IBV_QP_ACCESS_FLAGS));
	if (err)
		return err;
	rtr_attr(&a, dqpn, sgid, gid);
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | (ud ? 0 :
			    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN));
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* Send 64 bytes of @mr from @qp (to @ah, QP @dqpn for UD): the status. */
static int sqe_send(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr,
		    uint32_t lkey, uint64_t wr_id, struct ibv_ah *ah,
		    uint32_t dqpn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr + 4096,
			       .length = 64, .lkey = lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = IBV_WR_SEND };

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = dqpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	return post_status(qp, cq, &wr, NULL);
}

/* Post a receive of @len bytes of @mr at offset 0, with @lkey, to @qp. */
static int recv_at(struct ibv_qp *qp, struct ibv_mr *mr, uint32_t lkey,
		   uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = len,
			       .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/*
 * What the SQE, UD receive and path MTU tests share: 16 KiB registered
 * for local write (receives at its start, sqe_send() from its second
 * page), a send CQ, a receive CQ, and an AH to our own GID.  fix_open()
 * says whether all of it is there; fix_close() takes down what is.
 */
struct fix {
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_cq *cq, *rcq;
	struct ibv_ah_attr aha;
	struct ibv_ah *ah;
};

static int fix_open(struct fix *f, struct ibv_context *ctx,
		    struct ibv_pd *pd, int sgid, union ibv_gid *gid)
{
	f->buf = calloc(1, 16384);
	f->mr = f->buf ? ibv_reg_mr(pd, f->buf, 16384,
				    IBV_ACCESS_LOCAL_WRITE) : NULL;
	f->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	f->rcq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	f->aha = (struct ibv_ah_attr){ .is_global = 1, .port_num = 1 };
	f->aha.grh.dgid = *gid;
	f->aha.grh.sgid_index = sgid;
	f->aha.grh.hop_limit = 64;
	f->ah = ibv_create_ah(pd, &f->aha);
	return f->mr && f->cq && f->rcq && f->ah;
}

static void fix_close(struct fix *f)
{
	if (f->ah)
		ibv_destroy_ah(f->ah);
	if (f->cq)
		ibv_destroy_cq(f->cq);
	if (f->rcq)
		ibv_destroy_cq(f->rcq);
	if (f->mr)
		ibv_dereg_mr(f->mr);
	free(f->buf);
}

/*
 * Send Queue Error (IBA 10.3.1): a send of a UC or UD QP that fails
 * locally (here an lkey that names no MR) completes in error and moves the
 * QP to SQE, not Error.  The sends posted then complete flushed, the RQ
 * still receives, and Modify QP from SQE to RTS (with IBV_QP_CUR_STATE,
 * as ib_mad does for QP1 after a failed send) sends again.  QP a fails,
 * QP b is its peer.
 */
static void sq_error(struct ibv_context *ctx, struct ibv_pd *pd, int sgid,
		     union ibv_gid *gid)
{
	enum ibv_qp_type types[] = { IBV_QPT_UD, IBV_QPT_UC };
	struct ibv_qp_init_attr qq, qi = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct fix f = { 0 };
	int ready = fix_open(&f, ctx, pd, sgid, gid);
	struct ibv_cq *cq = f.cq, *rcq = f.rcq;
	struct ibv_mr *mr = f.mr;
	struct ibv_ah *ah = f.ah;
	struct ibv_qp_attr qa;
	struct ibv_qp *a, *b;
	unsigned int i;
	const char *t;
	int err;

	tap(ready, "SQE: MR, CQs and AH");
	if (!ready)
		goto out;
	qi.send_cq = cq;
	qi.recv_cq = rcq;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		qi.qp_type = types[i];
		t = i ? "UC" : "UD";
		a = ibv_create_qp(pd, &qi);
		b = ibv_create_qp(pd, &qi);
		err = a && b ? sqe_to_rts(a, b->qp_num, sgid, gid) ?:
			       sqe_to_rts(b, a->qp_num, sgid, gid) : -1;
		tap(!err, "SQE: two %s QPs in RTS (%d)", t, err);
		if (err)
			goto next;
		err = sqe_send(a, cq, mr, mr->lkey ^ 0x5a5a00, 1, ah,
			       b->qp_num);
		tap(err == IBV_WC_LOC_PROT_ERR,
		    "%s: a send with a bad lkey fails with LOC_PROT_ERR (%d)",
		    t, err);
		err = ibv_query_qp(a, &qa, IBV_QP_STATE, &qq);
		tap(!err && qa.qp_state == IBV_QPS_SQE,
		    "%s: the QP is in SQE, not Error (%d)", t, qa.qp_state);
		err = sqe_send(a, cq, mr, mr->lkey, 2, ah, b->qp_num);
		tap(err == IBV_WC_WR_FLUSH_ERR,
		    "%s: a send posted in SQE completes flushed (%d)", t, err);
		err = recv_at(a, mr, mr->lkey, 4096, 3) ?:
		      sqe_send(b, cq, mr, mr->lkey, 4, ah, a->qp_num) ?:
		      wc_of(rcq, 3);
		tap(!err, "%s: the RQ in SQE still receives (%d)", t, err);
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_RTS;
		qa.cur_qp_state = IBV_QPS_SQE;
		err = ibv_modify_qp(a, &qa, IBV_QP_STATE | IBV_QP_CUR_STATE);
		tap(!err, "%s: SQE -> RTS (%d)", t, err);
		err = recv_at(b, mr, mr->lkey, 4096, 5) ?:
		      sqe_send(a, cq, mr, mr->lkey, 6, ah, b->qp_num) ?:
		      wc_of(rcq, 5);
		tap(!err, "%s: back in RTS the QP sends again (%d)", t, err);
		if (qi.qp_type == IBV_QPT_UD) {
			/* An AH serves the QPs of its own PD only (as rxe). */
			struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
			struct ibv_ah *ah2 = pd2 ? ibv_create_ah(pd2, &f.aha) : NULL;
			struct ibv_sge sge = { (uintptr_t)f.buf, 8, mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = 7, .sg_list = &sge, .num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			}, *bad;

			wr.wr.ud.ah = ah2;
			wr.wr.ud.remote_qpn = b->qp_num;
			wr.wr.ud.remote_qkey = 0x11111111;
			err = ah2 ? ibv_post_send(a, &wr, &bad) : -1;
			tap(err == EINVAL,
			    "UD: a send with an AH of another PD is refused with EINVAL (%d)",
			    err);
			if (ah2)
				ibv_destroy_ah(ah2);
			if (pd2)
				ibv_dealloc_pd(pd2);
		}
next:
		if (a)
			ibv_destroy_qp(a);
		if (b)
			ibv_destroy_qp(b);
	}
out:
	fix_close(&f);
}

/* The IPv4 header at @h (20 bytes) sums to 0xffff: its checksum holds. */
static int ip4_csum_ok(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/*
 * Receive errors of a UD QP (b, which a sends 64 bytes to).  A receive
 * too small for the datagram completes with LOC_LEN_ERR, one whose lkey
 * names no MR with LOC_PROT_ERR; either moves the QP to Error, as in
 * rdma_rxe (its class A) and RoCE NICs, and the receives after it
 * complete flushed.  A
 * datagram received from an IPv4 GID has in the last 20 bytes of its GRH
 * area the IPv4 header, checksum included, as a NIC writes it (rdma-core
 * and ib_core check that checksum to tell an IPv4 GRH from an IPv6 one),
 * also when it never left the host.
 */
static void ud_recv_errors(struct ibv_context *ctx, struct ibv_pd *pd,
			   int sgid, union ibv_gid *gid)
{
	struct ibv_qp_init_attr qq, qi = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct fix f = { 0 };
	int ready = fix_open(&f, ctx, pd, sgid, gid);
	struct ibv_cq *cq = f.cq, *rcq = f.rcq;
	struct ibv_qp *a = NULL, *b = NULL;
	struct ibv_mr *mr = f.mr;
	struct ibv_ah *ah = f.ah;
	uint8_t *buf = f.buf;
	struct ibv_qp_attr qa;
	int err;

	qi.send_cq = cq;
	qi.recv_cq = rcq;
	a = ready ? ibv_create_qp(pd, &qi) : NULL;
	b = a ? ibv_create_qp(pd, &qi) : NULL;
	err = a && b ? sqe_to_rts(a, 0, sgid, gid) ?:
		       sqe_to_rts(b, 0, sgid, gid) : -1;
	tap(!err, "UD receive errors: two UD QPs in RTS (%d)", err);
	if (err)
		goto out;

	err = recv_at(b, mr, mr->lkey, 48, 1) ?:
	      sqe_send(a, cq, mr, mr->lkey, 2, ah, b->qp_num) ?:
	      wc_of(rcq, 1);
	tap(err == IBV_WC_LOC_LEN_ERR,
	    "UD: a receive of 48 bytes for 40 + 64 completes with LOC_LEN_ERR (%d)",
	    err);
	err = ibv_query_qp(b, &qa, IBV_QP_STATE, &qq);
	tap(!err && qa.qp_state == IBV_QPS_ERR,
	    "UD: ... and moves the QP to Error (%d)", qa.qp_state);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RESET;
	err = ibv_modify_qp(b, &qa, IBV_QP_STATE) ?:
	      sqe_to_rts(b, 0, sgid, gid);
	tap(!err, "UD: through RESET back to RTS (%d)", err);
	memset(buf, 0xa5, 4096);
	err = err ?: recv_at(b, mr, mr->lkey, 4096, 3) ?:
	      sqe_send(a, cq, mr, mr->lkey, 4, ah, b->qp_num) ?:
	      wc_of(rcq, 3);
	tap(!err, "UD: then the next datagram is received (%d)", err);
	/* find_gid() took an IPv4 GID. */
	tap(!err && buf[20] == 0x45 && ip4_csum_ok(buf + 20),
	    "UD: the IPv4 header in its GRH area has a valid checksum (%02x%02x)",
	    buf[30], buf[31]);

	err = recv_at(b, mr, mr->lkey ^ 0x5a5a00, 4096, 5) ?:
	      sqe_send(a, cq, mr, mr->lkey, 6, ah, b->qp_num) ?:
	      wc_of(rcq, 5);
	tap(err == IBV_WC_LOC_PROT_ERR,
	    "UD: a receive with a bad lkey completes with LOC_PROT_ERR (%d)",
	    err);
	err = ibv_query_qp(b, &qa, IBV_QP_STATE, &qq);
	tap(!err && qa.qp_state == IBV_QPS_ERR,
	    "UD: ... which moves the QP to Error too (%d)", qa.qp_state);
	err = recv_at(b, mr, mr->lkey, 4096, 7) ?: wc_of(rcq, 7);
	tap(err == IBV_WC_WR_FLUSH_ERR,
	    "UD: a receive posted then completes flushed (%d)", err);
out:
	if (b)
		ibv_destroy_qp(b);
	if (a)
		ibv_destroy_qp(a);
	fix_close(&f);
}

/*
 * A path MTU above the port's active MTU, up to its MTU cap (4096), is
 * taken, as rdma_rxe and RoCE NICs take it (the passive side of rdma_cm
 * gets the active side's).  On a netdev whose active MTU is below it, a
 * message of one small packet goes; the 4096-byte packets of a longer one
 * do not fit the netdev, are dropped and counted, and the SEND fails with
 * retry exceeded.  An RC QP connected to itself.
 */
static void path_mtu_cap(struct ibv_context *ctx, struct ibv_pd *pd,
			 int sgid, union ibv_gid *gid)
{
	struct ibv_qp_init_attr qq, qi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { .length = 64 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct fix f = { 0 };
	int ready = fix_open(&f, ctx, pd, sgid, gid);
	struct ibv_cq *scq = f.cq, *rcq = f.rcq;
	struct ibv_qp *qp = NULL;
	struct ibv_mr *mr = f.mr;
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;
	int err;

	qi.send_cq = scq;
	qi.recv_cq = rcq;
	qp = ready ? ibv_create_qp(pd, &qi) : NULL;
	err = !qp || ibv_query_port(ctx, 1, &pa);
	tap(!err, "path MTU cap: an RC QP, and the port's active MTU (%d)",
	    err ? -1 : (int)pa.active_mtu);
	if (err)
		goto out;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1 };
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	rtr_attr(&a, qp->qp_num, sgid, gid);
	a.path_mtu = IBV_MTU_4096;
	a.ah_attr.static_rate = IBV_RATE_10_GBPS;
	err = err ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				   IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER);
	tap(!err, "path MTU cap: RTR with path MTU 4096 is taken (%d)", err);
	memset(&a, 0, sizeof(a));
	err = err ?: ibv_query_qp(qp, &a, IBV_QP_PATH_MTU | IBV_QP_AV, &qq);
	tap(!err && a.path_mtu == IBV_MTU_4096,
	    "path MTU cap: query_qp says 4096 (%d, %d)", err, a.path_mtu);
	/* Kept and reported, as RoCE NICs do; sroce does not pace. */
	tap(!err && a.ah_attr.static_rate == IBV_RATE_10_GBPS,
	    "query_qp reports the AV's static rate (%d)", a.ah_attr.static_rate);
	/* 67 ms, twice: no retry of the SEND that goes, even emulated. */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 1,
				  .timeout = 14, .retry_cnt = 1,
				  .rnr_retry = 1, .max_rd_atomic = 1 };
	err = err ?: ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (err || pa.active_mtu >= IBV_MTU_4096) {
		tap(!err, "path MTU cap: RTS (%d)%s", err,
		    err ? "" : " # SKIP the netdev takes 4096-byte packets");
		goto out;
	}
	sge.addr = (uintptr_t)f.buf + 8192;
	sge.lkey = mr->lkey;
	err = recv_at(qp, mr, mr->lkey, 8192, 2) ?:
	      post_status(qp, scq, &wr, NULL) ?: wc_of(rcq, 2);
	tap(!err, "path MTU cap: a SEND of 64 bytes (one packet) goes (%d)",
	    err);
	sge.length = 4096;
	wr.wr_id = 3;
	err = recv_at(qp, mr, mr->lkey, 8192, 4) ?:
	      post_status(qp, scq, &wr, NULL);
	tap(err == IBV_WC_RETRY_EXC_ERR,
	    "path MTU cap: a SEND of one 4096-byte packet, which the netdev cannot carry, fails with retry exceeded (%d)",
	    err);
out:
	if (qp)
		ibv_destroy_qp(qp);
	fix_close(&f);
}

/*
 * Send WRs posted to a QP in Error complete flushed with their own
 * opcodes, as rdma_rxe's do (IBA leaves the opcode of an error
 * completion undefined; consumers still look).
 */
static void flush_opcodes(struct ibv_pd *pd, struct ibv_cq *cq,
			  struct ibv_mr *mr)
{
	static const struct {
		enum ibv_wr_opcode wr;
		enum ibv_wc_opcode wc;
	} ops[] = {
		{ IBV_WR_SEND, IBV_WC_SEND },
		{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE },
		{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD },
	};
	struct ibv_qp_init_attr qi = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_sge sge = { (uintptr_t)mr->addr, 8, mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	unsigned int i, good = 0;

	qp = ibv_create_qp(pd, &qi);
	if (!qp || to_err(qp)) {
		tap(0, "flushed opcodes: a QP in Error");
		goto out;
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		wr.wr_id = 0xf100 + i;
		wr.opcode = ops[i].wr;
		wr.wr.rdma.remote_addr = (uintptr_t)mr->addr;
		wr.wr.rdma.rkey = mr->rkey;
		if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = (uintptr_t)mr->addr;
			wr.wr.atomic.rkey = mr->rkey;
		}
		if (ibv_post_send(qp, &wr, &bad) || !poll_wc(cq, &wc))
			break;
		good += wc.wr_id == wr.wr_id &&
			wc.status == IBV_WC_WR_FLUSH_ERR &&
			wc.opcode == ops[i].wc;
		if (wc.opcode != ops[i].wc)
			printf("# flushed WR %u: opcode %d, not %d\n", i,
			       wc.opcode, ops[i].wc);
	}
	tap(good == i && i == sizeof(ops) / sizeof(ops[0]),
	    "SEND, WRITE, READ, FETCH_ADD posted in Error complete flushed with their opcodes (%u of %u)",
	    good, i);
	{
		struct ibv_qp_attr qa = {};
		struct ibv_qp_init_attr qia;
		int err = ibv_query_qp(qp, &qa, IBV_QP_PATH_MTU, &qia);

		tap(!err && qa.path_mtu == IBV_MTU_256,
		    "query_qp of a QP never given a path MTU: IBV_MTU_256, not 0 (%d, %d)",
		    err, qa.path_mtu);
	}
out:
	if (qp)
		ibv_destroy_qp(qp);
}

/*
 * Every work queue holds a power of two of WRs, at least what was asked
 * (IBA 11.2.4.1 allows more): its u32 indexes run free, and only such a
 * size maps the indexes on both sides of their wrap to distinct slots.
 * Unmapped queues (UD's SQ, SROCE_MAPPED=0) too.
 */
static int pow2(uint32_t n, uint32_t asked)
{
	return n >= asked && n && !(n & (n - 1));
}

static void pow2_queues(struct ibv_pd *pd, struct ibv_cq *cq, int sgid,
			union ibv_gid *gid)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 5, .max_sge = 1 } };
	struct ibv_qp_init_attr qi, init = {
		.send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 3, .max_recv_wr = 5,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UD };
	struct ibv_srq_attr sa;
	struct ibv_qp_attr qa;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	unsigned int i;
	int err;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		init.qp_type = types[i];
		init.cap.max_send_wr = 3;
		init.cap.max_recv_wr = 5;
		qp = ibv_create_qp(pd, &init);
		memset(&qi, 0, sizeof(qi));
		err = qp ? ibv_query_qp(qp, &qa, IBV_QP_CAP, &qi) : -1;
		tap(!err && pow2(qi.cap.max_send_wr, 3) &&
		    pow2(qi.cap.max_recv_wr, 5) &&
		    qi.cap.max_send_wr == init.cap.max_send_wr &&
		    qi.cap.max_recv_wr == init.cap.max_recv_wr,
		    "%s QP asked for 3 and 5 WRs holds %u and %u (%d)",
		    i ? "UD" : "RC", qi.cap.max_send_wr, qi.cap.max_recv_wr,
		    err);
		/* IBA 10.5: QPN 0xFFFFFF names a multicast group, no peer. */
		if (qp && types[i] == IBV_QPT_RC)
			tap(to_rts_peer(qp, 0xffffff, sgid, gid) == EINVAL,
			    "RC QP connected to QPN 0xFFFFFF is refused");
		if (qp)
			ibv_destroy_qp(qp);
	}
	srq = ibv_create_srq(pd, &si);
	memset(&sa, 0, sizeof(sa));
	err = srq ? ibv_query_srq(srq, &sa) : -1;
	tap(!err && pow2(sa.max_wr, 5), "SRQ asked for 5 WRs holds %u (%d)",
	    sa.max_wr, err);
	if (srq)
		ibv_destroy_srq(srq);
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "sroce0";
	struct ibv_device **list, *dev = NULL;
	struct ibv_device_attr_ex dattr;
	struct ibv_port_attr pattr;
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd, fake_pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp, *q2, fake_qp;
	struct ibv_srq *srq;
	struct ibv_ah *ah;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi, qinit = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_ah_attr aha = { .is_global = 1, .port_num = 1 };
	struct ibv_recv_wr rwr = { .wr_id = 42 }, *bad;
	struct ibv_wc wc;
	struct pollfd pfd;
	union ibv_gid gid;
	void *ev_ctx;
	char buf[8192];
	int i, n, err, sgid;
	uint32_t qpn;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	tap(dev != NULL, "libibverbs lists %s (provider matched)", name);
	if (!dev)
		goto out;
	ctx = ibv_open_device(dev);
	tap(ctx != NULL, "ibv_open_device");
	if (!ctx)
		goto out;

	err = ibv_query_device_ex(ctx, NULL, &dattr);
	tap(!err && dattr.orig_attr.max_qp > 0 && dattr.orig_attr.phys_port_cnt == 1,
	   "ibv_query_device_ex (%d)", err);
	err = ibv_query_port(ctx, 1, &pattr);
	tap(!err && pattr.state == IBV_PORT_ACTIVE &&
	   pattr.link_layer == IBV_LINK_LAYER_ETHERNET && pattr.active_mtu >= IBV_MTU_1024,
	   "ibv_query_port: active Ethernet port (%d)", err);
	sgid = find_gid(ctx, &gid);
	tap(sgid >= 0, "a RoCE v2 IPv4 GID (index %d)", sgid);

	pd = ibv_alloc_pd(ctx);
	tap(pd != NULL, "ibv_alloc_pd");
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	tap(mr != NULL && mr->lkey && mr->lkey == mr->rkey, "ibv_reg_mr");
	errno = 0;
	tap(!ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) &&
	   errno == EINVAL, "remote write without local write is refused (%d)",
	   errno);
	errno = 0;
	tap(!ibv_reg_mr(pd, (void *)4096, 4096, IBV_ACCESS_LOCAL_WRITE) && errno,
	   "registering unmapped memory fails (%d)", errno);
	errno = 0;
	tap(!ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | (1 << 30)) &&
	   errno, "unknown access flags are refused (%d)", errno);
	{
		/* A hint for on-demand paging: ignored on pinned memory. */
		struct ibv_mr *hmr;

		errno = 0;
		hmr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_HUGETLB);
		tap(hmr != NULL,
		    "IBV_ACCESS_HUGETLB on ordinary memory is taken, as by rxe and mlx5 (%d)",
		    errno);
		if (hmr)
			ibv_dereg_mr(hmr);
	}

	ch = ibv_create_comp_channel(ctx);
	tap(ch != NULL, "ibv_create_comp_channel");
	errno = 0;
	tap(!ibv_create_cq(ctx, dattr.orig_attr.max_cqe + 1, NULL, NULL, 0) &&
	   errno == EINVAL, "CQ above max_cqe fails with EINVAL (%d)", errno);
	{
		/*
		 * A CQ of max_cqe entries reports no more than max_cqe (a
		 * mapped ring is a power of two), and takes a resize to what
		 * it reports, as pyverbs' tests do.
		 */
		struct ibv_cq *big;
		int want = dattr.orig_attr.max_cqe, got = -1, rs = -1;

		big = ibv_create_cq(ctx, want, NULL, NULL, 0);
		if (big) {
			got = big->cqe;
			rs = ibv_resize_cq(big, big->cqe);
			ibv_destroy_cq(big);
		}
		tap(big && got == want && !rs,
		    "a CQ of max_cqe %d reports %d entries, and a resize to them works (%d)",
		    want, got, rs);
	}
	cq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	tap(cq != NULL && cq->cqe >= 64, "ibv_create_cq with a channel");
	if (!pd || !mr || !cq || sgid < 0)
		goto out;

	qp_ex_masks(ctx, pd, cq);
	pow2_queues(pd, cq, sgid, &gid);
	flush_opcodes(pd, cq, mr);
	cq_ex(ctx, pd, mr, buf, sgid, &gid);
	cq_ts(ctx, pd, mr, buf, sgid, &gid, !getenv("SROCE_MAPPED") ||
	      strcmp(getenv("SROCE_MAPPED"), "0"));
	rereg(ctx, pd, cq, sgid, &gid);
	windows(ctx, pd, sgid, &gid, !getenv("SROCE_MAPPED") ||
		strcmp(getenv("SROCE_MAPPED"), "0"));
	/* Binds are posted WRs: only on the mapped SQ. */
	if (!getenv("SROCE_MAPPED") || strcmp(getenv("SROCE_MAPPED"), "0"))
		rereg_bind_race(ctx, sgid, &gid);
	/* Once is enough: the command is the same with and without maps. */
	if (!getenv("SROCE_MAPPED") || strcmp(getenv("SROCE_MAPPED"), "0"))
		mw_fill(pd, dattr.orig_attr.max_mw);
	atomic_write(ctx, pd, sgid, &gid, !getenv("SROCE_MAPPED") ||
		     strcmp(getenv("SROCE_MAPPED"), "0"));
	post_lists(ctx, pd, sgid, &gid);
	rd_resources(pd, &dattr.orig_attr, sgid, &gid);
	srq_create_attrs(pd);
	srq_limit(ctx, pd, sgid, &gid);
	resp_events(ctx, pd, sgid, &gid);
	/* uverbs polls the CQ only without the mapping. */
	if (getenv("SROCE_MAPPED") && !strcmp(getenv("SROCE_MAPPED"), "0")) {
		poll_destroy_race(ctx, pd);
		ghost_cap(ctx, pd);
	}
	inline_grant(pd, cq, sgid, &gid);
	sq_error(ctx, pd, sgid, &gid);
	ud_recv_errors(ctx, pd, sgid, &gid);
	path_mtu_cap(ctx, pd, sgid, &gid);
	/* Pinning a million pages is slow under emulation: once is enough. */
	if (!getenv("SROCE_MAPPED") || strcmp(getenv("SROCE_MAPPED"), "0"))
		big_mr(&dattr.orig_attr, pd, cq, sgid, &gid);
	qinit.send_cq = cq;
	qinit.recv_cq = cq;
	qinit.cap.max_send_wr = dattr.orig_attr.max_qp_wr + 1;
	errno = 0;
	tap(!ibv_create_qp(pd, &qinit) && errno == EINVAL,
	   "QP above max_qp_wr fails with EINVAL (%d)", errno);
	qinit.cap.max_send_wr = 8;
	qp = ibv_create_qp(pd, &qinit);
	tap(qp != NULL && qp->qp_num >= 16, "ibv_create_qp RC");
	if (!qp)
		goto out;
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 2;
	qa.pkey_index = 0;
	qa.qp_access_flags = 0;
	err = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	tap(err == EINVAL, "INIT on port 2 is refused (%d)", err);
	err = to_rts(qp, sgid, &gid);
	tap(!err, "RESET -> INIT -> RTR -> RTS, kernel resolves the MAC (%d)", err);
	err = ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PATH_MTU, &qi);
	tap(!err && qa.qp_state == IBV_QPS_RTS && qa.path_mtu == IBV_MTU_1024 &&
	   qi.cap.max_recv_wr >= 8, "ibv_query_qp (%d)", err);
	qa.qp_state = IBV_QPS_INIT;
	err = ibv_modify_qp(qp, &qa, IBV_QP_STATE);
	tap(err == EINVAL, "RTS -> INIT is refused (%d)", err);
	/* IBA 9.7.6.1.3, 9.7.5.2.8: 5-bit timers, 3-bit retry counts. */
	qa.min_rnr_timer = 32;
	err = ibv_modify_qp(qp, &qa, IBV_QP_MIN_RNR_TIMER);
	tap(err == EINVAL, "RTS -> RTS with min_rnr_timer 32 is refused (%d)",
	    err);
	q2 = ibv_create_qp(pd, &qinit);
	tap(q2 && rts_with(q2, sgid, &gid, 32, 7, 7) == EINVAL &&
	    rts_with(q2, sgid, &gid, 14, 8, 7) == EINVAL &&
	    rts_with(q2, sgid, &gid, 14, 7, 8) == EINVAL,
	    "RTR -> RTS with timeout 32, retry_cnt 8 or rnr_retry 8 is refused");
	tap(q2 && !rts_with(q2, sgid, &gid, 31, 7, 7),
	    "RTR -> RTS with timeout 31, retry_cnt 7, rnr_retry 7");
	if (q2)
		ibv_destroy_qp(q2);

	/* Destroy order and invalid handles: errors, never crashes. */
	err = ibv_dealloc_pd(pd);
	tap(err == EBUSY, "ibv_dealloc_pd with a live QP and MR: EBUSY (%d)", err);
	err = ibv_destroy_cq(cq);
	tap(err == EBUSY, "ibv_destroy_cq with a live QP: EBUSY (%d)", err);
	fake_pd = *pd;
	fake_pd.handle = 0x7fffff;
	err = ibv_dealloc_pd(&fake_pd);
	tap(err != 0, "ibv_dealloc_pd of an invalid handle fails (%d)", err);
	fake_qp = *qp;
	fake_qp.handle = 0x7fffff;
	qa.qp_state = IBV_QPS_ERR;
	err = ibv_modify_qp(&fake_qp, &qa, IBV_QP_STATE);
	tap(err != 0, "ibv_modify_qp of an invalid handle fails (%d)", err);

	/* Flush through the completion channel. */
	err = ibv_req_notify_cq(cq, 0);
	tap(!err, "ibv_req_notify_cq (%d)", err);
	err = ibv_post_recv(qp, &rwr, &bad);
	tap(!err, "ibv_post_recv (%d)", err);
	err = ibv_modify_qp(qp, &qa, IBV_QP_STATE);
	tap(!err, "RTS -> ERR (%d)", err);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	n = poll(&pfd, 1, 5000);
	tap(n == 1, "completion event arrives");
	err = n == 1 ? ibv_get_cq_event(ch, &ev_cq, &ev_ctx) : -1;
	tap(!err && ev_cq == cq, "ibv_get_cq_event (%d)", err);
	if (!err)
		ibv_ack_cq_events(cq, 1);
	n = ibv_poll_cq(cq, 1, &wc);
	tap(n == 1 && wc.wr_id == 42 && wc.status == IBV_WC_WR_FLUSH_ERR &&
	   wc.qp_num == qp->qp_num, "flushed receive polled (%d, %s)", n,
	   n == 1 ? ibv_wc_status_str(wc.status) : "-");

	srq = ibv_create_srq(pd, &si);
	tap(srq != NULL, "ibv_create_srq");
	if (srq) {
		struct ibv_srq_attr sa;

		tap(!ibv_post_srq_recv(srq, &rwr, &bad), "ibv_post_srq_recv");
		tap(!ibv_query_srq(srq, &sa) && sa.max_wr >= 16, "ibv_query_srq");
		tap(!ibv_destroy_srq(srq), "ibv_destroy_srq");
	}

	aha.grh.dgid = gid;
	aha.grh.sgid_index = sgid;
	aha.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &aha);
	tap(ah != NULL, "ibv_create_ah to our own IPv4 GID");
	if (ah)
		tap(!ibv_destroy_ah(ah), "ibv_destroy_ah");
	/* IBA 8.3.1: an SL is 4 bits. */
	aha.sl = 15;
	ah = ibv_create_ah(pd, &aha);
	tap(ah != NULL, "ibv_create_ah with SL 15 (%d)", ah ? 0 : errno);
	if (ah)
		ibv_destroy_ah(ah);
	aha.sl = 16;
	errno = 0;
	ah = ibv_create_ah(pd, &aha);
	err = errno;
	tap(!ah && err == EINVAL, "ibv_create_ah with SL 16 fails with EINVAL (%d)",
	    err);
	if (ah)
		ibv_destroy_ah(ah);
	aha.sl = 0;
	/* IBV_DEVICE_UD_AV_PORT_ENFORCE: an AV names the QP's one port. */
	aha.port_num = 2;
	errno = 0;
	ah = ibv_create_ah(pd, &aha);
	err = errno;
	tap((dattr.orig_attr.device_cap_flags & IBV_DEVICE_UD_AV_PORT_ENFORCE) &&
	   !ah && err == EINVAL,
	   "UD_AV_PORT_ENFORCE: ibv_create_ah on port 2 fails with EINVAL (%d)",
	   err);
	if (ah)
		ibv_destroy_ah(ah);
	aha.port_num = 1;
	aha.grh.sgid_index = 63;
	errno = 0;
	tap(!ibv_create_ah(pd, &aha), "ibv_create_ah with an empty sgid_index fails (%d)",
	   errno);

	/*
	 * A completion left in a CQ outlives its QP: polled after the QP is
	 * destroyed, it still reads right (the kernel once read the freed QP).
	 */
	rwr.wr_id = 43;
	err = ibv_post_recv(qp, &rwr, &bad);
	qpn = qp->qp_num;
	tap(!err && !ibv_destroy_qp(qp),
	   "ibv_destroy_qp with its flushed receive still in the CQ (%d)", err);
	n = ibv_poll_cq(cq, 1, &wc);
	tap(n == 1 && wc.wr_id == 43 && wc.status == IBV_WC_WR_FLUSH_ERR &&
	   wc.qp_num == qpn,
	   "the destroyed QP's completion polls with its QP number (%d)", n);
	tap(!ibv_destroy_cq(cq), "ibv_destroy_cq");
	resize(pd);
	reset_clean(pd);
	tap(!ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");
	tap(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	tap(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	tap(!ibv_close_device(ctx), "ibv_close_device");
out:
	if (list)
		ibv_free_device_list(list);
	return tap_end();
}

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the libibverbs test programs share (objects.c, orphan.c): TAP
 * output (tap.h), the device's IPv4 RoCE v2 GID, and an RC QP brought to
 * RTS.
 * Each program includes it once.
 */
#ifndef SROCE_TEST_COMMON_H
#define SROCE_TEST_COMMON_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "tap.h"

/* The first RoCE v2 GID with an IPv4 address. */
static inline int find_gid(struct ibv_context *ctx, union ibv_gid *gid)
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

/* The RTR attributes of a connection to QP @dqpn at @dgid (PSN 1). */
static inline void rtr_attr(struct ibv_qp_attr *a, uint32_t dqpn,
			    int sgid_index, union ibv_gid *dgid)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = dqpn;
	a->rq_psn = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = *dgid;
	a->ah_attr.grh.sgid_index = sgid_index;
	a->ah_attr.grh.hop_limit = 64;
}

/*
 * RESET to RTR, connected to QP @dqpn at @dgid, with @resources responder
 * resources (max_dest_rd_atomic).
 */
static inline int to_rtr_rd(struct ibv_qp *qp, uint32_t dqpn, int sgid_index,
			    union ibv_gid *dgid, uint8_t resources)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	rtr_attr(&a, dqpn, sgid_index, dgid);
	a.max_dest_rd_atomic = resources;
	a.min_rnr_timer = 12;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

/*
 * RESET to RTS, connected to QP @dqpn at @dgid, with @depth reads and
 * atomics outstanding (max_rd_atomic) and @resources responder resources
 * (max_dest_rd_atomic).
 */
static inline int to_rts_rd(struct ibv_qp *qp, uint32_t dqpn, int sgid_index,
			    union ibv_gid *dgid, uint8_t depth,
			    uint8_t resources)
{
	struct ibv_qp_attr a;
	int err;

	err = to_rtr_rd(qp, dqpn, sgid_index, dgid, resources);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;	/* = rq_psn: the QP may be connected to itself */
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = depth;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* RESET to RTS, connected to QP @dqpn at @dgid: one read at a time. */
static inline int to_rts_peer(struct ibv_qp *qp, uint32_t dqpn,
			      int sgid_index, union ibv_gid *dgid)
{
	return to_rts_rd(qp, dqpn, sgid_index, dgid, 1, 1);
}

/* RESET to RTS, connected to itself. */
static inline int to_rts(struct ibv_qp *qp, int sgid_index,
			 union ibv_gid *dgid)
{
	return to_rts_peer(qp, qp->qp_num, sgid_index, dgid);
}

#endif /* SROCE_TEST_COMMON_H */

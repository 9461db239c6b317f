// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce data-path counters, per device, read by "rdma statistic show"
 * (ib_core's hw_counters for port 1).  Drops are counted by reason so an
 * operator can tell a bad peer (ICRC, headers) from a missing QP.
 */
#include <rdma/restrack.h>

#include "sroce.h"

#define CREATE_TRACE_POINTS
#include "trace.h"

static const struct rdma_stat_desc sroce_counter_desc[SROCE_CNT_MAX] = {
	[SROCE_CNT_TX_PKTS]		= { .name = "tx_packets" },
	[SROCE_CNT_RX_PKTS]		= { .name = "rx_packets" },
	[SROCE_CNT_TX_ERR]		= { .name = "tx_errors" },
	[SROCE_CNT_RX_BAD_HDR]		= { .name = "rx_drop_bad_header" },
	[SROCE_CNT_RX_BAD_ICRC]		= { .name = "rx_drop_bad_icrc" },
	[SROCE_CNT_RX_NO_QP]		= { .name = "rx_drop_no_qp" },
	[SROCE_CNT_RX_BAD_STATE]	= { .name = "rx_drop_qp_state" },
	[SROCE_CNT_RX_DUP]		= { .name = "rx_duplicate" },
	[SROCE_CNT_RX_OUT_OF_SEQ]	= { .name = "rx_out_of_sequence" },
	[SROCE_CNT_RETRANS]		= { .name = "retransmits" },
	[SROCE_CNT_RETRY_TIMEOUT]	= { .name = "retry_timeouts" },
	[SROCE_CNT_RNR_NAK_SENT]	= { .name = "rnr_nak_sent" },
	[SROCE_CNT_RNR_NAK_RCVD]	= { .name = "rnr_nak_received" },
	[SROCE_CNT_SEQ_NAK_SENT]	= { .name = "seq_nak_sent" },
	[SROCE_CNT_SEQ_NAK_RCVD]	= { .name = "seq_nak_received" },
	[SROCE_CNT_ERR_NAK_SENT]	= { .name = "error_nak_sent" },
	[SROCE_CNT_UD_DROP]		= { .name = "rx_drop_no_recv_wqe" },
	[SROCE_CNT_RX_BAD_QKEY]		= { .name = "rx_drop_bad_qkey" },
	[SROCE_CNT_RX_MCAST]		= { .name = "rx_multicast" },
	[SROCE_CNT_RX_BAD_PKEY]		= { .name = "rx_drop_bad_pkey" },
	[SROCE_CNT_RX_BAD_SRC]		= { .name = "rx_drop_bad_source" },
	[SROCE_CNT_ACK_SENT]		= { .name = "ack_sent" },
	[SROCE_CNT_ACK_COALESCED]	= { .name = "ack_coalesced" },
	[SROCE_CNT_TX_ZEROCOPY]		= { .name = "tx_zerocopy" },
	[SROCE_CNT_TX_BATCHED]		= { .name = "tx_batched" },
	[SROCE_CNT_RX_DEFERRED]		= { .name = "rx_deferred" },
	[SROCE_CNT_TX_BYTES]		= { .name = "tx_bytes" },
	[SROCE_CNT_RX_BYTES]		= { .name = "rx_bytes" },
	[SROCE_CNT_TX_MCAST]		= { .name = "tx_multicast" },
	[SROCE_CNT_RX_UC_DROP]		= { .name = "rx_drop_uc_message" },
	[SROCE_CNT_LINK_DOWNED]		= { .name = "link_downed" },
	[SROCE_CNT_RX_CNP]		= { .name = "rp_cnp_ignored" },
};

struct rdma_hw_stats *sroce_alloc_hw_port_stats(struct ib_device *ibdev,
						u32 port_num)
{
	return rdma_alloc_hw_stats_struct(sroce_counter_desc, SROCE_CNT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/* The device's total of counter @c, over every CPU. */
u64 sroce_counter(struct sroce_dev *sdev, enum sroce_counter c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(per_cpu_ptr(sdev->stats, cpu)->c[c]);
	return sum;
}

int sroce_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		       u32 port, int index)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	int i;

	for (i = 0; i < SROCE_CNT_MAX; i++)
		stats->value[i] = sroce_counter(sdev, i);
	return SROCE_CNT_MAX;
}

/**
 * sroce_fill_res_qp_entry - the engine state of a QP for "rdma res show qp -dd"
 * @msg: the netlink message
 * @ibqp: the QP
 *
 * The values go in an RDMA_NLDEV_ATTR_DRIVER nest, the one the rdma tool
 * prints with -dd.
 *
 * Return: 0 or -EMSGSIZE.
 */
int sroce_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp)
{
	static const char * const name[] = {
		"req_psn", "comp_psn", "resp_epsn", "sq_head", "req_idx",
		"sq_tail", "rd_inflight", "retry_left", "rnr_wait",
		"rd_pending", "resp_msn", "unacked", "window", "srtt_ms",
		"retry_ms",
	};
	struct sroce_qp *qp = to_sqp(ibqp);
	bool rc = ibqp->qp_type == IB_QPT_RC;
	struct nlattr *nest;
	u32 v[ARRAY_SIZE(name)];
	unsigned int i;

	spin_lock_bh(&qp->lock);
	v[0] = qp->req.psn;
	v[1] = qp->comp.psn;
	v[2] = qp->resp.epsn;
	v[3] = qp->sq.head;
	v[4] = qp->req.idx;
	v[5] = qp->sq.tail;
	v[6] = qp->req.rd_inflight;
	v[7] = qp->comp.retry;
	v[8] = qp->comp.rnr_wait;
	v[9] = qp->resp.rd_tail - qp->resp.rd_next;
	v[10] = qp->resp.msn;
	/* RC: packets sent and not acknowledged, and how many may be. */
	v[11] = rc ? sroce_psn_diff(qp->req.high_psn, qp->comp.psn) : 0;
	v[12] = rc ? sroce_req_window(qp) : 0;
	/* RC: the round trip measured, and the retry timeout it sets. */
	v[13] = 0;
	v[14] = 0;
	if (rc)
		sroce_comp_timing(qp, &v[13], &v[14]);
	/* The packets that came meanwhile are handled, their sends sent. */
	sroce_qp_unlock(qp);

	nest = nla_nest_start(msg, RDMA_NLDEV_ATTR_DRIVER);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < ARRAY_SIZE(name); i++) {
		if (rdma_nl_put_driver_u32(msg, name[i], v[i])) {
			nla_nest_cancel(msg, nest);
			return -EMSGSIZE;
		}
	}
	nla_nest_end(msg, nest);
	return 0;
}

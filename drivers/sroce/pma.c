// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The port's Performance Management Agent (IBA 16.1): PerfMgt Get of
 * ClassPortInfo, PortCounters and PortCountersExtended, answered from the
 * data-path counters (counters.c).
 *
 * ib_core reads the port's counters through it for sysfs
 * (/sys/class/infiniband/DEV/ports/1/counters/, which monitoring tools and
 * perftest -W read), as it does for a RoCE NIC's.  A PerfMgt Get from the
 * wire (GSI, QP1) is answered too, as a NIC's PMA does, and a Get of
 * them naming another port or with a modifier gets "invalid value".
 * Everything else (Set, other attributes and classes, malformed MADs)
 * goes on to the MAD layer untouched, which hands it to an agent or
 * answers "unsupported": a Set would clear counters an operator reads.
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>

#include "sroce.h"

/* The counters' offset in a PerfMgt MAD's data (after the 40 reserved). */
#define SROCE_PMA_DATA		40

static void sroce_pma_counters(struct sroce_dev *sdev, u8 port_select,
			       struct ib_pma_portcounters *pc)
{
	u64 rx_err = sroce_counter(sdev, SROCE_CNT_RX_BAD_HDR) +
		     sroce_counter(sdev, SROCE_CNT_RX_BAD_ICRC);

	pc->port_select = port_select;
	/* 8 bits, saturating: the port left ACTIVE (IBA 16.1.3.5) */
	pc->link_downed_counter =
		min_t(u64, sroce_counter(sdev, SROCE_CNT_LINK_DOWNED), U8_MAX);
	/* 16 bits, saturating */
	pc->port_rcv_errors = cpu_to_be16(min_t(u64, rx_err, U16_MAX));
	pc->port_xmit_discards =
		cpu_to_be16(min_t(u64, sroce_counter(sdev, SROCE_CNT_TX_ERR),
				  U16_MAX));
	/* 32 bits, saturating; data in units of 4 octets */
	pc->port_xmit_data =
		cpu_to_be32(min_t(u64, sroce_counter(sdev, SROCE_CNT_TX_BYTES) / 4,
				  U32_MAX));
	pc->port_rcv_data =
		cpu_to_be32(min_t(u64, sroce_counter(sdev, SROCE_CNT_RX_BYTES) / 4,
				  U32_MAX));
	pc->port_xmit_packets =
		cpu_to_be32(min_t(u64, sroce_counter(sdev, SROCE_CNT_TX_PKTS),
				  U32_MAX));
	pc->port_rcv_packets =
		cpu_to_be32(min_t(u64, sroce_counter(sdev, SROCE_CNT_RX_PKTS),
				  U32_MAX));
}

/*
 * Unicast is all packets less multicast: two sums over the CPUs, read
 * one after the other while a multicast packet may count in one and not
 * yet in the other.  A port counter never goes back (a monitor would
 * take it for a reset), so the figure reported is at least the last one.
 */
static u64 sroce_pma_ucast(struct sroce_dev *sdev, u64 *last, u64 all,
			   u64 mcast)
{
	u64 ucast = all - min(mcast, all);
	unsigned long flags;

	spin_lock_irqsave(&sdev->pma_lock, flags);
	ucast = max(ucast, *last);
	*last = ucast;
	spin_unlock_irqrestore(&sdev->pma_lock, flags);
	return ucast;
}

static void sroce_pma_counters_ext(struct sroce_dev *sdev, u8 port_select,
				   struct ib_pma_portcounters_ext *pc)
{
	u64 tx = sroce_counter(sdev, SROCE_CNT_TX_PKTS);
	u64 rx = sroce_counter(sdev, SROCE_CNT_RX_PKTS);
	u64 tx_mc = sroce_counter(sdev, SROCE_CNT_TX_MCAST);
	u64 rx_mc = sroce_counter(sdev, SROCE_CNT_RX_MCAST);

	pc->port_select = port_select;
	pc->port_xmit_data =
		cpu_to_be64(sroce_counter(sdev, SROCE_CNT_TX_BYTES) / 4);
	pc->port_rcv_data =
		cpu_to_be64(sroce_counter(sdev, SROCE_CNT_RX_BYTES) / 4);
	pc->port_xmit_packets = cpu_to_be64(tx);
	pc->port_rcv_packets = cpu_to_be64(rx);
	pc->port_unicast_xmit_packets =
		cpu_to_be64(sroce_pma_ucast(sdev, &sdev->pma_ucast_tx, tx, tx_mc));
	pc->port_unicast_rcv_packets =
		cpu_to_be64(sroce_pma_ucast(sdev, &sdev->pma_ucast_rx, rx, rx_mc));
	pc->port_multicast_xmit_packets = cpu_to_be64(tx_mc);
	pc->port_multicast_rcv_packets = cpu_to_be64(rx_mc);
}

/**
 * sroce_process_mad - the device's first look at a MAD (ib_device_ops)
 * @ibdev: the device
 * @mad_flags: IB_MAD_IGNORE_* (unused: RoCE has no M_Key or B_Key)
 * @port_num: the port
 * @in_wc: the MAD's work completion when it came from the wire, else NULL
 *	(ib_core's own queries)
 * @in_grh: its GRH, or NULL
 * @in: the MAD
 * @out: the response, when there is one
 * @out_mad_size: @out's size
 * @out_mad_pkey_index: unused
 *
 * Return: IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY with a GetResp in
 * @out for a PerfMgt Get this agent answers; IB_MAD_RESULT_SUCCESS for
 * every other MAD, which the MAD layer hands on to its agents.
 */
int sroce_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
		      const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		      const struct ib_mad *in, struct ib_mad *out,
		      size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	const struct ib_mad_hdr *hdr = &in->mad_hdr;
	struct sroce_dev *sdev = to_sdev(ibdev);
	void *data = out->data + SROCE_PMA_DATA;
	u8 port_select = in->data[SROCE_PMA_DATA + 1];

	if (hdr->mgmt_class != IB_MGMT_CLASS_PERF_MGMT ||
	    hdr->base_version != IB_MGMT_BASE_VERSION ||
	    hdr->class_version != 1 || hdr->method != IB_MGMT_METHOD_GET ||
	    *out_mad_size < sizeof(*out))
		return IB_MAD_RESULT_SUCCESS;
	if (hdr->attr_id != IB_PMA_CLASS_PORT_INFO &&
	    hdr->attr_id != IB_PMA_PORT_COUNTERS &&
	    hdr->attr_id != IB_PMA_PORT_COUNTERS_EXT)
		return IB_MAD_RESULT_SUCCESS;

	/*
	 * One port; 0xFF is "all ports" (IBA 16.1.3.5), the same one here.
	 * None of these attributes takes a modifier.  A Get that names
	 * another port, or has a modifier, is an attribute we support with
	 * an invalid value in it: its GetResp says so (status code 7, "an
	 * invalid value in the attribute or modifier", IBA 13.4.7) and
	 * carries the request's attribute back.
	 */
	if (hdr->attr_mod || (hdr->attr_id != IB_PMA_CLASS_PORT_INFO &&
			      port_select != 1 && port_select != 0xff)) {
		*out = *in;
		out->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
		out->mad_hdr.status =
			cpu_to_be16(IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
		goto reply;
	}

	memset(out, 0, sizeof(*out));
	out->mad_hdr = *hdr;
	out->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	out->mad_hdr.status = 0;
	switch (hdr->attr_id) {
	case IB_PMA_CLASS_PORT_INFO: {
		struct ib_class_port_info cpi = {
			.base_version = IB_MGMT_BASE_VERSION,
			.class_version = 1,
			/* 64-bit data and packet counters (0x1D) */
			.capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH |
					   IB_PMA_CLASS_CAP_ALLPORTSELECT,
		};

		ib_set_cpi_resp_time(&cpi, 18);	/* 4.096 us * 2^18: 1 s */
		memcpy(data, &cpi, sizeof(cpi));
		break;
	}
	case IB_PMA_PORT_COUNTERS:
		sroce_pma_counters(sdev, port_select, data);
		break;
	default:	/* IB_PMA_PORT_COUNTERS_EXT */
		sroce_pma_counters_ext(sdev, port_select, data);
		break;
	}
reply:
	*out_mad_size = sizeof(*out);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

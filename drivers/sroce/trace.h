/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sroce tracepoints on the data path:
 *   perf trace -e 'sroce:*'   or   /sys/kernel/tracing/events/sroce/
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM sroce

#if !defined(SROCE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define SROCE_TRACE_H

#include <linux/tracepoint.h>

#include "sroce.h"

DECLARE_EVENT_CLASS(sroce_pkt_class,
		    TP_PROTO(struct sroce_dev *sdev, struct sroce_pkt *pkt),
		    TP_ARGS(sdev, pkt),
		    TP_STRUCT__entry(__string(dev, dev_name(&sdev->ibdev.dev))
				     __field(const void *, skbaddr)
				     __field(u32, qpn)
				     __field(u32, psn)
				     __field(u32, paylen)
				     __field(u8, opcode)
				     __field(bool, ackreq)),
		    TP_fast_assign(__assign_str(dev, dev_name(&sdev->ibdev.dev));
				   __entry->skbaddr = pkt->skb;
				   __entry->qpn = be32_to_cpu(pkt->bth->qpn) &
						  SROCE_QPN_MASK;
				   __entry->psn = be32_to_cpu(pkt->bth->apsn) &
						  SROCE_PSN_MASK;
				   __entry->paylen = pkt->paylen;
				   __entry->opcode = pkt->bth->opcode;
				   __entry->ackreq =
					!!(be32_to_cpu(pkt->bth->apsn) &
					   SROCE_BTH_ACKREQ);),
		    TP_printk("%s skbaddr=%p dqpn=%u opcode=%#04x psn=%u len=%u%s",
			      __get_str(dev), __entry->skbaddr, __entry->qpn,
			      __entry->opcode, __entry->psn, __entry->paylen,
			      __entry->ackreq ? " ackreq" : "")
);

DEFINE_EVENT(sroce_pkt_class, sroce_xmit,
	     TP_PROTO(struct sroce_dev *sdev, struct sroce_pkt *pkt),
	     TP_ARGS(sdev, pkt));

DEFINE_EVENT(sroce_pkt_class, sroce_rcv,
	     TP_PROTO(struct sroce_dev *sdev, struct sroce_pkt *pkt),
	     TP_ARGS(sdev, pkt));

TRACE_EVENT(sroce_retry,
	    TP_PROTO(struct sroce_qp *qp, u32 psn),
	    TP_ARGS(qp, psn),
	    TP_STRUCT__entry(__field(u32, qpn)
			     __field(u32, psn)),
	    TP_fast_assign(__entry->qpn = qp->ibqp.qp_num;
			   __entry->psn = psn;),
	    TP_printk("qpn=%u resend from psn=%u", __entry->qpn, __entry->psn)
);

TRACE_EVENT(sroce_window,
	    TP_PROTO(struct sroce_qp *qp, bool busy, int nr_busy),
	    TP_ARGS(qp, busy, nr_busy),
	    TP_STRUCT__entry(__field(u32, qpn)
			     __field(bool, busy)
			     __field(int, nr_busy)),
	    TP_fast_assign(__entry->qpn = qp->ibqp.qp_num;
			   __entry->busy = busy;
			   __entry->nr_busy = nr_busy;),
	    TP_printk("qpn=%u %s, busy QPs=%d", __entry->qpn,
		      __entry->busy ? "busy" : "idle", __entry->nr_busy)
);

/*
 * A kernel ULP's wr_id is its struct ib_cqe pointer: recorded as a
 * pointer, which the trace output hashes (%p), not as a number.
 */
TRACE_EVENT(sroce_complete,
	    TP_PROTO(struct sroce_qp *qp, struct ib_wc *wc),
	    TP_ARGS(qp, wc),
	    TP_STRUCT__entry(__field(u32, qpn)
			     __field(u64, wr_id)
			     __field(const void *, cqe)
			     __field(int, status)
			     __field(int, opcode)
			     __field(u32, byte_len)),
	    TP_fast_assign(bool kern = !qp->ibqp.uobject;

			   __entry->qpn = qp->ibqp.qp_num;
			   __entry->wr_id = kern ? 0 : wc->wr_id;
			   __entry->cqe = kern ? wc->wr_cqe : NULL;
			   __entry->status = wc->status;
			   __entry->opcode = wc->opcode;
			   __entry->byte_len = wc->byte_len;),
	    TP_printk("qpn=%u wr_id=%#llx cqe=%p status=%d opcode=%d len=%u",
		      __entry->qpn, __entry->wr_id, __entry->cqe,
		      __entry->status, __entry->opcode, __entry->byte_len)
);

#endif /* SROCE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>

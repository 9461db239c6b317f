// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce transport engine, window control: how many packets an RC
 * requester keeps unacknowledged.
 *
 * The requester goes back and sends again when the peer acknowledged
 * nothing for the local ACK timeout (IBA 9.7.6.1.3), the user's value.  A
 * QP alone is acknowledged every few dozen packets however long the queue
 * in front of them, but the QPs of one device share that queue, and a QP
 * waits for its next ACK while the packets of the others drain: four
 * streaming QPs with 512 packets each went without an ACK for longer than
 * the timeout hundreds of times a minute on the emulated link of the
 * benchmarks, and go-back-N (IBA 9.7.6.1) resent whole windows of packets
 * that were never lost (half of what reached the peer were duplicates).
 *
 * So the window is the device's: max_unacked packets shared by the RC
 * QPs that have packets unacknowledged, at least SROCE_WIN_MIN each.  Up
 * to max_unacked / SROCE_WIN_MIN busy QPs, the queue they build together
 * is no longer than the one a single QP builds, once the QPs that were
 * there before a new one came have drained down to their new shares.
 * Per-QP delay measurements (a round trip or the gap between ACKs against
 * half the timeout) were tried first and still timed out: on the emulated
 * link both swing by a factor of four from one round trip to the next.
 *
 * A QP holds its share while packets are unacknowledged, and, with no
 * retry timer (timeout 0), after a loss until it leaves its connection;
 * but not while it waits out an RNR NAK: it sends nothing then, and the
 * responder dropped what followed the refused packet, so a peer that
 * answers RNR for ever keeps none of the others' window.
 */
#include <linux/moduleparam.h>

#include "sroce.h"
#include "trace.h"

/*
 * The device's window.  It must cover the bandwidth-delay product of the
 * path, or a sender idles a round trip per window: at 128 it did so on
 * the emulated link of the benchmarks (about 12 ms per round trip there),
 * 512 keeps that link busy.  A longer path wants a larger value: the
 * parameter applies to packets sent from then on.  IBA 9.7.2: a PSN is
 * valid within half of the 2^24 PSN space; the bound keeps far from it.
 */
static unsigned int sroce_max_unacked = 512;

static int sroce_max_unacked_set(const char *val,
				 const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, SROCE_WIN_MIN, 65536);
}

static const struct kernel_param_ops sroce_max_unacked_ops = {
	.set = sroce_max_unacked_set,
	.get = param_get_uint,
};

module_param_cb(max_unacked, &sroce_max_unacked_ops, &sroce_max_unacked,
		0644);
MODULE_PARM_DESC(max_unacked,
		 "RC packets a device keeps unacknowledged, shared by its busy QPs (32-65536, default 512)");

/**
 * sroce_win_size - packets the requester may keep unacknowledged now
 * @qp: an RC QP
 *
 * Return: its share of the device's window.
 */
u32 sroce_win_size(struct sroce_qp *qp)
{
	int busy = atomic_read(&to_sdev(qp->ibqp.device)->win_busy);

	return max_t(u32, SROCE_WIN_MIN,
		     READ_ONCE(sroce_max_unacked) / max(busy, 1));
}

/*
 * After a retry timeout: the peer acknowledged nothing for the whole
 * timeout, so the path holds more than it drains in that time (a slow
 * responder: another host's scheduling, a debug kernel) or lost what was
 * sent.  Go-back-N resends from the oldest PSN; resending the whole
 * window at once would add a window of duplicates to a queue that is
 * already too long, and time out again.  So the requester sends the
 * oldest request alone (the loss window of RFC 5681 3.1: one packet, or
 * a READ asking again for the rest of its chunk) and widens by one packet
 * per packet acknowledged (the window doubles each round trip, as TCP's
 * slow start after a retransmission timeout) until it has its share of
 * the device's window again, or has nothing unacknowledged.  An ACK of
 * the packets sent before the timeout, which were only late, reopens it
 * as far at once.
 */

/**
 * sroce_req_window - packets the requester may keep unacknowledged now
 * @qp: an RC QP, with qp->lock held
 *
 * Return: its share of the device's window, or less after a retry timeout.
 */
u32 sroce_req_window(struct sroce_qp *qp)
{
	u32 win = sroce_win_size(qp);

	return qp->req.cwnd ? min(win, qp->req.cwnd) : win;
}

/**
 * sroce_win_timeout - a retry timeout: send again from a window of one
 * @qp: an RC QP, with qp->lock held
 */
void sroce_win_timeout(struct sroce_qp *qp)
{
	qp->req.cwnd = 1;
}

/**
 * sroce_win_acked - packets newly acknowledged widen a narrowed window
 * @qp: an RC QP, with qp->lock held
 * @npkts: PSNs an ACK or response moved the oldest unacknowledged PSN by
 */
void sroce_win_acked(struct sroce_qp *qp, u32 npkts)
{
	if (!qp->req.cwnd)
		return;
	qp->req.cwnd += npkts;	/* below 2^24: no wrap */
	if (qp->req.cwnd >= sroce_win_size(qp))
		qp->req.cwnd = 0;
}

/**
 * sroce_win_busy - the QP has packets unacknowledged, or has none
 * @qp: the QP, with qp->lock held
 * @busy: true when an RC QP sends and does not hold a share; false when
 *	everything is acknowledged, when an RNR NAK stops the requester,
 *	or when the QP leaves its connection (error, reset, destroy: any
 *	type) with packets that will never be
 */
void sroce_win_busy(struct sroce_qp *qp, bool busy)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	int nr;

	lockdep_assert_held(&qp->lock);
	if (qp->win_busy == busy)
		return;
	qp->win_busy = busy;
	if (busy)
		nr = atomic_inc_return(&sdev->win_busy);
	else
		nr = atomic_dec_return(&sdev->win_busy);
	trace_sroce_window(qp, busy, nr);
}

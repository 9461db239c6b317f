// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce receive path: RoCEv2 packets in (IBA annex A17, 9.6).
 *
 * A packet arrives on the UDP 4791 socket of its namespace (netns.c), or,
 * sent to a local address, from the loopback queue below.  Either way it
 * finds its device by the netdev it came in on, is checked (headers,
 * ICRC, QP, the QP's transport and state: IBA 9.6.1) and goes to the
 * responder (requests) or the completer (responses) of its QP, holding a
 * reference on the QP for that time.  Anything malformed is dropped and
 * counted, never trusted.
 */
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/udp.h>

#include "sroce.h"
#include "trace.h"

/*
 * The longest RoCEv2 UDP datagram: BTH, the longest extension headers
 * (AtomicETH), one IB_MTU_4096 of payload, the largest pad, the ICRC.
 */
#define SROCE_MAX_UDP_LEN	(sizeof(struct udphdr) + \
				 sizeof(struct sroce_bth) + \
				 sizeof(struct sroce_atmeth) + 4096 + \
				 (SROCE_BTH_PAD_MASK >> SROCE_BTH_PAD_SHIFT) + \
				 SROCE_ICRC_LEN)

/*
 * Loopback: packets to a local address are queued here and received in
 * order, instead of through lo, whose per-CPU backlogs would reorder a
 * QP's packets (sent from whichever CPU runs the QP).  One consumer at a
 * time (sroce_loop_busy) takes them off the queue:
 *  - a tasklet, on the sending CPU when the sender enables BHs again, if
 *    a few packets wait: a request, its response and the completions are
 *    handled in the sender's context, with no thread to wake up between
 *    them (a ping-pong's latency);
 *  - a work item, if a burst waits (a stream's bandwidth): the receiver
 *    runs on another CPU than the sender, and the two overlap.
 */
static struct sk_buff_head sroce_loop_q;
/* Packets waiting for the loopback queue's consumer, at most (a txqueuelen). */
#define SROCE_LOOP_QLEN		4096
/* Packets the tasklet receives itself, at most; more go to the work item. */
#define SROCE_LOOP_INLINE	8
/* Looped-back packets handled per run of the work item, at most. */
#define SROCE_LOOP_BUDGET	256
/* ... between two chances for other threads to run. */
#define SROCE_LOOP_BATCH	64
static unsigned long sroce_loop_busy;
static struct tasklet_struct sroce_loop_tasklet;
static struct work_struct sroce_loop_work;

/*
 * The sroce device a packet is for: the one on the netdev it came in on,
 * or, for looped-back packets, the one whose netdev owns the destination
 * address.  Takes a reference on the ib_device (ib_device_put()).  In
 * @vlan_id, the VLAN of that netdev (VLAN_N_VID: none): ib_core answers a
 * MAD from the GID of that VLAN (ib_init_ah_attr_from_wc()), as for a
 * RoCE NIC's CQE, also on one host (rdma_rxe takes the GID's netdev).
 * In @ifindex, that netdev's index: the packet is for the GIDs of that
 * netdev only (sroce_pkt.ifindex).
 */
static struct sroce_dev *sroce_rcv_dev(struct sk_buff *skb, bool ipv4,
				       u16 *vlan_id, int *ifindex)
{
	struct net_device *ndev = skb->dev;
	struct ib_device *ibdev;

	if (ndev->flags & IFF_LOOPBACK) {
		/* IPv6 disabled: its address lists do not exist. */
		if (!ipv4 && !ipv6_mod_enabled())
			return NULL;
		if (ipv4)
			ndev = __ip_dev_find(dev_net(ndev), ip_hdr(skb)->daddr,
					     false);
		else
			ndev = ipv6_dev_find(dev_net(ndev),
					     &ipv6_hdr(skb)->daddr, NULL);
		if (!ndev)
			return NULL;
	}
	*vlan_id = is_vlan_dev(ndev) ? vlan_dev_vlan_id(ndev) : VLAN_N_VID;
	*ifindex = ndev->ifindex;
	/*
	 * A VLAN device over the bound netdev: its GIDs are the device's
	 * (ib_core's roce_gid_mgmt.c), and no device is bound to a VLAN
	 * device itself (sroce_add_link()).
	 */
	if (is_vlan_dev(ndev))
		ndev = vlan_dev_real_dev(ndev);
	ibdev = ib_device_get_by_netdev(ndev, SROCE_DRIVER_ID);
	return ibdev ? to_sdev(ibdev) : NULL;
}

/* The BTH's fields and where the rest of a parsed packet is. */
static void sroce_parse_fields(struct sroce_pkt *pkt, u32 hlen)
{
	pkt->ext = pkt->hdr + sizeof(struct sroce_bth);
	pkt->payload = pkt->hdr + hlen;
	pkt->qpn = be32_to_cpu(pkt->bth->qpn) & SROCE_QPN_MASK;
	pkt->psn = be32_to_cpu(pkt->bth->apsn) & SROCE_PSN_MASK;
	pkt->ackreq = !!(be32_to_cpu(pkt->bth->apsn) & SROCE_BTH_ACKREQ);
}

/*
 * A CNP (annex A17.9.3): BTH, 16 reserved bytes, the ICRC, no pad, TVer
 * 0.  sroce_rcv() counts it and takes it no further.
 */
static int sroce_parse_cnp(struct sroce_pkt *pkt, u32 len)
{
	if ((pkt->bth->flags & (SROCE_BTH_TVER_MASK | SROCE_BTH_PAD_MASK)) ||
	    len != sizeof(struct sroce_bth) + SROCE_CNP_RSVD + SROCE_ICRC_LEN)
		return -EINVAL;
	pkt->info = 0;
	pkt->pad = 0;
	pkt->paylen = 0;
	sroce_parse_fields(pkt, sizeof(struct sroce_bth) + SROCE_CNP_RSVD);
	return 0;
}

/* Parse and check the transport headers (IBA 9.6.1 packet checks). */
static int sroce_parse(struct sroce_pkt *pkt, u32 len)
{
	u8 tp = sroce_opcode_tp(pkt->bth->opcode);
	u32 hlen;

	pkt->opcode = pkt->bth->opcode;
	if (pkt->opcode == SROCE_OPCODE_CNP)
		return sroce_parse_cnp(pkt, len);
	pkt->info = sroce_op_info(pkt->opcode);
	if (!(pkt->info & SROCE_F_VALID))
		return -EINVAL;
	if (tp == IB_OPCODE_UD) {
		/* UD knows SEND_ONLY and SEND_ONLY_IMM only (IBA 9.2.1) */
		u8 op = sroce_opcode_op(pkt->opcode);

		if (op != IB_OPCODE_SEND_ONLY &&
		    op != IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE)
			return -EINVAL;
		pkt->info |= SROCE_H_DETH;
	} else if (tp == IB_OPCODE_UC) {
		if (!(pkt->info & (SROCE_F_SEND | SROCE_F_WRITE)) ||
		    (pkt->info & SROCE_H_IETH))
			return -EINVAL;
	} else if (tp != IB_OPCODE_RC) {
		return -EINVAL;
	}
	if ((pkt->bth->flags & SROCE_BTH_TVER_MASK) != 0)
		return -EINVAL;
	/*
	 * The pad count fills the payload to a 4-byte boundary, and every
	 * header and the ICRC are whole words (IBA 9.2, 9.3.1): a transport
	 * packet of another length is malformed.  So the pad count is the
	 * payload's, and FIRST and MIDDLE packets, whose payload the
	 * responder checks is one whole MTU, carry none.
	 */
	if (len & 3)
		return -EINVAL;
	pkt->pad = (pkt->bth->flags & SROCE_BTH_PAD_MASK) >>
		   SROCE_BTH_PAD_SHIFT;
	hlen = sizeof(struct sroce_bth) + sroce_ext_len(pkt->info);
	if (len < hlen + pkt->pad + SROCE_ICRC_LEN)
		return -EINVAL;
	pkt->paylen = len - hlen - pkt->pad - SROCE_ICRC_LEN;
	if (pkt->paylen && !(pkt->info & SROCE_F_PAYLOAD))
		return -EINVAL;
	/*
	 * A packet carries at most one path MTU of payload, and no IB MTU is
	 * above 4096: a larger datagram (IP reassembled it) is malformed.
	 * The responder checks its QP's own path MTU.
	 */
	if (pkt->paylen > ib_mtu_enum_to_int(IB_MTU_4096))
		return -EINVAL;
	sroce_parse_fields(pkt, hlen);
	return 0;
}

/* Is a packet of this transport for this QP type (IBA 9.6.1.2)? */
static bool sroce_qp_takes(struct sroce_qp *qp, u8 opcode)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return sroce_opcode_tp(opcode) == IB_OPCODE_RC;
	case IB_QPT_UC:
		return sroce_opcode_tp(opcode) == IB_OPCODE_UC;
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return sroce_opcode_tp(opcode) == IB_OPCODE_UD;
	default:
		return false;
	}
}

/*
 * Fill @pkt from its skb, linear, network and transport headers set: the
 * transport headers checked (sroce_parse()), the addresses.  Return: the
 * UDP payload's length, ICRC included, or 0 if the packet is malformed.
 */
static u32 sroce_pkt_from_skb(struct sroce_pkt *pkt, bool ipv4)
{
	struct sk_buff *skb = pkt->skb;
	struct udphdr *uh = udp_hdr(skb);
	u32 len = ntohs(uh->len);

	if (len < sizeof(*uh) + sizeof(struct sroce_bth) + SROCE_ICRC_LEN ||
	    len > skb->len - ((u8 *)uh - skb->data))
		return 0;
	len -= sizeof(*uh);
	pkt->hdr = (u8 *)(uh + 1);
	if (sroce_parse(pkt, len))
		return 0;
	pkt->ipv4 = ipv4;
	if (ipv4) {
		ipv6_addr_set_v4mapped(ip_hdr(skb)->saddr,
				       (struct in6_addr *)&pkt->sgid);
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)&pkt->dgid);
	} else {
		memcpy(&pkt->sgid, &ipv6_hdr(skb)->saddr, 16);
		memcpy(&pkt->dgid, &ipv6_hdr(skb)->daddr, 16);
	}
	pkt->sport = ntohs(uh->source);
	return len;
}

/*
 * The part of a packet's handling that needs qp->lock (held), for every
 * path (unicast, backlog, multicast).  A QP being destroyed answers
 * nothing: a packet queued for its transmit now would hold it, and
 * destroy waits for its holders.
 */
void sroce_qp_rcv_locked(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	if (qp->dead)
		sroce_count(pkt->sdev, SROCE_CNT_RX_NO_QP);
	else if (pkt->info & SROCE_F_RESP)
		sroce_comp_rcv(qp, pkt);
	else
		sroce_resp_rcv(qp, pkt);
}

/*
 * The receive backlog.  A packet whose QP's lock is taken (the requester
 * building a burst, the responder answering a READ, a post) does not spin
 * on it for as long as that takes: it waits on the QP's backlog, in
 * arrival order, and the CPU holding the lock handles it before it lets
 * the lock go (sroce_qp_release()), as TCP does with a socket its owner
 * holds.  The receiving CPU goes on with the next packets, and the holder
 * takes the ACKs that came meanwhile in one go.  A packet there was
 * checked (headers, ICRC) and holds its QP.  Bounded: when it is full the
 * next packet waits for the lock, and takes the queue's packets first.
 */
#define SROCE_RX_BACKLOG_MAX	256
/*
 * Packets on the backlogs of one device's QPs, at most: a flood aimed at
 * many QPs at once is bounded too (each packet holds up to a page or so).
 */
#define SROCE_RX_BACKLOG_DEV_MAX	4096

/*
 * What a backlogged packet keeps of its arrival, in skb->cb (the skb is
 * ours from sroce_encap_rcv() on): its netdev may be gone when it is
 * handled, outside the receive path's RCU section.
 */
struct sroce_rx_cb {
	int ifindex;
	u16 vlan_id;
};

static struct sroce_rx_cb *sroce_rx_cb(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct sroce_rx_cb) > sizeof(skb->cb));
	return (struct sroce_rx_cb *)skb->cb;
}

/**
 * sroce_rx_backlog_run - handle the packets that waited for qp->lock
 * @qp: the QP, with qp->lock held
 * @budget: packets at most
 *
 * Return: the packets handled.
 */
int sroce_rx_backlog_run(struct sroce_qp *qp, int budget)
{
	struct sk_buff *skb;
	int n = 0;

	lockdep_assert_held(&qp->lock);
	while (n < budget && (skb = skb_dequeue(&qp->rx_backlog))) {
		struct sroce_pkt pkt = {
			.sdev = to_sdev(qp->ibqp.device),
			.skb = skb,
			.qp = qp,
			.vlan_id = sroce_rx_cb(skb)->vlan_id,
			.ifindex = sroce_rx_cb(skb)->ifindex,
		};
		bool ipv4 = ip_hdr(skb)->version == 4;

		atomic_dec(&pkt.sdev->rx_backlog);

		/* It was checked when it came: this cannot fail. */
		if (!WARN_ON_ONCE(!sroce_pkt_from_skb(&pkt, ipv4)))
			sroce_qp_rcv_locked(qp, &pkt);
		consume_skb(skb);
		sroce_qp_put(qp);	/* the backlog's reference */
		n++;
	}
	return n;
}

/**
 * sroce_qp_release - release qp->lock, having handled its backlog
 * @qp: the QP, with qp->lock held
 *
 * Every release of the engine lock goes through here, or through
 * sroce_qp_unlock(), which calls it: a packet left on the backlog while
 * the lock was held is handled now, and one queued while it is released
 * by the CPU that queued it (the barriers pair with sroce_qp_rcv()'s: one
 * of the two sees the other).  Past SROCE_RX_BACKLOG_BUDGET packets the
 * QP's work item handles the rest.
 *
 * The work is queued under the lock, while the packets left on the
 * backlog hold the QP: destroy waits for them before it cancels the work,
 * so the work cannot outlive the QP, even when our caller holds no
 * reference of its own (a restrack dump, counters.c).
 */
void sroce_qp_release(struct sroce_qp *qp)
	__releases(&qp->lock)
{
	int budget = SROCE_RX_BACKLOG_BUDGET;
	bool handed_off = false;

	for (;;) {
		if (budget > 0) {
			budget -= sroce_rx_backlog_run(qp, budget);
		} else if (!skb_queue_empty_lockless(&qp->rx_backlog)) {
			queue_work(sroce_wq, &qp->tx_work);
			handed_off = true;
		}
		spin_unlock_bh(&qp->lock);
		if (handed_off)
			return;
		/* The release before the look at the backlog: sroce_qp_rcv(). */
		smp_mb();
		if (skb_queue_empty_lockless(&qp->rx_backlog) ||
		    !spin_trylock_bh(&qp->lock))
			return;		/* none left, or the holder's */
	}
}

/**
 * sroce_qp_rcv - hand a checked packet to its QP, now or through its backlog
 * @qp: the packet's QP, which the caller holds a reference on
 * @pkt: the packet, parsed, its ICRC checked
 *
 * Return: true if the backlog took the skb (with a reference on the QP of
 * its own), false if the packet was handled and the skb is the caller's.
 */
bool sroce_qp_rcv(struct sroce_qp *qp, struct sroce_pkt *pkt)
{
	struct sk_buff_head *q = &qp->rx_backlog;

	if (skb_queue_empty_lockless(q) && spin_trylock_bh(&qp->lock))
		goto locked;
	/* The backlog's own reference: we hold one, this cannot fail. */
	if (skb_queue_len_lockless(q) < SROCE_RX_BACKLOG_MAX &&
	    sroce_charge(&pkt->sdev->rx_backlog, SROCE_RX_BACKLOG_DEV_MAX)) {
		if (WARN_ON_ONCE(!sroce_qp_hold(qp))) {
			sroce_uncharge(&pkt->sdev->rx_backlog);
			goto wait;
		}
		sroce_rx_cb(pkt->skb)->vlan_id = pkt->vlan_id;
		sroce_rx_cb(pkt->skb)->ifindex = pkt->ifindex;
		/*
		 * Its route is often a noref one, valid in this RCU section
		 * only; the backlog may run from the QP's work item, later.
		 * Nothing there needs it: the cb keeps what the packet's
		 * handling reads of where it came from.
		 */
		skb_dst_drop(pkt->skb);
		skb_queue_tail(q, pkt->skb);
		sroce_count(pkt->sdev, SROCE_CNT_RX_DEFERRED);
		/*
		 * The queueing before the look at the lock; pairs with
		 * sroce_qp_release(): the holder sees the packet, or we see
		 * the lock free.
		 */
		smp_mb();
		if (spin_trylock_bh(&qp->lock))
			sroce_qp_unlock(qp);
		return true;
	}
wait:
	spin_lock_bh(&qp->lock);
	/* Those came first. */
	sroce_rx_backlog_run(qp, SROCE_RX_BACKLOG_MAX);
locked:
	sroce_qp_rcv_locked(qp, pkt);
	sroce_qp_unlock(qp);
	return false;
}

/*
 * Was @skb sent to a group (multicast, or an IPv4 broadcast address)?
 * IBA 10.5: a packet to a multicast group carries the multicast QPN.  One
 * that names a QP instead would reach that QP on every host of the group
 * or subnet with a single datagram.
 */
static bool sroce_pkt_to_group(struct sk_buff *skb, bool ipv4)
{
	struct rtable *rt = skb_rtable(skb);

	if (!ipv4)
		return ipv6_addr_is_multicast(&ipv6_hdr(skb)->daddr);
	return ipv4_is_multicast(ip_hdr(skb)->daddr) ||
	       ipv4_is_lbcast(ip_hdr(skb)->daddr) ||
	       (rt && (rt->rt_flags & (RTCF_BROADCAST | RTCF_MULTICAST)));
}

static void sroce_rcv(struct sroce_dev *sdev, struct sk_buff *skb, bool ipv4,
		      u16 vlan_id, int ifindex)
{
	struct sroce_pkt pkt = { .sdev = sdev, .skb = skb, .vlan_id = vlan_id,
				 .ifindex = ifindex };
	enum ib_qp_state state;
	bool group;
	u32 len;

	sroce_count(sdev, SROCE_CNT_RX_PKTS);
	/*
	 * By its destination, as a NIC counts (IBA 16.1.4: PortMulticast
	 * RcvPkts, errors included): delivered or not.
	 */
	group = sroce_pkt_to_group(skb, ipv4);
	if (group)
		sroce_count(sdev, SROCE_CNT_RX_MCAST);
	/* The datagram's length as its header says: the bytes that came. */
	this_cpu_add(sdev->stats->c[SROCE_CNT_RX_BYTES],
		     ipv4 ? ntohs(ip_hdr(skb)->tot_len) :
		     sizeof(struct ipv6hdr) + ntohs(ipv6_hdr(skb)->payload_len));
	/*
	 * Parsing, the ICRC and the copies read the packet as one buffer:
	 * from the wire, and from our own loopback queue, where a zero-copy
	 * payload is in page fragments.  Not a datagram longer than any
	 * RoCEv2 packet (IP reassembles up to 64 KiB): its copy would need
	 * a large atomic allocation before sroce_parse() refused it.  Its
	 * bytes, not its length field, which IPv6 lets be 0.
	 */
	if (skb->len - skb_transport_offset(skb) > SROCE_MAX_UDP_LEN ||
	    skb_linearize(skb))
		goto bad_hdr;
	len = sroce_pkt_from_skb(&pkt, ipv4);
	if (!len)
		goto bad_hdr;
	if (sroce_icrc(skb_network_header(skb), ipv4, pkt.hdr,
		       len - SROCE_ICRC_LEN) !=
	    get_unaligned_le32(pkt.hdr + len - SROCE_ICRC_LEN)) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_ICRC);
		goto drop;
	}
	/*
	 * IBA 9.6.1.1: the P_Key must match one of the port's: ours is the
	 * default partition only (full member), so a packet of the default
	 * partition, full or limited member, is accepted.
	 */
	if ((be16_to_cpu(pkt.bth->pkey) & IB_DEFAULT_PKEY_PARTIAL) !=
	    IB_DEFAULT_PKEY_PARTIAL) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_PKEY);
		goto drop;
	}
	trace_sroce_rcv(sdev, &pkt);

	/*
	 * A CNP asks the sender of a marked packet to slow down (annex
	 * A17.9): a reaction point's job, which sroce does not do (its
	 * packets are ECN-capable only if the user's traffic class says so,
	 * and its rate is set by its window).  Counted apart, as a NIC with
	 * congestion control off counts them, not as a malformed packet.
	 */
	if (pkt.opcode == SROCE_OPCODE_CNP) {
		sroce_count(sdev, SROCE_CNT_RX_CNP);
		consume_skb(skb);
		return;
	}
	if (pkt.qpn == SROCE_QPN_MCAST) {
		/* IBA 10.5: a UD send to a group goes to all its QPs. */
		if (sroce_opcode_tp(pkt.opcode) != IB_OPCODE_UD ||
		    !sroce_mcast_rcv(&pkt))
			sroce_count(sdev, SROCE_CNT_RX_NO_QP);
		consume_skb(skb);
		return;
	}
	if (group)
		goto bad_hdr;
	pkt.qp = sroce_qp_get(sdev, pkt.qpn);
	if (!pkt.qp) {
		sroce_count(sdev, SROCE_CNT_RX_NO_QP);
		goto drop;
	}
	/* Pairs with modify_qp's release: the attributes are visible. */
	state = smp_load_acquire(&pkt.qp->state);
	if (!sroce_qp_takes(pkt.qp, pkt.opcode) || state < IB_QPS_RTR ||
	    state == IB_QPS_ERR) {
		/* IBA 10.3.1: RESET and INIT QPs silently drop packets. */
		sroce_count(sdev, SROCE_CNT_RX_BAD_STATE);
		sroce_qp_put(pkt.qp);
		consume_skb(skb);
		return;
	}
	if (!sroce_qp_rcv(pkt.qp, &pkt))
		consume_skb(skb);
	sroce_qp_put(pkt.qp);
	return;
bad_hdr:
	sroce_count(sdev, SROCE_CNT_RX_BAD_HDR);
drop:
	kfree_skb(skb);
}

/*
 * Is a packet that came to the socket from where sroce's peers are?  sroce
 * sends to the host's own addresses through its loopback queue, never
 * through lo or a netdev, so what comes in on lo is another local
 * program's (any user can send UDP from the host's addresses, the peer
 * addresses of every connection between two QPs of this host; rdma_rxe
 * drops it too), and one from another host that claims one of this host's
 * addresses as its source is forged.  IPv4 drops those itself (a martian
 * source) unless the netdev accepts local sources (accept_local, which
 * some container and VRF setups set), IPv6 never: both are looked up
 * here.  The wire tests inject through lo, from raw sockets, and let such
 * packets in (debugfs rx_lo, root only).
 *
 * But a datagram to a group that a program of this host sent comes back
 * from the host's address: the IP stack loops it to the joined host on the
 * netdev it left by (PACKET_LOOPBACK, netns.c), for the group's QPs on the
 * sending node (IBA 10.5); IPv4 loops a broadcast so too.  Only a group's
 * QPs take it: a unicast QPN in a datagram to a group is refused
 * (sroce_pkt_to_group()).  Under RCU (the socket's receive path).
 */
static bool sroce_rcv_src_ok(struct sock *sk, struct sk_buff *skb,
			     bool ipv4)
{
	if (skb->dev->flags & IFF_LOOPBACK)
		return READ_ONCE(sroce_rx_lo);
	if (skb->pkt_type == PACKET_LOOPBACK &&
	    (ipv4 || ipv6_addr_is_multicast(&ipv6_hdr(skb)->daddr)))
		return true;
	if (ipv4) {
		struct in_device *idev = __in_dev_get_rcu(skb->dev);

		/* Without accept_local IP refused it (fib_validate_source()). */
		return !idev || !IN_DEV_ACCEPT_LOCAL(idev) ||
		       !__ip_dev_find(sock_net(sk), ip_hdr(skb)->saddr, false);
	}
	return !ipv6_chk_addr(sock_net(sk), &ipv6_hdr(skb)->saddr, NULL, 0);
}

/* The receive hook of the RoCEv2 sockets (netns.c), in softirq. */
int sroce_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	bool ipv4 = ip_hdr(skb)->version == 4;
	struct sroce_dev *sdev;
	u16 vlan_id;
	int ifindex;

	sdev = sroce_rcv_dev(skb, ipv4, &vlan_id, &ifindex);
	if (!sdev) {
		kfree_skb(skb);
		return 0;
	}
	if (!sroce_rcv_src_ok(sk, skb, ipv4)) {
		sroce_count(sdev, SROCE_CNT_RX_BAD_SRC);
		kfree_skb(skb);
	} else if (net_eq(sock_net(sk), sdev->sn->net)) {
		/*
		 * A device receives in its own namespace only; another one's
		 * socket sees it when its netdev just moved there (the device
		 * is being unregistered) or through a VLAN device moved there.
		 */
		sroce_rcv(sdev, skb, ipv4, vlan_id, ifindex);
	} else {
		kfree_skb(skb);
	}
	ib_device_put(&sdev->ibdev);
	return 0;
}

/*
 * Receive at most @budget looped-back packets (the caller owns
 * sroce_loop_busy).  Return: whether packets are left.
 */
static bool sroce_loop_drain(int budget)
{
	struct sk_buff *skb;
	int n = 0;

	while (n < budget && (skb = skb_dequeue(&sroce_loop_q))) {
		bool ipv4 = ip_hdr(skb)->version == 4;
		struct net_device *lo = skb->dev;
		struct sroce_dev *sdev;
		u16 vlan_id;
		int ifindex;

		local_bh_disable();
		rcu_read_lock();
		sdev = sroce_rcv_dev(skb, ipv4, &vlan_id, &ifindex);
		/*
		 * Its own namespace only, as sroce_encap_rcv().  Sent by a QP
		 * of this host: to any of the device's GIDs (ifindex 0), as
		 * the one netdev that owns an address shared by a VLAN device
		 * and the netdev below it is not known.
		 */
		if (sdev && net_eq(dev_net(lo), sdev->sn->net))
			sroce_rcv(sdev, skb, ipv4, vlan_id, 0);
		else
			kfree_skb(skb);
		if (sdev)
			ib_device_put(&sdev->ibdev);
		rcu_read_unlock();
		local_bh_enable();
		dev_put(lo);
		n++;
	}
	return !skb_queue_empty_lockless(&sroce_loop_q);
}

/*
 * Give up the queue; a packet queued meanwhile by a producer that found
 * it taken is seen here (fully ordered: its queueing happened before its
 * tasklet's test_and_set_bit()), and goes to the work item.
 */
static void sroce_loop_release(void)
{
	clear_bit_unlock(0, &sroce_loop_busy);
	/* The clear before the look at the queue: pairs with the above. */
	smp_mb__after_atomic();
	if (!skb_queue_empty_lockless(&sroce_loop_q))
		queue_work(sroce_wq, &sroce_loop_work);
}

static void sroce_loop_run(struct tasklet_struct *t)
{
	if (skb_queue_len_lockless(&sroce_loop_q) > SROCE_LOOP_INLINE) {
		queue_work(sroce_wq, &sroce_loop_work);
		return;
	}
	/* Taken: its owner sees this packet when it lets go. */
	if (test_and_set_bit(0, &sroce_loop_busy))
		return;
	sroce_loop_drain(SROCE_LOOP_INLINE);
	sroce_loop_release();
}

/*
 * Bounded: every packet handled may queue new ones (ACKs, the next
 * requests), so one run could last as long as the traffic; the work item
 * queues itself again instead, and flushes of sroce_wq end.
 */
static void sroce_loop_work_fn(struct work_struct *work)
{
	int n;

	if (test_and_set_bit(0, &sroce_loop_busy))
		return;
	for (n = 0; n < SROCE_LOOP_BUDGET; n += SROCE_LOOP_BATCH) {
		if (!sroce_loop_drain(SROCE_LOOP_BATCH))
			break;
		cond_resched();
	}
	sroce_loop_release();
}

/**
 * sroce_loop_queue - receive a finished packet sent to a local address
 * @skb: the packet, IP header on; consumed
 *
 * Bounded like a device queue: a sender faster than the receiver loses
 * packets (recovered as losses on the wire).  The BHs disabled around
 * the queueing make the tasklet run here when they are enabled again
 * (unless the caller keeps them disabled), not in ksoftirqd.
 *
 * A queued packet holds its netdev (the namespace's loopback device, the
 * route's): a datagram QP's packet holds no QP, and nothing else would
 * keep the device of a dying namespace until the packet is received.
 *
 * Return: 0, or -ENOBUFS (the packet was dropped).
 */
int sroce_loop_queue(struct sk_buff *skb)
{
	if (skb_queue_len_lockless(&sroce_loop_q) >= SROCE_LOOP_QLEN) {
		kfree_skb(skb);
		return -ENOBUFS;
	}
	/*
	 * The IPv4 header checksum, which IP output would have written: a
	 * UD receive hands the header to the user in its GRH area, and the
	 * field must not carry what the skb's memory held before.  (The
	 * ICRC does not cover it: IBA A17.4.)
	 */
	if (skb->protocol == htons(ETH_P_IP))
		ip_send_check(ip_hdr(skb));
	dev_hold(skb->dev);
	local_bh_disable();
	skb_queue_tail(&sroce_loop_q, skb);
	tasklet_schedule(&sroce_loop_tasklet);
	local_bh_enable();
	return 0;
}

void sroce_loop_init(void)
{
	skb_queue_head_init(&sroce_loop_q);
	tasklet_setup(&sroce_loop_tasklet, sroce_loop_run);
	INIT_WORK(&sroce_loop_work, sroce_loop_work_fn);
}

/* No device is left, so nothing queues packets any more. */
void sroce_loop_exit(void)
{
	struct sk_buff *skb;

	tasklet_kill(&sroce_loop_tasklet);
	cancel_work_sync(&sroce_loop_work);
	while ((skb = skb_dequeue(&sroce_loop_q))) {
		dev_put(skb->dev);
		kfree_skb(skb);
	}
}

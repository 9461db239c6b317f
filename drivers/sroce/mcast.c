// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce multicast: UD QPs attached to multicast groups.
 *
 * IBA 10.5 (multicast) on RoCEv2 (A17.4.5.4): a group is an IP multicast
 * address (the MGID, IPv4-mapped or IPv6), the packets carry destination
 * QPN 0xFFFFFF and every UD QP attached to the group receives a copy.
 * The first attach to a group puts its Ethernet multicast address in the
 * netdev's filter; rdma_cm also joins the IP group (IGMP/MLD), which the
 * IP layer needs to accept the packets at all.
 *
 * Groups are indexed by MGID in a hash table of the device (a datagram
 * from any host to any group, 224.0.0.1 too, looks one up) under
 * @sdev->mcg_lock, a leaf spinlock taken from process context (attach,
 * detach, destroy_qp) and from the receive softirq, which takes a
 * reference on each attached QP before it lets go of the lock and
 * delivers.
 */
#include <linux/etherdevice.h>
#include <linux/if_ether.h>
#include <linux/jhash.h>
#include <net/addrconf.h>
#include <net/ip.h>
#include <rdma/ib_addr.h>

#include "sroce.h"

/* The Ethernet multicast address of a group (RFC 1112 6.4, RFC 2464 7). */
static void sroce_mcg_mac(const union ib_gid *mgid, u8 *mac)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid->raw;

	if (ipv6_addr_v4mapped(a))
		ip_eth_mc_map(a->s6_addr32[3], mac);
	else
		ipv6_eth_mc_map(a, mac);
}

/*
 * Keyed by a secret of the device: any user picks the MGIDs of its groups,
 * and could otherwise put them all in the bucket of someone else's.
 */
static u32 sroce_mcg_key(struct sroce_dev *sdev, const union ib_gid *mgid)
{
	return jhash2((const u32 *)mgid->raw, sizeof(*mgid) / sizeof(u32),
		      sdev->mcg_seed);
}

static struct sroce_mcg *sroce_mcg_find(struct sroce_dev *sdev,
					const union ib_gid *mgid)
{
	struct sroce_mcg *mcg;

	lockdep_assert_held(&sdev->mcg_lock);
	hash_for_each_possible(sdev->mcg_hash, mcg, node,
			       sroce_mcg_key(sdev, mgid))
		if (!memcmp(&mcg->mgid, mgid, sizeof(*mgid)))
			return mcg;
	return NULL;
}

static int sroce_mcg_slot(const struct sroce_mcg *mcg,
			  const struct sroce_qp *qp)
{
	int i;

	for (i = 0; i < mcg->nr_qps; i++)
		if (mcg->qp[i] == qp)
			return i;
	return -1;
}

/* Take @qp out of @mcg; the caller holds mcg_lock. */
static void sroce_mcg_drop_qp(struct sroce_dev *sdev, struct sroce_mcg *mcg,
			      int slot)
{
	mcg->qp[slot]->nr_mcg--;
	mcg->qp[slot] = mcg->qp[--mcg->nr_qps];
	sdev->nr_mcg_attach--;
	sroce_live_dec(SROCE_OBJ_MCA);
}

/* Free @mcg if it is empty; the caller holds mcg_lock.  Return: freed. */
static bool sroce_mcg_reap(struct sroce_dev *sdev, struct sroce_mcg *mcg,
			   u8 *mac)
{
	if (mcg->nr_qps)
		return false;
	hash_del(&mcg->node);
	sdev->nr_mcg--;
	sroce_live_dec(SROCE_OBJ_MCG);
	sroce_mcg_mac(&mcg->mgid, mac);
	kfree(mcg);
	return true;
}

/**
 * sroce_attach_mcast - attach a UD QP to a multicast group
 * @ibqp: the QP (ib_core checked that it is UD and @mgid multicast)
 * @mgid: the group
 * @lid: unused on RoCE
 *
 * Attaching an attached QP again is -EEXIST: ib_core counts every
 * successful attach on the QP (usecnt) and one detach would not undo two.
 * (uverbs filters a user's repeated attach before it gets here.)
 *
 * Return: 0, -EINVAL for a non-multicast GID or a QP that is not UD,
 * -EEXIST if already attached, -ENOMEM past the group or attach limits,
 * or dev_mc_add()'s error (the netdev's filter has no room).
 */
int sroce_attach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_qp *qp = to_sqp(ibqp);
	struct sroce_mcg *mcg, *fresh;
	bool added = false;
	u8 mac[ETH_ALEN];
	int err = 0;

	if (ibqp->qp_type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)mgid->raw))
		return -EINVAL;
	/* Allocated up front: the lock is a spinlock. */
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	if (!fresh)
		return -ENOMEM;
	/*
	 * The netdev's filter entry for the group's MAC, taken before the
	 * group can exist: a group holds exactly one reference, which its
	 * last detach drops (two IPv4 groups may share a MAC, and a
	 * reference never taken must not drop the other's).  Given back
	 * below when the group was there already or is not made.
	 */
	sroce_mcg_mac(mgid, mac);
	err = dev_mc_add(sdev->ndev, mac);
	if (err) {
		kfree(fresh);
		return err;
	}

	spin_lock_bh(&sdev->mcg_lock);
	mcg = sroce_mcg_find(sdev, mgid);
	if (!mcg) {
		if (sdev->nr_mcg >= SROCE_MAX_MCG) {
			err = -ENOMEM;
			goto out;
		}
		mcg = fresh;
		fresh = NULL;
		mcg->mgid = *mgid;
		hash_add(sdev->mcg_hash, &mcg->node, sroce_mcg_key(sdev, mgid));
		sdev->nr_mcg++;
		sroce_live_inc(SROCE_OBJ_MCG);
		added = true;
	}
	if (sroce_mcg_slot(mcg, qp) >= 0) {
		err = -EEXIST;
		goto out;
	}
	if (mcg->nr_qps >= SROCE_MAX_MCG_QPS ||
	    sdev->nr_mcg_attach >= SROCE_MAX_MCG_ATTACH) {
		err = -ENOMEM;
		/* A group is never left empty. */
		added = !sroce_mcg_reap(sdev, mcg, mac) && added;
		goto out;
	}
	mcg->qp[mcg->nr_qps++] = qp;
	sdev->nr_mcg_attach++;
	sroce_live_inc(SROCE_OBJ_MCA);
	qp->nr_mcg++;
out:
	spin_unlock_bh(&sdev->mcg_lock);
	kfree(fresh);
	if (!added)
		dev_mc_del(sdev->ndev, mac);
	return err;
}

/**
 * sroce_detach_mcast - detach a UD QP from a multicast group
 * @ibqp: the QP
 * @mgid: the group
 * @lid: unused on RoCE
 *
 * Return: 0, or -EINVAL if the QP is not attached to @mgid.
 */
int sroce_detach_mcast(struct ib_qp *ibqp, union ib_gid *mgid, u16 lid)
{
	struct sroce_dev *sdev = to_sdev(ibqp->device);
	struct sroce_mcg *mcg;
	u8 mac[ETH_ALEN];
	bool freed = false;
	int slot = -1;

	spin_lock_bh(&sdev->mcg_lock);
	mcg = sroce_mcg_find(sdev, mgid);
	if (mcg)
		slot = sroce_mcg_slot(mcg, to_sqp(ibqp));
	if (slot >= 0) {
		sroce_mcg_drop_qp(sdev, mcg, slot);
		freed = sroce_mcg_reap(sdev, mcg, mac);
	}
	spin_unlock_bh(&sdev->mcg_lock);
	if (freed)
		dev_mc_del(sdev->ndev, mac);
	return slot >= 0 ? 0 : -EINVAL;
}

/**
 * sroce_mcast_detach_all - detach a QP being destroyed from every group
 * @qp: the QP; ib_core detaches its users' groups first, this covers the
 *      rest so that no group ever points at a freed QP
 */
void sroce_mcast_detach_all(struct sroce_qp *qp)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	struct sroce_mcg *mcg;
	u8 mac[ETH_ALEN];
	int bkt, slot;

again:
	spin_lock_bh(&sdev->mcg_lock);
	hash_for_each(sdev->mcg_hash, bkt, mcg, node) {
		if (!qp->nr_mcg)
			break;
		slot = sroce_mcg_slot(mcg, qp);
		if (slot < 0)
			continue;
		sroce_mcg_drop_qp(sdev, mcg, slot);
		if (sroce_mcg_reap(sdev, mcg, mac)) {
			/* Not under our lock: it takes the netdev's. */
			spin_unlock_bh(&sdev->mcg_lock);
			dev_mc_del(sdev->ndev, mac);
			goto again;
		}
	}
	spin_unlock_bh(&sdev->mcg_lock);
}

/**
 * sroce_mcast_rcv - deliver a multicast packet to every attached QP
 * @pkt: parsed and ICRC-checked, destination QPN 0xFFFFFF
 *
 * Return: the number of QPs the packet went to (0: counted as no QP).
 */
int sroce_mcast_rcv(struct sroce_pkt *pkt)
{
	struct sroce_dev *sdev = pkt->sdev;
	struct sroce_qp *qps[SROCE_MAX_MCG_QPS];
	struct sroce_mcg *mcg;
	int i, n = 0;

	spin_lock_bh(&sdev->mcg_lock);
	mcg = sroce_mcg_find(sdev, &pkt->dgid);
	for (i = 0; mcg && i < mcg->nr_qps; i++)
		if (sroce_qp_hold(mcg->qp[i]))
			qps[n++] = mcg->qp[i];
	spin_unlock_bh(&sdev->mcg_lock);

	for (i = 0; i < n; i++) {
		/*
		 * The responder checks the QP's state under its lock.  The
		 * skb is shared by the group's QPs, never left on a backlog.
		 */
		pkt->qp = qps[i];
		spin_lock_bh(&qps[i]->lock);
		/* The packets that came before. */
		sroce_rx_backlog_run(qps[i], SROCE_RX_BACKLOG_BUDGET);
		sroce_qp_rcv_locked(qps[i], pkt);
		sroce_qp_unlock(qps[i]);
		sroce_qp_put(qps[i]);
	}
	pkt->qp = NULL;
	return n;
}

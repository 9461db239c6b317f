// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce address handles: the RoCEv2 address vector of UD sends.
 *
 * IBA A17.4.5 (RoCEv2): an AH always carries a GRH; its source GID (a GID
 * table entry of type RoCE v2) gives the IP version and source address,
 * and the destination MAC is resolved by ib_core (user AHs) or by the
 * kernel caller (rdma_cm, ib_mad) before we see it.
 */
#include <linux/etherdevice.h>
#include <rdma/ib_cache.h>

#include "sroce.h"

/**
 * sroce_av_from_attr - check an AH attribute and build an address vector
 * @av: filled on success
 * @attr: the attribute; its sgid_attr was resolved by ib_core
 *
 * Return: 0, or -EINVAL for anything RoCEv2 cannot send to.
 */
int sroce_av_from_attr(struct sroce_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	struct net_device *ndev;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	/* IBA 8.3.1: the SL is 4 bits (its low three are RoCE's priority). */
	if (rdma_ah_get_port_num(attr) != 1 || rdma_ah_get_sl(attr) > 15)
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr || sgid_attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;
	if (is_zero_ether_addr(attr->roce.dmac))
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->sgid = sgid_attr->gid;
	av->dgid = grh->dgid;
	memcpy(av->dmac, attr->roce.dmac, ETH_ALEN);
	av->net_type = rdma_gid_attr_network_type(sgid_attr);
	/*
	 * The table's own index (grh->sgid_index is a u8 and ours has 1024
	 * entries); query_ah and query_qp can still report only 8 bits of it
	 * (struct ib_global_route).
	 */
	av->sgid_index = sgid_attr->index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = grh->flow_label;
	av->sl = rdma_ah_get_sl(attr);
	av->static_rate = rdma_ah_get_static_rate(attr);
	/*
	 * The GID's netdev routes the packets: a GID of a VLAN device over
	 * the bound netdev sends through it, tagged (IBA A17.4.5.1).  Only
	 * in the device's namespace, where its sockets are (netns.c): a VLAN
	 * device moved to another one could not send for us.
	 */
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sgid_attr);
	if (!IS_ERR(ndev) &&
	    net_eq(dev_net(ndev), to_sdev(sgid_attr->device)->sn->net))
		av->ifindex = ndev->ifindex;
	rcu_read_unlock();
	if (!av->ifindex)
		return -EINVAL;
	/* Both ends of one IP flow: an IPv4 source needs an IPv4 peer. */
	if (av->net_type == RDMA_NETWORK_IPV4 &&
	    !ipv6_addr_v4mapped((struct in6_addr *)av->dgid.raw))
		return -EINVAL;
	return 0;
}

int sroce_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);
	struct sroce_ah *ah = to_sah(ibah);
	int err;

	err = sroce_udata_none(udata);
	if (err)
		return err;
	err = sroce_av_from_attr(&ah->av, init->ah_attr);
	if (err)
		return err;
	if (!sroce_charge(&sdev->nr_ah, SROCE_MAX_AH))
		return -ENOMEM;
	sroce_live_inc(SROCE_OBJ_AH);
	return 0;
}

/* The AH attribute an address vector stands for (query_ah, query_qp). */
void sroce_av_to_attr(const struct sroce_av *av, struct rdma_ah_attr *attr)
{
	union ib_gid dgid = av->dgid;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_static_rate(attr, av->static_rate);
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	memcpy(attr->roce.dmac, av->dmac, ETH_ALEN);
}

int sroce_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	sroce_av_to_attr(&to_sah(ibah)->av, attr);
	return 0;
}

int sroce_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct sroce_dev *sdev = to_sdev(ibah->device);

	sroce_uncharge(&sdev->nr_ah);
	sroce_live_dec(SROCE_OBJ_AH);
	return 0;
}

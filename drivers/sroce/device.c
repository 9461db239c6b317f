// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce device layer: the ib_device_ops table, device and port queries, and
 * the port state that follows the netdev.
 */
#include <linux/etherdevice.h>
#include <linux/module.h>
#include <linux/random.h>
#include <net/addrconf.h>
#include <rdma/ib_mad.h>

#include "sroce.h"

/*
 * The port is ACTIVE when the netdev is up and has carrier; otherwise DOWN
 * (IBA 14.2.5.6 PortState; for RoCE the link is the Ethernet link).
 */
static enum ib_port_state sroce_netdev_port_state(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev) ?
		IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/**
 * sroce_active_mtu - the largest IB MTU that fits the netdev MTU
 * @ndev: the netdev
 *
 * Every RoCEv2 packet carries up to SROCE_MAX_HDR_LEN bytes of headers in
 * front of (and the ICRC behind) at most one path-MTU of payload, and it
 * must fit in one Ethernet frame (IBA A17.3).
 *
 * Return: an enum ib_mtu, or 0 when not even IB_MTU_256 fits.
 */
int sroce_active_mtu(const struct net_device *ndev)
{
	int room = (int)ndev->mtu - SROCE_MAX_HDR_LEN;
	int mtu;

	for (mtu = IB_MTU_4096; mtu >= IB_MTU_256; mtu--)
		if (ib_mtu_enum_to_int(mtu) <= room)
			return mtu;
	return 0;
}

/**
 * sroce_port_mtu - the port's active MTU in bytes, now
 * @sdev: the device
 *
 * Return: the MTU, or 0 when the netdev cannot carry IB_MTU_256.
 */
u32 sroce_port_mtu(struct sroce_dev *sdev)
{
	int mtu = sroce_active_mtu(sdev->ndev);

	return mtu ? ib_mtu_enum_to_int(mtu) : 0;
}

/**
 * sroce_port_event - tell ib_core when the port state changed
 * @sdev: the device
 *
 * Called on every netdev state event; raises IB_EVENT_PORT_ACTIVE or
 * IB_EVENT_PORT_ERR once per real change (IBA 11.6.3.3 port events), and
 * tells the operator about state and active MTU changes.
 */
void sroce_port_event(struct sroce_dev *sdev)
{
	struct ib_event ev = {
		.device = &sdev->ibdev,
		.element.port_num = 1,
	};
	enum ib_port_state old, state;
	int old_mtu, mtu;

	/*
	 * The netdev read under the lock: the netdev notifier and
	 * enable_driver (without RTNL) may both be here, and the state kept
	 * must be the one read last, or a stale one would hide the next
	 * real change.
	 */
	spin_lock(&sdev->port_lock);
	state = sroce_netdev_port_state(sdev->ndev);
	mtu = sroce_active_mtu(sdev->ndev);
	old = sdev->port_state;
	old_mtu = sdev->port_mtu;
	sdev->port_state = state;
	sdev->port_mtu = mtu;
	spin_unlock(&sdev->port_lock);

	if (old == state && old_mtu == mtu)
		return;
	/* PortCounters' LinkDownedCounter, and rdma_rxe's link_downed */
	if (old == IB_PORT_ACTIVE && state != IB_PORT_ACTIVE)
		sroce_count(sdev, SROCE_CNT_LINK_DOWNED);
	ibdev_info(&sdev->ibdev, "port 1 %s, active MTU %d, on %s\n",
		   state == IB_PORT_ACTIVE ? "ACTIVE" : "DOWN",
		   mtu ? ib_mtu_enum_to_int(mtu) : 0, sdev->ndev->name);
	if (old == state)
		return;
	ev.event = state == IB_PORT_ACTIVE ? IB_EVENT_PORT_ACTIVE :
					     IB_EVENT_PORT_ERR;
	ib_dispatch_event(&ev);
}

static int sroce_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	if (udata->inlen || udata->outlen)
		return -EINVAL;
	/* ib_core clears ibdev->attrs and fills it from here at register. */
	*attr = to_sdev(ibdev)->attrs;
	return 0;
}

/*
 * Modify HCA Attributes (IBA 11.2.1.2): the node description (what
 * ib_core's sysfs node_desc writes) and the system image GUID, as
 * rdma_rxe and NICs take them.
 */
static int sroce_modify_device(struct ib_device *ibdev, int mask,
			       struct ib_device_modify *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	if (mask & ~(IB_DEVICE_MODIFY_SYS_IMAGE_GUID |
		     IB_DEVICE_MODIFY_NODE_DESC))
		return -EOPNOTSUPP;
	if (mask & IB_DEVICE_MODIFY_SYS_IMAGE_GUID) {
		/* uverbs reports ib_core's copy of the attributes. */
		WRITE_ONCE(sdev->attrs.sys_image_guid,
			   cpu_to_be64(attr->sys_image_guid));
		WRITE_ONCE(ibdev->attrs.sys_image_guid,
			   cpu_to_be64(attr->sys_image_guid));
	}
	if (mask & IB_DEVICE_MODIFY_NODE_DESC)
		memcpy(ibdev->node_desc, attr->node_desc,
		       sizeof(ibdev->node_desc));
	return 0;
}

static int sroce_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	struct net_device *ndev = sdev->ndev;
	int err;

	/* ib_core zeroed *attr and checked port. */
	attr->state = sroce_netdev_port_state(ndev);
	attr->phys_state = attr->state == IB_PORT_ACTIVE ?
		IB_PORT_PHYS_STATE_LINK_UP : IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	/*
	 * A netdev too small for IB_MTU_256 carries no RoCE packet (nothing
	 * is sent or taken, sroce_port_mtu()); its port still answers with
	 * a valid enum ib_mtu, the least, as rdma_rxe does.
	 */
	attr->active_mtu = sroce_active_mtu(ndev) ?: IB_MTU_256;
	attr->phys_mtu = ib_mtu_enum_to_int(IB_MTU_4096);
	attr->gid_tbl_len = SROCE_PORT_GID_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	/* Its GIDs are the netdev's IP addresses, as on RoCE NICs. */
	attr->ip_gids = true;
	attr->max_msg_sz = SROCE_MAX_MSG_SIZE;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	/* PortInfo's P_Key and Q_Key violation counters stop at 0xffff. */
	attr->bad_pkey_cntr = min_t(u64, U16_MAX,
				    sroce_counter(sdev, SROCE_CNT_RX_BAD_PKEY));
	attr->qkey_viol_cntr = min_t(u64, U16_MAX,
				     sroce_counter(sdev, SROCE_CNT_RX_BAD_QKEY));

	err = ib_get_eth_speed(ibdev, port, &attr->active_speed,
			       &attr->active_width);
	if (err) {
		/* The netdev is going: a legal pair, not zeros (IBA 14.2.5.6). */
		ibdev_dbg(ibdev, "no link speed (%d)\n", err);
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int sroce_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int err;

	err = ib_query_port(ibdev, port, &attr);
	if (err)
		return err;
	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

/* RoCE has one partition: the default full-membership P_Key (IBA A17.4). */
static int sroce_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static enum rdma_link_layer sroce_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void sroce_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d", SROCE_ABI_VERSION);
}

static int sroce_alloc_ucontext(struct ib_ucontext *ibuc,
				struct ib_udata *udata)
{
	int err = sroce_udata_none(udata);

	if (err)
		return err;
	sroce_live_inc(SROCE_OBJ_UCTX);
	return 0;
}

static void sroce_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	sroce_live_dec(SROCE_OBJ_UCTX);
}

/*
 * ib_device_ops.disassociate_ucontext: the device goes (rdma link delete,
 * netdev removal, rmmod) while a process still holds @ibuc.  Having this op
 * tells ib_core not to wait for the process to close its uverbs file: it
 * destroys every object of the context now, sends IB_EVENT_DEVICE_FATAL
 * and fails later commands with EIO.  Nothing is left for us to undo: the
 * objects' destroy ops stopped the engine and removed their mmap entries.
 * A ring the process still maps keeps its pages (its mapping holds a
 * reference on each, see mmap.c) and is never written again.
 */
static void sroce_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

/* ib_core's last call into a device: undo what sroce_add_link() built. */
static void sroce_dealloc_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);

	/*
	 * Every object is destroyed; MRs freed by their last holder may still
	 * be queued, and their umem release needs this device.
	 */
	flush_workqueue(sroce_free_wq);
	/* Every QP left its groups when it was destroyed. */
	WARN_ON(!hash_empty(sdev->mcg_hash));
	/* ... and gave back its share of the window (window.c). */
	WARN_ON(atomic_read(&sdev->win_busy));
	sroce_pool_destroy(&sdev->qp_pool);
	sroce_pool_destroy(&sdev->mr_pool);
	free_percpu(sdev->stats);
	sroce_forget_device(sdev);
	dev_put(sdev->ndev);
	sroce_live_dec(SROCE_OBJ_DEV);
	/* The namespace's last device closes its UDP 4791 (netns.c). */
	sroce_net_put(sdev->sn);
}

/* /sys/class/infiniband/DEV/parent: the netdev, as rdma_rxe's. */
static ssize_t parent_show(struct device *device,
			   struct device_attribute *attr, char *buf)
{
	struct sroce_dev *sdev =
		rdma_device_to_drv_device(device, struct sroce_dev, ibdev);

	return sysfs_emit(buf, "%s\n", netdev_name(sdev->ndev));
}
static DEVICE_ATTR_RO(parent);

static struct attribute *sroce_dev_attrs[] = {
	&dev_attr_parent.attr,
	NULL
};

static const struct attribute_group sroce_dev_attr_group = {
	.attrs = sroce_dev_attrs,
};

static const struct ib_device_ops sroce_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = SROCE_DRIVER_ID,
	.uverbs_abi_ver = SROCE_ABI_VERSION,

	.alloc_hw_port_stats = sroce_alloc_hw_port_stats,
	.alloc_mr = sroce_alloc_mr,
	.alloc_mw = sroce_alloc_mw,
	.alloc_pd = sroce_alloc_pd,
	.alloc_ucontext = sroce_alloc_ucontext,
	.attach_mcast = sroce_attach_mcast,
	.create_ah = sroce_create_ah,
	.create_cq = sroce_create_cq,
	.create_qp = sroce_create_qp,
	.create_srq = sroce_create_srq,
	.create_user_ah = sroce_create_ah,
	.dealloc_driver = sroce_dealloc_driver,
	.dealloc_mw = sroce_dealloc_mw,
	.dealloc_pd = sroce_dealloc_pd,
	.dealloc_ucontext = sroce_dealloc_ucontext,
	.dereg_mr = sroce_dereg_mr,
	.destroy_ah = sroce_destroy_ah,
	.destroy_cq = sroce_destroy_cq,
	.destroy_qp = sroce_destroy_qp,
	.destroy_srq = sroce_destroy_srq,
	.detach_mcast = sroce_detach_mcast,
	.device_group = &sroce_dev_attr_group,
	.disassociate_ucontext = sroce_disassociate_ucontext,
	.enable_driver = sroce_enable_driver,
	.get_dev_fw_str = sroce_get_dev_fw_str,
	.fill_res_qp_entry = sroce_fill_res_qp_entry,
	.get_dma_mr = sroce_get_dma_mr,
	.get_hw_stats = sroce_get_hw_stats,
	.get_link_layer = sroce_get_link_layer,
	.get_port_immutable = sroce_get_port_immutable,
	.map_mr_sg = sroce_map_mr_sg,
	.process_mad = sroce_process_mad,
	.mmap = sroce_mmap,
	.mmap_free = sroce_mmap_free,
	.modify_device = sroce_modify_device,
	.modify_qp = sroce_modify_qp,
	.modify_srq = sroce_modify_srq,
	.poll_cq = sroce_poll_cq,
	.post_recv = sroce_post_recv,
	.post_send = sroce_post_send,
	.post_srq_recv = sroce_post_srq_recv,
	.query_ah = sroce_query_ah,
	.query_device = sroce_query_device,
	.query_pkey = sroce_query_pkey,
	.query_port = sroce_query_port,
	.query_qp = sroce_query_qp,
	.query_srq = sroce_query_srq,
	.reg_user_mr = sroce_reg_user_mr,
	.rereg_user_mr = sroce_rereg_user_mr,
	.req_notify_cq = sroce_req_notify_cq,
	.resize_cq = sroce_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, sroce_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, sroce_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, sroce_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, sroce_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, sroce_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, sroce_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, sroce_ucontext, ibuc),
};

/* The limits query_device reports; every create path enforces them. */
static void sroce_init_attrs(struct sroce_dev *sdev)
{
	struct ib_device_attr *a = &sdev->attrs;

	a->vendor_id = SROCE_VENDOR_ID;
	a->max_mr_size = SROCE_MAX_MR_SIZE;
	a->page_size_cap = PAGE_SIZE;
	a->max_qp = SROCE_MAX_QP;
	a->max_qp_wr = SROCE_MAX_QP_WR;
	/*
	 * MEM_MGT_EXTENSIONS (IBA 10.6.5, 11.2.1.2): fast registration
	 * (IB_WR_REG_MR), local and remote invalidation; NVMe-oF hosts
	 * require it.
	 */
	a->device_cap_flags = IB_DEVICE_PORT_ACTIVE_EVENT |
			      IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_MEM_MGT_EXTENSIONS |
			      /* the responder sends RNR NAKs (resp.c) */
			      IB_DEVICE_RC_RNR_NAK_GEN |
			      /* query_port reports the two counters */
			      IB_DEVICE_BAD_PKEY_CNTR |
			      IB_DEVICE_BAD_QKEY_CNTR |
			      /* windows of type 1 and 2B (mw.c) */
			      IB_DEVICE_MEM_WINDOW |
			      IB_DEVICE_MEM_WINDOW_TYPE_2B |
			      /*
			       * An AV names port 1, the QP's one port
			       * (sroce_av_from_attr()).
			       */
			      IB_DEVICE_UD_AV_PORT_ENFORCE;
	a->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	a->max_send_sge = SROCE_MAX_SGE;
	a->max_recv_sge = SROCE_MAX_SGE;
	a->max_sge_rd = SROCE_MAX_SGE_RD;
	a->max_cq = SROCE_MAX_CQ;
	a->max_cqe = SROCE_MAX_CQE;
	a->max_mr = SROCE_MAX_MR;
	a->max_mw = SROCE_MAX_MW;
	a->max_pd = SROCE_MAX_PD;
	a->max_qp_rd_atom = SROCE_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = SROCE_MAX_INIT_RD_ATOMIC;
	/* No device-wide pool: each QP has its own ring (resp.c). */
	a->max_res_rd_atom = SROCE_MAX_RD_ATOMIC * SROCE_MAX_QP;
	/* Atomics are CPU atomics on the target word (resp.c). */
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_ah = SROCE_MAX_AH;
	a->max_srq = SROCE_MAX_SRQ;
	a->max_srq_wr = SROCE_MAX_SRQ_WR;
	a->max_srq_sge = SROCE_MAX_SGE;
	a->max_pkeys = 1;
	a->max_mcast_grp = SROCE_MAX_MCG;
	a->max_mcast_qp_attach = SROCE_MAX_MCG_QPS;
	a->max_total_mcast_qp_attach = SROCE_MAX_MCG_ATTACH;
	a->local_ca_ack_delay = 15;
	a->sys_image_guid = sdev->ibdev.node_guid;
	/* What sysfs fw_ver prints too (sroce_get_dev_fw_str()). */
	a->fw_ver = SROCE_ABI_VERSION;
	a->max_fast_reg_page_list_len = SROCE_MAX_FRMR_PAGES;
	/*
	 * Completion timestamps of mapped CQs (cq.c) are CLOCK_MONOTONIC in
	 * ns: a 1 GHz clock of 64 bits.
	 */
	a->hca_core_clock = 1000000;	/* kHz */
	a->timestamp_mask = U64_MAX;
}

/**
 * sroce_init_device - make a freshly allocated device ready to register
 * @sdev: allocated by ib_alloc_device(), @sdev->ndev set
 *
 * Cannot fail.  From here on ib_dealloc_device() runs
 * sroce_dealloc_driver(), which undoes all of it, on every path.
 */
void sroce_init_device(struct sroce_dev *sdev)
{
	struct ib_device *ibdev = &sdev->ibdev;

	ib_set_device_ops(ibdev, &sroce_dev_ops);
	INIT_LIST_HEAD(&sdev->list);
	spin_lock_init(&sdev->port_lock);
	spin_lock_init(&sdev->pma_lock);
	spin_lock_init(&sdev->mcg_lock);
	hash_init(sdev->mcg_hash);
	sdev->mcg_seed = get_random_u32();
	sdev->port_state = IB_PORT_NOP;	/* the first event always reports */
	/* ib_core kfree()s QPs: their elements are apart (kfree_rcu). */
	sroce_pool_init(&sdev->qp_pool, SROCE_MIN_QPN, SROCE_MAX_QPN,
			SROCE_MAX_QP);
	/*
	 * MR and window keys are index << 8 | key byte, in one index; each
	 * kind counts against its own limit (mr.c).  We free them with
	 * kfree_rcu.
	 */
	sroce_pool_init(&sdev->mr_pool, 1, SROCE_MAX_MR + SROCE_MAX_MW,
			SROCE_MAX_MR + SROCE_MAX_MW);
	sroce_live_inc(SROCE_OBJ_DEV);
}

/**
 * sroce_register_device - register the ib_device of @sdev
 * @sdev: initialised by sroce_init_device()
 * @name: the device name the user asked for
 *
 * On failure the caller's ib_dealloc_device() undoes everything.
 *
 * Return: 0 or a negative errno.
 */
int sroce_register_device(struct sroce_dev *sdev, const char *name)
{
	struct ib_device *ibdev = &sdev->ibdev;
	int err;

	/*
	 * Until queues are mapped (sroce-abi.h), the provider posts and polls
	 * through these uverbs commands, which ib_core leaves off by default.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POLL_CQ) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_possible_cpus();
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "sroce", sizeof(ibdev->node_desc));
	/* Modified EUI-64 of the MAC, as RoCE NICs do (IBA A17.7.2). */
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    sdev->ndev->dev_addr);
	sroce_init_attrs(sdev);

	sdev->stats = alloc_percpu(struct sroce_stats);
	if (!sdev->stats)
		return -ENOMEM;
	err = ib_device_set_netdev(ibdev, sdev->ndev, 1);
	if (err)
		return err;
	return ib_register_device(ibdev, name, NULL);
}

// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce module: the "rdma link" type, the driver's own device list and the
 * netdev events that drive a device's life.
 *
 * Device life:
 *   rdma link add NAME type sroce netdev DEV  -> sroce_add_link()
 *   rdma link delete NAME                      -> ib_core (IBK_ALLOW_USER_UNREG)
 *   NETDEV_UNREGISTER of DEV                   -> ib_unregister_device_queued()
 *   rmmod                                      -> sroce_exit() unregisters all
 * Every path ends in sroce_dealloc_driver() (device.c), which takes the
 * device off sroce_dev_list.  The list is ours, so rmmod touches no other
 * driver's devices.
 */
#include <linux/debugfs.h>
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <net/net_namespace.h>
#include <rdma/rdma_netlink.h>

#include "sroce.h"

static LIST_HEAD(sroce_dev_list);
static DEFINE_SPINLOCK(sroce_dev_lock);	/* leaf lock, protects the list */

atomic_t sroce_live[SROCE_OBJ_MAX];
/* Take packets that came in on lo (rcv.c): for the wire tests only. */
bool sroce_rx_lo;
const char *const sroce_obj_name[SROCE_OBJ_MAX] = {
	[SROCE_OBJ_DEV] = "device",	[SROCE_OBJ_UCTX] = "ucontext",
	[SROCE_OBJ_PD] = "pd",		[SROCE_OBJ_CQ] = "cq",
	[SROCE_OBJ_QP] = "qp",		[SROCE_OBJ_SRQ] = "srq",
	[SROCE_OBJ_MR] = "mr",		[SROCE_OBJ_MW] = "mw",
	[SROCE_OBJ_AH] = "ah",
	[SROCE_OBJ_MCG] = "mcast_group", [SROCE_OBJ_MCA] = "mcast_attach",
};

/*
 * The device that serves @ndev; caller holds sroce_dev_lock.  A device
 * whose netdev already left (NETDEV_UNREGISTER, also when the netdev
 * moved to another namespace) serves it no more: its unregistration is
 * queued, and may wait for a ULP to let go of it for a long time.  The
 * netdev may be given a new device meanwhile (rdma_rxe refuses one until
 * the old device can no longer be held), and its events are that
 * device's.  Its packets are too: ib_core's netdev index lists the newest
 * device of a netdev first (ib_device_get_by_netdev()).
 */
static struct sroce_dev *sroce_find_locked(const struct net_device *ndev)
{
	struct sroce_dev *sdev;

	list_for_each_entry(sdev, &sroce_dev_list, list)
		if (sdev->ndev == ndev && !sdev->ndev_gone)
			return sdev;
	return NULL;
}

/*
 * Find the registered device bound to @ndev and take a reference on it
 * (ib_device_try_get fails while it registers or once it unregisters, and
 * while ib_core moves it to another namespace).  The netdev's
 * NETDEV_UNREGISTER (@event) is noted first, under the same lock, for
 * sroce_enable_driver() to act on if the device could not be held.
 */
static struct sroce_dev *sroce_get_by_netdev(const struct net_device *ndev,
					     unsigned long event)
{
	struct sroce_dev *sdev;

	spin_lock(&sroce_dev_lock);
	sdev = sroce_find_locked(ndev);
	if (sdev && sdev->registered && event == NETDEV_UNREGISTER)
		sdev->ndev_gone = true;
	if (sdev && (!sdev->registered || !ib_device_try_get(&sdev->ibdev)))
		sdev = NULL;
	spin_unlock(&sroce_dev_lock);
	return sdev;
}

/**
 * sroce_enable_driver - ib_core's enable_driver op: registered (again)
 * @ibdev: the device
 *
 * ib_core registers a device again after it moved it to another namespace
 * ("rdma dev set DEV netns NS" in its exclusive mode, or the exit of the
 * device's namespace), and meanwhile held it disabled: the netdev events
 * of that time found no device to hold (sroce_get_by_netdev()).  A
 * NETDEV_UNREGISTER among them, which a netdev leaving its namespace
 * sends once and never again, is acted on now, and the port's state is
 * read again.  Either the notifier noted the event before this looks, or
 * it comes after ib_core enabled the device and holds it.
 *
 * Return: 0.
 */
int sroce_enable_driver(struct ib_device *ibdev)
{
	struct sroce_dev *sdev = to_sdev(ibdev);
	bool gone;

	spin_lock(&sroce_dev_lock);
	gone = sdev->ndev_gone;
	spin_unlock(&sroce_dev_lock);
	if (gone)
		ib_unregister_device_queued(ibdev);
	else
		sroce_port_event(sdev);
	return 0;
}

/**
 * sroce_add_link - create an sroce device on a netdev ("rdma link add")
 * @ibdev_name: the name the user asked for
 * @ndev: the netdev; the caller holds a reference for the whole call
 *
 * Only one sroce device may use a netdev: the device owns the RoCEv2
 * traffic of that netdev, two could not tell whose a packet is.
 *
 * The device sends and receives in the netdev's network namespace (netns.c);
 * ib_core makes it visible in the initial one, or in every one (its
 * shared mode, the default).
 *
 * Return: 0, or -EEXIST (netdev taken), -EINVAL (not Ethernet, or a VLAN
 * device),
 * -EADDRINUSE (another RoCE stack has UDP 4791 in the netdev's
 * namespace), -ENODEV (netdev went away meanwhile), or an error from
 * ib_core.
 */
int sroce_add_link(const char *ibdev_name, struct net_device *ndev)
{
	struct sroce_dev *sdev;
	struct sroce_net *sn;
	struct net *net;
	int err;

	if (ndev->type != ARPHRD_ETHER || (ndev->flags & IFF_LOOPBACK)) {
		pr_err_ratelimited("sroce: %s is not an Ethernet device\n",
				   ndev->name);
		return -EINVAL;
	}
	/*
	 * ib_core gives the GIDs of a VLAN device's addresses to the device
	 * of the netdev below it, and a device bound to the VLAN device
	 * itself only its default GID (roce_gid_mgmt.c): two devices would
	 * share the VLAN's traffic, and one alone could not be reached by
	 * address.  rdma_rxe refuses them too, and a NIC's device is its
	 * port's.
	 */
	if (is_vlan_dev(ndev)) {
		pr_err_ratelimited("sroce: %s is a VLAN device: bind %s, and its device serves the VLAN\n",
				   ndev->name, vlan_dev_real_dev(ndev)->name);
		return -EINVAL;
	}
	/*
	 * UDP 4791 of the netdev's namespace, opened by its first device;
	 * dealloc_driver puts it.  The netdev does not keep its namespace:
	 * read under RTNL (which orders namespace moves) and held until the
	 * device holds the sockets (the namespace's exit waits for those).
	 */
	rtnl_lock();
	net = maybe_get_net(dev_net(ndev));
	rtnl_unlock();
	if (!net)
		return -ENODEV;
	sn = sroce_net_get(net);
	put_net(net);
	if (IS_ERR(sn))
		return PTR_ERR(sn);
	sdev = ib_alloc_device(sroce_dev, ibdev);
	if (!sdev) {
		sroce_net_put(sn);
		return -ENOMEM;
	}
	/*
	 * Our own reference: sysfs may query the port while the device
	 * unregisters, after ib_core let go of the netdev.  The netdev's
	 * unregistration waits for it; dealloc_driver puts it.
	 */
	dev_hold(ndev);
	sdev->ndev = ndev;
	sdev->sn = sn;
	/* From here on, ib_dealloc_device() undoes everything. */
	sroce_init_device(sdev);

	/* Claim the netdev before registering, so a second add fails. */
	spin_lock(&sroce_dev_lock);
	if (sroce_find_locked(ndev)) {
		spin_unlock(&sroce_dev_lock);
		pr_err_ratelimited("sroce: %s already has an sroce device\n",
				   ndev->name);
		ib_dealloc_device(&sdev->ibdev);
		return -EEXIST;
	}
	list_add_tail(&sdev->list, &sroce_dev_list);
	spin_unlock(&sroce_dev_lock);

	/*
	 * Once registered, the device is an "rdma link delete" away from
	 * being freed, before ib_register_device() has even returned: the
	 * memory is held for what follows, and the device itself only if
	 * nobody is unregistering it yet (ib_device_try_get()).
	 */
	get_device(&sdev->ibdev.dev);
	err = sroce_register_device(sdev, ibdev_name);
	if (err) {
		ib_dealloc_device(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
		return err;
	}

	/*
	 * The netdev may have started to unregister (or moved to another
	 * namespace) while we registered; its NETDEV_UNREGISTER event could
	 * not see us yet.  RTNL orders us
	 * against the notifier: either it sees ->registered, or we see the
	 * netdev is going and back out ourselves.
	 */
	rtnl_lock();
	if (!ib_device_try_get(&sdev->ibdev)) {
		/* Deleted already; its unregistration undoes the rest. */
		rtnl_unlock();
		put_device(&sdev->ibdev.dev);
		return -ENODEV;
	}
	if (ndev->reg_state == NETREG_REGISTERED &&
	    net_eq(dev_net(ndev), sn->net)) {
		spin_lock(&sroce_dev_lock);
		sdev->registered = true;
		spin_unlock(&sroce_dev_lock);
		sroce_port_event(sdev);
		rtnl_unlock();
		ib_device_put(&sdev->ibdev);
		put_device(&sdev->ibdev.dev);
		return 0;
	}
	rtnl_unlock();
	ib_device_put(&sdev->ibdev);
	ib_unregister_device(&sdev->ibdev);
	put_device(&sdev->ibdev.dev);
	return -ENODEV;
}

/*
 * Called by ib_core as the device's last op (sroce_dealloc_driver()); the
 * device may never have made it onto the list (a refused add).
 */
void sroce_forget_device(struct sroce_dev *sdev)
{
	spin_lock(&sroce_dev_lock);
	list_del_init(&sdev->list);
	spin_unlock(&sroce_dev_lock);
}

static int sroce_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct sroce_dev *sdev;

	sdev = sroce_get_by_netdev(ndev, event);
	if (!sdev)
		return NOTIFY_DONE;

	switch (event) {
	case NETDEV_UNREGISTER:
		/* We run under RTNL, which ib_core's unregistration takes. */
		ib_unregister_device_queued(&sdev->ibdev);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
	case NETDEV_CHANGEMTU:
		sroce_port_event(sdev);
		break;
	default:
		break;
	}
	ib_device_put(&sdev->ibdev);
	return NOTIFY_DONE;
}

static struct notifier_block sroce_netdev_nb = {
	.notifier_call = sroce_netdev_event,
};

static struct rdma_link_ops sroce_link_ops = {
	.type = SROCE_DRV_NAME,
	.newlink = sroce_add_link,
};

/*
 * /sys/kernel/debug/sroce/objects: the live-object counters, all devices
 * together.  Tests compare them before and after a run; rmmod reports
 * whatever is left.
 */
static struct dentry *sroce_debugfs;

static int sroce_objects_show(struct seq_file *s, void *unused)
{
	int t;

	for (t = 0; t < SROCE_OBJ_MAX; t++)
		seq_printf(s, "%s %d\n", sroce_obj_name[t],
			   atomic_read(&sroce_live[t]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sroce_objects);

static void sroce_check_leaks(void)
{
	int t, n;

	for (t = 0; t < SROCE_OBJ_MAX; t++) {
		n = atomic_read(&sroce_live[t]);
		if (n)
			pr_err("sroce: leak: %d %s object(s) still live at unload\n",
			       n, sroce_obj_name[t]);
	}
}

struct workqueue_struct *sroce_wq;
struct workqueue_struct *sroce_free_wq;

static int __init sroce_init(void)
{
	int err;

	/* The send side of QPs; storage ULPs (NVMe-oF) write back through it. */
	sroce_wq = alloc_workqueue("sroce", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!sroce_wq)
		return -ENOMEM;
	/*
	 * MRs freed by their last holder: a queue of its own, which device
	 * removal flushes (sroce_wq can be busy for as long as traffic runs).
	 */
	sroce_free_wq = alloc_workqueue("sroce_free", WQ_UNBOUND, 0);
	if (!sroce_free_wq) {
		err = -ENOMEM;
		goto err_wq;
	}
	sroce_resp_init();
	err = sroce_net_init();
	if (err)
		goto err_free_wq;
	err = sroce_netns_init();
	if (err)
		goto err_net;
	err = register_netdevice_notifier(&sroce_netdev_nb);
	if (err)
		goto err_netns;
	rdma_link_register(&sroce_link_ops);
	sroce_debugfs = debugfs_create_dir(SROCE_DRV_NAME, NULL);
	debugfs_create_file("objects", 0444, sroce_debugfs, NULL,
			    &sroce_objects_fops);
	debugfs_create_bool("rx_lo", 0600, sroce_debugfs, &sroce_rx_lo);
	sroce_fault_init(sroce_debugfs);
	pr_info("sroce: loaded (uABI %d, driver id %#x)\n", SROCE_ABI_VERSION,
		SROCE_DRIVER_ID);
	return 0;

err_netns:
	sroce_netns_exit();
err_net:
	sroce_net_exit();
err_free_wq:
	destroy_workqueue(sroce_free_wq);
err_wq:
	destroy_workqueue(sroce_wq);
	return err;
}

static void __exit sroce_exit(void)
{
	/* No new devices (waits for a running "rdma link add" to return). */
	rdma_link_unregister(&sroce_link_ops);
	/*
	 * No new queued unregistrations (its replay of NETDEV_UNREGISTER
	 * queues one for every device).
	 */
	unregister_netdevice_notifier(&sroce_netdev_nb);
	/*
	 * Every device unregistered, and every unregistration that another
	 * thread runs (rdma link delete, the queued ones) finished: a device
	 * leaves ib_core's list only after its dealloc_driver op returned,
	 * the fence before our code may go (ib_core's contract).
	 */
	ib_unregister_driver((enum rdma_driver_id)SROCE_DRIVER_ID);
	debugfs_remove_recursive(sroce_debugfs);
	/* No device, so no QP and no socket: nothing queues work. */
	sroce_netns_exit();
	sroce_net_exit();
	sroce_resp_exit();
	destroy_workqueue(sroce_wq);
	destroy_workqueue(sroce_free_wq);
	sroce_check_leaks();
	pr_info("sroce: unloaded\n");
}

module_init(sroce_init);
module_exit(sroce_exit);

MODULE_AUTHOR("The sroce authors");
MODULE_DESCRIPTION("sroce: software RoCEv2 RDMA provider");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK(SROCE_DRV_NAME);

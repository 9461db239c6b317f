// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce network namespaces: the RoCEv2 sockets (UDP 4791, IPv4 and IPv6)
 * of each namespace that has a device.
 *
 * A device sends and receives in the namespace of its netdev.  The first
 * device of a namespace opens the port there, the last one closes it (in
 * its dealloc_driver op), so a namespace without sroce devices leaves the
 * port to whoever wants it: rdma_rxe (which holds the initial namespace's
 * port from the moment it loads) and sroce run side by side in different
 * namespaces of one host.
 *
 * Where the ib_device is visible ("rdma system set netns exclusive",
 * "rdma dev set DEV netns NS") is ib_core's business and moves no socket:
 * the data path follows the netdev.  A netdev that leaves its namespace
 * is unregistered there (NETDEV_UNREGISTER) and takes its device with it
 * (main.c), so a device's namespace never changes.
 */
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>

#include "sroce.h"

static unsigned int sroce_net_id;

/*
 * Protects every namespace's sockets and users.  Taken with no other lock
 * of ours held (newlink, dealloc_driver); only the socket layer's own locks
 * nest inside it.
 */
static DEFINE_MUTEX(sroce_sock_mutex);
/* A namespace's exit waits here for the last of its devices to go. */
static DECLARE_WAIT_QUEUE_HEAD(sroce_sock_wait);

static struct socket *sroce_sock_create(struct net *net, bool ipv6)
{
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = sroce_encap_rcv,
	};
	struct udp_port_cfg cfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.ipv6_v6only = ipv6,
		.local_udp_port = htons(ROCE_V2_UDP_DPORT),
	};
	struct socket *sock;
	int err;

	err = udp_sock_create(net, &cfg, &sock);
	if (err)
		return ERR_PTR(err);
	setup_udp_tunnel_sock(net, sock, &tcfg);
	/*
	 * IBA 10.5: every QP attached to a group receives its packets, on
	 * the sending node too, as a RoCE NIC loops them to its own QPs.
	 * The IP stack loops a multicast back to a joined host (rdma_cm
	 * joins the IP group) when the sending socket asks for it; a
	 * tunnel socket is set not to, an IPv6 one still does.
	 */
	if (!ipv6)
		inet_sk(sock->sk)->mc_loop = 1;
	return sock;
}

/* Why rdma link add failed: the answer the operator needs is who has it. */
static int sroce_sock_error(const char *family, struct socket *sock)
{
	pr_err_ratelimited("sroce: cannot bind UDP port %d (%s) in this network namespace: %ld%s\n",
			   ROCE_V2_UDP_DPORT, family, PTR_ERR(sock),
			   PTR_ERR(sock) == -EADDRINUSE ?
			   ", another RoCE stack (rdma_rxe?) holds it" : "");
	return PTR_ERR(sock);
}

static int sroce_sock_open(struct sroce_net *sn)
{
	struct socket *sock;

	sock = sroce_sock_create(sn->net, false);
	if (IS_ERR(sock))
		return sroce_sock_error("IPv4", sock);
	sn->sock4 = sock;
	sock = sroce_sock_create(sn->net, true);
	if (PTR_ERR(sock) == -EAFNOSUPPORT) {
		/*
		 * IPv6 disabled (ipv6.disable=1): RoCEv2 over IPv4 only.  The
		 * default link-local GID ib_core adds still appears; a QP
		 * that uses it finds no route (sroce_route6()), its packets
		 * count as tx_errors, and it ends in retry exceeded.
		 */
		pr_info_once("sroce: IPv6 is disabled: RoCEv2 over IPv4 only\n");
		return 0;
	}
	if (IS_ERR(sock)) {
		udp_tunnel_sock_release(sn->sock4);
		sn->sock4 = NULL;
		return sroce_sock_error("IPv6", sock);
	}
	sn->sock6 = sock;
	return 0;
}

/**
 * sroce_net_get - the RoCEv2 sockets of a namespace, for one more device
 * @net: the namespace of the device's netdev
 *
 * The namespace's first device opens them.  Each device holds them from
 * before it registers until its dealloc_driver op (sroce_net_put()), so a
 * device that can send or receive always finds them, and they never change
 * under it: the data path reads them without a lock.
 *
 * The caller holds the netdev, which keeps @net alive for the call; the
 * namespace's exit waits for every device that holds its sockets.
 *
 * Return: the namespace's sockets, or ERR_PTR(-EADDRINUSE) (another stack,
 * rdma_rxe, has UDP 4791 there) or another error from the socket layer.
 */
struct sroce_net *sroce_net_get(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);
	int err = 0;

	mutex_lock(&sroce_sock_mutex);
	if (!sn->users)
		err = sroce_sock_open(sn);
	if (!err)
		WRITE_ONCE(sn->users, sn->users + 1);
	mutex_unlock(&sroce_sock_mutex);
	return err ? ERR_PTR(err) : sn;
}

/* A device of @sn's namespace is gone; the last one closes the sockets. */
void sroce_net_put(struct sroce_net *sn)
{
	unsigned int users;

	mutex_lock(&sroce_sock_mutex);
	if (WARN_ON(!sn->users))
		goto out;
	if (sn->users == 1) {
		if (sn->sock6)
			udp_tunnel_sock_release(sn->sock6);
		udp_tunnel_sock_release(sn->sock4);
		sn->sock6 = NULL;
		sn->sock4 = NULL;
	}
	/* Last: the namespace's exit may free @sn once it reads zero. */
	users = sn->users - 1;
	WRITE_ONCE(sn->users, users);
	if (!users)
		wake_up_all(&sroce_sock_wait);
out:
	mutex_unlock(&sroce_sock_mutex);
}

static int __net_init sroce_net_init_ns(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	sn->net = net;
	return 0;
}

/*
 * The namespace goes.  Our exit runs after the network devices' (we are a
 * pernet subsystem): each netdev of the namespace was destroyed or moved
 * back to the initial namespace, and either queued the unregistration of
 * its sroce device (main.c).  A kernel socket holds no reference on its
 * namespace, so wait for those devices to put the sockets, as the
 * netdevs' own removal waits for their users.
 */
static void __net_exit sroce_net_exit_ns(struct net *net)
{
	struct sroce_net *sn = net_generic(net, sroce_net_id);

	while (!wait_event_timeout(sroce_sock_wait, !READ_ONCE(sn->users),
				   10 * HZ))
		pr_warn("sroce: a dying network namespace waits for %u device(s) to unregister\n",
			READ_ONCE(sn->users));
}

static struct pernet_operations sroce_net_ops = {
	.init = sroce_net_init_ns,
	.exit = sroce_net_exit_ns,
	.id = &sroce_net_id,
	.size = sizeof(struct sroce_net),
};

int sroce_netns_init(void)
{
	return register_pernet_subsys(&sroce_net_ops);
}

/* After every device is gone: no namespace has sockets of ours. */
void sroce_netns_exit(void)
{
	unregister_pernet_subsys(&sroce_net_ops);
}

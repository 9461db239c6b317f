// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sroce network layer: RoCEv2 packets out (IBA annex A17), and the ICRC
 * both directions use.
 *
 * Transmit builds IP/UDP(4791)/BTH/.../ICRC and hands it to the IP stack
 * through the route to the destination GID, so neighbour resolution,
 * netfilter, qdiscs and tc netem all apply.  A packet for a local address
 * (its route is the loopback device) is not handed to the IP stack: it
 * goes to the loopback queue of the receive path (rcv.c), where every
 * check applies as to a packet from the wire.  The packets of a connected
 * QP leave through its transmit queue, in the order they were built,
 * once the engine released the QP's lock (sroce_qp_unlock()).
 */
#include <linux/crc32.h>
#include <linux/if_vlan.h>
#include <linux/random.h>
#include <linux/sizes.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>
#include <net/udp.h>

#include <rdma/ib_addr.h>

#include <asm/unaligned.h>
#include <crypto/hash.h>

#include "sroce.h"
#include "trace.h"

/*
 * ICRC (IBA A17.3.3 / 7.8.1): CRC-32 over the packet from the IP header
 * to the end of the payload and pad, with the fields a router may change
 * replaced by ones: IPv4 TOS, TTL and checksum; IPv6 traffic class, flow
 * label and hop limit; the UDP checksum; and the BTH's FECN/BECN/resv6
 * byte.  The RoCE LRH placeholder of 8 bytes of ones comes first: the
 * seed below is the CRC of those 8 bytes.
 */
#define SROCE_ICRC_SEED	0xdebb20e3

/*
 * The CRC-32 of the crypto API ("crc32": crc32_le with the seed in its
 * context), for its accelerated versions (crc32-pclmul on x86 CPUs with
 * PCLMULQDQ, as rdma_rxe uses); crc32_le when none loads, when the
 * crypto layer cannot use the vector unit in this context, or when
 * crc32_le measured faster at load (sroce_crc_choose()).
 */
static struct crypto_shash *sroce_crc_tfm;

static u32 sroce_crc32(u32 crc, const void *p, size_t len)
{
	if (sroce_crc_tfm) {
		SHASH_DESC_ON_STACK(desc, sroce_crc_tfm);

		desc->tfm = sroce_crc_tfm;
		*(u32 *)shash_desc_ctx(desc) = crc;
		if (!crypto_shash_update(desc, p, len))
			return *(u32 *)shash_desc_ctx(desc);
	}
	return crc32_le(crc, p, len);
}

/* Nanoseconds one CRC-32 of @buf takes, the best of a few runs. */
static u64 sroce_crc_time(const void *buf, size_t len, bool tfm, u32 *crc)
{
	u64 best = U64_MAX, t;
	int i;

	for (i = 0; i < 8; i++) {
		t = ktime_get_ns();
		*crc = tfm ? sroce_crc32(~0U, buf, len) : crc32_le(~0U, buf, len);
		best = min(best, ktime_get_ns() - t);
	}
	return best;
}

/*
 * Which CRC-32 is faster here.  The crypto API ranks its drivers by a
 * fixed priority, which puts crc32-pclmul first; that is right on real
 * CPUs, where it is several times faster than crc32_le's tables.  Where
 * the CPU is emulated (QEMU's TCG runs each PCLMULQDQ as a loop over 64
 * bits), the tables can win: the ICRC of every packet, sent and received,
 * is the largest cost the driver has there.  So time both once, over a
 * packet's worth of bytes, and keep the faster.
 */
static void sroce_crc_choose(void)
{
	u64 ns_tfm, ns_le;
	u32 crc_tfm, crc_le;
	bool use_le;
	void *buf;

	if (!sroce_crc_tfm)
		return;
	buf = kmalloc(SZ_4K, GFP_KERNEL);
	if (!buf)
		return;
	get_random_bytes(buf, SZ_4K);
	ns_tfm = sroce_crc_time(buf, SZ_4K, true, &crc_tfm);
	ns_le = sroce_crc_time(buf, SZ_4K, false, &crc_le);
	kfree(buf);
	if (crc_tfm != crc_le) {
		pr_warn("sroce: ICRC: %s disagrees with crc32_le: crc32_le\n",
			crypto_shash_driver_name(sroce_crc_tfm));
		use_le = true;
	} else {
		use_le = ns_le < ns_tfm;
		pr_info("sroce: ICRC: %s %llu ns, crc32_le %llu ns per 4 KiB: %s\n",
			crypto_shash_driver_name(sroce_crc_tfm), ns_tfm, ns_le,
			use_le ? "crc32_le" :
			crypto_shash_driver_name(sroce_crc_tfm));
	}
	if (use_le) {
		crypto_free_shash(sroce_crc_tfm);
		sroce_crc_tfm = NULL;
	}
}

/*
 * The CRC (not yet inverted) of the invariant part of a packet's headers
 * up to and including the BTH (IBA A17.3.3).
 */
static u32 sroce_icrc_head(const void *nethdr, bool ipv4, const u8 *bth)
{
	u8 ps[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
	      sizeof(struct sroce_bth)];
	u32 nlen = ipv4 ? sizeof(struct iphdr) : sizeof(struct ipv6hdr);
	struct udphdr *uh;

	memcpy(ps, nethdr, nlen + sizeof(*uh));
	if (ipv4) {
		struct iphdr *ih = (struct iphdr *)ps;

		ih->tos = 0xff;
		ih->ttl = 0xff;
		ih->check = CSUM_MANGLED_0;
	} else {
		struct ipv6hdr *ih = (struct ipv6hdr *)ps;

		ih->priority = 0xf;
		memset(ih->flow_lbl, 0xff, sizeof(ih->flow_lbl));
		ih->hop_limit = 0xff;
	}
	uh = (struct udphdr *)(ps + nlen);
	uh->check = CSUM_MANGLED_0;
	memcpy(ps + nlen + sizeof(*uh), bth, sizeof(struct sroce_bth));
	ps[nlen + sizeof(*uh) + 4] = 0xff;	/* FECN, BECN, resv6 */

	return sroce_crc32(SROCE_ICRC_SEED, ps,
			   nlen + sizeof(*uh) + sizeof(struct sroce_bth));
}

/**
 * sroce_icrc - the ICRC of a RoCEv2 packet
 * @nethdr: the IP header, followed by the UDP header
 * @ipv4: IPv4 (else IPv6)
 * @bth: the BTH
 * @len: bytes from the BTH to the ICRC (excluded), contiguous
 *
 * Return: the ICRC, to be stored little endian behind the payload.
 */
u32 sroce_icrc(const void *nethdr, bool ipv4, const u8 *bth, u32 len)
{
	u32 crc = sroce_icrc_head(nethdr, ipv4, bth);

	return ~sroce_crc32(crc, bth + sizeof(struct sroce_bth),
			    len - sizeof(struct sroce_bth));
}

/**
 * sroce_icrc_frags - the ICRC of a packet whose payload is in fragments
 * @skb: the packet, its network header set; the BTH and extension
 *	headers in the linear part, then the payload in page fragments, the
 *	last of which ends with the 4 bytes of the ICRC (zero-copy transmit)
 * @ipv4: IPv4 (else IPv6)
 * @bth: the BTH
 *
 * Return: the ICRC, to be stored little endian in its 4 bytes.
 */
u32 sroce_icrc_frags(const struct sk_buff *skb, bool ipv4, const u8 *bth)
{
	const struct skb_shared_info *sh = skb_shinfo(skb);
	u32 crc = sroce_icrc_head(skb_network_header(skb), ipv4, bth);
	int i;

	crc = sroce_crc32(crc, bth + sizeof(struct sroce_bth),
			  skb_tail_pointer(skb) - bth - sizeof(struct sroce_bth));
	for (i = 0; i < sh->nr_frags; i++) {
		const skb_frag_t *f = &sh->frags[i];
		u32 len = skb_frag_size(f);
		u8 *p;

		if (i == sh->nr_frags - 1)
			len -= SROCE_ICRC_LEN;
		p = kmap_local_page(skb_frag_page(f));
		crc = sroce_crc32(crc, p + skb_frag_off(f), len);
		kunmap_local(p);
	}
	return ~crc;
}

/*
 * The UDP source port of a QP until it has a path (a UD QP's for good, as
 * rdma_rxe's): constant per QP, spread over QPs (IBA A17.2.2).  A
 * connected QP's follows its path (sroce_apply_attr()).
 */
u16 sroce_src_port(u32 qpn)
{
	return IB_ROCE_UDP_ENCAP_VALID_PORT_MIN | (hash_32(qpn, 14) & 0x3fff);
}

/* Start a packet; its payload linear, or (@frags) to come as fragments. */
static int __sroce_pkt_alloc(struct sroce_dev *sdev, struct sroce_pkt *pkt,
			     u8 opcode, u32 paylen, bool frags)
{
	u32 info = sroce_op_info(opcode);
	u32 hlen, pad = -paylen & 3;
	u32 linear = frags ? 0 : paylen + pad + SROCE_ICRC_LEN;
	struct sk_buff *skb;

	if (sroce_fail(SROCE_FAULT_PACKET))
		return -ENOMEM;
	if (sroce_opcode_tp(opcode) == IB_OPCODE_UD)
		info |= SROCE_H_DETH;
	hlen = sizeof(struct sroce_bth) + sroce_ext_len(info);
	skb = alloc_skb(LL_MAX_HEADER + sizeof(struct ipv6hdr) +
			sizeof(struct udphdr) + hlen + linear, GFP_ATOMIC);
	if (!skb)
		return -ENOMEM;
	skb_reserve(skb, LL_MAX_HEADER + sizeof(struct ipv6hdr) +
		    sizeof(struct udphdr));
	pkt->skb = skb;
	pkt->hdr = skb_put(skb, hlen + linear);
	/*
	 * Headers, pad and ICRC zeroed; not the payload: every caller fills
	 * all of it (or frees the packet when its copy fails).
	 */
	memset(pkt->hdr, 0, hlen);
	if (frags) {
		pkt->payload = NULL;
		pkt->icrc = NULL;
	} else {
		memset(pkt->hdr + hlen + paylen, 0, pad + SROCE_ICRC_LEN);
		pkt->payload = pkt->hdr + hlen;
		pkt->icrc = pkt->payload + paylen + pad;
	}
	pkt->ext = pkt->hdr + sizeof(struct sroce_bth);
	pkt->paylen = paylen;
	pkt->opcode = opcode;
	pkt->info = info;
	pkt->pad = pad;
	pkt->bth->opcode = opcode;
	pkt->bth->flags = pad << SROCE_BTH_PAD_SHIFT;
	pkt->bth->pkey = htons(IB_DEFAULT_PKEY_FULL);
	return 0;
}

/**
 * sroce_pkt_alloc - start a packet: BTH, room for extensions and payload
 * @sdev: the device
 * @pkt: filled: skb, hdr (the BTH), ext, payload
 * @opcode: the BTH opcode
 * @paylen: payload bytes
 *
 * The IP and UDP headers are added by sroce_xmit().  The payload is not
 * zeroed: the caller fills all @paylen bytes, or frees the skb.
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_pkt_alloc(struct sroce_dev *sdev, struct sroce_pkt *pkt, u8 opcode,
		    u32 paylen)
{
	return __sroce_pkt_alloc(sdev, pkt, opcode, paylen, false);
}

/**
 * sroce_pkt_alloc_frags - start a packet whose payload will be fragments
 * @sdev: the device
 * @pkt: filled: skb, hdr (the BTH), ext; payload is NULL
 * @opcode: the BTH opcode
 * @paylen: payload bytes, to be added as page fragments
 *
 * For zero-copy transmit: the caller adds exactly @paylen bytes of page
 * fragments (sroce_mr_frags()), then calls sroce_pkt_trailer().
 *
 * Return: 0 or -ENOMEM.
 */
int sroce_pkt_alloc_frags(struct sroce_dev *sdev, struct sroce_pkt *pkt,
			  u8 opcode, u32 paylen)
{
	return __sroce_pkt_alloc(sdev, pkt, opcode, paylen, true);
}

/*
 * Zero-copy transmit: payloads of at least this many bytes are sent from
 * the MR's pages rather than copied (sroce_zc_ok()).
 */
#define SROCE_ZC_MIN	512

/**
 * sroce_zc_ok - send this payload from the MR's pages, without a copy?
 * @sdev: the device
 * @paylen: the packet's payload bytes
 *
 * When the payload is large enough to be worth page references and a
 * fragment more than a copy, and the device takes fragments (else the
 * stack would copy it back into one buffer).  The caller checks the rest:
 * an RC request (whose WR completes only once it is acknowledged, so its
 * buffer is not reused while the packet may still be queued below us)
 * from user MRs (pages the process pinned; kernel memory named through
 * the DMA MR may be freed and poisoned while a retransmitted copy still
 * sits in a queue).
 *
 * Return: true to send the payload as page fragments.
 */
bool sroce_zc_ok(struct sroce_dev *sdev, u32 paylen)
{
	return paylen >= SROCE_ZC_MIN && (sdev->ndev->features & NETIF_F_SG);
}

/* Add @n bytes of @page at @off to @skb, whose reference it takes. */
static void sroce_skb_add_page(struct sk_buff *skb, struct page *page,
			       u32 off, u32 n, u32 truesize)
{
	skb_fill_page_desc(skb, skb_shinfo(skb)->nr_frags, page, off, n);
	skb->len += n;
	skb->data_len += n;
	skb->truesize += truesize;
}

/**
 * sroce_pkt_add_frag - add bytes of one page of a user MR to a packet
 * @skb: the packet
 * @p: the bytes' kernel address (the direct map of a pinned user page)
 * @n: how many; they do not cross a page
 *
 * The page itself, with a reference: the packet keeps it allocated until
 * the device is done with it, however soon the MR is deregistered.  Its
 * fragments are marked shared (SKBFL_SHARED_FRAG): the process may write
 * the page meanwhile, so nothing may trust them not to change.
 *
 * Return: 0, or -EMSGSIZE when the packet has no room for a fragment and
 * its trailer (the caller's bound on fragments says it never happens).
 */
int sroce_pkt_add_frag(struct sk_buff *skb, void *p, u32 n)
{
	struct page *page = virt_to_page(p);

	if (WARN_ON_ONCE(skb_shinfo(skb)->nr_frags >= MAX_SKB_FRAGS - 1))
		return -EMSGSIZE;
	get_page(page);
	sroce_skb_add_page(skb, page, offset_in_page(p), n, n);
	skb_shinfo(skb)->flags |= SKBFL_SHARED_FRAG;
	return 0;
}

/**
 * sroce_pkt_trailer - end a packet of fragments with its pad and ICRC
 * @pkt: from sroce_pkt_alloc_frags(), its payload fragments added
 *
 * Pad and ICRC follow the payload, so they are a fragment too: a few
 * bytes of the CPU's page fragment cache, released with the skb.
 *
 * Return: 0, or -ENOMEM (the caller frees the packet).
 */
int sroce_pkt_trailer(struct sroce_pkt *pkt)
{
	u32 len = pkt->pad + SROCE_ICRC_LEN;
	struct page *page;
	u8 *p;

	if (WARN_ON_ONCE(skb_shinfo(pkt->skb)->nr_frags >= MAX_SKB_FRAGS))
		return -ENOMEM;
	p = netdev_alloc_frag(len);
	if (!p)
		return -ENOMEM;
	/* Pad bytes are zero (IBA 9.3.1); the ICRC comes in sroce_xmit(). */
	memset(p, 0, len);
	page = virt_to_head_page(p);
	sroce_skb_add_page(pkt->skb, page, p - (u8 *)page_address(page), len,
			   SKB_DATA_ALIGN(len));
	pkt->icrc = p + pkt->pad;
	return 0;
}

/*
 * The route from the source GID's netdev (av->ifindex: the bound netdev or
 * a VLAN device over it).
 */
static struct dst_entry *sroce_route4(struct sroce_dev *sdev,
				      const struct sroce_av *av)
{
	struct flowi4 fl = {
		.flowi4_oif = av->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.flowi4_tos = av->traffic_class & IPTOS_TOS_MASK,
	};
	struct rtable *rt;

	memcpy(&fl.saddr, &av->sgid.raw[12], 4);
	memcpy(&fl.daddr, &av->dgid.raw[12], 4);
	rt = ip_route_output_key(sdev->sn->net, &fl);
	return IS_ERR(rt) ? NULL : &rt->dst;
}

static struct dst_entry *sroce_route6(struct sroce_dev *sdev,
				      const struct sroce_av *av)
{
	struct flowi6 fl = {
		.flowi6_oif = av->ifindex,
		.flowi6_proto = IPPROTO_UDP,
	};
	struct socket *sock = sdev->sn->sock6;
	struct dst_entry *dst;

	if (!sock)	/* IPv6 disabled */
		return NULL;
	memcpy(&fl.saddr, av->sgid.raw, 16);
	memcpy(&fl.daddr, av->dgid.raw, 16);
	dst = ipv6_stub->ipv6_dst_lookup_flow(sdev->sn->net, sock->sk, &fl,
					      NULL);
	if (IS_ERR(dst))
		return NULL;
	if (dst->error) {
		dst_release(dst);
		return NULL;
	}
	return dst;
}

/*
 * The route to @av, from @cache when it holds a valid one (dst_cache drops
 * routes that the stack obsoleted, and those set before a reset).
 */
static struct dst_entry *sroce_route(struct sroce_dev *sdev,
				     const struct sroce_av *av, bool ipv4,
				     struct dst_cache *cache)
{
	struct dst_entry *dst;

	if (cache) {
		dst = dst_cache_get(cache);
		if (dst)
			return dst;
	}
	dst = ipv4 ? sroce_route4(sdev, av) : sroce_route6(sdev, av);
	if (dst && cache) {
		if (ipv4)
			dst_cache_set_ip4(cache, dst,
					  *(__be32 *)&av->sgid.raw[12]);
		else
			dst_cache_set_ip6(cache, dst,
					  (const struct in6_addr *)av->sgid.raw);
	}
	return dst;
}

/*
 * Finish a packet: route, UDP and IP headers, ICRC.  @ip_id: a connected
 * QP's next IPv4 ID, or NULL for one from the stack's generator.  On error
 * the skb is freed (and counted).
 */
static int sroce_xmit_build(struct sroce_dev *sdev, const struct sroce_av *av,
			    struct dst_cache *cache, u16 src_port, u16 *ip_id,
			    struct sroce_pkt *pkt)
{
	bool ipv4 = av->net_type == RDMA_NETWORK_IPV4;
	struct sk_buff *skb = pkt->skb;
	struct dst_entry *dst;
	struct udphdr *uh;
	u32 len = skb->len;

	dst = sroce_route(sdev, av, ipv4, cache);
	if (!dst) {
		kfree_skb(skb);
		sroce_count(sdev, SROCE_CNT_TX_ERR);
		return -EHOSTUNREACH;
	}
	skb_dst_set(skb, dst);
	skb->protocol = htons(ipv4 ? ETH_P_IP : ETH_P_IPV6);
	/*
	 * The SL's low three bits: the 802.1p priority a RoCE NIC sends
	 * (admin-guide.rst), 0 to 7.  Any user may choose any SL, as on a
	 * NIC, so also priority 7, which SO_PRIORITY keeps for
	 * CAP_NET_ADMIN or CAP_NET_RAW (admin-guide.rst says so).
	 */
	skb->priority = av->sl & 7;

	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = htons(src_port);
	uh->dest = htons(ROCE_V2_UDP_DPORT);
	uh->len = htons(skb->len);
	/* Zero: the ICRC covers the packet (IBA A17.3.3). */
	uh->check = 0;
	skb->ip_summed = CHECKSUM_NONE;

	if (ipv4) {
		struct iphdr *ih = skb_push(skb, sizeof(*ih));

		skb_reset_network_header(skb);
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
		ih->version = 4;
		ih->ihl = 5;
		ih->tos = av->traffic_class;
		ih->tot_len = htons(skb->len);
		ih->frag_off = htons(IP_DF);
		ih->ttl = av->hop_limit ? av->hop_limit : 64;
		ih->protocol = IPPROTO_UDP;
		memcpy(&ih->saddr, &av->sgid.raw[12], 4);
		memcpy(&ih->daddr, &av->dgid.raw[12], 4);
		/*
		 * The ICRC covers the IP ID: choose it now.  A connected QP
		 * numbers its packets in the order they are queued, as a
		 * connected socket does (ip_select_ident_segs()), so that a
		 * transmit batch's IDs are those GSO gives it (below).
		 */
		if (ip_id)
			ih->id = htons((*ip_id)++);
		else
			__ip_select_ident(sdev->sn->net, ih, 1);
	} else {
		struct ipv6hdr *ih = skb_push(skb, sizeof(*ih));

		skb_reset_network_header(skb);
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
		ip6_flow_hdr(ih, av->traffic_class,
			     htonl(av->flow_label) & IPV6_FLOWLABEL_MASK);
		ih->payload_len = htons(skb->len - sizeof(*ih));
		ih->nexthdr = IPPROTO_UDP;
		ih->hop_limit = av->hop_limit ? av->hop_limit : 64;
		memcpy(&ih->saddr, av->sgid.raw, 16);
		memcpy(&ih->daddr, av->dgid.raw, 16);
	}
	if (skb_is_nonlinear(skb))
		put_unaligned_le32(sroce_icrc_frags(skb, ipv4, pkt->hdr),
				   pkt->icrc);
	else
		put_unaligned_le32(sroce_icrc(skb_network_header(skb), ipv4,
					      pkt->hdr, len - SROCE_ICRC_LEN),
				   pkt->icrc);

	trace_sroce_xmit(sdev, pkt);
	return 0;
}

/*
 * A frame larger than the bound netdev carries now (its MTU shrank after
 * the QP's path MTU was set) is lost here and counted, also on the
 * loopback path, as IP would drop it with DF set.  RC and UC keep the
 * path MTU the consumer gave them (IBA 11.2.4.2): an RC QP retries and
 * completes with IB_WC_RETRY_EXC_ERR.
 */
static bool sroce_xmit_fits(struct sroce_dev *sdev, struct sk_buff *skb)
{
	if (likely(skb->len <= READ_ONCE(sdev->ndev->mtu)))
		return true;
	kfree_skb(skb);
	sroce_count(sdev, SROCE_CNT_TX_ERR);
	return false;
}

/* @npkts packets of @len octets in all left, or were lost (@err). */
static void sroce_count_tx(struct sroce_dev *sdev, int err, u32 npkts,
			   u32 len)
{
	if (unlikely(err)) {
		this_cpu_add(sdev->stats->c[SROCE_CNT_TX_ERR], npkts);
		return;
	}
	this_cpu_add(sdev->stats->c[SROCE_CNT_TX_PKTS], npkts);
	this_cpu_add(sdev->stats->c[SROCE_CNT_TX_BYTES], len);
}

/* Hand @skb, a packet or a batch of @npkts (below), to the IP stack. */
static int sroce_xmit_ip(struct sroce_dev *sdev, struct sk_buff *skb,
			 u32 npkts)
{
	/* A batch's members left their IP and UDP headers to the head's. */
	u32 len = skb->len + (npkts - 1) *
		  (skb_transport_offset(skb) + sizeof(struct udphdr));
	int err;

	if (skb->protocol == htons(ETH_P_IP))
		err = ip_local_out(sdev->sn->net, sdev->sn->sock4->sk, skb);
	else
		err = ip6_local_out(sdev->sn->net, sdev->sn->sock6->sk, skb);
	err = net_xmit_eval(err) ? -EAGAIN : 0;
	sroce_count_tx(sdev, err, npkts, len);
	return err;
}

/*
 * A packet for one of this namespace's own addresses, whose route leads
 * to its loopback device: for the loopback queue (rcv.c), which takes the
 * device as skb->dev (set by sroce_xmit_send()).  Not one whose route
 * died meanwhile: that route points at the blackhole device, which looks
 * like a loopback device too; IP output discards it.  The IP path leaves
 * skb->dev unset, as a socket does: ip_output() sets it, and a packet
 * waiting on a QP's transmit queue holds no device.  The route's device is
 * read once: softirqs off keep the route, not its device, which
 * dst_dev_put() on another CPU (an address deleted, lo going away) turns
 * into the blackhole device, of init_net: a second read could hand the
 * queue a device of another namespace.
 */
static struct net_device *sroce_xmit_local(struct sroce_dev *sdev,
					   const struct sk_buff *skb)
{
	struct net_device *dev = READ_ONCE(skb_dst(skb)->dev);

	return dev == sdev->sn->net->loopback_dev ? dev : NULL;
}

/* Hand a finished packet to the IP stack (or the loopback queue). */
static int sroce_xmit_send(struct sroce_dev *sdev, struct sk_buff *skb)
{
	struct net_device *lo;
	int err;

	if (!sroce_xmit_fits(sdev, skb))
		return -EMSGSIZE;
	lo = sroce_xmit_local(sdev, skb);
	if (lo) {
		u32 len = skb->len;

		skb->dev = lo;	/* what the queue takes */
		err = sroce_loop_queue(skb);
		sroce_count_tx(sdev, err, 1, len);
		return err;
	}
	return sroce_xmit_ip(sdev, skb, 1);
}

/**
 * sroce_xmit - finish a packet and send it
 * @sdev: the device
 * @av: where to (RoCEv2 address vector)
 * @cache: the route to @av of the last packets (a connected QP's), or NULL
 * @src_port: the UDP source port
 * @pkt: a packet from sroce_pkt_alloc(), headers filled in
 *
 * Adds UDP and IP headers, computes the ICRC and passes the packet to the
 * IP stack.  The skb is consumed in every case.  For datagram QPs; the
 * packets of a connected QP leave through its transmit queue
 * (sroce_qp_xmit()).
 *
 * Return: 0, or a negative error (no route, dropped by the stack); the
 * transport recovers a lost packet like one lost on the wire.
 */
int sroce_xmit(struct sroce_dev *sdev, const struct sroce_av *av,
	       struct dst_cache *cache, u16 src_port, struct sroce_pkt *pkt)
{
	int err = sroce_xmit_build(sdev, av, cache, src_port, NULL, pkt);

	if (err)
		return err;
	err = sroce_xmit_send(sdev, pkt->skb);
	if (!err && rdma_is_multicast_addr((struct in6_addr *)av->dgid.raw))
		sroce_count(sdev, SROCE_CNT_TX_MCAST);
	return err;
}

/*
 * The stack is done with a packet of a QP's transmit queue (sent, dropped,
 * or orphaned by a qdisc): the QP may go.
 */
static void sroce_qp_skb_done(struct sk_buff *skb)
{
	/*
	 * Once only: the kernel runs a transmit batch member's destructor
	 * when it splits the batch, and does not clear it (sroce_tx_batch()).
	 */
	skb->destructor = NULL;
	sroce_qp_put(skb_shinfo(skb)->destructor_arg);
}

/* The same for a request: the requester may go on (sroce_req_run()). */
static void sroce_qp_req_skb_done(struct sk_buff *skb)
{
	struct sroce_qp *qp = skb_shinfo(skb)->destructor_arg;

	skb->destructor = NULL;	/* once only, as above */
	if (atomic_dec_return(&qp->skb_out) == SROCE_SKB_OUT_LOW)
		sroce_qp_kick(qp);
	sroce_qp_put(qp);
}

/**
 * sroce_qp_xmit - finish a packet of a connected QP and queue it
 * @qp: the RC or UC QP, with qp->lock held
 * @pkt: a packet from sroce_pkt_alloc(), headers filled in
 * @req: a request (counted against SROCE_SKB_OUT_MAX), not a response
 *
 * The packet is finished (sroce_xmit()) and queued on @qp's transmit
 * queue in the order the engine built it, PSN order; it leaves when the
 * lock is released (sroce_qp_unlock()).  The skb is consumed.
 */
void sroce_qp_xmit(struct sroce_qp *qp, struct sroce_pkt *pkt, bool req)
{
	struct sk_buff *skb = pkt->skb;

	lockdep_assert_held(&qp->lock);
	/*
	 * A packet in flight holds its QP.  None is taken once destroy has
	 * waited for the last holder (a work item queued before may still
	 * run the engine): the packet is dropped.
	 */
	if (!sroce_qp_hold(qp)) {
		kfree_skb(skb);
		return;
	}
	skb_shinfo(skb)->destructor_arg = qp;
	if (req) {
		skb->destructor = sroce_qp_req_skb_done;
		atomic_inc(&qp->skb_out);
	} else {
		skb->destructor = sroce_qp_skb_done;
	}
	if (!sroce_xmit_build(to_sdev(qp->ibqp.device), &qp->av,
			      &qp->dst_cache, qp->src_port, &qp->ip_id, pkt))
		skb_queue_tail(&qp->txq, skb);
}

/*
 * Transmit batching: the packets at the head of a QP's transmit queue that
 * take the same route with the same headers leave as one skb, so IP
 * output, netfilter, the qdisc and the device's queue are crossed once per
 * batch instead of once per packet, and the device is notified once for
 * the batch (xmit_more).  The batch has the shape UDP GRO gives a flow of
 * datagrams: a UDP GSO skb of the fraglist kind (SKB_GSO_UDP_L4 |
 * SKB_GSO_FRAGLIST), the first packet its head, the others on its
 * frag_list, each a whole RoCEv2 packet with its own IP and UDP headers
 * and ICRC.  Segmentation below IP (in software unless the device takes
 * such skbs; udp_rcv_segment() on a receiver reached through a veth) only
 * splits the list again: skb_segment_list() copies no payload and
 * computes no checksum, and gives each packet its own IPv4 total length
 * and header checksum again, and the IPv4 ID of the first plus its index.
 * The ICRC covers the ID (IBA A17.3.3): a connected QP numbers its packets
 * in queue order (sroce_xmit_build()), and a packet joins only with the
 * next ID.  What joins is also what plain UDP GSO would cut the batch into,
 * for the paths that take that fallback (a batch marked untrusted,
 * skb_segment()): every packet as long as the first, but the last, which
 * may be shorter.  The batch stays within the 16 bits of the IP total
 * length, and the route's MTU check of it (its gso_size, the first
 * packet's) holds for each packet.
 */
#define SROCE_TX_BATCH_MAX	0xffff

/*
 * May @b follow @last in the batch of @a?  Equal routes do not say so (one
 * route serves a subnet): the fields GSO copies from the first packet to
 * the others must be equal, and an IPv4 ID must be the next one.
 */
static bool sroce_tx_same_flow(const struct sk_buff *a,
			       const struct sk_buff *last,
			       const struct sk_buff *b)
{
	const struct udphdr *ua = udp_hdr(a), *ub = udp_hdr(b);

	if (a->protocol != b->protocol || skb_dst(a) != skb_dst(b) ||
	    a->priority != b->priority || a->mark != b->mark ||
	    ua->source != ub->source || ua->dest != ub->dest)
		return false;
	if (a->protocol == htons(ETH_P_IP)) {
		const struct iphdr *ia = ip_hdr(a), *ib = ip_hdr(b);

		return ia->tos == ib->tos && ia->ttl == ib->ttl &&
		       ia->frag_off == ib->frag_off &&
		       ia->saddr == ib->saddr && ia->daddr == ib->daddr &&
		       ntohs(ib->id) == (u16)(ntohs(ip_hdr(last)->id) + 1);
	}
	/* Version, traffic class and flow label; hop limit; addresses. */
	return !memcmp(ipv6_hdr(a), ipv6_hdr(b), 4) &&
	       ipv6_hdr(a)->hop_limit == ipv6_hdr(b)->hop_limit &&
	       ipv6_addr_equal(&ipv6_hdr(a)->saddr, &ipv6_hdr(b)->saddr) &&
	       ipv6_addr_equal(&ipv6_hdr(a)->daddr, &ipv6_hdr(b)->daddr);
}

/*
 * Does @dev cut a batch into its packets itself (validate_xmit_skb()), as
 * a NIC without fraglist GSO does, rather than take it whole?  It takes
 * it only with fraglist GSO, UDP GSO and the checksum of the protocol.
 */
static bool sroce_dev_splits(const struct net_device *dev, __be16 proto)
{
	const netdev_features_t whole = NETIF_F_GSO_UDP_L4 |
					NETIF_F_GSO_FRAGLIST | NETIF_F_FRAGLIST;
	netdev_features_t f = READ_ONCE(dev->features);

	return (f & whole) != whole || !can_checksum_protocol(f, proto);
}

/* A device that only hands what it sends to a device below it. */
static bool sroce_dev_passes_down(const struct net_device *dev)
{
	return is_vlan_dev(dev) || netif_is_bond_master(dev) ||
	       netif_is_team_master(dev) || netif_is_bridge_master(dev);
}

/*
 * A tc or netfilter egress hook on @dev, which runs before the device cuts
 * a batch, and may redirect or copy it elsewhere whole (a mirred mirror to
 * an erspan device, say).
 */
static bool sroce_dev_hooked(const struct net_device *dev)
{
#ifdef CONFIG_NET_CLS_ACT
	if (rcu_access_pointer(dev->miniq_egress))
		return true;
#endif
#ifdef CONFIG_NETFILTER_EGRESS
	if (rcu_access_pointer(dev->nf_hooks_egress))
		return true;
#endif
	return false;
}

/* A device below the route's that would take a batch further whole. */
static int sroce_dev_keeps(struct net_device *dev,
			   struct netdev_nested_priv *priv)
{
	return sroce_dev_hooked(dev) ||
	       (!sroce_dev_splits(dev, *(__be16 *)priv->data) &&
		!sroce_dev_passes_down(dev));
}

/*
 * May the packets of @skb's route leave in batches?  Only if the batch is
 * cut into its packets before any device that could send it on inside a
 * tunnel (a vxlan, geneve or GRE device; a veth or an Open vSwitch port
 * that leads to one): below a tunnel the kernel (6.1) cuts a list of
 * packets with wrong outer UDP checksums, so a receiver drops every
 * member but the first, and copies the outer headers in front of each
 * member without checking their room.  So the route's device must cut it
 * itself, or only pass it down (a VLAN, bond, team or bridge) to devices
 * that do; no lightweight tunnel or IPsec transform on the route, no tc
 * or netfilter egress hook on any of those devices (a redirect there
 * takes the batch whole), no VRF above the device (whose master may send
 * it through its own qdisc and hooks); and the room in front that the
 * device announces (its header, needed_headroom; the route's header_len).
 * The batch's members have the head's room: they were built alike.  A
 * netfilter OUTPUT rule that routes the packet again escapes these checks.
 */
static bool sroce_tx_may_batch(const struct sk_buff *skb)
{
	const struct dst_entry *dst = skb_dst(skb);
	struct net_device *dev = READ_ONCE(dst->dev);
	__be16 proto = skb->protocol;
	struct netdev_nested_priv priv = { .data = &proto };
	bool keeps;

	if (dst->lwtstate || dst_xfrm(dst) || netif_is_l3_slave(dev) ||
	    sroce_dev_hooked(dev) ||
	    skb_headroom(skb) < LL_RESERVED_SPACE(dev) + dst->header_len)
		return false;
	if (sroce_dev_splits(dev, proto))
		return true;
	if (!sroce_dev_passes_down(dev))
		return false;
	rcu_read_lock();
	keeps = netdev_walk_all_lower_dev_rcu(dev, sroce_dev_keeps, &priv);
	rcu_read_unlock();
	return !keeps;
}

/**
 * sroce_tx_batch - gather the packets that follow @skb into a batch
 * @skb: a finished packet dequeued from @txq, data at its network header,
 *	which passed sroce_xmit_fits() and is not for the loopback queue
 * @txq: the QP's transmit queue
 * @max: how many packets may join, at most
 *
 * Moves packets from the head of @txq onto @skb's frag_list and makes
 * @skb a UDP GSO skb of them (see above); with none, @skb is unchanged.
 * Called with softirqs off.
 *
 * Return: how many joined.
 */
u32 sroce_tx_batch(struct sk_buff *skb, struct sk_buff_head *txq, u32 max)
{
	u32 hlen = skb_transport_offset(skb) + sizeof(struct udphdr);
	struct sk_buff **tail = &skb_shinfo(skb)->frag_list;
	struct sk_buff *last = skb, *nskb;
	u32 first = skb->len, n = 0;

	if (skb_queue_empty_lockless(txq) || !sroce_tx_may_batch(skb))
		return 0;
	spin_lock(&txq->lock);
	while (n < max && (nskb = skb_peek(txq))) {
		if (nskb->len > first || !sroce_tx_same_flow(skb, last, nskb) ||
		    skb_headroom(nskb) < skb_headroom(skb) ||
		    skb->len + nskb->len - hlen > SROCE_TX_BATCH_MAX)
			break;
		__skb_unlink(nskb, txq);
		/* Its UDP payload is what the head's length counts. */
		__skb_pull(nskb, hlen);
		skb->len += nskb->len;
		skb->data_len += nskb->len;
		skb->truesize += nskb->truesize;
		/*
		 * Its route is the head's.  It keeps its destructor: the
		 * kernel runs it when it splits the batch (or frees it
		 * whole), and sroce_qp_skb_done() clears it.
		 */
		skb_dst_drop(nskb);
		*tail = nskb;
		tail = &nskb->next;
		last = nskb;
		n++;
		if (nskb->len + hlen < first)
			break;	/* a shorter packet ends a batch */
	}
	spin_unlock(&txq->lock);
	if (!n)
		return 0;
	skb_shinfo(skb)->gso_size = first - hlen;
	skb_shinfo(skb)->gso_segs = n + 1;
	skb_shinfo(skb)->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST;
	/* No UDP checksum to fill in (it is zero): nothing for GSO to do. */
	skb->ip_summed = CHECKSUM_UNNECESSARY;
	/* A GSO skb's UDP length is the batch's; segmentation restores it. */
	udp_hdr(skb)->len = htons(skb->len - skb_transport_offset(skb));
	return n;
}

/*
 * Send the packet @skb dequeued from @qp's transmit queue, with the ones
 * that may join it (sroce_tx_batch()), at most @max packets in all.
 * Return: how many packets left the queue.
 */
static u32 sroce_qp_tx_send(struct sroce_qp *qp, struct sk_buff *skb,
			    u32 max)
{
	struct sroce_dev *sdev = to_sdev(qp->ibqp.device);
	u32 n;

	/* A packet for a local address takes the loopback queue alone. */
	if (sroce_xmit_local(sdev, skb)) {
		sroce_xmit_send(sdev, skb);
		return 1;
	}
	if (!sroce_xmit_fits(sdev, skb))
		return 1;
	n = max > 1 ? sroce_tx_batch(skb, &qp->txq, max - 1) : 0;
	if (!sroce_xmit_ip(sdev, skb, n + 1) && n)
		this_cpu_add(sdev->stats->c[SROCE_CNT_TX_BATCHED], n + 1);
	return n + 1;
}

/* Packets one sender passes to the stack before it yields (see below). */
#define SROCE_TX_BUDGET	64

/*
 * The rest of the queue to the QP's work item.  Queued under the queue's
 * lock, while a packet on it still holds the QP: destroy, which waits for
 * them, cancels the work only after it ran, even when our caller holds no
 * reference of its own.
 */
static void sroce_qp_tx_hand_off(struct sroce_qp *qp)
{
	spin_lock_bh(&qp->txq.lock);
	if (!skb_queue_empty(&qp->txq))
		queue_work(sroce_wq, &qp->tx_work);
	spin_unlock_bh(&qp->txq.lock);
}

/**
 * sroce_qp_tx_flush - send what the engine queued on a QP
 * @qp: the QP, qp->lock not held
 *
 * The transmit side of the execution model: the engine builds packets
 * under qp->lock, and they go down the IP stack and the device after it
 * was released, so no path (an ACK arriving, a post) waits on the lock
 * while another transmits.  One CPU at a time sends a QP's queue
 * (@qp->tx_busy), which keeps PSN order on the wire; a CPU that finds it
 * taken leaves its packets to the one sending.  After SROCE_TX_BUDGET
 * packets the sender hands the rest to the QP's work item, also when the
 * QP is being destroyed (sroce_qp_tx_hand_off()).  The queue's lock is a
 * leaf.
 */
void sroce_qp_tx_flush(struct sroce_qp *qp)
{
	struct sk_buff *skb;
	int n, total = 0;

	while (!skb_queue_empty_lockless(&qp->txq)) {
		/* Fully ordered: pairs with the barrier after clear_bit. */
		if (test_and_set_bit(0, &qp->tx_busy))
			return;
		local_bh_disable();
		n = 0;
		while (n < SROCE_TX_BUDGET && (skb = skb_dequeue(&qp->txq)))
			n += sroce_qp_tx_send(qp, skb, SROCE_TX_BUDGET - n);
		/* Before softirqs may run here: others' packets wait on it. */
		clear_bit_unlock(0, &qp->tx_busy);
		local_bh_enable();
		/*
		 * A packet queued by a CPU that found the bit still set is
		 * seen below: its test_and_set_bit() ordered its queueing
		 * before our clear.
		 */
		smp_mb__after_atomic();
		total += n;
		if (total >= SROCE_TX_BUDGET &&
		    !skb_queue_empty_lockless(&qp->txq)) {
			sroce_qp_tx_hand_off(qp);
			return;
		}
	}
}

/**
 * sroce_qp_unlock - release qp->lock, send what the engine queued, then
 *	call the consumer for what it noted
 * @qp: the QP; the caller holds no other lock of ours
 *
 * The engine calls no consumer handler under its locks: completion
 * notifications and async events wait for sroce_qp_deliver_events() here.
 */
void sroce_qp_unlock(struct sroce_qp *qp)
	__releases(&qp->lock)
{
	sroce_qp_release(qp);
	sroce_qp_tx_flush(qp);
	sroce_qp_deliver_events(qp);
}

/* sroce_qp_unlock() at the end of a post (sroce_qp_deliver_posted()). */
void sroce_qp_unlock_posted(struct sroce_qp *qp)
	__releases(&qp->lock)
{
	sroce_qp_release(qp);
	sroce_qp_tx_flush(qp);
	sroce_qp_deliver_posted(qp);
}

static void sroce_crc_free(void)
{
	if (sroce_crc_tfm)
		crypto_free_shash(sroce_crc_tfm);
	sroce_crc_tfm = NULL;
}

/**
 * sroce_net_init - what the network side needs before any device
 *
 * The loopback queue (rcv.c) and the ICRC implementation; the sockets
 * come with the first device of each network namespace (netns.c).
 *
 * Return: 0.
 */
int sroce_net_init(void)
{
	sroce_loop_init();
	sroce_crc_tfm = crypto_alloc_shash("crc32", 0, 0);
	if (IS_ERR(sroce_crc_tfm)) {
		pr_info("sroce: no crypto crc32 (%ld): crc32_le\n",
			PTR_ERR(sroce_crc_tfm));
		sroce_crc_tfm = NULL;
	}
	sroce_crc_choose();
	sroce_copy_choose();
	return 0;
}

void sroce_net_exit(void)
{
	sroce_loop_exit();
	sroce_crc_free();
}

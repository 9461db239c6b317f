// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * KUnit suites for sroce's pure logic.  Built into sroce.ko only when the
 * kernel has KUnit (the debug kernel); they run when the module loads and
 * report in /sys/kernel/debug/kunit/<suite>/results.
 */
#include <kunit/test.h>
#include <linux/crc32.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/udp.h>
#include <rdma/ib_verbs.h>

#include "sroce.h"

/* ---- completion layer: the CQ ring ---- */

struct sroce_cq_fixture {
	struct sroce_cq cq;
	int comp_calls;
};

static void sroce_kunit_comp(struct ib_cq *ibcq, void *ctx)
{
	struct sroce_cq_fixture *f = ctx;

	f->comp_calls++;
}

static struct sroce_cq_fixture *sroce_cq_fixture(struct kunit *test, u32 size)
{
	struct sroce_cq_fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->cq.queue = kunit_kcalloc(test, size + 1, sizeof(struct ib_wc),
				    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->cq.queue);
	spin_lock_init(&f->cq.lock);
	f->cq.size = size;
	f->cq.ibcq.cqe = size;
	f->cq.ibcq.comp_handler = sroce_kunit_comp;
	f->cq.ibcq.cq_context = f;
	return f;
}

static int sroce_kunit_add(struct sroce_cq_fixture *f, u64 wr_id,
			   enum ib_wc_status status, bool solicited)
{
	struct ib_wc wc = { .wr_id = wr_id, .status = status };
	int err = sroce_cq_complete(&f->cq, &wc, solicited);

	/* What the engine does once it let go of its locks. */
	sroce_cq_deliver(&f->cq);
	return err;
}

static void sroce_cq_wraps(struct kunit *test)
{
	struct sroce_cq_fixture *f = sroce_cq_fixture(test, 4);
	struct ib_wc wc[4];
	u64 next_in = 0, next_out = 0;
	int round, i, n;

	/* Fill and drain unevenly so head and tail wrap many times. */
	for (round = 0; round < 50; round++) {
		int add = 1 + round % 4;

		for (i = 0; i < add; i++)
			KUNIT_ASSERT_EQ(test, sroce_kunit_add(f, next_in++,
							      IB_WC_SUCCESS,
							      false), 0);
		n = sroce_poll_cq(&f->cq.ibcq, 4, wc);
		KUNIT_ASSERT_EQ(test, n, add);
		for (i = 0; i < n; i++)
			KUNIT_EXPECT_EQ(test, wc[i].wr_id, next_out++);
	}
	KUNIT_EXPECT_EQ(test, sroce_poll_cq(&f->cq.ibcq, 4, wc), 0);
	KUNIT_EXPECT_FALSE(test, f->cq.overflow);
}

static void sroce_cq_overflows(struct kunit *test)
{
	struct sroce_cq_fixture *f = sroce_cq_fixture(test, 3);
	struct ib_wc wc[4];
	int i;

	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, sroce_kunit_add(f, i, IB_WC_SUCCESS,
						      false), 0);
	KUNIT_EXPECT_EQ(test, sroce_kunit_add(f, 3, IB_WC_SUCCESS, false),
			-ENOSPC);
	KUNIT_EXPECT_TRUE(test, f->cq.overflow);
	/* What was there before the overrun is kept, in order. */
	KUNIT_EXPECT_EQ(test, sroce_poll_cq(&f->cq.ibcq, 4, wc), 3);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0);
	KUNIT_EXPECT_EQ(test, wc[2].wr_id, 2);
	/* The CQ stays in error (IBA 11.6.2). */
	KUNIT_EXPECT_EQ(test, sroce_kunit_add(f, 4, IB_WC_SUCCESS, false),
			-ENOSPC);
}

static void sroce_cq_notifies(struct kunit *test)
{
	struct sroce_cq_fixture *f = sroce_cq_fixture(test, 16);
	struct ib_cq *ibcq = &f->cq.ibcq;

	/* Not armed: no call. */
	sroce_kunit_add(f, 0, IB_WC_SUCCESS, false);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 0);

	/* NEXT_COMP: one call, then disarmed. */
	KUNIT_EXPECT_EQ(test, sroce_req_notify_cq(ibcq, IB_CQ_NEXT_COMP), 0);
	sroce_kunit_add(f, 1, IB_WC_SUCCESS, false);
	sroce_kunit_add(f, 2, IB_WC_SUCCESS, false);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 1);

	/* SOLICITED: not for an unsolicited success... */
	sroce_req_notify_cq(ibcq, IB_CQ_SOLICITED);
	sroce_kunit_add(f, 3, IB_WC_SUCCESS, false);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 1);
	/* ...but for a solicited one, */
	sroce_kunit_add(f, 4, IB_WC_SUCCESS, true);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 2);
	/* and for an error completion. */
	sroce_req_notify_cq(ibcq, IB_CQ_SOLICITED);
	sroce_kunit_add(f, 5, IB_WC_REM_ACCESS_ERR, false);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 3);

	/* A SOLICITED request does not narrow a pending NEXT_COMP one. */
	sroce_req_notify_cq(ibcq, IB_CQ_NEXT_COMP);
	sroce_req_notify_cq(ibcq, IB_CQ_SOLICITED);
	sroce_kunit_add(f, 6, IB_WC_SUCCESS, false);
	KUNIT_EXPECT_EQ(test, f->comp_calls, 4);

	/* Missed events: the CQ is not empty. */
	KUNIT_EXPECT_EQ(test, sroce_req_notify_cq(ibcq, IB_CQ_NEXT_COMP |
						  IB_CQ_REPORT_MISSED_EVENTS),
			1);
}

static struct kunit_case sroce_cq_cases[] = {
	KUNIT_CASE(sroce_cq_wraps),
	KUNIT_CASE(sroce_cq_overflows),
	KUNIT_CASE(sroce_cq_notifies),
	{}
};

static struct kunit_suite sroce_cq_suite = {
	.name = "sroce_cq",
	.test_cases = sroce_cq_cases,
};

/* ---- port: active MTU from the netdev MTU (IBA A17.3) ---- */

static void sroce_mtu_fits_headers(struct kunit *test)
{
	static const struct { unsigned int mtu; int ib; } cases[] = {
		{ 1500, IB_MTU_1024 }, { 1116, IB_MTU_1024 },
		{ 1115, IB_MTU_512 }, { 9000, IB_MTU_4096 },
		{ 4188, IB_MTU_4096 }, { 4187, IB_MTU_2048 },
		{ 348, IB_MTU_256 }, { 347, 0 }, { 68, 0 },
	};
	struct net_device *ndev = kunit_kzalloc(test, sizeof(*ndev),
						GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, ndev);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ndev->mtu = cases[i].mtu;
		KUNIT_EXPECT_EQ_MSG(test, sroce_active_mtu(ndev), cases[i].ib,
				    "netdev MTU %u", cases[i].mtu);
	}
}

static struct kunit_case sroce_port_cases[] = {
	KUNIT_CASE(sroce_mtu_fits_headers),
	{}
};

static struct kunit_suite sroce_port_suite = {
	.name = "sroce_port",
	.test_cases = sroce_port_cases,
};

/* ---- transport: PSN arithmetic (IBA 9.7.1) ---- */

static void sroce_psn_wraps(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0xffffff, 1), 0U);
	KUNIT_EXPECT_EQ(test, sroce_psn_add(0xfffff0, 0x20), 0x10U);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0, 0xffffff), 1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0xffffff, 0), -1);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(5, 5), 0);
	KUNIT_EXPECT_EQ(test, sroce_psn_diff(0x10, 0xfffff0), 0x20);
	/* half the space ahead is "after", the other half "before" */
	KUNIT_EXPECT_GT(test, sroce_psn_diff(0x7fffff, 0), 0);
	KUNIT_EXPECT_LT(test, sroce_psn_diff(0x800000, 0), 0);
}

/* ---- transport: the responder's read resources (resp.c) ---- */

static struct sroce_rd_res *sroce_kunit_rd(struct sroce_qp *qp, u32 i)
{
	return &qp->resp.rd[i & (qp->resp.rd_size - 1)];
}

/* Resize @qp's ring to @size entries; the ring left over is freed. */
static int sroce_kunit_rd_resize(struct kunit *test, struct sroce_qp *qp,
				 u32 size)
{
	struct sroce_rd_res *rd = NULL;
	int err;

	if (size) {
		rd = kcalloc(size, sizeof(*rd), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, rd);
	}
	spin_lock_bh(&qp->lock);
	err = sroce_resp_resize(qp, &rd, size);
	spin_unlock_bh(&qp->lock);
	kfree(rd);
	return err;
}

static struct sroce_qp *sroce_kunit_rd_qp(struct kunit *test)
{
	struct sroce_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, qp);
	spin_lock_init(&qp->lock);
	return qp;
}

/*
 * Pending resources move to a larger ring in order, across the wrap of the
 * free-running indices; a ring too small for them is refused, and taken
 * once they are answered; none drops the ring.
 */
static void sroce_rd_ring_resizes(struct kunit *test)
{
	struct sroce_qp *qp = sroce_kunit_rd_qp(test);
	u32 i;

	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 4), 0);
	qp->resp.rd_next = U32_MAX - 1;
	qp->resp.rd_tail = U32_MAX - 1;
	for (i = 0; i < 3; i++)
		sroce_kunit_rd(qp, qp->resp.rd_tail++)->psn = 100 + i;

	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 8), 0);
	KUNIT_EXPECT_EQ(test, qp->resp.rd_size, 8U);
	KUNIT_EXPECT_EQ(test, qp->resp.rd_tail - qp->resp.rd_next, 3U);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test,
				sroce_kunit_rd(qp, qp->resp.rd_next + i)->psn,
				100 + i);

	/* Three pending need four entries (one spare). */
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 2), -EBUSY);
	KUNIT_EXPECT_EQ(test, qp->resp.rd_size, 8U);
	qp->resp.rd_next += 2;		/* two answered */
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 2), 0);
	KUNIT_EXPECT_EQ(test, qp->resp.rd_tail - qp->resp.rd_next, 1U);
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd(qp, qp->resp.rd_next)->psn, 102U);
	/* the answered one before it is kept for its duplicates */
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd(qp, qp->resp.rd_next - 1)->psn,
			101U);

	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 0), -EBUSY);
	qp->resp.rd_next++;
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 0), 0);
	KUNIT_EXPECT_NULL(test, qp->resp.rd);
}

/* A resource with one answer to send, as the responder takes them. */
static bool sroce_kunit_rd_take(struct sroce_qp *qp)
{
	struct sroce_rd_res *res = sroce_rd_alloc(qp);

	if (res)
		res->npkts = 1;
	return !!res;
}

/*
 * The ring: twice max_dest_rd_atomic and one more, at least 16, a power of
 * two; full, it takes nothing until one is answered (the oldest, or, once
 * a duplicate READ dropped its answers, any run of them from the oldest);
 * none at all without responder resources.  The results are taken under
 * qp->lock and checked after it: a failed expectation allocates.
 */
static void sroce_rd_alloc_limits(struct kunit *test)
{
	struct sroce_qp *qp = sroce_kunit_rd_qp(test);
	bool got[22];
	int i;

	KUNIT_EXPECT_EQ(test, sroce_rd_ring_size(0), 0U);
	KUNIT_EXPECT_EQ(test, sroce_rd_ring_size(1), 16U);
	KUNIT_EXPECT_EQ(test, sroce_rd_ring_size(8), 32U);
	KUNIT_EXPECT_EQ(test, sroce_rd_ring_size(128), 512U);

	spin_lock_bh(&qp->lock);
	got[0] = sroce_kunit_rd_take(qp);
	spin_unlock_bh(&qp->lock);
	KUNIT_EXPECT_FALSE(test, got[0]);

	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp,
						    sroce_rd_ring_size(4)), 0);
	spin_lock_bh(&qp->lock);
	for (i = 0; i < 16; i++)
		got[i] = sroce_kunit_rd_take(qp);
	got[16] = sroce_kunit_rd_take(qp);		/* full */
	sroce_kunit_rd(qp, qp->resp.rd_next)->sent = 1;	/* answered */
	got[17] = sroce_kunit_rd_take(qp);
	got[18] = sroce_kunit_rd_take(qp);		/* full */
	/* The next two dropped, the one after pending: two come free. */
	sroce_kunit_rd(qp, qp->resp.rd_next)->sent = 1;
	sroce_kunit_rd(qp, qp->resp.rd_next + 1)->sent = 1;
	got[19] = sroce_kunit_rd_take(qp);
	got[20] = sroce_kunit_rd_take(qp);
	got[21] = sroce_kunit_rd_take(qp);		/* full */
	qp->resp.rd_next = qp->resp.rd_tail;
	spin_unlock_bh(&qp->lock);
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_TRUE(test, got[i]);
	KUNIT_EXPECT_FALSE(test, got[16]);
	KUNIT_EXPECT_TRUE(test, got[17]);
	KUNIT_EXPECT_FALSE(test, got[18]);
	KUNIT_EXPECT_TRUE(test, got[19]);
	KUNIT_EXPECT_TRUE(test, got[20]);
	KUNIT_EXPECT_FALSE(test, got[21]);
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 0), 0);
}

/* Pending resources: @n READs of @npkts answers each, from PSN @psn. */
static void sroce_kunit_rd_reads(struct sroce_qp *qp, u32 n, u32 psn,
				 u32 npkts)
{
	while (n--) {
		struct sroce_rd_res *res = sroce_rd_alloc(qp);

		if (!res)
			return;
		res->op = IB_OPCODE_RDMA_READ_REQUEST;
		res->psn = psn;
		res->npkts = npkts;
		psn = sroce_psn_add(psn, npkts);
	}
}

/*
 * A duplicate READ cancels the pending answers it asks again for (from
 * the one it starts inside of to the newest, IBA 9.7.6.1), but only when
 * its own answer has room: a free slot, or the oldest resource among
 * those it replaces.  Else nothing changes (the requester asks again).
 * Across the PSN wrap too.  Results taken under qp->lock, checked after.
 */
static void sroce_rd_dup_cancels(struct kunit *test)
{
	struct sroce_qp *qp = sroce_kunit_rd_qp(test);
	u32 sent[16], i;
	bool ok[4];

	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 16), 0);
	spin_lock_bh(&qp->lock);
	/* Full: 16 READs of 10 answers at 0x100, 0x10a, ... */
	sroce_kunit_rd_reads(qp, 16, 0x100, 10);
	ok[0] = !sroce_rd_dup_replace(qp, 0x100 + 55);	/* no room */
	for (i = 0; i < 16; i++)
		sent[i] = sroce_kunit_rd(qp, qp->resp.rd_next + i)->sent;
	ok[1] = sroce_rd_dup_replace(qp, 0x100);	/* the oldest: room */
	ok[2] = qp->resp.rd_tail - qp->resp.rd_next == 16;
	for (i = 0; i < 16; i++)
		ok[2] &= sroce_kunit_rd(qp, qp->resp.rd_next + i)->sent == 10;
	qp->resp.rd_next = qp->resp.rd_tail;
	spin_unlock_bh(&qp->lock);
	KUNIT_EXPECT_TRUE(test, ok[0]);
	for (i = 0; i < 16; i++)
		KUNIT_EXPECT_EQ(test, sent[i], 0U);
	KUNIT_EXPECT_TRUE(test, ok[1]);
	KUNIT_EXPECT_TRUE(test, ok[2]);

	/* Room: 8 READs across the wrap; one from inside the fourth. */
	spin_lock_bh(&qp->lock);
	sroce_kunit_rd_reads(qp, 8, 0xffffe0, 10);
	ok[3] = sroce_rd_dup_replace(qp, sroce_psn_add(0xffffe0, 35));
	for (i = 0; i < 8; i++)
		sent[i] = sroce_kunit_rd(qp, qp->resp.rd_next + i)->sent;
	qp->resp.rd_next = qp->resp.rd_tail;
	spin_unlock_bh(&qp->lock);
	KUNIT_EXPECT_TRUE(test, ok[3]);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ_MSG(test, sent[i], i < 3 ? 0U : 10U,
				    "READ %u", i);
	KUNIT_EXPECT_EQ(test, sroce_kunit_rd_resize(test, qp, 0), 0);
}

/* ---- wire format: the opcode table (IBA 9.2.1 table 38) ---- */

static void sroce_opcode_headers(struct kunit *test)
{
	static const struct {
		u8 op;
		unsigned int ext;
		u32 flags;
	} t[] = {
		{ IB_OPCODE_SEND_ONLY, 0, SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_SEND_LAST_WITH_IMMEDIATE, 4, SROCE_F_LAST },
		{ IB_OPCODE_SEND_ONLY_WITH_INVALIDATE, 4,
		  SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_RDMA_WRITE_FIRST, 16, SROCE_F_FIRST },
		{ IB_OPCODE_RDMA_WRITE_MIDDLE, 0, 0 },
		{ IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE, 20,
		  SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_RDMA_READ_REQUEST, 16, SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_RDMA_READ_RESPONSE_FIRST, 4, SROCE_F_FIRST },
		{ IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE, 0, 0 },
		{ IB_OPCODE_ACKNOWLEDGE, 4, SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_ATOMIC_ACKNOWLEDGE, 12,
		  SROCE_F_FIRST | SROCE_F_LAST },
		{ IB_OPCODE_COMPARE_SWAP, 28, SROCE_F_FIRST | SROCE_F_LAST },
		/* IBA 1.5, A19.4: FETH and RETH; RETH */
		{ SROCE_OPCODE_FLUSH, 20, SROCE_F_FIRST | SROCE_F_LAST },
		{ SROCE_OPCODE_ATOMIC_WRITE, 16, SROCE_F_FIRST | SROCE_F_LAST },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		u32 info = sroce_op_info(t[i].op);

		KUNIT_EXPECT_TRUE(test, info & SROCE_F_VALID);
		KUNIT_EXPECT_EQ_MSG(test, sroce_ext_len(info), t[i].ext,
				    "opcode %#x", t[i].op);
		KUNIT_EXPECT_EQ_MSG(test, info & (SROCE_F_FIRST | SROCE_F_LAST),
				    t[i].flags, "opcode %#x", t[i].op);
	}
	/* UD SEND_ONLY_IMM: DETH and immediate */
	KUNIT_EXPECT_EQ(test, sroce_ext_len(SROCE_H_DETH |
			sroce_op_info(IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE)), 12U);
	KUNIT_EXPECT_FALSE(test, sroce_op_info(0x15) & SROCE_F_VALID);
	KUNIT_EXPECT_FALSE(test, sroce_op_info(0x1f) & SROCE_F_VALID);
}

/* ---- wire format: ICRC (IBA A17.3.3) ---- */

static void sroce_icrc_masks(struct kunit *test)
{
	u8 pkt[20 + 8 + 12 + 16] = {
		0x45, 0x00, 0x00, sizeof(pkt), 0x12, 0x34, 0x40, 0x00,
		0x40, 0x11, 0x00, 0x00, 10, 77, 0, 1, 10, 77, 0, 2,	/* IPv4 */
		0xc0, 0x01, 0x12, 0xb7, 0x00, 8 + 12 + 16, 0x00, 0x00,	/* UDP */
		0x04, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11,
		0x00, 0x00, 0x00, 0x07,					/* BTH */
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	};
	u8 ones[8];
	u32 icrc = sroce_icrc(pkt, true, pkt + 28, 12 + 16);

	/* The seed is the CRC of the 8-byte masked LRH of ones. */
	memset(ones, 0xff, sizeof(ones));
	KUNIT_EXPECT_EQ(test, crc32_le(~0U, ones, sizeof(ones)), 0xdebb20e3U);

	/* Fields a router may change are masked: TOS, TTL, IP/UDP checksums, FECN/BECN. */
	pkt[1] = 0xb8;
	pkt[8] = 3;
	pkt[10] = 0x5a;
	pkt[26] = 0x77;
	pkt[28 + 4] = 0xc0;
	KUNIT_EXPECT_EQ(test, sroce_icrc(pkt, true, pkt + 28, 12 + 16), icrc);

	/* Anything else is covered: the source address, the PSN, the payload. */
	pkt[15] = 9;
	KUNIT_EXPECT_NE(test, sroce_icrc(pkt, true, pkt + 28, 12 + 16), icrc);
	pkt[15] = 1;
	pkt[28 + 11] = 8;
	KUNIT_EXPECT_NE(test, sroce_icrc(pkt, true, pkt + 28, 12 + 16), icrc);
	pkt[28 + 11] = 7;
	pkt[40] = 0;
	KUNIT_EXPECT_NE(test, sroce_icrc(pkt, true, pkt + 28, 12 + 16), icrc);
}

/*
 * Zero-copy transmit: a payload in two page fragments and the trailer
 * fragment give the ICRC of the same bytes in one buffer, and the page's
 * references go with the skb.
 */
static void sroce_icrc_of_frags(struct kunit *test)
{
	const u32 hlen = 20 + 8 + 12, plen = 1000, plen2 = 24;
	struct sroce_pkt pkt = { .pad = 0 };
	struct sk_buff *skb;
	struct page *page;
	u8 *lin, *p;
	u32 i;

	lin = kunit_kzalloc(test, hlen + plen + plen2 + SROCE_ICRC_LEN,
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, lin);
	page = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	skb = alloc_skb(hlen, GFP_KERNEL);
	if (!skb)
		__free_page(page);
	KUNIT_ASSERT_NOT_NULL(test, skb);

	lin[0] = 0x45;				/* IPv4, 20 bytes */
	lin[9] = IPPROTO_UDP;
	lin[20 + 2] = 0x12;			/* UDP port 4791 */
	lin[20 + 3] = 0xb7;
	lin[28] = 0x04;				/* BTH: RC SEND_ONLY */
	lin[28 + 7] = 0x11;
	for (i = 0; i < plen + plen2; i++)
		lin[hlen + i] = i * 7 + 3;
	p = page_address(page);
	memcpy(p + 100, lin + hlen, plen);
	memcpy(p + 3000, lin + hlen + plen, plen2);

	skb_put_data(skb, lin, hlen);
	skb_reset_network_header(skb);
	pkt.skb = skb;
	KUNIT_EXPECT_EQ(test, sroce_pkt_add_frag(skb, p + 100, plen), 0);
	KUNIT_EXPECT_EQ(test, sroce_pkt_add_frag(skb, p + 3000, plen2), 0);
	KUNIT_EXPECT_EQ(test, page_count(page), 3);
	KUNIT_EXPECT_EQ(test, sroce_pkt_trailer(&pkt), 0);
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->nr_frags, 3);
	KUNIT_EXPECT_EQ(test, skb->len, hlen + plen + plen2 + SROCE_ICRC_LEN);
	KUNIT_EXPECT_TRUE(test, skb_has_shared_frag(skb));

	if (skb_shinfo(skb)->nr_frags == 3)
		KUNIT_EXPECT_EQ(test,
				sroce_icrc_frags(skb, true, skb->data + 28),
				sroce_icrc(lin, true, lin + 28,
					   12 + plen + plen2));
	kfree_skb(skb);
	KUNIT_EXPECT_EQ(test, page_count(page), 1);
	__free_page(page);
}

static struct dst_entry sroce_kunit_dst;

/*
 * A packet as sroce_xmit_build() leaves it: IP (@v6) and UDP headers,
 * then @plen bytes standing for BTH to ICRC; data at the network header.
 */
static struct sk_buff *sroce_kunit_pkt(struct kunit *test, bool v6, u16 id,
				       u32 plen)
{
	u32 nlen = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	struct sk_buff *skb;
	struct udphdr *uh;
	u32 i;

	skb = alloc_skb(LL_MAX_HEADER + nlen + sizeof(*uh) + plen, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb_reserve(skb, LL_MAX_HEADER + nlen + sizeof(*uh));
	for (i = 0; i < plen; i++)
		*(u8 *)skb_put(skb, 1) = id + i * 13;
	uh = skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh->source = htons(0xc123);
	uh->dest = htons(ROCE_V2_UDP_DPORT);
	uh->len = htons(skb->len);
	uh->check = 0;
	if (v6) {
		struct ipv6hdr *ih = skb_push(skb, sizeof(*ih));

		memset(ih, 0, sizeof(*ih));
		ih->version = 6;
		ih->payload_len = htons(skb->len - sizeof(*ih));
		ih->nexthdr = IPPROTO_UDP;
		ih->hop_limit = 64;
		ih->saddr.s6_addr[15] = 1;
		ih->daddr.s6_addr[15] = 2;
		skb->protocol = htons(ETH_P_IPV6);
	} else {
		struct iphdr *ih = skb_push(skb, sizeof(*ih));

		memset(ih, 0, sizeof(*ih));
		ih->version = 4;
		ih->ihl = 5;
		ih->tot_len = htons(skb->len);
		ih->id = htons(id);
		ih->frag_off = htons(IP_DF);
		ih->ttl = 64;
		ih->protocol = IPPROTO_UDP;
		ih->saddr = htonl(0x0a000001);
		ih->daddr = htonl(0x0a000002);
		ip_send_check(ih);
		skb->protocol = htons(ETH_P_IP);
	}
	skb_reset_network_header(skb);
	/*
	 * A route, as every packet of a QP has (not held: a test stand-in).
	 * Members drop theirs when they join, which must not end a batch.
	 */
	rcu_read_lock();
	skb_dst_set_noref(skb, &sroce_kunit_dst);
	rcu_read_unlock();
	return skb;
}

/* Destructor calls of the packets of a batch test (one test at a time). */
static atomic_t sroce_kunit_done;

/* Clears itself, as sroce_qp_skb_done() does: it must run once a packet. */
static void sroce_kunit_skb_done(struct sk_buff *skb)
{
	skb->destructor = NULL;
	atomic_inc(&sroce_kunit_done);
}

static struct sk_buff *sroce_kunit_copy(struct kunit *test,
					const struct sk_buff *orig)
{
	struct sk_buff *skb = skb_copy(orig, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, skb);
	skb->destructor = sroce_kunit_skb_done;
	return skb;
}

/* How many joined @head, of @n packets of lengths @plen from ID @id. */
static u32 sroce_kunit_batch(struct kunit *test, bool v6, const u32 *plen,
			     u32 n, u16 id, bool other_peer)
{
	struct sk_buff *skb, *last = NULL;
	struct sk_buff_head txq;
	u32 i, got;

	skb_queue_head_init(&txq);
	for (i = 1; i < n; i++) {
		last = sroce_kunit_pkt(test, v6, id + i, plen[i]);
		skb_queue_tail(&txq, last);
	}
	if (other_peer && last) {
		if (v6)
			ipv6_hdr(last)->daddr.s6_addr[15] ^= 4;
		else
			ip_hdr(last)->daddr ^= htonl(4);
	}
	skb = sroce_kunit_pkt(test, v6, id, plen[0]);
	local_bh_disable();
	got = sroce_tx_batch(skb, &txq, 64);
	local_bh_enable();
	kfree_skb(skb);
	skb_queue_purge(&txq);
	return got;
}

/*
 * Transmit batching: which packets join the first, and the kernel's
 * segmentation of the batch giving back the very packets, byte for byte:
 * IPv4 IDs, lengths, UDP headers, a shorter last packet; each packet's
 * destructor run once, split or freed whole.
 */
static void sroce_tx_batch_one(struct kunit *test, bool v6)
{
	static const u32 plen[] = { 1040, 1040, 1040, 12, 1040, 20 };
	static const u32 two[] = { 1040, 1040 };
	const u32 n = ARRAY_SIZE(plen), joined = 3;
	struct sk_buff *orig[ARRAY_SIZE(plen)], *skb, *segs, *seg;
	struct sk_buff_head txq;
	u32 i, got;

	skb_queue_head_init(&txq);
	for (i = 0; i < n; i++)
		orig[i] = sroce_kunit_pkt(test, v6, 1000 + i, plen[i]);
	atomic_set(&sroce_kunit_done, 0);
	for (i = 1; i < n; i++)
		skb_queue_tail(&txq, sroce_kunit_copy(test, orig[i]));
	skb = sroce_kunit_copy(test, orig[0]);

	local_bh_disable();
	got = sroce_tx_batch(skb, &txq, 64);
	local_bh_enable();
	/* The 12-byte packet joins and ends the batch. */
	KUNIT_EXPECT_EQ(test, got, joined);
	KUNIT_EXPECT_EQ(test, skb_queue_len(&txq), n - 1 - joined);
	KUNIT_EXPECT_TRUE(test, skb_is_gso(skb));
	KUNIT_EXPECT_EQ(test, skb_shinfo(skb)->gso_segs, joined + 1);

	/* Where the stack segments it: no device offload at all. */
	skb_reset_mac_header(skb);
	segs = skb_gso_segment(skb, 0);
	if (!IS_ERR_OR_NULL(segs))
		/* As validate_xmit_skb(): the first segment is @skb again. */
		consume_skb(skb);
	else
		kfree_skb(skb);
	KUNIT_EXPECT_FALSE(test, IS_ERR_OR_NULL(segs));
	i = 0;
	for (seg = IS_ERR(segs) ? NULL : segs; seg; seg = seg->next, i++) {
		if (i > joined)
			continue;
		skb_push(seg, skb_network_offset(seg));
		KUNIT_EXPECT_EQ(test, seg->len, orig[i]->len);
		KUNIT_EXPECT_FALSE(test, skb_is_nonlinear(seg));
		if (seg->len == orig[i]->len && !skb_is_nonlinear(seg))
			KUNIT_EXPECT_EQ(test, memcmp(seg->data, orig[i]->data,
						     seg->len), 0);
	}
	KUNIT_EXPECT_EQ(test, i, joined + 1);
	if (!IS_ERR(segs))
		kfree_skb_list(segs);
	KUNIT_EXPECT_EQ(test, atomic_read(&sroce_kunit_done), joined + 1);

	/* A batch dropped whole: each packet's destructor once, too. */
	atomic_set(&sroce_kunit_done, 0);
	skb = __skb_dequeue(&txq);
	local_bh_disable();
	got = sroce_tx_batch(skb, &txq, 64);
	local_bh_enable();
	KUNIT_EXPECT_EQ(test, got, 1);
	kfree_skb(skb);
	KUNIT_EXPECT_EQ(test, atomic_read(&sroce_kunit_done), 2);
	skb_queue_purge(&txq);
	for (i = 0; i < n; i++)
		kfree_skb(orig[i]);

	/* An IPv4 ID out of sequence, another peer: a batch ends there. */
	KUNIT_EXPECT_EQ(test, sroce_kunit_batch(test, v6, two, 2, 50, false),
			1);
	KUNIT_EXPECT_EQ(test, sroce_kunit_batch(test, v6, two, 2, 50, true),
			0);
	if (!v6) {
		static const u32 three[] = { 1040, 1040, 1040 };
		struct sk_buff_head q;

		skb_queue_head_init(&q);
		skb_queue_tail(&q, sroce_kunit_pkt(test, v6, 61, 1040));
		skb_queue_tail(&q, sroce_kunit_pkt(test, v6, 63, 1040));
		skb = sroce_kunit_pkt(test, v6, 60, 1040);
		local_bh_disable();
		KUNIT_EXPECT_EQ(test, sroce_tx_batch(skb, &q, 64), 1);
		local_bh_enable();
		kfree_skb(skb);
		skb_queue_purge(&q);
		KUNIT_EXPECT_EQ(test,
				sroce_kunit_batch(test, v6, three, 3, 0xfffe,
						  false), 2);
	}
}

/*
 * Routes whose device would not cut the batch where it is safe: one that
 * takes it whole (fraglist GSO and checksums, as a veth or a tunnel), one
 * with a tc egress hook (a redirect there takes it whole), and one that
 * announces more room in front than the packets have.
 */
static void sroce_tx_batch_refused(struct kunit *test, bool v6,
				   struct net_device *ndev)
{
	static const u32 two[] = { 1040, 1040 };

	ndev->features = NETIF_F_GSO_UDP_L4 | NETIF_F_GSO_FRAGLIST |
			 NETIF_F_FRAGLIST | NETIF_F_HW_CSUM;
	KUNIT_EXPECT_EQ(test, sroce_kunit_batch(test, v6, two, 2, 70, false),
			0);
	ndev->features = 0;
#ifdef CONFIG_NET_CLS_ACT
	{
		/* A tc egress filter: only its presence is looked at. */
		static u64 hook[8];

		RCU_INIT_POINTER(ndev->miniq_egress, (void *)hook);
		KUNIT_EXPECT_EQ(test,
				sroce_kunit_batch(test, v6, two, 2, 75, false),
				0);
		RCU_INIT_POINTER(ndev->miniq_egress, NULL);
	}
#endif
	ndev->needed_headroom = LL_MAX_HEADER + 64;
	KUNIT_EXPECT_EQ(test, sroce_kunit_batch(test, v6, two, 2, 80, false),
			0);
	ndev->needed_headroom = 0;
	KUNIT_EXPECT_EQ(test, sroce_kunit_batch(test, v6, two, 2, 90, false),
			1);
}

/* The route's device: an Ethernet device that offloads nothing. */
static void sroce_tx_batch_run(struct kunit *test, bool v6)
{
	struct net_device *ndev;

	ndev = alloc_netdev(0, "sroce_kunit%d", NET_NAME_UNKNOWN, ether_setup);
	KUNIT_ASSERT_NOT_NULL(test, ndev);
	sroce_kunit_dst.dev = ndev;
	sroce_tx_batch_one(test, v6);
	sroce_tx_batch_refused(test, v6, ndev);
	sroce_kunit_dst.dev = NULL;
	free_netdev(ndev);
}

static void sroce_tx_batch_ipv4(struct kunit *test)
{
	sroce_tx_batch_run(test, false);
}

static void sroce_tx_batch_ipv6(struct kunit *test)
{
	sroce_tx_batch_run(test, true);
}

/* ---- receive: the backlog of a busy QP (rcv.c) ---- */

/* The IPv4 IDs of the backlog test's packets, in the order they were freed. */
static u16 sroce_kunit_freed[4];
static int sroce_kunit_nfreed;

static void sroce_kunit_rx_done(struct sk_buff *skb)
{
	if (sroce_kunit_nfreed < ARRAY_SIZE(sroce_kunit_freed))
		sroce_kunit_freed[sroce_kunit_nfreed++] =
			ntohs(ip_hdr(skb)->id);
}

/* An RC ACK to QP 7 as received: IPv4, UDP, BTH, AETH, ICRC (unchecked). */
static struct sk_buff *sroce_kunit_ack(struct kunit *test, u16 id)
{
	struct sk_buff *skb = sroce_kunit_pkt(test, false, id, 12 + 4 + 4);
	struct sroce_bth *bth = (void *)(skb_transport_header(skb) +
					 sizeof(struct udphdr));

	skb_dst_drop(skb);
	memset(bth, 0, 12 + 4);
	bth->opcode = IB_OPCODE_RC_ACKNOWLEDGE;
	bth->pkey = cpu_to_be16(IB_DEFAULT_PKEY_FULL);
	bth->qpn = cpu_to_be32(7);
	skb->destructor = sroce_kunit_rx_done;
	return skb;
}

static u64 sroce_kunit_count(struct sroce_dev *sdev, enum sroce_counter c)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu_ptr(sdev->stats, cpu)->c[c];
	return sum;
}

/*
 * A packet whose QP's lock is held waits on the QP's backlog with a
 * reference of its own, and the holder handles the backlog, in arrival
 * order and within a budget, when it releases the lock; a QP not busy
 * takes a packet at once.
 * (The QP is in RESET: handling a packet is dropping it.)
 */
static void sroce_rx_backlog_defers(struct kunit *test)
{
	struct sroce_dev *sdev = kunit_kzalloc(test, sizeof(*sdev), GFP_KERNEL);
	struct sroce_pool_elem *elem = kunit_kzalloc(test, sizeof(*elem),
						     GFP_KERNEL);
	struct sroce_qp *qp = sroce_kunit_rd_qp(test);
	struct sroce_pkt pkt = { };
	struct sk_buff *skb[3];
	u16 i;

	KUNIT_ASSERT_NOT_NULL(test, sdev);
	KUNIT_ASSERT_NOT_NULL(test, elem);
	sdev->stats = alloc_percpu(struct sroce_stats);
	KUNIT_ASSERT_NOT_NULL(test, sdev->stats);
	kref_init(&elem->ref);
	init_completion(&elem->done);
	elem->obj = qp;
	qp->elem = elem;
	qp->ibqp.device = &sdev->ibdev;
	qp->ibqp.qp_type = IB_QPT_RC;
	qp->state = IB_QPS_RESET;
	skb_queue_head_init(&qp->txq);
	skb_queue_head_init(&qp->rx_backlog);
	sroce_kunit_nfreed = 0;
	pkt.sdev = sdev;
	pkt.qp = qp;

	for (i = 0; i < 3; i++)
		skb[i] = sroce_kunit_ack(test, 100 + i);
	spin_lock_bh(&qp->lock);
	for (i = 0; i < 3; i++) {
		pkt.skb = skb[i];
		KUNIT_EXPECT_TRUE(test, sroce_qp_rcv(qp, &pkt));
	}
	KUNIT_EXPECT_EQ(test, skb_queue_len(&qp->rx_backlog), 3U);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->rx_backlog), 3);
	KUNIT_EXPECT_EQ(test, kref_read(&elem->ref), 4U);
	KUNIT_EXPECT_EQ(test, sroce_kunit_nfreed, 0);
	KUNIT_EXPECT_EQ(test, sroce_kunit_count(sdev, SROCE_CNT_RX_DEFERRED),
			3ULL);
	/* A run handles its budget, the oldest first. */
	KUNIT_EXPECT_EQ(test, sroce_rx_backlog_run(qp, 1), 1);
	KUNIT_EXPECT_EQ(test, skb_queue_len(&qp->rx_backlog), 2U);
	KUNIT_EXPECT_EQ(test, sroce_kunit_nfreed, 1);
	sroce_qp_release(qp);
	KUNIT_EXPECT_EQ(test, skb_queue_len(&qp->rx_backlog), 0U);
	KUNIT_EXPECT_EQ(test, atomic_read(&sdev->rx_backlog), 0);
	KUNIT_EXPECT_EQ(test, kref_read(&elem->ref), 1U);
	KUNIT_ASSERT_EQ(test, sroce_kunit_nfreed, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, sroce_kunit_freed[i], 100 + i);

	/* Not busy: handled at once, the skb and reference the caller's. */
	pkt.skb = sroce_kunit_ack(test, 200);
	KUNIT_EXPECT_FALSE(test, sroce_qp_rcv(qp, &pkt));
	KUNIT_EXPECT_EQ(test, kref_read(&elem->ref), 1U);
	KUNIT_EXPECT_EQ(test, sroce_kunit_nfreed, 3);
	KUNIT_EXPECT_EQ(test, sroce_kunit_count(sdev, SROCE_CNT_RX_DEFERRED),
			3ULL);
	consume_skb(pkt.skb);
	KUNIT_EXPECT_EQ(test, sroce_kunit_nfreed, 4);

	/* Being destroyed: dropped, answered by nothing that holds it. */
	qp->dead = true;
	pkt.skb = sroce_kunit_ack(test, 201);
	KUNIT_EXPECT_FALSE(test, sroce_qp_rcv(qp, &pkt));
	KUNIT_EXPECT_EQ(test, sroce_kunit_count(sdev, SROCE_CNT_RX_NO_QP),
			1ULL);
	KUNIT_EXPECT_EQ(test, kref_read(&elem->ref), 1U);
	consume_skb(pkt.skb);
	free_percpu(sdev->stats);
}

static struct kunit_case sroce_wire_cases[] = {
	KUNIT_CASE(sroce_psn_wraps),
	KUNIT_CASE(sroce_rd_ring_resizes),
	KUNIT_CASE(sroce_rd_alloc_limits),
	KUNIT_CASE(sroce_rd_dup_cancels),
	KUNIT_CASE(sroce_opcode_headers),
	KUNIT_CASE(sroce_icrc_masks),
	KUNIT_CASE(sroce_icrc_of_frags),
	KUNIT_CASE(sroce_tx_batch_ipv4),
	KUNIT_CASE(sroce_tx_batch_ipv6),
	KUNIT_CASE(sroce_rx_backlog_defers),
	{}
};

static struct kunit_suite sroce_wire_suite = {
	.name = "sroce_wire",
	.test_cases = sroce_wire_cases,
};

kunit_test_suites(&sroce_cq_suite, &sroce_port_suite, &sroce_wire_suite);

/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 wire format: the InfiniBand transport headers (IBA 9.2-9.3) as
 * carried in UDP port 4791 (IBA annex A17).  Only byte layouts and the
 * opcode table live here; building and parsing is in net.c.
 */
#ifndef SROCE_HDR_H
#define SROCE_HDR_H

#include <linux/types.h>
#include <asm/byteorder.h>
/*
 * The kernel's names: IB_OPCODE_* (ib_pack.h), ROCE_V2_UDP_DPORT and
 * IB_ROCE_UDP_ENCAP_VALID_PORT_MIN (ib_verbs.h), IB_DEFAULT_PKEY_FULL,
 * IB_QP1_QKEY and IB_QP_SET_QKEY (ib_mad.h).
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_pack.h>
#include <rdma/ib_verbs.h>

#define SROCE_ICRC_LEN		4

/* IBA 9.2: Base Transport Header, 12 bytes. */
struct sroce_bth {
	u8 opcode;
	u8 flags;		/* SE:1 M:1 PadCnt:2 TVer:4 */
	__be16 pkey;
	__be32 qpn;		/* FECN:1 BECN:1 resv6, DestQP:24 */
	__be32 apsn;		/* AckReq:1 resv7, PSN:24 */
} __packed;

#define SROCE_BTH_SE		0x80
#define SROCE_BTH_MIG		0x40
#define SROCE_BTH_PAD_SHIFT	4
#define SROCE_BTH_PAD_MASK	0x30
#define SROCE_BTH_TVER_MASK	0x0f
#define SROCE_BTH_ACKREQ	0x80000000
#define SROCE_QPN_MASK		0x00ffffff
#define SROCE_QPN_MCAST		0x00ffffff	/* IBA 10.5: to a multicast group */
#define SROCE_PSN_MASK		0x00ffffff

/* IBA 9.3.2: RDMA Extended Transport Header. */
struct sroce_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

/* IBA 9.3.3: ACK Extended Transport Header. */
struct sroce_aeth {
	__be32 smsn;		/* Syndrome:8 MSN:24 */
} __packed;

/* IBA 9.3.4: Atomic Extended Transport Header. */
struct sroce_atmeth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 cmp;
} __packed;

/* IBA 9.3.5: Atomic Acknowledge Extended Transport Header. */
struct sroce_atmack {
	__be64 orig;
} __packed;

/* IBA 9.3.1.2: Datagram Extended Transport Header. */
struct sroce_deth {
	__be32 qkey;
	__be32 sqp;		/* resv8, SrcQP:24 */
} __packed;

/* Immediate data (IBA 9.3.6) and invalidate (IETH, 9.3.7): 4 bytes each. */

/* AETH syndromes, IBA 9.7.5.2.1 table 41. */
#define SROCE_AETH_TYPE_MASK	0xe0
#define SROCE_AETH_VALUE_MASK	0x1f	/* credits, RNR timer or NAK code */
#define SROCE_AETH_ACK		0x00
#define SROCE_AETH_RNR_NAK	0x20
#define SROCE_AETH_NAK		0x60
#define SROCE_AETH_CREDIT_NONE	0x1f	/* "invalid" credit count */
#define SROCE_NAK_PSN_SEQ	0x00
#define SROCE_NAK_INV_REQ	0x01
#define SROCE_NAK_REM_ACCESS	0x02
#define SROCE_NAK_REM_OP	0x03

/*
 * Opcodes, IBA 9.2.1 table 38: transport (the top three bits, IB_OPCODE_RC,
 * _UC, _UD) | operation (the low five, IB_OPCODE_SEND_FIRST ...).
 */
static inline u8 sroce_opcode_tp(u8 opcode)
{
	return opcode & 0xe0;
}

static inline u8 sroce_opcode_op(u8 opcode)
{
	return opcode & 0x1f;
}

/*
 * IBA 1.5, A19.4: RC only.  IB_OPCODE_FLUSH and IB_OPCODE_ATOMIC_WRITE
 * from Linux 6.2 on.
 */
#define SROCE_OPCODE_FLUSH		0x1c
#define SROCE_OPCODE_ATOMIC_WRITE	0x1d

/*
 * A Congestion Notification Packet (RoCEv2, IBA annex A17.9.3): BTH of
 * this opcode, 16 reserved bytes, ICRC.  A RoCE NIC sends one to the QP
 * whose packet reached it marked ECN Congestion Experienced.
 */
#define SROCE_OPCODE_CNP	(IB_OPCODE_CNP | 0x01)
#define SROCE_CNP_RSVD		16

/* What a packet of each operation carries (bits of sroce_op_info()). */
#define SROCE_H_RETH	BIT(0)
#define SROCE_H_AETH	BIT(1)
#define SROCE_H_ATMETH	BIT(2)
#define SROCE_H_ATMACK	BIT(3)
#define SROCE_H_IMM	BIT(4)
#define SROCE_H_IETH	BIT(5)
#define SROCE_H_DETH	BIT(6)
#define SROCE_H_FETH	BIT(7)	/* FLUSH: 4 bytes, before its RETH (ext + 4) */
#define SROCE_F_PAYLOAD	BIT(8)	/* may carry payload */
#define SROCE_F_FIRST	BIT(9)	/* first packet of a message */
#define SROCE_F_LAST	BIT(10)	/* last packet of a message */
#define SROCE_F_SEND	BIT(11)
#define SROCE_F_WRITE	BIT(12)
#define SROCE_F_READ	BIT(13)	/* read request */
#define SROCE_F_ATOMIC	BIT(14)	/* atomic request */
#define SROCE_F_RESP	BIT(15)	/* a response: ACK, read response, atomic ACK */
#define SROCE_F_VALID	BIT(16)
#define SROCE_F_AWRITE	BIT(17)	/* RDMA atomic write request */
#define SROCE_F_FLUSH	BIT(18)	/* RDMA flush request (never executed) */
/* Requests that take a responder resource (IBA 9.7.7.1, A19.4.2). */
#define SROCE_F_RD_RES	(SROCE_F_READ | SROCE_F_ATOMIC | SROCE_F_AWRITE)

/**
 * sroce_op_info - header and role bits of an operation
 * @op: the low five bits of a BTH opcode (the operation)
 *
 * Return: SROCE_H_* | SROCE_F_* bits; 0 for a reserved operation.
 */
static inline u32 sroce_op_info(u8 op)
{
	static const u32 info[32] = {
#define S(x) ((x) | SROCE_F_VALID)
		[IB_OPCODE_SEND_FIRST] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_FIRST),
		[IB_OPCODE_SEND_MIDDLE] = S(SROCE_F_SEND | SROCE_F_PAYLOAD),
		[IB_OPCODE_SEND_LAST] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_LAST),
		[IB_OPCODE_SEND_LAST_WITH_IMMEDIATE] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_LAST |
			  SROCE_H_IMM),
		[IB_OPCODE_SEND_ONLY] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST),
		[IB_OPCODE_SEND_ONLY_WITH_IMMEDIATE] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_IMM),
		[IB_OPCODE_RDMA_WRITE_FIRST] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_H_RETH),
		[IB_OPCODE_RDMA_WRITE_MIDDLE] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD),
		[IB_OPCODE_RDMA_WRITE_LAST] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD | SROCE_F_LAST),
		[IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD | SROCE_F_LAST |
			  SROCE_H_IMM),
		[IB_OPCODE_RDMA_WRITE_ONLY] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_RETH),
		[IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE] =
			S(SROCE_F_WRITE | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_RETH | SROCE_H_IMM),
		[IB_OPCODE_RDMA_READ_REQUEST] =
			S(SROCE_F_READ | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_RETH),
		[IB_OPCODE_RDMA_READ_RESPONSE_FIRST] =
			S(SROCE_F_RESP | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_H_AETH),
		[IB_OPCODE_RDMA_READ_RESPONSE_MIDDLE] =
			S(SROCE_F_RESP | SROCE_F_PAYLOAD),
		[IB_OPCODE_RDMA_READ_RESPONSE_LAST] =
			S(SROCE_F_RESP | SROCE_F_PAYLOAD | SROCE_F_LAST |
			  SROCE_H_AETH),
		[IB_OPCODE_RDMA_READ_RESPONSE_ONLY] =
			S(SROCE_F_RESP | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_AETH),
		[IB_OPCODE_ACKNOWLEDGE] =
			S(SROCE_F_RESP | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_AETH),
		[IB_OPCODE_ATOMIC_ACKNOWLEDGE] =
			S(SROCE_F_RESP | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_AETH | SROCE_H_ATMACK),
		[IB_OPCODE_COMPARE_SWAP] =
			S(SROCE_F_ATOMIC | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_ATMETH),
		[IB_OPCODE_FETCH_ADD] =
			S(SROCE_F_ATOMIC | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_ATMETH),
		[IB_OPCODE_SEND_LAST_WITH_INVALIDATE] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_LAST |
			  SROCE_H_IETH),
		[IB_OPCODE_SEND_ONLY_WITH_INVALIDATE] =
			S(SROCE_F_SEND | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_IETH),
		/* FETH, then RETH; no payload (IBA A19.4.1) */
		[SROCE_OPCODE_FLUSH] =
			S(SROCE_F_FLUSH | SROCE_F_FIRST | SROCE_F_LAST |
			  SROCE_H_FETH | SROCE_H_RETH),
		/* RETH and 8 bytes of payload (IBA A19.4.2) */
		[SROCE_OPCODE_ATOMIC_WRITE] =
			S(SROCE_F_AWRITE | SROCE_F_PAYLOAD | SROCE_F_FIRST |
			  SROCE_F_LAST | SROCE_H_RETH),
#undef S
	};

	return info[sroce_opcode_op(op)];
}

/* Bytes of extension headers that follow the BTH, in wire order. */
static inline unsigned int sroce_ext_len(u32 info)
{
	return (info & SROCE_H_DETH ? sizeof(struct sroce_deth) : 0) +
	       (info & SROCE_H_FETH ? 4 : 0) +
	       (info & SROCE_H_RETH ? sizeof(struct sroce_reth) : 0) +
	       (info & SROCE_H_ATMETH ? sizeof(struct sroce_atmeth) : 0) +
	       (info & SROCE_H_AETH ? sizeof(struct sroce_aeth) : 0) +
	       (info & SROCE_H_ATMACK ? sizeof(struct sroce_atmack) : 0) +
	       (info & (SROCE_H_IMM | SROCE_H_IETH) ? 4 : 0);
}

/*
 * PSN arithmetic (IBA 9.7.1): PSNs are 24 bits and compared in a window of
 * half the space.  sroce_psn_diff(a, b) > 0 means a is after b.
 */
static inline int sroce_psn_diff(u32 a, u32 b)
{
	return (int)((a - b) << 8) >> 8;
}

static inline u32 sroce_psn_add(u32 psn, u32 n)
{
	return (psn + n) & SROCE_PSN_MASK;
}

#endif /* SROCE_HDR_H */

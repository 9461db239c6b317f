#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""roce_packet: craft, send and sniff RoCEv2 packets (stdlib only).

The wire format is drivers/sroce/hdr.h (IBA 9.2-9.3, annex A17):

    IPv4 or IPv6 | UDP (dport 4791) | BTH | DETH RETH AtomicETH AETH
    AtomicAckETH ImmDt/IETH (as the opcode has them) | payload | pad | ICRC

Building: transport() makes BTH..pad with every field settable (headers
the opcode has default to zeros, headers it has not may be added too),
packet() puts IP and UDP in front and the ICRC behind: the correct one
(icrc() reproduces sroce_icrc() in drivers/sroce/net.c) or a chosen one.

Sending: Injector sends whole IP packets through raw sockets (IPv4
IP_HDRINCL, IPv6 IPPROTO_RAW) with any source address; to a local address
they loop back through lo into sroce's UDP socket.

Sniffing: Sniffer reads an interface with AF_PACKET (outgoing packets too)
and decode_ip() takes apart what sroce sends: ACK/NAK, read responses.

    >>> tp = transport(OP['RC_WRITE_ONLY'], dqpn=17, psn=256, ackreq=True,
    ...                reth=reth(va, rkey, 4), payload=b'abcd')
    >>> Injector().send(packet('10.77.0.99', '10.77.0.1', tp))

As a command (root for send and sniff):

    roce_packet.py send --src 10.77.0.99 --dst 10.77.0.1 --op RC_WRITE_ONLY
        --qpn 17 --psn 256 --ackreq --reth 0x5555d000:0x202:4
        --payload 61626364 [--sniff eth0 --wait 2]
    roce_packet.py build ... (the same options): print the packet in hex
    roce_packet.py sniff eth0 [-t SECONDS] [--out]
    roce_packet.py decode HEX (an IP packet)
"""
import argparse
import itertools
import select
import socket
import struct
import sys
import time
import zlib

UDP_PORT = 4791
DEFAULT_PKEY = 0xffff
GSI_QKEY = 0x80010000
ICRC_LEN = 4
IPV6_HDRINCL = 36  # linux/in6.h; not in every Python's socket module
ETH_P_ALL = 3

# Transport prefixes (IBA 9.2.1 table 38) and the operations.
RC, UC, UD = 0x00, 0x20, 0x60
OPS = {
    'SEND_FIRST': 0x00, 'SEND_MIDDLE': 0x01, 'SEND_LAST': 0x02,
    'SEND_LAST_IMM': 0x03, 'SEND_ONLY': 0x04, 'SEND_ONLY_IMM': 0x05,
    'WRITE_FIRST': 0x06, 'WRITE_MIDDLE': 0x07, 'WRITE_LAST': 0x08,
    'WRITE_LAST_IMM': 0x09, 'WRITE_ONLY': 0x0a, 'WRITE_ONLY_IMM': 0x0b,
    'READ_REQ': 0x0c, 'READ_RESP_FIRST': 0x0d, 'READ_RESP_MIDDLE': 0x0e,
    'READ_RESP_LAST': 0x0f, 'READ_RESP_ONLY': 0x10, 'ACK': 0x11,
    'ATOMIC_ACK': 0x12, 'CMP_SWAP': 0x13, 'FETCH_ADD': 0x14,
    'SEND_LAST_INV': 0x16, 'SEND_ONLY_INV': 0x17,
    'FLUSH': 0x1c,          # IBA 1.5, A19.4: RC only
    'ATOMIC_WRITE': 0x1d,   # IBA 1.5, A19.4: RC only
}
OP_NAMES = {v: k for k, v in OPS.items()}
# Full opcodes by name: OP['RC_SEND_ONLY'], OP['UD_SEND_ONLY_IMM'], ...
OP = {'%s_%s' % (t, n): p | v for t, p in (('RC', RC), ('UC', UC), ('UD', UD))
      for n, v in OPS.items()}

# AETH syndromes (IBA 9.7.5.2.1 table 41).
AETH_ACK, AETH_RNR_NAK, AETH_NAK = 0x00, 0x20, 0x60
CREDIT_NONE = 0x1f
NAK_PSN_SEQ, NAK_INV_REQ, NAK_REM_ACCESS, NAK_REM_OP = 0, 1, 2, 3
AETH_KINDS = ('ACK', 'RNR_NAK', 'RSVD_40', 'NAK', 'RSVD_80', 'RSVD_A0',
              'RSVD_C0', 'RSVD_E0')

# What each operation carries, as hdr.h's sroce_op_info(): extension
# headers in wire order, and whether it may carry payload.
_EXT_ORDER = ('deth', 'feth', 'reth', 'atomic', 'aeth', 'atmack', 'imm',
              'ieth')
_EXT_LEN = {'deth': 8, 'feth': 4, 'reth': 16, 'atomic': 28, 'aeth': 4,
            'atmack': 8, 'imm': 4, 'ieth': 4}
_OP_EXT = {
    0x03: ('imm',), 0x05: ('imm',), 0x06: ('reth',), 0x09: ('imm',),
    0x0a: ('reth',), 0x0b: ('reth', 'imm'), 0x0c: ('reth',),
    0x0d: ('aeth',), 0x0f: ('aeth',), 0x10: ('aeth',), 0x11: ('aeth',),
    0x12: ('aeth', 'atmack'), 0x13: ('atomic',), 0x14: ('atomic',),
    0x16: ('ieth',), 0x17: ('ieth',), 0x1c: ('feth', 'reth'),
    0x1d: ('reth',),
}
_OP_PAYLOAD = set(range(0x00, 0x0c)) | {0x0d, 0x0e, 0x0f, 0x10, 0x16, 0x17,
                                        0x1d}
_OP_FIRST = {0x00, 0x04, 0x05, 0x06, 0x0a, 0x0b, 0x0c, 0x0d, 0x10, 0x11,
             0x12, 0x13, 0x14, 0x17, 0x1c, 0x1d}
_OP_LAST = {0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0f,
            0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x1c, 0x1d}


def op_name(opcode):
    """'RC_SEND_ONLY', or 'OP_0x1f' for a reserved opcode."""
    tp = {RC: 'RC', UC: 'UC', UD: 'UD'}.get(opcode & 0xe0)
    op = OP_NAMES.get(opcode & 0x1f)
    return '%s_%s' % (tp, op) if tp and op else 'OP_%#04x' % opcode


def op_valid(opcode):
    """Is this an opcode sroce knows (any transport)?"""
    return (opcode & 0xe0) in (RC, UC, UD) and (opcode & 0x1f) in OP_NAMES


def op_ext(opcode):
    """The extension headers of an opcode, in wire order."""
    ext = _OP_EXT.get(opcode & 0x1f, ())
    if opcode & 0xe0 == UD:
        ext = ('deth',) + ext
    return ext


def op_has_payload(opcode):
    return (opcode & 0x1f) in _OP_PAYLOAD


def op_is_first(opcode):
    return (opcode & 0x1f) in _OP_FIRST


def op_is_last(opcode):
    return (opcode & 0x1f) in _OP_LAST


def psn_add(psn, n):
    return (psn + n) & 0xffffff


def psn_diff(a, b):
    """a - b in the 24-bit PSN window: > 0 means a is after b."""
    d = (a - b) & 0xffffff
    return d - 0x1000000 if d & 0x800000 else d


# --- headers ------------------------------------------------------------

def bth(opcode, dqpn, psn, se=False, m=False, pad=0, tver=0,
        pkey=DEFAULT_PKEY, fecn=False, becn=False, resv6=0, ackreq=False,
        resv7=0):
    """The 12-byte Base Transport Header (IBA 9.2)."""
    flags = (bool(se) << 7 | bool(m) << 6 | (pad & 3) << 4 | (tver & 15))
    qpw = (bool(fecn) << 31 | bool(becn) << 30 | (resv6 & 0x3f) << 24 |
           (dqpn & 0xffffff))
    psnw = bool(ackreq) << 31 | (resv7 & 0x7f) << 24 | (psn & 0xffffff)
    return struct.pack('!BBHII', opcode & 0xff, flags, pkey & 0xffff, qpw,
                       psnw)


def deth(qkey, sqp):
    return struct.pack('!II', qkey & 0xffffffff, sqp & 0xffffff)


def reth(va, rkey, length):
    return struct.pack('!QII', va & (2 ** 64 - 1), rkey & 0xffffffff,
                       length & 0xffffffff)


def aeth(syndrome, msn=0):
    return struct.pack('!I', (syndrome & 0xff) << 24 | (msn & 0xffffff))


def atomiceth(va, rkey, swap_add=0, cmp=0):
    return struct.pack('!QIQQ', va & (2 ** 64 - 1), rkey & 0xffffffff,
                       swap_add & (2 ** 64 - 1), cmp & (2 ** 64 - 1))


def atmack(orig):
    return struct.pack('!Q', orig & (2 ** 64 - 1))


def immdt(value):
    return struct.pack('!I', value & 0xffffffff)


ieth = immdt


def feth(plt=1, sel=0):
    """A FLUSH's extension header (IBA 1.5, A19.4.1): placement type
    (1: global visibility) in bits 3-0, selectivity in bits 5-4."""
    return struct.pack('!I', (sel & 3) << 4 | (plt & 15))


def transport(opcode, dqpn, psn, payload=b'', *, deth=None, feth=None,
              reth=None, atomic=None, aeth=None, atmack=None, imm=None,
              ieth=None, ext=None, pad=None, pad_bytes=None, **bth_fields):
    """BTH, extension headers, payload and pad bytes (no ICRC).

    The headers the opcode has are zeros unless given (bytes from deth(),
    reth(), ...); a header the opcode has not is added when given.  ext
    (bytes) replaces all extension headers.  pad is the BTH pad count
    (default: what the payload needs), pad_bytes how many zero bytes are
    appended (default: pad).  bth_fields are bth()'s keywords.
    """
    given = {'deth': deth, 'feth': feth, 'reth': reth, 'atomic': atomic,
             'aeth': aeth, 'atmack': atmack, 'imm': imm, 'ieth': ieth}
    if ext is None:
        have = op_ext(opcode)
        ext = b''.join(given[h] if given[h] is not None else
                       (bytes(_EXT_LEN[h]) if h in have else b'')
                       for h in _EXT_ORDER)
    if pad is None:
        pad = -len(payload) & 3
    if pad_bytes is None:
        pad_bytes = pad & 3
    return (bth(opcode, dqpn, psn, pad=pad, **bth_fields) + ext +
            bytes(payload) + bytes(pad_bytes))


# --- MADs (IBA 13.4.3) ----------------------------------------------------

MAD_SIZE = 256
PERF_MGMT = 0x04  # management class PerfMgt (IBA 16.1)
MAD_GET, MAD_SET, MAD_GET_RESP = 0x01, 0x02, 0x81
PMA_CLASS_PORT_INFO, PMA_PORT_COUNTERS, PMA_PORT_COUNTERS_EXT = \
    0x0001, 0x0012, 0x001d


def mad(method, attr_id, tid, *, mgmt_class=PERF_MGMT, base_version=1,
        class_version=1, status=0, attr_mod=0, data=b'', size=MAD_SIZE):
    """A MAD: the common header, then data, zero-padded (or cut) to size.
    For PerfMgt, data starts with the 40 reserved bytes."""
    hdr = struct.pack('!BBBBHHQHHI', base_version & 0xff, mgmt_class & 0xff,
                      class_version & 0xff, method & 0xff, status & 0xffff,
                      0, tid & (2 ** 64 - 1), attr_id & 0xffff, 0,
                      attr_mod & 0xffffffff)
    return (hdr + bytes(data) + bytes(max(0, size)))[:max(0, size)]


def pma_get(attr_id, tid, port_select=1, **kw):
    """A PerfMgt Get; PortSelect is the second byte of the attribute."""
    return mad(MAD_GET, attr_id, tid,
               data=bytes(40) + bytes([0, port_select & 0xff]), **kw)


def decode_mad(payload):
    """The common header of a MAD and, for PerfMgt's port counters, the
    counters; None when payload is shorter than a header."""
    if len(payload) < 24:
        return None
    (bv, cls, cv, method, status, _, tid, attr, _, mod) = struct.unpack(
        '!BBBBHHQHHI', payload[:24])
    m = {'base_version': bv, 'mgmt_class': cls, 'class_version': cv,
         'method': method, 'status': status, 'tid': tid, 'attr_id': attr,
         'attr_mod': mod, 'len': len(payload), 'raw': bytes(payload)}
    d = payload[24 + 40:]
    if cls != PERF_MGMT or len(d) < 48:
        return m
    m['port_select'] = d[1]
    if attr == PMA_PORT_COUNTERS:
        # IBA 16.1.3.5: 16-bit error counters, 32-bit data and packets
        (m['symbol_errors'], m['rcv_errors'],
         m['xmit_discards']) = struct.unpack('!H', d[4:6]) + \
            struct.unpack('!H', d[8:10]) + struct.unpack('!H', d[14:16])
        (m['xmit_data'], m['rcv_data'], m['xmit_packets'],
         m['rcv_packets']) = struct.unpack('!IIII', d[24:40])
    elif attr == PMA_PORT_COUNTERS_EXT and len(d) >= 72:
        # IBA 16.1.4.11: 64-bit data, packets, unicast and multicast
        (m['xmit_data'], m['rcv_data'], m['xmit_packets'],
         m['rcv_packets'], m['ucast_xmit'], m['ucast_rcv'], m['mcast_xmit'],
         m['mcast_rcv']) = struct.unpack('!8Q', d[8:72])
    return m


PMA_COUNTERS = ('rcv_errors', 'xmit_discards', 'xmit_data', 'rcv_data',
                'xmit_packets', 'rcv_packets', 'ucast_xmit', 'ucast_rcv',
                'mcast_xmit', 'mcast_rcv')


# --- IP, UDP, ICRC ------------------------------------------------------

_ip_id = itertools.count(1)


def is_v6(addr):
    return ':' in addr


def _csum(data):
    if len(data) & 1:
        data += b'\0'
    s = sum(struct.unpack('!%dH' % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ipv4_header(src, dst, payload_len, ttl=64, tos=0, ip_id=None, df=True,
                proto=17):
    """A 20-byte IPv4 header with its checksum.  The id must not be 0: the
    kernel would choose one for a raw packet, and the ICRC covers it."""
    if ip_id is None:
        ip_id = next(_ip_id) & 0xffff or next(_ip_id) & 0xffff
    h = struct.pack('!BBHHHBBH4s4s', 0x45, tos & 0xff, 20 + payload_len,
                    ip_id & 0xffff, 0x4000 if df else 0, ttl & 0xff, proto,
                    0, socket.inet_pton(socket.AF_INET, src),
                    socket.inet_pton(socket.AF_INET, dst))
    return h[:10] + struct.pack('!H', _csum(h)) + h[12:]


def ipv6_header(src, dst, payload_len, hop_limit=64, tclass=0, flow_label=0,
                nexthdr=17):
    word = 6 << 28 | (tclass & 0xff) << 20 | (flow_label & 0xfffff)
    return struct.pack('!IHBB16s16s', word, payload_len & 0xffff, nexthdr,
                       hop_limit & 0xff,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst))


def udp_checksum(iph, udp):
    """The UDP checksum of @udp (its checksum field zero) under @iph."""
    if iph[0] >> 4 == 4:
        pseudo = iph[12:20] + struct.pack('!BBH', 0, 17, len(udp))
    else:
        pseudo = iph[8:40] + struct.pack('!IxxxB', len(udp), 17)
    return _csum(pseudo + udp) or 0xffff


def icrc(iph, udph, tp):
    """The ICRC (IBA A17.3.3) as sroce_icrc() computes it.

    @iph is the IP header (IPv4 without options or IPv6), @udph the 8-byte
    UDP header and @tp the transport bytes from the BTH to the ICRC
    (excluded).  CRC-32 over 8 bytes of ones (the LRH placeholder) and the
    packet, with the fields routers may change replaced by ones: IPv4 TOS,
    TTL and checksum; IPv6 traffic class, flow label and hop limit; UDP
    checksum; the BTH's FECN/BECN/resv6 byte.  zlib.crc32 is the same
    CRC-32 with the pre- and post-inversion crc32_le() leaves to its
    caller; the kernel's seed 0xdebb20e3 is crc32_le(~0, ones(8)).
    """
    ip = bytearray(iph)
    if ip[0] >> 4 == 4:
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b'\xff\xff'
    else:
        ip[0] |= 0x0f
        ip[1:4] = b'\xff\xff\xff'
        ip[7] = 0xff
    udp = bytearray(udph[:8])
    udp[6:8] = b'\xff\xff'
    bt = bytearray(tp[:12])
    if len(bt) > 4:
        bt[4] = 0xff
    return zlib.crc32(b'\xff' * 8 + bytes(ip) + bytes(udp) + bytes(bt) +
                      bytes(tp[12:])) & 0xffffffff


def packet(src, dst, tp, sport=0xc000, dport=UDP_PORT, icrc_value=None,
           udp_len=None, udp_csum=None, ttl=64, tos=0, ip_id=None,
           flow_label=0, truncate=None, icrc_after_truncate=False):
    """A whole IP packet: IP, UDP, @tp (from transport()) and the ICRC.

    icrc_value: the ICRC to put (default: the correct one).  udp_len: the
    UDP length field (default: true length).  udp_csum: the UDP checksum
    (default: 0 for IPv4, as sroce sends, correct for IPv6).  truncate:
    cut the packet to this many bytes of UDP payload (BTH onwards), with
    the UDP and IP lengths matching the cut; icrc_after_truncate puts a
    correct ICRC in the last 4 bytes that are left.
    """
    v6 = is_v6(src) or is_v6(dst)
    body = bytes(tp)
    if truncate is not None:
        body = body[:max(truncate - (ICRC_LEN if icrc_after_truncate else 0),
                         0)]
    ulen = 8 + len(body) + (ICRC_LEN if truncate is None or
                            icrc_after_truncate else 0)
    if v6:
        iph = ipv6_header(src, dst, ulen, hop_limit=ttl, tclass=tos,
                          flow_label=flow_label)
    else:
        iph = ipv4_header(src, dst, ulen, ttl=ttl, tos=tos, ip_id=ip_id)
    udph = struct.pack('!HHHH', sport & 0xffff, dport & 0xffff,
                       (udp_len if udp_len is not None else ulen) & 0xffff, 0)
    if truncate is None or icrc_after_truncate:
        value = icrc(iph, udph, body) if icrc_value is None else icrc_value
        body += struct.pack('<I', value & 0xffffffff)
    if udp_csum is None and v6:
        udp_csum = udp_checksum(iph, udph + body)
    if udp_csum:
        udph = udph[:6] + struct.pack('!H', udp_csum)
    return iph + udph + body


def build(src, dst, opcode, dqpn, psn, payload=b'', sport=0xc000,
          icrc_value=None, **fields):
    """transport() and packet() in one: keywords go where they belong."""
    pkt_keys = ('dport', 'udp_len', 'udp_csum', 'ttl', 'tos', 'ip_id',
                'flow_label', 'truncate', 'icrc_after_truncate')
    pk = {k: fields.pop(k) for k in pkt_keys if k in fields}
    return packet(src, dst, transport(opcode, dqpn, psn, payload, **fields),
                  sport=sport, icrc_value=icrc_value, **pk)


# --- sending ------------------------------------------------------------

class Injector:
    """Sends whole IP packets (any source address) through raw sockets."""

    def __init__(self):
        self.s4 = None
        self.s6 = None

    def _sock(self, v6):
        if v6 and self.s6 is None:
            self.s6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW,
                                    socket.IPPROTO_RAW)
            self.s6.setsockopt(socket.IPPROTO_IPV6, IPV6_HDRINCL, 1)
        elif not v6 and self.s4 is None:
            self.s4 = socket.socket(socket.AF_INET, socket.SOCK_RAW,
                                    socket.IPPROTO_RAW)
            self.s4.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
            self.s4.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        return self.s6 if v6 else self.s4

    def send(self, pkt):
        """Send one packet from packet(); returns the bytes sent."""
        if pkt[0] >> 4 == 6:
            dst = socket.inet_ntop(socket.AF_INET6, pkt[24:40])
            return self._sock(True).sendto(pkt, (dst, 0))
        dst = socket.inet_ntop(socket.AF_INET, pkt[16:20])
        return self._sock(False).sendto(pkt, (dst, 0))

    def close(self):
        for s in (self.s4, self.s6):
            if s is not None:
                s.close()
        self.s4 = self.s6 = None


# --- decoding and sniffing ---------------------------------------------

def decode_transport(tp):
    """Take apart BTH..ICRC (as much as there is); a dict."""
    d = {'len': len(tp)}
    if len(tp) < 12:
        d['error'] = 'short BTH'
        return d
    op, flags, pkey, qpw, psnw = struct.unpack('!BBHII', tp[:12])
    d.update(opcode=op, op=op_name(op), se=flags >> 7, m=(flags >> 6) & 1,
             pad=(flags >> 4) & 3, tver=flags & 15, pkey=pkey,
             fecn=qpw >> 31, becn=(qpw >> 30) & 1, dqpn=qpw & 0xffffff,
             ackreq=psnw >> 31, psn=psnw & 0xffffff)
    off = 12
    for h in op_ext(op) if op_valid(op) else ():
        n = _EXT_LEN[h]
        if len(tp) < off + n:
            d['error'] = 'short %s' % h
            return d
        b = tp[off:off + n]
        if h == 'deth':
            q, s = struct.unpack('!II', b)
            d['deth'] = {'qkey': q, 'sqp': s & 0xffffff}
        elif h == 'reth':
            va, rkey, ln = struct.unpack('!QII', b)
            d['reth'] = {'va': va, 'rkey': rkey, 'len': ln}
        elif h == 'atomic':
            va, rkey, sa, cmp = struct.unpack('!QIQQ', b)
            d['atomic'] = {'va': va, 'rkey': rkey, 'swap_add': sa, 'cmp': cmp}
        elif h == 'aeth':
            (w,) = struct.unpack('!I', b)
            syn = w >> 24
            d['aeth'] = {'syndrome': syn, 'kind': AETH_KINDS[syn >> 5],
                         'code': syn & 0x1f, 'msn': w & 0xffffff}
        elif h == 'atmack':
            d['atmack'] = struct.unpack('!Q', b)[0]
        else:
            d[h] = struct.unpack('!I', b)[0]
        off += n
    end = len(tp) - ICRC_LEN
    if end >= off:
        d['payload'] = bytes(tp[off:max(end - d['pad'], off)])
        d['icrc'] = struct.unpack('<I', tp[end:])[0]
    return d


def decode_ip(ip):
    """Decode an IP packet; None unless it is UDP to port 4791."""
    if len(ip) < 20:
        return None
    if ip[0] >> 4 == 4:
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            return None
        d = {'ipv6': False, 'ttl': ip[8], 'tos': ip[1],
             'src': socket.inet_ntop(socket.AF_INET, ip[12:16]),
             'dst': socket.inet_ntop(socket.AF_INET, ip[16:20])}
        iph, rest = ip[:ihl], ip[ihl:]
    elif ip[0] >> 4 == 6 and len(ip) >= 48 and ip[6] == 17:
        d = {'ipv6': True, 'ttl': ip[7], 'tos': (ip[0] & 15) << 4 | ip[1] >> 4,
             'src': socket.inet_ntop(socket.AF_INET6, ip[8:24]),
             'dst': socket.inet_ntop(socket.AF_INET6, ip[24:40])}
        iph, rest = ip[:40], ip[40:]
    else:
        return None
    sport, dport, ulen, csum = struct.unpack('!HHHH', rest[:8])
    if dport != UDP_PORT:
        return None
    tp = rest[8:ulen] if 8 <= ulen <= len(rest) else rest[8:]
    d.update(sport=sport, dport=dport, udp_len=ulen, udp_csum=csum)
    d.update(decode_transport(tp))
    if 'icrc' in d and len(iph) in (20, 40):
        d['icrc_ok'] = icrc(iph, rest[:8], tp[:-ICRC_LEN]) == d['icrc']
    d['raw'] = bytes(ip)
    return d


def decode_frame(frame):
    """Decode an Ethernet frame (as AF_PACKET gives, lo included)."""
    if len(frame) < 14:
        return None
    etype = struct.unpack('!H', frame[12:14])[0]
    if etype == 0x8100 and len(frame) >= 18:
        etype, frame = struct.unpack('!H', frame[16:18])[0], frame[4:]
    if etype not in (0x0800, 0x86dd):
        return None
    return decode_ip(frame[14:])


SO_RCVBUFFORCE = getattr(socket, 'SO_RCVBUFFORCE', 33)


class Sniffer:
    """RoCEv2 packets on an interface, both directions (AF_PACKET)."""

    def __init__(self, iface):
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                               socket.htons(ETH_P_ALL))
        self.s.bind((iface, 0))
        # SO_RCVBUF stops at net.core.rmem_max (208 KiB): about 80
        # packets of 1 KiB, fewer than one READ of 64 KiB answers with.
        # Root may go past it.
        try:
            self.s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        except OSError:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)

    def read(self, timeout):
        """The next RoCEv2 packet within @timeout seconds (0: one that is
        queued), or None.  The dict has 'out' True for a packet the host
        sent."""
        end = _now() + timeout
        while True:
            r, _, _ = select.select([self.s], [], [], max(end - _now(), 0))
            if not r:
                return None
            frame, addr = self.s.recvfrom(65535)
            d = decode_frame(frame)
            if d is not None:
                d['out'] = addr[2] == socket.PACKET_OUTGOING
                return d

    def drain(self):
        """Forget what is queued."""
        while self.read(0.001) is not None:
            pass

    def wait(self, pred, timeout):
        """The first packet for which pred(d) is true, or None."""
        end = _now() + timeout
        while True:
            d = self.read(max(end - _now(), 0))
            if d is None or pred(d):
                return d

    def collect(self, timeout, pred=lambda d: True, until=None):
        """Every matching packet seen within @timeout seconds, or up to the
        one after which until(list so far) is true."""
        end = _now() + timeout
        out = []
        while True:
            d = self.read(max(end - _now(), 0))
            if d is None:
                return out
            if pred(d):
                out.append(d)
                if until and until(out):
                    return out

    def close(self):
        self.s.close()


def _now():
    return time.monotonic()


def describe(d):
    """One line for a decoded packet (for logs)."""
    t = '%s>%s %s qpn=%#x psn=%d' % (d.get('src'), d.get('dst'),
                                     d.get('op', '?'), d.get('dqpn', 0),
                                     d.get('psn', 0))
    if 'aeth' in d:
        a = d['aeth']
        t += ' %s code=%d msn=%d' % (a['kind'], a['code'], a['msn'])
    if 'reth' in d:
        t += ' va=%#x rkey=%#x len=%d' % (d['reth']['va'], d['reth']['rkey'],
                                          d['reth']['len'])
    if d.get('payload'):
        t += ' payload=%d' % len(d['payload'])
    return t


# --- command line -------------------------------------------------------

def _ints(text, n, what):
    """'a:b:c' with n numbers (any base)."""
    parts = text.split(':')
    if len(parts) != n:
        raise argparse.ArgumentTypeError('%s wants %d numbers a:b:...' %
                                         (what, n))
    return [int(x, 0) for x in parts]


def _opcode(text):
    if text.upper() in OP:
        return OP[text.upper()]
    return int(text, 0)


def _cli_packet(a):
    """The packet the build/send options describe."""
    payload = bytes.fromhex(a.payload) if a.payload else b''
    if a.payload_len is not None:
        payload = bytes(i & 0xff for i in range(a.payload_len))
    kw = {}
    if a.reth:
        kw['reth'] = reth(*_ints(a.reth, 3, '--reth'))
    if a.aeth:
        kw['aeth'] = aeth(*_ints(a.aeth, 2, '--aeth'))
    if a.atomic:
        kw['atomic'] = atomiceth(*_ints(a.atomic, 4, '--atomic'))
    if a.atmack is not None:
        kw['atmack'] = atmack(a.atmack)
    if a.deth:
        kw['deth'] = deth(*_ints(a.deth, 2, '--deth'))
    if a.imm is not None:
        kw['imm'] = immdt(a.imm)
    if a.ieth is not None:
        kw['ieth'] = ieth(a.ieth)
    for k in ('pad', 'pad_bytes', 'tver', 'pkey', 'resv6', 'resv7'):
        if getattr(a, k) is not None:
            kw[k] = getattr(a, k)
    tp = transport(a.op, a.qpn, a.psn, payload, se=a.se, m=a.m,
                   fecn=a.fecn, becn=a.becn, ackreq=a.ackreq, **kw)
    return packet(a.src, a.dst, tp, sport=a.sport, icrc_value=a.icrc,
                  udp_len=a.udp_len, ttl=a.ttl, tos=a.tos,
                  truncate=a.truncate,
                  icrc_after_truncate=a.icrc_after_truncate)


def _num(text):
    return int(text, 0)


def _add_packet_args(p):
    num = _num
    p.add_argument('--src', required=True, help='source address (any)')
    p.add_argument('--dst', required=True)
    p.add_argument('--sport', type=num, default=0xc000)
    p.add_argument('--op', type=_opcode, required=True,
                   help='RC_SEND_ONLY, UD_SEND_ONLY_IMM, ... or a number')
    p.add_argument('--qpn', type=num, required=True)
    p.add_argument('--psn', type=num, default=0)
    for f in ('se', 'm', 'fecn', 'becn', 'ackreq'):
        p.add_argument('--' + f, action='store_true')
    for f in ('pad', 'pad-bytes', 'tver', 'pkey', 'resv6', 'resv7', 'imm',
              'ieth', 'atmack', 'icrc', 'udp-len', 'truncate',
              'payload-len'):
        p.add_argument('--' + f, type=num)
    p.add_argument('--ttl', type=num, default=64)
    p.add_argument('--tos', type=num, default=0)
    p.add_argument('--reth', help='VA:RKEY:LEN')
    p.add_argument('--aeth', help='SYNDROME:MSN')
    p.add_argument('--atomic', help='VA:RKEY:SWAP_ADD:CMP')
    p.add_argument('--deth', help='QKEY:SRC_QP')
    p.add_argument('--payload', help='hex bytes')
    p.add_argument('--icrc-after-truncate', action='store_true')


def _print(d):
    print('%s %s' % ('out' if d.get('out') else 'in ', describe(d)),
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog='roce_packet.py',
                                 description='craft, send, sniff RoCEv2')
    sub = ap.add_subparsers(dest='cmd', required=True)
    _add_packet_args(sub.add_parser('build', help='print a packet in hex'))
    sp = sub.add_parser('send', help='send a packet (raw socket)')
    _add_packet_args(sp)
    sp.add_argument('--count', type=int, default=1)
    sp.add_argument('--sniff', metavar='IFACE',
                    help='then print what is sent on IFACE')
    sp.add_argument('--wait', type=float, default=1.0)
    sn = sub.add_parser('sniff', help='print RoCEv2 packets on IFACE')
    sn.add_argument('iface')
    sn.add_argument('-t', '--seconds', type=float, default=1e9)
    sn.add_argument('--out', action='store_true',
                    help='only the packets this host sends')
    dp = sub.add_parser('decode', help='decode an IP packet given in hex')
    dp.add_argument('hex')
    a = ap.parse_args(argv)

    if a.cmd == 'build':
        print(_cli_packet(a).hex())
    elif a.cmd == 'send':
        pkt = _cli_packet(a)
        s = Sniffer(a.sniff) if a.sniff else None
        inj = Injector()
        for _ in range(a.count):
            inj.send(pkt)
        if s:
            for d in s.collect(a.wait, lambda d: d['out']):
                _print(d)
    elif a.cmd == 'sniff':
        s = Sniffer(a.iface)
        end = _now() + a.seconds
        while _now() < end:
            d = s.read(min(1.0, max(end - _now(), 0)))
            if d is not None and (d['out'] or not a.out):
                _print(d)
    else:
        d = decode_ip(bytes.fromhex(a.hex))
        if d is None:
            sys.exit('not a RoCEv2 packet')
        d.pop('raw')
        print(d)


if __name__ == '__main__':
    main()

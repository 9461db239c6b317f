#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""PerfMgt MADs to a port's PMA through its GSI QP (QP1), as a remote
performance manager sends them: from a UD QP of our own, over the wire
(or loopback), to the GID given.

    pma_query.py DEV GID_INDEX get ATTR [DGID] -> prints the answer's fields
    pma_query.py DEV GID_INDEX set ATTR   -> prints "no answer" or the status
    pma_query.py DEV GID_INDEX bad ATTR   -> a MAD of class version 2
    pma_query.py DEV GID_INDEX badport ATTR -> a Get of PortSelect 2
    pma_query.py DEV GID_INDEX badmod ATTR  -> a Get with attribute modifier 1

ATTR: cpi (ClassPortInfo), pc (PortCounters), pcx (PortCountersExtended).
DGID: the port to ask (sysfs spelling), default our own GID_INDEX's GID.
Exit status 0 when the program ran (whatever the answer); the caller
judges the printed fields.
"""
import struct
import sys
import time

from pyverbs.addr import AH, AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
import pyverbs.enums as e

QP1_QKEY = 0x80010000
ATTRS = {'cpi': 0x0001, 'pc': 0x0012, 'pcx': 0x001D}
GRH = 40
MAD = 256


def mad(method, attr, class_version=1, tid=0x5352, port=1, attr_mod=0):
    hdr = struct.pack('>BBBBHHQHHI', 1, 0x04, class_version, method, 0, 0,
                      tid, attr, 0, attr_mod)
    data = bytearray(MAD - len(hdr))
    data[41] = port                    # PortSelect
    return hdr + bytes(data)


def main():
    dev, gidx, op, attr = sys.argv[1], int(sys.argv[2]), sys.argv[3], ATTRS[sys.argv[4]]
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    cap = QPCap(max_send_wr=2, max_recv_wr=2, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap))
    qa = QPAttr()
    qa.qkey = QP1_QKEY
    qa.port_num = 1
    qp.to_rts(qa)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qp.post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf, GRH + MAD, mr.lkey)]))

    if op not in ('get', 'set', 'bad', 'badport', 'badmod'):
        sys.exit('pma_query.py: unknown operation %r' % op)
    method = 0x02 if op == 'set' else 0x01
    out = mad(method, attr, 2 if op == 'bad' else 1,
              port=2 if op == 'badport' else 1,
              attr_mod=1 if op == 'badmod' else 0)
    mr.write(out, len(out), 1024)
    gid = GID(sys.argv[5]) if len(sys.argv) > 5 else ctx.query_gid(1, gidx)
    ah = AH(pd, attr=AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=gidx),
                            is_global=1, port_num=1))
    wr = SendWR(num_sge=1, sg=[SGE(mr.buf + 1024, MAD, mr.lkey)])
    wr.set_wr_ud(ah, 1, QP1_QKEY)
    qp.post_send(wr)

    answer = None
    end = time.time() + 3
    while time.time() < end and answer is None:
        n, wcs = cq.poll(num_entries=4)
        for wc in wcs[:n]:
            if wc.status != e.IBV_WC_SUCCESS:
                print(f'completion error {wc.status} opcode {wc.opcode}')
                return 1
            if wc.opcode == e.IBV_WC_RECV:
                answer = mr.read(GRH + MAD, 0)[GRH:]
        time.sleep(0.01)
    if answer is None:
        print('no answer')
        return 0
    (bv, cls, cv, meth, status, _, tid, aid, _, _) = struct.unpack(
        '>BBBBHHQHHI', answer[:24])
    print(f'method 0x{meth:02x} status 0x{status:04x} attr 0x{aid:04x} '
          f'class 0x{cls:02x} tid 0x{tid:x}')
    d = answer[24 + 40:]
    if aid == 0x0001:
        print(f'capability_mask 0x{struct.unpack(">H", d[2:4])[0]:04x}')
    elif aid == 0x0012:
        vals = struct.unpack('>IIII', d[24:40])
        print('port_select %d port_xmit_data %d port_rcv_data %d '
              'port_xmit_packets %d port_rcv_packets %d' % ((d[1],) + vals))
    elif aid == 0x001D:
        vals = struct.unpack('>8Q', d[8:72])
        print('port_select %d port_xmit_data %d port_rcv_data %d '
              'port_xmit_packets %d port_rcv_packets %d unicast_xmit %d '
              'unicast_rcv %d multicast_xmit %d multicast_rcv %d'
              % ((d[1],) + vals))
    return 0


if __name__ == '__main__':
    sys.exit(main())

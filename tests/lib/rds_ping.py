#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""RDS datagrams over the IB transport (rds_rdma), checked byte by byte.

Usage: rds_ping.py server LOCAL PORT COUNT READY_FILE
       rds_ping.py client LOCAL PEER PORT COUNT

The server binds LOCAL:PORT, creates READY_FILE, and sends every message it
receives back reversed.  The client sends COUNT messages of sizes from 1
byte to 64 KiB (RDS cuts the larger ones into fragments, each an IB SEND),
first one at a time, then in bursts of 16 that it sends before it reads
any answer (RDS's credit flow control then holds the sender back), and
checks every answer.  Exit status 0 if all came back intact.
"""
import socket
import sys

SOL_RDS = 276
SO_RDS_TRANSPORT = 8
RDS_TRANS_IB = 0
SIZES = (1, 64, 1000, 4096, 4097, 9000, 32768, 65536)


def rds_socket(local, port):
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    # The IB transport, never TCP: the test is of the RDMA device.
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind((local, port))
    s.settimeout(60)
    return s


def message(i):
    """The i-th message: its size from SIZES, its bytes from i."""
    return bytes((i + j) % 251 for j in range(SIZES[i % len(SIZES)]))


def server(local, port, count, ready):
    s = rds_socket(local, port)
    open(ready, 'w').close()
    for _ in range(count):
        data, addr = s.recvfrom(1 << 20)
        s.sendto(data[::-1], addr)
    print('server: %d messages echoed' % count)
    return 0


def client(local, peer, port, count):
    s = rds_socket(local, port)
    bad = 0
    half = count // 2
    for i in range(half):
        msg = message(i)
        s.sendto(msg, (peer, port))
        data, _ = s.recvfrom(1 << 20)
        bad += data != msg[::-1]
    i = half
    while i < count:
        burst = [message(k) for k in range(i, min(i + 16, count))]
        for msg in burst:
            s.sendto(msg, (peer, port))
        got = [s.recvfrom(1 << 20)[0] for _ in burst]
        bad += sum(g != m[::-1] for g, m in zip(got, burst))
        i += len(burst)
    print('client: %d messages, %d came back wrong' % (count, bad))
    return 1 if bad else 0


def main():
    if sys.argv[1] == 'server':
        return server(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                      sys.argv[5])
    return client(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                  int(sys.argv[5]))


if __name__ == '__main__':
    sys.exit(main())

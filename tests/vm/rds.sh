#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 600
#
# RDS over sroce: the kernel's Reliable Datagram Sockets with their IB
# transport (rds_rdma), another in-kernel ULP beside NVMe-oF and NFS.  RDS
# connects with rdma_cm, moves its datagrams as IB SENDs in fragments of
# a page, and keeps its own credits for receive buffers.  Datagrams of 1
# byte to 64 KiB go back and forth, one at a time and in bursts, each
# checked (tests/lib/rds_ping.py).  Then the device is deleted while RDS
# still holds its connection: ib_core has RDS give the device up (its
# remove_one), and every object it made must be gone, with no warning.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
port=18780
ready=/tmp/rds.ready
n=$(scaled 200)
if ! modinfo rds_rdma > /dev/null 2>&1; then
	echo "ok 1 - RDS over sroce # SKIP this kernel has no rds_rdma"
	echo "1..1"
	exit 0
fi

check "modprobe sroce" modprobe sroce
before=$(objects)
check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
# Room for a burst of answers in the client's receive buffer (rds_ping.py
# asks for 4 MiB): a sender whose peer's port is congested waits.
sysctl -q -w net.core.rmem_max=8388608 net.core.wmem_max=8388608
check "modprobe rds_rdma" modprobe rds_rdma
check "RDS/IB took the device" wait_for 10 dmesg_has "RDS/IB: sroce0: added"
vm_barrier up

rm -f $ready
rds_ready() { test -e $ready; }
rds_srv() { timeout 240 python3 "$SROCE_SRC/tests/lib/rds_ping.py" server "$(vm_ip 0)" "$1" "$n" $ready; }
rds_cli() { timeout 200 python3 "$SROCE_SRC/tests/lib/rds_ping.py" client "$(vm_ip 1)" "$(vm_ip 0)" "$1" "$n"; }
PAIR_READY=rds_ready check "RDS over IB: $n datagrams of 1 byte to 64 KiB echoed, checked" \
	vm_pair $port rds_srv rds_cli
[ "$VM_ID" = 1 ] && diag "$(cat /tmp/cli.out)"
check "the connection is RDS/IB's, over sroce" \
	bash -c "rdma resource show qp link sroce0/1 | grep -q 'type RC state RTS.*comm \[rdma_cm\]'"
dmesg | grep "RDS/IB: .* conn connected" | sed 's/^/# /'
vm_barrier pinged

check "rdma link delete sroce0 with RDS connected" rdma link delete sroce0
check "every object RDS made is gone" wait_for 30 output_is "$before" objects
check "unload rds_rdma and rds" rmmod rds_rdma rds
vm_barrier done
unload_check
tap_done

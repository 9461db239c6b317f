#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 300
#
# make demo: two VMs on one link each create sroce0 on eth0 and show it
# through the rdma tool and, with our provider, libibverbs; then VM 0 runs
# an ib_send_bw server and VM 1 its client over sroce.
# What they show goes to demo.txt beside the VM's console.
. tests/lib/vm.sh

show() { echo "\$ $*"; "$@" 2>&1; echo; }
{
	echo "=== vm$VM_ID ($(vm_ip "$VM_ID"), kernel $(uname -r)) ==="
	show rdma link add sroce0 type sroce netdev eth0
	wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
	show rdma link show
	show rdma res show
	show ibv_devices
	show ibv_devinfo -d sroce0
	echo "\$ dmesg | grep sroce"
	dmesg | grep -e 'sroce:' -e 'sroce0:' | grep -v taint
	echo
} > "$SROCE_OUT/demo.txt"
vm_barrier shown
g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")")
{
	if [ "$VM_ID" = 0 ]; then
		echo "\$ ib_send_bw -d sroce0 -x $g -F -s 65536 -n 1000   # server"
		timeout 200 ib_send_bw -d sroce0 -x "$g" -F -s 65536 -n 1000 -p 18515 2>&1 &
		srv=$!
		wait_for 30 listening 18515
		vm_put demo-server 1
		wait "$srv"
		echo $? > /tmp/demo-rc
	else
		vm_get demo-server 200 > /dev/null
		echo "\$ ib_send_bw -d sroce0 -x $g -F -s 65536 -n 1000 $(vm_ip 0)   # client"
		timeout 180 ib_send_bw -d sroce0 -x "$g" -F -s 65536 -n 1000 -p 18515 "$(vm_ip 0)" 2>&1
		echo $? > /tmp/demo-rc
	fi
	echo
	show rdma statistic show link sroce0/1
} >> "$SROCE_OUT/demo.txt"
vm_barrier sent
# The demo fails when its transfer did (the run above printed why).
ok "$(cat /tmp/demo-rc 2>/dev/null || echo 1)" "ib_send_bw $([ "$VM_ID" = 0 ] && echo server || echo client) finished"
check "sroce0 exists" test -d /sys/class/infiniband/sroce0
check "rdma link delete sroce0" rdma link delete sroce0
tap_done

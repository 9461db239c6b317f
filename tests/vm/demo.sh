#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 180
#
# make demo: two VMs on one link each create sroce0 on eth0 and show it.
# What they show goes to demo.txt beside the VM's console.
. tests/vm/lib.sh

show() { echo "\$ $*"; "$@" 2>&1; echo; }
{
	echo "=== vm$VM_ID ($(vm_ip "$VM_ID"), kernel $(uname -r)) ==="
	show rdma link add sroce0 type sroce netdev eth0
	wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
	show rdma link show
	show rdma dev show sroce0
	show rdma res show
	show cat /sys/class/infiniband/sroce0/ports/1/state
	echo "\$ GID table (ports/1/gids, gid_attrs/types)"
	p=/sys/class/infiniband/sroce0/ports/1
	for t in "$p"/gid_attrs/types/*; do
		type=$(cat "$t" 2>/dev/null) || continue
		echo "  gid ${t##*/}: $(cat "$p/gids/${t##*/}") $type"
	done
	echo
	echo "\$ dmesg | grep sroce"
	dmesg | grep -e 'sroce:' -e 'sroce0:' | grep -v taint
	echo
} > "$SROCE_OUT/demo.txt"
vm_barrier shown
check "sroce0 exists" test -d /sys/class/infiniband/sroce0
check "rdma link delete sroce0" rdma link delete sroce0
tap_done

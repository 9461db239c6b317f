#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 180
#
# make demo: two VMs on one link each create sroce0 on eth0 and show it
# through the rdma tool and, with our provider, libibverbs.
# What they show goes to demo.txt beside the VM's console.
. tests/vm/lib.sh

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
check "sroce0 exists" test -d /sys/class/infiniband/sroce0
check "rdma link delete sroce0" rdma link delete sroce0
tap_done

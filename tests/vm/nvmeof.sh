#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 1500
#
# NVMe-oF over sroce between two hosts: VM 0 is an nvmet-rdma target with
# a memory-backed null_blk namespace, VM 1 discovers, connects (2 I/O
# queues, a write queue, a poll queue), writes and verifies data with fio
# (crc32c; several block sizes, depths, both jobs at once, polled I/O),
# disconnects, reconnects, disconnects with I/O in flight; then the
# target's port goes away under the connected host, which gives up the
# controller cleanly.  Every verbs object is freed on both sides.
. tests/lib/vm.sh
. tests/lib/nvmeof.sh

# ib_core keeps the CQs of its shared CQ pool (ib_cq_pool_get, used by
# nvmet-rdma) until the device goes: CQs are counted after link delete.
objects() { grep -v '^cq ' /sys/kernel/debug/sroce/objects; }
srv=$(vm_ip 0)

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
before=$(objects)
vm_barrier up

# A read from the namespace ends in an error, not a hang.
read_fails() {
	local rc
	timeout 90 dd if="/dev/$(nvme_bdev)" of=/dev/null bs=4k count=1 iflag=direct
	rc=$?
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
}
# The controller went away; if not, what it and the kernel are doing.
ctrl_given_up() {
	local f
	wait_for 120 output_is 0 nvme_ctrls && return 0
	for f in /sys/class/nvme/*; do
		echo "$f: $(cat "$f/state" 2>/dev/null) $(cat "$f/transport" 2>/dev/null)"
	done
	for f in /proc/[0-9]*/stack; do
		grep -q "nvme\|ib_\|rdma" "$f" 2>/dev/null || continue
		echo "${f%/stack} $(cat "${f%/stack}/comm")"
		head -8 "$f"
	done
	return 1
}

# Requests in flight on the namespace or its path devices (the multipath
# head itself may not count them).
inflight() {
	cat /sys/class/block/nvme*/inflight 2>/dev/null |
		awk '{ s += $1 + $2 } END { exit !(s > 0) }'
}

if [ "$VM_ID" = 0 ]; then
	check "target: subsystem, null_blk namespace, rdma port $srv:4420" nvmet_up "$srv" ipv4
	check "target: nvmet-rdma listens on sroce0" wait_for 30 listening 4420
	vm_barrier target-up
	vm_barrier host-done 1200
	check "target: port removed under a connected host" nvmet_port_down
	vm_barrier port-down 600
	vm_barrier host-gave-up 600
	check "target: subsystem removed, modules unloaded" nvmet_down
else
	vm_barrier target-up
	check "load nvme-rdma" modprobe nvme-rdma
	check "nvme discover lists the subsystem" bash -c "nvme discover -t rdma -a $srv -s 4420 | grep -q '$NQN'"
	check "nvme connect -t rdma" nvme_host_connect "$srv"
	dmesg | grep -o "nvme[0-9]*: .*queues.*" | tail -1 | sed 's/^/# /'
	check "fio 4 KiB random writes, depth 16, 2 jobs, crc32c verified" fio_verify 4k 16
	check "fio 128 KiB, depth 4, verified" fio_verify 128k 4
	check "fio 8 KiB..64 KiB mixed, depth 32, verified" fio_verify 8k 32 --bsrange=8k-64k
	check "fio 4 KiB polled I/O (poll queue), verified" fio_verify 4k 1 --ioengine=pvsync2 --hipri=1 --size=2M
	check "nvme disconnect" nvme_host_disconnect
	check "nvme connect again" nvme_host_connect "$srv"
	check "fio 64 KiB, depth 8, verified after reconnect" fio_verify 64k 8
	timeout 300 fio --name=load --filename="/dev/$(nvme_bdev)" --direct=1 \
		--ioengine=libaio --rw=randrw --bs=16k --iodepth=16 --size=64M \
		--time_based --runtime=120 > /tmp/load.out 2>&1 &
	load=$!
	check "I/O in flight" wait_for 30 inflight
	check "nvme disconnect with I/O in flight" nvme_host_disconnect
	check "the I/O ends (failed, not hung)" wait_for 60 not kill -0 $load
	wait $load
	diag "fio under disconnect exited $?"
	check "nvme connect once more" nvme_host_connect "$srv"
	check "fio 4 KiB, depth 8, verified" fio_verify 4k 8
	vm_barrier host-done 1200
	vm_barrier port-down 600
	check "host: I/O fails once the target port is gone" read_fails
	check "host: the controller is given up (ctrl-loss-tmo)" ctrl_given_up
	vm_barrier host-gave-up 600
	check "unload nvme-rdma" modprobe -r nvme-rdma
fi

vm_barrier done 300
check "every QP, MR, PD, SRQ and AH is gone" wait_for 30 output_is "$before" objects
[ "$before" = "$(objects)" ] || diag "before: $(echo $before) after: $(objects | tr '\n' ' ')"
rdma statistic show link sroce0/1 | sed "s/^/# /"
check "rdma link delete sroce0" rdma link delete sroce0
check "no object left with the device gone (CQ pool included)" bash -c \
	"! grep -v ' 0$' /sys/kernel/debug/sroce/objects"
check "rmmod sroce" rmmod sroce
unload_check
tap_done

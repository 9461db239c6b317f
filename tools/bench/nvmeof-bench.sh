#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 1800
#
# The NVMe-oF benchmark inside two VMs (make bench-nvmeof): VM 0 is the
# target (null_blk, memory-backed), VM 1 the host; the same fio rows over
# nvme-rdma on sroce, on rdma_rxe (the two stacks take turns: both use UDP
# 4791), and over NVMe/TCP, in one boot.  VM 1 writes "STACK ROW VALUE
# UNIT" lines to $SHARED/bench.txt for tools/bench/report.  Figures, no
# thresholds.
. tests/vm/lib.sh
. tests/vm/nvmeof-lib.sh

out=$SHARED/bench.txt
srv=$(vm_ip 0)
record() { [ "$VM_ID" = 1 ] && echo "$1 $2 $3 $4" >> "$out"; }

# fio_row STACK NAME RW BS DEPTH: 20 s of one fio job on the namespace.
# Terse v3 fields: 7/8 read KiB/s and IOPS, 48/49 write KiB/s and IOPS.
fio_row() {
	local stack=$1 name=$2 rw=$3 bs=$4 qd=$5 f v
	timeout 120 fio --name="$name" --filename="/dev/$(nvme_bdev)" \
		--direct=1 --ioengine=libaio --rw="$rw" --bs="$bs" \
		--iodepth="$qd" --size=256M --time_based --runtime=20 \
		--output-format=terse --terse-version=3 > /tmp/fio.out 2>&1
	case $rw in
	*read)	f=7 ;;
	*)	f=48 ;;
	esac
	case $name in
	*iops*)	v=$(awk -F';' -v f=$((f + 1)) '{ print $f }' /tmp/fio.out)
		record "$stack" "$name" "${v:-failed}" IOPS ;;
	*)	v=$(awk -F';' -v f=$f '{ printf "%.2f", $f / 1024 }' /tmp/fio.out)
		record "$stack" "$name" "${v:-failed}" MB/s ;;
	esac
	diag "$stack $name: $v"
}

# run_stack STACK: target up, host connected, the rows, all down.
run_stack() {
	local stack=$1
	if [ "$VM_ID" = 0 ]; then
		check "$stack: target up ($NVME_TR)" nvmet_up "$srv" ipv4
		check "$stack: target listens" wait_for 30 listening 4420
		vm_put "target-$stack" 1
		vm_get "host-$stack" 900 > /dev/null
		check "$stack: target down" nvmet_down
	else
		vm_get "target-$stack" 300 > /dev/null
		check "$stack: host connected ($NVME_TR)" nvme_host_connect "$srv"
		fio_row "$stack" randread_4k_iops randread 4k 16
		fio_row "$stack" randwrite_4k_iops randwrite 4k 16
		fio_row "$stack" read_128k_bw read 128k 8
		fio_row "$stack" write_128k_bw write 128k 8
		check "$stack: host disconnected" nvme_host_disconnect
		check "$stack: nvme-$NVME_TR unloaded" modprobe -r "nvme-$NVME_TR"
		vm_put "host-$stack" 1
	fi
	vm_barrier "$stack-done" 900
}

[ "$VM_ID" = 1 ] && : > "$out"
check "sroce: rdma link add" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" sroce0
vm_barrier sroce-up
NVME_TR=rdma run_stack sroce
check "sroce: rdma link delete" rdma link delete sroce0
check "sroce: rmmod" rmmod sroce

check "rxe: modprobe rdma_rxe" modprobe rdma_rxe
check "rxe: rdma link add" rdma link add rxe0 type rxe netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" rxe0
vm_barrier rxe-up
NVME_TR=rdma run_stack rxe
check "rxe: rdma link delete" rdma link delete rxe0
check "rxe: rmmod" rmmod rdma_rxe

NVME_TR=tcp run_stack tcp
tap_done

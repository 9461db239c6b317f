#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 4200
#
# The NVMe-oF benchmark inside two VMs (make bench-nvmeof): VM 0 is the
# target (null_blk, memory-backed), VM 1 the host; the same fio rows over
# nvme-rdma on sroce, on rdma_rxe (the two stacks take turns: both use UDP
# 4791), and over NVMe/TCP, in one boot.  VM 1 writes "STACK ROW VALUE
# UNIT" lines to $SHARED/bench.txt for tools/bench/report.  Figures, no
# thresholds.  SROCE_ARG_REPS rounds (make bench-nvmeof REPS=, default 3),
# each of the three stacks in turn, so that a slow spell of the shared
# host falls on all three rather than on one stack's rows; the report
# prints each row's median, minimum and maximum.  SROCE_ARG_MTU sets the
# link MTU (make bench-nvmeof MTU=9000: IB MTU 4096, a 4 KiB read in one
# packet).
. tests/lib/vm.sh
. tests/lib/nvmeof.sh

out=$SHARED/bench.txt
record() { [ "$VM_ID" = 1 ] && echo "$1 $2 $3 $4" >> "$out"; }

# fio_row STACK NAME RW BS DEPTH: 20 s of one fio job on the namespace.
# Terse v3 fields: 7/8 read KiB/s and IOPS, 24 the median read completion
# latency ("50.000000%=us"), 48/49 write KiB/s and IOPS.
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
	*lat*)	v=$(awk -F';' '{ split($24, p, "="); print p[2] }' /tmp/fio.out)
		record "$stack" "$name" "${v:-failed}" usec ;;
	*iops*)	v=$(awk -F';' -v f=$((f + 1)) '{ print $f }' /tmp/fio.out)
		record "$stack" "$name" "${v:-failed}" IOPS ;;
	*)	v=$(awk -F';' -v f=$f '{ printf "%.2f", $f / 1024 }' /tmp/fio.out)
		record "$stack" "$name" "${v:-failed}" MB/s ;;
	esac
	diag "$stack $name: $v"
}

# The rows of one stack, on the host (ROUND is STACK-rN).
rows() {
	local s=${1%-r*}
	fio_row "$s" randread_4k_iops randread 4k 16
	fio_row "$s" randread_4k_qd1_lat randread 4k 1
	fio_row "$s" randwrite_4k_iops randwrite 4k 16
	fio_row "$s" read_128k_bw read 128k 8
	fio_row "$s" write_128k_bw write 128k 8
}

[ "$VM_ID" = 1 ] && : > "$out"
check "link MTU ${SROCE_ARG_MTU:-1500}" ip link set eth0 mtu "${SROCE_ARG_MTU:-1500}"
vm_barrier mtu-set
for ((r = 1; r <= ${SROCE_ARG_REPS:-3}; r++)); do
	for stack in sroce rxe; do
		stack_up "$stack"
		vm_barrier "$stack-up-r$r"
		NVME_TR=rdma nvme_pair "$stack-r$r" rows
		stack_down "$stack"
	done
	NVME_TR=tcp nvme_pair "tcp-r$r" rows
done
tap_done

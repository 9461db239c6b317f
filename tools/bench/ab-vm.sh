#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 3600
#
# An A/B of two builds of sroce.ko in one boot (make bench-ab OLD=REV):
# module A (SROCE_ARG_AB_A, the older build) and module B (SROCE_ARG_AB_B,
# the working tree's) are loaded in turn on both VMs, SROCE_ARG_REPS
# rounds, each round A then B, and each runs the same perftest rows.
# Between two builds the spread from one boot to the next is larger than
# most changes (Documentation/performance.rst): only rounds that alternate
# in one boot compare them.  VM 1 writes "VARIANT ROW VALUE UNIT" lines to
# $SHARED/bench.txt, the report's format, with the device's counters of
# the acknowledgements each variant sent and received beside the rows.
. tests/lib/vm.sh

out=$SHARED/bench.txt
record() { [ "$VM_ID" = 1 ] && echo "$1 $2 $3 $4" >> "$out"; }
reps=${SROCE_ARG_REPS:-3}

# row VARIANT PORT NAME COL UNIT PROG ARGS...
row() {
	local var=$1 port=$2 name=$3 col=$4 unit=$5 v
	shift 5
	if perf_pair "$port" "$col" "$@" -d sroce0 -x "$g" -F; then
		[ "$VM_ID" = 1 ] && v=$(perf_row /tmp/cli.out | awk -v c="$col" '{ print $c }')
	else
		v=failed
	fi
	record "$var" "$name" "${v:-failed}" "$unit"
	diag "$var $name: ${v:-see VM 1} $unit"
}

counter() { rdma statistic show link sroce0/1 | tr ' ' '\n' | grep -A1 -x "$1" | tail -1; }

# variant NAME DIR ROUND: load that build, run the rows, unload it.
variant() {
	local name=$1 dir=$2 r=$3 p=$((19500 + 100 * $3)) c0 c1
	[ "$name" = b ] && p=$((p + 50))
	check "$name: insmod $dir/sroce.ko" insmod "$dir/sroce.ko"
	check "$name: rdma link add" rdma link add sroce0 type sroce netdev eth0
	wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" sroce0
	g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" sroce0)
	vm_barrier "up-$r-$name"
	row "$name" $((p + 1)) write_bw_64KiB 4 MB/s ib_write_bw -s 65536 -n 2000
	row "$name" $((p + 2)) send_bw_64KiB 4 MB/s ib_send_bw -s 65536 -n 2000
	row "$name" $((p + 3)) read_bw_64KiB 4 MB/s ib_read_bw -s 65536 -n 2000
	row "$name" $((p + 4)) send_rate_64B 5 Mpps ib_send_bw -s 64 -n 20000
	row "$name" $((p + 5)) send_bw_64KiB_ev 4 MB/s ib_send_bw -s 65536 -n 2000 -e
	row "$name" $((p + 6)) read_lat_64B 5 usec ib_read_lat -s 64 -n 2000
	vm_barrier "rows-$r-$name"
	# Packets sent and acknowledgements sent, both VMs together.
	vm_put "ack-$r-$name-$VM_ID" "$(counter tx_packets) $(counter ack_sent)"
	if [ "$VM_ID" = 1 ]; then
		c0=$(vm_get "ack-$r-$name-0")
		c1=$(vm_get "ack-$r-$name-1")
		record "$name" acks_per_100_pkts "$(echo "$c0 $c1" | awk \
			'{ printf "%.1f", ($2 + $4) * 100 / ($1 + $3) }')" "%"
	fi
	check "$name: rdma link delete" rdma link delete sroce0
	check "$name: rmmod" rmmod sroce
	vm_barrier "down-$r-$name"
}

[ "$VM_ID" = 1 ] && : > "$out"
# Load sroce's dependencies once from the staged modules.
check "the modules sroce needs" bash -c "modprobe sroce && rmmod sroce"
for r in $(seq 0 $((reps - 1))); do
	variant a "$SROCE_ARG_AB_A" "$r"
	variant b "$SROCE_ARG_AB_B" "$r"
done
tap_done

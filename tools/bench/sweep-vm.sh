#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 7200
#
# The size sweep inside two VMs (make bench-sweep): ib_send_bw, ib_write_bw
# and ib_read_bw at each size over sroce, then rdma_rxe (the stacks take
# turns on UDP 4791), then iperf3 at the same sizes (-l), in one boot.
# VM 1 writes "STACK ROW VALUE UNIT" lines to $SHARED/bench.txt, a row
# per operation and size (write_bw_65536); tools/bench/report prints them,
# tools/bench/plot draws build/bench/sweep.svg.  SROCE_ARG_MTU sets the
# link MTU (9000: IB MTU 4096), SROCE_ARG_QPS perftest's -q, SROCE_ARG_SIZES
# the sizes, SROCE_ARG_SECS each row's duration, SROCE_ARG_RPS=1 turns on
# receive packet steering over all CPUs (each QP has its own UDP source
# port, so RPS spreads QPs over CPUs as RSS does on a multi-queue NIC).
# SROCE_ARG_EV=1 runs perftest with -e (completion events: the process
# sleeps until its CQ's event instead of polling in a loop) and leaves out
# the WRITE rows (perftest has no events for WRITE).
# TCP runs as many streams as QPs.  Figures, no thresholds.
. tests/lib/vm.sh

out=$SHARED/bench.txt
record() { [ "$VM_ID" = 1 ] && echo "$1 $2 $3 $4" >> "$out"; }

sizes=${SROCE_ARG_SIZES:-64,1024,4096,16384,65536,262144,1048576}
secs=${SROCE_ARG_SECS:-4}
qps=${SROCE_ARG_QPS:-1}
mtu=${SROCE_ARG_MTU:-1500}
rps=${SROCE_ARG_RPS:-0}
ops="send write read" ev=
if [ "${SROCE_ARG_EV:-0}" = 1 ]; then
	ops="send read" ev=-e
fi

[ "$VM_ID" = 1 ] && : > "$out"
check "link MTU $mtu" ip link set eth0 mtu "$mtu"
if [ "$rps" = 1 ]; then
	cpus=$(printf '%x' $(((1 << $(nproc)) - 1)))
	for q in /sys/class/net/eth0/queues/rx-*/rps_cpus; do
		check "RPS over CPUs $cpus: $q" sh -c "echo $cpus > $q"
	done
fi
vm_barrier mtu-set

sweep() {	# sweep STACK PORTBASE
	local s=$1 p=$2 size op v
	for size in ${sizes//,/ }; do
		for op in $ops; do
			p=$((p + 1))
			# shellcheck disable=SC2086 # $ev: no argument, or one
			if perf_pair "$p" 4 "ib_${op}_bw" -s "$size" -D "$secs" \
				-q "$qps" -d "$DEV" -x "$g" -F $ev; then
				[ "$VM_ID" = 1 ] && v=$(perf_row /tmp/cli.out | awk '{ print $4 }')
			else
				v=failed
			fi
			record "$s" "${op}_bw_$size" "${v:-failed}" MB/s
			diag "$s ${op} $size: ${v:-see VM 1} MB/s"
		done
	done
}

stack_up sroce
vm_barrier sroce-up
sweep sroce 21000
vm_barrier sroce-done
stack_down sroce

stack_up rxe
vm_barrier rxe-up
sweep rxe 22000
vm_barrier rxe-done
stack_down rxe

# TCP at the same write sizes, one stream per size.
p=23000
for size in ${sizes//,/ }; do
	p=$((p + 1))
	if [ "$VM_ID" = 0 ]; then
		iperf3 -s -1 -p "$p" > /tmp/iperf.out 2>&1 &
		wait_for 20 listening "$p"
		vm_put "iperf-$p" 1
		wait
	else
		vm_get "iperf-$p" 300 > /dev/null
		iperf3 -c "$(vm_ip 0)" -p "$p" -l "$size" -t "$secs" -f m \
			-P "$qps" > /tmp/iperf.out 2>&1
		# With -P the last receiver line is the sum of the streams.
		v=$(awk '/sec .*Mbits\/sec .*receiver/ {
			for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) }' \
			/tmp/iperf.out | tail -1 | mbit_to_mb)
		for op in send write read; do
			record tcp "${op}_bw_$size" "${v:-failed}" MB/s
		done
	fi
	vm_barrier "tcp-$size"
done
tap_done

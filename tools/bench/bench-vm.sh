#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 4200
#
# The benchmark inside two VMs (make bench): the same perftest rows over
# sroce, with SROCE_ARG_CMD=1 (make bench CMD=1) over sroce with its
# provider on the uverbs commands too (sroce-cmd: SROCE_MAPPED=0, what the
# mapped queues give), then over rdma_rxe (the stacks take turns: both use
# UDP 4791), then TCP with iperf3, all in one boot.  VM 1 (the client)
# writes "STACK ROW VALUE UNIT" lines to $SHARED/bench.txt;
# tools/bench/report prints the table.  A benchmark, not a test: figures,
# no thresholds.
#
# CPU time per GB: the CPU time both VMs spent not idle (/proc/stat, all
# CPUs) during a 64 KiB WRITE row, and during the TCP stream, per GB
# moved.  perftest polls its CQ without sleeping, so a CPU of the client
# is busy for the whole run whatever the stack: the figure includes it.
#
# Last, the link's own packet rate (pktgen, the "link" column): the
# ceiling any stack meets on this emulated link.
. tests/lib/vm.sh

out=$SHARED/bench.txt
record() { [ "$VM_ID" = 1 ] && echo "$1 $2 $3 $4" >> "$out"; }

# row STACK DEV GID PORT NAME COL UNIT PROG ARGS...
row() {
	local stack=$1 dev=$2 gid=$3 port=$4 name=$5 col=$6 unit=$7 v
	shift 7
	if perf_pair "$port" "$col" "$@" -d "$dev" -x "$gid" -F; then
		[ "$VM_ID" = 1 ] && v=$(perf_row /tmp/cli.out | awk -v c="$col" '{ print $c }')
	else
		v=failed
	fi
	record "$stack" "$name" "${v:-failed}" "$unit"
	diag "$stack $name: ${v:-see VM 1} $unit"
}

# Every row runs $reps times (make bench REPS=, default 3); the report
# prints the median, minimum and maximum.
reps=${SROCE_ARG_REPS:-3}

# CPU seconds this VM has spent not idle since boot (all CPUs).
cpu_busy() {
	awk '/^cpu / { printf "%.2f\n", ($2 + $3 + $4 + $7 + $8 + $9) / 100 }' /proc/stat
}

# cpu_row STACK NAME KEY BYTES SECONDS: record both VMs' busy CPU seconds
# per GB; VM 0 hands its share to VM 1 under KEY.
cpu_row() {
	if [ "$VM_ID" = 0 ]; then
		vm_put "$3" "$5"
		return
	fi
	local other
	other=$(vm_get "$3" 120) || other=
	[ -n "$other" ] && [ "${4:-0}" != 0 ] ||
		{ record "$1" "$2" failed s/GB; return; }
	record "$1" "$2" "$(awk -v a="$5" -v b="$other" -v n="$4" \
		'BEGIN { printf "%.1f", (a + b) / (n / 1e9) }')" s/GB
}

rows() {	# rows STACK DEV PORTBASE
	local s=$1 d=$2 p=$3 g r
	g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" "$d")
	for r in $(seq 0 $((reps - 1))); do
		p=$(($3 + 20 * r))
		row "$s" "$d" "$g" $((p + 1)) send_bw_64KiB 4 MB/s ib_send_bw -s 65536 -n 2000
		t0=$(cpu_busy)
		row "$s" "$d" "$g" $((p + 2)) write_bw_64KiB 4 MB/s ib_write_bw -s 65536 -n 2000
		cpu_row "$s" cpu_write_64KiB "cpu-$s-$r" $((65536 * 2000)) \
			"$(awk -v a="$t0" -v b="$(cpu_busy)" 'BEGIN { print b - a }')"
		row "$s" "$d" "$g" $((p + 3)) read_bw_64KiB 4 MB/s ib_read_bw -s 65536 -n 2000
		row "$s" "$d" "$g" $((p + 4)) send_rate_64B 5 Mpps ib_send_bw -s 64 -n 20000
		row "$s" "$d" "$g" $((p + 5)) send_lat_64B 5 usec ib_send_lat -s 64 -n 2000
		row "$s" "$d" "$g" $((p + 6)) read_lat_64B 5 usec ib_read_lat -s 64 -n 2000
		# perftest's other post path: ibv_post_send, not the ibv_wr_* API.
		row "$s" "$d" "$g" $((p + 7)) send_bw_64KiB_old 4 MB/s ib_send_bw -s 65536 -n 2000 --use_old_post_send
		row "$s" "$d" "$g" $((p + 8)) write_bw_64KiB_old 4 MB/s ib_write_bw -s 65536 -n 2000 --use_old_post_send
		# Completion events instead of a poll loop (perftest -e;
		# ib_write_bw refuses it: "Events feature not available on
		# WRITE verb"): the process sleeps until the CQ's event, and
		# its vCPU leaves the host's CPU to the link and the other VM.
		t0=$(cpu_busy)
		row "$s" "$d" "$g" $((p + 9)) send_bw_64KiB_ev 4 MB/s ib_send_bw -s 65536 -n 2000 -e
		cpu_row "$s" cpu_send_64KiB_ev "cpu-ev-$s-$r" $((65536 * 2000)) \
			"$(awk -v a="$t0" -v b="$(cpu_busy)" 'BEGIN { print b - a }')"
		row "$s" "$d" "$g" $((p + 10)) read_bw_64KiB_ev 4 MB/s ib_read_bw -s 65536 -n 2000 -e
		row "$s" "$d" "$g" $((p + 11)) send_rate_64B_ev 5 Mpps ib_send_bw -s 64 -n 20000 -e
		row "$s" "$d" "$g" $((p + 12)) read_lat_64B_ev 5 usec ib_read_lat -s 64 -n 2000 -e
	done
}

[ "$VM_ID" = 1 ] && : > "$out"
stack_up sroce
vm_barrier sroce-up
rows sroce sroce0 19100
vm_barrier sroce-done
if [ "${SROCE_ARG_CMD:-0}" = 1 ]; then
	export SROCE_MAPPED=0
	rows sroce-cmd sroce0 19400
	unset SROCE_MAPPED
	vm_barrier sroce-cmd-done
fi
rdma statistic show link sroce0/1 | sed 's/^/# /'
stack_down sroce

stack_up rxe
vm_barrier rxe-up
rows rxe rxe0 19200
vm_barrier rxe-done
stack_down rxe

# TCP, one stream.
t0=$(cpu_busy)
if [ "$VM_ID" = 0 ]; then
	iperf3 -s -1 -p 19300 > /tmp/iperf.out 2>&1 &
	wait_for 20 listening 19300
	vm_put iperf-ready 1
	wait
else
	vm_get iperf-ready 300 > /dev/null
	# One connection, $reps intervals of 10 s: a sample each.
	iperf3 -c "$(vm_ip 0)" -p 19300 -t $((10 * reps)) -i 10 -f m > /tmp/iperf.out 2>&1
	awk '/sec .*Mbits\/sec/ && !/sender|receiver/ {
		for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) }' \
		/tmp/iperf.out | mbit_to_mb | while read -r v; do record tcp stream_bw "$v" MB/s; done
fi
vm_barrier tcp-stream-done
# The bytes the receiver counted (iperf3's "receiver" line, in KBytes,
# MBytes or GBytes as the amount asks).
bytes=$(awk '/receiver/ { for (i = 1; i <= NF; i++) {
	if ($i == "KBytes") printf "%.0f\n", $(i - 1) * 1024
	if ($i == "MBytes") printf "%.0f\n", $(i - 1) * 1048576
	if ($i == "GBytes") printf "%.0f\n", $(i - 1) * 1073741824 } }' /tmp/iperf.out)
cpu_row tcp cpu_stream "cpu-tcp" "${bytes:-0}" \
	"$(awk -v a="$t0" -v b="$(cpu_busy)" 'BEGIN { print b - a }')"
vm_barrier tcp-done

# The link's packet-rate ceiling: the kernel's packet generator (pktgen,
# below the IP stack, one sending thread, a new skb for every packet as a
# stack builds) floods VM 0 with UDP frames for 10 s, of RoCE's size at
# MTU 1500 (1082 bytes: Ethernet, IPv4, UDP, BTH, a 1024-byte payload and
# the ICRC) and of TCP's (1514); VM 0 counts what its eth0 received, in
# thousands of packets per second: the ceiling of a sender that builds a
# new skb per packet (two sending threads were no faster, performance.rst).
link_row() {	# link_row N SIZE
	local r0
	vm_barrier "link-$1"
	r0=$(cat /sys/class/net/eth0/statistics/rx_packets)
	if [ "$VM_ID" = 1 ]; then
		local pg=/proc/net/pktgen c
		echo rem_device_all > $pg/kpktgend_0
		echo "add_device eth0" > $pg/kpktgend_0
		for c in "count 0" "clone_skb 0" "pkt_size $2" "delay 0" \
			 "dst $(vm_ip 0)" "dst_mac $mac" "udp_dst_min 9" "udp_dst_max 9"; do
			echo "$c" > $pg/eth0
		done
		echo start > $pg/pgctrl &
		sleep 10
		echo stop > $pg/pgctrl
		wait
	else
		sleep 10
		vm_put "link-$1" "$(( ($(cat /sys/class/net/eth0/statistics/rx_packets) - r0) / 10 ))"
	fi
	[ "$VM_ID" = 1 ] || return 0
	local n
	n=$(vm_get "link-$1" 60) || n=
	record link "link_kpps_$2B" \
		"$(awk -v n="$n" 'BEGIN { if (n == "") print "failed"; else printf "%.1f", n / 1000 }')" kpps
}
if modprobe pktgen; then
	ping -c 1 -W 5 "$(vm_ip $((1 - VM_ID)))" > /dev/null
	mac=$(ip neigh show "$(vm_ip 0)" | awk '{ print $5 }')
	for r in $(seq 0 $((reps - 1))); do
		link_row "$r-a" 1082
		link_row "$r-b" 1514
	done
	rmmod pktgen
else
	diag "no pktgen: no link ceiling rows"
fi
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 1500
#
# RC between two hosts: rdma-core pingpongs, perftest (both post paths) at
# MTU 1024 (sizes from 1 B to 1 MiB) and 4096 (messages of many packets), four QPs streaming at
# once without needless retransmissions, the data-integrity tool,
# then the same integrity run with netem loss (1%, 10%), reordering and
# duplication on the link: data correct, no hang, retransmissions counted.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
stat() { rdma statistic show link sroce0/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")")
before=$(objects)
# The engine state is in the driver nest, where the rdma tool finds it.
check "rdma -dd res show qp: engine state of QP1" bash -c \
	"rdma -dd res show qp link sroce0/1 lqpn 1 | grep -q 'drv_req_psn 0 .*drv_unacked 0 drv_window 0 drv_srtt_ms 0 drv_retry_ms 0'"
vm_barrier up

check "ibv_rc_pingpong" perf_pair 18515 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 200
check "ibv_srq_pingpong" perf_pair 18516 0 ibv_srq_pingpong -d sroce0 -g "$g" -n 50

p=18520
pt=(-d sroce0 -x "$g" -F)
# run_set MTU [multi]: the perftest set at one path MTU; with "multi", only
# the rows whose messages span packets (one-packet messages do the same at
# every MTU, and run at 1024).
run_set() {
	local args
	if [ "$2" != multi ]; then
		# 1-byte messages: the message rate (column 5) is the figure.
		p=$((p + 1))
		check "MTU $1: ib_send_bw -s 1 -n 500" perf_pair "$p" 5 ib_send_bw "${pt[@]}" -m "$1" -s 1 -n 500
		p=$((p + 1))
		check "MTU $1: ib_atomic_bw -n 500" perf_pair "$p" 5 ib_atomic_bw "${pt[@]}" -m "$1" -n 500
		for args in "ib_write_bw -s 65536 -n 200" "ib_read_bw -s 65536 -n 200"; do
			p=$((p + 1))
			check "MTU $1: $args" perf_pair "$p" 4 ${args%% *} "${pt[@]}" -m "$1" ${args#* }
		done
		for args in "ib_send_lat -s 64 -n 200" "ib_write_lat -s 64 -n 200" \
			    "ib_read_lat -s 64 -n 200"; do
			p=$((p + 1))
			check "MTU $1: $args" perf_pair "$p" 3 ${args%% *} "${pt[@]}" -m "$1" ${args#* }
		done
	fi
	for args in "ib_send_bw -s 65536 -n 200" \
		    "ib_write_bw -s 1048576 -n 10" "ib_read_bw -s 1048576 -n 10" \
		    "ib_send_bw -s 65536 -n 200 --use_old_post_send"; do
		p=$((p + 1))
		check "MTU $1: $args" perf_pair "$p" 4 ${args%% *} "${pt[@]}" -m "$1" ${args#* }
	done
}
run_set 1024

# Four QPs streaming at once share the device's window (window.c): a QP
# then never waits behind the others for longer than its retry timeout,
# and nothing that was not lost is sent again.  With a window of 512 per
# QP, 74% of what the server received were such duplicates.  Then with a
# device window of 64, where each QP has its minimum share, 32 packets
# (what it may send without asking for an ACK).
four_qps() {	# four_qps ARGS...: perftest between the hosts, then the counts
	local d0 n0 t0 d n
	p=$((p + 1))
	d0=$(stat rx_duplicate) n0=$(stat rx_packets) t0=$(stat retry_timeouts)
	check "four QPs: $*" perf_pair "$p" 4 "$1" "${pt[@]}" "${@:2}"
	d=$(($(stat rx_duplicate) - d0)) n=$(($(stat rx_packets) - n0))
	diag "four QPs: $n packets received, $d duplicates, $(($(stat retry_timeouts) - t0)) retry timeouts sent"
	[ "$VM_ID" = 0 ] && check "four QPs: under 5% of the packets received are duplicates" \
		test "$((d * 20))" -lt "$n"
	vm_barrier "four-qps-$p"
}
c0=$(stat ack_coalesced)
four_qps ib_write_bw -s 65536 -n 300 -q 4
# Streaming, the server's receive batches hold several ACK requests of a
# QP; one ACK answers them all (resp.c).
[ "$VM_ID" = 0 ] && check "four QPs: ACKs coalesced (ack_coalesced +$(($(stat ack_coalesced) - c0)))" \
	test "$(stat ack_coalesced)" -gt "$c0"
four_qps ib_send_bw -s 65536 -n 300 -q 4
echo 64 > /sys/module/sroce/parameters/max_unacked
four_qps ib_write_bw -s 65536 -n 100 -q 4
echo 512 > /sys/module/sroce/parameters/max_unacked

check "data integrity, all opcodes, MTU 1024" integrity_pair 18600 -n 2
# Both hosts sent packets in batches (one UDP GSO skb a batch, net.c), and
# the integrity runs above and below checked every byte they carried.
check "packets left in batches (tx_batched $(stat tx_batched))" test "$(stat tx_batched)" -gt 0
# Packets that found their QP busy and waited on its backlog (rcv.c): a
# figure, not a check (it depends on timing).
diag "rx_deferred $(stat rx_deferred)"

# RoCEv2 over IPv6: the GIDs of fd77::1 and fd77::2.
g4=$g
wait_for 10 sroce_gid "fd77:0000:0000:0000:0000:0000:0000:000$((VM_ID + 1))"
g=$(sroce_gid "fd77:0000:0000:0000:0000:0000:0000:000$((VM_ID + 1))")
diag "IPv6 GID index $g"
check "IPv6 GID present" test -n "$g"
check "IPv6: ibv_rc_pingpong" perf_pair 18590 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 100
b0=$(stat tx_batched)
check "IPv6: data integrity, all opcodes" integrity_pair 18599 -n 1
check "IPv6: packets left in batches" test "$(stat tx_batched)" -gt "$b0"
g=$g4

# MTU 4096 needs jumbo frames on the link.
check "eth0 MTU 9000" ip link set eth0 mtu 9000
check "active MTU follows: 4096" wait_for 5 \
	bash -c "ibv_devinfo -d sroce0 | grep -q 'active_mtu:.*4096'"
vm_barrier jumbo
run_set 4096 multi
check "data integrity, all opcodes, MTU 4096" integrity_pair 18601 -n 1 -m 4096
check "eth0 MTU back to 1500" ip link set eth0 mtu 1500
vm_barrier mtu1500

# Loss, reordering and duplication on the link (netem on both sides).
netem() { tc qdisc replace dev eth0 root netem "$@"; }
r0=$(stat retransmits)
check "netem loss 1%" netem loss 1%
vm_barrier loss1
check "data integrity with 1% loss" integrity_pair 18602 -n 1
check "netem loss 10%" netem loss 10%
vm_barrier loss10
check "data integrity with 10% loss" integrity_pair 18603 -n 1
check "netem reorder and duplicate" netem delay 1ms reorder 20% 50% duplicate 2%
vm_barrier reorder
check "data integrity with reordering and duplication" integrity_pair 18604 -n 1
check "netem off" tc qdisc del dev eth0 root
r1=$(stat retransmits)
diag "retransmits under loss: $((r1 - r0))"
[ "$VM_ID" = 1 ] && check "retransmissions were counted" test "$((r1 - r0))" -gt 0
vm_barrier netem-done

check "every object it made is gone" wait_for 30 output_is "$before" objects
rdma statistic show link sroce0/1 | tr -s ' ' '\n' | paste -d= - - | tr '\n' ' ' | sed 's/^/# /'
echo
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

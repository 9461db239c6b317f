#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 900
#
# UD, GSI and rdma_cm between two hosts: ibv_ud_pingpong (IPv4, IPv6),
# rping with data verification, perftest over rdma_cm (-R), ucmatose,
# udaddy, mckey, rsockets (rstream, riostream, rcopy), rdma_server and
# rdma_client, and cmtime.  Every connection rdma_cm makes runs its MADs over
# sroce's QP1; every object is gone at the end.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
srv_ip=$(vm_ip 0)
srv_ip6=$(vm_ip6 0)
mgroup=239.77.0.1

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")")
check "IPv6 GID present" wait_for 10 sroce_gid "$(vm_ip6 "$VM_ID" | sed 's/^fd77::/fd77:0000:0000:0000:0000:0000:0000:000/')"
g6=$(sroce_gid "$(vm_ip6 "$VM_ID" | sed 's/^fd77::/fd77:0000:0000:0000:0000:0000:0000:000/')")
# IP multicast leaves through the test link.
ip route replace 224.0.0.0/4 dev eth0
before=$(objects)
vm_barrier up

check "ibv_ud_pingpong" perf_pair 18600 0 ibv_ud_pingpong -d sroce0 -g "$g" -n 200 -s 512
check "ibv_ud_pingpong over IPv6" perf_pair 18601 0 ibv_ud_pingpong -d sroce0 -g "$g6" -n 100 -s 512

n=$(scaled 200)
rping_srv() { timeout 200 rping -s -a "$addr" -p "$1" -C "$n" -S 4096 -V; }
rping_cli() { timeout 180 rping -c -a "$addr" -p "$1" -C "$n" -S 4096 -V; }
addr=$srv_ip
check "rping -V, $n verified round trips" vm_pair 18610 rping_srv rping_cli
addr=$srv_ip6
check "rping -V over IPv6" vm_pair 18611 rping_srv rping_cli

check "ib_send_bw -R (rdma_cm)" perf_pair 18620 4 ib_send_bw -d sroce0 -R -F -s 65536 -n 200
check "ib_write_bw -R (rdma_cm)" perf_pair 18621 4 ib_write_bw -d sroce0 -R -F -s 65536 -n 200
check "ib_read_lat -R (rdma_cm)" perf_pair 18622 3 ib_read_lat -d sroce0 -R -F -s 64 -n 100

ucma_srv() { timeout 200 ucmatose -p "$1" -c 4 -C 50; }
ucma_cli() { timeout 180 ucmatose -s "$srv_ip" -p "$1" -c 4 -C 50; }
check "ucmatose: 4 RC connections, 50 messages each" vm_pair 18630 ucma_srv ucma_cli

# udaddy has a fixed port, 7174.
udaddy_srv() { timeout 200 udaddy -c 4 -C 50; }
udaddy_cli() { timeout 180 udaddy -s "$srv_ip" -c 4 -C 50; }
check "udaddy: 4 UD endpoints, 50 messages each" vm_pair 7174 udaddy_srv udaddy_cli

# mckey: VM 0 receives, VM 1 sends, once VM 0's QPs are in the group.
mc_joined() { awk '$1 == "mcast_attach" && $2 >= 2 { f = 1 } END { exit !f }' /sys/kernel/debug/sroce/objects; }
# Two receiving QPs in the group: each gets every message.  (rdma_cm of
# Linux 6.1 joins RoCEv2 groups over IPv4 only: IPv6 joins are -ENOTSUPP.)
mc_recv() { timeout 120 mckey -m "$mgroup" -b "$srv_ip" -c 2 -C 20; }
mc_send() { timeout 100 mckey -m "$mgroup" -b "$(vm_ip 1)" -s -C 20; }
PAIR_READY=mc_joined check "mckey: 20 multicast messages to each of 2 QPs" vm_pair 18650 mc_recv mc_send
check "the group is left" wait_for 10 grep -q "^mcast_group 0" /sys/kernel/debug/sroce/objects
cnt() { rdma statistic show link sroce0/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }
pc=/sys/class/infiniband/sroce0/ports/1/counters
if [ "$VM_ID" = 0 ]; then
	check "the multicast packets are counted (rx_multicast)" test "$(cnt rx_multicast)" -ge 20
	check "and by the PMA (multicast_rcv_packets)" test "$(cat $pc/multicast_rcv_packets)" -ge 20
else
	check "the multicast packets sent are counted (tx_multicast)" test "$(cnt tx_multicast)" -ge 20
	check "and by the PMA (multicast_xmit_packets)" test "$(cat $pc/multicast_xmit_packets)" -ge 20
fi

# librdmacm's other tools.  rsockets: rstream and riostream (each byte
# checked, -T v; riostream's data lands in a buffer the peer mapped with
# riomap(), by RDMA WRITE), blocking and nonblocking; the rdma_create_ep()
# API (rdma_server, rdma_client); connections made and torn down in bulk
# (cmtime); a file copied over rsockets (rcopy).  cmtime's and rcopy's
# servers serve for ever: VM 0 stops one once its client is done.
serve_once() {	# serve_once PORT CMD...: CMD, until VM 1's client on PORT ends
	local port=$1 pid
	shift
	"$@" &
	pid=$!
	while [ -z "$(vm_peek "cli.$port")" ] && kill -0 "$pid" 2> /dev/null; do
		vm_nap
	done
	if kill -0 "$pid" 2> /dev/null; then
		kill "$pid"
		wait "$pid"
		return 0
	fi
	wait "$pid"	# it ended by itself: its status
}
rs() { timeout 200 "$RS" -p "$1" $RS_ARGS; }
rs_cli() { timeout 180 "$RS" -s "$srv_ip" -p "$1" $RS_ARGS; }
RS=rstream RS_ARGS="-S 65536 -C 20 -I 5 -T v"
check "rstream: 64 KiB transfers, each byte checked" vm_pair 18660 rs rs_cli
RS=rstream RS_ARGS="-S 1000 -C 100 -I 2 -T n -T v"
check "rstream, nonblocking: 1000-byte transfers, checked" vm_pair 18661 rs rs_cli
RS=riostream RS_ARGS="-S 65536 -C 20 -I 5 -T v"
check "riostream (riomap, RDMA WRITE): 64 KiB transfers, checked" vm_pair 18662 rs rs_cli
ep_srv() { timeout 100 rdma_server -p "$1"; }
ep_cli() { timeout 80 rdma_client -s "$srv_ip" -p "$1"; }
check "rdma_server and rdma_client (rdma_create_ep)" vm_pair 18663 ep_srv ep_cli
ct_srv() { serve_once "$1" timeout 200 cmtime -b "$srv_ip" -p "$1"; }
ct_cli() { timeout 180 cmtime -s "$srv_ip" -p "$1" -c 20; }
check "cmtime: 20 connections made and torn down" vm_pair 18664 ct_srv ct_cli
[ "$VM_ID" = 1 ] && grep -E "^(connect|disconnect) +:" /tmp/cli.out | sed 's/^/# /'
mkdir -p /tmp/rcopy
[ "$VM_ID" = 1 ] && head -c 4194304 /dev/urandom > /tmp/rcopy/src.bin
rc_srv() { (cd /tmp/rcopy && serve_once "$1" timeout 200 rcopy -p "$1"); }
rc_cli() { timeout 180 rcopy /tmp/rcopy/src.bin "$srv_ip:/tmp/rcopy/copy.bin" -p "$1"; }
check "rcopy: 4 MiB file" vm_pair 18665 rc_srv rc_cli
if [ "$VM_ID" = 1 ]; then
	vm_put rcopy.sum "$(md5sum < /tmp/rcopy/src.bin)"
else
	sum=$(vm_get rcopy.sum 60)
	check "rcopy: the copy is the file" test "$(md5sum < /tmp/rcopy/copy.bin)" = "$sum"
fi

# The in-kernel rdma_cm server (VM 0) and client (VM 1), the way kernel
# ULPs connect (tests/kernel/sroce_cm_test.c).
ctl=/sys/kernel/debug/sroce_cm_test/ctl
cmt() {		# cmt COMMAND: one command to the test module
	echo "$*" > $ctl && return 0
	tail -4 $ctl
	return 1
}
check "load the in-kernel rdma_cm test module" modprobe sroce_cm_test
if [ "$VM_ID" = 0 ]; then
	check "kernel server listens on $srv_ip:18700" cmt listen "$srv_ip" 18700
	vm_barrier kernel-listen
	vm_barrier kernel-100
	check "server: every connection's objects freed" objects_are "$before"
	check "server: the device's QPs all taken" cmt hog
	grep "^hog" $ctl | sed 's/^/# /'
	vm_barrier kernel-hog
	vm_barrier kernel-rejected
	check "server: the QPs given back" cmt unhog
	vm_barrier kernel-unhog
	vm_barrier kernel-again
	check "kernel server listens on [$srv_ip6]:18701" bash -c "echo stop > $ctl && echo 'listen $srv_ip6 18701' > $ctl"
	vm_barrier kernel-listen6
	vm_barrier kernel-done6
	check "server stops" cmt stop
	grep "^stopped" $ctl | sed 's/^/# /'
else
	vm_barrier kernel-listen
	n=$(scaled 100)
	check "kernel client: $n connect/echo/disconnect cycles" cmt connect "$srv_ip" 18700 "$n" 10
	grep "connections to" $ctl | sed 's/^/# /'
	check "client: every connection's objects freed" objects_are "$before"
	vm_barrier kernel-100
	vm_barrier kernel-hog
	check "a server out of QPs rejects: no QP available" cmt reject "$srv_ip" 18700
	grep "^rejected\|^connect to" $ctl | sed 's/^/# /'
	vm_barrier kernel-rejected
	vm_barrier kernel-unhog
	check "and accepts again once it has QPs" cmt connect "$srv_ip" 18700 1 10
	vm_barrier kernel-again
	vm_barrier kernel-listen6
	check "kernel client over IPv6: 10 cycles" cmt connect "$srv_ip6" 18701 10 10
	vm_barrier kernel-done6
fi
check "unload the rdma_cm test module" rmmod sroce_cm_test

vm_barrier done
rdma statistic show link sroce0/1 | sed "s/^/# /"
check "every object is gone" objects_are "$before" 10
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

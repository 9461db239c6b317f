#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 900
#
# RC traffic over loopback: client and server on the same sroce device.
# The packets are built and checked as on the wire (IP, UDP 4791, ICRC);
# sroce hands a packet for a local address straight to its receive path
# (net.c), not through lo.
# Stock rdma-core programs and perftest (both post paths), then our
# data-integrity tool; every object made is gone afterwards.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip 0)")")
before=$(objects)

check "ibv_rc_pingpong" perf_local 18515 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 200
check "ibv_rc_pingpong 64 KiB" perf_local 18516 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 20 -s 65536
check "ibv_srq_pingpong" perf_local 18517 0 ibv_srq_pingpong -d sroce0 -g "$g" -n 50
check "ibv_uc_pingpong" perf_local 18518 0 ibv_uc_pingpong -d sroce0 -g "$g" -n 100
# -t: ibv_create_cq_ex with completion timestamps, ibv_query_rt_values_ex.
check "ibv_rc_pingpong -t (completion timestamps)" \
	perf_local 18560 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 100 -t
check "ibv_rc_pingpong -t: it measured the completions' clock" \
	grep -q "Average receive completion clock cycles" /tmp/cli.out
diag "ibv_rc_pingpong -t: $(grep -h "completion clock" /tmp/cli.out | tr '\n' ' ')"
wait_for 10 sroce_gid "fd77:0000:0000:0000:0000:0000:0000:0001"
g6=$(sroce_gid "fd77:0000:0000:0000:0000:0000:0000:0001")
check "IPv6 GID present" test -n "$g6"
check "ibv_rc_pingpong over IPv6" perf_local 18519 0 ibv_rc_pingpong -d sroce0 -g "$g6" -n 100

pt=(-d sroce0 -x "$g" -F)
# 1-byte messages and atomics: the message rate (column 5) is the figure.
check "ib_send_bw -s 1 -n 500" perf_local 18520 5 ib_send_bw "${pt[@]}" -s 1 -n 500
check "ib_atomic_bw -n 500" perf_local 18540 5 ib_atomic_bw "${pt[@]}" -n 500
p=18521
for args in "ib_send_bw -s 65536 -n 200" \
	    "ib_send_bw -s 1048576 -n 10" "ib_write_bw -s 65536 -n 200" \
	    "ib_write_bw -s 1048576 -n 10" "ib_read_bw -s 65536 -n 200" \
	    "ib_read_bw -s 1048576 -n 10" \
	    "ib_send_bw -s 65536 -n 200 --use_old_post_send" \
	    "ib_write_bw -s 4096 -n 200 --use_old_post_send"; do
	p=$((p + 1))
	check "$args" perf_local "$p" 4 ${args%% *} "${pt[@]}" ${args#* }
done
for args in "ib_send_lat -s 64 -n 200" "ib_write_lat -s 64 -n 200" \
	    "ib_read_lat -s 64 -n 200"; do
	p=$((p + 1))
	check "$args" perf_local "$p" 3 ${args%% *} "${pt[@]}" ${args#* }
done

# The port's Performance Management Agent (pma.c): ib_core's sysfs port
# counters read through it, and a PerfMgt Get from the wire (a UD QP of
# ours to QP1) answered by it, as a RoCE NIC's PMA answers; a Set (which
# would clear them) and a MAD of an unknown class version it leaves to the
# MAD layer, which answers "unsupported" (status 0x000C) and clears none;
# a Get it answers that names another port, or has a modifier, it refuses
# as "invalid value" (status 0x001C).
pc=/sys/class/infiniband/sroce0/ports/1/counters
lstat() { rdma statistic show link sroce0/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }
pma_sysfs() {
	local xd xp tb tp
	xd=$(cat $pc/port_xmit_data) xp=$(cat $pc/port_xmit_packets)
	tb=$(lstat tx_bytes) tp=$(lstat tx_packets)
	diag "port_xmit_data $xd port_xmit_packets $xp, tx_bytes $tb tx_packets $tp rx_bytes $(lstat rx_bytes)"
	# Every packet so far looped back: as many bytes received as sent.
	[ "$xd" -eq $((tb / 4)) ] && [ "$xp" -eq "$tp" ] &&
		[ "$tb" -eq "$(lstat rx_bytes)" ] &&
		[ "$xd" -gt $((200 * 65536 / 4)) ] &&
		[ "$(cat $pc/port_rcv_packets)" -eq "$(lstat rx_packets)" ]
}
pma() { /usr/bin/python3 "$SROCE_SRC/tests/lib/pma_query.py" sroce0 "$g" "$@"; }
pma_says() { local out; out=$(pma "$1" "$2") && diag "$1 $2: $out" && grep -q -- "$3" <<< "$out"; }
check "ports/1/counters: the extended set (64-bit data and packets)" \
	test -r $pc/port_xmit_data -a -r $pc/unicast_xmit_packets -a -r $pc/multicast_rcv_packets
check "ports/1/counters: the data-path counters, data in 4-octet units" pma_sysfs
check "PMA from the wire: Get ClassPortInfo answered, 64-bit counters, all-ports select" \
	pma_says get cpi "capability_mask 0x0300"
check "PMA from the wire: Get PortCounters answered (GetResp, status 0)" \
	pma_says get pc "method 0x81 status 0x0000 attr 0x0012"
check "PMA from the wire: Get PortCountersExtended answered, packets counted" \
	pma_says get pcx "port_xmit_packets [1-9]"
check "PMA from the wire: a Set is refused (unsupported)" \
	pma_says set pc "method 0x81 status 0x000c"
check "PMA from the wire: class version 2 is refused (unsupported)" \
	pma_says bad pc "method 0x81 status 0x000c"
check "PMA from the wire: a Get of another port gets \"invalid value\" (status 0x001C)" \
	pma_says badport pcx "method 0x81 status 0x001c attr 0x001d"
check "PMA from the wire: a Get with an attribute modifier gets \"invalid value\"" \
	pma_says badmod pc "method 0x81 status 0x001c attr 0x0012"
check "PMA: the Set cleared nothing" test "$(cat $pc/port_xmit_data)" -gt $((200 * 65536 / 4))

# Data integrity: every opcode, sizes around the MTU, multi-SGE, unaligned.
# DEV and g name the device and GID (sroce0 unless said otherwise).
integrity() {
	timeout 300 "$SROCE_SRC/build/tests/sroce_integrity" -d "${DEV:-sroce0}" -g "$g" -p 18600 > /tmp/isrv.out 2>&1 &
	local spid=$! rc
	timeout 280 "$SROCE_SRC/build/tests/sroce_integrity" -d "${DEV:-sroce0}" -g "$g" -p 18600 "$@" 127.0.0.1 > /tmp/icli.out 2>&1
	rc=$?
	wait "$spid" || rc=1
	grep -c '^ok' /tmp/icli.out | sed 's/^/# integrity checks passed: /'
	grep -v '^ok' /tmp/icli.out | tail -5 | sed 's/^/# /'
	return "$rc"
}
check "data integrity, all opcodes (MTU 1024)" integrity -n 2

# Multicast on one host (IBA 10.5: every QP attached to the group gets
# the packets, the sender's node included, as on a RoCE NIC): two QPs of
# mckey receive what another mckey on the same host sends.
mc_joined() { awk '$1 == "mcast_attach" && $2 >= 2 { f = 1 } END { exit !f }' /sys/kernel/debug/sroce/objects; }
mc_local() {
	local rpid rc
	timeout 120 mckey -m 239.77.0.9 -b 10.77.0.1 -c 2 -C 20 > /tmp/mcr.out 2>&1 &
	rpid=$!
	wait_for 60 mc_joined || { kill "$rpid"; cat /tmp/mcr.out; return 1; }
	timeout 60 mckey -m 239.77.0.9 -b 10.77.0.1 -s -C 20 || return 1
	wait "$rpid"
	rc=$?
	[ "$rc" -eq 0 ] || tail -5 /tmp/mcr.out
	return "$rc"
}
check "mckey on one host: 20 multicast messages to each of 2 QPs" mc_local

# rdma_xclient (RC) sends 16 inline bytes on a QP that asked for no
# inline data: a user QP gets as much as its SGEs hold, as from NICs.
xsrv() { timeout 60 rdma_xserver -c r > /tmp/xsrv.out 2>&1; }
xcli() {
	local spid rc
	xsrv &
	spid=$!
	wait_for 30 listening 7471
	timeout 50 rdma_xclient -s 10.77.0.1 -c r > /tmp/xcli.out 2>&1
	rc=$?
	wait "$spid" || rc=1
	[ "$rc" -eq 0 ] || tail -n 3 /tmp/xcli.out /tmp/xsrv.out
	return "$rc"
}
check "rdma_xserver / rdma_xclient -c r (16 inline bytes, no inline asked)" xcli

# Zero-copy transmit (RC request payloads of 512 bytes and more sent from
# the MR's pages) needs a netdev that takes page fragments.  This VM's
# virtio-net does not (QEMU's socket backend offers no checksum offload,
# and without it virtio-net has no scatter-gather); a veth has both.  The
# packets loop back through the same queue, where the receive path
# linearizes them, and the integrity tool checks every byte.
zc() { rdma statistic show link sroce1/1 | tr -s ' ' '\n' | awk '$0 == "tx_zerocopy" { getline; print }'; }
check "veth pair for zero-copy" bash -c "ip link add sveth0 type veth peer name sveth1 &&
	ip addr add 10.99.0.1/24 dev sveth0 && ip link set sveth0 up && ip link set sveth1 up"
check "rdma link add sroce1 on sveth0" rdma link add sroce1 type sroce netdev sveth0
wait_for 10 sroce_gid "$(gid4_tail 10.99.0.1)" sroce1
g0=$g
g=$(sroce_gid "$(gid4_tail 10.99.0.1)" sroce1)
DEV=sroce1 check "data integrity over zero-copy payloads" integrity -n 1
check "zero-copy transmit was used" test "$(zc)" -gt 0
diag "tx_zerocopy on sroce1: $(zc)"
g=$g0
check "rdma link delete sroce1" rdma link delete sroce1
check "veth pair removed" ip link del sveth0

# rdma_cm over a VLAN device's address on one host: ib_core answers the
# CM's MADs from the GID of the VLAN the request came through, which a
# looped-back completion must name as a NIC's does (IB_WC_WITH_VLAN).
lrping() {
	local spid rc
	timeout 90 rping -s -a 10.100.0.1 -p 18570 -C 10 -S 1024 -V > /tmp/lrs.out 2>&1 &
	spid=$!
	wait_for 30 listening 18570
	timeout 80 rping -c -a 10.100.0.1 -p 18570 -C 10 -S 1024 -V > /tmp/lrc.out 2>&1
	rc=$?
	wait "$spid" || rc=1
	[ "$rc" -eq 0 ] || tail -n 3 /tmp/lrc.out /tmp/lrs.out
	return "$rc"
}
check "a VLAN device eth0.100 over eth0" bash -c "modprobe 8021q &&
	ip link add link eth0 name eth0.100 type vlan id 100 &&
	ip address add 10.100.0.1/24 dev eth0.100 && ip link set eth0.100 up"
check "sroce0 has the VLAN address's GID" wait_for 10 sroce_gid "$(gid4_tail 10.100.0.1)"
check "rping -V to the VLAN address on one host (rdma_cm)" lrping
check "the VLAN device goes" ip link del eth0.100
check "every object it made is gone" wait_for 30 output_is "$before" objects
rdma statistic show link sroce0/1 | tr -s ' ' '\n' | paste -d= - - | tr '\n' ' ' | sed 's/^/# /'
echo
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

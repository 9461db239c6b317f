#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 420
#
# Two hosts on one link each bind sroce to eth0; each sees its own RoCEv2
# GIDs, and its peer's address on the link (what RoCE traffic will use),
# and the peer's port counters through its PMA (a PerfMgt Get to QP1).
# Then VLANs: a VLAN device eth0.100 on each host; ib_core gives sroce0 a
# GID for its address; RDMA traffic from that GID leaves tagged through
# eth0.100 with the SL as its 802.1p priority (the VLAN device's egress
# map), and comes in through it: perftest with --sl 5 (the priority seen
# on the wire by tcpdump), and rping (rdma_cm, whose MADs must be answered
# from the VLAN's GID).  Then a tunnel: sroce1 on a vxlan device, data
# checked end to end (tests/user/integrity.c) between its addresses and
# then between those of a VLAN device over it, no packet in a batch.
. tests/lib/vm.sh

ib=/sys/class/infiniband
peer=$(( (VM_ID + 1) % VM_COUNT ))
gid_of() {	# the RoCE v2 GID of an IPv4 address, as sysfs prints it
	local IFS=.
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}
has_gid() {	# one grep over the 1024 entries, not a cat for each
	grep -qsx -- "$1" "$ib/sroce0"/ports/1/gids/*
}

check "rdma link add sroce0 on eth0" rdma link add sroce0 type sroce netdev eth0
check "own IPv4 GID present" wait_for 5 has_gid "$(gid_of "$(vm_ip "$VM_ID")")"
vm_put "gid$VM_ID" "$(gid_of "$(vm_ip "$VM_ID")")"
vm_barrier devices-up
check "the peer is reachable on the link" ping -c 1 -W 5 "$(vm_ip $peer)"
pgid=$(vm_get "gid$peer")
check "the peer published its GID" test "$pgid" = "$(gid_of "$(vm_ip $peer)")"
check "the peer's GID is not in our table" not has_gid "$pgid"
# The peer's PMA (pma.c) answers a PerfMgt Get sent across the link to its
# QP1, with the packets it received counted.
pma_peer() {
	local out
	out=$(/usr/bin/python3 "$SROCE_SRC/tests/lib/pma_query.py" sroce0 \
		"$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")")" get pcx "$pgid") || return 1
	diag "$out"
	grep -q "method 0x81 status 0x0000 attr 0x001d" <<< "$out" &&
		grep -q "port_rcv_packets [1-9]" <<< "$out"
}
check "the peer's PMA answers a Get of its port counters across the link" pma_peer
vm_put "guid$VM_ID" "$(cat $ib/sroce0/node_guid)"
check "peer's node GUID differs from ours" \
	test "$(vm_get "guid$peer")" != "$(cat $ib/sroce0/node_guid)"
vm_barrier checked

vip() { echo "10.100.0.$(($1 + 1))"; }
check "a VLAN device eth0.100 over eth0, egress map 1:1" bash -c "
	modprobe 8021q &&
	ip link add link eth0 name eth0.100 type vlan id 100 \
		egress-qos-map 0:0 1:1 2:2 3:3 4:4 5:5 6:6 7:7 &&
	ip address add $(vip "$VM_ID")/24 dev eth0.100 &&
	ip link set eth0.100 up"
check "sroce0 has a GID for the VLAN device's address" \
	wait_for 10 has_gid "$(gid_of "$(vip "$VM_ID")")"
gv=$(sroce_gid "$(gid4_tail "$(vip "$VM_ID")")")
vm_barrier vlan-up
check "the peer answers on the VLAN" wait_for 10 ping -c 1 -W 2 "$(vip $peer)"
if [ "$VM_ID" = 0 ]; then	# the server: it receives the client's data
	timeout 200 tcpdump -l -n -e -i eth0 -c 20 \
		"vlan 100 and udp dst port 4791 and src host $(vip 1)" \
		> /tmp/vlan.cap 2> /tmp/vlan.err &
	dump=$!
	# tcpdump says so once its filter is on the socket
	check "tcpdump listens on eth0" wait_for 20 grep -q "listening on" /tmp/vlan.err
fi
check "ib_send_bw --sl 5 from the VLAN GID" perf_pair 18700 0 \
	ib_send_bw -d sroce0 -x "$gv" --sl 5 -s 1024 -n 200 -F
if [ "$VM_ID" = 0 ]; then
	wait "$dump"
	check "its frames came tagged, VLAN 100, priority 5" \
		grep -q "vlan 100, p 5, ethertype IPv4.*$(vip 1)\.[0-9]* > $(vip 0)\.4791" /tmp/vlan.cap
	head -2 /tmp/vlan.cap | sed 's/^/# /'
fi
addr=$(vip 0)
rping_srv() { timeout 200 rping -s -a "$addr" -p "$1" -C 20 -S 1024 -V; }
rping_cli() { timeout 180 rping -c -a "$addr" -p "$1" -C 20 -S 1024 -V; }
check "rping -V over the VLAN (rdma_cm)" vm_pair 18701 rping_srv rping_cli
vm_barrier vlan-done
no_vlan_gid() { ! grep -q ':ffff:0a64:' "$ib"/sroce0/ports/1/gids/* 2> /dev/null; }
check "the VLAN device goes" ip link del eth0.100
check "... and its GID with it" wait_for 10 no_vlan_gid
vm_barrier vlan-gone

# A tunnel: sroce1 on a vxlan device over eth0, traffic between the
# addresses of the vxlan device, then of a VLAN device over it.  Its
# packets leave encapsulated, one by one: the kernel would split a batch
# below the tunnel with wrong outer UDP checksums (the receiver dropped
# all but the first packet of each, and a 2-packet READ answer never
# arrived) and without checking the room for the outer headers
# (sroce_tx_may_batch()).  A VLAN device would pass a batch down whole:
# what decides is the device below it.
xip() { echo "10.$((101 + $2)).0.$(($1 + 1))"; }
batched() { cat "$ib/sroce1/ports/1/hw_counters/tx_batched"; }
tunnel() {	# tunnel NETDEV NET: between NETDEV's addresses, 10.(101+NET)/24
	local nd=$1 net=$2
	check "sroce1 has the GID of $nd's address" \
		wait_for 10 sroce_gid "$(gid4_tail "$(xip "$VM_ID" "$net")")" sroce1
	vm_barrier "tunnel-up-$net"
	check "the peer answers through $nd" wait_for 10 ping -c 1 -W 2 "$(xip $peer "$net")"
	DEV=sroce1 g=$(sroce_gid "$(gid4_tail "$(xip "$VM_ID" "$net")")" sroce1)
	check "data integrity through $nd, all opcodes" integrity_pair $((18702 + net)) -n 1
	unset DEV g
	check "no packet went into the tunnel in a batch ($(batched))" test "$(batched)" -eq 0
	vm_barrier "tunnel-done-$net"
}
# The debug kernel has no vxlan: both hosts skip alike.
if modprobe vxlan 2> /dev/null; then
	check "a vxlan device vx0 over eth0" bash -c "
		ip link add vx0 type vxlan id 42 remote $(vm_ip $peer) dstport 4789 dev eth0 &&
		ip address add $(xip "$VM_ID" 0)/24 dev vx0 && ip link set vx0 up"
	check "rdma link add sroce1 on vx0" rdma link add sroce1 type sroce netdev vx0
	tunnel vx0 0
	check "a VLAN device vx0.7 over vx0" bash -c "
		ip link add link vx0 name vx0.7 type vlan id 7 &&
		ip address add $(xip "$VM_ID" 1)/24 dev vx0.7 && ip link set vx0.7 up"
	tunnel vx0.7 1
	check "rdma link delete sroce1" rdma link delete sroce1
	check "the VLAN and vxlan devices go" bash -c "ip link del vx0.7 && ip link del vx0"
else
	ok 0 "sroce over a vxlan device # SKIP this kernel has no vxlan"
fi
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

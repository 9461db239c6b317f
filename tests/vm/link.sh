#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 420
#
# Device life on one host: load/unload, rdma link add/delete, port state
# from carrier, MTU, node GUID, GIDs from addresses, two devices, netdev
# removal, rdma link add racing rdma link delete, rmmod with devices bound,
# the GID table filled to its 1024 entries,
# RC and UD QPs when the netdev's MTU shrinks under them, rdma_rxe loaded
# beside sroce (UDP 4791 is held only while sroce has a device).
. tests/lib/vm.sh

ib=/sys/class/infiniband
port_state() { cut -d' ' -f2 "$ib/$1/ports/1/state"; }
has_gid() {	# has_gid DEV GID: is GID in DEV's table (as RoCE v2)?
	local f
	# One grep over the table's 1024 entries, then the type of the few
	# that match (a cat per entry took minutes on the debug kernel).
	for f in $(grep -lsx -- "$2" "$ib/$1"/ports/1/gids/*); do
		[ "$(cat "$ib/$1/ports/1/gid_attrs/types/${f##*/}")" = "RoCE v2" ] && return 0
	done
	return 1
}

check "modprobe sroce" modprobe sroce
check "rmmod sroce (no devices)" rmmod sroce
# "rdma link add" must load the module by itself (MODULE_ALIAS_RDMA_LINK).
check "rdma link add sroce0 on eth0 (module autoloads)" \
	rdma link add sroce0 type sroce netdev eth0
check "sroce0 in sysfs" test -d $ib/sroce0
check "rdma link show: sroce0 ACTIVE on eth0" \
	bash -c "rdma link show sroce0/1 | grep -q 'state ACTIVE.*netdev eth0'"
check "node_type is CA" grep -q "^1: CA" $ib/sroce0/node_type
check "node_guid is the EUI-64 of the MAC" \
	grep -qx "5054:00ff:fe77:0001" $ib/sroce0/node_guid
check "link_layer Ethernet" grep -qx Ethernet $ib/sroce0/ports/1/link_layer
check "port state ACTIVE" test "$(port_state sroce0)" = ACTIVE
check "phys_state LinkUp" grep -q "5: LinkUp" $ib/sroce0/ports/1/phys_state
check "active MTU 1024 on a 1500 netdev" dmesg_has "sroce0: port 1 ACTIVE, active MTU 1024, on eth0"
check "GID: link-local default GID" has_gid sroce0 "fe80:0000:0000:0000:5054:00ff:fe77:0001"
check "GID: IPv4 address 10.77.0.1" wait_for 5 has_gid sroce0 "0000:0000:0000:0000:0000:ffff:0a4d:0001"
check "GID: IPv6 address fd77::1" wait_for 5 has_gid sroce0 "fd77:0000:0000:0000:0000:0000:0000:0001"
ip addr add 10.77.5.9/24 dev eth0
check "GID: an added address appears" wait_for 5 has_gid sroce0 "0000:0000:0000:0000:0000:ffff:0a4d:0509"
ip addr del 10.77.5.9/24 dev eth0
check "GID: a removed address disappears" \
	wait_for 5 not has_gid sroce0 "0000:0000:0000:0000:0000:ffff:0a4d:0509"
check "GSI QP1 created by ib_mad on sroce0" \
	bash -c "rdma resource show qp link sroce0/1 | grep -q 'lqpn 1 .*type GSI'"
check_fails "a second device on eth0 is refused" rdma link add sroce9 type sroce netdev eth0
check "the refused device does not exist" test ! -e $ib/sroce9
check_fails "a device on lo is refused" rdma link add sroce9 type sroce netdev lo
# A VLAN device's GIDs are the device's below it (ib_core): refused, as
# by rdma_rxe, with the reason in the log.
check "a VLAN device eth0.42 over eth0" bash -c \
	"modprobe 8021q && ip link add link eth0 name eth0.42 type vlan id 42"
check_fails "a device on the VLAN device is refused" \
	rdma link add sroce9 type sroce netdev eth0.42
check "... with the reason in the log" \
	dmesg_has "sroce: eth0.42 is a VLAN device: bind eth0"
check "the refused device does not exist" test ! -e $ib/sroce9
check "the VLAN device goes" ip link del eth0.42
# (Devices on netdevs of other network namespaces: netns.sh.)

# A second device on a veth: carrier follows the peer.
ip link add va type veth peer name vb
ip link set va up
ip link set vb up
check "rdma link add sroce1 on va" rdma link add sroce1 type sroce netdev va
check "two devices exist" test -d $ib/sroce0 -a -d $ib/sroce1
check "sysfs parent names each one's netdev, as rdma_rxe's" \
	test "$(cat $ib/sroce0/parent)" = eth0 -a "$(cat $ib/sroce1/parent)" = va
check "sroce1 ACTIVE" wait_for 5 bash -c "grep -q ACTIVE $ib/sroce1/ports/1/state"
downed() { cat $ib/sroce1/ports/1/hw_counters/link_downed; }
pma_downed() { cat $ib/sroce1/ports/1/counters/link_downed; }
# hw_counters are cached for 10 ms: wait for the count, do not sample it.
downed_is() { test "$(downed)" = "$1" -a "$(pma_downed)" = "$1"; }
check "link_downed 0 ($(downed), PMA $(pma_downed))" downed_is 0
ip link set vb down
check "carrier down -> sroce1 DOWN" wait_for 5 bash -c "grep -q DOWN $ib/sroce1/ports/1/state"
check "carrier down -> port error event" wait_for 5 dmesg_has "sroce1: port 1 DOWN, active MTU 1024, on va"
check "... counted once in link_downed" wait_for 5 downed_is 1
check "phys_state Disabled" grep -q "3: Disabled" $ib/sroce1/ports/1/phys_state
check "sroce0 unaffected" test "$(port_state sroce0)" = ACTIVE
ip link set vb up
check "carrier up -> sroce1 ACTIVE" wait_for 5 bash -c "grep -q ACTIVE $ib/sroce1/ports/1/state"
check "carrier up -> port active event" wait_for 5 bash -c \
	"dmesg | grep 'sroce1: port 1' | tail -n 1 | grep -q 'ACTIVE, active MTU 1024, on va'"
ip link set va down
check "admin down -> sroce1 DOWN" wait_for 5 bash -c "grep -q DOWN $ib/sroce1/ports/1/state"
check "... counted again in link_downed" wait_for 5 downed_is 2
ip link set va up
ip link set va mtu 4200
check "MTU 4200 -> active MTU 4096" wait_for 5 dmesg_has "sroce1: port 1 ACTIVE, active MTU 4096, on va"
ip link set va mtu 4187
check "MTU 4187 -> active MTU 2048 (headers do not fit)" wait_for 5 dmesg_has "sroce1: port 1 ACTIVE, active MTU 2048, on va"
# Below 256 bytes and the headers nothing fits: no packet, but query_port
# still answers a valid MTU, the least (as rdma_rxe does).
ip link set va mtu 340
check "MTU 340 -> no RoCE packet fits" wait_for 5 dmesg_has "sroce1: port 1 ACTIVE, active MTU 0, on va"
check "... and query_port says active MTU 256" bash -c \
	"ibv_devinfo -d sroce1 | grep -q 'active_mtu:.*256 (1)'"
ip link set va mtu 4187

# QPs made before the netdev's MTU changed (admin-guide.rst, "Port"): an
# RC QP keeps its path MTU, and once that no longer fits, its packets are
# lost (tx_errors) and it fails with retry exceeded (IBV_WC_RETRY_EXC_ERR,
# status 12); a UD send is checked against the MTU of now, and one that no
# longer fits is not sent and is no error (C10-93.1.1): the client goes on
# completing sends while no packet leaves.  A new QP takes the new MTU and
# works.
stat1() { rdma statistic show link sroce1/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }
moved() { [ "$(stat1 tx_packets)" -gt $((tx0 + 100)) ]; }
# pair PORT PERFTEST-ARGS...: a loopback pair on va, moving data (pids in
# srv, cli; outputs /tmp/pair.srv, /tmp/pair.cli).  pair and client_fails
# keep state in this shell: not under check, which runs a subshell.
pair() {
	local p=$1
	shift
	tx0=$(stat1 tx_packets)
	timeout -s KILL 120 "$@" -d sroce1 -x "$g1" -F -p "$p" > /tmp/pair.srv 2>&1 &
	srv=$!
	wait_for 60 listening "$p" || return 1
	timeout -s KILL 120 "$@" -d sroce1 -x "$g1" -F -p "$p" 10.79.0.1 > /tmp/pair.cli 2>&1 &
	cli=$!
	wait_for 60 moved
}
# client_fails STATUS: the client ended within 60 s, with a completion of
# that status.
client_fails() {
	wait_for 60 not kill -0 "$cli" || return 1
	wait "$cli"
	[ $? -ne 0 ] && grep -q "Failed status $1:" /tmp/pair.cli && return 0
	sed 's/^/# client: /' /tmp/pair.cli | tail -n 8
	return 1
}
unpair() { kill -9 "$srv" "$cli" 2>/dev/null; pkill -9 -x ib_write_bw; pkill -9 -x ib_send_bw; wait "$srv" "$cli" 2>/dev/null; }
works1() {
	timeout 120 ib_write_bw -d sroce1 -x "$g1" -F -s 65536 -n 100 -p 18603 > /tmp/n.srv 2>&1 &
	wait_for 60 listening 18603 || return 1
	timeout 120 ib_write_bw -d sroce1 -x "$g1" -F -s 65536 -n 100 -p 18603 10.79.0.1 > /tmp/n.cli 2>&1 &&
		wait $!
}
mtu_is() { dmesg | grep "sroce1: port 1" | tail -n 1 | grep -q "active MTU $1,"; }
ip link set va mtu 4200
check "MTU 4200 again -> active MTU 4096" wait_for 5 mtu_is 4096
ip addr add 10.79.0.1/24 dev va
check "sroce1 has the GID of 10.79.0.1" wait_for 10 sroce_gid "$(gid4_tail 10.79.0.1)" sroce1
g1=$(sroce_gid "$(gid4_tail 10.79.0.1)" sroce1)
pair 18601 ib_write_bw -m 4096 -s 65536 -D 60
ok $? "RC ib_write_bw at path MTU 4096 moves data"
err0=$(stat1 tx_errors)
ip link set va mtu 1500
check "netdev MTU 1500 -> active MTU 1024" wait_for 5 mtu_is 1024
client_fails 12
ok $? "the RC QP of path MTU 4096 fails with retry exceeded"
check "... its packets counted as tx_errors" test "$(stat1 tx_errors)" -gt "$err0"
unpair
ip link set va mtu 4200
check "MTU 4200 -> active MTU 4096" wait_for 5 mtu_is 4096
pair 18602 ib_send_bw -c UD -s 2048 -D 60
ok $? "UD ib_send_bw of 2048 bytes moves data"
ip link set va mtu 1500
check "netdev MTU 1500 -> active MTU 1024 (UD)" wait_for 5 mtu_is 1024
# naps N: N tenths of a second.
naps() { local i; for ((i = 0; i < $1; i++)); do vm_nap; done; }
# The sends posted before the change have left once two reads half a
# second apart agree; then none leaves in 3 s while the client still
# runs, unfailed.
settled() {
	local a
	a=$(stat1 tx_packets)
	naps 5
	[ "$(stat1 tx_packets)" = "$a" ]
}
none_sent() {
	local a
	wait_for 20 settled || return 1
	a=$(stat1 tx_packets)
	naps 30
	[ "$(stat1 tx_packets)" = "$a" ] && kill -0 "$cli" &&
		! grep -q "Failed status" /tmp/pair.cli
}
none_sent
ok $? "UD sends of 2048 bytes after the MTU went to 1024: not sent, no error (C10-93.1.1)"
unpair
check "a new RC QP takes the new MTU and works" works1

# The GID table at its limit (gid_tbl_len 1024, as rdma_rxe's): 1100 more
# addresses on va fill it; those beyond get no GID, and QPs still work.
gids1() { ibv_devinfo -v -d sroce1 2>/dev/null | grep -c 'GID\['; }
gids_are() { [ "$(gids1)" "$1" "$2" ]; }
for i in $(seq 1 1100); do
	printf 'address add fd79::%x/128 dev va nodad\n' "$i"
done > /tmp/addrs
check "ibv_devinfo: gid_tbl_len 1024" bash -c \
	"ibv_devinfo -v -d sroce1 | grep -q 'gid_tbl_len:[[:space:]]*1024$'"
check "1100 IPv6 addresses more on va" ip -6 -batch /tmp/addrs
check "the GID table fills to its 1024 entries" wait_for 120 gids_are -eq 1024
check "an RC QP works with the table full" works1
check "the addresses go" ip -6 address flush dev va scope global
check "their GIDs go with them" wait_for 120 gids_are -lt 8
check "netdev removal removes its device" bash -c "ip link del va && true"
check "sroce1 gone" wait_for 10 test ! -e $ib/sroce1
check "rdma link delete sroce0" rdma link delete sroce0
check "sroce0 gone" wait_for 10 test ! -e $ib/sroce0

# UDP 4791 is sroce's only while it has a device (netns.c): rdma_rxe loads
# beside an idle sroce, and rdma link add says why it cannot bind.
check "rdma_rxe loads while sroce has no device" modprobe rdma_rxe
check_fails "rdma link add sroce0 fails while rdma_rxe holds UDP 4791" \
	rdma link add sroce0 type sroce netdev eth0
check "the refusal says why" dmesg_has \
	"sroce: cannot bind UDP port 4791 (IPv4) in this network namespace: -98, another RoCE stack (rdma_rxe?) holds it"
check "the refused device does not exist" test ! -e $ib/sroce0
check "rmmod rdma_rxe" rmmod rdma_rxe
check "rdma link add sroce0 once rdma_rxe is gone" rdma link add sroce0 type sroce netdev eth0
check_fails "rdma_rxe cannot load while sroce0 exists" modprobe rdma_rxe
check "rdma link delete sroce0" rdma link delete sroce0
check "rdma_rxe loads once the last sroce device is gone" modprobe rdma_rxe
check "rmmod rdma_rxe" rmmod rdma_rxe

# rdma link add racing rdma link delete of the device it makes: a delete
# can take the device as soon as it registers, before the add returned.
# 30 rounds; each add returns, and nothing is left.
ip link add ve type veth peer name vf
rm -f /tmp/race.stop
( while [ ! -e /tmp/race.stop ]; do rdma link delete sroceR 2>/dev/null; done ) &
deleter=$!
adds=0
for i in $(seq 30); do
	timeout 60 rdma link add sroceR type sroce netdev ve 2>/dev/null &&
		adds=$((adds + 1))
done
touch /tmp/race.stop
wait "$deleter"
rdma link delete sroceR 2>/dev/null
diag "add racing delete: $adds of 30 adds returned 0"
check "add racing delete: no device left" wait_for 10 test ! -e $ib/sroceR
ip link del ve

# rmmod with devices bound removes them all.
ip link add vc type veth peer name vd
check "re-add sroce0 on eth0" rdma link add sroce0 type sroce netdev eth0
check "add sroce1 on vc" rdma link add sroce1 type sroce netdev vc
check "rmmod with two devices bound" rmmod sroce
check "no devices left" bash -c "! ls $ib | grep -q sroce"
unload_check
check "modprobe again after rmmod" modprobe sroce
check "rmmod again" rmmod sroce
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 900
#
# Network namespaces, in one VM: a device sends and receives in the
# namespace of its netdev, whose UDP 4791 socket its first device opens.
# - ib_core's exclusive mode: "rdma link add" inside a namespace binds a
#   netdev of that namespace; "rdma dev set ... netns" moves the device
#   there, also while a process holds a user context of it; rping and
#   perftest run to a device of the initial namespace over a veth pair;
#   deleting the namespace takes both devices and the socket with it.
# - A netdev that changes namespace takes its device with it; a namespace
#   deleted with a physical netdev's device in it (the netdev goes back to
#   the initial namespace) waits for the device and leaves no socket.
# - Shared mode: two namespaces, a device in each on the ends of a veth
#   pair: perftest (RC, UD, rdma_cm) and rping over IPv4 and IPv6.
# - rdma_rxe beside sroce: rdma_rxe holds the initial namespace's port,
#   sroce runs in another namespace, and the two talk over a veth pair;
#   sroce in the initial namespace is refused and says why.
# - rmmod with devices in several namespaces closes every socket.
. tests/lib/vm.sh

ib=/sys/class/infiniband
in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# UDP 4791 is open (in namespace $1, "-": the initial one).
port_open() {
	if [ "$1" = - ]; then
		ss -ulnH 'sport = :4791' | grep -q .
	else
		in_ns "$1" ss -ulnH 'sport = :4791' | grep -q .
	fi
}

# A veth pair $1 (in namespace $3) - $2 (in namespace $4, "-": initial),
# addresses 10.$5.0.1 and .2, fd$5::1 and ::2.
veth_pair() {
	local a=$1 b=$2 nsa=$3 nsb=$4 net=$5
	ip link add "$a" type veth peer name "$b" || return 1
	[ "$nsb" = - ] || ip link set "$b" netns "$nsb" || return 1
	ip link set "$a" netns "$nsa" &&
	addr_up "$nsa" "$a" "$net" 1 && addr_up "${nsb/-/default}" "$b" "$net" 2
}
addr_up() {	# addr_up NS DEV NET HOST
	in_ns "$1" ip address add "10.$3.0.$4/24" dev "$2" &&
	in_ns "$1" ip -6 address add "fd$3::$4/64" dev "$2" nodad &&
	in_ns "$1" ip link set "$2" up && in_ns "$1" ip link set lo up
}

# The index of device $2's GID ending in $1, read in namespace $3 (the
# device's sysfs lives where ib_core shows it).
ns_gid() {
	local f
	f=$(in_ns "${3:-default}" sh -c "grep -ls -- '$1\$' $ib/$2/ports/1/gids/*" |
		head -n 1)
	[ -n "$f" ] && basename "$f"
}
ip netns attach default 1 2> /dev/null	# a name for the initial namespace

# A server listens on port $2 in namespace $1: TCP, or rdma_cm.
ns_listening() {
	in_ns "$1" ss -ltnH "sport = :$2" | grep -q . ||
		rdma resource show cm_id 2> /dev/null | grep "state LISTEN" |
		grep -q ":$2 "
}

# ns_pair PORT SRVNS CLINS: run the array srv in SRVNS and, once it
# listens on PORT, the array cli in CLINS; both must succeed.
ns_pair() {
	local port=$1 sns=$2 cns=$3 spid crc src try
	for try in 1 2 3; do
		timeout 300 ip netns exec "$sns" "${srv[@]}" > /tmp/srv.out 2>&1 &
		spid=$!
		wait_for 120 ns_listening "$sns" "$port" ||
			diag "server not ready on port $port"
		timeout 240 ip netns exec "$cns" "${cli[@]}" > /tmp/cli.out 2>&1
		crc=$?
		[ "$crc" -ne 0 ] && cm_raced /tmp/cli.out || break
		# Its server waits for the data connection for ever.
		kill "$spid" 2> /dev/null
		[ "$try" -lt 3 ] || break
		wait "$spid"
		diag "perftest's client connected before its server listened (cm_raced); run again"
	done
	wait "$spid"
	src=$?
	[ "$crc" = 0 ] && [ "$src" = 0 ] && return 0
	echo "client rc $crc, server rc $src"
	sed 's/^/srv: /' /tmp/srv.out | tail -8
	sed 's/^/cli: /' /tmp/cli.out | tail -8
	cm_diag "$sns" "$cns"
	return 1
}

# perftest PORT SRVNS SRVDEV SRVGID CLINS CLIDEV CLIGID ADDR PROG ARGS...
ns_perf() {
	local port=$1 sns=$2 sdev=$3 sg=$4 cns=$5 cdev=$6 cg=$7 addr=$8
	shift 8
	perf_scale_args "$@"
	local flag=-x
	case "$1" in ibv_*) flag=-g ;; esac
	srv=("${perf_args[@]}" -d "$sdev" "$flag" "$sg" -p "$port")
	cli=("${perf_args[@]}" -d "$cdev" "$flag" "$cg" -p "$port" "$addr")
	ns_pair "$port" "$sns" "$cns"
}

# rping ADDR PORT SRVNS CLINS: verified round trips over rdma_cm.
ns_rping() {
	local n
	n=$(scaled 20)
	srv=(rping -s -a "$1" -p "$2" -C "$n" -S 1024 -V)
	cli=(rping -c -a "$1" -p "$2" -C "$n" -S 1024 -V)
	ns_pair "$2" "$3" "$4"
}

gone() { local d; for d; do ! rdma dev show "$d" || return 1; done; }

# --- Exclusive mode: devices belong to one namespace -----------------------
check "modprobe sroce" modprobe sroce
check "rdma system set netns exclusive" rdma system set netns exclusive
check "a namespace nsx, veth vx (nsx) - vy (initial)" eval \
	"ip netns add nsx && veth_pair vx vy nsx - 79"
check "no UDP 4791 socket before the first device" not port_open -
check "rdma link add in nsx binds nsx's netdev vx" \
	in_ns nsx rdma link add sx type sroce netdev vx
check "UDP 4791 is open in nsx" port_open nsx
check "... and not in the initial namespace" not port_open -
check "ib_core made sx in the initial namespace" rdma dev show sx
check "... where nsx does not see it" not in_ns nsx rdma dev show sx
check "rdma link add sy on vy (initial namespace)" \
	rdma link add sy type sroce netdev vy
check "UDP 4791 is open in the initial namespace now" port_open -

# A process holds a user context of sx while it moves: ib_core
# disassociates it (our disassociate_ucontext), the move does not wait.
gx=$(ns_gid "$(gid4_tail 10.79.0.1)" sx)
ibv_rc_pingpong -d sx -g "$gx" -p 18900 > /tmp/held.out 2>&1 &
held=$!
check "a process opened sx" wait_for 30 ss -ltnH "sport = :18900"
check "rdma dev set sx netns nsx, with the process still there" \
	timeout 60 rdma dev set sx netns nsx
kill "$held" 2> /dev/null
wait "$held" 2> /dev/null
check "sx is in nsx now" in_ns nsx rdma dev show sx
check "... and gone from the initial namespace" not rdma dev show sx
check "its port is active in nsx" bash -c \
	"ip netns exec nsx ibv_devinfo -d sx | grep -q PORT_ACTIVE"
check "sx has its IPv4 GID in nsx" wait_for 10 ns_gid "$(gid4_tail 10.79.0.1)" sx nsx
check "sy has its IPv4 GID" wait_for 10 ns_gid "$(gid4_tail 10.79.0.2)" sy
gx=$(ns_gid "$(gid4_tail 10.79.0.1)" sx nsx)
gy=$(ns_gid "$(gid4_tail 10.79.0.2)" sy)
check "rping: nsx (sx) to the initial namespace (sy)" \
	ns_rping 10.79.0.2 18901 default nsx
check "ib_send_bw: nsx (sx) to the initial namespace (sy)" \
	ns_perf 18902 default sy "$gy" nsx sx "$gx" 10.79.0.2 \
	ib_send_bw -s 4096 -n 200 -F
# A veth would pass a batch (one UDP GSO skb, net.c) whole, and its peer
# could forward it into a tunnel, which the kernel cannot cut it below
# (sroce_tx_may_batch()): over a veth packets leave one by one.
check "... sent one by one over the veth" in_ns nsx bash -c \
	"rdma statistic show link sx/1 | grep -qE 'tx_batched 0( |$)'"
check "ib_read_lat: nsx (sx) to the initial namespace (sy)" \
	ns_perf 18903 default sy "$gy" nsx sx "$gx" 10.79.0.2 \
	ib_read_lat -s 64 -n 100 -F
check "rdma dev set sx back to the initial namespace" \
	in_ns nsx rdma dev set sx netns default
check "sx is in the initial namespace again" rdma dev show sx
check "... and moves to nsx again" rdma dev set sx netns nsx
check "ip netns del nsx, sx in it" ip netns del nsx
check "the veth pair goes, and both devices with it" wait_for 60 gone sx sy
check "no UDP 4791 socket is left" wait_for 30 not port_open -

# A netdev that leaves its namespace while ib_core moves its device to
# another one: the netdev's NETDEV_UNREGISTER, sent once, may come while
# ib_core holds the device disabled for the move, when nobody can hold it
# (sroce_enable_driver()).  A device left behind stays bound to a netdev
# of another namespace, and the exit of its sockets' namespace waits for
# it for ever.  Twenty rounds, the netdev moved at a random point of a
# loop of device moves; each round the device must go.
sr_gone() { ! rdma dev show sr && ! in_ns nsc rdma dev show sr; }
sr_round() {	# sr_round FROM TO: 0 the device went, 1 it stayed
	local bg rc=0
	in_ns "$1" rdma link add sr type sroce netdev vr0 || return 2
	(while :; do
		rdma dev set sr netns nsc
		in_ns nsc rdma dev set sr netns default
	done) > /dev/null 2>&1 &
	bg=$!
	sleep "0.$((RANDOM % 4))"
	ip -n "$1" link set vr0 netns "$2"
	kill "$bg"
	wait "$bg" 2> /dev/null
	if ! wait_for 10 sr_gone; then
		rc=1
		rdma link delete sr 2> /dev/null || in_ns nsc rdma link delete sr
	fi
	return "$rc"
}
check "namespaces nsr, nsd, nsc; veth vr0 (nsr) - vr1 (nsd)" eval \
	"ip netns add nsr && ip netns add nsd && ip netns add nsc && veth_pair vr0 vr1 nsr nsd 83"
stayed=0 failed=0 from=nsr to=nsd
for i in $(seq 20); do
	sr_round "$from" "$to"
	case $? in 1) stayed=$((stayed + 1)) ;; 2) failed=$((failed + 1)) ;; esac
	t=$from from=$to to=$t
done
ok "$((stayed + failed))" "the netdev leaving its namespace during device moves takes the device, 20 rounds ($stayed stayed, $failed adds failed)"
check "ip netns del nsr nsd nsc" bash -c "ip netns del nsr && ip netns del nsd && ip netns del nsc"
# The namespace is freed asynchronously; until then ib_core says busy.
check "rdma system set netns shared" wait_for 60 rdma system set netns shared

# --- A netdev that changes namespace -------------------------------------
check "a namespace nsm, veth vm0 (nsm) - vm1 (initial)" eval \
	"ip netns add nsm && veth_pair vm0 vm1 nsm - 81"
check "rdma link add sm on vm1" rdma link add sm type sroce netdev vm1
check "ip link set vm1 netns nsm" ip link set vm1 netns nsm
check "sm goes with its netdev" wait_for 30 not rdma dev show sm
check "... and the initial namespace's socket with it" \
	wait_for 30 not port_open -
check "rdma link add sm on vm1, now in nsm" \
	in_ns nsm rdma link add sm type sroce netdev vm1
check "ip netns del nsm" ip netns del nsm
check "sm goes with the namespace" wait_for 60 not rdma dev show sm

# A netdev whose device is still being torn down gets a device in its new
# namespace at once.  A kernel ULP holds the teardown open: the in-kernel
# rdma_cm server (tests/kernel/sroce_cm_test.c) keeps its listener through
# DEVICE_REMOVAL, and rdma_cm waits for it until "stop".
devices() { sed -n 's/^device //p' /sys/kernel/debug/sroce/objects; }
cmt_ctl=/sys/kernel/debug/sroce_cm_test/ctl
held_add() {	# the old device still counted, a new one on its netdev
	[ "$(devices)" = "$1" ] && in_ns nsh rdma link add sh2 type sroce netdev vh1
}
check "namespaces nsh, nsk, veth vh0 (nsk) - vh1 (initial), sh on vh1, sk on vh0" eval \
	"ip netns add nsh && ip netns add nsk && veth_pair vh0 vh1 nsk - 84 &&
	rdma link add sh type sroce netdev vh1 &&
	in_ns nsk rdma link add sk type sroce netdev vh0"
check "sh has vh1's GID" wait_for 10 ns_gid "$(gid4_tail 10.84.0.2)" sh
check "an in-kernel rdma_cm listener on 10.84.0.2, through sh" \
	bash -c "modprobe sroce_cm_test && echo 'listen 10.84.0.2 18790' > $cmt_ctl"
ndevs=$(devices)
check "ip link set vh1 netns nsh" ip link set vh1 netns nsh
check "sh unregisters, and waits for the listener" \
	wait_for 30 not rdma dev show sh
check "rdma link add sh2 on vh1, now in nsh, while sh is still there" \
	held_add "$ndevs"
check "vh1's address again, in nsh (a move drops them)" \
	addr_up nsh vh1 84 2
check "sh2 has its GID" wait_for 10 ns_gid "$(gid4_tail 10.84.0.2)" sh2
# Both devices are on vh1: its packets must reach the new one (the old
# one's namespace is not vh1's any more).
check "rping sk (nsk) -> sh2 (nsh) while sh is held" \
	ns_rping 10.84.0.2 18791 nsh nsk
check "... sh was held through it" test "$(devices)" = "$((ndevs + 1))"
check "the listener stops, and sh goes" bash -c "echo stop > $cmt_ctl"
check "... sh is gone" wait_for 30 output_is "$ndevs" devices
check "rmmod sroce_cm_test" rmmod sroce_cm_test
check "sh2 stays" rdma dev show sh2
check "ip netns del nsh nsk" bash -c "ip netns del nsh && ip netns del nsk"
check "sh2 and sk go with the namespaces" wait_for 60 gone sh2 sk

# eth0 has no rtnl_link_ops: a dying namespace gives it back to the
# initial one, and the namespace's exit waits for its device.
check "a namespace nsp, eth0 moved there" bash -c \
	"ip netns add nsp && ip link set eth0 netns nsp && ip netns exec nsp ip link set eth0 up"
check "rdma link add sp on eth0 in nsp" \
	in_ns nsp rdma link add sp type sroce netdev eth0
check "UDP 4791 is open in nsp" port_open nsp
check "ip netns del nsp" ip netns del nsp
check "eth0 is back in the initial namespace" wait_for 60 ip link show eth0
check "sp is gone" wait_for 60 not rdma dev show sp
check "rdma link add sroce0 on eth0 again" rdma link add sroce0 type sroce netdev eth0
check "rdma link delete sroce0" rdma link delete sroce0

# --- Shared mode: two namespaces, a device in each -------------------------
check "namespaces ns1, ns2; veth va (ns1) - vb (ns2)" eval \
	"ip netns add ns1 && ip netns add ns2 && veth_pair va vb ns1 ns2 78"
check "rdma link add sa in ns1" in_ns ns1 rdma link add sa type sroce netdev va
check "rdma link add sb in ns2" in_ns ns2 rdma link add sb type sroce netdev vb
check "UDP 4791 is open in ns1" port_open ns1
check "UDP 4791 is open in ns2" port_open ns2
check "... and not in the initial namespace" not port_open -
gids_ab() {
	ns_gid "$(gid4_tail 10.78.0.1)" sa && ns_gid "$(gid4_tail 10.78.0.2)" sb &&
	ns_gid fd78:0000:0000:0000:0000:0000:0000:0001 sa &&
	ns_gid fd78:0000:0000:0000:0000:0000:0000:0002 sb
}
check "sa and sb have their GIDs" wait_for 10 gids_ab
ga=$(ns_gid "$(gid4_tail 10.78.0.1)" sa)
gb=$(ns_gid "$(gid4_tail 10.78.0.2)" sb)
ga6=$(ns_gid "fd78:0000:0000:0000:0000:0000:0000:0001" sa)
gb6=$(ns_gid "fd78:0000:0000:0000:0000:0000:0000:0002" sb)
check "ib_send_bw ns1 -> ns2" ns_perf 18910 ns2 sb "$gb" ns1 sa "$ga" 10.78.0.2 \
	ib_send_bw -s 65536 -n 100 -F
check "ib_write_bw ns2 -> ns1, IPv6 GIDs" ns_perf 18911 ns1 sa "$ga6" ns2 sb "$gb6" 10.78.0.1 \
	ib_write_bw -s 65536 -n 100 -F
check "ibv_ud_pingpong ns1 -> ns2" ns_perf 18912 ns2 sb "$gb" ns1 sa "$ga" 10.78.0.2 \
	ibv_ud_pingpong -n 50 -s 512
check "rping ns1 -> ns2 (rdma_cm)" ns_rping 10.78.0.2 18913 ns2 ns1
check "rping ns2 -> ns1 over IPv6" ns_rping fd78::1 18914 ns1 ns2
srv=(ib_write_bw -d sb -R -s 4096 -n "$(scaled 100)" -F -p 18915)
cli=(ib_write_bw -d sa -R -s 4096 -n "$(scaled 100)" -F -p 18915 10.78.0.2)
check "ib_write_bw -R (rdma_cm) ns1 -> ns2" ns_pair 18915 ns2 ns1
check "ip netns del ns1 (the veth pair goes)" ip netns del ns1
check "both devices go" wait_for 60 gone sa sb
check "ns2's socket closes with its last device" wait_for 30 not port_open ns2
ip netns del ns2

# --- rdma_rxe beside sroce --------------------------------------------------
check "no sroce socket in the initial namespace" wait_for 30 not port_open -
check "modprobe rdma_rxe (UDP 4791 of the initial namespace)" modprobe rdma_rxe
check "a namespace ns3, veth vs (ns3) - vr (initial)" eval \
	"ip netns add ns3 && veth_pair vs vr ns3 - 80"
check "rdma link add rxe0 on vr" rdma link add rxe0 type rxe netdev vr
check "rdma link add s3 in ns3, rdma_rxe loaded" \
	in_ns ns3 rdma link add s3 type sroce netdev vs
check_fails "rdma link add in the initial namespace is refused" \
	rdma link add sroce0 type sroce netdev eth0
check "... and says why" bash -c \
	"dmesg | grep -q 'cannot bind UDP port 4791 (IPv4) in this network namespace: -98, another RoCE stack (rdma_rxe?) holds it'"
gids_3r() { ns_gid "$(gid4_tail 10.80.0.1)" s3 && ns_gid "$(gid4_tail 10.80.0.2)" rxe0; }
check "s3 and rxe0 have their GIDs" wait_for 10 gids_3r
g3=$(ns_gid "$(gid4_tail 10.80.0.1)" s3)
gr=$(ns_gid "$(gid4_tail 10.80.0.2)" rxe0)
check "rping: sroce (ns3) to rdma_rxe (initial)" ns_rping 10.80.0.2 18920 default ns3
check "rping: rdma_rxe to sroce" ns_rping 10.80.0.1 18921 ns3 default
check "ib_send_bw: sroce to rdma_rxe" ns_perf 18922 default rxe0 "$gr" ns3 s3 "$g3" 10.80.0.2 \
	ib_send_bw -s 4096 -n 200 -F
check "rdma link delete rxe0, rmmod rdma_rxe" bash -c \
	"rdma link delete rxe0 && rmmod rdma_rxe"

# --- rmmod with devices in several namespaces -------------------------------
check "a second device in ns4" eval \
	"ip netns add ns4 && veth_pair v4 v5 ns4 - 82 && ip netns exec ns4 rdma link add s4 type sroce netdev v4"
check "a third in the initial namespace" rdma link add s5 type sroce netdev v5
check "rmmod sroce, devices in three namespaces" rmmod sroce
no_port() { ! port_open ns3 && ! port_open ns4 && ! port_open -; }
check "no UDP 4791 socket left in any namespace" no_port
check "ip netns del ns3 ns4" bash -c "ip netns del ns3 && ip netns del ns4"
unload_check
check "no namespace exit waited for a device" bash -c \
	"! dmesg | grep -q 'dying network namespace waits'"
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 1500
#
# Teardown under load: while perftest moves data over loopback, or while
# NVMe-oF (nvmet-rdma and nvme-rdma on one device) runs fio, the traffic is
# cut by SIGKILL of a perftest process, carrier down and up, rdma link
# delete, rmmod, and rdma link delete under NVMe-oF I/O.  Every step must
# end within its bound, every object must be gone, and the device must
# carry traffic again afterwards.  The device's removal never waits for
# the processes that use it (sroce_disassociate_ucontext()): sroce_orphan
# holds a context, objects and mapped rings while rdma link delete, rmmod
# and the removal of the netdev run, then checks what it is left with.
# make check runs one cycle of each; make teardown runs SROCE_ARG_CYCLES
# of them.
. tests/lib/vm.sh
. tests/lib/nvmeof.sh

objects() { grep -v '^cq ' /sys/kernel/debug/sroce/objects 2>/dev/null; }
stat() { rdma statistic show link sroce0/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }
addr=$(vm_ip 0)
cycles=${SROCE_ARG_CYCLES:-1}
port=18800

up() {
	modprobe sroce && rdma link add sroce0 type sroce netdev eth0 &&
		wait_for 10 sroce_gid "$(gid4_tail "$addr")"
}

# objects_back: the live objects are the baseline again (within 60 s).
objects_back() {
	wait_for 60 output_is "$base" objects && return 0
	echo "baseline: $(echo $base)"
	echo "now: $(objects | tr '\n' ' ')"
	uverbs_holders | sed 's/^/uverbs held by: /'
	return 1
}

# veth_up: sroce1 on sro0, one end of a veth pair, with its IPv4 GID.
veth_up() {
	ip link add sro0 type veth peer name sro1 &&
		ip addr add 10.78.0.1/24 dev sro0 &&
		ip link set sro0 up && ip link set sro1 up &&
		rdma link add sroce1 type sroce netdev sro0 &&
		wait_for 10 sroce_gid "$(gid4_tail 10.78.0.1)" sroce1
}

# moving: the device sent 200 more packets than when traffic started.
moving() { [ "$(stat tx_packets)" -gt $((tx0 + 200)) ]; }

# traffic: an ib_write_bw pair over loopback that runs for a minute;
# returns once data moves (pids in srv, cli).
traffic() {
	local g
	port=$((port + 1))
	g=$(sroce_gid "$(gid4_tail "$addr")")
	tx0=$(stat tx_packets)
	timeout -s KILL 300 ib_write_bw -d sroce0 -x "$g" -F -s 65536 -D 60 \
		-p "$port" > /tmp/srv.out 2>&1 &
	srv=$!
	wait_for 60 listening "$port" || return 1
	timeout -s KILL 300 ib_write_bw -d sroce0 -x "$g" -F -s 65536 -D 60 \
		-p "$port" "$addr" > /tmp/cli.out 2>&1 &
	cli=$!
	wait_for 120 moving
}

# stop: both perftest processes gone (SIGKILL), within 30 s.  The
# processes themselves: $srv and $cli are their timeout wrappers, and
# killing a wrapper leaves its child running.
stop() {
	local rc
	pkill -9 -x ib_write_bw
	kill -9 "$srv" "$cli" 2>/dev/null
	wait_for 30 not pgrep -x ib_write_bw
	rc=$?
	wait "$srv" "$cli" 2>/dev/null
	return "$rc"
}

# works: a short transfer over the device completes.
works() {
	local g
	port=$((port + 1))
	g=$(sroce_gid "$(gid4_tail "$addr")")
	timeout 120 ib_write_bw -d sroce0 -x "$g" -F -s 4096 -n 200 -p "$port" > /tmp/w.srv 2>&1 &
	wait_for 60 listening "$port" || return 1
	timeout 120 ib_write_bw -d sroce0 -x "$g" -F -s 4096 -n 200 -p "$port" "$addr" > /tmp/w.cli 2>&1 &&
		wait $!
}

# running CMD...: CMD ends within 60 s while the perftest processes still
# hold their contexts; then they are killed.
running() {
	local rc
	timeout 60 "$@" > /tmp/running.out 2>&1
	rc=$?
	pgrep -x ib_write_bw > /dev/null || diag "perftest had ended by itself"
	stop
	return "$rc"
}

# orphan_start DEV: sroce_orphan holds DEV until orphan_end (not in a
# subshell: check would close fd 7, which tells it to go on).
orphan_start() {
	rm -f /tmp/orphan.in
	mkfifo /tmp/orphan.in
	RDMAV_ALLOW_DISASSOC_DESTROY=1 timeout -s KILL 300 \
		"$SROCE_SRC/build/tests/sroce_orphan" "$1" \
		< /tmp/orphan.in > /tmp/orphan.tap 2>&1 &
	orphan=$!
	exec 7> /tmp/orphan.in
	wait_for 60 grep -q '^# ready' /tmp/orphan.tap
}

# orphan_alive: sroce_orphan still waits (the removal did not wait for it).
orphan_alive() { kill -0 "$orphan" && ! grep -q '^1\.\.' /tmp/orphan.tap; }

# orphan_end NAME: let sroce_orphan check what it was left with.
orphan_end() {
	local rc
	echo go >&7
	exec 7>&-
	wait "$orphan"
	rc=$?
	relay_tap "$1" /tmp/orphan.tap
	ok "$rc" "$1: sroce_orphan exits 0"
}

# no_objects: nothing of a removed device is left.
no_objects() { ! grep -v ' 0$' /sys/kernel/debug/sroce/objects; }

check "rdma link add sroce0" up
base=$(objects)
for ((c = 1; c <= cycles; c++)); do
	diag "cycle $c of $cycles"
	traffic
	ok $? "$c: perftest moves data over loopback"
	check "$c: SIGKILL of both perftest processes mid-transfer: they are gone" stop
	check "$c: after SIGKILL, every object is gone" objects_back
	check "$c: after SIGKILL, the device works" works

	if traffic; then
		ip link set eth0 down
		check "$c: carrier down mid-transfer: port DOWN" wait_for 10 \
			grep -q DOWN /sys/class/infiniband/sroce0/ports/1/state
		ip link set eth0 up
		check "$c: carrier up: port ACTIVE" wait_for 10 \
			grep -q ACTIVE /sys/class/infiniband/sroce0/ports/1/state
		stop
	else
		ok 1 "$c: traffic for the carrier case"
	fi
	check "$c: after carrier down/up, every object is gone" objects_back
	check "$c: after carrier down/up, the device works" works

	traffic
	check "$c: rdma link delete mid-transfer ends while perftest runs" \
		running rdma link delete sroce0
	check "$c: rdma link add again" up

	traffic
	check "$c: rdma link delete + rmmod mid-transfer end while perftest runs" \
		running bash -c "rdma link delete sroce0 && rmmod sroce"
	check "$c: modprobe and rdma link add again" up
	check "$c: after rmmod, the device works" works
	base=$(objects)

	# A process that holds the device and does not go.
	orphan_start sroce0
	ok $? "$c: sroce_orphan holds sroce0"
	check "$c: rdma link delete with a process holding sroce0 ends" \
		timeout 60 rdma link delete sroce0
	check "$c: ... and the process is still there" orphan_alive
	check "$c: every object of the removed device is gone" wait_for 30 no_objects
	orphan_end "$c: link delete"
	check "$c: rdma link add again" up
	orphan_start sroce0
	ok $? "$c: sroce_orphan holds sroce0"
	check "$c: rdma link delete + rmmod with a process holding sroce0 end" \
		timeout 60 bash -c "rdma link delete sroce0 && rmmod sroce"
	check "$c: ... and the process is still there" orphan_alive
	orphan_end "$c: rmmod"
	check "$c: modprobe and rdma link add again" up
	check "$c: a veth pair with sroce1 on one end" veth_up
	orphan_start sroce1
	ok $? "$c: sroce_orphan holds sroce1"
	check "$c: removing the netdev under sroce1 ends" \
		timeout 60 ip link del sro0
	check "$c: sroce1 is gone" wait_for 30 not test -e /sys/class/infiniband/sroce1
	check "$c: ... and the process is still there" orphan_alive
	orphan_end "$c: netdev removal"
	check "$c: after the removals, sroce0 works" works
	base=$(objects)

	# NVMe-oF: the device removed under the ULPs' I/O.
	check "$c: NVMe-oF target up" nvmet_up "$addr" ipv4
	check "$c: NVMe-oF target listens" wait_for 30 listening 4420
	check "$c: nvme connect over loopback" nvme_host_connect "$addr"
	timeout -s KILL 300 fio --name=load --filename="/dev/$(nvme_bdev)" \
		--direct=1 --ioengine=libaio --rw=randrw --bs=16k --iodepth=16 \
		--size=16M --time_based --runtime=120 > /tmp/fio.load 2>&1 &
	fio=$!
	tx0=$(stat tx_packets)
	check "$c: NVMe-oF I/O flows" wait_for 120 moving
	check "$c: rdma link delete under NVMe-oF I/O ends within 120 s" \
		timeout 120 rdma link delete sroce0
	check "$c: fio ends (its I/O fails)" wait_for 180 not pgrep -x fio
	pkill -9 -x fio
	kill -9 "$fio" 2>/dev/null
	wait "$fio" 2>/dev/null
	nvme disconnect -n "$NQN" > /dev/null 2>&1
	check "$c: nvme host gone" wait_for 60 output_is 0 nvme_ctrls
	check "$c: NVMe-oF target torn down" nvmet_down
	modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
	check "$c: no object left with the device gone" bash -c \
		"! grep -v ' 0$' /sys/kernel/debug/sroce/objects"
	check "$c: rdma link add again" up
	check "$c: after NVMe-oF removal, the device works" works
	base=$(objects)
done
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

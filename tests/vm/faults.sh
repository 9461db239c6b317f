#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 1200
#
# Fault injection: allocation failures where sroce allocates and publishes
# objects, so that every error unwind runs, and in the packet allocator
# under traffic.  The driver's knob fail_create (drivers/sroce/fault.c)
# fails the SQ, RQ, SRQ and CQ rings, MRs and the QP/MR index on every
# 1st, 2nd, 3rd and 7th call while the in-kernel test client runs;
# fail_packet fails every 50th packet while data moves; failslab fails one
# slab allocation at a sweep of points while the client loads.  Nothing
# may crash or warn, the live-object counters return to where they were,
# kmemleak (debug lane) finds nothing, and data moved while packets fail
# to allocate is still correct.  Needs CONFIG_FAULT_INJECTION_DEBUG_FS and
# FAILSLAB: the debug-kernel lane.
. tests/lib/vm.sh

knobs=/sys/kernel/debug/sroce
fs=/sys/kernel/debug/failslab
if [ ! -d $fs ]; then
	echo "ok 1 - fault injection # SKIP this kernel has no fault injection"
	echo "1..1"
	exit 0
fi

objects() { cat /sys/kernel/debug/sroce/objects; }
check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
check "the driver's knobs are there" test -d $knobs/fail_create -a -d $knobs/fail_packet
wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip 0)")")
before=$(objects)

# inject KNOB INTERVAL: fail every INTERVAL-th allocation behind KNOB.
inject() {
	local k=$knobs/$1
	echo 0 > "$k/verbose" && echo N > "$k/task-filter" &&
		echo "$2" > "$k/interval" && echo -1 > "$k/times" &&
		echo 100 > "$k/probability"
}
uninject() { echo 0 > "$knobs/$1/probability"; }

# The in-kernel client under injection: it loads, its checks may fail,
# it unloads, and everything it made is gone.  (Without its fills to the
# device limits: objects.sh has those.)
client_run() {
	modprobe sroce_test fill=0
	[ -d /sys/module/sroce_test ] && rmmod sroce_test
	wait_for 30 output_is "$before" objects
}

for every in 1 2 3 7; do
	check "inject" inject fail_create "$every"
	check "creation fails every $every call(s): client runs, objects freed" client_run
	[ "$before" = "$(objects)" ] || diag "after: $(objects | tr '\n' ' ')"
	uninject fail_create
done

# Data path: every 50th packet allocation fails while data moves.
integrity() {
	timeout 500 "$SROCE_SRC/build/tests/sroce_integrity" -d sroce0 -g "$g" -p 18900 > /tmp/isrv.out 2>&1 &
	local spid=$! rc
	timeout 480 "$SROCE_SRC/build/tests/sroce_integrity" -d sroce0 -g "$g" -p 18900 -n 1 127.0.0.1 > /tmp/icli.out 2>&1
	rc=$?
	wait "$spid" || rc=1
	grep -c '^ok' /tmp/icli.out | sed 's/^/# integrity checks passed: /'
	grep -v '^ok' /tmp/icli.out | tail -5 | sed 's/^/# /'
	return "$rc"
}
check "inject" inject fail_packet 50
check "data integrity while packet allocations fail" integrity
uninject fail_packet
check "objects back after the traffic" wait_for 30 output_is "$before" objects

# failslab: one slab allocation fails, at a sweep of points (space: the
# bytes allowed before the failure) while the in-kernel client loads.
echo Y > $fs/task-filter
echo 100 > $fs/probability
echo 1 > $fs/interval
echo 0 > $fs/verbose
for space in 0 1000 4000 16000 64000 256000 1000000; do
	echo 1 > $fs/times
	echo "$space" > $fs/space
	bash -c 'echo 1 > /proc/self/make-it-fail && exec modprobe sroce_test fill=0' > /dev/null 2>&1
	[ -d /sys/module/sroce_test ] && rmmod sroce_test
	check "failslab after $space bytes: objects freed" wait_for 30 output_is "$before" objects
done
echo 0 > $fs/probability

check "the client runs clean again" bash -c "modprobe sroce_test fill=0 && ! grep -q '^not ok' /sys/kernel/debug/sroce_test/sroce0 && rmmod sroce_test"
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

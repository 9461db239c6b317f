#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 600
#
# A hostile local user through verbs (Documentation/security.rst): the
# regression program tests/user/hostile.c (crafted inline data over SQ
# slots, zero-length and split SGEs, inline atomics and reads, bad keys,
# posts racing reset and Error, RNR on RDMA WRITE WITH IMMEDIATE, dereg_mr
# under a stuck WR), then a short seeded run of the verbs fuzzer
# (make fuzz-verbs runs it long).  Every object is gone afterwards, and the
# console must stay clean (the harness fails any kernel report).
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }

# run_tap NAME PROGRAM ARGS...: PROGRAM's TAP lines become ours.
run_tap() {
	local name=$1 rc
	shift
	timeout "${RUN_TAP_TIMEOUT:-300}" "$@" > "/tmp/$name.tap" 2> "/tmp/$name.err"
	rc=$?
	relay_tap "$name" "/tmp/$name.tap"
	tail -n 5 "/tmp/$name.err" | sed "s/^/# $name stderr: /"
	ok "$rc" "$name exits 0 (rc $rc)"
}

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
before=$(objects)

run_tap hostile "$SROCE_SRC/build/tests/sroce_hostile" sroce0
check "every object the hostile program made is gone" \
	wait_for 10 output_is "$before" objects

seed=${SROCE_ARG_SEED:-1}
ops=${SROCE_ARG_OPS:-$(scaled 3000)}
diag "fuzz-verbs: seed $seed, $ops operations per thread, 2 threads"
RUN_TAP_TIMEOUT=$((300 + ops / 20)) \
	run_tap fuzz-verbs "$SROCE_SRC/build/tests/sroce_fuzz_verbs" -d sroce0 \
	-s "$seed" -n "$ops" -t 2
check "every object the fuzzer made is gone" \
	wait_for 10 output_is "$before" objects

check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

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

# Mapped rings count against RLIMIT_MEMLOCK (drivers/sroce/mmap.c):
# cqs N ENTRIES [close-one-then-one-more] as an unprivileged user (nobody,
# no capabilities) or as root, with RLIMIT_MEMLOCK set by prlimit.  A CQ
# of 4096 entries has a ring of 49 pages (4096 completions of 48 bytes).
cqs() {
	python3 - "$@" <<-'EOF'
	import sys
	from pyverbs.device import Context
	from pyverbs.cq import CQ
	ctx = Context(name='sroce0')
	cqs = [CQ(ctx, int(sys.argv[2])) for _ in range(int(sys.argv[1]))]
	if len(sys.argv) > 3:
	    cqs.pop().close()
	    cqs.append(CQ(ctx, int(sys.argv[2])))
	EOF
}
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		--bounding-set=-all "$@"
}
chmod 0666 /dev/infiniband/uverbs*
export -f cqs
check_fails "RLIMIT_MEMLOCK 64 KiB: an unprivileged process cannot map a CQ of 4096 entries" \
	as_nobody prlimit --memlock=65536 bash -c 'cqs 1 4096'
check "RLIMIT_MEMLOCK 512 KiB: it maps two" \
	as_nobody prlimit --memlock=524288 bash -c 'cqs 2 4096'
check_fails "RLIMIT_MEMLOCK 512 KiB: not three (the rings add up)" \
	as_nobody prlimit --memlock=524288 bash -c 'cqs 3 4096'
check "RLIMIT_MEMLOCK 512 KiB: a destroyed CQ's ring is given back" \
	as_nobody prlimit --memlock=524288 bash -c 'cqs 2 4096 again'
check "RLIMIT_MEMLOCK 64 KiB: root (CAP_IPC_LOCK) maps one" \
	prlimit --memlock=65536 bash -c 'cqs 1 4096'
check "every object of the RLIMIT_MEMLOCK checks is gone" \
	wait_for 10 output_is "$before" objects

check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

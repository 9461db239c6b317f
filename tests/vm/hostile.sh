#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 600
#
# A hostile local user through verbs (Documentation/security.rst): the
# regression program tests/user/hostile.c (crafted inline data over SQ
# slots, zero-length and split SGEs, inline atomics and reads, bad keys,
# posts racing reset and Error, RNR on RDMA WRITE WITH IMMEDIATE, dereg_mr
# under a stuck WR), then short seeded runs of the verbs fuzzer, with
# mapped queues and over the uverbs commands (make fuzz-verbs runs it
# long).  Every object is gone afterwards, and the console must stay
# clean (the harness fails any kernel report).
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
# Again over the uverbs commands (no mapped queues): kernel-polled CQs,
# whose completions point to per-QP ghosts (cq.c).  Another seed.
diag "fuzz-verbs, SROCE_MAPPED=0: seed $((seed + 1)), $ops operations per thread"
SROCE_MAPPED=0 RUN_TAP_TIMEOUT=$((300 + ops / 20)) \
	run_tap fuzz-verbs-cmd "$SROCE_SRC/build/tests/sroce_fuzz_verbs" \
	-d sroce0 -s "$((seed + 1))" -n "$ops" -t 2
check "every object the fuzzer made over the commands is gone" \
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

# A ring mapped a second time outlives its CQ (tests/user/ringkeep.c):
# its pages must stay charged to the process's memory cgroup, or root,
# whom RLIMIT_MEMLOCK does not hold, could keep CQ after CQ's ring until
# the host runs out.  170 CQs of 32768 entries (1.5 MiB rings, 255 MiB)
# under a memory.max of 64 MiB: the cgroup's limit must stop it near 42,
# by a create failing with ENOMEM (the ring's pages) or by the cgroup's
# OOM killer (the page tables of its mappings are charged too, and those
# allocations do not fail).
cg=/sys/fs/cgroup
mountpoint -q $cg || mount -t cgroup2 none $cg 2>/dev/null
if ! grep -qw memory $cg/cgroup.controllers 2>/dev/null; then
	ok 0 "rings kept mapped after their CQs count against the memory cgroup # SKIP this kernel has no memory cgroup controller"
else
	echo +memory > $cg/cgroup.subtree_control 2>/dev/null
	mkdir -p $cg/sroce-rings
	echo 64M > $cg/sroce-rings/memory.max
	bash -c "echo \$\$ > $cg/sroce-rings/cgroup.procs &&
		exec timeout 300 $SROCE_SRC/build/tests/sroce_ringkeep sroce0 170 32768" \
		> /tmp/ringkeep.out 2>&1
	rc=$?
	kept=$(grep -c '^kept' /tmp/ringkeep.out)
	diag "ringkeep: rc $rc, kept $kept rings; $(grep -v '^kept' /tmp/ringkeep.out | tail -n 2 | tr '\n' ' ')"
	diag "memory.peak $(cat $cg/sroce-rings/memory.peak 2>/dev/null), events: $(tr '\n' ' ' < $cg/sroce-rings/memory.events)"
	check "rings kept mapped after their CQs count against the memory cgroup (kept $kept of 170, 64 MiB)" \
		test "$kept" -ge 10 -a "$kept" -lt 60
	oom_kills=$(awk '$1 == "oom_kill" { print $2 }' $cg/sroce-rings/memory.events)
	check "the cgroup's limit stopped it: a create failed (ENOMEM), or its OOM killer (rc $rc, oom_kill $oom_kills)" \
		test "$rc" = 0 -a "$(grep -c 'stopped: create .*: Cannot allocate memory' /tmp/ringkeep.out)" = 1 \
		-o "$rc" = 137 -a "${oom_kills:-0}" -ge 1
	wait_for 10 rmdir $cg/sroce-rings
fi
check "every object of the kept-rings check is gone" \
	wait_for 10 output_is "$before" objects

check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

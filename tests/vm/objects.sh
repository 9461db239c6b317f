#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 240
#
# Verbs objects from kernel space: the in-kernel test client
# (tests/kernel/sroce_test.c) runs the control path and its misuse cases
# on sroce0 and reports KTAP; every object it made must be gone after.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
before=$(objects)
diag "live objects before: $(echo $before)"
# The client fills the device to each limit: seconds here, too long under
# KASAN and kmemleak, where the debug lane leaves it out.
fill=1
if [ -e /sys/kernel/debug/kmemleak ]; then
	fill=0
	diag "debug kernel: the fills to the device limits are left to the stock kernel"
fi
# Its completions traced: a kernel QP's wr_id is a kernel address (its
# struct ib_cqe), which the trace must not print as a number.
tr=/sys/kernel/debug/tracing
: > $tr/trace
echo 1 > $tr/events/sroce/sroce_complete/enable
check "load the in-kernel test client" modprobe sroce_test fill=$fill
echo 0 > $tr/events/sroce/sroce_complete/enable
check "its completions are traced with wr_id 0 and the cqe hashed" bash -c \
	"grep -q 'sroce_complete: qpn=[0-9]* wr_id=0x0 cqe=0000' $tr/trace &&
	 ! grep -q 'cqe=ffff' $tr/trace"
results=/sys/kernel/debug/sroce_test/sroce0
check "the client ran on sroce0" grep -q "^KTAP" $results
# Re-emit the client's KTAP lines as ours.
while IFS= read -r line; do
	case "$line" in
	"ok "*)     ok 0 "kernel: ${line#ok * - }" ;;
	"not ok "*) ok 1 "kernel: ${line#not ok * - }" ;;
	"# "*)      diag "kernel: ${line#\# }" ;;
	esac
done < $results
rdma statistic show link sroce0/1 | sed "s/^/# /"
check "unload the test client" rmmod sroce_test
after=$(objects)
check "every object the client made is gone" test "$before" = "$after"
check "rdma link delete sroce0" rdma link delete sroce0
check "all counters zero without devices" bash -c \
	"! grep -v ' 0$' /sys/kernel/debug/sroce/objects"
check "rmmod sroce" rmmod sroce
unload_check
tap_done

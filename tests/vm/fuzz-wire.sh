#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 600
#
# The wire fuzzer's smoke run: tools/fuzz/fuzz-wire with a fixed seed and
# a small packet count (a couple of minutes under emulation) against
# build/tests/sroce_wire_target, real traffic (ibv_rc_pingpong) beside it
# on the same device.  fuzz-wire itself checks that the device still works
# afterwards (a fresh RC transfer, every byte checked; the port ACTIVE; the
# target's dereg and destroy in time; no dereg blocked meanwhile); then
# every object is gone and the module unloads clean.
#
# The long run, "make fuzz-wire", is tools/fuzz/fuzz-wire-vm.sh: it sets
# FUZZ_ARGS and FUZZ_TIMEOUT and sources this script.
. tests/lib/vm.sh

FUZZ_ARGS=${FUZZ_ARGS:--s 1 -n $(scaled 8000)}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-480}
objects() { cat /sys/kernel/debug/sroce/objects; }

fake_peer_up
before=$(objects)

# shellcheck disable=SC2086
timeout -k 10 "$((FUZZ_TIMEOUT * ${SROCE_TIMEOUT_SCALE:-1}))" \
	python3 "$SROCE_SRC/tools/fuzz/fuzz-wire" $FUZZ_ARGS > /tmp/fuzz-wire.txt 2>&1
rc=$?
cp /tmp/fuzz-wire.txt "$SROCE_OUT/fuzz-wire.txt" 2>/dev/null
# The summary (the whole log is fuzz-wire.txt in the VM's result directory).
grep -v ' packets, .* steps, .* QPs reset ' /tmp/fuzz-wire.txt | tail -n 80 | sed 's/^/# /'
ok "$rc" "fuzz-wire $FUZZ_ARGS: the device works after it, the target never hung (rc $rc)"
check "no target or traffic process is left" \
	bash -c "! pgrep -x 'sroce_wire_targ|ibv_rc_pingpong|sroce_integrity'"
check "every object it made is gone" test "$before" = "$(objects)"
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 120
#
# The KUnit suites built into sroce.ko (drivers/sroce/kunit.c) run when the
# module loads on a kernel with KUnit (the debug kernel); elsewhere there is
# nothing to run and the test says so.
. tests/lib/vm.sh

if [ ! -d /sys/module/kunit ]; then
	echo "ok 1 - KUnit suites # SKIP this kernel has no KUnit"
	echo "1..1"
	exit 0
fi
check "modprobe sroce (runs its KUnit suites)" modprobe sroce
n=0
while IFS= read -r line; do
	case "$line" in
	"ok "*)     ok 0 "kunit: ${line#ok * }"; n=$((n + 1)) ;;
	"not ok "*) ok 1 "kunit: ${line#not ok * }"; n=$((n + 1)) ;;
	esac
done < <(dmesg | sed -n 's/^\[ *[0-9.]*\]     \(\(not \)\{0,1\}ok [0-9]* sroce_.*\)/\1/p')
check "KUnit cases ran" test "$n" -gt 0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

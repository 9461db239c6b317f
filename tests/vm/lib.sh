# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Helpers for the scripts that run inside a test VM (see tools/vm/run).
# Each script prints TAP lines ("ok N - what" / "not ok N - what") on stdout;
# tools/vm/run merges the VMs' results into the suite's KTAP output.
#
# Cross-host synchronisation is explicit: vm_barrier NAME returns when every
# VM of the run has reached NAME, vm_put/vm_get pass small values between
# VMs.  Both go through a directory the host shares with all VMs, so no step
# ever relies on a sleep.

VM_ID=${SROCE_VM_ID:-0}
VM_COUNT=${SROCE_VM_COUNT:-1}
SHARED=${SROCE_SHARED:-/tmp}
_tap_n=0
_tap_fail=0

# The addresses of the private test link.
vm_ip() { echo "10.77.0.$(($1 + 1))"; }
vm_ip6() { echo "fd77::$(($1 + 1))"; }

ok() {		# ok RESULT DESCRIPTION: RESULT is an exit status
	_tap_n=$((_tap_n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $_tap_n - $2"
	else
		echo "not ok $_tap_n - $2"
		_tap_fail=$((_tap_fail + 1))
	fi
}

# check DESCRIPTION CMD...: run CMD, its output goes to the diagnostics.
check() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	ok "$rc" "$desc"
	[ "$rc" -eq 0 ] || printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	return "$rc"
}

# check_fails DESCRIPTION CMD...: CMD must fail.
check_fails() {
	local desc=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then ok 0 "$desc"; else ok 1 "$desc"; fi
	printf '%s\n' "$out" | tail -n 3 | sed 's/^/# output: /'
	[ "$rc" -ne 0 ]
}

diag() { echo "# $*"; }

# not CMD...: succeeds when CMD fails (for check and wait_for).
not() { ! "$@"; }

# wait_for SECONDS CMD...: poll CMD until it succeeds (a state change the
# kernel makes asynchronously), at most SECONDS.
wait_for() {
	local t=$(($1 * 10))
	shift
	while ! "$@" >/dev/null 2>&1; do
		t=$((t - 1))
		[ "$t" -gt 0 ] || return 1
		sleep 0.1
	done
}

vm_barrier() {	# vm_barrier NAME [SECONDS]
	local name=$1 t=$((${2:-120} * 10)) i n
	: > "$SHARED/barrier.$name.$VM_ID"
	while :; do
		n=0
		for ((i = 0; i < VM_COUNT; i++)); do
			[ -e "$SHARED/barrier.$name.$i" ] && n=$((n + 1))
		done
		[ "$n" -eq "$VM_COUNT" ] && return 0
		t=$((t - 1))
		[ "$t" -gt 0 ] || { diag "barrier $name timed out"; return 1; }
		sleep 0.1
	done
}

vm_put() { echo "$2" > "$SHARED/val.$1.tmp" && mv "$SHARED/val.$1.tmp" "$SHARED/val.$1"; }
vm_get() {	# vm_get NAME [SECONDS]: wait for a value put by another VM
	local t=$((${2:-120} * 10))
	while [ ! -e "$SHARED/val.$1" ]; do
		t=$((t - 1))
		[ "$t" -gt 0 ] || return 1
		sleep 0.1
	done
	cat "$SHARED/val.$1"
}

tap_done() {
	echo "1..$_tap_n"
	[ "$_tap_fail" -eq 0 ]
}

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
# The bound is wall-clock time: under emulation CMD itself can take long.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || return 1
		vm_nap
	done
}

# relay_tap PREFIX FILE: the TAP lines of a program's output (FILE) become
# this script's, prefixed; its other lines become diagnostics.
relay_tap() {
	local line
	while IFS= read -r line; do
		case "$line" in
		"ok "*)     ok 0 "$1: ${line#ok * - }" ;;
		"not ok "*) ok 1 "$1: ${line#not ok * - }" ;;
		"1.."*)     ;;
		*)          diag "$1: $line" ;;
		esac
	done < "$2"
}

# fake_peer_up: sroce0 on eth0 with its GIDs, and static neighbours for
# the fictitious peer the wire tests play (10.77.0.99, fd77::99: no host
# behind them).
fake_peer_up() {
	check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
	wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
	wait_for 10 sroce_gid "fd77:0000:0000:0000:0000:0000:0000:0001"
	check "a static neighbour for the fake peer 10.77.0.99" \
		ip neigh add 10.77.0.99 lladdr 52:54:00:77:00:99 dev eth0 nud permanent
	check "a static neighbour for the fake peer fd77::99" \
		ip -6 neigh add fd77::99 lladdr 52:54:00:77:00:99 dev eth0 nud permanent
	# Its packets are injected through lo, which sroce refuses by default.
	check "packets that come in on lo are refused at load (debugfs rx_lo N)" \
		grep -qx N /sys/kernel/debug/sroce/rx_lo
	check "packets that come in on lo let in (debugfs rx_lo)" \
		sh -c "echo 1 > /sys/kernel/debug/sroce/rx_lo"
}

# output_is VALUE CMD...: CMD prints VALUE.  For wait_for, which must run
# CMD on every poll: "wait_for 9 test X = $(cmd)" would expand $(cmd)
# once, before the first poll.
output_is() {
	local want=$1
	shift
	[ "$("$@")" = "$want" ]
}

# objects_are WANT [SECONDS]: wait (default 30 s) until sroce's object
# counts are WANT; if they never are, print what is left and which processes
# hold a uverbs device.
objects_are() {
	wait_for "${2:-30}" output_is "$1" cat /sys/kernel/debug/sroce/objects &&
		return 0
	echo "want: $(echo $1)"
	echo "have: $(tr '\n' ' ' < /sys/kernel/debug/sroce/objects)"
	uverbs_holders | sed 's/^/uverbs held by: /'
	return 1
}

# vm_nap: a tenth of a second without a fork.  Under emulation a fork and
# exec of sleep(1) costs tens of milliseconds of CPU, so a VM polling with
# it while the other VM runs a benchmark took a large share of the host's
# CPU from the run it waited for.  read -t on a pipe this shell holds open
# at both ends blocks for the timeout and forks nothing.
vm_nap() {
	[ -n "${_nap_fd:-}" ] || exec {_nap_fd}<> <(:)
	read -r -t 0.1 -u "$_nap_fd" _ || :
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
		vm_nap
	done
}

vm_put() { echo "$2" > "$SHARED/val.$1.tmp" && mv "$SHARED/val.$1.tmp" "$SHARED/val.$1"; }
vm_peek() { cat "$SHARED/val.$1" 2> /dev/null; }	# a value put, or nothing
vm_get() {	# vm_get NAME [SECONDS]: wait for a value put by another VM
	local t=$((${2:-120} * 10))
	while [ ! -e "$SHARED/val.$1" ]; do
		t=$((t - 1))
		[ "$t" -gt 0 ] || return 1
		vm_nap
	done
	cat "$SHARED/val.$1"
}

dmesg_has() { dmesg | grep -q -- "$1"; }

# unload_check: every script's last step.  rmmod sroce (unless a step
# before did), whose exit reports each object type still live ("sroce:
# leak", which also fails the run's kernel log check in tools/vm/run).
unload_check() {
	if [ -d /sys/module/sroce ]; then
		check "rmmod sroce" rmmod sroce
	fi
	check "no leak reported at unload" not dmesg_has "sroce: leak"
}

tap_done() {
	echo "1..$_tap_n"
	[ "$_tap_fail" -eq 0 ]
}

# The index of sroce0's GID whose text ends with $1 (sysfs spelling).
sroce_gid() {
	local f
	# One grep over the table (1024 entries): a cat per entry took
	# minutes on the debug kernel.  Empty entries do not read (-s).
	f=$(grep -ls -- "$1\$" /sys/class/infiniband/${2:-sroce0}/ports/1/gids/* |
		head -n 1)
	[ -n "$f" ] && basename "$f"
}

# The sysfs spelling of the IPv4-mapped GID tail of an address: 0a4d:0001.
gid4_tail() {
	local IFS=.
	set -- $1
	printf 'ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

# A server listens on port $1: TCP, or an rdma_cm ID in state LISTEN.
listening() {
	ss -ltnH "sport = :$1" | grep -q . ||
		rdma resource show cm_id 2>/dev/null | grep "state LISTEN" |
		grep -q ":$1 "
}

# The last result row of a perftest run (numbers only) and a sanity check
# of its figure: column $2 must be a positive number.
perf_row() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+/ { l = $0 } END { print l }' "$1"; }
# iperf3's Mbit/s (10^6 bits) on stdin, one a line, as perftest's MB/s
# (2^20 bytes), so the benchmarks compare the stacks in one unit.
mbit_to_mb() { awk '{ printf "%.2f\n", $1 * 1e6 / 8 / 1048576 }'; }
perf_plausible() {
	local row
	# The debug-kernel lane (timeouts scaled) checks correctness, not
	# figures: perftest's clock calibration fails there too often.
	[ "${SROCE_TIMEOUT_SCALE:-1}" -gt 1 ] && return 0
	row=$(perf_row "$1")
	[ -n "$row" ] && awk -v c="$2" '{ exit !($c > 0) }' <<< "$row"
}

# scaled N: N, or a fifth of it (at least 5) in the debug-kernel lane, for
# repetition counts: every path still runs under KASAN and lockdep.
scaled() {
	if [ "${SROCE_TIMEOUT_SCALE:-1}" -gt 1 ]; then
		echo $(($1 / 5 > 5 ? $1 / 5 : 5))
	else
		echo "$1"
	fi
}

# The debug-kernel lane (timeouts scaled) runs perftest with a tenth of the
# iterations (at least 5): every code path still runs under KASAN and
# lockdep, in a time CI can afford.  Sets the array perf_args.
perf_scale_args() {
	local a prev=
	perf_args=()
	for a in "$@"; do
		if [ "$prev" = -n ] && [ "${SROCE_TIMEOUT_SCALE:-1}" -gt 1 ]; then
			a=$((a / 10 > 5 ? a / 10 : 5))
		fi
		perf_args+=("$a")
		prev=$a
	done
}

# perf_local PORT COL PROG ARGS...: a perftest (or any client/server pair
# that takes -p PORT and a server name) with server and client on this host.
# COL is the result column that must be a positive figure (0: none).  The
# client connects to PERF_HOST (default 127.0.0.1; rdma_cm needs an address
# of the device's netdev).
perf_local() {
	local port=$1 col=$2 spid crc src try raced
	shift 2
	perf_scale_args "$@"
	set -- "${perf_args[@]}"
	for try in 1 2 3; do
		timeout 300 "$@" -p "$port" > /tmp/srv.out 2> /tmp/srv.err &
		spid=$!
		wait_for 30 "${PAIR_READY:-listening}" "$port"
		timeout 240 "$@" -p "$port" "${PERF_HOST:-127.0.0.1}" > /tmp/cli.out 2> /tmp/cli.err
		crc=$?
		raced=
		if [ "$crc" -ne 0 ] && cm_raced /tmp/cli.err; then
			raced=1
			kill "$spid" 2> /dev/null	# it waits for ever
		fi
		wait "$spid"
		src=$?
		if [ -n "$raced" ] && [ "$try" -lt 3 ]; then
			diag "perftest's client connected before its server listened (cm_raced); run again"
			port=$((port + 1000))
			continue
		fi
		if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
			echo "client rc $crc, server rc $src"
			sed 's/^/srv: /' /tmp/srv.err | tail -8
			sed 's/^/srv: /' /tmp/srv.out | tail -4
			sed 's/^/cli: /' /tmp/cli.err | tail -8
			sed 's/^/cli: /' /tmp/cli.out | tail -4
			return 1
		fi
		[ "$col" = 0 ] && return 0
		diag "$* : $(perf_row /tmp/cli.out)"
		perf_plausible /tmp/cli.out "$col" && return 0
		# A zero figure from a run that completed every WR is
		# perftest's clock calibration failing under emulation (its
		# rdtsc/gettimeofday fit): measure once more.
		diag "zero figure: perftest's clock calibration; run again"
		port=$((port + 1000))
	done
	return 1
}

# cm_diag [NETNS...]: after a failed rdma_cm test, what each device's
# ib_cm sent and received (non-zero counters: who sent a DREQ, REJ or
# retries), sroce's own counters and the kernel's last messages, seen
# from each namespace given (none: the current one).
cm_diag() {
	local ns
	for ns in "${@:-}"; do
		# shellcheck disable=SC2016 # expanded by the inner shell
		${ns:+ip netns exec "$ns"} sh -c '
		for f in /sys/class/infiniband/*/ports/*/cm_*/*; do
			[ "$(cat "$f" 2> /dev/null || echo 0)" != 0 ] &&
				echo "cm ${f#/sys/class/infiniband/} $(cat "$f")"
		done
		rdma statistic show' 2>&1 | sed "s/^/# ${ns:-here}: /"
	done
	dmesg | tail -5 | sed 's/^/# dmesg: /'
}

# cm_raced ERRFILE: perftest's client (-R) was refused its data connection
# because its server did not listen yet.  perftest 4.5-0.17 connects the
# data QPs right after the handshake on its control connection, while its
# server only then calls rdma_listen(): ib_cm answers such a REQ with a REJ,
# "invalid service ID" (reason 8).  perftest means to retry, but its retry
# uses the rdma_cm IDs it has just destroyed and dies in librdmacm (fixed
# upstream by "perftest: Fix crashes and logical flaws in RDMA CM connection
# retry").  The server then waits for a connection that never comes.  Seen
# on a loaded CI host; any RDMA device does the same.
cm_raced() { grep -q 'RDMA_CM_EVENT_REJECTED; error: 8\.' "$1"; }

# kill_tree PID: PID and every process under it, the deepest first.
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do
		kill_tree "$c"
	done
	kill "$1" 2> /dev/null
}

# uverbs_holders: the processes that hold a uverbs device open (for a
# diagnostic when objects are left).
uverbs_holders() {
	local f
	for f in /proc/[0-9]*/fd/*; do
		case $(readlink "$f" 2> /dev/null) in
		/dev/infiniband/uverbs*) f=${f#/proc/}; f=${f%%/*}
			echo "$f $(tr '\0' ' ' < "/proc/$f/cmdline")" ;;
		esac
	done | sort -u
}

# vm_pair PORT SERVER CLIENT: run the command SERVER PORT on VM 0 and, once
# a server listens on PORT (TCP or rdma_cm; or once the command PAIR_READY
# PORT succeeds), CLIENT PORT on VM 1.  Both VMs
# call it alike and return the same status; pair_src and pair_crc hold the
# two exit statuses, /tmp/{srv,cli}.{out,err} the output on each VM.  The
# client's status is "zero" when PAIR_FIGURE names a column of the perftest
# result that is not a positive figure.
vm_pair() {
	local _port=$1 _srv=$2 _cli=$3 _spid
	if [ "$VM_ID" = 0 ]; then
		$_srv "$_port" > /tmp/srv.out 2> /tmp/srv.err &
		_spid=$!
		# Under a loaded emulator a server can take long to listen.
		wait_for 120 "${PAIR_READY:-listening}" "$_port" ||
			diag "server not ready on port $_port after 120 s"
		vm_put "ready.$_port" 1
		# The server ends, or the client says it never will (see
		# cm_raced below): then it is stopped.
		while kill -0 "$_spid" 2> /dev/null; do
			if [ "$(vm_peek "cli.$_port")" = raced ]; then
				# The server runs in a subshell: a plain kill
				# would leave the program (and its objects).
				kill_tree "$_spid"
				break
			fi
			vm_nap
		done
		wait "$_spid"
		pair_src=$?
		vm_put "srv.$_port" "$pair_src"
		pair_crc=$(vm_get "cli.$_port" 300) || pair_crc=timeout
	else
		vm_get "ready.$_port" 300 > /dev/null
		$_cli "$_port" > /tmp/cli.out 2> /tmp/cli.err
		pair_crc=$?
		if [ "$pair_crc" = 0 ] && [ "${PAIR_FIGURE:-0}" != 0 ]; then
			diag "${perf_args[*]:-$_cli} : $(perf_row /tmp/cli.out)"
			perf_plausible /tmp/cli.out "$PAIR_FIGURE" || pair_crc=zero
		fi
		[ "$pair_crc" != 0 ] && cm_raced /tmp/cli.err && pair_crc=raced
		vm_put "cli.$_port" "$pair_crc"
		pair_src=$(vm_get "srv.$_port" 300) || pair_src=timeout
	fi
	[ "$pair_crc" = 0 ] && [ "$pair_src" = 0 ] && return 0
	echo "client rc $pair_crc, server rc $pair_src"
	# A program killed by a signal: where (the library) it faulted.
	dmesg | grep -E 'segfault at|traps:|general protection' | tail -n 2
	# stderr apart: stdout is flushed only at exit
	if [ "$VM_ID" = 0 ]; then
		sed 's/^/srv: /' /tmp/srv.err | tail -8
		sed 's/^/srv: /' /tmp/srv.out | tail -4
	else
		sed 's/^/cli: /' /tmp/cli.err | tail -8
		sed 's/^/cli: /' /tmp/cli.out | tail -4
	fi
	return 1
}

# perf_pair PORT COL PROG ARGS...: like perf_local, with the server on VM 0
# and the client on VM 1 (see vm_pair).
_perf_srv() { timeout 300 "${perf_args[@]}" -p "$1"; }
_perf_cli() { timeout 240 "${perf_args[@]}" -p "$1" "$(vm_ip 0)"; }
perf_pair() {
	local port=$1 col=$2
	shift 2
	perf_scale_args "$@"
	for try in 1 2 3; do
		PAIR_FIGURE=$col vm_pair "$port" _perf_srv _perf_cli && return 0
		if [ "$pair_crc" = zero ] && [ "$pair_src" = 0 ]; then
			# A zero figure from a run that completed every WR is
			# perftest's clock calibration failing under emulation.
			diag "zero figure: perftest's clock calibration; run again"
		elif [ "$pair_crc" = raced ]; then
			diag "perftest's client connected before its server listened (cm_raced); run again"
		else
			return 1
		fi
		port=$((port + 1000))
	done
	return 1
}

# integrity_pair PORT ARGS...: tests/user/integrity.c between the VMs (server
# VM 0, client VM 1) on device $DEV (default sroce0), GID index $g.  The
# client retries its TCP connection until the server is up.
integrity_pair() {
	local port=$1 rc
	shift
	if [ "$VM_ID" = 0 ]; then
		timeout 600 "$SROCE_SRC/build/tests/sroce_integrity" -d "${DEV:-sroce0}" -g "$g" -p "$port" "$@"
		return
	fi
	timeout 580 "$SROCE_SRC/build/tests/sroce_integrity" -d "${DEV:-sroce0}" -g "$g" -p "$port" "$@" "$(vm_ip 0)" > /tmp/icli.out 2>&1
	rc=$?
	grep -c '^ok' /tmp/icli.out | sed 's/^/integrity checks passed: /'
	grep -v '^ok' /tmp/icli.out | tail -5
	return "$rc"
}

# stack_up sroce|rxe: the RDMA device of that stack on eth0, as DEV, with
# its IPv4 and IPv6 GID indexes in g and g6 (sroce and rdma_rxe both bind
# UDP 4791: one at a time per host).  stack_down sroce|rxe undoes it.
stack_up() {	# stack_up sroce|rxe: the device, as DEV, with its GIDs
	if [ "$1" = sroce ]; then
		DEV=sroce0
		check "$1: rdma link add" rdma link add sroce0 type sroce netdev eth0
	else
		DEV=rxe0
		check "$1: rdma link add" bash -c "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0"
	fi
	wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" "$DEV"
	wait_for 10 sroce_gid "fd77:0000:0000:0000:0000:0000:0000:000$((VM_ID + 1))" "$DEV"
	g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")" "$DEV")
	g6=$(sroce_gid "fd77:0000:0000:0000:0000:0000:0000:000$((VM_ID + 1))" "$DEV")
}

stack_down() {	# stack_down sroce|rxe
	check "$1: rdma link delete" rdma link delete "$DEV"
	if [ "$1" = sroce ]; then
		check "$1: rmmod" rmmod sroce
	else
		check "$1: rmmod" rmmod rdma_rxe
	fi
}

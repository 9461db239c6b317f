#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 1500
#
# Wire interoperability with the in-kernel rdma_rxe: one VM runs sroce, the
# other rdma_rxe, then the other way round, so sroce is server once and
# client once for every run: rdma-core pingpongs (RC, UD, IPv4, IPv6),
# perftest send/write/read/atomic bandwidth and send latency at MTU 1024
# (and write/read at 4096, up to 1 MiB), rping -V, perftest over rdma_cm,
# the integrity tool clean and under 1% netem loss, and NVMe-oF with the
# target on one stack and the host on the other.
. tests/lib/vm.sh
. tests/lib/nvmeof.sh

srv=$(vm_ip 0)

interop_io() {	# on the NVMe-oF host
	check "$1: NVMe-oF fio 4 KiB, depth 16, verified" fio_verify 4k 16
	check "$1: NVMe-oF fio 128 KiB, depth 4, verified" fio_verify 128k 4
}

rping_srv() { timeout 200 rping -s -a "$srv" -p "$1" -C "$(scaled 50)" -S 4096 -V; }
rping_cli() { timeout 180 rping -c -a "$srv" -p "$1" -C "$(scaled 50)" -S 4096 -V; }

# phase NAME P: VM 0 runs stack $1 (the servers), VM 1 the other; ports
# from P.
phase() {
	local mine other tag args
	if [ "$VM_ID" = 0 ]; then mine=$1; else mine=$([ "$1" = sroce ] && echo rxe || echo sroce); fi
	tag="server $1"
	p=$2
	stack_up "$mine"
	vm_barrier "$1-up"
	# A packet trace of a few exchanges, seen from VM 1 ("out": VM 1's
	# stack, "in": VM 0's), for Documentation/interop.rst.
	if [ "$VM_ID" = 1 ]; then
		"$SROCE_SRC/tools/roce-trace" eth0 > "$SHARED/trace-server-$1.txt" 2>&1 &
		tracer=$!
		wait_for 60 grep -q tracing "$SHARED/trace-server-$1.txt"
	fi
	vm_barrier "$1-tracing"
	check "$tag: traced: ibv_rc_pingpong 4 KiB x 3" perf_pair $((p + 40)) 0 ibv_rc_pingpong -d "$DEV" -g "$g" -n 3 -s 4096
	check "$tag: traced: ib_read_bw 8 KiB x 5" perf_pair $((p + 41)) 0 ib_read_bw -d "$DEV" -x "$g" -F -s 8192 -n 5
	check "$tag: traced: ib_atomic_bw x 5" perf_pair $((p + 42)) 0 ib_atomic_bw -d "$DEV" -x "$g" -F -n 5
	check "$tag: traced: ibv_ud_pingpong x 2" perf_pair $((p + 43)) 0 ibv_ud_pingpong -d "$DEV" -g "$g" -n 2 -s 64
	if [ "$VM_ID" = 1 ]; then
		kill "$tracer"
		wait "$tracer"
		diag "traced $(grep -c . "$SHARED/trace-server-$1.txt") packets"
	fi
	# (ibv_rc_pingpong over IPv4: the traced run above.)
	check "$tag: ibv_rc_pingpong over IPv6" perf_pair $((p + 2)) 0 ibv_rc_pingpong -d "$DEV" -g "$g6" -n 50
	check "$tag: ibv_ud_pingpong" perf_pair $((p + 3)) 0 ibv_ud_pingpong -d "$DEV" -g "$g" -n 100 -s 512
	# (READ of 64 KiB: at MTU 4096 below.)
	for args in "ib_send_bw -s 65536 -n 100" "ib_write_bw -s 1048576 -n 5" \
		    "ib_read_bw -s 1048576 -n 5"; do
		p=$((p + 1))
		check "$tag: $args" perf_pair $((p + 10)) 4 ${args%% *} -d "$DEV" -x "$g" -F ${args#* }
	done
	check "$tag: ib_atomic_bw -n 200" perf_pair $((p + 20)) 5 ib_atomic_bw -d "$DEV" -x "$g" -F -n 200
	check "$tag: ib_send_lat -s 64" perf_pair $((p + 21)) 3 ib_send_lat -d "$DEV" -x "$g" -F -s 64 -n 100
	check "$tag: ib_send_bw -R (rdma_cm)" perf_pair $((p + 22)) 4 ib_send_bw -d "$DEV" -R -F -s 65536 -n 100
	check "$tag: rping -V" vm_pair $((p + 23)) rping_srv rping_cli
	check "$tag: data integrity, all opcodes" integrity_pair $((p + 24)) -n 1

	check "$tag: eth0 MTU 9000" ip link set eth0 mtu 9000
	vm_barrier "$1-jumbo"
	check "$tag: MTU 4096: ib_write_bw -s 1048576" perf_pair $((p + 25)) 4 ib_write_bw -d "$DEV" -x "$g" -F -m 4096 -s 1048576 -n 5
	check "$tag: MTU 4096: ib_read_bw -s 65536" perf_pair $((p + 26)) 4 ib_read_bw -d "$DEV" -x "$g" -F -m 4096 -s 65536 -n 100
	check "$tag: eth0 MTU 1500" ip link set eth0 mtu 1500
	vm_barrier "$1-mtu1500"

	check "$tag: netem loss 1%" tc qdisc replace dev eth0 root netem loss 1%
	vm_barrier "$1-loss"
	check "$tag: data integrity with 1% loss" integrity_pair $((p + 27)) -n 1
	check "$tag: netem off" tc qdisc del dev eth0 root
	vm_barrier "$1-noloss"

	# NVMe-oF: the target on VM 0's stack, the host on VM 1's.
	nvme_pair "server-$1" interop_io
	vm_barrier "$1-done" 900
	stack_down "$mine"
}

phase sroce 19400
phase rxe 19500
unload_check
tap_done

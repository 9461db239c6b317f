#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 1500
#
# Where the time goes (make profile): perf inside both VMs while perftest
# runs a 64 KiB RDMA WRITE stream and a 64 B SEND stream, over sroce, then
# over rdma_rxe for reference.  perf samples cpu-clock (TCG has no PMU)
# on every CPU with call graphs; each VM writes the flat profile (self
# time per symbol, kernel and user) of each run to
# $SHARED/profile-STACK-RUN-vmN.txt.  A measurement, not a test.
# SROCE_ARG_PROFILE_STACKS (make profile STACKS=sroce,rxe) chooses the stacks,
# SROCE_ARG_PROFILE_SECONDS each run's length (default 20),
# SROCE_ARG_PROFILE_PERF=0 (make profile PERF=0) skips perf: timelines only.
# SROCE_ARG_PROFILE_FUNCS=1 (make profile FUNCS=1) runs only the function
# profile below, of the WRITE stream, the READ ping and the READ stream.
#
# Then a timeline of the same two streams, of a 64 KiB READ stream and of
# a 64 B READ ping-pong
# (ib_read_lat) from tracepoints (the trace clock, not a sampling timer):
# net:net_dev_xmit, net:netif_receive_skb, net:napi_gro_receive_entry,
# power:cpu_idle on both stacks, sroce:* on sroce, system calls and
# interrupts for the ping, TIMELINE_SECONDS in the middle of each run, to
# $SHARED/trace-STACK-RUN-vmN.txt for tools/bench/trace-report.
. tests/lib/vm.sh

PERF_SECONDS=${SROCE_ARG_PROFILE_SECONDS:-20}
TIMELINE_SECONDS=3
TRACING=/sys/kernel/debug/tracing
SROCE_ARG_PROFILE_STACKS=${SROCE_ARG_PROFILE_STACKS:-sroce,rxe}

# profile STACK RUN PORT COL ARGS...: perftest under perf on both VMs.
profile() {
	local stack=$1 run=$2 port=$3 col=$4 pid out
	shift 4
	out=$SHARED/profile-$stack-$run-vm$VM_ID.txt
	vm_barrier "prof-$stack-$run"
	perf record -q -e cpu-clock -F 997 -a -g -o "/tmp/perf-$run.data" \
		> /tmp/perf-rec.out 2>&1 &
	pid=$!
	sleep 1
	if perf_pair "$port" "$col" "$@" -d "$DEV" -x "$g" -F; then
		[ "$VM_ID" = 1 ] && diag "$stack $run: $(perf_row /tmp/cli.out | awk -v c="$col" '{ print $c }')"
	else
		diag "$stack $run: perftest failed"
	fi
	kill -INT "$pid"
	wait "$pid"
	{
		echo "# $stack $run, VM $VM_ID: $*"
		perf report -q -i "/tmp/perf-$run.data" --no-children \
			--sort dso,sym --percent-limit 0.5 -g none 2>/dev/null |
			head -60
	} > "$out"
	check "$stack $run: a profile in $(basename "$out")" test -s "$out"
	rm -f "/tmp/perf-$run.data"
}

# timeline STACK RUN PORT COL ARGS...: perftest with tracepoints recorded
# for TIMELINE_SECONDS once the stream has run for 5 s.  A RUN named *lat
# is a ping-pong of -n iterations (its ARGS) and also records system calls
# and interrupts: the steps of one ping (trace-report).
timeline() {
	local stack=$1 run=$2 port=$3 col=$4 pid e out len
	shift 4
	len=(-D $((TIMELINE_SECONDS + 10)))
	case $run in *lat) len=() ;; esac
	out=$SHARED/trace-$stack-$run-vm$VM_ID.txt
	echo 0 > $TRACING/tracing_on
	echo 8192 > $TRACING/buffer_size_kb
	: > $TRACING/set_event
	for e in net:net_dev_xmit net:netif_receive_skb \
		 net:napi_gro_receive_entry power:cpu_idle; do
		echo "$e" >> $TRACING/set_event
	done
	[ "$stack" = sroce ] && echo 'sroce:*' >> $TRACING/set_event
	if [ ${#len[@]} = 0 ]; then
		echo raw_syscalls:sys_enter >> $TRACING/set_event
		echo irq:irq_handler_entry >> $TRACING/set_event
	fi
	: > $TRACING/trace
	vm_barrier "tl-$stack-$run"
	# /proc/stat around the window: busy time even of a CPU that spins
	# in user space and so has no event.
	(sleep 5; grep '^cpu[0-9]' /proc/stat > /tmp/stat0
	 echo 1 > $TRACING/tracing_on; sleep "$TIMELINE_SECONDS"
	 echo 0 > $TRACING/tracing_on; grep '^cpu[0-9]' /proc/stat > /tmp/stat1) &
	pid=$!
	perf_pair "$port" "$col" "$@" -d "$DEV" -x "$g" -F "${len[@]}" ||
		diag "$stack $run: perftest failed"
	wait "$pid"
	{ sed 's/^/# stat0 /' /tmp/stat0; sed 's/^/# stat1 /' /tmp/stat1
	  cat $TRACING/trace; } > "$out"
	: > $TRACING/set_event
	check "$stack $run: a timeline in $(basename "$out")" \
		grep -q net_dev_xmit "$out"
}

# functions STACK RUN PORT COL ARGS...: perftest under the function_graph
# tracer for TIMELINE_SECONDS once the stream has run for 5 s, limited to
# the stack module's functions and a few of the kernel's they call (those
# a packet or a post goes through), to $SHARED/funcs-STACK-RUN-vmN.txt for
# tools/bench/func-report: what one call of each costs, on the trace clock.
functions() {
	local stack=$1 run=$2 port=$3 col=$4 mod=sroce pid f len
	shift 4
	[ "$stack" = rxe ] && mod=rdma_rxe
	len=(-D $((TIMELINE_SECONDS + 10)))
	case $run in *lat) len=() ;; esac
	echo 0 > $TRACING/tracing_on
	echo nop > $TRACING/current_tracer
	echo 16384 > $TRACING/buffer_size_kb
	echo "*:mod:$mod" > $TRACING/set_ftrace_filter
	for f in ip_local_out ip6_local_out __dev_queue_xmit __alloc_skb \
		 kfree_skb_reason consume_skb crc32_le crypto_shash_update \
		 skb_copy_bits __ip_select_ident dst_cache_get \
		 udp_tunnel_xmit_skb __udp4_lib_rcv ib_uverbs_write \
		 ib_uverbs_ioctl ib_uverbs_post_send ib_uverbs_poll_cq \
		 ib_uverbs_req_notify_cq virtnet_poll start_xmit \
		 _copy_from_user _copy_to_user; do
		echo "$f" >> $TRACING/set_ftrace_filter 2>/dev/null
	done
	echo function_graph > $TRACING/current_tracer
	echo 1 > $TRACING/options/funcgraph-tail
	: > $TRACING/trace
	vm_barrier "fn-$stack-$run"
	(sleep 5; echo 1 > $TRACING/tracing_on; sleep "$TIMELINE_SECONDS"
	 echo 0 > $TRACING/tracing_on) &
	pid=$!
	perf_pair "$port" "$col" "$@" -d "$DEV" -x "$g" -F "${len[@]}" ||
		diag "$stack $run: perftest failed"
	wait "$pid"
	cat $TRACING/trace > "$SHARED/funcs-$stack-$run-vm$VM_ID.txt"
	echo nop > $TRACING/current_tracer
	: > $TRACING/set_ftrace_filter
	check "$stack $run: a function trace" \
		grep -q ' us ' "$SHARED/funcs-$stack-$run-vm$VM_ID.txt"
}

runs() {	# runs STACK PORTBASE
	if [ "${SROCE_ARG_PROFILE_FUNCS:-0}" = 1 ]; then
		functions "$1" write64k $(($2 + 21)) 4 ib_write_bw -s 65536
		functions "$1" readlat $(($2 + 23)) 5 ib_read_lat -s 64 -n 20000
		functions "$1" read64k $(($2 + 24)) 4 ib_read_bw -s 65536
		return
	fi
	if [ "${SROCE_ARG_PROFILE_PERF:-1}" = 1 ]; then
		profile "$1" write64k $(($2 + 1)) 4 ib_write_bw -s 65536 -D "$PERF_SECONDS"
		profile "$1" send64 $(($2 + 2)) 5 ib_send_bw -s 64 -D "$PERF_SECONDS"
	fi
	timeline "$1" write64k $(($2 + 11)) 4 ib_write_bw -s 65536
	timeline "$1" send64 $(($2 + 12)) 5 ib_send_bw -s 64
	timeline "$1" read64k $(($2 + 14)) 4 ib_read_bw -s 65536
	# About 16 s at 0.8 ms a ping: the window falls inside.
	timeline "$1" readlat $(($2 + 13)) 5 ib_read_lat -s 64 -n 20000
}

check "perf runs in the guest" perf --version
port=19500
for stack in ${SROCE_ARG_PROFILE_STACKS//,/ }; do
	stack_up "$stack"
	vm_barrier "$stack-up"
	runs "$stack" "$port"
	vm_barrier "$stack-done"
	stack_down "$stack"
	port=$((port + 100))
done
tap_done

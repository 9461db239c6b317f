#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 1800
#
# perftest's options, as its users pass them, on sroce0 over loopback:
# connection types (RC, UC, UD), bidirectional runs, SRQ, inline data,
# lists of WRs, CQ moderation, message size sweeps, events, an MR per QP,
# deep queues, outstanding READs, timed runs, rdma_cm, path MTUs, IPv6,
# service levels and traffic classes, huge pages.  Each run must complete
# with a figure.  What sroce does not offer (ODP, XRC, DC, SRD)
# must be refused at once with perftest's own message, never hang.
#
# make check runs a short set; make perftest the whole matrix (about five
# minutes; SROCE_ARG_PERFTEST=full).  The whole matrix was run on rdma_rxe
# in the same boot (2026-12-05): every option in it ran on both stacks;
# the options left out failed on both: --perform_warm_up (the client
# hangs in perftest's warm-up) and -g over loopback (perftest's GID type
# check); -W (the port's PMA counters) failed on both then, and runs on
# sroce since its PMA (pma.c).
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }

# Runs of the short set: what loopback.sh and the other tests do not run.
# -n stays a multiple of -l and -Q after the debug lane's cut to a tenth.
smoke=(
	"4|ib_send_bw -b -s 4096 -n 200"
	"4|ib_write_bw -c UC -s 4096 -n 200"
	"4|ib_send_bw --use-srq -q 4 -s 4096 -n 200"
	"4|ib_send_bw -l 8 -s 4096 -n 400"
	"4|ib_write_bw -Q 16 -s 4096 -n 320"
	"3|ib_send_lat -I 64 -s 64 -n 200"
	"4|ib_read_bw -o 1 -s 4096 -n 200"
	"4|ib_write_bw -W counters/port_xmit_data,counters/port_rcv_packets -s 4096 -n 200"
)
full=(
	"4|ib_write_bw -b -s 4096 -n 200"
	"4|ib_read_bw -b -s 4096 -n 200"
	"4|ib_send_bw -c UC -s 4096 -n 200"
	"4|ib_send_bw -c UD -s 1024 -n 200"
	"4|ib_send_bw -c UD -s 1024 -n 200 -q 2"
	"4|ib_send_bw -c UD --use-srq -q 2 -s 512 -n 200"
	"4|ib_send_bw -I 64 -s 64 -n 500"
	"4|ib_write_bw -I 128 -s 128 -n 500"
	"3|ib_write_lat -I 64 -s 64 -n 200"
	"4|ib_write_bw -l 8 -s 4096 -n 400"
	"4|ib_send_bw --recv_post_list=8 -s 4096 -n 400"
	"4|ib_send_bw -Q 8 -s 4096 -n 320"
	"4|ib_send_bw -a -n 20"
	"4|ib_write_bw -a -n 20"
	"4|ib_read_bw -a -n 20"
	"3|ib_write_lat -a -n 20"
	"3|ib_read_lat -a -n 20"
	"3|ib_send_lat -a -n 20"
	"4|ib_send_bw -c UD -a -n 20"
	"3|ib_atomic_lat -n 200"
	"3|ib_atomic_lat -A CMP_AND_SWAP -n 200"
	"4|ib_atomic_bw -A CMP_AND_SWAP -n 500"
	"4|ib_atomic_bw -q 4 -n 500"
	"3|ib_send_lat -c UD -s 64 -n 200"
	"3|ib_send_lat -c UC -s 64 -n 200"
	"3|ib_write_lat -c UC -s 64 -n 200"
	"4|ib_send_bw -e -s 65536 -n 200"
	"4|ib_read_bw -e -s 65536 -n 200"
	"3|ib_send_lat -e -s 64 -n 200"
	"4|ib_send_bw -c UD -e -s 1024 -n 200"
	"4|ib_send_bw --mr_per_qp -q 2 -s 4096 -n 200"
	"4|ib_write_bw --mr_per_qp -q 4 -s 4096 -n 200"
	"4|ib_write_bw -t 1024 -s 4096 -n 2000"
	"4|ib_send_bw -t 16 -r 16 -s 4096 -n 200"
	"4|ib_read_bw -o 16 -s 4096 -n 200"
	"4|ib_write_bw -D 3 -s 65536"
	"4|ib_send_bw -D 3 -s 4096"
	"3|ib_read_lat -D 3 -s 64"
	"4|ib_send_bw -R -c UD -s 1024 -n 200"
	"4|ib_write_bw -R -q 4 -s 4096 -n 200"
	"4|ib_read_bw -R -s 4096 -n 200"
	"3|ib_send_lat -R -s 64 -n 200"
	"4|ib_send_bw -z -s 4096 -n 200"
	"4|ib_write_bw --report_gbits -q 8 -s 4096 -n 200"
	"4|ib_read_bw --use_old_post_send -s 65536 -n 200"
	"4|ib_atomic_bw --use_old_post_send -n 500"
	"4|ib_send_bw -c UD --use_old_post_send -s 1024 -n 200"
	"4|ib_write_bw --reversed -s 4096 -n 200"
	"4|ib_send_bw --inline_recv=64 -s 32 -n 200"
	"4|ib_write_bw -m 512 -s 65536 -n 200"
	"4|ib_read_bw -m 4096 -s 65536 -n 100"
	"4|ib_send_bw -m 256 -s 4096 -n 200"
	"4|ib_write_bw --ipv6 -s 4096 -n 200"
	"4|ib_write_bw --tclass=96 -s 4096 -n 200"
	"4|ib_send_bw -S 3 -s 4096 -n 200"
	"4|ib_write_bw -u 10 -s 4096 -n 200"
	"4|ib_write_bw --use_hugepages -s 4096 -n 200"
	"4|ib_write_bw -N -s 65536 -n 200"
)
runs=("${smoke[@]}")
[ "${SROCE_ARG_PERFTEST:-}" = full ] && runs+=("${full[@]}")

listening_or_gone() { listening "$1" || ! kill -0 "$2"; }

# refused PORT MESSAGE PROG ARGS...: both sides exit with an error (not a
# timeout) and perftest says MESSAGE.
refused() {
	local port=$1 msg=$2 spid src crc
	shift 2
	timeout 60 "$@" -p "$port" > /tmp/srv.out 2>&1 &
	spid=$!
	# Some refuse before they listen, others once connected.
	wait_for 30 listening_or_gone "$port" "$spid"
	timeout 60 "$@" -p "$port" 127.0.0.1 > /tmp/cli.out 2>&1
	crc=$?
	wait "$spid"
	src=$?
	diag "client rc $crc, server rc $src: $(grep -h -m1 -- "$msg" /tmp/srv.out /tmp/cli.out)"
	[ "$crc" -ne 0 ] && [ "$crc" -ne 124 ] && [ "$src" -ne 0 ] &&
		[ "$src" -ne 124 ] && grep -q -- "$msg" /tmp/srv.out /tmp/cli.out
}

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
wait_for 10 sroce_gid "fd77:0000:0000:0000:0000:0000:0000:0001"
g=$(sroce_gid "$(gid4_tail "$(vm_ip 0)")")
g6=$(sroce_gid "fd77:0000:0000:0000:0000:0000:0000:0001")
check "IPv4 and IPv6 GIDs present" test -n "$g" -a -n "$g6"
echo 64 > /proc/sys/vm/nr_hugepages
before=$(objects)

p=19100
for run in "${runs[@]}"; do
	col=${run%%|*}
	args=${run#*|}
	p=$((p + 1))
	pt=(-d sroce0 -x "$g" -F)
	PERF_HOST=127.0.0.1
	case " $args " in
	*" --ipv6 "*) pt=(-d sroce0 -x "$g6" -F) ;;
	*" -R "*) pt=(-d sroce0 -F) PERF_HOST=$(vm_ip 0) ;;
	*" -z "*) PERF_HOST=$(vm_ip 0) ;;
	esac
	PERF_HOST=$PERF_HOST check "$args" perf_local "$p" "$col" \
		${args%% *} "${pt[@]}" ${args#* }
done

check "--odp: refused (no on-demand paging)" \
	refused 19301 "failed to create mr" ib_send_bw -d sroce0 -x "$g" -F --odp -n 20
check "-c XRC: refused (no XRC domains)" \
	refused 19302 "Error opening XRC domain" ib_send_bw -d sroce0 -x "$g" -F -c XRC -n 20
if [ "${SROCE_ARG_PERFTEST:-}" = full ]; then
	check "-c DC: refused (mlx5's DC QPs)" refused 19303 "Unable to create QP" \
		ib_write_bw -d sroce0 -x "$g" -F -c DC -n 20
	check "-c SRD: refused (EFA's SRD QPs)" refused 19304 "Unable to create QP" \
		ib_send_bw -d sroce0 -x "$g" -F -c SRD -n 20
fi

check "every object made is gone" wait_for 30 output_is "$before" objects
echo 0 > /proc/sys/vm/nr_hugepages
check "rdma link delete sroce0" rdma link delete sroce0
unload_check
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 900
#
# Soak: the data-integrity tool (every opcode, every byte checked) round
# after round for a fixed time, over a link that loses, duplicates,
# reorders and corrupts packets (netem on both VMs).  Corrupted packets
# must be dropped (ICRC or IP checksum) and recovered like losses.  In
# make check a short smoke (SROCE_ARG_DURATION, default 40 s); make soak
# runs it long.  Prints the rounds, the bytes checked and the counters.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
stat() { rdma statistic show link sroce0/1 | tr -s ' ' '\n' | awk -v k="$1" '$0 == k { getline; print }'; }

duration=${SROCE_ARG_DURATION:-40}
check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")")
before=$(objects)
check "netem: loss 2%, duplicate 1%, reorder 10%, corrupt 0.5%" \
	tc qdisc replace dev eth0 root netem delay 1ms reorder 10% 50% \
	loss 2% duplicate 1% corrupt 0.5%
vm_barrier up

# VM 1 (the client) decides after each round whether another one starts.
rounds=0 failed=0 end=$((SECONDS + duration)) port=18700
while :; do
	integrity_pair "$port" -n 1 > /tmp/round.out 2>&1 || failed=$((failed + 1))
	rounds=$((rounds + 1))
	port=$((port + 1))
	if [ "$VM_ID" = 1 ]; then
		grep -h 'integrity checks passed' /tmp/round.out >> /tmp/checks
		if [ "$SECONDS" -lt "$end" ] && [ "$failed" -eq 0 ]; then
			vm_put "round$rounds" more
		else
			vm_put "round$rounds" stop
		fi
	fi
	[ "$(vm_get "round$rounds" 700)" = more ] || break
done
if [ "$VM_ID" = 1 ]; then
	n=$(awk '{ s += $NF } END { print s + 0 }' /tmp/checks)
	diag "soak: $rounds rounds in $((SECONDS - end + duration)) s, $n integrity checks passed, $failed failed"
	[ "$failed" -eq 0 ] || tail -n 20 /tmp/round.out | sed 's/^/# /'
fi
ok "$failed" "soak: $rounds integrity rounds over a lossy, corrupting link, every byte right"
check "netem off" tc qdisc del dev eth0 root
vm_barrier done
diag "retransmits $(stat retransmits), ICRC drops $(stat rx_drop_bad_icrc), duplicates $(stat rx_duplicate), retry timeouts $(stat retry_timeouts)"
[ "$VM_ID" = 1 ] && check "retransmissions were counted" test "$(stat retransmits)" -gt 0
check "every object it made is gone" wait_for 30 output_is "$before" objects
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

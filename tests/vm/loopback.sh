#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 400
#
# RC traffic over loopback: client and server on the same sroce device,
# the packets go through the whole RoCEv2 path (IP, UDP, ICRC) via lo.
. tests/vm/lib.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
gid_index() {	# the GID index of the RoCE v2 GID of IPv4 address $1
	local f
	for f in /sys/class/infiniband/sroce0/ports/1/gids/*; do
		case "$(cat "$f")" in
		*"$2") basename "$f"; return 0 ;;
		esac
	done
	return 1
}

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
gid=$(gid_index sroce0 "ffff:0a4d:0001")
diag "IPv4 GID index $gid"
before=$(objects)

pingpong() {	# pingpong NAME PROGRAM ARGS...: server and client, both rc 0
	local name=$1
	shift
	"$@" -d sroce0 -g "$gid" > /tmp/srv.out 2>&1 &
	local spid=$!
	sleep 1
	timeout 60 "$@" -d sroce0 -g "$gid" 127.0.0.1 > /tmp/cli.out 2>&1
	local crc=$?
	timeout 10 wait $spid
	local src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		sed 's/^/# srv: /' /tmp/srv.out | tail -5
		sed 's/^/# cli: /' /tmp/cli.out | tail -5
	fi
	grep -h "bytes in" /tmp/cli.out | sed 's/^/# /'
	[ $crc -eq 0 ] && [ $src -eq 0 ]
}

check "ibv_rc_pingpong over loopback" pingpong rc ibv_rc_pingpong -n 100
check "ibv_rc_pingpong 64 KiB messages" pingpong rc ibv_rc_pingpong -n 20 -s 65536
check "every object it made is gone" test "$before" = "$(objects)"
rdma statistic show link sroce0/1 | tr ' ' '\n' | paste - - | sed 's/^/# /' | head -30
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
check "no leak reported at unload" bash -c "! dmesg | grep -q 'sroce: leak'"
tap_done

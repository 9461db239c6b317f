#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 300
# kernel-args: ipv6.disable=1
#
# A host with IPv6 disabled on the kernel command line (ipv6.disable=1,
# common on servers): sroce's first device opens a UDP 4791 socket for
# IPv4 only and says so, has no GID for the IPv6 address the guest could not add (ib_core
# still adds the default link-local GID), and RC and UD traffic over the
# IPv4 GID works (loopback: client and server on the one device); unload
# is clean.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }

check "IPv6 is disabled in this kernel" test ! -e /proc/net/if_inet6
check "modprobe sroce" modprobe sroce
check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
check "the first device says it runs IPv4 only" bash -c \
	"dmesg | grep -q 'sroce: IPv6 is disabled: RoCEv2 over IPv4 only'"
check "IPv4 GID present" wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip 0)")")
check "no GID of the IPv6 address the guest could not add" bash -c \
	"! cat /sys/class/infiniband/sroce0/ports/1/gids/* | grep -q '^fd77'"
before=$(objects)

check "ibv_rc_pingpong" perf_local 18515 0 ibv_rc_pingpong -d sroce0 -g "$g" -n 100
check "ibv_ud_pingpong" perf_local 18516 0 ibv_ud_pingpong -d sroce0 -g "$g" -n 50 -s 512
check "ib_write_bw -s 65536" perf_local 18517 4 ib_write_bw -d sroce0 -x "$g" -F -s 65536 -n 100
check "ib_read_lat -s 64" perf_local 18518 3 ib_read_lat -d sroce0 -x "$g" -F -s 64 -n 50

check "every object it made is gone" wait_for 30 output_is "$before" objects
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 600
#
# User space through stock rdma-core and our provider: ibv_devices,
# ibv_devinfo, the node description written through sysfs, and the
# objects test program (tests/user/objects.c), with mapped queues and
# again with none (SROCE_MAPPED=0).
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
devinfo() { ibv_devinfo -v -d sroce0 > /tmp/devinfo 2>&1; }
has() { grep -Eq "$1" /tmp/devinfo; }

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 test -e /sys/class/infiniband/sroce0/ports/1/gids/1
check "ibv_devices lists sroce0 with its node GUID" \
	bash -c "ibv_devices | grep -q 'sroce0.*505400fffe770001'"
check "ibv_devinfo -v sroce0" devinfo
# Modify HCA Attributes through sysfs: the node description.
nd=/sys/class/infiniband/sroce0/node_desc
check "node_desc reads sroce" test "$(cat $nd)" = sroce
check "node_desc takes a new description" bash -c \
	"echo -n 'sroce test host' > $nd && test \"\$(cat $nd)\" = 'sroce test host'"
check "ibv_devinfo: port active" has "state:.*PORT_ACTIVE"
check "ibv_devinfo: fw_ver 1, as sysfs says" bash -c \
	"grep -q 'fw_ver:[[:space:]]*1$' /tmp/devinfo &&
	 test \"\$(cat /sys/class/infiniband/sroce0/fw_ver)\" = 1"
# port_cap_flags: CM_SUP (bit 16) and IP_BASED_GIDS (bit 26), as NICs.
pcf() { awk '$1 == "port_cap_flags:" { print $2; exit }' /tmp/devinfo; }
check "ibv_devinfo: CM_SUP and IP_BASED_GIDS port capabilities ($(pcf))" \
	test $(($(pcf) & 0x04010000)) -eq $((0x04010000))
check "ibv_devinfo: Ethernet link layer" has "link_layer:.*Ethernet"
check "ibv_devinfo: active MTU 1024, max 4096" bash -c \
	"grep -q 'active_mtu:.*1024' /tmp/devinfo && grep -q 'max_mtu:.*4096' /tmp/devinfo"
check "ibv_devinfo: RoCE v2 GID of 10.77.0.1" has "::ffff:10.77.0.1, RoCE v2"
check "ibv_devinfo: RoCE v2 GID of fd77::1" has "fd77::1, RoCE v2"
check "ibv_devinfo: device limits" bash -c \
	"grep -q 'max_qp:[[:space:]]*65536$' /tmp/devinfo &&
	 grep -q 'max_qp_wr:[[:space:]]*32768$' /tmp/devinfo &&
	 grep -q 'max_cqe:[[:space:]]*262143$' /tmp/devinfo &&
	 grep -q 'max_mr:[[:space:]]*262144$' /tmp/devinfo"
check "ibv_devinfo: RNR NAK generation, P_Key and Q_Key violation counters" bash -c \
	"grep -q RC_RNR_NAK_GEN /tmp/devinfo && grep -q BAD_PKEY_CNTR /tmp/devinfo &&
	 grep -q BAD_QKEY_CNTR /tmp/devinfo"
check "ibv_devinfo: max_mr_size 1 TiB - 8 KiB (page array under INT_MAX bytes)" has "max_mr_size:[[:space:]]*0xffffffe000$"
check "ibv_devinfo: a 1 GHz completion clock, 64-bit timestamps" bash -c \
	"grep -q 'hca_core_clock:[[:space:]]*1000000kHZ' /tmp/devinfo &&
	 grep -q 'timestamp_mask:[[:space:]]*0xffffffffffffffff' /tmp/devinfo"
check "ibv_devinfo: memory windows of type 1 and 2B, max_mw 65536" bash -c \
	"grep -q 'max_mw:[[:space:]]*65536$' /tmp/devinfo &&
	 grep -q MEM_WINDOW /tmp/devinfo && grep -q MEM_WINDOW_TYPE_2B /tmp/devinfo"
[ -s /tmp/devinfo ] || diag "ibv_devinfo printed nothing"

before=$(objects)
# A bound, not a measure: pinning the 4 GiB MR's million pages takes a
# few seconds here and minutes on the debug kernel.
timeout $((240 * ${SROCE_TIMEOUT_SCALE:-1})) "$SROCE_SRC/build/tests/sroce_objects" sroce0 \
	> /tmp/objects.tap 2>&1
rc=$?
relay_tap user /tmp/objects.tap
ok "$rc" "user-space objects test exits 0"
check "every object it made is gone" wait_for 30 output_is "$before" objects
# Again with nothing mapped: every post, poll and extended-CQ poll through
# the kernel's commands (what a provider of another ABI version gets).
SROCE_MAPPED=0 timeout 60 "$SROCE_SRC/build/tests/sroce_objects" sroce0 > /tmp/objects0.tap 2>&1
rc=$?
relay_tap "user, unmapped" /tmp/objects0.tap
ok "$rc" "user-space objects test, SROCE_MAPPED=0, exits 0"
check "every object it made is gone (unmapped)" wait_for 30 output_is "$before" objects
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
unload_check
tap_done

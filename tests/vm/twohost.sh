#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 180
#
# Two hosts on one link each bind sroce to eth0; each sees its own RoCEv2
# GIDs, and its peer's address on the link (what RoCE traffic will use).
. tests/lib/vm.sh

ib=/sys/class/infiniband
peer=$(( (VM_ID + 1) % VM_COUNT ))
gid_of() {	# the RoCE v2 GID of an IPv4 address, as sysfs prints it
	local IFS=.
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}
has_gid() {
	local f
	for f in "$ib/sroce0"/ports/1/gids/*; do
		[ "$(cat "$f" 2>/dev/null)" = "$1" ] && return 0
	done
	return 1
}

check "rdma link add sroce0 on eth0" rdma link add sroce0 type sroce netdev eth0
check "own IPv4 GID present" wait_for 5 has_gid "$(gid_of "$(vm_ip "$VM_ID")")"
vm_put "gid$VM_ID" "$(gid_of "$(vm_ip "$VM_ID")")"
vm_barrier devices-up
check "the peer is reachable on the link" ping -c 1 -W 5 "$(vm_ip $peer)"
pgid=$(vm_get "gid$peer")
check "the peer published its GID" test "$pgid" = "$(gid_of "$(vm_ip $peer)")"
check "the peer's GID is not in our table" not has_gid "$pgid"
vm_put "guid$VM_ID" "$(cat $ib/sroce0/node_guid)"
check "peer's node GUID differs from ours" \
	test "$(vm_get "guid$peer")" != "$(cat $ib/sroce0/node_guid)"
vm_barrier checked
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
check "no leak reported at unload" bash -c "! dmesg | grep -q 'sroce: leak'"
tap_done

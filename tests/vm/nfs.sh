#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 2
# timeout: 900
#
# NFS over RDMA (RPC-over-RDMA version 1, RFC 8166) on sroce between two
# hosts: VM 0 runs the kernel NFS server (svcrdma) on a tmpfs export with
# an rdma listener on port 20049, VM 1 mounts it with proto=rdma (xprtrdma)
# over NFSv4.2 and NFSv3.  The data goes as RDMA READ and WRITE chunks
# registered with FRWR (IB_WR_REG_MR, remote invalidation), the calls as
# SENDs.  Written data is read back after the client's cache is dropped,
# and checked on the server; fio verifies random sizes with direct I/O.
# Every verbs object is gone on both sides once the mounts and the server
# are.
. tests/lib/vm.sh

# ib_core keeps the CQs of its shared CQ pool (svcrdma uses it) until the
# device goes: CQs are counted after link delete.
objects() { grep -v '^cq ' /sys/kernel/debug/sroce/objects; }
srv=$(vm_ip 0)
mnt=/mnt/nfs

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$(vm_ip "$VM_ID")")"
before=$(objects)
check "modprobe rpcrdma" modprobe rpcrdma
vm_barrier up

nfs_server_up() {
	mkdir -p /export /var/lib/nfs/v4recovery &&
		mount -t tmpfs -o size=192m tmpfs /export &&
		mount -t nfsd nfsd /proc/fs/nfsd || return 1
	echo "/export *(rw,no_root_squash,insecure,fsid=0,no_subtree_check)" > /etc/exports
	rpcbind -w && exportfs -ra && rpc.mountd && rpc.nfsd 4 &&
		echo "rdma 20049" > /proc/fs/nfsd/portlist
}

nfs_server_down() {
	rpc.nfsd 0 && exportfs -ua && pkill -x rpc.mountd
	pkill -x rpcbind
	umount /proc/fs/nfsd && umount /export
}

# The transport line of the mount at $mnt in the client's statistics, and
# the transport it names.
xprt_line() { awk -v m="$mnt" '$0 ~ "mounted on " m " " { f = 1 } f && /xprt:/ { print; exit }' /proc/self/mountstats; }
xprt() { xprt_line | awk '{ print $2 }'; }

# Write FILE's copy to the mount, drop the client's cache, compare.
round_trip() {
	timeout 300 dd if="$1" of="$mnt/$(basename "$1")" bs=1M conv=fsync \
		status=none && echo 3 > /proc/sys/vm/drop_caches &&
		timeout 300 cmp "$1" "$mnt/$(basename "$1")"
}

if [ "$VM_ID" = 0 ]; then
	check "server: nfsd with an rdma listener on 20049" nfs_server_up
	check "server: the listener is up" grep -q "rdma 20049" /proc/fs/nfsd/portlist
	vm_barrier server-up 300
	vm_barrier data-written 600
	check "server: the files hold what the client wrote" bash -c \
		"cd /export && md5sum f4 f3 | cmp - $SHARED/client.md5"
	vm_barrier server-checked 300
	vm_barrier unmounted 300
	check "server: nfsd stopped" nfs_server_down
else
	vm_barrier server-up 300
	mkdir -p $mnt
	dd if=/dev/urandom of=/tmp/f4 bs=1M count=24 status=none
	dd if=/dev/urandom of=/tmp/f3 bs=1k count=3000 status=none
	check "mount NFSv4.2 proto=rdma" timeout 120 \
		mount -t nfs4 -o vers=4.2,proto=rdma,port=20049 "$srv:/" $mnt
	check "the mount uses the rdma transport" output_is rdma xprt
	check "v4.2: 24 MiB written and read back" round_trip /tmp/f4
	check "v4.2: fio 4k..256k random direct writes, crc32c verified" \
		timeout 300 fio --name=nfs --directory=$mnt --size=8M \
		--rw=randwrite --bsrange=4k-256k --direct=1 --ioengine=libaio \
		--iodepth=4 --verify=crc32c --verify_fatal=1 --output=/tmp/fio.out
	dd if=$mnt/f4 of=/dev/null bs=1M iflag=direct 2>&1 | tail -1 | sed 's/^/# v4.2 read: /'
	# RPC-over-RDMA's counters: read, write and reply chunks, FRWRs.
	diag "v4.2 $(xprt_line)"
	check "umount v4.2" timeout 120 umount $mnt
	check "mount NFSv3 proto=rdma" timeout 120 \
		mount -t nfs -o vers=3,proto=rdma,port=20049,nolock "$srv:/export" $mnt
	check "the v3 mount uses the rdma transport" output_is rdma xprt
	check "v3: 3000 KiB written and read back" round_trip /tmp/f3
	check "v3: the v4.2 file reads back" cmp /tmp/f4 $mnt/f4
	(cd /tmp && md5sum f4 f3) > "$SHARED/client.md5"
	vm_barrier data-written
	vm_barrier server-checked 300
	check "umount v3" timeout 120 umount $mnt
	vm_barrier unmounted 300
fi

vm_barrier done 300
check "modprobe -r rpcrdma" bash -c "modprobe -r nfsd nfsv4 nfsv3 nfs 2>/dev/null; modprobe -r rpcrdma"
check "every QP, MR, PD, SRQ and AH is gone" wait_for 30 output_is "$before" objects
[ "$before" = "$(objects)" ] || diag "before: $(echo $before) after: $(objects | tr '\n' ' ')"
check "rdma link delete sroce0" rdma link delete sroce0
check "after link delete, no object of any type is left" \
	bash -c "! grep -v ' 0$' /sys/kernel/debug/sroce/objects"
unload_check
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 900
#
# NVMe-oF with target and host on one sroce device (loopback; the target
# uses an SRQ, nvmet-rdma use_srq=1): connect,
# fio with crc32c verification, disconnect, teardown; every verbs object
# freed.
. tests/lib/vm.sh
. tests/lib/nvmeof.sh

# ib_core keeps the CQs of its shared CQ pool (ib_cq_pool_get, used by
# nvmet-rdma) until the device goes: CQs are counted after link delete.
objects() { grep -v '^cq ' /sys/kernel/debug/sroce/objects; }
addr=$(vm_ip 0)

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 5 sroce_gid "$(gid4_tail "$addr")"
before=$(objects)
check "target: subsystem, null_blk namespace, rdma port $addr:4420, SRQ" nvmet_up "$addr" ipv4 use_srq=1
check "target listens" wait_for 30 listening 4420
check "host: nvme connect to its own address" nvme_host_connect "$addr"
check "fio 4 KiB random writes, depth 16, 2 jobs, crc32c verified" fio_verify 4k 16
check "fio 128 KiB, depth 4, verified" fio_verify 128k 4
check "nvme disconnect" nvme_host_disconnect
check "target torn down" nvmet_down
check "unload nvme-rdma" modprobe -r nvme-rdma
check "every QP, MR, PD, SRQ and AH is gone" wait_for 30 output_is "$before" objects
[ "$before" = "$(objects)" ] || diag "before: $(echo $before) after: $(objects | tr '\n' ' ')"
check "rdma link delete sroce0" rdma link delete sroce0
check "no object left with the device gone (CQ pool included)" bash -c \
	"! grep -v ' 0$' /sys/kernel/debug/sroce/objects"
check "rmmod sroce" rmmod sroce
unload_check
tap_done

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deps.sh - install the Debian 12 packages that building, testing and the
# demo need (only those missing; apt-get update first when needed).
set -euo pipefail

pkgs=(
	build-essential bc bison flex libelf-dev libssl-dev dwarves kmod cpio
	xz-utils pkg-config git
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	qemu-system-x86 busybox-static
	iproute2 iputils-ping procps
	rdma-core ibverbs-utils ibverbs-providers libibverbs-dev librdmacm-dev
	perftest rdmacm-utils infiniband-diags
	sparse groff-base python3-docutils python3-pyverbs dkms
	iperf3 fio nvme-cli tcpdump nfs-kernel-server
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: run as root (or install them yourself)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

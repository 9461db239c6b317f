#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 2400
#
# make check-deb: the packages of make deb, installed in a VM that has no
# sroce of its own (booted without -M).  apt installs both from the files;
# DKMS builds sroce.ko for the running kernel; rdma link add loads it,
# ibv_devinfo and ib_write_bw run through the packaged provider; apt purge
# leaves no module, source, DKMS state, provider or sroce.driver behind.
. tests/lib/vm.sh

krel=$(uname -r)
libdir=$(pkg-config --variable=libdir libibverbs 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)
# The harness points libibverbs at the build tree's provider: not here.
rm -f /etc/libibverbs.d/sroce.driver
leftovers() {
	find "/lib/modules/$krel" -name 'sroce*.ko*' 2>/dev/null
	ls -d /usr/src/sroce-* /var/lib/dkms/sroce "$libdir"/libibverbs/libsroce* \
		/etc/libibverbs.d/sroce.driver 2>/dev/null
}

check "no sroce in this VM before" bash -c "! modinfo sroce > /dev/null 2>&1"
# apt takes files by absolute path; it needs nothing from the network (the
# dependencies are installed), and --no-download breaks local files.
check "apt install ./build/deb/*.deb (DKMS builds sroce.ko for $krel)" \
	apt-get install -y -q "$SROCE_SRC"/build/deb/sroce-dkms_*_all.deb \
	"$SROCE_SRC"/build/deb/libsroce-rdmav34_*.deb
check "dkms status: sroce installed for $krel" bash -c \
	"dkms status sroce | grep -q '$krel.*installed'"
check "the module is DKMS's" bash -c "modinfo -n sroce | grep -q /updates/dkms/"
check "sroce(7) is installed" test -f /usr/share/man/man7/sroce.7.gz
check "rdma link add sroce0 (the module autoloads)" \
	rdma link add sroce0 type sroce netdev eth0
wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
g=$(sroce_gid "$(gid4_tail "$(vm_ip 0)")")
check "ibv_devinfo through the packaged provider" bash -c \
	"ibv_devinfo -d sroce0 | grep -q PORT_ACTIVE"
check "ib_write_bw over loopback" perf_local 18515 4 ib_write_bw -d sroce0 \
	-x "$g" -F -s 65536 -n 100
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce
check "apt purge sroce-dkms libsroce-rdmav34" \
	apt-get purge -y -q sroce-dkms libsroce-rdmav34
check "nothing is left behind" bash -c "[ -z \"\$(leftovers)\" ]"
leftovers | sed 's/^/# left: /'
tap_done

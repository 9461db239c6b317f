#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 900
#
# rdma-core's own test suite (Debian's python3-pyverbs ships it under
# /usr/share/doc/rdma-core/tests) against sroce0, through stock libibverbs
# and our provider: a peer suite written for hardware RoCE NICs and
# rdma_rxe, not for us.  Every test it runs must pass.  It skips by itself
# the tests of other vendors' devices (mlx5, EFA) and of what sroce does
# not offer (ODP, device memory, XRC, parent domains, raw packet QPs);
# those are listed as diagnostics.  Every object it made is gone after.
# About 100 tests run: verbs objects, RC/UC/UD traffic, atomics, memory
# windows, MR re-registration, extended QPs and CQs, CQ events, and
# rdma_cm connections and multicast through librdmacm.
. tests/lib/vm.sh

objects() { cat /sys/kernel/debug/sroce/objects; }
suite=/usr/share/doc/rdma-core/tests

check "rdma-core's tests are installed (python3-pyverbs)" test -f "$suite/run_tests.py"
diag "python3-pyverbs $(dpkg-query -W -f='${Version}' python3-pyverbs 2>/dev/null)"
rm -rf /tmp/rdma-core-tests
cp -r "$suite" /tmp/rdma-core-tests && gunzip -f /tmp/rdma-core-tests/*.gz
# The suite finds a device's netdev, and so the IP address its rdma_cm
# tests use, under the device's parent (/sys/class/infiniband/DEV/device/
# net/), a PCI function for a NIC.  A software device (sroce, rdma_rxe,
# siw) has no parent: the copy reads the netdev from the GID table
# instead (ports/1/gid_attrs/ndevs/0), which is the same netdev.  Without
# this its 10 rdma_cm tests skip.
base=/tmp/rdma-core-tests/base.py
ndev="'/sys/class/infiniband/{}/ports/1/gid_attrs/ndevs/0'"
sed -i "s|'/sys/class/infiniband/{}/device/net/'.format(dev)|$ndev.format(dev)|
	s|out = subprocess.check_output(\['ls',|out = subprocess.check_output(['cat',|
	s|'/sys/class/infiniband/{}/device/net/'\$|$ndev|" "$base"
check "the suite's copy finds the netdev through the GID table" \
	test "$(grep -c "gid_attrs/ndevs/0" "$base")" -eq 2 -a \
	"$(grep -c "check_output(\['cat'," "$base")" -eq 1

check "rdma link add sroce0" rdma link add sroce0 type sroce netdev eth0
wait_for 10 sroce_gid "$(gid4_tail "$(vm_ip 0)")"
before=$(objects)

# A bound, not a measure: the suite takes about 15 s here.
(cd /tmp && timeout $((600 * ${SROCE_TIMEOUT_SCALE:-1})) /usr/bin/python3 \
	"$SROCE_SRC/tests/lib/rdma_core_tests.py" /tmp/rdma-core-tests \
	--dev sroce0 > /tmp/rdma-core.tap 2> /tmp/rdma-core.err)
rc=$?
relay_tap rdma-core /tmp/rdma-core.tap
[ "$rc" -eq 0 ] || tail -n 20 /tmp/rdma-core.err | sed 's/^/# stderr: /'
ok "$rc" "rdma-core's test suite passes on sroce0"
check "every object it made is gone" wait_for 30 output_is "$before" objects
check "rdma link delete sroce0" rdma link delete sroce0
check "rmmod sroce" rmmod sroce

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make deb: the two Debian packages hold what they should (the module's
# sources and dkms.conf, nothing a build left; the provider and its
# sroce.driver as a conffile), and DKMS builds sroce.ko from the
# package's sources for the kernel the tree was built for, in DKMS trees
# of its own (nothing of the host's DKMS state is touched).  Runs on the
# host; prints TAP.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

. tests/lib/host.sh

if [ ! -f drivers/sroce/sroce.ko ] || ! command -v dkms > /dev/null; then
	echo "ok 1 - make deb # SKIP nothing built, or no dkms (make deps)"
	echo "1..1"
	exit 0
fi
rel=$(modinfo -F vermagic drivers/sroce/sroce.ko | cut -d' ' -f1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make -s deb > "$tmp/log" 2>&1
ok $? "make deb"
dkms_deb=$(ls build/deb/sroce-dkms_*_all.deb 2>/dev/null)
lib_deb=$(ls build/deb/libsroce-rdmav34_*.deb 2>/dev/null)
[ -n "$dkms_deb" ] && [ -n "$lib_deb" ]
ok $? "two packages: $(basename "${dkms_deb:-none}") $(basename "${lib_deb:-none}")"
ver=$(dpkg-deb -f "$dkms_deb" Version 2>/dev/null)

dpkg-deb -c "$dkms_deb" | awk '{ print $6 }' > "$tmp/dkms.list"
for f in dkms.conf Kbuild drivers/sroce/Kbuild drivers/sroce/sroce.h \
	 drivers/sroce/net.c include/uapi/rdma/sroce-abi.h; do
	grep -qx "./usr/src/sroce-$ver/$f" "$tmp/dkms.list" || echo "missing $f"
done > "$tmp/missing"
[ ! -s "$tmp/missing" ]
ok $? "sroce-dkms holds the sources and dkms.conf under /usr/src/sroce-$ver"
sed 's/^/# /' "$tmp/missing"
! grep -E '\.(o|ko|mod\.c|cmd)$' "$tmp/dkms.list"
ok $? "... and nothing a build leaves"
grep -qx ./usr/share/man/man7/sroce.7.gz "$tmp/dkms.list"
ok $? "... and sroce(7)"
dpkg-deb -c "$lib_deb" | awk '{ print $6 }' | grep -q '/libibverbs/libsroce-rdmav34\.so$' &&
	[ "$(dpkg-deb --ctrl-tarfile "$lib_deb" | tar -xO ./conffiles)" = /etc/libibverbs.d/sroce.driver ]
ok $? "libsroce-rdmav34 holds the provider; sroce.driver is a conffile"

# DKMS, in trees of its own, from the package's sources.
dpkg-deb -x "$dkms_deb" "$tmp/root"
trees=(--sourcetree "$tmp/root/usr/src" --dkmstree "$tmp/dkms" --installtree "$tmp/inst")
mkdir -p "$tmp/dkms" "$tmp/inst"
dkms add -m sroce -v "$ver" "${trees[@]}" > "$tmp/dkms.log" 2>&1 &&
	dkms build -m sroce -v "$ver" -k "$rel" "${trees[@]}" >> "$tmp/dkms.log" 2>&1
ok $? "dkms build of sroce $ver for $rel"
ko=$(find "$tmp/dkms/sroce/$ver/$rel" -name sroce.ko 2>/dev/null | head -n 1)
[ -n "$ko" ] && [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$rel" ] &&
	[ "$(modinfo -F name "$ko")" = sroce ]
ok $? "it made sroce.ko for $rel"
[ $fails -eq 0 ] || tail -n 20 "$tmp/dkms.log" | sed 's/^/# dkms: /'
echo "1..$n"
[ "$fails" -eq 0 ]

#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make install and make uninstall, staged under a DESTDIR: install puts
# exactly the driver module (for the kernel it was built for, without the
# test modules), the provider, /etc/libibverbs.d/sroce.driver and sroce(7)
# in place, and uninstall removes every one of them.  Runs on the host
# after make (it calls make install, which builds nothing new); prints TAP.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

. tests/lib/host.sh

if [ ! -f drivers/sroce/sroce.ko ]; then
	echo "ok 1 - make install # SKIP nothing built (make)"
	echo "1..1"
	exit 0
fi
rel=$(modinfo -F vermagic drivers/sroce/sroce.ko | cut -d' ' -f1)
libdir=$(pkg-config --variable=libdir libibverbs 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

make -s install DESTDIR="$tmp" > "$tmp.log" 2>&1
ok $? "make install DESTDIR=..."
sed 's/^/# /' "$tmp.log" | tail -n 5
rm -f "$tmp.log"
files=$(cd "$tmp" && find . -type f | sed 's/^\.//' | sort)
want=$(printf '%s\n' "/lib/modules/$rel/updates/sroce.ko" \
	"$libdir/libibverbs/libsroce-rdmav34.so" \
	/etc/libibverbs.d/sroce.driver /usr/share/man/man7/sroce.7 | sort)
[ "$files" = "$want" ]
ok $? "it installs the module, the provider, sroce.driver and sroce(7), nothing else"
[ "$files" = "$want" ] || printf '%s\n' "$files" | sed 's/^/# installed: /'
[ "$(cat "$tmp/etc/libibverbs.d/sroce.driver" 2>/dev/null)" = "driver sroce" ]
ok $? "sroce.driver names the provider (driver sroce)"
[ "$(modinfo -F vermagic "$tmp/lib/modules/$rel/updates/sroce.ko" 2>/dev/null | cut -d' ' -f1)" = "$rel" ]
ok $? "the module is the one built for $rel"
make -s uninstall DESTDIR="$tmp" > /dev/null 2>&1
ok $? "make uninstall DESTDIR=..."
left=$(cd "$tmp" && find . -type f)
[ -z "$left" ]
ok $? "uninstall leaves no file behind"
[ -z "$left" ] || printf '%s\n' "$left" | sed 's/^/# left: /'
echo "1..$n"
[ "$fails" -eq 0 ]

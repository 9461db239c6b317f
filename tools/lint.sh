#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# lint.sh KDIR - checkpatch.pl --strict, sparse (make C=2) and kernel-doc
# over our kernel code.  checkpatch.pl, its data files and kernel-doc are
# taken from Debian's linux-source-6.1 on first use (into build/lint/).
# Any finding fails.
set -uo pipefail

kdir=$1
src=$(cd "$(dirname "$0")/.." && pwd)
lint=$src/build/lint
tarball=/usr/src/linux-source-6.1.tar.xz
rc=0

if [ ! -x "$lint/scripts/checkpatch.pl" ] ||
   [ ! -f "$lint/scripts/kernel-doc" ]; then
	[ -f "$tarball" ] || { echo "lint: install linux-source-6.1 (make deps)" >&2; exit 1; }
	mkdir -p "$lint"
	tar -C "$lint" --strip-components=1 -xf "$tarball" \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch \
		linux-source-6.1/scripts/kernel-doc || exit 1
fi

mapfile -t files < <(cd "$src" && git ls-files -co --exclude-standard \
	'drivers/*.[ch]' 'include/*.h' 'tests/kernel/*.[ch]' 2>/dev/null)

echo "lint: checkpatch.pl --strict (${#files[@]} files)"
if ! (cd "$src" && "$lint/scripts/checkpatch.pl" --strict --no-tree --quiet \
	--show-types --ignore SPDX_LICENSE_TAG,FILE_PATH_CHANGES \
	--file "${files[@]}"); then
	rc=1
fi

echo "lint: sparse (make C=2)"
out=$(make -s -C "$kdir" M="$src" C=2 CHECK="sparse -Wno-decl" modules 2>&1 |
	grep -v "Skipping BTF generation")
if printf '%s\n' "$out" | grep -E "warning:|error:" ; then
	rc=1
fi

echo "lint: kernel-doc"
out=$(cd "$src" && perl "$lint/scripts/kernel-doc" -none "${files[@]}" 2>&1)
if [ -n "$out" ]; then
	printf '%s\n' "$out"
	rc=1
fi

[ "$rc" -eq 0 ] && echo "lint: clean"
exit "$rc"

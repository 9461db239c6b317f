#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The documents say what the code and the tests do: the promises of
# README.md and Documentation/*.rst that can be checked without a VM.
# Every file of the driver is in both file maps; every path and make
# target the documents name exists; the closing line they describe is the
# one tests/run prints; every test is described in testing.rst with its
# number of VMs, and every program a description names is run by that
# test; the debug lane's subsets are the ones the Makefile and .ci/run
# use; the man page formats cleanly and names every counter, tracepoint
# and module parameter; every document parses as reStructuredText.  Runs
# on the host in a second; prints TAP.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

. tests/lib/host.sh
diag() { sed 's/^/# /'; }

docs=(README.md Documentation/*.rst)
testing=Documentation/testing.rst

# section FILE TITLE: the text of an rst section, from its title to the
# next title of any level.
section() {
	awk -v t="$2" '
		{ l[NR] = $0 }
		END {
			title = "^[=-]+$"
			for (i = 1; i < NR; i++)
				if (l[i] == t && l[i + 1] ~ title) break
			for (i += 2; i <= NR; i++) {
				if (l[i + 1] ~ title && length(l[i + 1]) == length(l[i]) &&
				    l[i] != "") break
				print l[i]
			}
		}' "$1"
}

# spans FILE: the inline literals of a document (``x`` in rst, `x` in
# Markdown) and its indented code lines, one per line.
spans() {
	case $1 in
	*.rst) perl -0777 -ne 'while (/``(.+?)``/sg) { ($s = $1) =~ s/\s+/ /g; print "$s\n" }' "$1" ;;
	*) perl -0777 -ne 'while (/(?<!`)`([^`\n]+)`(?!`)/g) { print "$1\n" }' "$1" ;;
	esac
	grep -E '^    ' "$1"
}

# Files of the driver, generated ones left out.
mapfile -t srcs < <(cd drivers/sroce && ls -- *.c *.h | grep -v '\.mod\.c$')

# 1. design.rst's file map names every file of the driver.
missing=()
map=$(section Documentation/design.rst Files)
for f in "${srcs[@]}"; do
	grep -qF "\`\`$f\`\`" <<< "$map" || missing+=("$f")
done
[ ${#missing[@]} -eq 0 ]
ok $? "design.rst's file map names every drivers/sroce file (${#srcs[@]})"
[ ${#missing[@]} -eq 0 ] || echo "missing: ${missing[*]}" | diag

# 2. The map at the top of sroce.h too (sroce.h is the map).
missing=()
hmap=$(awk '/Map of the driver/ { on = 1 } on && /\*\// { exit } on' drivers/sroce/sroce.h)
for f in "${srcs[@]}"; do
	[ "$f" = sroce.h ] && continue
	grep -qE "^ \*   $f( |$)" <<< "$hmap" || missing+=("$f")
done
[ ${#missing[@]} -eq 0 ]
ok $? "the map at the top of sroce.h names every other drivers/sroce file"
[ ${#missing[@]} -eq 0 ] || echo "missing: ${missing[*]}" | diag

# 3. Every path of the tree the documents name exists.  Paths under build/
# and outside the tree are made at run time; <placeholders> are skipped.
# A bare file name (``nvmeof.sh``) must be a file of the tree; driver.h is
# rdma-core's (uabi.rst).
external="driver.h"
# (A here-string, not "printf | grep -q": with pipefail, grep's early
# exit would fail the pipe through printf's SIGPIPE.)
treelist=$(find .ci Documentation drivers include tests tools -type f \
	-printf '%f\n' 2>/dev/null | sort -u)
for d in "${docs[@]}"; do
	missing=()
	while IFS= read -r w; do
		w=${w%[.,;:)]}
		case $w in
		*'<'*|*'{'*) continue ;;
		.ci/*|Documentation/*|drivers/*|include/*|tests/*|tools/*)
			if [[ $w == *[*?]* ]]; then
				compgen -G "$w" > /dev/null || missing+=("$w")
			else
				[ -e "$w" ] || missing+=("$w")
			fi ;;
		*/*) ;;
		*.sh|*.c|*.h|*.rst)
			[[ " $external " == *" $w "* ]] && continue
			grep -qxF "$w" <<< "$treelist" || missing+=("$w") ;;
		esac
	done < <(spans "$d" | tr -s ' \t"=(' '\n')
	[ ${#missing[@]} -eq 0 ]
	ok $? "$d: every path it names exists"
	[ ${#missing[@]} -eq 0 ] || echo "missing: ${missing[*]}" | diag
done

# 4. Every make target the documents name is a target of the Makefile.
mapfile -t targets < <(sed -n 's/^\([a-z][a-z-]*\):.*/\1/p' Makefile)
missing=()
while IFS= read -r t; do
	grep -qx "$t" <<< "$(printf '%s\n' "${targets[@]}")" || missing+=("$t")
done < <(for d in "${docs[@]}"; do spans "$d"; done |
	grep -oE '(^|[^A-Za-z_-])make [a-z][a-z-]*' | sed 's/.*make //' | sort -u)
[ ${#missing[@]} -eq 0 ]
ok $? "every 'make TARGET' in README.md and Documentation/ is a Makefile target"
[ ${#missing[@]} -eq 0 ] || echo "not targets: ${missing[*]}" | diag

# 5. The closing line: what tests/run prints, in both of its forms, is what
# README.md and testing.rst describe.
mapfile -t lines < <(grep -oE 'echo "\$pass passed, \$fail failed[^"]*"' tests/run |
	sed -e 's/^echo "//' -e 's/"$//' -e 's/\$[a-z]*/N/g')
[ ${#lines[@]} -eq 2 ]
ok $? "tests/run prints its closing line in two forms: ${lines[*]:-none}"
for d in README.md "$testing"; do
	r=0
	for l in "${lines[@]}"; do
		case $l in
		*skipped) tr -s ' \n' ' ' < "$d" | grep -qF ", N skipped" || r=1 ;;
		*) tr -s ' \n' ' ' < "$d" | grep -qF "$l" || r=1 ;;
		esac
	done
	ok $r "$d describes the closing line as tests/run prints it (with and without ', N skipped')"
done

# 6. Every test is described in testing.rst; a VM test with the number of
# VMs its header asks for.
missing=()
for t in tests/host/*.sh tests/vm/*.sh; do
	grep -q "^\`\`$t\`\`" "$testing" || { missing+=("$t"); continue; }
	case $t in tests/host/*) continue ;; esac
	v=$(sed -n 's/^# vms: *\([0-9]*\).*/\1/p' "$t" | head -n 1)
	case ${v:-1} in 1) want="one VM" ;; 2) want="two VMs" ;; 3) want="three VMs" ;; *) want="$v VMs" ;; esac
	grep -q "^\`\`$t\`\` ($want)" "$testing" || missing+=("$t (not '$want')")
done
[ ${#missing[@]} -eq 0 ]
ok $? "testing.rst describes every tests/host and tests/vm test, VM tests with their VM count"
[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}" | diag

# 7. The debug lane: the tests the Makefile leaves out (DEBUG_SLOW for
# their time, DEBUG_UPSTREAM for an upstream report) are the ones
# testing.rst and README.md name; CI's list of the others
# (tools/debug-kernel/lane, in priority order with measured times) holds
# every other VM test, and nothing that is not one.
lane=$(section "$testing" "The debug-kernel lane")
slow=$(sed -n 's/^DEBUG_\(SLOW\|UPSTREAM\) *:= *//p' Makefile | tr '\n' ' ')
listed=$(awk '!/^#/ && NF == 2 && $2 ~ /^[0-9]+$/ { print $1 }' tools/debug-kernel/lane | tr '\n' ' ')
missing=()
[ -n "$slow" ] && [ -n "$listed" ] || missing+=("no DEBUG_SLOW in the Makefile or no tests in tools/debug-kernel/lane")
for t in $slow; do
	grep -qF "\`\`$(basename "$t")\`\`" <<< "$lane" || missing+=("$t")
	grep -qF "\`$(basename "$t")\`" README.md || missing+=("$t (README.md)")
done
for t in tests/vm/*.sh; do
	case " $slow $listed " in *" $t "*) continue ;; esac
	missing+=("$t (neither DEBUG_SLOW, DEBUG_UPSTREAM nor in tools/debug-kernel/lane)")
done
for t in $listed; do
	[ -f "$t" ] || missing+=("$t (in tools/debug-kernel/lane, no such test)")
done
grep -qF 'tools/debug-kernel/lane' <<< "$lane" || missing+=("testing.rst does not explain tools/debug-kernel/lane")
[ ${#missing[@]} -eq 0 ]
ok $? "the debug lane's subsets: DEBUG_SLOW and DEBUG_UPSTREAM named in the documents, every other test in CI's lane list"
[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}" | diag

# 8. Programs: every one a test's description names is run by that test
# (or the helpers it sources); interop.rst names exactly what interop.sh
# runs.  A name written as a call, ibv_bind_mw(), is a function, not a
# program.
progs='ibv_[a-z_]*[a-z]|ib_[a-z]+_(bw|lat)|rping|ucmatose|udaddy|mckey|fio'
named() { sed -e 's/[a-z_]*_\*//g' -e 's/[a-z_]*()//g' |
	grep -oE "\\b($progs)\\b" | sort -u; }
run_by() { cat "$1" tests/lib/*.sh | sed 's/#.*//' | named; }
missing=()
for t in tests/vm/*.sh; do
	desc=$(awk -v h="\`\`$t\`\`" 'index($0, h) == 1 { on = 1; next }
		on && /^[^ ]/ { exit } on { print }' "$testing")
	have=$(run_by "$t")
	while IFS= read -r p; do
		[ -n "$p" ] || continue
		grep -qx "$p" <<< "$have" || missing+=("$t: $p")
	done < <(named <<< "$desc")
done
[ ${#missing[@]} -eq 0 ]
ok $? "every program testing.rst names for a VM test is run by it"
[ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}" | diag

intro=$(awk '/^Packet traces$/ { exit } { print }' Documentation/interop.rst | named)
ran=$(sed 's/#.*//' tests/vm/interop.sh | named)
[ -n "$ran" ] && [ "$intro" = "$ran" ]
ok $? "interop.rst names exactly the programs tests/vm/interop.sh runs"
[ "$intro" = "$ran" ] || diff <(echo "$intro") <(echo "$ran") | grep '^[<>]' |
	sed -e 's/^</only in interop.rst:/' -e 's/^>/only in interop.sh:/' | diag

# 9. The accelerator: the override and the line the harness prints are
# the ones the documents describe.
r=0
grep -q 'SROCE_ACCEL' tools/vm/accel && grep -q 'echo "vm: accelerator \$1: \$2"' tools/vm/accel || r=1
grep -q 'SROCE_ACCEL=kvm' README.md && grep -q 'SROCE_ACCEL=tcg' README.md || r=1
grep -qF '``# vm: accelerator tcg: <why>``' "$testing" || r=1
grep -qF 'SROCE_ACCEL=kvm' "$testing" && grep -qF 'SROCE_ACCEL=tcg' "$testing" || r=1
ok $r "SROCE_ACCEL and the accelerator line are documented as tools/vm/accel has them"

# 10. The man page sroce(7): groff formats it without a warning, and it
# names every counter, tracepoint and module parameter the driver has.
man=Documentation/sroce.7
r=0
w=$(groff -man -Tutf8 -ww -z "$man" 2>&1) && [ -z "$w" ] || { r=1; echo "$w" | diag; }
names=$(grep -oh '\.name = "[a-z_]*"' drivers/sroce/counters.c | cut -d'"' -f2
	sed -n 's/^\(TRACE_EVENT\|DEFINE_EVENT\)(\([a-z_]*, \)\?\(sroce_[a-z_]*\).*/\3/p' drivers/sroce/trace.h
	grep -oh 'module_param_cb(\([a-z_]*\)\|module_param(\([a-z_]*\)' drivers/sroce/*.c | sed 's/.*(//')
for x in $names; do
	grep -q "^\.B[R]* $x\b" "$man" || { r=1; echo "sroce.7 does not name $x" | diag; }
done
ok $r "sroce(7) formats cleanly and names every counter, tracepoint and module parameter ($(echo $names | wc -w))"

# 11. Every document parses as reStructuredText without an error (a
# malformed table, a broken literal); Sphinx's own directives (toctree)
# are accepted as they are.
r=0
for f in Documentation/*.rst; do
	w=$(/usr/bin/python3 - "$f" 2>&1 <<'PY'
import sys
from docutils.core import publish_string
from docutils.parsers.rst import Directive, directives


class Sphinx(Directive):
    has_content = True
    optional_arguments = 1
    option_spec = {'maxdepth': directives.unchanged,
                   'caption': directives.unchanged}

    def run(self):
        return []


directives.register_directive('toctree', Sphinx)
with open(sys.argv[1]) as f:
    publish_string(f.read(), source_path=sys.argv[1], writer_name='null',
                   settings_overrides={'report_level': 3, 'halt_level': 5})
PY
) && [ -z "$w" ] || { r=1; echo "$w" | diag; }
done
ok $r "every Documentation/*.rst parses without a reStructuredText error"

echo "1..$n"
[ "$fails" -eq 0 ]

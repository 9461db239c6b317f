# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by the host tests (tests/host/*.sh): TAP lines, counted.
n=0 fails=0
ok() {	# ok RESULT DESCRIPTION: RESULT is an exit status
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fails=$((fails + 1)); fi
}

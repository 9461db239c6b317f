#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# vms: 1
# timeout: 3600
#
# The long wire fuzzer run, for "make fuzz-wire": tests/vm/fuzz-wire.sh with
# the seed and bounds of build/fuzz-wire.env, which the make target writes:
#   FUZZ_SEED=N       the seed (fuzz-wire -s)
#   FUZZ_PACKETS=N    stop after N packets (empty: no bound)
#   FUZZ_SECONDS=N    stop after N seconds (default 3000)
# The VM's fuzz-wire.txt (build/vm/fuzz-wire-vm/vm0/) has the whole log.
env_file="$SROCE_SRC/build/fuzz-wire.env"
FUZZ_SEED='' FUZZ_PACKETS='' FUZZ_SECONDS=''
# shellcheck disable=SC1090
[ -r "$env_file" ] && . "$env_file"
FUZZ_SECONDS=${FUZZ_SECONDS:-3000}
FUZZ_ARGS="-T $FUZZ_SECONDS${FUZZ_SEED:+ -s $FUZZ_SEED}${FUZZ_PACKETS:+ -n $FUZZ_PACKETS}"
# The bound, teardown, the final transfer check and a margin.
FUZZ_TIMEOUT=$((FUZZ_SECONDS + 420))
. "$SROCE_SRC/tests/vm/fuzz-wire.sh"

#!/bin/bash
# Programs run under LD_PRELOAD=build/libhostpin.so, one case file per
# concern (cases/*.sh, in order), environment matrices in matrix/*, and real
# programs compared byte for byte with and without hostpin.
#   run.sh [CASE...]   CASE: a cases/ file name without number and .sh
set -u
. "$(dirname "$0")/lib.sh"
# the names asked for, kept apart: a case file's own `set --` must not
# change which cases run after it
HP_RUN_ONLY=("$@")
for c in "$top"/tests/preload/cases/*.sh; do
	name=$(basename "$c" .sh); name=${name#*-}
	if [ ${#HP_RUN_ONLY[@]} -gt 0 ] &&
		! printf '%s\n' "${HP_RUN_ONLY[@]}" | grep -qx "$name"; then continue; fi
	echo "== $name"
	. "$c"
done
echo "preload tests: $passes passed, $fails failed"
[ $fails -eq 0 ]

#!/bin/bash
# Programs run under LD_PRELOAD=build/libhostpin.so, one case file per
# concern (cases/*.sh, in order), environment matrices in matrix/*, and real
# programs compared byte for byte with and without hostpin.
#   run.sh [CASE...]   CASE: a cases/ file name without number and .sh
set -u
. "$(dirname "$0")/lib.sh"
for c in "$top"/tests/preload/cases/*.sh; do
	name=$(basename "$c" .sh); name=${name#*-}
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
	echo "== $name"
	. "$c"
done
echo "preload tests: $passes passed, $fails failed"
[ $fails -eq 0 ]

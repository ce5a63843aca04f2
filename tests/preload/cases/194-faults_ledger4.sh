# Sourced by tests/preload/run.sh.
# ---- the node ledger, fourth pass (issue 40 items 2, 6 and 11): a long
# --stats job, a program's own SIGBUS handler, HOSTPIN_LEDGER's path. ----
build pinone pinone.c
H=$top/build/hostpin
d=$(mktemp -d)
# 1. (item 2) A `hostpin --stats` job of 1,100 short processes, one after
# another, each pinning a 256 KiB block (mlock backend) under
# HOSTPIN_NODE_MAX_PINNED, on a ledger of the case's own.  Before: the
# slots of the dead processes, kept for the report, filled the table after
# about 1,023 of them; every later one was "not counted node-wide" and the
# report missed them.  Must hold: no process says so (each had a slot),
# and the report counts all 1,100.
out=$(env HOSTPIN_LEDGER="$d/l2" HOSTPIN_NODE_MAX_PINNED=64M HOSTPIN_LOG=warn "$H" --stats -b mlock -t 64K \
	-e HOSTPIN_PIN_AFTER=0 sh -c 'i=0; while [ $i -lt 1100 ]; do "$1" || exit 1; i=$((i + 1)); done' sh "$B/pinone" 2>&1); rc=$?
nc=$(echo "$out" | grep -c 'not counted node-wide')
if [ $rc = 0 ] && [ "$nc" = 0 ] && echo "$out" | grep -q '^hostpin: job report: 1100 processes' &&
	echo "$out" | grep -q 'registrations' ; then
	ok "a --stats job of 1100 short processes: each counted node-wide, the report counts all ($(echo "$out" | grep -m1 'job report'))"
else bad "a --stats job of 1100 processes (want rc 0, 0 'not counted', 'job report: 1100 processes'): rc $rc, $nc not counted"
	echo "$out" | grep -v '^hostpin:   pid ' | tail -12 | sed 's/^/    /'; fi
rm -rf "$d"
unset H

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
# 2. (item 11) Injected: a program that installs its own SIGBUS handler
# after start-up (python -X faulthandler, and a C handler that exits 135)
# pins 16 MiB (mlock backend); another process of the user's truncates the
# ledger file; then the program allocates, pins and frees more (hostpin
# counts all of it).  Before: the next counter update in the ledger's
# mapping raised SIGBUS, which the program's handler took (rc 135).  Must
# hold: the program ends 0, its own counters whole (hostpin_stats in its
# JSON report), and `hostpin status` run then exits 0.
d=$(mktemp -d)
prog='
import sys
b = bytearray(16 << 20)
print("one", flush=True)
sys.stdin.readline()
for i in range(8):
    c = bytearray(16 << 20)
    del c
del b
print("two", flush=True)
'
pyrun() { # LEDGER REPORT: the program above, under hostpin
	env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$1" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 HOSTPIN_LOG=error \
		HOSTPIN_STATS_FILE="$2" python3 -X faulthandler -c "$prog"
}
# the same program with no truncation: what it pins
echo go | pyrun "$d/l0" "$d/r0.json" > /dev/null 2>&1
want=$(grep -o '"pin_calls": [0-9]*' "$d/r0.json" 2>/dev/null)
rm -f "$d/in"; mkfifo "$d/in"
pyrun "$d/l11" "$d/r.json" < "$d/in" > "$d/out" 2>&1 &
p=$!
exec 3>"$d/in"
poll 60 grep -q '^one$' "$d/out"
truncate -s 0 "$d/l11"
echo go >&3
exec 3>&-
wait $p; rc=$?
HOSTPIN_LEDGER="$d/l11" "$top/build/hostpin-status" --all > /dev/null 2>&1; src=$?
got=$(grep -o '"pin_calls": [0-9]*' "$d/r.json" 2>/dev/null)
if [ $rc = 0 ] && grep -q '^two$' "$d/out" && [ -n "$want" ] && [ "$got" = "$want" ] && [ $src = 0 ]; then
	ok "ledger truncated under python -X faulthandler (its own SIGBUS handler): it ends 0, its pins counted ($got, as untruncated), hostpin status exits 0"
else bad "ledger truncated under python -X faulthandler (want rc 0, two, $want as untruncated, status rc 0): rc $rc (135: SIGBUS), status rc $src, $got"
	sed 's/^/    /' "$d/out" | tail -8; fi
unset -f pyrun; unset prog want got
rm -rf "$d"
unset H

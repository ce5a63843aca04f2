# Sourced by tests/preload/run.sh.
# ---- the node ledger, third pass (issue 40): what other processes of the
# user's (an epilog's `rm -rf /dev/shm/*`, a container sharing /dev/shm)
# do to the ledger file while hostpin processes run.  Each fault is
# injected for real, on a ledger of the case's own (HOSTPIN_LEDGER). ----
build twoblocks twoblocks.c
d=$(mktemp -d)
MB=$((1 << 20))
# 1. (item 3) Injected: a process under HOSTPIN_MAX_PINNED=64M (mlock
# backend, pinned at allocation) pins 48 MiB; another process truncates the
# ledger file to 0; then the process allocates 48 MiB more.  Must hold: the
# second block is not pinned (the kernel holds at most 64 MiB locked, and
# hostpin says 48 MiB pinned), exit 0.
rm -f "$d/in" "$d/out"; mkfifo "$d/in"
env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$d/l3" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
	HOSTPIN_MAX_PINNED=64M HOSTPIN_LOG=error "$B/twoblocks" 48 48 < "$d/in" > "$d/out" 2>&1 &
p=$!
exec 3>"$d/in"
poll 60 grep -q '^one$' "$d/out"
truncate -s 0 "$d/l3"
echo go >&3
poll 60 grep -q '^two$' "$d/out"
exec 3>&-
wait $p; rc=$?
lk=$(sed -n 's/^locked //p' "$d/out"); pn=$(sed -n 's/^pinned //p' "$d/out")
if [ $rc = 0 ] && [ "${lk:-999999}" -le 65536 ] && [ "$pn" = $((48 * MB)) ]; then
	ok "ledger truncated under a process at HOSTPIN_MAX_PINNED=64M: its second 48 MiB block stays unpinned (VmLck ${lk} kB, hostpin says $pn)"
else bad "ledger truncated: the process's own cap (want rc 0, VmLck <= 65536 kB, pinned $((48 * MB))): rc $rc, VmLck ${lk:-?} kB, pinned ${pn:-?}"; sed 's/^/    /' "$d/out"; fi
rm -rf "$d"
unset MB

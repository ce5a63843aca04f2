# Sourced by tests/preload/run.sh.
# ---- the node ledger, third pass (issue 40): what other processes of the
# user's (an epilog's `rm -rf /dev/shm/*`, a container sharing /dev/shm)
# do to the ledger file while hostpin processes run.  Each fault is
# injected for real, on a ledger of the case's own (HOSTPIN_LEDGER). ----
build twoblocks twoblocks.c
build ledger_holder ledger_holder.c
ST=$top/build/hostpin-status
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

# 2. (item 1) Injected: a process pins 48 MiB under
# HOSTPIN_NODE_MAX_PINNED=64M; `hostpin status --prometheus-file --watch 1`
# runs; then the ledger file is removed (an epilog's rm -rf /dev/shm/...).
# Must hold: within 20 s a ledger is at the path again holding the
# process's 48 MiB (it rejoined, with its counters); a process started
# then cannot pin 48 MiB more (the node cap holds: VmLck under 48 MiB); a
# process started later still appears in the watcher's file (it reads the
# file at the path, not the removed one); all exit 0.
L=$d/l1
rm -f "$d/in1" "$d/in2"; mkfifo "$d/in1" "$d/in2"
env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
	HOSTPIN_NODE_MAX_PINNED=64M "$B/ledger_holder" 48 < "$d/in1" > "$d/o1" 2>&1 &
p1=$!
exec 4>"$d/in1"
poll 60 grep -q '^held$' "$d/o1"
HOSTPIN_LEDGER="$L" "$ST" --prometheus-file "$d/prom" --watch 1 2>"$d/werr" 4>&- &
wp=$!
poll 60 grep -q "pid=\"$p1\"" "$d/prom" 2>/dev/null
rm -f "$L"
rejoined() { [ -e "$L" ] && [ "$(HOSTPIN_LEDGER="$L" "$ST" --total pinned_bytes_now 2>/dev/null)" = $((48 * MB)) ]; }
poll 20 rejoined; r1=$?
out2=$(echo go | env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
	HOSTPIN_NODE_MAX_PINNED=64M HOSTPIN_LOG=error "$B/twoblocks" 1 48 2>&1; echo "rc=$?")
lk2=$(echo "$out2" | sed -n 's/^locked //p')
env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
	HOSTPIN_NODE_MAX_PINNED=64M "$B/ledger_holder" 8 < "$d/in2" > "$d/o3" 2>&1 4>&- &
p3=$!
exec 5>"$d/in2"
poll 60 grep -q '^held$' "$d/o3"
poll 20 grep -q "pid=\"$p3\"" "$d/prom"; r3=$?
exec 4>&- 5>&-
wait $p1; rc1=$?; wait $p3; rc3=$?
kill $wp 2>/dev/null; wait $wp 2>/dev/null
if [ $r1 = 0 ] && echo "$out2" | grep -q '^rc=0$' && [ "${lk2:-999999}" -lt 49152 ] && [ $r3 = 0 ] &&
	[ $rc1 = 0 ] && [ $rc3 = 0 ]; then
	ok "ledger file removed under a running process: it rejoins the file at the path with its 48 MiB, the node cap holds for a new process (VmLck ${lk2} kB), the Prometheus watcher follows"
else bad "ledger removed (want rejoined within 20 s: $r1 = 0; the next process's VmLck < 49152 kB: ${lk2:-?}; watcher shows a later process: $r3 = 0; rc $rc1/$rc3 = 0):"
	echo "$out2" | sed 's/^/    /'; sed 's/^/    watcher: /' "$d/werr"; fi
unset -f rejoined
rm -rf "$d"
unset MB L

# 3. (item 12) Injected: a program that lists its descriptors, under the
# normal RLIMIT_NOFILE and under `prlimit --nofile=8`; then one that
# closes every descriptor but 0-2 and opens files of its own while it
# holds 16 MiB pinned.  Must hold: no descriptor of the ledger file in
# either listing (only its mapping, in /proc/self/maps); the program that
# closed everything still counts as live in `hostpin status` (its slot's
# lock held) and exits 0.
d=$(mktemp -d)
L=$d/l12
fds1=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" ls -l /proc/self/fd/ 2>&1 | grep -c "$L")
fds2=$(prlimit --nofile=8 env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" ls -l /proc/self/fd/ 2>&1 | grep -c "$L")
maps=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" grep -c "$L" /proc/self/maps)
out=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$L" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 python3 -c '
import os, subprocess, sys
os.closerange(3, 65536)
b = bytearray(16 << 20)
fs = [open("/dev/null") for _ in range(40)]
print("open-fds", sum(1 for f in os.listdir("/proc/self/fd") if os.path.realpath("/proc/self/fd/" + f) == sys.argv[1]))
st = subprocess.run([sys.argv[2], "--all"], env=dict(os.environ, LD_PRELOAD=""), capture_output=True, text=True).stdout
print("live", sum(1 for l in st.splitlines() if l.split()[:1] == [str(os.getpid())]))
' "$L" "$ST" 2>&1; echo "rc=$?")
if [ "$fds1" = 0 ] && [ "$fds2" = 0 ] && [ "$maps" = 1 ] && echo "$out" | grep -q '^open-fds 0$' &&
	echo "$out" | grep -q '^live 1$' && echo "$out" | grep -q '^rc=0$'; then
	ok "no descriptor of the ledger in the program's table (ls /proc/self/fd, also under --nofile=8: none; its mapping only); a program that closed every descriptor stays live in hostpin status"
else bad "the ledger's descriptor (want 0, 0 listed, 1 mapping, then open-fds 0, live 1, rc=0): $fds1, $fds2, $maps"; echo "$out" | sed 's/^/    /'; fi
rm -rf "$d"
unset L

# 4. (item 6, temporary names) Injected, as root: a stale temporary file
# of the old fixed name (LEDGER.new-1) beside a ledger not made yet, then
# a process that is pid 1 of a PID namespace of its own; and user nobody
# taking the Prometheus writer's temporary name (PATH.tmp.PID) in a sticky
# directory before `hostpin status --prometheus-file` starts.  Must hold:
# the process makes and joins the ledger; the Prometheus file is written
# (exit 0).
if [ "$(id -u)" = 0 ] && unshare -p -f --mount-proc true 2>/dev/null; then
	d=$(mktemp -d); chmod 1777 "$d"
	: > "$d/l6.new-1"
	out=$(unshare -p -f --mount-proc env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$d/l6" HOSTPIN_LOG=info /bin/true 2>&1)
	outp=$(sh -c 'runuser -u nobody -- touch "$1.tmp.$$"; exec env HOSTPIN_LEDGER="$2" "$3" --prometheus-file "$1"' sh "$d/m.prom" "$d/l6" "$ST" 2>&1; echo "rc=$?")
	if echo "$out" | grep -q "ledger $d/l6, slot" && echo "$outp" | grep -q '^rc=0$' && [ -s "$d/m.prom" ]; then
		ok "a stale LEDGER.new-1 and pid 1 of a PID namespace: the ledger is made; nobody's squat on the Prometheus temporary name: the file is written"
	else bad "temporary names (want 'ledger $d/l6, slot', the Prometheus file written):"; echo "$out" | sed 's/^/    /'; echo "$outp" | sed 's/^/    /'; fi
	rm -rf "$d"
else
	echo "SKIP: not root or no unshare -p: temporary-name collisions not injected"
fi

# 5. (item 8) Injected, as root: two processes, each pid 1 of its own PID
# namespace, share a ledger, each pinning 64 MiB.  Must hold: `hostpin
# status --prometheus` shows both (two live_bytes series with pid "1") and
# no two series with the same name and labels.
if [ "$(id -u)" = 0 ] && unshare -p -f --mount-proc true 2>/dev/null; then
	d=$(mktemp -d); chmod 755 "$d"
	LH=$B/ledger_holder
	export HOSTPIN_LEDGER=$d/l8
	ns_hold 2
	prom=$("$ST" --all --prometheus 2>&1)
	exec 3>&-
	for p in $ns_pids; do wait $p; done
	unset HOSTPIN_LEDGER
	dups=$(echo "$prom" | grep '^hostpin_process_' | sed 's/ [^ ]*$//' | sort | uniq -d | wc -l)
	ones=$(echo "$prom" | grep -c '^hostpin_process_live_bytes{pid="1",')
	if [ "$dups" = 0 ] && [ "$ones" = 2 ]; then
		ok "two pid-1 processes of two PID namespaces in one ledger: two series each, no duplicate ($(echo "$prom" | grep -m1 '^hostpin_process_live_bytes{pid="1",' | cut -d, -f1-2))"
	else bad "Prometheus series of two pid-1 processes (want 0 duplicates, 2 pid-1 live_bytes series): $dups, $ones"; echo "$prom" | grep 'live_bytes{' | sed 's/^/    /'; fi
	rm -rf "$d"; unset LH
else
	echo "SKIP: not root or no unshare -p: PID namespaces not injected"
fi

# 6. (item 5) Injected: another process of the user's writes a LIVE slot
# that no one can reap (no lock, PID namespace unknown) claiming half the
# machine's memory.  Must hold: under HOSTPIN_NODE_MAX_PINNED=64M a
# process still pins its 32 MiB block.
d=$(mktemp -d)
$CC $CFL -o "$B/ledger_poke" ledger_poke.c || bad "build ledger_poke"
half=$(( $(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) * 512 ))
env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$d/l5" /bin/true
"$B/ledger_poke" "$d/l5" "$half" || bad "poke"
env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$d/l5" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 HOSTPIN_NODE_MAX_PINNED=64M \
	HOSTPIN_STATS_FILE="$d/r.json" "$B/ledger_holder" 32 < /dev/null > /dev/null
if grep -q '"pinned_bytes_peak": 33554432,' "$d/r.json"; then
	ok "an unreapable slot claiming half the memory ($half bytes) does not block pinning: 32 MiB pinned under 64 MiB"
else bad "an unreapable slot blocks pinning: $(grep -o '"pinned_bytes_peak": [0-9]*' "$d/r.json")"; fi
rm -rf "$d"; unset half

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the first hour (issue 26, items 4, 6, 9 and `make demo PYTHON=`) ----
# What a new user meets first: a report that says why nothing was pinned,
# --stats without a ledger, `hostpin status` without a terminal and with
# a backend column, the launcher's validation, the demo's interpreter.
H=$top/build/hostpin
ST=$top/build/hostpin-status
build ledger_holder ledger_holder.c
fh=$(mktemp -d)
chmod 755 "$fh"
# the per-process report's "nothing pinned" line (HOSTPIN_STATS=1)
why() { echo "$1" | sed -n 's/^hostpin\[[0-9]*\]:   \(nothing pinned.*\)/\1/p'; }

# -- item 4: why nothing was pinned, in one line --
# Injected: no device driver in the process (plain pinmany, backend auto).
# Must hold: the report names it and counts the large blocks.
out=$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off "$B/pinmany" 12 2>&1); rc=$?
w=$(why "$out")
[ $rc -eq 0 ] && [ "$w" = "nothing pinned: no CUDA or Level Zero driver was loaded (0 of 12 large blocks pinned)" ] &&
	ok "no driver loaded: '$w'" || { bad "no driver loaded (rc $rc): '$w'"; echo "$out" | tail -4 | sed 's/^/    /'; }
# Injected: HOSTPIN_BACKEND=cuda without a CUDA driver.
w=$(why "$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off HOSTPIN_BACKEND=cuda "$B/pinmany" 3 2>&1)")
[ "$w" = "nothing pinned: no CUDA driver was loaded (0 of 3 large blocks pinned)" ] &&
	ok "no CUDA driver under HOSTPIN_BACKEND=cuda: named" || bad "no CUDA driver: '$w'"
# Injected: the fake CUDA driver loaded, the program never calls cuInit
# (cuda_prog noinit): the device is never ready.
out=$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off FAKE_CUDA_LOG=/dev/null "$B/cuda_prog" noinit 2>&1); rc=$?
w=$(why "$out")
[ $rc -eq 0 ] && [ "$w" = "nothing pinned: a device driver was loaded, but the device was never ready (no CUDA context current, no successful zeInit) (0 of 4 large blocks pinned)" ] &&
	ok "CUDA driver loaded, never ready: '$w'" || { bad "never ready (rc $rc): '$w'"; echo "$out" | tail -3 | sed 's/^/    /'; }
# Injected: the Level Zero loader (with the fake driver) linked, zeInit
# never called, HOSTPIN_BACKEND=level_zero.
if [ -z "${HP_NO_LEVEL_ZERO:-}" ]; then
	w=$(why "$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off HOSTPIN_BACKEND=level_zero ZE_ENABLE_ALT_DRIVERS="$ZE1" \
		FAKE_ZE_LOG=/dev/null "$B/ze_prog" noinit 2>&1)")
	[ "$w" = "nothing pinned: the Level Zero loader was loaded, but zeInit never succeeded (0 of 4 large blocks pinned)" ] &&
		ok "Level Zero loaded, zeInit never called: named" || bad "Level Zero never ready: '$w'"
fi
# Injected: every block below HOSTPIN_THRESHOLD (4 MiB blocks, 64M).
w=$(why "$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off HOSTPIN_THRESHOLD=64M "$B/pinmany" 3 2>&1)")
[ "$w" = "nothing pinned: no block of HOSTPIN_THRESHOLD (64.0M) or more was allocated" ] &&
	ok "blocks below the threshold: '$w'" || bad "below the threshold: '$w'"
# Injected: the fake CUDA device ready, 16 copies over 8 blocks, none
# reaching HOSTPIN_PIN_AFTER=100.
out=$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off HOSTPIN_PIN_AFTER=100 FAKE_CUDA_LOG=/dev/null "$B/cuda_prog" work 2>&1); rc=$?
w=$(why "$out")
[ $rc -eq 0 ] && [ "$w" = "nothing pinned: no block reached HOSTPIN_PIN_AFTER=100 device copies (16 copies seen) (0 of 12 large blocks pinned)" ] &&
	ok "copies below HOSTPIN_PIN_AFTER: '$w'" || { bad "PIN_AFTER (rc $rc): '$w'"; echo "$out" | tail -3 | sed 's/^/    /'; }
# Must hold too: when something was pinned there is no such line, and the
# report's sizes are human ("16.0M"), not "16777216 bytes".
out=$(env $P HOSTPIN_STATS=1 HOSTPIN_LEDGER=off FAKE_CUDA_LOG=/dev/null "$B/cuda_prog" work 2>&1)
if [ -z "$(why "$out")" ] && echo "$out" | grep -q "^hostpin\[[0-9]*\]:   pinned now [0-9]* ranges, [0-9.]*[BKMG]; peak [0-9]*\.[0-9][KMG];" &&
	echo "$out" | grep -q "^hostpin\[[0-9]*\]:   blocks now 0 (0B), peak 8 (64.0M)$" && ! echo "$out" | grep -q "^hostpin\[.*[0-9] bytes"; then
	ok "something pinned: no 'nothing pinned' line; sizes as humans read them (64.0M)"
else bad "report when pinned / human sizes:"; echo "$out" | grep "^hostpin\[" | head -8 | sed 's/^/    /'; fi
# The merged report (hostpin --stats, from the ledger) says the same.
out=$(HOSTPIN_LEDGER="$fh/ledger" "$H" --stats "$B/pinmany" 5 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx "hostpin:   nothing pinned: no CUDA or Level Zero driver was loaded (0 of 5 large blocks pinned)" &&
	ok "merged report: why nothing was pinned" || { bad "merged report, no driver (rc $rc):"; echo "$out" | tail -4 | sed 's/^/    /'; }
out=$(HOSTPIN_LEDGER="$fh/ledger" FAKE_CUDA_LOG=/dev/null "$H" --stats -e HOSTPIN_PIN_AFTER=100 "$B/cuda_prog" work 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx "hostpin:   nothing pinned: no block reached HOSTPIN_PIN_AFTER=100 device copies (16 copies seen) (0 of 12 large blocks pinned)" &&
	ok "merged report: copies below HOSTPIN_PIN_AFTER" || { bad "merged report, PIN_AFTER (rc $rc):"; echo "$out" | tail -4 | sed 's/^/    /'; }
out=$(HOSTPIN_LEDGER="$fh/ledger" "$H" --stats /bin/true 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -qx "hostpin:   nothing pinned: no block of HOSTPIN_THRESHOLD (1.0M) or more was allocated" &&
	ok "merged report of a job with small allocations only: the threshold named" || { bad "merged report, small job (rc $rc):"; echo "$out" | tail -3 | sed 's/^/    /'; }

# -- item 6: --stats without a ledger: a warning, then per-process reports --
# Injected: HOSTPIN_LEDGER=off; a ledger in a directory that does not
# exist; as root, /dev/shm a read-only tmpfs (the default ledger cannot be
# made).  Must hold: a warning that names the cause, a report printed, the
# command's exit status kept.
stats_fallback() { # label want-in-warning env...
	local label=$1 want=$2; shift 2
	local out rc
	out=$(env "$@" "$H" --stats -b mlock "$B/pinmany" 2 2>&1); rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "^hostpin: --stats: no merged report: .*$want.*HOSTPIN_STATS=1" &&
		echo "$out" | grep -q "^hostpin\[[0-9]*\]: report (backend mlock" &&
		echo "$out" | grep -q "^hostpin\[[0-9]*\]:   pin calls 2,"; then ok "--stats, $label: warned, the process's own report printed"
	else bad "--stats, $label (rc $rc):"; echo "$out" | tail -4 | sed 's/^/    /'; fi
}
stats_fallback "HOSTPIN_LEDGER=off" "HOSTPIN_LEDGER=off" HOSTPIN_LEDGER=off
stats_fallback "a ledger that cannot be made" "$fh/no/such/dir/ledger cannot be made" HOSTPIN_LEDGER="$fh/no/such/dir/ledger"
out=$(env HOSTPIN_LEDGER=off "$H" --stats sh -c 'exit 3' 2>&1); rc=$?
[ $rc -eq 3 ] && echo "$out" | grep -q "^hostpin: --stats: no merged report: HOSTPIN_LEDGER=off" &&
	ok "--stats without a ledger: warned, the command's exit status kept" || bad "exit status without a ledger (rc $rc): $out"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	out=$(unshare -m sh -c 'mount -t tmpfs -o ro,size=1m tmpfs /dev/shm && exec env -u HOSTPIN_LEDGER "$1" --stats -b mlock "$2" 2' _ "$H" "$B/pinmany" 2>&1); rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "^hostpin: --stats: no merged report: no directory .* in /dev/shm" &&
		echo "$out" | grep -q "^hostpin\[[0-9]*\]:   pin calls 2,"; then ok "--stats, /dev/shm read-only (default ledger): warned, own report printed"
	else bad "--stats, /dev/shm read-only (rc $rc):"; echo "$out" | tail -4 | sed 's/^/    /'; fi
else echo "SKIP: --stats with a read-only /dev/shm needs root and unshare -m"; fi

# -- item 9: hostpin status --
out=$("$ST" --help 2>&1)
miss=""
for o in --all --watch --count --total --report --help bytes_now pinned_bytes_now cached_bytes cached_blocks pin_calls copies_registered; do
	echo "$out" | grep -q -- "$o" || miss="$miss $o"
done
[ -z "$miss" ] && ok "hostpin status --help names every option and --total's counters" || bad "status --help lacks:$miss"
out=$("$H" --help 2>&1)
echo "$out" | grep -q "hostpin status .*--total" && ok "the launcher's help names hostpin status --total" || bad "launcher help: $(echo "$out" | grep 'hostpin status')"
# Injected: three held processes in a private ledger: over the fake CUDA
# driver (ready), without any driver (backend auto), with mlock.  Must
# hold: their BACKEND and STATE; --watch into a pipe: no escape codes,
# snapshots separated by one blank line.
sl=$fh/status-ledger
mkfifo "$fh/in"
env $P HOSTPIN_LEDGER="$sl" FAKE_CUDA_LOG=/dev/null "$B/job_prog" rank 64 < "$fh/in" > "$fh/o1" 2>&1 &
p1=$!
env $P HOSTPIN_LEDGER="$sl" "$B/ledger_holder" 4 < "$fh/in" > "$fh/o2" 2>&1 &
p2=$!
env $P HOSTPIN_LEDGER="$sl" HOSTPIN_BACKEND=mlock "$B/ledger_holder" 4 < "$fh/in" > "$fh/o3" 2>&1 &
p3=$!
exec 4> "$fh/in"
end=$((SECONDS + 60))
until grep -q freed "$fh/o1" 2>/dev/null && grep -q held "$fh/o2" 2>/dev/null && grep -q held "$fh/o3" 2>/dev/null; do
	[ $SECONDS -lt $end ] || break
	sleep 0.2
done
tab=$(HOSTPIN_LEDGER="$sl" "$ST" --all)
plain=$(HOSTPIN_LEDGER="$sl" "$ST" --all --watch 1 --count 2 | cat)
exec 4>&-
wait $p1 $p2 $p3
if echo "$tab" | grep -q "^ *$p1 .* auto>cuda *ready .*job_prog" && echo "$tab" | grep -q "^ *$p2 .* auto *no-driver .*ledger_holder" &&
	echo "$tab" | grep -q "^ *$p3 .* mlock *- .*ledger_holder" && echo "$tab" | head -1 | grep -q "BACKEND *STATE"; then
	ok "hostpin status: BACKEND and STATE columns (auto>cuda ready, auto no-driver, mlock)"
else bad "status backend column:"; echo "$tab" | sed 's/^/    /'; fi
# On a terminal (script(1) gives it one) the screen is still redrawn.
tty=2
if command -v script >/dev/null 2>&1; then
	tty=$(HOSTPIN_LEDGER="$sl" script -qec "'$ST' --watch 1 --count 2" /dev/null 2>&1 | grep -c $'\033\[H\033\[J')
else echo "SKIP: hostpin status --watch on a terminal: no script(1)"; fi
if ! printf '%s' "$plain" | grep -q $'\033' &&
	[ "$(echo "$plain" | grep -c '^ *PID ')" = 2 ] &&
	[ "$(echo "$plain" | grep -c '^$')" = 1 ] && echo "$plain" | grep -B1 '^$' | head -1 | grep -q "process" && [ "$tty" = 2 ]; then
	ok "hostpin status --watch into a pipe: no escape codes, two snapshots, one blank line between (on a terminal: redrawn)"
else bad "status --watch into a pipe (clear-screens on a terminal: $tty of 2):"; printf '%s\n' "$plain" | cat -A | head -6 | sed 's/^/    /'; fi
out=$("$ST" --count x 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "'x' is not a count" && ok "status --count x: rejected, named" || bad "status --count x (rc $rc): $out"

# -- item 9: the launcher validates its values, names what was set --
# (each with valid values beside it, which must pass: 64K, 50%, 2GiB, 1MB)
for a in "-t 4X" "--threshold=1k" "-t 2T" "-m 101%" "--max-pinned=lots"; do
	o=${a%%[ =]*} v=${a#*[ =]}
	out=$("$H" -t 64K -m 50% --max-pinned=2GiB --threshold 1MB $a /bin/echo ran 2>&1); rc=$?
	[ $rc -eq 2 ] && [ "$out" = "$(echo "$out" | grep "^hostpin: $o: '$v' is not a size from .* to .*: a number of bytes with an optional K, M, G or T")" ] &&
		ok "launcher rejects $a alone, naming the value and what was expected" || bad "launcher $a (rc $rc): $out"
done
out=$("$H" -L "$fh" /bin/echo ran 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "^hostpin: -L: '$fh' is a directory" && ok "launcher rejects a directory as the log file" || bad "-L dir (rc $rc): $out"
out=$(HOSTPIN_LIB=/nope "$H" /bin/true 2>&1); rc=$?
[ $rc -eq 127 ] && echo "$out" | grep -q "^hostpin: HOSTPIN_LIB=/nope was not found" && ! echo "$out" | grep -q "(set HOSTPIN_LIB)" &&
	ok "HOSTPIN_LIB=/nope: named as set, not found" || bad "HOSTPIN_LIB=/nope (rc $rc): $out"

# -- the launcher and the library say the same of a size: the same words
# for the same knob (bounds 4K..1T, not bytes; "N% of the memory base") --
for pair in "-t HOSTPIN_THRESHOLD 4X" "-m HOSTPIN_MAX_PINNED lots"; do
	set -- $pair
	lw=$("$H" "$1" "$3" /bin/true 2>&1 | sed -n "s/^hostpin: $1: '$3' is not //p")
	bw=$(env $P "$2=$3" /bin/true 2>&1 | sed -n "s/^hostpin\[[0-9]*\]: invalid $2=\"$3\": expected \(.*\); using the default .*/\1/p")
	[ -n "$lw" ] && [ "$lw" = "$bw" ] && ok "$1 $3 and $2=$3: the same words ('$lw')" ||
		bad "launcher and library differ on $2: launcher '$lw', library '$bw'"
done

# -- --stats: how the command ended, then the job's summary, then its processes; with the mlock
# backend, one line saying there is nothing to gain without a GPU --
out=$("$H" --stats -b mlock -t 1M -- /usr/bin/python3 -c 'b = bytearray(8 << 20); c = bytearray(8 << 20)' 2>&1); rc=$?
first=$(echo "$out" | grep '^hostpin' | sed -n 2p)
if [ $rc -eq 0 ] && echo "$first" | grep -q '^hostpin: job report: 1 process' &&
	echo "$out" | grep '^hostpin' | tail -1 | grep -q '^hostpin:   backend mlock: .*nothing to gain without one' &&
	[ "$(echo "$out" | grep -c '^hostpin:   pid ')" = 1 ]; then
	ok "--stats: 'job report:' first, the process under it, and the mlock backend says there is nothing to gain without a GPU"
else bad "--stats report order or mlock line (rc $rc):"; echo "$out" | sed 's/^/    /'; fi
out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 /usr/bin/python3 -c 'b = bytearray(8 << 20)' 2>&1)
echo "$out" | grep -q '^hostpin\[[0-9]*\]:   backend mlock: .*nothing to gain without one' &&
	ok "HOSTPIN_STATS=1 with the mlock backend: the process's report says there is nothing to gain without a GPU" ||
	bad "HOSTPIN_STATS=1 mlock report lacks the no-GPU line: $(echo "$out" | tail -3)"

# -- make demo PYTHON=: the demo runs that interpreter --
# Injected: PYTHON= a wrapper that records its run, then execs
# /usr/bin/python3; DEMO_DRY_RUN=1 stops after the interpreter and the
# device are chosen (STEPS=1 keeps a demo that ignores both short).
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	printf '#!/bin/sh\necho "$*" >> "%s/py.log"\nexec /usr/bin/python3 "$@"\n' "$fh" > "$fh/py"
	chmod +x "$fh/py"
	out=$(make -s -C "$top" demo PYTHON="$fh/py" DEMO_DRY_RUN=1 STEPS=1 2>&1); rc=$?
	[ $rc -eq 0 ] && [ -s "$fh/py.log" ] && echo "$out" | grep -q "^demo: would run 1 steps with $fh/py on " &&
		ok "make demo PYTHON=wrapper: the wrapper ran ($(wc -l < "$fh/py.log") call(s))" || { bad "make demo PYTHON= (rc $rc):"; echo "$out" | tail -3 | sed 's/^/    /'; }
else echo "SKIP: make demo PYTHON=: /usr/bin/python3 has no PyTorch"; fi

# -- issue 42, item 3: the report says first how the command ended, and
# when it exec'd onward (a pyenv shim) --
# Injected: a command that fails (exit 1, as a ModuleNotFoundError does),
# one killed by SIGKILL, a shim that execs python3, a #! script that exits
# 3.  Must hold: the first hostpin line gives the status (the signal's name
# and 137); the shim's report says it exec'd onward and what the process
# ended as; the script's does not (its interpreter is no shim); the
# launcher exits with the command's status.
r1=$("$H" --stats -b mlock -- /usr/bin/python3 -c 'import hostpin_no_such_module' 2>&1); c1=$?
r2=$("$H" --stats -b mlock -- /bin/sh -c 'kill -KILL $$' 2>&1); c2=$?
printf '#!/bin/sh\nexec /usr/bin/python3 -c "raise SystemExit(0)"\n' > "$fh/shim"
printf '#!/bin/sh\nexit 3\n' > "$fh/script"
chmod +x "$fh/shim" "$fh/script"
# (a ledger of their own: a make check beside this one, in a clean clone,
# removes root's with dpkg -r's hostpin status --clean, whose check and
# removal race with a process that attaches between them)
r3=$(HOSTPIN_LEDGER="$fh/ledger-shim" "$H" --stats -b mlock -- "$fh/shim" 2>&1); c3=$?
r4=$(HOSTPIN_LEDGER="$fh/ledger-shim" "$H" --stats -b mlock -- "$fh/script" 2>&1); c4=$?
f1=$(echo "$r1" | grep '^hostpin' | head -1) f2=$(echo "$r2" | grep '^hostpin' | head -1)
if [ $c1 -eq 1 ] && [ "$f1" = "hostpin: the command (/usr/bin/python3) failed with status 1" ] &&
	[ $c2 -eq 137 ] && [ "$f2" = "hostpin: the command (/bin/sh) was ended by signal 9 (Killed); exit status 137" ]; then
	ok "--stats: the report's first line says how the command ended (failed with status 1; signal 9, 137)"
else bad "--stats exit status line (rc $c1, $c2): [$f1] [$f2]"; fi
if [ $c3 -eq 0 ] && echo "$r3" | grep -qxF "hostpin:   $fh/shim exec'd onward (a shim or a wrapper); the process ended as: /usr/bin/python3 -c raise SystemExit(0)" &&
	[ $c4 -eq 3 ] && echo "$r4" | head -1 | grep -qxF "hostpin: the command ($fh/script) failed with status 3" &&
	! echo "$r4" | grep -q "exec'd onward"; then
	ok "--stats: a shim that execs python3 is said to have exec'd onward; a #! script is not"
else bad "--stats exec'd onward (rc $c3, $c4):"; echo "$r3$r4" | sed 's/^/    /'; fi
# Injected: a wrapper that pinned (its slot kept for the report), then
# exec'd /bin/true, in a ledger of its own (the new image's slot comes
# after the wrapper's).  Must hold: the report says what the process ended
# as (/bin/true: the image that exited), not the wrapper's image before
# the exec (the first slot of its pid: the report said nothing of the
# exec), and counts it once (its last image did nothing, its first did).
# The idle slot of a shim's last image is kept for the report
# whatever other processes claim meanwhile: tests/unit/check_ledger.c.
r5=$(HOSTPIN_LEDGER="$fh/ledger-exec" "$H" --stats -b mlock -- "$B/pinmany" 2 /bin/true 2>&1); c5=$?
if [ $c5 -eq 0 ] && echo "$r5" | grep -q "^hostpin: job report: 1 process (0 still running; 0 that did nothing left out)" &&
	echo "$r5" | grep -qxF "hostpin:   $B/pinmany exec'd onward (a shim or a wrapper); the process ended as: /bin/true"; then
	ok "--stats: a wrapper that pinned, then exec'd: the report names the image it ended as"
else bad "--stats wrapper that pinned, then exec'd (rc $c5):"; echo "$r5" | sed 's/^/    /'; fi

# -- issue 42, item 7: hostpin status --clean removes the ledgers no
# process uses (they outlive every process, and an uninstall) --
# Injected: a private tmpfs on /dev/shm (unshare -m); a ledger made by
# /bin/true, a holder process attached to it; then a process of a job
# whose launcher (this shell) still runs.  Must hold: --clean keeps the
# ledger while the holder runs (naming its pid), removes it and its
# directory once the holder has exited (/dev/shm empty after), and keeps
# the next one while the job's launcher has yet to print its report.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	out=$(LH=$B/ledger_holder d=$fh ST=$ST LIB=$LIB unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=4m tmpfs /dev/shm || exit 9
		LD_PRELOAD="$LIB" /bin/true
		hold
		echo "A:$("$ST" --clean 2>&1 | tr "\n" "|")"
		exec 3>&-; wait $hold_pid
		echo "B:$("$ST" --clean 2>&1 | tr "\n" "|")"
		echo "LS:$(ls -A /dev/shm)"
		HOSTPIN_JOB=$$ LD_PRELOAD="$LIB" /bin/true
		echo "C:$("$ST" --clean 2>&1 | head -1)"' 2>&1)
	led="/dev/shm/hostpin-$(id -u).d/ledger-v"
	if echo "$out" | grep -q "^A:kept ${led}[0-9]*-[0-9]*: in use by pid [0-9]*|hostpin status --clean: 0 ledgers removed, 1 in use kept|$" &&
		echo "$out" | grep -q "^B:removed ${led}[0-9]*-[0-9]*: no process uses it|removed /dev/shm/hostpin-$(id -u).d/|hostpin status --clean: 1 ledger removed, 0 in use kept|$" &&
		echo "$out" | grep -qx "LS:" &&
		echo "$out" | grep -q "^C:kept ${led}[0-9]*-[0-9]*: launcher [0-9]* has yet to report its job$"; then
		ok "hostpin status --clean: keeps a ledger in use (or holding a running launcher's job), removes it and its directory once no process maps it"
	else bad "hostpin status --clean:"; echo "$out" | sed 's/^/    /'; fi
else echo "SKIP: hostpin status --clean: not root (or no unshare -m): no private /dev/shm"; fi
# Injected: --clean held (clean_gate.c) at its first call that takes the
# unused ledger's name away, after its check found no process using it;
# meanwhile a process attaches to the ledger (ledger_holder, pinning);
# then the clean goes on.  Before: the clean removed the ledger the
# process had just attached to ("no process uses it"): the process
# counted in a removed file while the next one made a new ledger (the
# node's accounting split).  Must hold: the ledger is kept, naming that
# process, and is still the file at its name (the same inode).
$CC $CFL -shared -fPIC -o "$B/libclean_gate.so" clean_gate.c -ldl || bad "build clean_gate"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	out=$(LH=$B/ledger_holder d=$fh ST=$ST LIB=$LIB G=$B/libclean_gate.so unshare -m --propagation private bash -c '
		mount -t tmpfs -o size=4m tmpfs /dev/shm || exit 9
		LD_PRELOAD="$LIB" /bin/true
		led=$(echo /dev/shm/hostpin-$(id -u).d/ledger-v*); i0=$(stat -c %i "$led")
		rm -f "$d/go" "$d/gone"; mkfifo "$d/go" "$d/gone"
		CLEAN_GATE_OUT=$d/go CLEAN_GATE_IN=$d/gone LD_PRELOAD=$G "$ST" --clean > "$d/cl" 2>&1 &
		cl=$!
		read -r x < "$d/go"
		hold
		: > "$d/gone"; wait $cl
		echo "HOLD:$hold_pid"
		echo "CL:$(tr "\n" "|" < "$d/cl")"
		echo "SAME:$([ "$(stat -c %i "$led" 2>&1)" = "$i0" ] && echo yes)"
		exec 3>&-; wait $hold_pid' 2>&1)
	led="/dev/shm/hostpin-$(id -u).d/ledger-v"
	hp=$(echo "$out" | sed -n 's/^HOLD://p')
	if [ -n "$hp" ] && echo "$out" | grep -q "^CL:kept ${led}[0-9]*-[0-9]*: in use by pid $hp|hostpin status --clean: 0 ledgers removed, 1 in use kept|$" &&
		echo "$out" | grep -qx "SAME:yes"; then
		ok "hostpin status --clean: a process that attaches between its check and its removal keeps the ledger (named), at its name"
	else bad "hostpin status --clean, a process attaching between check and removal:"; echo "$out" | sed 's/^/    /'; fi
else echo "SKIP: hostpin status --clean against an attaching process: not root (or no unshare -m)"; fi
rm -rf "$fh"

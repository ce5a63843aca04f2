# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Level Zero, issue 22 item 14 (second part), the interleaving forced:
# a worker's mmap tracked while another thread's zeInit returns ----
if [ -n "${HP_NO_LEVEL_ZERO:-}" ]; then echo "SKIP: no Level Zero loader in this tier"; return 0; fi

# 14c. Injects: a worker thread's 2 MiB mmap held by gdb inside hostpin at
# the one point where a block can be lost: under HOSTPIN_PIN_AFTER=0 the
# backend has just answered "not ready" for it (zeInit not yet returned)
# and the block is not yet marked pending.  While it is held, the main
# thread's zeInit returns and hostpin's adoption there looks for pending
# blocks: none at all, or (ZE_WINDOW_BEFORE=1) one block of the main
# thread's from before zeInit, so that the adoption walks the registry and
# passes the worker's block unmarked.  Then the worker goes on.  gdb stops
# the worker with a one-shot breakpoint on the function that answers (the
# auto backend's ready()), taken only on the worker's mmap (ze_prog's
# w_mapping), and `finish`, so the worker stands just after the answer;
# the main thread alone then runs its zeInit (scheduler-locking) up to
# ze_window_after_init.  Nothing is timed: each step waits for a stop.
# Must hold: every block imported when the worker's mmap returns (nothing
# after it adopts it: no large malloc, no second zeInit), no violation in
# the fake driver, nothing imported at exit.  On f632078 the worker's block
# stays pending for good: "window_mmap: held=1 flags=0x42 imported=0".
# HP_SHOW_GDB=1 prints gdb's session.  (Under the defaults there was a
# second such point, a block marked lazy just as auto chose Level Zero,
# whose copies were not counted then; since issue 41 they are, so a lazy
# block stays lazy whichever device auto chooses: that window is gone.)
ze_window() { # name break-at env...
	local name=$1 at=$2; shift 2
	if ! command -v gdb >/dev/null; then echo "SKIP: $name: no gdb"; return 0; fi
	local log cmds out
	log=$(mktemp) cmds=$(mktemp)
	cat >"$cmds" <<EOF
set pagination off
set confirm off
set breakpoint pending on
set print thread-events off
set startup-with-shell off
$(for v in "$P" HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$log" "$@"; do
	echo "set environment $v"; done)
tbreak $at if w_mapping == 1
run
finish
bt 4
echo HELD-IN-WINDOW\n
set var w_stopped = 1
set scheduler-locking on
thread 1
tbreak ze_window_after_init
continue
echo MAIN-PAST-ZEINIT\n
set scheduler-locking off
continue
EOF
	out=$(timeout 120 gdb -q -batch -nx -x "$cmds" --args "$B/ze_prog" window_mmap 2>&1)
	if echo "$out" | grep -q "ptrace: Operation not permitted\|Could not trace\|not permitted"; then
		echo "SKIP: $name: ptrace not permitted here"
	elif ! echo "$out" | grep -q HELD-IN-WINDOW || ! echo "$out" | grep -q MAIN-PAST-ZEINIT ||
		! echo "$out" | grep -q "window_mmap: held=1"; then
		bad "level zero $name: gdb did not hold the worker where asked"
		echo "$out" | grep -v "^\[\|^$" | tail -8 | sed 's/^/    /'
	# gdb's last continue may lose the race with the exiting process's
	# threads ("Couldn't get registers: No such process", 2 runs in 18
	# under load, on older code too): then the fake's EXIT line (zelog:
	# nothing imported at exit) says the program reached its end
	elif { echo "$out" | grep -q "exited normally" ||
		echo "$out" | grep -q "Couldn't get registers: No such process"; } &&
		echo "$out" | grep -q "ze_prog window_mmap: ok" && zelog "$log"; then
		ok "level zero $name"
	else
		bad "level zero $name: $(echo "$out" | grep -E "window_mmap:|CHECK|exited" | tr '\n' ' ')"
	fi
	[ -n "${HP_SHOW_GDB:-}" ] && echo "$out"
	rm -f "$log" "$cmds"
}
for before in ${HP_WINDOW_BEFORE:-0 1}; do
	ze_window "worker's mmap held between \"not ready\" and pending while zeInit returns: imported [PIN_AFTER=0, block before zeInit: $before]" \
		auto_ready HOSTPIN_PIN_AFTER=0 ZE_WINDOW_BEFORE=$before
done

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- behaving like the allocator hostpin replaces (issue 17) ----
build sigprog sigprog.c

# hostpin's threads block every signal: a program that blocks signals and
# collects them synchronously gets every one, under every pinning backend.
# timeout: a swallowed SIGCHLD leaves sigwaitinfo waiting for ever.
for mode in signalfd sigtimedwait sigwaitinfo; do
	run "signals [mlock]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P HOSTPIN_BACKEND=mlock \
		HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
	run "signals [cuda, fake driver]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P HOSTPIN_BACKEND=cuda \
		HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
	run "signals [auto, fake driver]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P \
		HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
done

build ranges ranges.c
# runq NAME ENV... -- CMD...: exit 0, hostpin said nothing ("cannot track",
# "cannot pin"), and with FAKE_CUDA_LOG set the fake driver saw no
# violation and nothing stayed registered.
runq() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc why=""
	log=$(mktemp)
	out=$(env "${envs[@]}" FAKE_CUDA_LOG="$log" "$@" 2>&1); rc=$?
	[ $rc -eq 0 ] || why="rc $rc"
	echo "$out" | grep -q "hostpin\[" && why="$why; said: $(echo "$out" | grep "hostpin\[" | head -2)"
	[ -s "$log" ] && ! fakelog "$log" && why="$why; fake driver"
	rm -f "$log"
	if [ -z "$why" ]; then ok "$name"; else bad "$name: $why"; echo "$out" | tail -5 | sed 's/^/    /'; fi
}
# issue 16: a release that starts below the lowest tracked range
runq "reserve-then-commit [mlock]: whole-reservation munmap untracks the commit; remapped and tracked again" \
	$P HOSTPIN_BACKEND=mlock HP_EXPECT_PINNED=1 HP_EXPECT_LOCKED=1 -- "$B/ranges" reserve
runq "reserve-then-commit [cuda, fake driver]: nothing left registered" \
	$P HOSTPIN_BACKEND=cuda HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- "$B/ranges" reserve
runq "reserve-then-commit [none]" $P HOSTPIN_BACKEND=none -- "$B/ranges" reserve

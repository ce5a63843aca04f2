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

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- staged copies (stage.c, HOSTPIN_STAGE) ----
# The program (staged.c) copies host memory hostpin has not registered
# (memory below HOSTPIN_THRESHOLD, /dev/shm, the heap, a pending block)
# to and from the fake device and checks the data and pageable-memory
# semantics: H2D sources overwritten right after the call, D2H data there
# on return, stream order, two streams, eight threads, a copy far larger
# than the ring (slot reuse guarded by events: the fake runs a DMA only when
# the program synchronises), sync copies (driver and runtime).  The fake
# driver flags every copy of FAKE_CUDA_NO_PAGEABLE bytes or more that
# reaches it from pageable memory (VIOLATION pageable-copy): with staging
# on there must be none; where hostpin must pass a copy through (capture,
# forked child, HOSTPIN_STAGE=0, small copies, mlock backend, no ring) there
# must be some, and only those.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged staged.c $F_FLAGS || true
. ./staged_lib.sh
# stage NAME WANT(staged|through) ENV... -- MODE (staged_lib.sh)
stage() { staged_case staged staged "$@"; }
if [ -x "$B/staged" ]; then
# without hostpin the program's own checks hold (pageable semantics)
for m in basic basic_warm bigger order two_streams threads sync sources capture fork reset d2h_fresh d2h_warm; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/staged" $m 2>&1) ||
		bad "staged $m fails without hostpin: $out"
done
stage "H2D source overwritten at return, D2H there at return (stream, legacy, per-thread)" staged -- basic
stage "200 MiB through the 64 MiB ring: slots reused only after their events" staged -- bigger
stage "200 MiB through a 1 MiB ring" staged HOSTPIN_STAGE_BUFFER=1M HOSTPIN_STAGE_MIN=1M -- bigger
stage "200 MiB, 4 copy threads" staged HOSTPIN_STAGE_THREADS=4 -- bigger
# eight threads at once: a copy that finds every slot another stream's
# passes through (the driver's pageable path) while the ring grows in the
# background, never registering on its path (issue 39 item 12): any
stage "eight program threads, 3 copy threads" any HOSTPIN_STAGE_THREADS=3 -- threads
stage "synchronous copies, 1 copy thread" staged HOSTPIN_STAGE_THREADS=1 -- sync
stage "copy threads (2 helpers) block every signal" staged HOSTPIN_STAGE_THREADS=3 -- signals
stage "order against direct copies before and after on the same stream" staged -- order
stage "two streams" staged -- two_streams
stage "eight threads copying at once" any -- threads
stage "synchronous copies: cuMemcpyHtoD/DtoH (and _ptds), cudaMemcpy, cudaMemcpyAsync" staged -- sync
stage "sources: MAP_SHARED /dev/shm, the heap, a hostpin block not yet registered" staged \
	HOSTPIN_THRESHOLD=24M HP_BLOCK=1 -- sources
stage "the primary context reset: the rings are made again through the new one" staged -- reset
n=$(echo "$STAGE_LOG" | grep -c " REG .* 33554432 ")
[ "$n" = 4 ] && ok "staged: reset: each direction's ring (32 MiB) was registered twice" ||
	bad "staged: reset: the rings were registered $n times"
# Must hold: an H2D held in the driver (FAKE_CUDA_HTOD_GATE, opened by the
# program) does not hold back a D2H staged on another thread: one ring per
# direction.  Both staged, with their data.
stage "an H2D and a D2H of two threads staged at once (one ring per direction)" staged \
	FAKE_CUDA_HTOD_GATE=4194304 HOSTPIN_STATS=1 -- duplex
echo "$STAGE_OUT" | grep -q "staged copies 2 (48.0M), staging ring 64.0M" &&
	ok "staged: duplex: both copies staged, two rings of 32 MiB" ||
	bad "staged: duplex: report: $(echo "$STAGE_OUT" | grep 'staged copies')"
# an enqueue fails mid-pipeline (third H2D chunk, second D2H chunk of 64 MiB
# through 8 MiB slots): each call returns the driver's error
stage "an enqueue error mid-pipeline is the call's error" staged \
	FAKE_CUDA_FAIL=cuMemcpyHtoDAsync_v2:3:700,cuMemcpyDtoHAsync_v2:2:701 -- error
staged_errors "staged" "$STAGE_OUT"
# The copy threads against the link (speed.c, issue 43): a link no copy
# thread keeps up with (HOSTPIN_STAGE_LINK=100000 GB/s: its pageable path,
# assumed 13% of it, beats any memcpy) stages nothing, every copy passes
# through (the tests' HOSTPIN_STAGE_LINK=0, lib.sh, never does).
stage "copy threads slower than the link's pageable path (HOSTPIN_STAGE_LINK=100000): passed through" through \
	HOSTPIN_STAGE_LINK=100000 -- basic
# The pick runs off the first copy's path (speed.c, issue 43): that copy
# asks for its ring before the gate knows; the ring is made (by the growth
# thread, or inside the copy: HOSTPIN_STAGE_RING_BACKGROUND=0) only once
# the gate knows, and not for a direction that cannot be staged (basic_warm:
# no D2H into a fresh destination, which is staged past the gate): none
# registered.
for bg in 0 1; do
	stage "HOSTPIN_STAGE_LINK=100000, 1 copy thread, ring background $bg: passed through" through \
		HOSTPIN_STAGE_LINK=100000 HOSTPIN_STAGE_THREADS=1 HOSTPIN_STAGE_RING_BACKGROUND=$bg -- basic_warm
	n=$(echo "$STAGE_LOG" | grep -c " REG .* 33554432 ")
	[ "$n" = 0 ] && ok "staged: HOSTPIN_STAGE_LINK=100000, ring background $bg: no staging ring registered" ||
		bad "staged: HOSTPIN_STAGE_LINK=100000, ring background $bg: $n staging rings registered"
done
# ... except a D2H into a destination not resident (fresh): the driver's
# pageable path faults its pages in far slower than a copy thread's copy
# does (an H100 host: 1.2 GB/s, 13 into a warm destination, 3.2 staged
# with one copy thread), so it is staged, both its rounds, with one copy
# thread or more; into a warm destination it passes through (issue 43)
stage "a D2H into a fresh destination, 2 copy threads, HOSTPIN_STAGE_LINK=100000: staged" staged \
	HOSTPIN_STAGE_LINK=100000 HOSTPIN_STAGE_THREADS=2 -- d2h_fresh
stage "a D2H into a warm destination, 2 copy threads, HOSTPIN_STAGE_LINK=100000: passed through" through \
	HOSTPIN_STAGE_LINK=100000 HOSTPIN_STAGE_THREADS=2 -- d2h_warm
stage "a D2H into a fresh destination, 1 copy thread, HOSTPIN_STAGE_LINK=100000: staged" staged \
	HOSTPIN_STAGE_LINK=100000 HOSTPIN_STAGE_THREADS=1 -- d2h_fresh
# passed through unchanged
stage "a capturing stream, and a copy during a capture elsewhere, pass through; capture intact" through -- capture
stage "a relaxed-mode capture of the per-thread stream: a _ptsz copy on stream 0 passes through" through -- capture_ptsz
stage "a forked child's copies pass through" through -- fork
child=$(echo "$STAGE_OUT" | sed -n 's/^child \([0-9]*\)$/\1/p')
main=$(echo "$STAGE_LOG" | head -1 | cut -d' ' -f1)
if [ -n "$child" ] && echo "$STAGE_LOG" | grep -q "^$child VIOLATION pageable-copy" &&
	! echo "$STAGE_LOG" | grep -q "^$main VIOLATION"; then
	ok "staged: fork: only the child's copy reached the driver pageable"
else bad "staged: fork: child $child, parent $main: $(echo "$STAGE_LOG" | grep VIOLATION | head -2)"; fi
stage "HOSTPIN_STAGE=0: the driver sees the program's pointers, as before" through HOSTPIN_STAGE=0 -- basic
stage "copies below HOSTPIN_STAGE_MIN pass through" through HOSTPIN_STAGE_MIN=32M -- basic
stage "the mlock backend stages nothing" through HOSTPIN_BACKEND=mlock -- basic
stage "a ring the driver refuses to register: said once, copies pass through" through \
	FAKE_CUDA_FAIL=cuMemHostRegister_v2:1 -- basic
n=$(echo "$STAGE_OUT" | grep -c "staging ring")
[ "$n" = 1 ] && ok "staged: the refused ring was reported once" ||
	bad "staged: the refused ring was reported $n times"
# the statistics report counts the staged copies and the ring
stage "statistics" staged HOSTPIN_STATS=1 -- basic
echo "$STAGE_OUT" | grep -q "staged copies 8 (.*), staging ring 64.0M$" &&
	ok "staged: the report counts 8 staged copies and the 64 MiB ring" ||
	bad "staged: report: $(echo "$STAGE_OUT" | grep 'staged copies')"
fi

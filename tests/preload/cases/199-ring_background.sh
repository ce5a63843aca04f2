# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a staging ring's registration off every copy's path (ring.c) ----
# (issue 39 item 12) The fake driver holds every registration of
# FAKE_CUDA_REGISTER_GATE bytes or more (a ring's 32 MiB) until the
# program opens the gate, so "a copy completed while the ring was being
# registered" is decided by the program (ring_bg.c), not by timing.
# Must hold: by default (HOSTPIN_STAGE_RING_BACKGROUND=1) the first copy
# each way asks for its ring and passes through, the growth thread's
# registration held meanwhile; with 0, one thread's copy registers the ring
# outside the ring's lock, another thread's copy completing meanwhile.
# Data and pageable semantics as without hostpin; every registration
# released at exit.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build ring_bg ring_bg.c $F_FLAGS -lpthread || true
. ./staged_lib.sh
if [ -x "$B/ring_bg" ]; then
for m in background inline must reset reset_straddle reset_again; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/ring_bg" $m 2>&1) ||
		bad "ring_bg $m fails without hostpin: $out"
done
staged_case "ring background" ring_bg "the first copy each way passes through while the ring's registration is held" \
	through FAKE_CUDA_REGISTER_GATE=33554432 HOSTPIN_STAGE_RING_BACKGROUND=1 -- background
n=$(echo "$STAGE_LOG" | grep -c " REG .* 33554432 ")
[ "$n" = 2 ] && ok "ring background: both rings registered by the growth thread" ||
	bad "ring background: $n ring registrations (want 2)"
staged_case "ring background" ring_bg "a copy made inside the first copy: another stream's copy completes meanwhile" \
	any FAKE_CUDA_REGISTER_GATE=33554432 HOSTPIN_STAGE_RING_BACKGROUND=0 -- inline
# (issue 39 §3) A copy that must be staged (a 2D D2H across two
# registrations of a registered block) issued while the growth thread's
# registration of its ring is held waits for the ring, woken when the
# growth ends (ring.c: the ring's condition, bounded at 5 s): once the gate
# opens, it is staged with its data (the only staged copy: the plain copy
# that asked for the ring passed through).
staged_case "ring background" ring_bg "a copy that must be staged waits for the ring being made, staged once the growth ends" \
	any FAKE_CUDA_REGISTER_GATE=33554432 HOSTPIN_STAGE_RING_BACKGROUND=1 HOSTPIN_THRESHOLD=20M \
	HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_PIN_AFTER=0 HOSTPIN_MMAP=off HOSTPIN_STATS=1 -- must
echo "$STAGE_OUT" | grep -q "staged copies 1 (" &&
	ok "ring background: the copy that waited for the ring was staged" ||
	bad "ring background: the waiting copy was not staged: $(echo "$STAGE_OUT" | grep 'staged copies')"
# (reset-ring-registered-96581863) Device 0's primary context reset, and
# made again by the program (the same handle), while the growth thread has
# pushed it for the H2D ring and not yet registered the ring (pause point
# ring_pushed); or while the ring's registration waits at the gate, let on
# once the driver reset the context and the program made it again, before
# hostpin learnt of the end (pause point end_called).  Must hold: the ring
# is not left registered in the context made again as the one that ended
# (EXIT live=0: it was live at exit, the ring's registration counted as the
# ended context's, never released); and copies through the context made
# again ask for the ring again (the growth thread pushes it for them).
pd=$(mktemp -d)
staged_case "ring background" ring_bg "a reset between the ring's push and its registration: nothing left registered" \
	any HOSTPIN_STAGE_RING_BACKGROUND=1 HOSTPIN_TEST_PAUSE="$pd" -- reset
rm -rf "$pd"; pd=$(mktemp -d)
staged_case "ring background" ring_bg "a ring registered across the driver's reset: undone" \
	any FAKE_CUDA_REGISTER_GATE=33554432 HOSTPIN_STAGE_RING_BACKGROUND=1 HOSTPIN_TEST_PAUSE="$pd" -- reset_straddle
rm -rf "$pd"; pd=$(mktemp -d)
staged_case "ring background" ring_bg "the ring dropped by a reset is made again through the context made again" \
	any HOSTPIN_STAGE_RING_BACKGROUND=1 HOSTPIN_TEST_PAUSE="$pd" -- reset_again
rm -rf "$pd"
else bad "ring background: build"; fi

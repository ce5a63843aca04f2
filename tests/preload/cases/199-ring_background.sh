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
for m in background inline must; do
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
# (issue 39 §3) A copy that must be staged (a 2D copy across two
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
else bad "ring background: build"; fi

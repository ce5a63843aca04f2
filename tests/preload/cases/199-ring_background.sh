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
for m in background inline; do
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
else bad "ring background: build"; fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the copy engine over the fake driver's timed mode ----
# (issue 32) FAKE_CUDA_TIMED=1 (tests/fakes/fake_timed.h) is for
# scripts/bench-engine: DMA on the late mode's workers, each copy completing
# when its modelled link time has passed.  No test depends on its clock;
# this one keeps it honest about data: 200 MiB staged through the ring
# (slots reused only after their events), both ways, the data checked by
# staged.c, no VIOLATION in the fake's log.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged staged.c $F_FLAGS || true
. ./staged_lib.sh
if [ -x "$B/staged" ]; then
staged_case "timed DMA" staged "200 MiB through the ring: the data arrives on the modelled link" \
	staged FAKE_CUDA_TIMED=1 -- bigger
fi

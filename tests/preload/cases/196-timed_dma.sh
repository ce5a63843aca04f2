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
# (issue 43) A staged D2H's drains pipelined (stage.c: chunk i's drain
# posted to the copy threads before chunk i-1's is waited for; a slot's
# next DMA only once its drain is done).  staged_d2h.c checks bytes and
# stream order, never time: every D2H's data on return (sizes of 1 to 27
# slots and a tail), D2Hs and H2Ds around each other on one stream and on
# two, the synchronous form; with 2 and 4 copy threads, in the fake's
# modes where a DMA runs at once (FAKE_CUDA_TIMED=1 with a fast link: a
# DMA into a slot still being drained overwrites it) and late, only as far
# as the program asked (FAKE_CUDA_LATE_DMA=1: a drain before its DMA reads
# stale bytes).
build staged_d2h staged_d2h.c $F_FLAGS || true
if [ -x "$B/staged_d2h" ]; then
for m in sizes order sync; do
	out=$(timeout 120 env FAKE_CUDA_LOG=/dev/null "$B/staged_d2h" $m 2>&1) ||
		bad "staged_d2h $m fails without hostpin: $out"
	for th in 2 4; do
		staged_case "D2H pipeline" staged_d2h "$m, $th copy threads, DMA at once" staged \
			HOSTPIN_STAGE_THREADS=$th FAKE_CUDA_TIMED=1 FAKE_CUDA_TIMED_SCALE=20 -- $m
		staged_case "D2H pipeline" staged_d2h "$m, $th copy threads, DMA late" staged \
			HOSTPIN_STAGE_THREADS=$th FAKE_CUDA_LATE_DMA=1 -- $m
	done
done
fi

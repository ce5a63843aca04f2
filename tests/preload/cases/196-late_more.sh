# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the copy engine over a driver whose DMA completes later (more) ----
# (issue 32) late_more.c in the fake driver's late mode
# (FAKE_CUDA_LATE_DMA=1, tests/fakes/fake_late.h), judged as 195's cases
# (staged_lib.sh's staged_case).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build late_more late_more.c $F_FLAGS || true
. ./staged_lib.sh
# lm NAME WANT ENV... -- MODE: staged_case in the late mode (sets LM_OUT,
# LM_LOG).
lm() {
	local name=$1 want=$2; shift 2
	staged_case "late DMA" late_more "$name" "$want" FAKE_CUDA_LATE_DMA=1 "$@"
	LM_OUT=$STAGE_OUT LM_LOG=$STAGE_LOG
}
if [ -x "$B/late_more" ]; then
# Must hold (item 12, 2D and 3D): a 2D or 3D copy whose device side runs
# past the end of its allocation (the driver refuses it whole) writes
# nothing of either side, staged or not; one that fits is staged.
lm "a 2D/3D copy the driver refuses outright writes nothing" any -- past_end_rect
fi
if [ -x "$B/late_more" ]; then
# Must hold (more than 8 contexts): 10 contexts of the program's own copy
# at once; context 0's stream held: the others' copies are right and never
# wait for it; the 9th and 10th (no ring of their own) pass through: 4
# copies reach the driver pageable, no more; once context 0 ended, the
# 10th's copies are staged through the entry it left.
lm "10 contexts: 8 with rings, the others pass through, none waits for another" any \
	FAKE_CUDA_OWN_CTXS=1 HOSTPIN_STAGE_BUFFER=4M -- many_ctxs
n=$(echo "$LM_LOG" | grep -c "VIOLATION pageable-copy")
[ "$n" = 4 ] && ! echo "$LM_LOG" | grep -q "LATE event-on-other-context" &&
	ok "late DMA: 10 contexts: 4 copies passed through (9th, 10th), then the 10th staged" ||
	bad "late DMA: 10 contexts: $n copies reached the driver pageable (want 4) $(echo "$LM_LOG" | grep -m1 'LATE event-on')"
fi

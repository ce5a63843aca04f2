# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a failing copy gives back its count on the block (issue 39) ----
# hold_leak.c over the fake driver (late mode): for each kind of copy
# through a registered block that the driver refuses (a direct call, the
# first or second DMA of a copy by pieces, a staged 2D copy, a batch
# entry, the runtime's forms, the copy fence's event), the program's own
# registration of part of the block afterwards returns 0: hostpin's step
# aside (foreign.c) finds no copy counted in flight on it (a count not
# given back makes it wait 10 s and refuse with 712: seed 96554247).
# Under both HOSTPIN_COPY modes; judged as staged_case (exit 0, the ok
# line, no VIOLATION but pageable-copy ones, every registration released).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build hold_leak hold_leak.c $F_FLAGS || true
. ./staged_lib.sh
if [ -x "$B/hold_leak" ]; then
for cm in async sync; do
	# Must hold: every kind's registration returned 0
	staged_case "failing copies give back their count (HOSTPIN_COPY=$cm)" hold_leak \
		"the program registers part of the block at once" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_COPY=$cm FAKE_CUDA_LATE_DMA=1 -- all
	echo "$STAGE_OUT" | grep -v "register 0$" | grep "register" | sed 's/^/    /'
done
fi

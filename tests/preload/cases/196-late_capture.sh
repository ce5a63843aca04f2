# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- copies that must not reach the driver whole, under a capture elsewhere ----
# late_cap.c in the fake driver's late mode (FAKE_CUDA_LATE_DMA=1), whose
# driver refuses a range that one registration does not cover
# (FAKE_CUDA_REFUSE_PARTIAL=1): a 1D, a 2D and a 3D copy, each way, across
# the end of one of a block's 8 MiB registrations, while a capture
# elsewhere prohibits the staging ring's calls (this thread's thread-local
# capture of another stream, or another thread's global one).  The block
# being registered in the background, held part-way at the fake's gate
# (FAKE_CUDA_REGISTER_GATE: two pieces registered, the third held; copies
# across a piece's end inside the registered part and across its end), or
# registered whole (HOSTPIN_PIN_AFTER=0).  Such a copy was passed whole:
# the 1D and the registering block's forms until plan.c's
# stream_enter_pieces for them (fuzz cases/capture-local-prefix-96554664,
# whose fuzz program reaches the window by a registration delay), the
# registered block's 2D and 3D forms until the same for rectangles (fuzz
# cases/capture-local-2d-96559960).  Judged as staged_case (exit 0, the
# ok line, no VIOLATION but pageable-copy ones, every registration
# released), and no PARTIAL refusal in the fake's log.  And the same copies
# of the registering block on the capturing stream itself (this thread's
# thread-local or relaxed capture), captured: passed whole until plan.c
# entered them as captured pieces of the prefix (PARTIAL refused, rc 1).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build late_cap late_cap.c $F_FLAGS || true
. ./staged_lib.sh
if [ -x "$B/late_cap" ]; then
for st in registering registered; do
	if [ $st = registering ]; then
		e="FAKE_CUDA_REGISTER_GATE=8388608"
	else
		e="HOSTPIN_PIN_AFTER=0"
	fi
	caps="local global"
	[ $st = registering ] && caps="$caps ownlocal ownrelaxed"
	for cap in $caps; do
		w="$cap capture elsewhere"
		case $cap in own*) w="${cap#own} capture of the copies' stream";; esac
		for m in 1d-dtoh 1d-htod 2d-dtoh 2d-htod 3d-dtoh 3d-htod; do
			# Must hold: both copies returned 0, their data right,
			# no range only partly registered reached the driver
			staged_case "late DMA, $w" late_cap \
				"$m across a $st block's registrations" any \
				FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M \
				HOSTPIN_STAGE_BUFFER=4M FAKE_CUDA_REFUSE_PARTIAL=1 $e -- $st-$cap-$m
			if echo "$STAGE_LOG" | grep -q "PARTIAL refused"; then
				bad "late DMA, $w: $m: a $st block's range only partly registered reached the driver: $(echo "$STAGE_OUT" | grep '^at ' | tr '\n' ' ')"
			fi
		done
	done
done
fi

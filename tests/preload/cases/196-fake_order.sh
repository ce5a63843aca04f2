# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the fake driver's legacy default stream ordering ----
# fake_order.c against the fake alone (tests/fakes/fake_order.h): legacy
# work after a per-thread or blocking stream's, a blocking stream's after
# the legacy one's, a non-blocking stream left unordered, and (late mode)
# legacy work behind a held blocking stream.  In the default and late
# modes, with one per-thread stream shared and one per thread.  Before the
# fake modelled the ordering, a wait for one stream left the other's work
# queued (the engine tester took a wrong oracle from it:
# tests/fuzz/cases/legacy-ptds-order-56100197.prog).
build fake_order fake_order.c -L"$F" -l:libcuda.so.1 -Wl,-rpath,"$F" || true
if [ -x "$B/fake_order" ]; then
for mode in "" FAKE_CUDA_LATE_DMA=1; do
	for pt in "" FAKE_CUDA_PTDS=1; do
		out=$(timeout 60 env FAKE_CUDA_LOG=/dev/null $mode $pt "$B/fake_order" 2>&1)
		[ "$out" = ok ] &&
			ok "fake order: legacy stream ordered with blocking streams (${mode:-default mode}${pt:+ $pt})" ||
			bad "fake order: ${mode:-default mode}${pt:+ $pt}: $out"
	done
done
fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a batch through more blocks than a copy records ----
# batch_join.c over the fake driver's late mode (FAKE_CUDA_LATE_DMA=1:
# queued DMA runs only when the program synchronises), judged as the
# staged cases (staged_lib.sh's staged_case: no VIOLATION, among them
# "unregister-with-copy-in-flight"; the "ok" line).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build batch_join batch_join.c $F_FLAGS || true
. ./staged_lib.sh
if [ -x "$B/batch_join" ]; then
# Must hold (hp_copy_join, copy.c): a batch's entries from 10 registered
# blocks (the driver's cuMemcpyBatchAsync_v2 and the runtime's
# cudaMemcpyBatchAsync), held before its last entry (pause points
# batch_next, copy_walked) with 10 entries queued: the program's own
# registration of a piece of the record's ninth or tenth block (hostpin
# steps aside, foreign.c) waits for the batch's end (their counts moved to
# passing.c's ALL, not let go), then registers (0).
for m in drv rt; do
	for cm in sync async; do
		pd=$(mktemp -d)
		staged_case "late DMA" batch_join "a batch through 10 blocks: the ninth and tenth counted until its end ($m, HOSTPIN_COPY=$cm)" any \
			FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_BACKGROUND=0 \
			HOSTPIN_MMAP=off HOSTPIN_COPY=$cm HOSTPIN_TEST_PAUSE="$pd" -- $m
		rm -rf "$pd"
		echo "$STAGE_OUT" | grep "registrations of blocks" | sed 's/^/    /'
	done
done
fi

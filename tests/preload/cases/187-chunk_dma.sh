# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a piece registered in the background carries direct DMA at once ----
# (register.c publishes how far the block is registered; the copy plan,
# plan.c, sends a copy wholly inside that prefix direct by pieces,
# pieces.c, waiting for its stream.)
# Injects: HOSTPIN_REGISTER_CHUNK=8M (8 MiB registrations; the program's
# block is aligned to 8 MiB), FAKE_CUDA_REGISTER_GATE=8M (the fake holds
# each such registration until the program lets one through with
# fake_cuda_open_gate_once, or all), a staging ring of 4 MiB (below the
# gate).  The program (staged chunks*) lets the first piece through and
# waits until the second is held: what happens then is decided by the
# program, not by timing.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged staged.c $F_FLAGS || true
. ./staged_lib.sh
# cd_run NAME ENV... -- MODE: staged_case (staged_lib.sh) with the
# settings above; no pageable pointer may reach the fake (sets CD_OUT,
# CD_LOG).
cd_run() {
	local name=$1; shift
	staged_case "chunk DMA" staged "$name" staged HOSTPIN_THRESHOLD=24M \
		HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
		FAKE_CUDA_REGISTER_GATE=8388608 HOSTPIN_STATS=1 "$@"
	CD_OUT=$STAGE_OUT CD_LOG=$STAGE_LOG
}
if [ -x "$B/staged" ]; then
# Must hold: with the first 8 MiB piece registered and the second held,
# copies wholly inside the first piece (H2D and D2H, async, runtime, sync)
# go direct: the fake sees the program's pointer registered (no
# "VIOLATION pageable-copy"), an H2D source overwritten after the call
# returned changes nothing, D2H data is there on return; copies across the
# first and second pieces are staged (a copy reaching the fake across them
# is flagged pageable).  Only four copies staged: the two whole-block ones
# before the first piece, the two across pieces.
cd_run "a copy inside the first registered piece goes direct, one across pieces is staged" -- chunks
echo "$CD_OUT" | grep -q "staged copies 4 (" &&
	ok "chunk DMA: the copies inside the first piece were not staged (4 staged: the others)" ||
	bad "chunk DMA: staged copies: $(echo "$CD_OUT" | grep 'staged copies')"
# Must hold: the statistics count those four direct copies.
echo "$CD_OUT" | grep -q "registered in the background: 1 blocks; copies direct through a part registered meanwhile 4\$" &&
	ok "chunk DMA: the statistics count 4 direct copies through the registered part" ||
	bad "chunk DMA: statistics: $(echo "$CD_OUT" | grep 'in the background')"
# Must hold: the third piece's registration fails (FAKE_CUDA_FAIL: the
# ring's registration is the first, the pieces the second to fourth
# calls); the two pieces made are unregistered, and the direct copy the
# program left unsynchronised inside the first piece is not in flight then
# (no "VIOLATION unregister-with-copy-in-flight"); its data arrives.
cd_run "the third piece fails: the pieces are undone, no copy in flight through them" \
	FAKE_CUDA_FAIL=cuMemHostRegister_v2:4 -- chunks_fail
echo "$CD_LOG" | grep -q "INJECT cuMemHostRegister_v2" &&
	[ "$(echo "$CD_LOG" | grep -c '^[0-9]* UNREG .* 8388608$')" -ge 2 ] &&
	ok "chunk DMA: the failure was injected, the two pieces made unregistered" ||
	bad "chunk DMA: injected failure: $(echo "$CD_LOG" | grep -E 'INJECT|UNREG' | head -4 | tr '\n' ' ')"
# Must hold (issue 39, "decided once"; HP_STAGE_RETRY): the runtime's
# copy whose staged DMA (the block being registered, the copy across the
# registered piece's end) or first piece (the block registered, the copy
# across its cells) fails is not made again whole by the runtime: the
# driver never gets it across a registration's end (the fake refuses that:
# FAKE_CUDA_REFUSE_PARTIAL=1; nor as pageable); the call returns the
# error (700 H2D, 701 D2H, 702 cudaMemcpy's H2D, 703 a
# cudaMemcpyBatchAsync's H2D entry, its failIdx 0), both times.
cd_run "a runtime copy the engine failed is not made again whole across a registration's end" \
	FAKE_CUDA_REFUSE_PARTIAL=1 -- chunks_redo
echo "$CD_LOG" | grep -q "PARTIAL refused" &&
	bad "chunk DMA: runtime redo: a range partly registered reached the driver: $(echo "$CD_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "chunk DMA: runtime redo: no range partly registered reached the driver"
[ "$(echo "$CD_OUT" | grep -cx 'htod 700')" = 2 ] && [ "$(echo "$CD_OUT" | grep -cx 'dtoh 701')" = 2 ] &&
	[ "$(echo "$CD_OUT" | grep -cx 'sync 702')" = 2 ] &&
	[ "$(echo "$CD_OUT" | grep -cx 'batch 703 0')" = 2 ] &&
	ok "chunk DMA: runtime redo: the engine's errors returned (700, 701, 702, the batch's 703; staged and by pieces)" ||
	bad "chunk DMA: runtime redo: results: $(echo "$CD_OUT" | grep -E '^(htod|dtoh|sync|batch)' | tr '\n' ' ')"
# Must hold (issue 39, "decided once"): a copy staged because it must be
# (across the registered piece's end) that finds no slot it may take (each
# another stream's, its DMA pending: the late driver's hold; the ring's
# growth held at the pause point ring_grow) goes by pieces, never whole
# across the piece's end (FAKE_CUDA_REFUSE_PARTIAL=1 refuses that); its
# part past the piece, 4 MiB, pageable (FAKE_CUDA_NO_PAGEABLE above it).
# The statistics count it as cut, not staged: 4 staged (the two
# whole-block copies, the two on the held stream), 1 cut of 6 MiB (text
# report and JSON).
pd=$(mktemp -d)
cd_run "a copy that must be staged and finds no slot goes by pieces" \
	FAKE_CUDA_LATE_DMA=1 FAKE_CUDA_REFUSE_PARTIAL=1 FAKE_CUDA_NO_PAGEABLE=5242880 \
	HOSTPIN_TEST_PAUSE="$pd" HOSTPIN_STATS_FILE="$pd/s.json" -- chunks_rest
js=$(python3 -c "import json;s=json.load(open('$pd/s.json'));print(s['staged_copies'],s['cut_copies'],s['cut_bytes'])" 2>/dev/null)
rm -rf "$pd"
echo "$CD_LOG" | grep -q "PARTIAL refused" &&
	bad "chunk DMA: no slot: a range partly registered reached the driver: $(echo "$CD_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "chunk DMA: no slot: no range partly registered reached the driver"
echo "$CD_OUT" | grep -q "staged copies 4 (" &&
	echo "$CD_OUT" | grep -q "copies cut at registrations for want of a staging slot 1 (6.0M)\$" &&
	[ "$js" = "4 1 6291456" ] &&
	ok "chunk DMA: no slot: counted as cut, not staged (text and JSON)" ||
	bad "chunk DMA: no slot: statistics: $(echo "$CD_OUT" | grep -E 'staged copies|copies cut') JSON: ${js:-none}"
# Must hold (issue 39, "decided once"): a copy staged because it must be
# (across the registered piece's end) whose first round was staged and
# whose rest is then refused staging (the copy threads slower than the
# link: HOSTPIN_STAGE_LINK=100000, one thread; stage.c's gate before each
# round but the first) goes on by pieces, never whole across the piece's
# end (FAKE_CUDA_REFUSE_PARTIAL=1 refuses that); pieces of 128 MiB, the
# rounds 64 MiB; the rest's part past the piece, 8 MiB, pageable.
staged_case "chunk DMA" staged "a copy that must be staged, partly staged, its rest refused staging, goes on by pieces" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=128M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=134217728 FAKE_CUDA_REFUSE_PARTIAL=1 FAKE_CUDA_NO_PAGEABLE=268435456 \
	HOSTPIN_STAGE_LINK=100000 HOSTPIN_STAGE_THREADS=1 -- chunks_part
echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
	bad "chunk DMA: partly staged: a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "chunk DMA: partly staged: no range partly registered reached the driver"
fi

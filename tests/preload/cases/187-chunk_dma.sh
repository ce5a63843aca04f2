# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a piece registered in the background carries direct DMA at once ----
# (register.c publishes how far the block is registered; stage.c sends a
# copy wholly inside that prefix direct, waiting for its stream.)
# Injects: HOSTPIN_REGISTER_CHUNK=8M (8 MiB registrations; the program's
# block is aligned to 8 MiB), FAKE_CUDA_REGISTER_GATE=8M (the fake holds
# each such registration until the program lets one through with
# fake_cuda_open_gate_once, or all), a staging ring of 4 MiB (below the
# gate).  The program (staged chunks*) lets the first piece through and
# waits until the second is held: what happens then is decided by the
# program, not by timing.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged staged.c $F_FLAGS || true
# cd_run NAME ENV... -- MODE: runs staged MODE; sets CD_OUT, CD_LOG; checks
# the exit status, the ok line, no VIOLATION, no overlapping registration,
# every registration released at exit.
cd_run() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log rc why=""
	log=$(mktemp)
	CD_OUT=$(timeout 120 env $P HOSTPIN_CACHE=0 HOSTPIN_THRESHOLD=24M \
		HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
		FAKE_CUDA_REGISTER_GATE=8388608 FAKE_CUDA_NO_PAGEABLE=4194304 \
		HOSTPIN_STATS=1 FAKE_CUDA_LOG="$log" "${envs[@]}" "$B/staged" "$@" 2>&1); rc=$?
	CD_LOG=$(cat "$log"); rm -f "$log"
	[ $rc -eq 0 ] || why="$why rc=$rc"
	echo "$CD_OUT" | grep -q "staged $1: ok" || why="$why no-ok-line"
	local v
	v=$(echo "$CD_LOG" | grep VIOLATION | head -2)
	[ -z "$v" ] || why="$why $v"
	echo "$CD_LOG" | grep -q OVERLAP && why="$why overlapping-registration"
	echo "$CD_LOG" | grep -q "EXIT live=0\$" || why="$why $(echo "$CD_LOG" | grep EXIT | head -1)"
	if [ -z "$why" ]; then ok "chunk DMA: $name"
	else bad "chunk DMA: $name:$why"; echo "$CD_OUT" | tail -4 | sed 's/^/    /'; fi
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
fi

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
# Must hold: every copy path of the matrix (tests/preload/matrix/copy-paths:
# each entry point, linked, static, through dlopen and the lookups; CUDA
# 13.2's copies with attributes among them) keeps pageable-memory semantics
# over the late driver (DMA done on a worker only as far as the program
# synchronised): registered at allocation
# (HOSTPIN_PIN_AFTER=0) in sync mode, the difference visible in async mode
# (the path does reach registered memory), no reuse under an in-flight
# copy; and from or into pageable memory, staged by their direction, the
# data right (no pageable copy of 4 MiB or more reaches the driver).
while read -r prog p; do
	case $prog in ''|'#'*) continue ;; esac
	L="FAKE_CUDA_LATE_DMA=1 HP_PATH=$p"
	cudaprog "$prog" "late DMA: $prog $p: HOSTPIN_COPY=sync keeps pageable semantics" 0 0 \
		$L HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=sync -- sync
	cudaprog "$prog" "late DMA: $prog $p: HOSTPIN_COPY=async: the difference is visible" 1 0 \
		$L HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- sync
	cudaprog "$prog" "late DMA: $prog $p: HOSTPIN_COPY=async: no reuse under an in-flight copy" 0 0 \
		$L HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- inflight
	# staged by direction: the 1D copies with attributes (no direction named)
	case $p in *3d*) continue ;; *attr|*attr_ptsz) ;; *) continue ;; esac
	cudaprog "$prog" "late DMA: $prog $p: a large copy from or into pageable memory is staged by its direction" 0 0 \
		$L HP_EXPECT_ACTIVE= HOSTPIN_THRESHOLD=1G FAKE_CUDA_NO_PAGEABLE=4194304 -- sync
done < "$top/tests/preload/matrix/copy-paths"
if [ -x "$B/late_more" ]; then
# Must hold: a forked child does not inherit the staging rings (registered
# memory; MADV_DONTFORK), and the parent's rings still serve after.
lm "the staging rings are not inherited by a forked child" staged \
	HOSTPIN_STAGE_BUFFER=4M -- ring_dontfork
fi
if [ -x "$B/late_more" ]; then
# Must hold: a thread-local or relaxed capture that begins on a stream
# while another thread's staged copy on it is mid-way begins after the
# copy (the driver treats one copy as one call): the late driver captures
# what is queued on a capturing stream, so none of the copy may be.
for m in local relaxed; do
	lm "a $m capture begun on a stream mid staged copy: the copy ends first" staged \
		HOSTPIN_STAGE_THREADS=1 HOSTPIN_STAGE_BUFFER=4M -- capture_mid_copy_$m
	n=$(echo "$LM_LOG" | grep -c "LATE captured")
	[ "$n" = 0 ] && ok "late DMA: $m capture mid copy: nothing of the copy captured" ||
		bad "late DMA: $m capture mid copy: $n parts of the copy captured"
done
fi
if [ -x "$B/late_more" ]; then
# Must hold (issue 39 item 6; the engine tester's m2d-partial-96527741): a
# copy that earned a block's background registration and cannot be
# staged (device 1's stream, device 0 current), the registration thread
# busy with another block, never reaches the driver across two of the
# block's registrations-to-be: cut at its cells (the fake refuses a range
# only partly registered: FAKE_CUDA_REFUSE_PARTIAL=1).
lm "a copy of a queued block that cannot be staged is cut at its registrations" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=1 HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 FAKE_CUDA_HTOD_GATE=2097152 FAKE_CUDA_REFUSE_PARTIAL=1 -- queued_partial
echo "$LM_LOG" | grep -q "PARTIAL refused" &&
	bad "late DMA: queued block: a range only partly registered reached the driver: $(echo "$LM_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "late DMA: queued block: no range only partly registered reached the driver"
fi
build late_pass late_pass.c $F_FLAGS || true
if [ -x "$B/late_pass" ]; then
# Must hold (issue 39, "decided once"): a copy decided as a pageable
# pass-through (under HOSTPIN_STAGE_MIN), held at the driver's door while
# another thread's copy earns the block's registration, reaches the driver
# with the block as it was decided: never over a range partly registered
# (the fake refuses it: FAKE_CUDA_REFUSE_PARTIAL=1), never as registered
# memory hostpin does not wait for; H2D and D2H, sync and async, the block
# registered in the earning copy (HOSTPIN_STAGE_MIN above the block) or
# by the registration thread (LP_BG=1: it waits for the copy at the door,
# which its log says).  The same for copies the engine does not plan (to
# and from a CUDA array, cudaMemcpyToSymbol/FromSymbol: counted from their
# hp_copy_host all the same) and for a copy of more blocks than a copy
# records (many: the block is its ninth; counted as a copy through every
# block, passing.c's ALL).
for m in h2d_async h2d_sync d2h_async d2h_sync htoa atoh tosym fromsym many; do
	for how in copy thread; do
		if [ $how = copy ]; then E="HOSTPIN_STAGE_MIN=1G"
		else E="HOSTPIN_STAGE_MIN=4M HOSTPIN_STAGE_BUFFER=512K LP_BG=1"; fi
		[ $m = many ] && E="$E HOSTPIN_THRESHOLD=4M"
		lpl=$(mktemp)
		staged_case "late DMA" late_pass "a pass-through at the door while $how registers the block: $m" any \
			FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=2 HOSTPIN_REGISTER_CHUNK=1M $E \
			HOSTPIN_LOG=debug HOSTPIN_LOG_FILE=$lpl FAKE_CUDA_REFUSE_PARTIAL=1 \
			FAKE_CUDA_HTOD_GATE=2097152 FAKE_CUDA_DTOH_GATE=2097152 \
			FAKE_CUDA_REGISTER_HOLD_AFTER=1048576 -- "$m"
		rm -f "$lpl"
		echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
			bad "late DMA: pass-through ($how, $m): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
			ok "late DMA: pass-through ($how, $m): no range partly registered reached the driver"
	done
done
fi
if [ -x "$B/late_more" ]; then
# Must hold (issue 39, the engine tester's seed 9100082): another device's
# context ending during a block's background registration (made through
# device 0's context) leaves it registered, whole: only the end of a
# context its pieces were made through sends it back to pending (and
# drains its copies first).
lm "another device's context ends during a background registration: the block stays registered" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- other_ctx_end
# Must hold (the engine tester's cases/staged-src-after-d2h-88101692):
# under HOSTPIN_COPY=async a D2H into a registered block returns at once,
# queued; a 2D H2D of 16 rows of 1 MiB from those bytes on the same stream
# next, across the block's 8 MiB registrations, gets the D2H's data to the
# device, not what was there before: never staged (its slots were filled
# on the CPU before the queued D2H ran), it goes direct by pieces, its rows
# cut at the registrations (4, 8 and 4 rows: three 2D calls).
lm "an H2D after a queued D2H into its source, same stream: the D2H's data" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M \
	HOSTPIN_COPY=async HOSTPIN_STATS=1 -- staged_after_d2h
n=$(echo "$LM_LOG" | grep -c "CALL cuMemcpy2DAsync_v2")
echo "$LM_OUT" | grep -q "staged copies 0" && [ "$n" = 3 ] &&
	ok "late DMA: the H2D after a queued D2H went by pieces (3 calls), not staged" ||
	bad "late DMA: the H2D after a queued D2H: $n 2D calls, $(echo "$LM_OUT" | grep 'staged copies')"
# Must hold (the same in a block being registered): under
# HOSTPIN_COPY=async a D2H into its registered prefix (the prefix's
# reader, by pieces) waits for its DMA before it returns, so an H2D from
# those bytes on the same stream across the prefix's end (staged: read on
# the CPU at the call) gets the D2H's data to the device.
lm "an H2D across a prefix after a D2H into it, same stream: the D2H's data" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 HOSTPIN_COPY=async HOSTPIN_STATS=1 \
	-- staged_after_prefix_d2h
echo "$LM_OUT" | grep -q "staged copies [1-9]" &&
	ok "late DMA: the H2D across the prefix was staged" ||
	bad "late DMA: the H2D across the prefix: $(echo "$LM_OUT" | grep 'staged copies')"
# Must hold (the same from a block the program registered itself, next
# to a block being registered): the program's D2H into it returns at once,
# queued; an H2D of both blocks' bytes on the same stream next gets the
# D2H's data to the device: never staged (its slots were filled on the
# CPU before the queued D2H ran), it goes by pieces.
lm "an H2D from a block the program registered after a D2H into it: the D2H's data" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- staged_after_foreign_d2h
fi
build late_multi late_multi.c $F_FLAGS || true
if [ -x "$B/late_multi" ]; then
# Must hold (issue 39, "decided once", the registration-first form): a copy
# of two adjacent blocks (under HOSTPIN_STAGE_MIN) begun while the
# registration thread registers one of them (its first piece made, the
# thread held in it: FAKE_CUDA_REGISTER_HOLD_AFTER) is counted too late for
# that thread to wait for it: it never reaches the driver over a range only
# partly registered (FAKE_CUDA_REFUSE_PARTIAL=1 refuses it); H2D and D2H,
# sync and async, with pageable semantics.
for m in h2d_async h2d_sync d2h_async d2h_sync; do
	lpl=$(mktemp)
	staged_case "late DMA" late_multi "a copy of two blocks while the registration thread registers one: $m" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=2 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_MIN=4M HOSTPIN_STAGE_BUFFER=4M HOSTPIN_LOG=debug HOSTPIN_LOG_FILE=$lpl \
		FAKE_CUDA_REFUSE_PARTIAL=1 FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 -- "$m"
	rm -f "$lpl"
	echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
		bad "late DMA: two blocks ($m): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
		ok "late DMA: two blocks ($m): no range partly registered reached the driver"
done
# The same where A's copy cannot be staged (LM_DEV1=1: on a stream of
# device 1 while device 0 is current, no ring for device 1): cut at the
# registering block's registered part instead (plan.c: the registering
# block's reader count), never whole; a 2D copy there (LM_2D=1, a row
# across the piece's end) or a 3D one (LM_2D=3) the same, its rows cut.
for v in LM_DEV1=1 "LM_DEV1=1 LM_2D=1" "LM_DEV1=1 LM_2D=3"; do
for m in h2d_async d2h_async; do
	lpl=$(mktemp)
	staged_case "late DMA" late_multi "a copy of two blocks ($v) while the registration thread registers one: $m" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=2 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_MIN=4M HOSTPIN_STAGE_BUFFER=4M HOSTPIN_LOG=debug HOSTPIN_LOG_FILE=$lpl \
		FAKE_CUDA_REFUSE_PARTIAL=1 FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 $v -- "$m"
	rm -f "$lpl"
	echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
		bad "late DMA: two blocks, unstaged ($v, $m): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
		ok "late DMA: two blocks, unstaged ($v, $m): no range partly registered reached the driver"
done
done
# The same where X's registration ends between the plan's look and A's
# count as the reader of X's prefix, A held at the plan's pause point
# several_look: LM_END, until X is registered whole; LM_LATE, until the
# thread ended X's job (held at bg_ended; the engine tester's
# mapfix-uni-96575268: before, passed as it is and refused), the driver's
# copy and the unified one (LM_UNI=1).  Cut at X's pieces and Y's start
# all the same, never passed whole (X registered, Y not).
for v in "LM_DEV1=1 LM_END=1" "LM_DEV1=1 LM_END=1 LM_2D=1" \
	"LM_DEV1=1 LM_LATE=1" "LM_DEV1=1 LM_LATE=1 LM_UNI=1"; do
for m in h2d_async d2h_async; do
	lpl=$(mktemp) pd=$(mktemp -d)
	staged_case "late DMA" late_multi "a copy of two blocks whose registration ends at the plan ($v): $m" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=2 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_MIN=4M HOSTPIN_STAGE_BUFFER=4M HOSTPIN_LOG=debug HOSTPIN_LOG_FILE=$lpl \
		HOSTPIN_TEST_PAUSE="$pd" FAKE_CUDA_REFUSE_PARTIAL=1 FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 $v -- "$m"
	rm -rf "$lpl" "$pd"
	echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
		bad "late DMA: registration ended at the plan ($v, $m): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
		ok "late DMA: registration ended at the plan ($v, $m): no range partly registered reached the driver"
done
done
# The same where A's copy, which must be staged, finds no slot (LM_HOLD:
# every slot of the ring held by four other streams' copies, one slot each, at the
# fake's gate, the ring's growth held at its pause point): cut as the
# registering block's reader (stage.c, stage_rect.c), never passed whole:
# 1 MiB across X's first piece's end, or the 2D and 3D copies of X and Y.
for v in LM_HOLD=1 "LM_HOLD=1 LM_2D=1" "LM_HOLD=1 LM_2D=3"; do
	lpl=$(mktemp) pd=$(mktemp -d)
	staged_case "late DMA" late_multi "a copy that must be staged finds no slot ($v)" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=2 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_MIN=4M HOSTPIN_STAGE_BUFFER=14M HOSTPIN_STAGE_LINK=0 HOSTPIN_STAGE_RING_BACKGROUND=0 HOSTPIN_LOG=debug HOSTPIN_LOG_FILE=$lpl \
		HOSTPIN_TEST_PAUSE="$pd" FAKE_CUDA_REFUSE_PARTIAL=1 \
		FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 $v -- h2d_async
	rm -rf "$lpl" "$pd"
	echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
		bad "late DMA: no slot ($v): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
		ok "late DMA: no slot ($v): no range partly registered reached the driver"
done
fi
build late_past late_past.c $F_FLAGS || true
if [ -x "$B/late_past" ]; then
# Must hold (issue 39 item 6; the engine tester's
# diff-c-batch-past-block-96571474 and diff-c-96568487): a copy from a
# registered block's last MiB on into the mapping after it, one hostpin
# does not track (past_*) or another registered block (two_*), never
# reaches the driver over a range only partly registered
# (FAKE_CUDA_REFUSE_PARTIAL=1 refuses it): cut at the block's end, or
# staged; 1D (sync, async), a batch's entry, a 2D copy's row.
for m in past_h2d_sync past_h2d_async past_d2h_sync past_d2h_async past_batch \
	past_2d_h2d past_2d_d2h two_h2d_sync two_h2d_async two_d2h_sync two_d2h_async two_batch; do
	staged_case "late DMA" late_past "a copy past its registered block's end: $m" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=4M HOSTPIN_PIN_AFTER=1 HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_BUFFER=4M FAKE_CUDA_REFUSE_PARTIAL=1 -- "$m"
	echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
		bad "late DMA: past its block's end ($m): a range partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
		ok "late DMA: past its block's end ($m): no range partly registered reached the driver"
done
fi

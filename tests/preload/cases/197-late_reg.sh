# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the staging rings and background registration, late DMA ----
# (issue 39, items 4, 5, 7, 8, 12) late_reg.c in the fake driver's late
# mode (FAKE_CUDA_LATE_DMA=1, tests/fakes/fake_late.h), judged as 195's
# cases (staged_lib.sh's staged_case: exit 0, no VIOLATION but pageable
# copies, no overlap, no context of hostpin's, nothing registered at exit).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build late_reg late_reg.c $F_FLAGS || true
. ./staged_lib.sh
# lr NAME WANT ENV... -- MODE (sets LR_OUT, LR_LOG)
lr() {
	local name=$1 want=$2; shift 2
	staged_case "late DMA" late_reg "$name" "$want" FAKE_CUDA_LATE_DMA=1 "$@"
	LR_OUT=$STAGE_OUT LR_LOG=$STAGE_LOG
}
# no event of one context recorded on another's stream
no_other_ctx() {
	! echo "$LR_LOG" | grep -q "LATE event-on-other-context" &&
		ok "late DMA: $1: no event recorded on another context's stream" ||
		bad "late DMA: $1: an event recorded on another context's stream"
}
if [ -x "$B/late_reg" ]; then
# Must hold (item 4): with device 0 current, a copy onto device 1's stream
# whose ring must grow succeeds (the ring grows through device 1's
# context), and device 1's later copies too.
lr "device 1's ring grown while device 0 is current" any \
	HOSTPIN_STAGE_BUFFER=16M HOSTPIN_STAGE_MIN=2M -- dev1_grow
no_other_ctx "device 1's ring grown while device 0 is current"
# Must hold (item 7): a ring refused for a moment, then a device reset:
# staged copies after succeed (no event of the ended context reused).
lr "a ring refused for a moment, then a device reset: copies succeed" any \
	HOSTPIN_MAX_PINNED=64M HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=1 \
	HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_MMAP=off -- reset_ring
# Must hold (item 12): a ring's growth never runs on a copy's path nor
# under the ring's lock: copies on other streams return while the growth
# waits at the fake's gate.
lr "a ring's growth is off the copy's path" any \
	HOSTPIN_STAGE_BUFFER=16M HOSTPIN_STAGE_MIN=2M FAKE_CUDA_REGISTER_GATE=8388608 -- grow_bg
# Must hold (item 8): a forked child's madvise, realloc and free of a
# block its parent was registering in the background return.
lr "fork during a background registration: the child's block is plain memory" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- fork_reg
# Must hold (item 5): a device reset during a background registration
# leaves no block flagged registered with a dead piece; it is registered
# again later.
lr "a device reset during a background registration: registered again, whole" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- reset_reg
lr "a device reset during a registration inside a copy: registered again, whole" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_PIN_AFTER=1 \
	FAKE_CUDA_REGISTER_GATE=8388608 -- reset_sync
# Must hold (item 5, a context destroyed): a piece registered in the
# context made again after the one pushed for it was destroyed, its
# registration cancelled by a free(), is undone before the block is
# unmapped (found by the engine tester, reset-cancelled-undo-710023).
lr "a context destroyed during a background registration, then a free: nothing left registered" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	HOSTPIN_CACHE=0 FAKE_CUDA_REGISTER_GATE=8388608 -- destroy_reg
lr "a cancelled background registration whose undo the driver refuses: unregistered at release" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	HOSTPIN_CACHE=0 FAKE_CUDA_REGISTER_GATE=8388608 -- undo_refused
# Must hold (item 11): the program registers a hostpin block in 8 pieces
# from 8 threads and unregisters them, 40 rounds, registered by hostpin
# at allocation or at its first copy: every call succeeds, nothing is
# left registered at exit.
# Must hold (issue 39, the batch pass, item 4): the program's
# cuMemHostRegister of a piece of a block while another thread's copy
# through it waits (HOSTPIN_COPY=sync) for a stream that waits for the
# registering thread returns (registered, or refused 712 after hostpin's
# bounded wait for the copy), and the copy lands whole; it waited for ever.
lr "a registration while a copy through the block waits for the registering thread: both return" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_MMAP=off \
	HOSTPIN_COPY=sync -- register_while_waited
# Must hold (review of the step aside's bound, issue 39 section 3): the
# program forks while a thread of its waits in hostpin's step aside for
# a copy in flight (the block flagged so in the child too): the child's
# copy from the block and its free return (hooks are off in a child: it
# counts no copy, and waits for none), and the parent's calls return as
# above (aside.c).
build aside aside.c $F_FLAGS || true
if [ -x "$B/aside" ]; then
	staged_case "late DMA" aside "fork while a registration steps aside for a copy in flight: the child's copy and free return" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_BACKGROUND=0 \
		HOSTPIN_MMAP=off HOSTPIN_COPY=sync -- fork
	# Must hold (issue 39, regress-diff-c-96518885.prog: 712 in 1 full
	# run in 27 under load): a stall of the whole process (11 s stopped)
	# while the registration waits for a copy that can still end does not
	# refuse it: once the copy ended it registers (0).
	staged_case "late DMA" aside "a stall of the process while a registration steps aside for a copy in flight: registered once the copy ends" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_BACKGROUND=0 \
		HOSTPIN_MMAP=off HOSTPIN_COPY=sync -- stall
	# Must hold (issue 39, seed 562614: 712 under load): a batch's next
	# entry never waits for a step aside while the entries before it are
	# counted in flight (the step aside waits for them): they end first,
	# and the program's registration returns 0.
	for cm in sync async; do
		pd=$(mktemp -d)
		staged_case "late DMA" aside "a registration steps aside while a batch is between entries (HOSTPIN_COPY=$cm): registered" any \
			FAKE_CUDA_LATE_DMA=1 HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_BACKGROUND=0 \
			HOSTPIN_MMAP=off HOSTPIN_COPY=$cm HOSTPIN_TEST_PAUSE="$pd" -- batch
		rm -rf "$pd"
	done
fi
for pa in 0 1; do
	lr "8 threads register and unregister pieces of one block (HOSTPIN_PIN_AFTER=$pa)" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=$pa HOSTPIN_MMAP=off -- own_pieces
done
# Must hold (the limits): a capturing thread's own discard and partial
# munmap of a block whose background registration its capture parked
# return (no wait for its own capture's end, no spin).
lr "a capturing thread's own purge of a block its capture parked returns" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- capture_own_purge
fi

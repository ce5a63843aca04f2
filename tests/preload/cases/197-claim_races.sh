# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a block held by another thread while the program acts on it ----
# claim_race.c over the fake driver (late mode): a call that found a block
# held (busy) by another thread must not skip it from a snapshot taken
# before the hold (the pattern of foreign.c's claim, dfb79df).  Judged by
# exit 0, the "ok" line and no overlapping registration; the cache keeps
# registered blocks to the end, so nothing is asked of them at exit.
F_FLAGS="-rdynamic -L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build claim_race claim_race.c $F_FLAGS || true
# cr NAME ENV... -- MODE (lib.sh's raceprog)
cr() {
	local name=$1; shift
	raceprog claim_race "claim race" "$name" HOSTPIN_THRESHOLD=8M HOSTPIN_PIN_AFTER=1 \
		HOSTPIN_MMAP=off HOSTPIN_CACHE=256M HOSTPIN_CACHE_DECAY_MS=600000 \
		HOSTPIN_STAGE_BUFFER=4M FAKE_CUDA_REGISTER_GATE=16777216 "$@"
}
if [ -x "$B/claim_race" ]; then
# Must hold: an allocation that finds a fitting cached block held by the
# registration thread (queued before the program freed it) leaves it in
# the cache: handed out again once the thread let go, never dropped with
# its mapping and registration kept for good.
cr "a cached block held by the registration thread stays cached" -- take_held
# Must hold: a free that pushes such a block out of the cache waits for
# the thread and gives it back (unregistered, unmapped), never skips it.
cr "a cached block held by the registration thread, evicted: given back" \
	HOSTPIN_CACHE=40M -- evict_held
# Must hold: the program's registration of part of a mapped block of
# hostpin's while another thread unmaps the block's head (the block split,
# its survivor keeping its registered cells) steps aside from the survivor
# too: never refused 712, no overlapping registration.
cr "a registration beside a partial unmap steps aside from the survivor" \
	HOSTPIN_MMAP=private HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M -- split_aside
# Must hold: device 0's primary context reset while another thread's
# madvise(DONTNEED) holds a registered mapping: the discard succeeds and
# the block is registered again by the copies after.
cr "a context reset while a discard holds the block: registered again" \
	HOSTPIN_MMAP=private HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M -- reset_discard
# Must hold: the same reset while the program's registration of part of
# the block steps aside (hostpin's unregistration held): the block is
# registered again by the copies after, never left flagged registered.
cr "a context reset while a step aside holds the block: registered again" \
	HOSTPIN_MMAP=private HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M -- reset_aside
# Must hold (audit d): the same reset while the discard holds the block
# between its unregistration of the cell and its registration again: the
# block is pending again, registered again by the copies after (it was
# left unregistered for good, or flagged registered over dead cells).
cr "a context reset while a discard registers its cell again: registered again" \
	HOSTPIN_MMAP=private HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M -- reset_repin
# Must hold (audit d): the same reset while a free of the registered block
# holds it, being released into the cache (a pause point inside hostpin):
# the block taken from the cache is registered again by its copies (it was
# kept flagged registered over its dead registration).
pd=$(mktemp -d)
cr "a context reset while a free puts the block in the cache: registered again" \
	HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_TEST_PAUSE="$pd" -- reset_cache
rm -rf "$pd"
# Must hold (audit e): an object calling an unguarded driver copy entry
# point is loaded while a discard holds a registered mapping: the mapping
# ends unregistered (the coverage check's walk skipped it, held, and the
# discard registered its cell again).
cr "an unguarded copy entry point loaded while a discard holds the block: unregistered" \
	HOSTPIN_MMAP=private HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M HP_EXTRA_USE="$B/libextrause.so" -- cov_discard
# Must hold (audit b): the same reset inside the window where a copy's
# thread holds the block it has just registered, after it looked at the
# contexts' epoch (a pause point inside hostpin: HOSTPIN_TEST_PAUSE); its
# look again once its claim ended finds the block being freed into the
# cache: it waits and looks again, so the block is registered again by the
# copies after (it stayed flagged registered over dead registrations).
pd=$(mktemp -d)
cr "a context reset in a registration's window, the block freed meanwhile: registered again" \
	HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_TEST_PAUSE="$pd" -- recheck
rm -rf "$pd"
fi
# ---- a context's end while the registration thread holds its block ----
# reset_bg.c (issue 39 item 5, found by the engine tester:
# reset-chunk-96575277): device 0's primary context reset while the
# registration thread holds a block it has just registered whole (a pause
# point inside hostpin, bg_settled): the reset's walk skips the held
# block.  Must hold: the reset returns only once the thread met the end
# (the block pending again, never flagged registered over its dead
# pieces), and the copies after register it again, whole.
build reset_bg reset_bg.c $F_FLAGS || true
if [ -x "$B/reset_bg" ]; then
pd=$(mktemp -d)
raceprog reset_bg "context end" "a reset while the registration thread holds its block, registered: met before the reset returns" \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	HOSTPIN_TEST_PAUSE="$pd" -- settled
rm -rf "$pd"
# Must hold: the same reset while the thread's next piece waits at the
# fake's gate, which lets it on once the driver reset the context and the
# program made it again, before hostpin learnt of the end (a pause point
# inside the reset's hook, end_called): that piece, living in the context
# made again, is undone; the block is registered whole or not at all once
# the registration ended, and registered again by the copies after.
pd=$(mktemp -d)
raceprog reset_bg "context end" "a piece registered across the driver's reset: undone" \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 HOSTPIN_TEST_PAUSE="$pd" -- straddle
rm -rf "$pd"
# Must hold: the whole reset while the thread has pushed the context for
# its first piece, not yet registered it (pause point pin_pushed), the
# program making the context again before it goes on: the piece is not
# registered through the context that ended; the block is registered
# whole or not at all, then registered again by the copies after.
pd=$(mktemp -d)
raceprog reset_bg "context end" "a reset between a piece's push and its registration: not through the ended context" \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	HOSTPIN_TEST_PAUSE="$pd" -- pushed
rm -rf "$pd"
# Must hold (the engine tester's reset-refused-piece-stale-89201737): the reset
# held inside its hook before hostpin learnt of the end (end_called) while
# the thread's next piece, let on, is refused by the driver (the context
# ended, not made again yet), so that the thread marks the context ended
# itself: the hook still sends every block of that context back to
# pending, the one the thread held (its first piece's undo found no
# context: kept) and one registered whole before, never left flagged
# registered over dead registrations; the copies after register it again.
pd=$(mktemp -d)
raceprog reset_bg "context end" "a piece refused after the driver's reset, before the hook's: the context's blocks pending" \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 HOSTPIN_TEST_PAUSE="$pd" -- refused
rm -rf "$pd"
fi

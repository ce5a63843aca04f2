# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the copy engine's third pass (issue 39, section 2) ----
# late_fix.c in the fake driver's late mode (FAKE_CUDA_LATE_DMA=1,
# tests/fakes/fake_late.h), judged as 195's cases (staged_lib.sh's
# staged_case): exit 0, the "ok" line, no VIOLATION, every registration
# released at exit.
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build late_fix late_fix.c $F_FLAGS || true
build late_array late_array.c $F_FLAGS || true
. ./staged_lib.sh
lf() {
	local name=$1 want=$2; shift 2
	staged_case "late DMA" late_fix "$name" "$want" FAKE_CUDA_LATE_DMA=1 "$@"
	LF_OUT=$STAGE_OUT LF_LOG=$STAGE_LOG
}
if [ -x "$B/late_fix" ]; then
# Must hold (item 9): an H2D of (size_t)-1 bytes to device address 0
# returns the driver's refusal, not success.
lf "an H2D of (size_t)-1 bytes returns the driver's error" any -- huge
# Must hold (item 3): a copy split at a registered block's registrations
# whose second DMA is refused returns the error with the first one fenced:
# nothing lands in the program's memory after the return.
lf "a refused piece: the DMA already queued is fenced before the error returns" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M \
	FAKE_CUDA_FAIL=cuMemcpyDtoHAsync_v2:2 -- piece_refused
# Must hold (item 1): per-thread default streams are the threads' own
# (FAKE_CUDA_PTDS=1): a staged copy on one thread's never waits for
# another thread's, nor does a relaxed capture's begin.
lf "per-thread default streams told apart by thread, not by handle" staged \
	HOSTPIN_STAGE_BUFFER=4M HOSTPIN_STAGE_THREADS=1 FAKE_CUDA_PTDS=1 -- ptds
# Must hold (item 1, the copy fences): HOSTPIN_COPY=async's one event per
# registered block: a copy on another thread's per-thread stream (the same
# handle) waits for the event it replaces; no DMA outlives the block.
lf "a block's last-copy event is replaced only after another per-thread stream's copy" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async FAKE_CUDA_PTDS=1 -- fence_ptds
# Must hold (item 2): a global capture's begin on one stream does not wait
# for another thread's staged copy on another stream, and the copy then
# ends without a call the capture prohibits (the capture stays valid).
lf "a global capture's begin does not wait for a staged copy elsewhere" any \
	HOSTPIN_STAGE_BUFFER=4M HOSTPIN_STAGE_THREADS=1 -- capture_other
# (the rest of the copy, after its staged part, went to the driver as one
# pageable call of less than the whole)
n=$(echo "$LF_LOG" | sed -n 's/.*VIOLATION pageable-copy 0x[0-9a-f]* \([0-9]*\)$/\1/p' | head -1)
[ -n "$n" ] && [ "$n" -lt 33554432 ] &&
	ok "late DMA: capture elsewhere mid copy: its rest went to the driver as the program's call ($n bytes)" ||
	bad "late DMA: capture elsewhere mid copy: no rest call of less than the whole (${n:-none})"
lf "a global capture's begin does not wait for a staged 2D copy elsewhere" any \
	HOSTPIN_STAGE_BUFFER=4M HOSTPIN_STAGE_THREADS=1 -- capture_other_2d
# (its rest in chunks of rows as the program's own 2D calls, not the whole)
echo "$LF_LOG" | grep -q "VIOLATION pageable-copy 2D" &&
	bad "late DMA: capture elsewhere mid 2D copy: the whole copy went to the driver as it is" ||
	ok "late DMA: capture elsewhere mid 2D copy: staged in part, the rest as the program's 2D calls"
# Must hold (the engine tester's cases/capture-first-held-d2h-96559553): the
# same when the capture is the process's first (the copy's wait began
# before any capture was seen: it must not block where a begin waits).
lf "the process's first global capture does not wait for a staged copy elsewhere" any \
	HOSTPIN_STAGE_BUFFER=4M HOSTPIN_STAGE_THREADS=1 -- capture_other_first
# Must hold (item 6): a copy under HOSTPIN_STAGE_MIN, and a 2D copy,
# crossing the end of the registered part of a block being registered
# never reach the driver half registered (the fake refuses that:
# FAKE_CUDA_REFUSE_PARTIAL=1).
lf "a small or 2D copy across a block's registered part never reaches the driver half registered" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 FAKE_CUDA_REFUSE_PARTIAL=1 -- partial
echo "$LF_LOG" | grep -q "PARTIAL refused" &&
	bad "late DMA: a range only partly registered reached the driver: $(echo "$LF_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "late DMA: no range only partly registered reached the driver"
# Must hold (item 10): with HOSTPIN_STAGE=0, a copy decided as a pageable
# pass-through that reaches the driver after another thread's copy
# registered the block (not yet marked) is waited for as registered.
lf "a pass-through decided before another thread registered the block is still waited for" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_STAGE=0 HOSTPIN_PIN_AFTER=2 \
	FAKE_CUDA_DTOH_GATE=8388608 FAKE_CUDA_REGISTER_HOLD_AFTER=8388608 -- decision
# Must hold (limits): a large cuMemcpyAsync between pageable memory and
# device memory is staged by its direction (no pageable copy of 4 MiB or
# more reaches the driver), the data right.
lf "cuMemcpyAsync between unified addresses is staged" staged -- unified
# Must hold (limits): a 2D copy in a registered block across its
# registrations never reaches the driver across two (the fake refuses it).
lf "a 2D copy across a registered block's registrations is right" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M \
	HOSTPIN_STAGE_MIN=1M FAKE_CUDA_REFUSE_PARTIAL=1 -- rect_pieces
echo "$LF_LOG" | grep -q "PARTIAL refused" &&
	bad "late DMA: a 2D copy reached the driver across registrations: $(echo "$LF_LOG" | grep -m1 'PARTIAL refused')" ||
	ok "late DMA: no 2D copy reached the driver across registrations"
# Must hold (the engine tester's cases/capture-untracked-wait-73100612):
# HOSTPIN_COPY=async's copy through a registered block on another
# context's stream (no event can be recorded there: hostpin waits for the
# stream), the stream held until a global capture elsewhere began: the
# begin does not wait for that wait.
lf "a global capture's begin does not wait for an async copy's stream wait elsewhere" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- capture_untracked
# Must hold (the same wait inside the capture gate, copy.c's pageable
# path): a copy passed through on a held stream that ends with its block
# claimed by the background registration (a pause point holds the job
# there): a global capture's begin elsewhere does not wait for its wait.
pd=$(mktemp -d)
lf "a global capture's begin does not wait for a passed copy's wait on a block being registered" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_HTOD_GATE=1048576 HOSTPIN_TEST_PAUSE="$pd" -- capture_changing
rm -rf "$pd"
# Must hold (issue 39): under HOSTPIN_COPY=async a copy of a registered
# block on one stream waits for the block's last copy on another stream
# (held here) outside the capture gate, its thread in relaxed capture
# interaction mode: a global capture's begin elsewhere does not wait for
# it, and the wait invalidates no capture (hung, rc 142, while the wait
# was inside the gate).  The order a later copy of the block needs is
# kept: fuzz cases/attr3d-after-pieces-96525102.
lf "a global capture's begin does not wait for a replaced last-copy event's wait" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- capture_replaced
# Must hold (issue 39): a release (munmap, mremap, mmap MAP_FIXED) or
# discard (madvise DONTNEED) of a block whose last copy is on a held
# stream waits for it outside the capture gate (relaxed mode), then
# releases in the gate: a global capture's begin elsewhere does not wait
# for the DMA (each hung, rc 142, while the wait was inside the gate).
for m in capture_unmap capture_mremap capture_fixed capture_dontneed; do
	lf "a global capture's begin does not wait for a release's wait ($m)" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- $m
done
# Must hold (issue 39): that wait made while another thread's global
# capture runs (a pause point holds the release between its look for a
# capture and its wait; the capture begins there) is made in relaxed
# capture interaction mode: the capture stays valid (the fake invalidates
# it on a call the calling thread's mode prohibits).
pd=$(mktemp -d)
lf "a release's wait during a global capture elsewhere leaves it valid" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async \
	HOSTPIN_TEST_PAUSE="$pd" -- capture_relaxed
rm -rf "$pd"
# Must hold (review of issue 39): events replaced while a settle wait
# runs elsewhere are all destroyed (more than 64 were leaked: LATE
# events-live at exit), and a context's reset between settle's load of
# an event and its wait waits for that wait (it was made on the ended
# context's event: VIOLATION event-of-ended-context).
lf "events replaced during a settle wait elsewhere are all destroyed" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async -- settle_leak
ev=$(echo "$LF_LOG" | sed -n 's/.*LATE events-live=\([0-9]*\)$/\1/p' | tail -1)
[ "$ev" = 0 ] && ok "late DMA: settle_leak: no event live at exit" ||
	bad "late DMA: settle_leak: events live at exit: ${ev:-none}"
pd=$(mktemp -d)
lf "a context reset waits for a settle wait on its event" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async \
	HOSTPIN_TEST_PAUSE="$pd" -- settle_reset
rm -rf "$pd"
# Must hold (review): a last-copy event replaced while a settle wait
# elsewhere holds a slot naming it is destroyed by that wait, after it
# (ev_destroy's fast path only with no slot in use): no wait on a
# destroyed event (VIOLATION event-destroyed), none live at exit.
pd=$(mktemp -d)
lf "an event replaced under a settle wait on it is destroyed after the wait" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=async \
	HOSTPIN_TEST_PAUSE="$pd" -- settle_destroy
rm -rf "$pd"
ev=$(echo "$LF_LOG" | sed -n 's/.*LATE events-live=\([0-9]*\)$/\1/p' | tail -1)
[ "$ev" = 0 ] && ok "late DMA: settle_destroy: no event live at exit" ||
	bad "late DMA: settle_destroy: events live at exit: ${ev:-none}"
# Must hold (the engine tester's cases/munmap-registering-capture-
# 55000541): a munmap of a whole mapping, or an mremap of it, whose
# background registration runs (its job held at a pause point), made
# during the calling thread's global capture, cancels the job, waits for
# it and is made (0; moved, its data kept): refused before (ENOMEM), the
# program kept a mapping it gave up, registered for good once the capture
# ended.
for m in capture_unmap_bg capture_mremap_bg; do
	pd=$(mktemp -d)
	lf "a munmap or mremap during a capture cancels a registration in progress ($m)" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_STAGE_BUFFER=4M \
		HOSTPIN_TEST_PAUSE="$pd" -- $m
	rm -rf "$pd"
done
# Must hold (review): hp_settle_range walks the registry on a release or
# discard only once a last-copy event was ever tracked: never under
# HOSTPIN_COPY=sync (the default), under async from the first async copy
# through a registered block (a pause point counts the walks).
for c in sync async; do
	pd=$(mktemp -d)
	lf "no settle walk before a last-copy event was ever tracked ($c)" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=0 HOSTPIN_COPY=$c \
		HOSTPIN_TEST_PAUSE="$pd" -- settle_skip
	rm -rf "$pd"
done
fi
# Must hold (issue 39, the batches): a copy between a CUDA array and host
# memory of hostpin's whose host rows cross the end of the registered part
# of a block being registered (one row straddling it) never reaches the
# driver half registered (FAKE_CUDA_REFUSE_PARTIAL=1 refuses that): its
# host rows made from the array's element size (8 bytes: FLOAT, 2
# channels; asked of the driver) and the copy planned as a pitched 3D copy
# (late_array.c).  The 3D batch forms (cuMemcpy3DBatchAsync_v2,
# cuMemcpy3DWithAttributesAsync, the runtime's cudaMemcpy3DBatchAsync),
# then the single cuMemcpy3DAsync_v2 and cuMemcpy2DAsync_v2 with an array
# side, and the runtime's cudaMemcpy3DAsync and cudaMemcpy3D (whose extent
# counts the array's elements): each went to the driver whole and was
# refused (1).
if [ -x "$B/late_array" ]; then
	la() {
		staged_case "late DMA" late_array "$1" any FAKE_CUDA_LATE_DMA=1 \
			HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
			FAKE_CUDA_REGISTER_GATE=8388608 FAKE_CUDA_REFUSE_PARTIAL=1 -- "$2"
		echo "$STAGE_LOG" | grep -q "PARTIAL refused" &&
			bad "late DMA: $1: a range only partly registered reached the driver: $(echo "$STAGE_LOG" | grep -m1 'PARTIAL refused')" ||
			ok "late DMA: $1: no range only partly registered reached the driver"
	}
	la "3D batch ops between a CUDA array and rows across a block's registered part" batch
	la "cuMemcpy3DAsync and cuMemcpy2DAsync with a CUDA array, rows across a block's registered part" single
	la "cudaMemcpy3DAsync and cudaMemcpy3D with a CUDA array, rows across a block's registered part" runtime
	# and a batch whose second op leaves its array: to the driver whole,
	# refused before its first op moved (it was staged, then the second
	# refused: the array written after the error)
	la "a batch with an op past its array's end: refused whole, nothing moved" refused
	# the 1D array copies (cuMemcpyHtoA/AtoH, sync and async) across the
	# registered part's end: cut there into several calls (the array's
	# offset advanced by bytes); they went to the driver whole, refused
	la "cuMemcpyHtoA(Async) from host bytes across a block's registered part" htoa
	la "cuMemcpyAtoH(Async) into host bytes across a block's registered part" atoh
	# an array whose format hostpin cannot size (NV12): its ops go to the
	# driver as they are, said once
	staged_case "late DMA" late_array "an array of an unknown format: its ops go as they are" any \
		FAKE_CUDA_LATE_DMA=1 HOSTPIN_LOG=info HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M \
		HOSTPIN_STAGE_BUFFER=4M FAKE_CUDA_REGISTER_GATE=8388608 FAKE_CUDA_REFUSE_PARTIAL=1 -- unknown
	n=$(echo "$STAGE_OUT" | grep -c "element size hostpin cannot learn")
	[ "$n" = 1 ] && ok "late DMA: an array of an unknown format: said once" ||
		bad "late DMA: an array of an unknown format: said $n times"
fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the copy engine over a driver whose DMA completes later ----
# (issue 32) The fake driver's late mode (FAKE_CUDA_LATE_DMA=1,
# tests/fakes/fake_late.h): each stream's DMA runs on a worker thread, only
# as far as the program synchronised; a program may hold a stream until it
# releases it; events belong to their context.  late.c checks data and
# semantics; staged_lib.sh's staged_case checks the fake's log (no
# VIOLATION, every registration released at exit).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build late late.c $F_FLAGS || true
$CC $CFL -shared -fPIC -DAS_PLUGIN -o "$B/liblate_plug.so" late_plug.c -L"$F" \
	-l:libcuda.so.1 -Wl,-rpath,"$F" -ldl -lpthread || bad "build liblate_plug.so"
build late_plug late_plug.c || true
. ./staged_lib.sh
# lt NAME WANT ENV... -- MODE: staged_case in the late mode (sets LT_OUT,
# LT_LOG).
lt() {
	local name=$1 want=$2; shift 2
	staged_case "late DMA" late "$name" "$want" FAKE_CUDA_LATE_DMA=1 "$@"
	LT_OUT=$STAGE_OUT LT_LOG=$STAGE_LOG
}
if [ -x "$B/late" ]; then
# Must hold (item 1): a copy under HOSTPIN_STAGE_MIN into the registered
# part of a block being registered in the background waits as a copy
# through a registered block does (HOSTPIN_COPY=sync): D2H data there on
# return, an H2D source overwritten after the call changes nothing.
lt "a small copy into a block's registered part keeps the registered-memory semantics (waits)" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- prefix_small
# Must hold (item 6): a staged copy on stream s2 never waits for s1's work
# (s1 held by the program until the copy returned: a wait is a hang).
lt "a staged copy on one stream does not wait for another stream's work" staged \
	-- streams
# Must hold (item 7): a forked child's ledger slot starts with no ring
# bytes: while it lives, the parent's block still fits under
# HOSTPIN_NODE_MAX_PINNED (rings 64 MiB + block 32 MiB under 100 MiB).
led=$(mktemp -d)
lt "a forked child's ledger slot holds none of the parent's ring bytes" staged \
	HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=1 HOSTPIN_REGISTER_BACKGROUND=0 \
	HOSTPIN_MMAP=off HOSTPIN_NODE_MAX_PINNED=100M HOSTPIN_LEDGER="$led/ledger" -- fork_ring
rm -rf "$led"
# Must hold (item 8): another context made and ended 50 times while copies
# are staged on device 0: the rings are made once (two registrations of
# 32 MiB), their events not leaked (8 live at exit: the rings' own).
lt "rings remade only when their own context ends; no event leaked" staged -- other_ctx
n=$(echo "$LT_LOG" | grep -c " REG .* 33554432 ")
ev=$(echo "$LT_LOG" | sed -n 's/.*LATE events-live=\([0-9]*\)$/\1/p')
[ "$n" = 2 ] && [ "$ev" = 8 ] && ok "late DMA: other contexts ending: rings registered twice, 8 events live" ||
	bad "late DMA: other contexts ending: $n ring registrations, ${ev:-?} events live at exit"
# Must hold (item 3): a ring's registration the driver refuses to release
# (an unregistration failing with 900, as during a global capture) is never
# unmapped: no "VIOLATION registered-range-unmapped".
log=$(mktemp)
out=$(timeout 120 env $P HOSTPIN_CACHE=0 HOSTPIN_THRESHOLD=256M FAKE_CUDA_LATE_DMA=1 \
	FAKE_CUDA_LOG="$log" FAKE_CUDA_FAIL=cuMemHostUnregister:1:900 "$B/late" other_ctx 2>&1); rc=$?
if [ $rc = 0 ] && ! grep -q "VIOLATION registered-range-unmapped" "$log"; then
	ok "late DMA: a ring whose release is refused is never unmapped"
else bad "late DMA: a ring whose release is refused: rc=$rc $(grep VIOLATION "$log" | head -1)"; fi
rm -f "$log"
# Must hold (item 12): a copy past the end of a device allocation (which
# the driver refuses whole) writes nothing of its destination, staged or
# not.
lt "a copy the driver refuses outright writes nothing" any -- past_end
# Must hold (item 9): the cap full for a moment (a registered block leaves
# no room for the ring) does not turn staging off: once the block is
# freed, the next copy is staged (one copy only reached the driver
# pageable: the one while the cap was full).
lt "a pinned-memory cap full for a moment: staging goes on once there is room" any \
	HOSTPIN_MAX_PINNED=64M HOSTPIN_THRESHOLD=24M HOSTPIN_PIN_AFTER=1 \
	HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_MMAP=off -- cap_transient
n=$(echo "$LT_LOG" | grep -c "VIOLATION pageable-copy")
[ "$n" = 1 ] && ok "late DMA: cap full for a moment: one copy passed through, the next staged" ||
	bad "late DMA: cap full for a moment: $n copies reached the driver pageable (want 1)"
# Must hold (items 11, 5): copies on a second device's context are staged
# through that context's rings (none reaches the driver pageable); a copy
# onto device 1's stream with device 0 current succeeds whole.
lt "rings per context: a second device's copies staged; a copy onto another device's stream succeeds" \
	staged -- two_devices
# Must hold (item 4): the program's own registration of a block being
# registered in the background succeeds: hostpin cancels what is left and
# steps aside.
lt "the program registers a block being registered in the background: it succeeds" any \
	HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
	FAKE_CUDA_REGISTER_GATE=8388608 -- own_register
# Must hold (item 10): no wait longer than one piece.  A block of four
# 8 MiB pieces registered in the background, the second held at the fake's
# gate; late.c lets that piece (and no other) through only once the
# waiting thread sleeps (a spinning or whole-block wait never returns: the
# alarm fails the mode).  A global capture's begin returns after that piece
# (the third begun only after the capture); free() of the block and the
# exit cancel what is left: each piece made is unregistered, none live.
# realloc, a partial munmap and a discard (MADV_DONTNEED) of the block
# cancel what is left after the piece in flight, asleep.  free() while a
# global capture parked the registration returns during the capture; the
# pieces made are unregistered once it ended.  So does a realloc by the
# capturing thread itself (it moves the block: waiting for the capture's
# end would never return).
for m in capture_piece free_piece exit_piece realloc_piece free_capture \
	realloc_capture munmap_piece purge_piece; do
	lt "no wait longer than one piece of a background registration ($m)" any \
		HOSTPIN_THRESHOLD=24M HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_STAGE_BUFFER=4M \
		FAKE_CUDA_REGISTER_GATE=8388608 -- $m
	case $m in capture_piece|munmap_piece|purge_piece) continue ;; esac
	reg=$(echo "$LT_LOG" | grep -c " REG .* 8388608 ")
	unreg=$(echo "$LT_LOG" | grep -c " UNREG .* 8388608")
	[ "$reg" = 2 ] && [ "$unreg" = 2 ] &&
		ok "late DMA: $m: two pieces made, both unregistered, the rest cancelled" ||
		bad "late DMA: $m: pieces registered $reg, unregistered $unreg (want 2, 2)"
done
# Must hold (item 2): after a staged copy, the plug-in that brought the
# driver is closed (the driver unloaded with it); the exit calls nothing in
# the unloaded driver (a call there dies with SIGSEGV).
out=$(timeout 60 env $P HOSTPIN_CACHE=0 HOSTPIN_THRESHOLD=256M FAKE_CUDA_LOG=/dev/null \
	"$B/late_plug" "$B/liblate_plug.so" 2>&1); rc=$?
[ $rc = 0 ] && echo "$out" | grep -q "late_plug unload: ok" &&
	ok "late DMA: the driver unloaded after a staged copy: the exit calls nothing in it" ||
	bad "late DMA: the driver unloaded after a staged copy: rc=$rc $(echo "$out" | tail -2)"
fi

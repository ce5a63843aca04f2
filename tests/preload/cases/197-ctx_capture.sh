# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a CUDA context's end met by a holder during a graph capture ----
# ctx_capture.c over the fake driver (late mode): a block held by another
# thread when its context ends meets the end itself; during a capture it
# cannot (no unregistration: invariant 13) and puts it off.  Judged by exit
# 0, the "ok" line and no overlapping registration.
F_FLAGS="-rdynamic -L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build ctx_capture ctx_capture.c $F_FLAGS || true
# cc_run NAME ENV... -- MODE (lib.sh's raceprog)
cc_run() {
	local name=$1; shift
	raceprog ctx_capture "context end in a capture" "$name" HOSTPIN_THRESHOLD=8M \
		HOSTPIN_PIN_AFTER=0 HOSTPIN_MMAP=private HOSTPIN_REGISTER_CHUNK=8M "$@"
}
if [ -x "$B/ctx_capture" ]; then
# Must hold: device 0's primary context reset while a madvise(DONTNEED)
# holds a registered mapping, and a global capture begun before the
# discard's unregistration (refused by the ended context) returned: the
# madvise succeeds and the block is registered again (the discard took the
# refusal for the capture's: EBUSY, the block flagged registered over dead
# registrations for good).
cc_run "a reset met by a discard during a capture: registered again" -- discard
# Must hold: the same with a partial munmap as the holder, during a
# capture: the part the program keeps stays tracked and is registered
# again (the whole release was refused too, the record leaked whole).
cc_run "a reset met by a partial unmap during a capture: the part kept registered again" -- split_capture
# Must hold: a holder that holds no capture gate (a copy's thread that has
# just registered the block, at the pause point recheck_held) meets the
# reset during a capture and cannot unregister: once the capture ended the
# block is registered again (it stayed flagged registered for good).
pd=$(mktemp -d)
cc_run "a reset met by a registration's look again during a capture: registered again" \
	HOSTPIN_PIN_AFTER=1 HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_TEST_PAUSE="$pd" -- recheck
rm -rf "$pd"
fi
if [ -x "$B/ctx_capture" ]; then
# Must hold (no capture): the same reset while a partial munmap holds the
# mapping, inside its first cell's unregistration, which the ended context
# refuses: the part the program keeps is registered again by the copies
# after.
cc_run "a reset met by a partial unmap: the part kept registered again" -- split
fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- registration off the critical path (register.c) ----
# A block that earns registration (its HOSTPIN_PIN_AFTER-th copy) is
# registered by hostpin's registration thread while its copies are staged;
# registrations are at most 1 GiB each.  The fake driver holds every
# registration of FAKE_CUDA_REGISTER_GATE bytes or more until the program
# opens the gate, so "the copy returned before the registration finished"
# is decided by the program, not by timing: a copy that registered inside
# its own call would wait for a gate that only its return opens (the
# program's 60 s alarm then fails the case).
F_FLAGS="-L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build staged staged.c $F_FLAGS || true
GATE=FAKE_CUDA_REGISTER_GATE=100663296
. ./staged_lib.sh
# bg NAME ENV... -- MODE: staged_case (staged_lib.sh) with a 24 MiB
# threshold; no pageable pointer may reach the fake unless BG_ALLOW is
# "pageable-copy" (sets BG_OUT, BG_LOG).
bg() {
	local want=staged
	[ "${BG_ALLOW:-}" = pageable-copy ] && want=any
	local name=$1; shift
	staged_case "background registration" staged "$name" $want \
		HOSTPIN_THRESHOLD=24M "$@"
	BG_OUT=$STAGE_OUT BG_LOG=$STAGE_LOG
}
if [ -x "$B/staged" ]; then
bg "the copy that earns registration returns while the registration is held; copies staged meanwhile, direct after" \
	$GATE FAKE_CUDA_NO_PAGEABLE=4194304 HOSTPIN_STATS=1 -- earn
# copies 1-4 staged (two of the block, the sync one, the D2H into plain
# memory); the fifth, after the registration, direct through the block
echo "$BG_OUT" | grep -q "staged copies 4 (" && echo "$BG_OUT" | grep -q "registered in the background: 1 blocks" &&
	ok "background registration: four copies staged, the one after the registration not" ||
	bad "background registration: report: $(echo "$BG_OUT" | grep 'staged copies')"
n=$(echo "$BG_LOG" | grep -c " REG .* 100663296 ")
[ "$n" = 1 ] && ok "background registration: the block was registered once" ||
	bad "background registration: the block was registered $n times"
bg "freed by another thread while its registration is held: waits, then unregisters" $GATE -- earn_free
BG_ALLOW="pageable-copy" bg "a global capture elsewhere: registered only after it ended, capture intact" -- earn_capture
bg "HOSTPIN_REGISTER_BACKGROUND=0: registered inside the copy (no gate: the copy returns)" \
	HOSTPIN_REGISTER_BACKGROUND=0 -- earn_inline
bg "a 1.5 GiB block: registered as 1 GiB, then 512 MiB; a copy of all of it: one DMA per registration" \
	HOSTPIN_PIN_AFTER=0 FAKE_CUDA_NO_PAGEABLE=4194304 -- pieces
blk=$(echo "$BG_OUT" | sed -n 's/^block \(0x[0-9a-f]*\)$/\1/p')
regs=$(echo "$BG_LOG" | awk '$2 == "REG" && $4 >= 536870912 { print $4 }' | sort -n | tr '\n' ' ')
[ "$regs" = "536870912 1073741824 " ] && ok "background registration: pieces of at most 1 GiB" ||
	bad "background registration: registrations of the 1.5 GiB block: $regs"
bg "copies across cells of HOSTPIN_REGISTER_CHUNK: direct in parts, every form (driver, runtime, sync, async)" \
	HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M FAKE_CUDA_NO_PAGEABLE=4194304 -- split
# The staging ring is pinned memory: under HOSTPIN_MAX_PINNED with the
# blocks (the ring of 64 MiB is made first; the 32 MiB block that then earns
# registration at its first copy, inside it, would pass 90 MiB; under a cap
# of 200 MiB it is pinned; the program's own mappings untracked, HOSTPIN_MMAP=off),
# and refused over it, copies then passed through.
for cap in 90M 200M; do
	bg "the ring counts against HOSTPIN_MAX_PINNED ($cap)" HOSTPIN_MAX_PINNED=$cap \
		HOSTPIN_PIN_AFTER=1 HOSTPIN_REGISTER_BACKGROUND=0 HOSTPIN_MMAP=off HOSTPIN_STATS=1 HP_BLOCK=1 -- sources
	over=$(echo "$BG_OUT" | sed -n 's/.*served unpinned over HOSTPIN_MAX_PINNED \([0-9]*\)$/\1/p')
	if [ "$cap" = 90M ]; then [ "${over:-0}" -gt 0 ]; else [ "$over" = 0 ]; fi &&
		ok "background registration: ring 64 MiB + block 32 MiB under a cap of $cap: served unpinned ${over:-?}" ||
		bad "background registration: ring and cap $cap: served unpinned over the cap: ${over:-none}"
done
BG_ALLOW="pageable-copy" bg "a ring over HOSTPIN_MAX_PINNED: refused, copies passed through" \
	HOSTPIN_MAX_PINNED=32M FAKE_CUDA_NO_PAGEABLE=4194304 -- basic
n=$(echo "$BG_OUT" | grep -c "staging ring .* could not be reserved under HOSTPIN_MAX_PINNED")
p=$(echo "$BG_LOG" | grep -c "VIOLATION pageable-copy")
[ "$n" = 1 ] && [ "$p" -gt 0 ] && ok "background registration: the refused ring said once ($p copies passed through)" ||
	bad "background registration: ring over the cap: said $n times, $p copies passed through"
fi

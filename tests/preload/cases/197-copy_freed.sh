# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a copy whose block another thread frees after hostpin's walk ----
# copy_freed.c over the fake driver (late mode; hostpin's pause point
# copy_walked): the copy must not wait on the freed record's flags word,
# which is the registry pool's link then (issue 39, the tester's seed 113:
# a `bogus` copy to the end of the address space spun for ever).  Judged
# by exit 0 (a hang is the program's alarm) and the "ok" line.
F_FLAGS="-rdynamic -L$F -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,$F"
build copy_freed copy_freed.c $F_FLAGS || true
if [ -x "$B/copy_freed" ]; then
# Must hold: each of 256 copies returns the fake's refusal though its
# block was freed (its record back in the pool) between the walk and the
# wait for the block's marks.
pd=$(mktemp -d)
raceprog copy_freed "copy freed" "a copy whose block is freed after the walk returns" \
	HOSTPIN_THRESHOLD=1M HOSTPIN_PIN_AFTER=2 HOSTPIN_CACHE=0 \
	HOSTPIN_TEST_PAUSE="$pd" -- walk_free
rm -rf "$pd"
# Must hold: the same, the freed block's pages mapped again at once
# (unknown to hostpin), so that each copy succeeds through pageable
# memory: none counts as a copy through registered memory (nothing is
# registered), none tracked or waited for as one.
pd=$(mktemp -d)
raceprog copy_freed "copy freed" "a copy whose block is freed and mapped again after the walk is pageable" \
	HOSTPIN_THRESHOLD=1M HOSTPIN_PIN_AFTER=1000000 HOSTPIN_CACHE=0 HOSTPIN_COPY=async \
	HOSTPIN_TEST_PAUSE="$pd" -- walk_remap
rm -rf "$pd"
fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Level Zero memory and copies (issue 41) ----
# Injects: a driver that allocates USM host and shared memory itself
# inside zeMemAllocHost/zeMemAllocShared (posix_memalign, or operator new
# with FAKE_ZE_USM=new), as Intel's driver does.  Must hold: that memory is
# never hostpin's and never imported (the fake records an import of it as
# VIOLATION import-usm; ze_prog checks the fake's imports and the query
# API), under the defaults and HOSTPIN_PIN_AFTER=0.
for pa in 2 0; do
	for how in posix_memalign new; do
		zerun "USM host/shared/device memory ($how) is the driver's: never imported [PIN_AFTER=$pa]" 0 \
			HOSTPIN_PIN_AFTER=$pa FAKE_ZE_USM=$how -- usm
	done
done
# Copies through command lists (the loader's exported entry points, which
# reach the driver's tables hostpin patches).  Must hold: under
# HOSTPIN_PIN_AFTER=2 (the default) a block copied once is never imported,
# one copied twice is imported before its second copy runs; under 0 both
# at allocation; data right through host -> device -> host; the report
# counts the Level Zero copies.
zerun "copies: a block copied once is not imported, one copied twice is [PIN_AFTER=2]" 0 \
	HOSTPIN_PIN_AFTER=2 HP_EXPECT_LAZY=1 HOSTPIN_STATS=1 -- copies
n=$(echo "$ZE_OUT_KEEP" | sed -n 's/.*copies seen \([0-9]*\), through registered memory \([0-9]*\).*/\1 \2/p')
if [ "${n%% *}" -ge 8 ] 2>/dev/null && [ "${n##* }" -ge 2 ]; then
	ok "level zero copies counted in the report (seen, through imported memory: $n)"
else bad "level zero copies not counted: '$n'"; fi
zerun "copies: every block imported at allocation [PIN_AFTER=0]" 0 HOSTPIN_PIN_AFTER=0 -- copies
# The same, reached other ways: through the loader's intercept layer, with
# two drivers loaded (the copy goes to the first, imports to both), and
# through the table the loader hands out (dlsym on its handle, as the
# Unified Runtime's adapter calls it).
for variant in "ZE_ENABLE_LOADER_INTERCEPT=1" "ZE_ENABLE_ALT_DRIVERS=$ZE1,$ZE2" "HP_ZE_DDI=1"; do
	v=$(echo "$variant" | sed "s|$F/||g")
	zerun "copies: copied once not imported, twice imported [PIN_AFTER=2, $v]" 0 \
		HOSTPIN_PIN_AFTER=2 HP_EXPECT_LAZY=1 $variant -- copies
done
# Injects: a block freed and a mapping unmapped while copies appended from
# them have not run (a regular list executed, its queue not synchronised;
# an immediate list not synchronised).  Must hold: the imports stay until
# the copies ran (the fake records a copy that runs after its import was
# released as VIOLATION copy-after-release, into unmapped memory as
# copy-unmapped), then go; nothing left imported at exit.
for pa in 2 0; do
	zerun "a block freed while a copy from it has not run keeps its import until it ran [PIN_AFTER=$pa]" 0 \
		HOSTPIN_PIN_AFTER=$pa -- inflight
	zerun "... and the cache hands it to no new allocation meanwhile [PIN_AFTER=$pa, HOSTPIN_CACHE=1G]" 0 \
		HOSTPIN_PIN_AFTER=$pa HOSTPIN_CACHE=1G -- inflight
done

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- realloc growth under faults (issue 22: items 7 and 8) ----
# faults_growth.c says what each mode does; each case below says what it
# injects and what must hold.  The block's record leaves the registry before
# its pages move and comes back where they are (no record ever covers an
# address the kernel may hand out meanwhile: the threads stress of
# 040-process and 050-cache), so these test only what the growth gives.
build faults_growth faults_growth.c -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F"
$CC $CFL -shared -fPIC -o "$B/libfaults_growfail.so" faults_growfail.c -ldl -lpthread ||
	bad "build libfaults_growfail.so"
FG=$B/faults_growth
# Item 8.  Injects: 64 blocks of 3 MiB and more, each with a page of the
# program's mapped just after it (none can grow in place), grown by
# realloc to 5 MiB and more.  Holds: every grown block is 2 MiB aligned as
# a fresh one (hostpin(7)), its contents kept, tracked (unfixed: mremap
# MAYMOVE put 64 of 64 at page alignment only).
run "realloc growth that moves keeps blocks of 2 MiB and more 2 MiB aligned (64 blocks)" \
	$P HOSTPIN_LEDGER=off HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=0 -- timeout 60 "$FG" align
# Item 7.  Injects: a realloc growth whose first growing mremap fails
# (ENOMEM) while hostpin's record pool is exhausted for real (RLIMIT_AS at
# the address space in use, the pool's free records taken by tracked
# mappings: libfaults_growfail.so, preloaded after hostpin, does both from
# inside that mremap).  Holds: realloc returns NULL with ENOMEM, the old
# block stays tracked and intact, and free() of it works (unfixed: the
# block was left untracked and free() handed it to glibc, which aborts).
run "realloc growth failing with hostpin's record pool exhausted: NULL, ENOMEM, old block kept" \
	LD_PRELOAD="$LIB $B/libfaults_growfail.so" HOSTPIN_LEDGER=off HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=0 -- \
	timeout 60 "$FG" growfail
# Item 7, the move.  Injects: the same exhaustion, from inside the mremap
# that moves the block (MREMAP_FIXED) into the place reserved for it, which
# then fails; the block cannot grow in place (a page of the program's after
# it).  Holds: NULL with ENOMEM, the old block tracked, intact and freed
# (unfixed: growth never moved into a place reserved, so the injection is
# never made and realloc grows: no failure is handled at all).
run "realloc growth whose move into its aligned place fails, record pool exhausted: NULL, ENOMEM, old block kept" \
	LD_PRELOAD="$LIB $B/libfaults_growfail.so" HOSTPIN_LEDGER=off HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=0 -- \
	timeout 60 "$FG" movefail
# Item 7, a block that cannot be unpinned.  Injects: the driver refuses
# the unregistration of a registered block that realloc grows (fake
# driver, FAKE_CUDA_FAIL, the first cuMemHostUnregister), and no memory for
# a copy (RLIMIT_AS at the address space in use).  Holds: NULL with ENOMEM,
# the old block intact and still the program's: its free() unregisters it
# (the driver's second call succeeds) and the fake sees nothing left
# registered (unfixed: the block stayed marked leaked and free() aborted
# with "double free of hostpin block").
log=$(mktemp)
if out=$(env $P HOSTPIN_LEDGER=off HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 FAKE_CUDA_LOG="$log" \
	FAKE_CUDA_FAIL=cuMemHostUnregister:1 timeout 60 "$FG" unpinfail 2>&1) && fakelog "$log"; then
	ok "realloc growth of a block the driver will not unregister, no memory to copy: NULL, ENOMEM, old block freed"
else
	bad "realloc growth of a block the driver will not unregister, no memory to copy: NULL, ENOMEM, old block freed"
	echo "$out" | tail -5 | sed 's/^/    /'
fi
rm -f "$log"

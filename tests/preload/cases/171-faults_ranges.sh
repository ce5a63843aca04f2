# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- faults on ranges and threads (issue 22: items 5 and 6, MADV_DONTNEED_LOCKED) ----
# faults_ranges.c says what each mode does; each case below says what it
# injects and what must hold.
build faults_ranges faults_ranges.c -rdynamic -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F"
FR=$B/faults_ranges
# fr NAME ENV... -- MODE: faults_ranges under hostpin and the fake CUDA
# driver with FAKE_CUDA_RESIDENT=1 (registered pages that are discarded
# are violations); exit 0 (77: SKIP), nothing said, no violation, nothing
# registered at exit.
fr() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	out=$(timeout 120 env $P HOSTPIN_LEDGER=off HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 FAKE_CUDA_RESIDENT=1 \
		FAKE_CUDA_LOG="$log" "${envs[@]}" "$FR" "$@" 2>&1); rc=$?
	if [ $rc -eq 77 ]; then echo "SKIP: $name: $(echo "$out" | grep SKIP)"
	elif [ $rc -eq 0 ] && ! echo "$out" | grep -q "hostpin\[" && fakelog "$log"; then ok "$name"
	else bad "$name (rc $rc)"; echo "$out" | tail -5 | sed 's/^/    /'; fi
	rm -f "$log"
}

# Item 5.  Injects: two threads purging (MADV_DONTNEED) their own 2 MiB
# parts of one locked 64 MiB mapping, 1000 times each (on the unfixed
# library nearly every call of one thread fails with EINVAL: the other
# thread's hold on the record makes it purge locked pages).  Holds: every
# call returns 0, purged parts read zero.
# The mapping is 64 MiB where RLIMIT_MEMLOCK allows, else 6 MiB (three
# parts: the same two threads, one record).
mib=64
[ "$(ulimit -l)" = unlimited ] || [ "$(ulimit -l)" -ge 131072 ] || mib=6
if [ "$(ulimit -l)" = unlimited ] || [ "$(ulimit -l)" -ge 7168 ]; then
	run "two threads purge parts of one locked mapping ($mib MiB): 2 x 1000 madvise calls all return 0" \
		$P HOSTPIN_LEDGER=off HOSTPIN_BACKEND=mlock HP_WANT_FLAGS=0x10 HP_MAP_MIB=$mib -- timeout 120 "$FR" race
else
	echo "SKIP: two threads purging a locked mapping: RLIMIT_MEMLOCK below 7 MiB"
fi
# Item 5, device backend.  Injects: the same two purging threads over a
# mapping registered in 2 MiB cells with the fake driver.  Holds: every
# call returns 0 and no registered page is ever discarded.
fr "two threads purge parts of one registered mapping (2 MiB cells): no registered page discarded" \
	HOSTPIN_REGISTER_CHUNK=2M HP_CUDA=1 HP_WANT_FLAGS=0x20 -- race
# (With whole registrations the mapping stays unregistered after its
# second purge, so only the first two calls can race: race_held below
# tests that case deterministically.)
# Item 5, deterministic.  Injects: thread A's purge is held inside the
# driver's unregistration of its cell (the fake calls the program's
# fake_cuda_unreg_hook) while thread B purges another part of the same
# mapping; A is let go when B's purge returned (unfixed: at once) or
# after 2 s (fixed: B waits for A, so it cannot return first).  Holds:
# both calls return 0, no registered page discarded (the unfixed library
# purges B's part, or all of the whole registration, while registered).
fr "a purge waits for another thread's purge of the same mapping held in the driver (2 MiB cells)" \
	HOSTPIN_REGISTER_CHUNK=2M -- race_held
fr "a purge waits for another thread's purge of the same mapping held in the driver (whole registration)" \
	HP_WHOLE=1 -- race_held
# Small item.  Injects: MADV_DONTNEED_LOCKED over part of a registered
# mapping.  Holds: it is a discard (unregistered first, zero after); the
# unfixed library passed it through, discarding registered pages.
fr "MADV_DONTNEED_LOCKED is a discard: unregistered first, reads zero" \
	HOSTPIN_REGISTER_CHUNK=2M -- locked
fr "MADV_DONTNEED_LOCKED is a discard (whole registration)" -- locked
# Item 6.  Injects: every pair lock of the copy path held (set through
# the pair_lock symbol's address, as by a thread inside a copy hook) at
# the moment the process forks.  Holds: the child frees a registered block
# and exits 0 (the unfixed child spins on the inherited lock until its
# 20 s alarm kills it).
off=$(nm "$LIB" 2>/dev/null | awk '$3 == "pair_lock" { print $1 }')
if [ -n "$off" ]; then
	fr "a fork while a thread holds a copy-path pair lock: the child's free does not spin" \
		HP_PAIR_LOCK_OFF="$off" -- fork
else
	echo "SKIP: fork with pair locks held: no pair_lock symbol in $LIB (nm missing or stripped)"
fi
# Items 7 and 8 (realloc growth): 181-faults_growth.sh.

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- behaving like the allocator hostpin replaces (issue 17) ----
# Registration states are checked here: blocks are registered at
# allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests the Nth copy.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
build sigprog sigprog.c

# hostpin's threads block every signal: a program that blocks signals and
# collects them synchronously gets every one, under every pinning backend.
# timeout: a swallowed SIGCHLD leaves sigwaitinfo waiting for ever.
for mode in signalfd sigtimedwait sigwaitinfo; do
	run "signals [mlock]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P HOSTPIN_BACKEND=mlock \
		HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
	run "signals [cuda, fake driver]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P HOSTPIN_BACKEND=cuda \
		HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
	run "signals [auto, fake driver]: $mode collects SIGTERM, SIGUSR1, SIGCHLD" $P \
		HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 60 "$B/sigprog" $mode
done

build ranges ranges.c
# issue 16: a release that starts below the lowest tracked range
runq "reserve-then-commit [mlock]: whole-reservation munmap untracks the commit; remapped and tracked again" \
	$P HOSTPIN_BACKEND=mlock HP_EXPECT_PINNED=1 HP_EXPECT_LOCKED=1 -- "$B/ranges" reserve
runq "reserve-then-commit [cuda, fake driver]: nothing left registered" \
	$P HOSTPIN_BACKEND=cuda HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- "$B/ranges" reserve
runq "reserve-then-commit [none]" $P HOSTPIN_BACKEND=none -- "$B/ranges" reserve

build grow grow.c
# realloc growth: contents, one block, a bounded pinned footprint (grow.c)
for mib in 32 128; do
	runq "realloc growth to $mib MiB in 64 KiB steps [mlock]" $P HOSTPIN_BACKEND=mlock -- "$B/grow" $mib
	runq "realloc growth to $mib MiB in 64 KiB steps [auto]" $P -- "$B/grow" $mib
done
runq "realloc growth to 32 MiB [cuda, fake driver]" $P HOSTPIN_BACKEND=cuda HP_FAKE_CUDA="$F/libcuda.so.1" -- "$B/grow" 32
# bash capturing 12 MB: the string grows by realloc; few pins, and what is
# pinned stays a small multiple of the string (the cache does not fill with
# the discarded steps)
d=$(mktemp -d)
out=$(timeout 300 env $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS_FILE="$d/s.%p.json" bash -c \
	'x=$(head -c 12000000 /dev/zero | tr "\0" a); echo ${#x}' 2>&1); rc=$?
# one report per process (bash, its subshell, head, tr): the largest counts
st=$(python3 -c "
import json, glob
s = [json.load(open(f)) for f in glob.glob('$d/s.*.json')]
print(max(x['pin_calls'] for x in s), max(x['pinned_bytes_peak'] for x in s))" 2>/dev/null)
set -- $st
if [ $rc -eq 0 ] && [ "$out" = 12000000 ] && [ "${1:-999}" -le 40 ] && [ "${2:-0}" -le $((64 << 20)) ]; then
	ok "bash capturing 12 MB [mlock]: ${1} pins, ${2} bytes pinned at the peak"
else bad "bash capturing 12 MB [mlock] (rc $rc, out '$out', pin calls/peak: $st)"; fi
rm -rf "$d"
set --

# RLIMIT_MEMLOCK as an unprivileged user: pins the kernel would refuse are
# refused before any pre-fault work (no backend pin call is even made), and
# said once.
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	d=$(mktemp -d); chmod 1777 "$d" # sticky: hostpin refuses a world-writable directory without it
	cp "$LIB" "$B/grow" "$d/"
	out=$(cd "$d" && prlimit --memlock=65536 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env LD_PRELOAD="$d/libhostpin.so" HOSTPIN_BACKEND=mlock HOSTPIN_LOG=debug \
		HOSTPIN_STATS_FILE="$d/s.json" "$d/grow" 64 4096 2>&1); rc=$?
	st=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['pin_calls'], s['pin_failures'])" 2>/dev/null)
	set -- $st
	lines=$(echo "$out" | grep -c "cannot pin")
	pf=$(echo "$out" | grep -c "pre-faulting")
	if [ $rc -eq 0 ] && [ "${1:-1}" = 0 ] && [ "${2:-0}" -ge 4 ] && [ "$lines" = 1 ] && [ "$pf" = 0 ] &&
		echo "$out" | grep "cannot pin" | grep -q RLIMIT_MEMLOCK; then
		ok "RLIMIT_MEMLOCK 64 KiB as nobody: $2 pins refused up front, no pin call, no pre-fault, said once"
	else bad "RLIMIT_MEMLOCK up front (rc $rc, pin calls/failures: $st, $lines lines, $pf pre-faults): $(echo "$out" | grep hostpin | head -3)"; fi
	# the control: without the limit the same run pins (the mlock backend
	# locks on fault and pre-faults nothing: the pin calls are what the
	# limited run must not make)
	out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS_FILE="$d/c.json" "$B/grow" 64 4096 2>&1)
	c=$(python3 -c "import json;print(json.load(open('$d/c.json'))['pin_calls'])" 2>/dev/null)
	if [ "${c:-0}" -ge 1 ]; then ok "control: unlimited, the same run pins ($c pin calls)"
	else bad "control: no pin call without the limit ($out)"; fi
	rm -rf "$d"
	set --
else
	echo "SKIP: RLIMIT_MEMLOCK up-front test needs root and setpriv"
fi

# small purges and partial unmaps of a 256 MiB pinned mapping: contents,
# locks (smaps), pinned bytes, and the fake driver's registrations right
runq "purges and partial unmaps [mlock]: only the touched pages are unlocked and locked again" \
	$P HOSTPIN_BACKEND=mlock HP_EXPECT_PINNED=1 HP_EXPECT_LOCKED=1 -- timeout 300 "$B/ranges" purge
runq "purges and partial unmaps [cuda, fake driver, 2 MiB cells]" $P HOSTPIN_BACKEND=cuda \
	HOSTPIN_REGISTER_CHUNK=2M HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 300 "$B/ranges" purge
# registered bytes in all: the first registration plus two cells a purge
# (re-registering the whole mapping each time would be 25 GiB)
regd=$(echo "$RUNQ_LOG" | awk '$2 == "REG" {s += $4} END {print s + 0}')
if [ "$regd" -gt 0 ] && [ "$regd" -le $((1536 << 20)) ]; then
	ok "purges and partial unmaps [cuda, 2 MiB cells]: $regd bytes registered in all (proportional to the parts)"
else bad "purges and partial unmaps [cuda, 2 MiB cells]: $regd bytes registered in all"; fi
runq "purges and partial unmaps [cuda, fake driver, 3 MiB + 1 page cells]" $P HOSTPIN_BACKEND=cuda \
	HOSTPIN_REGISTER_CHUNK=3149824 HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 -- timeout 300 "$B/ranges" purge
# whole registrations (the default): the first purge registers the mapping
# again, the second leaves it unregistered, so 200 purges and unmaps cost
# two registrations of it, not 200
runq "purges and partial unmaps [cuda, fake driver, whole registrations]: registered again once, then left" \
	$P HOSTPIN_BACKEND=cuda HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 HP_EXPECT_CHURN=1 \
	-- timeout 300 "$B/ranges" purge
regd=$(echo "$RUNQ_LOG" | awk '$2 == "REG" {s += $4} END {print s + 0}')
if [ "$regd" -eq $((512 << 20)) ]; then
	ok "purges and partial unmaps [cuda, whole registrations]: 2 x 256 MiB registered in all"
else bad "purges and partial unmaps [cuda, whole registrations]: $regd bytes registered in all (want 2 x 256 MiB)"; fi
runq "purges and partial unmaps [mlock fallback of a refused registration]" $P HOSTPIN_BACKEND=cuda HOSTPIN_MLOCK=1 \
	FAKE_CUDA_FAIL=cuMemHostRegister_v2:1 HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 HP_EXPECT_LOCKED=1 \
	HOSTPIN_LOG=error -- timeout 300 "$B/ranges" purge
runq "purges and partial unmaps [none]" $P HOSTPIN_BACKEND=none -- timeout 300 "$B/ranges" purge
P=$P_SAVE
# at the Nth copy (the default): a purge sends a registered mapping back to
# waiting for copies; after a second purge, copies leave it unregistered
# (registration inside the copy that earns it, so that the program sees it
# at once: the background registration is 184-background_register's)
runq "purges under HOSTPIN_PIN_AFTER=2 [cuda, fake driver]: registered again by copies once, then left" \
	$P HOSTPIN_BACKEND=cuda HOSTPIN_REGISTER_BACKGROUND=0 HP_FAKE_CUDA="$F/libcuda.so.1" -- timeout 300 "$B/ranges" repurge

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- every copy path keeps pageable-memory semantics ----
# These cases test the copy policy and the driver calls on blocks registered
# at allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests registration at
# the Nth copy, the default.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
# cpath NAME WANT-RC PROG ENV... -- MODE: lib.sh's cudaprog, nothing
# registered left at exit
cpath() {
	local name=$1 want=$2 prog=$3; shift 3
	cudaprog "$prog" "$name" "$want" 0 "$@"
}
while read -r prog p; do
	case $prog in ''|'#'*) continue ;; esac
	# without hostpin the program sees pageable semantics (its own check)
	out=$(HP_PATH=$p timeout 60 "$B/$prog" sync 2>&1) ||
		bad "$prog $p: fails without hostpin: $out"
	cpath "$prog $p: HOSTPIN_COPY=sync keeps pageable semantics" 0 "$prog" HP_PATH=$p HOSTPIN_COPY=sync -- sync
	# the path does reach registered memory: without the wait the
	# program sees the difference
	cpath "$prog $p: HOSTPIN_COPY=async: the difference is visible" 1 "$prog" HP_PATH=$p HOSTPIN_COPY=async -- sync
	cpath "$prog $p: HOSTPIN_COPY=async: no reuse under an in-flight copy" 0 "$prog" HP_PATH=$p HOSTPIN_COPY=async -- inflight
done < "$top/tests/preload/matrix/copy-paths"

# CUDA 13.2's copy with attributes names no direction: a large one between
# pageable memory (under HOSTPIN_THRESHOLD: glibc's) and device memory is
# staged as the H2D or D2H it is: no pageable copy of 4 MiB or more reaches
# the driver (FAKE_CUDA_NO_PAGEABLE), the data and semantics are right.
for p in gpaattr gpaattr_ptsz dlattr; do
	cudaprog cuda_prog "cuda_prog $p: a large copy from or into pageable memory is staged by its direction" 0 0 \
		HP_EXPECT_ACTIVE= HOSTPIN_THRESHOLD=1G FAKE_CUDA_NO_PAGEABLE=4194304 HP_PATH=$p -- sync
done

# One wait per copy where the runtime calls the driver: 2 registered async
# copies in the sync test, 2 waits (a second, driver-level one would make 4).
for p in rt rt2d drv gpa; do
	d=$(mktemp -d)
	timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HP_PATH=$p \
		HOSTPIN_STATS_FILE="$d/s.json" "$B/cuda_prog" sync >/dev/null 2>&1
	w=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['copy_waits'], s['copies_registered'])" 2>/dev/null)
	if [ "$w" = "2 2" ]; then ok "cuda $p: one wait per registered copy (waits, copies: $w)"
	else bad "cuda $p: waits and registered copies: '${w:-no stats}', want '2 2'"; fi
	rm -rf "$d"
done

# A failure injected into each driver copy entry point: the program gets
# the driver's error unchanged, hostpin neither waits nor tracks, and the
# next call works.  fn:path.
for spec in cuMemcpyDtoHAsync_v2:rt cuMemcpyDtoHAsync_v2_ptsz:rt_ptsz cuMemcpyDtoHAsync_v2:drv \
	cuMemcpyDtoHAsync_v2:gpa cuMemcpyDtoHAsync_v2_ptsz:gpa_ptsz cuMemcpyDtoHAsync_v2:dldrv \
	cuMemcpyAsync:drvany cuMemcpy2DAsync_v2:rt2d cuMemcpy2DAsync_v2:drv2d cuMemcpy3DAsync_v2:rt3d \
	cuMemcpy3DAsync_v2:drv3d cuMemcpyAtoHAsync_v2:drvarr cuMemcpyBatchAsync:rtbatch \
	cuMemcpyBatchAsync_v2:drvbatch cuMemcpy3DBatchAsync_v2:drv3dbatch cuMemcpyDtoHAsync_v2:entry; do
	fn=${spec%%:*} p=${spec#*:}
	# the Nth call: after dev()'s fill (and, for arrays, its creation);
	# a 3D or cuMemcpyAsync fill from pageable memory is staged (2D or
	# H2D DMAs): not counted
	cpath "cuda: failure injected into $fn ($p): error passed through, next call works" 0 cuda_prog \
		HP_PATH=$p FAKE_CUDA_FAIL="$fn:$(case $fn in *DtoH*|*AtoH*|cuMemcpy3DAsync_v2|cuMemcpyAsync) echo 1 ;; *) echo 2 ;; esac)" -- fault
done
# the copy policy's own driver calls: no event, so the safe wait
cpath "cuda: cuEventCreate fails under HOSTPIN_COPY=async: falls back to the wait" 0 cuda_prog \
	HOSTPIN_COPY=async FAKE_CUDA_FAIL=cuEventCreate:1 -- inflight
echo "$CUDA_LOG_KEEP" | grep -q "INJECT cuEventCreate" && ok "cuda: the cuEventCreate failure was injected" ||
	bad "cuda: cuEventCreate never called under HOSTPIN_COPY=async"

# The coverage check.  A loaded object that merely exports a copy entry
# point hostpin does not know (a newer runtime's, a layer's) changes
# nothing: runtimes reach the driver through lookups.  One that calls an
# unknown driver copy entry point by a linked reference (libextrause.so
# imports libextra.so's cuMemcpyFancyAsync) keeps blocks unregistered (one
# message, counted), unless HOSTPIN_COVERAGE=ignore.
cpath "coverage: an object exporting an unknown copy entry point it does not call leaves registration on" 0 \
	cuda_prog HP_LOAD_EXTRA="$B/libextra.so" HP_EXPECT_REG=1 -- coverage
d=$(mktemp -d)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HP_LOAD_EXTRA="$B/libextrause.so" HP_EXPECT_REG=0 \
	HOSTPIN_STATS_FILE="$d/s.json" "$B/cuda_prog" coverage 2>&1); rc=$?
n=$(echo "$out" | grep -c "libextrause.so calls cuMemcpyFancyAsync, a driver copy entry point hostpin does not guard, by a linked reference")
f=$(python3 -c "import json;print(json.load(open('$d/s.json'))['failures'].get('unguarded copy entry point linked', 0))" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$n" = 1 ] && [ "${f:-0}" -ge 1 ]; then
	ok "coverage: a linked call of an unknown driver copy entry point keeps blocks unregistered (1 message, $f counted)"
else bad "coverage check (rc $rc, $n messages, ${f:-?} counted): $out"; fi
rm -rf "$d"
cpath "coverage: HOSTPIN_COVERAGE=ignore registers anyway" 0 cuda_prog HP_LOAD_EXTRA="$B/libextrause.so" \
	HP_EXPECT_REG=1 HOSTPIN_COVERAGE=ignore -- coverage
cpath "coverage: the fakes' own entry points are all known" 0 cuda_prog HP_EXPECT_REG=1 -- coverage
# A copy entry point of a newer CUDA (the fake's cuMemcpyFutureAsync, eight
# arguments, two on the stack), found by cuGetProcAddress or dlsym: blocks
# are registered, and each call keeps pageable semantics (hostpin waits for
# the context after it, in either HOSTPIN_COPY mode); one report line says
# so.
for p in gpafuture dlfuture; do
	for m in sync async; do
		cpath "unknown copy entry point ($p, HOSTPIN_COPY=$m): registered, pageable semantics kept" 0 \
			cuda_prog HP_PATH=$p HOSTPIN_COPY=$m -- sync
	done
	echo "$CUDA_LOG_KEEP" | grep -q "VIOLATION future-arguments" &&
		bad "unknown copy entry point ($p): the stub lost an argument"
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HP_PATH=$p HOSTPIN_STATS=1 FAKE_CUDA_LOG=/dev/null \
		"$B/cuda_prog" sync 2>&1)
	echo "$out" | grep -Eq "unknown copy entry point cuMemcpyFutureAsync: looked up [0-9]+ times, called [1-9][0-9]*; hostpin waited for the context after [1-9]" &&
		ok "unknown copy entry point ($p): the report names it and its waits" ||
		bad "unknown copy entry point ($p): report: $(echo "$out" | grep -i unknown)"
	# the JSON report says the same (issue 39)
	js=$(mktemp)
	timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HP_PATH=$p HOSTPIN_STATS_FILE="$js" \
		FAKE_CUDA_LOG=/dev/null "$B/cuda_prog" sync >/dev/null 2>&1
	if grep -Eq '"unknown_copy_entry_points": \[.*\{"name": "cuMemcpyFutureAsync", "lookups": [0-9]+, "calls": [1-9][0-9]*, "waits": [1-9][0-9]*\}.*\]\}$' "$js"; then
		ok "unknown copy entry point ($p): the JSON report names it, its calls and waits"
	else bad "unknown copy entry point ($p): JSON report: $(cat "$js")"; fi
	rm -f "$js"
done
P=$P_SAVE

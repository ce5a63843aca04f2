#!/bin/bash
# Programs run under LD_PRELOAD=build/libhostpin.so across an environment
# matrix, and real programs compared byte for byte with and without hostpin.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
B=$top/build/test/preload
LIB=$top/build/libhostpin.so
CC=${CC:-cc}
mkdir -p "$B"
cd "$top/tests/preload" || exit 1
F=$top/build/test/fakes
mkdir -p "$F"
chmod 755 "$top/build" "$top/build/test" "$B" 2>/dev/null
# Misuse and impossible sizes are the point of some tests: silence the
# warnings that say so.
CFL="-std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Wno-free-nonheap-object -Wno-alloc-size-larger-than -Wno-use-after-free -fno-builtin"
fails=0 passes=0
ok() { passes=$((passes + 1)); echo "PASS: $*"; }
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }

build() { # name sources... [flags]
	local out=$1; shift
	$CC $CFL -o "$B/$out" "$@" -ldl -lpthread || { bad "build $out"; return 1; }
}
build semantics semantics.c
build abuse abuse.c
build maps maps.c
build forked forked.c
build quiet quiet.c
build pinmany pinmany.c
build threads ../stress/threads.c
build cache cache.c
build sites sites.c -rdynamic
build maxpin maxpin.c
# the fake CUDA driver and runtime, and a program linked against them
$CC $CFL -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$F/libcuda.so.1" ../fakes/fake_cuda.c -ldl -lpthread &&
	$CC $CFL -shared -fPIC -Wl,-soname,libcudart.so.12 -o "$F/libcudart.so.12" ../fakes/fake_cudart.c \
		-L"$F" -l:libcuda.so.1 -Wl,-rpath,"$F" -lpthread &&
	build cuda_prog cuda_prog.c -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F" ||
	bad "build the CUDA fakes"
# the fake Level Zero driver (two copies, for the two-driver case) and a
# program over the real loader
$CC $CFL -shared -fPIC -o "$F/libfake_ze.so" ../fakes/fake_ze.c -ldl -lpthread &&
	$CC $CFL -shared -fPIC -DFAKE_TAG=\"ze2\" -o "$F/libfake_ze2.so" ../fakes/fake_ze.c -ldl -lpthread &&
	build ze_prog ze_prog.c -lze_loader || bad "build the Level Zero fake"
$CC $CFL -shared -fPIC -o "$B/libearly.so" early_lib.c &&
	build early early.c -L"$B" -learly -Wl,-rpath,"$B"

# run NAME ENV... -- CMD...: expect exit 0
run() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local out
	if out=$(env "${envs[@]}" "$@" 2>&1); then ok "$name"; else
		bad "$name"; echo "$out" | tail -15 | sed 's/^/    /'; fi
}
P="LD_PRELOAD=$LIB"

# ---- semantics, plain and across the matrix ----
run "semantics without hostpin" -- "$B/semantics"
for env in "HOSTPIN_BACKEND=none" "HOSTPIN_BACKEND=mlock" \
	"HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K" \
	"HOSTPIN_BACKEND=auto HOSTPIN_THRESHOLD=4K"; do
	run "semantics [$env]" $P HP_EXPECT_ACTIVE=1 $env -- "$B/semantics"
done
run "semantics [HOSTPIN_DISABLE=1]" $P HOSTPIN_DISABLE=1 -- "$B/semantics"

# ---- misuse aborts with a clear message ----
for how in double interior interior-odd; do
	out=$(env $P "$B/abuse" $how 2>&1); rc=$?
	if [ $rc -eq 134 ] && echo "$out" | grep -Eq "hostpin\[[0-9]+\]: free\(\): (double free|invalid pointer)"; then
		ok "abuse $how aborts: $(echo "$out" | grep -o 'free().*' | head -1)"
	else bad "abuse $how (rc $rc): $out"; fi
done

# ---- application mappings vs smaps ----
run "maps [mlock]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 -- "$B/maps"
run "maps [none]" $P HOSTPIN_BACKEND=none -- "$B/maps"
run "maps [mlock, HOSTPIN_MMAP=shared]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 \
	HOSTPIN_MMAP=shared HP_EXPECT_SHARED=1 -- "$B/maps"
run "maps [mlock, HOSTPIN_MMAP=all: file-backed too]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 \
	HOSTPIN_MMAP=all HP_EXPECT_SHARED=1 HP_EXPECT_FILE=1 -- "$B/maps"

# ---- constructors, fork, quiet processes, threads ----
run "early constructor allocations" $P HP_EXPECT_ACTIVE=1 -- "$B/early"
run "early constructor allocations [mlock]" $P HOSTPIN_BACKEND=mlock -- "$B/early"
run "fork [mlock]" $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 -- "$B/forked"
run "fork [none]" $P -- "$B/forked"
run "quiet process: no thread, no device library" $P HOSTPIN_BACKEND=mlock -- "$B/quiet"
run "8 threads mixed sizes + a mapping/forking thread [mlock]" $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K -- "$B/threads" 2000
run "8 threads mixed sizes + a mapping/forking thread [none]" $P -- "$B/threads" 2000

# ---- the cache of freed blocks, HOSTPIN_MAX_PINNED ----
run "cache: order, fit, cap, calloc zeroing, 8 threads" $P HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=12M -- "$B/cache"
run "HOSTPIN_MAX_PINNED=64M holds under 8 threads" $P HOSTPIN_BACKEND=mlock HOSTPIN_MAX_PINNED=64M HP_CAP_MB=64 -- "$B/maxpin"
run "8 threads mixed sizes + a mapping/forking thread [mlock, cache 32M]" $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_CACHE=32M -- "$B/threads" 2000

out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 HOSTPIN_BACKTRACE=2 "$B/sites" 2>&1)
if echo "$out" | grep -q "site 1: 67108864 bytes pinned at peak" &&
	echo "$out" | grep -A1 "site 1:" | grep -q "#0 load_weights" &&
	echo "$out" | grep -A1 "site 2:" | grep -q "#0 make_batch"; then
	ok "HOSTPIN_BACKTRACE names the sites that own the most pinned memory"
else bad "HOSTPIN_BACKTRACE report: $(echo "$out" | grep site)"; fi

if env $P HOSTPIN_STATS=1 /bin/true 2>&1 | grep -q "report (backend"; then
	ok "HOSTPIN_STATS=1 reports even for a program that closes stderr at exit (/bin/true)"
else bad "no report from /bin/true"; fi

# ---- knobs ----
out=$(env $P HOSTPIN_THRESHOLD=12Q "$B/semantics" 2>&1); rc=$?
n=$(echo "$out" | grep -c 'invalid HOSTPIN_THRESHOLD="12Q": expected a size')
if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "invalid knob: one message, job completes"
else bad "invalid knob (rc $rc, $n messages): $out"; fi
out=$(env $P HOSTPIN_THRESHOLD=12Q HOSTPIN_STRICT=1 /bin/true 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "HOSTPIN_STRICT=1"; then ok "invalid knob with HOSTPIN_STRICT=1 is fatal"
else bad "strict (rc $rc): $out"; fi
for kv in "HOSTPIN_BACKEND=cuda9" "HOSTPIN_LOG=loud" "HOSTPIN_MAX_PINNED=101%" "HOSTPIN_DISABLE=yes" "HOSTPIN_THRESHOLD=1K"; do
	out=$(env $P "$kv" /bin/true 2>&1); rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "invalid ${kv%%=*}=\"${kv#*=}\": expected"; then ok "invalid $kv reported"
	else bad "invalid $kv: $out"; fi
done
out=$(env $P HOSTPIN_LOG=info /bin/true 2>&1)
k=$(grep -c '^HP_OPT(' "$top/preload/options.def")
if [ "$(echo "$out" | grep -c 'HOSTPIN_[A-Z_]*=')" = "$k" ]; then ok "HOSTPIN_LOG=info dumps all $k knobs"
else bad "knob dump: $out"; fi
log=$(mktemp -d)
env $P HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$log/hp-%p.log" /bin/true 2>/dev/null
if ls "$log"/hp-[0-9]*.log >/dev/null 2>&1 && grep -q "ready: backend" "$log"/hp-*.log; then ok "HOSTPIN_LOG_FILE with %p"
else bad "HOSTPIN_LOG_FILE"; fi
ln -s "$log/target" "$log/link"
out=$(env $P HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$log/link" /bin/true 2>&1)
if [ ! -e "$log/target" ] && echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE"; then ok "HOSTPIN_LOG_FILE refuses symlinks"
else bad "symlink log file"; fi
rm -rf "$log"

# ---- RLIMIT_MEMLOCK as an unprivileged user ----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	# copies in a world-readable place: the checkout may sit under a
	# directory that user nobody cannot enter (/root, say)
	d=$(mktemp -d); chmod 777 "$d"
	cp "$LIB" "$B/pinmany" "$d/"
	out=$(cd "$d" && prlimit --memlock=262144 setpriv --reuid=65534 --regid=65534 --clear-groups \
		env LD_PRELOAD="$d/libhostpin.so" HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 HOSTPIN_STATS_FILE="$d/s.json" \
		"$d/pinmany" 16 2>&1); rc=$?
	lines=$(echo "$out" | grep -c "cannot pin")
	fails_n=$(python3 -c "import json;print(json.load(open('$d/s.json'))['pin_failures'])" 2>/dev/null)
	if [ $rc -eq 0 ] && [ "$lines" = 1 ] && [ "${fails_n:-0}" -ge 16 ] && echo "$out" | grep -q "pinmany: ok"; then
		ok "RLIMIT_MEMLOCK exceeded as nobody: one log line, $fails_n failures counted, job completes"
	else bad "RLIMIT_MEMLOCK (rc $rc, $lines lines, failures ${fails_n:-?}): $out"; fi
	rm -rf "$d"
else
	echo "SKIP: RLIMIT_MEMLOCK test needs root and setpriv"
fi

# ---- HOSTPIN_MAX_PINNED ----
d=$(mktemp -d)
env $P HOSTPIN_BACKEND=mlock HOSTPIN_MAX_PINNED=10M HOSTPIN_STATS_FILE="$d/s.json" "$B/pinmany" 8 >/dev/null 2>&1
if python3 - "$d/s.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["pinned_bytes_peak"] <= 10 << 20, s
assert s["over_cap"] >= 6, s
PY
then ok "HOSTPIN_MAX_PINNED holds"; else bad "HOSTPIN_MAX_PINNED"; fi
rm -rf "$d"

# ---- CUDA backend against the fake driver ----
# fakelog LOG [live]: the fake driver saw no violation, no overlapping
# registration, no context created by anyone, and at exit `live`
# registrations remained (default 0) in the main process.
fakelog() {
	local log=$1 live=${2:-0} why=""
	grep -q VIOLATION "$log" && why="$why $(grep VIOLATION "$log" | head -3 | tr '\n' ' ')"
	grep -q OVERLAP "$log" && why="$why overlapping-registration"
	grep -q CTXCREATE "$log" && why="$why context-created"
	local main
	main=$(head -1 "$log" | cut -d' ' -f1)
	grep -q "^$main EXIT live=$live\$" "$log" || why="$why live-at-exit:$(grep "^$main EXIT" "$log")"
	local regs unregs
	regs=$(grep -c " REG " "$log"); unregs=$(grep -c " UNREG " "$log")
	[ -z "$why" ] && return 0
	echo "    fake driver: $why (REG $regs, UNREG $unregs)"
	return 1
}
cuda() { # name expect-rc fake-live env... -- mode
	local name=$1 want=$2 live=$3; shift 3
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	# timeout outside env: only cuda_prog runs with hostpin preloaded
	# HOSTPIN_CACHE=0 unless the case sets it: every free then unregisters,
	# so the fake's live count at exit must be 0
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" FAKE_CUDA_DELAY_US=5000 "${envs[@]}" \
		"$B/cuda_prog" "$@" 2>&1); rc=$?
	CUDA_LOG_KEEP=$(cat "$log")
	if [ $rc -eq "$want" ] && fakelog "$log" "$live"; then ok "cuda $name"
	else bad "cuda $name (rc $rc, want $want)"; echo "$out" | tail -5 | sed 's/^/    /'; fi
	rm -f "$log"
}
cuda "adopt: pending before cuInit, registered before the first copy" 0 0 -- adopt
if echo "$CUDA_LOG_KEEP" | grep -q "CTXCUR 0"; then bad "cuda: device 0 touched in a job on device 1"
else ok "cuda: device 0 never touched in a job on device 1"; fi
n=$(echo "$CUDA_LOG_KEEP" | grep -c " RETAIN ")
if [ "$n" = 1 ]; then ok "cuda: hostpin retained no context (only the program's one retain)"
else bad "cuda: $n primary-context retains"; fi
if echo "$CUDA_LOG_KEEP" | awk '/CALL cuMemHostRegister_v2/ {r=1} /CALL cuInit/ {if (r) bad=1} END {exit bad}'; then
	ok "cuda: no registration attempted before the program's cuInit"
else bad "cuda: registration before cuInit"; fi
cuda "thread without a context: context pushed" 0 0 -- thread
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 FAKE_CUDA_LOG="$log" "$B/cuda_prog" noinit 2>&1); rc=$?
if [ $rc -eq 0 ] && ! grep -q "CALL cuInit\| REG \|RETAIN\|CTXCREATE\|CALL cuCtxPush" "$log"; then
	ok "cuda: a process that never calls cuInit: hostpin neither (no init, context or registration)"
else bad "cuda noinit (rc $rc): $(grep -v 'CALL cuDeviceGetCount' "$log" | head -3) $out"; fi
rm -f "$log"
cuda "HOSTPIN_COPY=sync keeps pageable copy semantics" 0 0 HOSTPIN_COPY=sync -- sync
cuda "HOSTPIN_COPY=async: the semantics test does see the difference" 1 0 HOSTPIN_COPY=async -- sync
cuda "HOSTPIN_COPY=sync does not wait inside CUDA graph capture" 0 0 HOSTPIN_COPY=sync -- capture
cuda "HOSTPIN_COPY=async: freed block not released under an in-flight copy" 0 0 HOSTPIN_COPY=async -- inflight
cuda "coexistence: program registers inside hostpin blocks; cudaHostAlloc untouched" 0 1 -- foreign
cuda "work with a 1 MiB registration chunk" 0 0 HOSTPIN_REGISTER_CHUNK=1M -- work
cuda "work with a chunk that is not a page multiple (rounded down)" 0 0 HOSTPIN_REGISTER_CHUNK=1000000 -- work
cuda "program unregisters hostpin's registration: registered again, no failure" 0 0 -- drop
cuda "HOSTPIN_REGISTER_DEVICE=0 registers nothing" 0 0 HOSTPIN_REGISTER_DEVICE=0 HP_EXPECT_ACTIVE= -- work
cuda "HOSTPIN_MLOCK=1: a refused registration is locked instead" 0 0 HOSTPIN_MLOCK=1 \
	FAKE_CUDA_FAIL=cuMemHostRegister_v2:1 -- mlock_fallback
cuda "churn with the cache: registrations only in the first step" 0 3 HOSTPIN_CACHE=1G -- churn
n=$(echo "$CUDA_LOG_KEEP" | grep -c " REG "); u=$(echo "$CUDA_LOG_KEEP" | grep -c " UNREG ")
if [ "$n" = 3 ] && [ "$u" = 0 ]; then ok "cuda cache: 20 steps of 3 fresh buffers cost 3 registrations, 0 unregistrations"
else bad "cuda cache: $n registrations, $u unregistrations"; fi
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" FAKE_CUDA_DELAY_US=2000 "$B/cuda_prog" fork 2>&1); rc=$?
child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
if [ $rc -eq 0 ] && [ -n "$child" ] && ! grep -q "^$child CALL" "$log" && fakelog "$log"; then
	ok "cuda fork: the child ($child) made no driver call"
else bad "cuda fork (rc $rc, child '$child'): $(grep "^$child CALL" "$log" | head -2)"; fi
rm -f "$log"
# Failures injected into every driver entry point hostpin uses: the program
# completes with correct data, and the failures are counted.
# fn:N:mode: fail the Nth call of fn while cuda_prog runs mode.
for spec in cuDeviceGetCount:1:work cuDeviceGet:1:work cuDevicePrimaryCtxGetState:1:work \
	cuCtxGetCurrent:3:work cuCtxPushCurrent_v2:1:thread cuCtxPopCurrent_v2:1:thread \
	cuMemHostRegister_v2:3:work cuMemHostUnregister:3:work cuMemHostRegister_v2:2:thread; do
	fn=${spec%%:*}; rest=${spec#*:}; nth=${rest%%:*}; mode=${rest#*:}
	d=$(mktemp -d)
	out=$(timeout 60 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$d/log" FAKE_CUDA_DELAY_US=1000 FAKE_CUDA_FAIL="$fn:$nth" \
		HOSTPIN_STATS_FILE="$d/s.json" "$B/cuda_prog" "$mode" 2>&1); rc=$?
	inj=$(grep -c "INJECT $fn" "$d/log")
	counted=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['pin_failures']+s['leaked_blocks'])" 2>/dev/null)
	# register/unregister failures must be counted; the others only delay
	# registration (the block stays pending and is adopted later)
	case $fn in cuMemHost*) need=1 ;; *) need=0 ;; esac
	if [ $rc -eq 0 ] && [ "$inj" -ge 1 ] && [ "${counted:-0}" -ge $need ] && ! grep -q VIOLATION "$d/log"; then
		ok "cuda: failure injected into $fn ($mode): job completes, data right, ${counted:-0} counted"
	else bad "cuda: failure in $fn ($mode; rc $rc, injected $inj, counted ${counted:-?}): $(echo "$out" | tail -2)"; fi
	rm -rf "$d"
done
d=$(mktemp -d)
out=$(timeout 60 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$d/log" FAKE_CUDA_DELAY_US=1000 HOSTPIN_STATS_FILE="$d/s.json" \
	FAKE_CUDA_FAIL="cuMemHostRegister_v2:2:2,cuMemHostRegister_v2:4:1,cuMemHostRegister_v2:6:2" "$B/cuda_prog" work 2>&1); rc=$?
lines=$(echo "$out" | grep -c "cannot pin")
n=$(python3 -c "import json;print(json.load(open('$d/s.json'))['pin_failures'])" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$lines" = 2 ] && [ "$n" = 3 ] && echo "$out" | grep -q CUDA_ERROR_OUT_OF_MEMORY &&
	echo "$out" | grep -q CUDA_ERROR_INVALID_VALUE; then
	ok "cuda: each failure reason logged once with the driver's error name (3 failures, 2 reasons, 2 lines)"
else bad "cuda: failure reasons (rc $rc, $lines lines, ${n:-?} counted): $out"; fi
rm -rf "$d"
if [ -f /usr/local/cuda/include/cuda.h ]; then
	if $CC -std=c11 -Wall -Wextra -Werror -I/usr/local/cuda/include -fsyntax-only "$top/tests/unit/cuda_decls.c"; then
		ok "preload/cuda_api.h agrees with /usr/local/cuda/include/cuda.h"
	else bad "preload/cuda_api.h disagrees with cuda.h"; fi
else
	echo "SKIP: no CUDA toolkit: cuda_api.h not checked against cuda.h"
fi

# ---- Level Zero backend through the real loader and the fake driver ----
# zelog LOG [live]: no violation or overlapping import; every release
# attempted succeeded; `live` imports left at exit per fake.
zelog() {
	local log=$1 live=${2:-0} why=""
	grep -q VIOLATION "$log" && why="$why $(grep VIOLATION "$log" | head -3 | tr '\n' ' ')"
	grep -q OVERLAP "$log" && why="$why overlapping-import"
	local main
	main=$(head -1 "$log" | cut -d' ' -f1)
	grep "^$main .* EXIT" "$log" | grep -qv "EXIT live=$live\$" && why="$why live-at-exit"
	grep -q "^$main .* EXIT" "$log" || why="$why no-exit-line"
	local calls rels
	calls=$(grep -c "CALL zexDriverReleaseImportedPointer" "$log"); rels=$(grep -c " RELEASE " "$log")
	[ "$calls" = "$rels" ] || why="$why failed-releases:$((calls - rels))"
	[ -z "$why" ] && return 0
	echo "    fake driver:$why"; return 1
}
ZE1=$F/libfake_ze.so ZE2=$F/libfake_ze2.so
zerun() { # name want env... -- mode
	local name=$1 want=$2; shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" \
		FAKE_ZE_LOG="$log" "${envs[@]}" "$B/ze_prog" "$@" 2>&1); rc=$?
	ZE_LOG_KEEP=$(cat "$log"); ZE_OUT_KEEP=$out
	if [ $rc -eq "$want" ] && zelog "$log"; then ok "level zero $name"
	else bad "level zero $name (rc $rc)"; echo "$out" | tail -4 | sed 's/^/    /'; fi
	rm -f "$log"
}
for variant in "" "ZE_ENABLE_LOADER_INTERCEPT=1" "ZE_ENABLE_ALT_DRIVERS=$ZE1,$ZE2"; do
	v=${variant:+ [$(echo "$variant" | sed "s|$F/||g")]}
	zerun "adopt: pending before zeInit, imported after$v" 0 $variant -- adopt
	if echo "$ZE_LOG_KEEP" | awk '/CALL zexDriverImport/ {i=1} /CALL zeInit/ {if (i) bad=1} END {exit bad}'; then
		ok "level zero: nothing imported before the program's zeInit$v"
	else bad "level zero: import before zeInit$v"; fi
	zerun "work: imported once, released once before unmap$v" 0 $variant -- work
	zerun "coexistence: program imports inside a hostpin block$v" 0 $variant -- foreign
	zerun "program releases hostpin's import through the hook$v" 0 $variant -- drop_hooked
done
n=$(echo "$ZE_LOG_KEEP" | grep " IMPORT " | awk '{print $2}' | sort -u | wc -l)
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$log" "$B/ze_prog" noinit 2>&1); rc=$?
if [ $rc -eq 0 ] && ! grep -q "CALL" "$log"; then
	ok "level zero: a process that never calls zeInit: hostpin makes no Level Zero call"
else bad "level zero noinit (rc $rc): $(head -3 "$log") $out"; fi
rm -f "$log"
[ "$n" = 2 ] && ok "level zero: with two drivers, both get the imports" || bad "level zero: imports reached $n driver(s)"
zerun "program drops hostpin's import behind its back: no second release" 0 HOSTPIN_STATS=1 -- drop
echo "$ZE_OUT_KEEP" | grep -q "imports_dropped\|dropped" || true
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$log" "$B/ze_prog" fork 2>&1); rc=$?
child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
if [ $rc -eq 0 ] && [ -n "$child" ] && ! grep -q "^$child ze CALL" "$log" && zelog "$log"; then
	ok "level zero fork: the child ($child) made no Level Zero call"
else bad "level zero fork (rc $rc, child '$child')"; fi
rm -f "$log"
out=$(timeout 60 env $P HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_NO_IMPORT=1 "$B/ze_prog" work 2>&1); rc=$?
n=$(echo "$out" | grep -c "Level Zero driver lacks host-pointer import")
if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "level zero: a driver without the extension is reported once, the job completes"
else bad "level zero no-extension (rc $rc, $n messages): $out"; fi
for spec in zexDriverImportExternalPointer:2 zexDriverReleaseImportedPointer:2 \
	zexDriverGetHostPointerBaseAddress:2 zeDriverGetExtensionFunctionAddress:1 zeDeviceGet:1; do
	d=$(mktemp -d)
	out=$(timeout 60 env $P HOSTPIN_CACHE=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$d/log" FAKE_ZE_FAIL="$spec" \
		HOSTPIN_STATS_FILE="$d/s.json" "$B/ze_prog" work 2>&1); rc=$?
	inj=$(grep -c "INJECT" "$d/log")
	counted=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['pin_failures']+s['leaked_blocks']+s['imports_dropped'])" 2>/dev/null)
	if [ $rc -eq 0 ] && [ "$inj" -ge 1 ] && ! grep -q VIOLATION "$d/log"; then
		ok "level zero: failure injected into ${spec%%:*}: job completes, data right, ${counted:-0} counted"
	else bad "level zero: failure in $spec (rc $rc, injected $inj): $(echo "$out" | tail -2)"; fi
	rm -rf "$d"
done
if [ -f /usr/include/level_zero/ze_api.h ]; then
	if $CC -std=c11 -Wall -Wextra -Werror -fsyntax-only "$top/tests/unit/ze_decls.c"; then
		ok "preload/ze_api.h agrees with the Level Zero headers"
	else bad "preload/ze_api.h disagrees with the Level Zero headers"; fi
fi

# ---- the GPU check skips cleanly without a GPU ----
if out=$(PYTHON=/usr/bin/python3 "$top/scripts/gpu-check" 2>&1); then
	if echo "$out" | grep -q "SKIP: no CUDA device"; then ok "scripts/gpu-check skips cleanly without a GPU"
	else ok "scripts/gpu-check ran (a GPU is present)"; fi
else bad "scripts/gpu-check: $out"; fi
if out=$(PYTHON=/usr/bin/python3 "$top/scripts/ze-bench" 2>&1) && echo "$out" | grep -q "SKIP\|written"; then
	ok "scripts/ze-bench (Intel GPU recipe) skips cleanly without an Intel GPU"
else bad "scripts/ze-bench: $out"; fi
python3 -c "import ast; ast.parse(open('$top/scripts/gpu_check.py').read())" &&
	ok "scripts/gpu_check.py parses" || bad "scripts/gpu_check.py syntax"

# ---- real programs: byte-identical output ----
PY=/usr/bin/python3
same() { # name cmd...: output with hostpin (mlock, 64K) == without
	local name=$1; shift
	local a b
	a=$("$@" 2>&1); local ra=$?
	b=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_STATS_FILE=/tmp/hp-same.json "$@" 2>&1); local rb=$?
	local pinned
	pinned=$(python3 -c "import json;print(json.load(open('/tmp/hp-same.json'))['pinned_bytes_peak'])" 2>/dev/null)
	if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$a" = "$b" ] && [ "${pinned:-0}" -gt 0 ]; then
		ok "$name: identical output, $pinned bytes pinned at peak"
	else
		bad "$name (rc $ra/$rb, pinned ${pinned:-?})"; diff <(echo "$a") <(echo "$b") | head -10
	fi
	rm -f /tmp/hp-same.json
}
if $PY -c "import torch" 2>/dev/null; then
	same "PyTorch CPU training loop" $PY "$top/tests/preload/train.py" --steps 30
else bad "python3-torch missing"; fi
if $PY -c "import numpy" 2>/dev/null; then
	same "numpy workload" $PY "$top/tests/preload/numpy_work.py"
else bad "python3-numpy missing"; fi
f=$(mktemp)
$PY -c "
import random
r = random.Random(7)
with open('$f', 'w') as o:
    for i in range(2_500_000):
        o.write('%016x %s\n' % (r.getrandbits(64), 'x' * r.randrange(60, 120)))
"
same "sort of a $(($(stat -c %s "$f") >> 20)) MiB file" sort -S 256M "$f"
rm -f "$f"

echo "preload tests: $passes passed, $fails failed"
[ $fails -eq 0 ]

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- CUDA backend against the fake driver ----
# These cases test the copy policy and the driver calls on blocks registered
# at allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests registration at
# the Nth copy, the default.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
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
cuda "program unregisters memory it never registered (hostpin's block): the driver's error, hostpin's registration stays" 0 0 -- drop
# invariant 14: hostpin's registrations are invisible to the driver's
# memory queries (linked, cuGetProcAddress, dlsym), in every program form
for prog in cuda_prog cuda_static cuda_dl; do
	out=$(timeout 60 env FAKE_CUDA_LOG=/dev/null "$B/$prog" invisible 2>&1) ||
		bad "$prog invisible fails without hostpin: $out"
	cudaprog $prog "$prog: hostpin's registrations look pageable to the driver's queries; the program's own and cudaHostAlloc's look pinned" 0 1 -- invisible
done
# DeepSpeed's native backend under hostpin's defaults (HOSTPIN_PIN_AFTER=2):
# pin, copy three times, unpin, free, five rounds at the same address.  The
# program's copies through its own registration do not count towards
# hostpin's, and a block it unregistered is not registered by hostpin:
# no registration of hostpin's of the 64 MiB buffer (flags PORTABLE, 1),
# five of the program's (flags 0), nothing left registered.
for pa in 2 1; do
	P_DS="$P_SAVE HOSTPIN_PIN_AFTER=$pa"
	log=$(mktemp)
	out=$(timeout 60 env $P_DS HP_EXPECT_ACTIVE=1 HOSTPIN_STATS=1 FAKE_CUDA_LOG="$log" "$B/cuda_prog" dsloop 2>&1); rc=$?
	mine=$(grep -c " REG 0x[0-9a-f]* 67108864 1 " "$log")
	theirs=$(grep -c " REG 0x[0-9a-f]* 67108864 0 " "$log")
	if [ $rc -eq 0 ] && [ "$mine" = 0 ] && [ "$theirs" = 5 ] && fakelog "$log" 0; then
		ok "cuda: DeepSpeed's native pin loop (HOSTPIN_PIN_AFTER=$pa): 5 registrations of the program's, none of hostpin's"
	else bad "cuda: DeepSpeed's loop (HOSTPIN_PIN_AFTER=$pa; rc $rc): hostpin registered the buffer $mine times, the program $theirs: $(echo "$out" | tail -3)"; fi
	rm -f "$log"
done
cuda "HOSTPIN_REGISTER_DEVICE=0 registers nothing" 0 0 HOSTPIN_REGISTER_DEVICE=0 HP_EXPECT_ACTIVE= -- work
cuda "HOSTPIN_MLOCK=1: a refused registration is locked instead" 0 0 HOSTPIN_MLOCK=1 \
	FAKE_CUDA_FAIL=cuMemHostRegister_v2:1 -- mlock_fallback
# counts the registrations of hostpin's blocks: without the staging ring's
# (HOSTPIN_STAGE=0; staged copies are 176-staged_copies.sh's)
cuda "churn with the cache: registrations only in the first step" 0 3 HOSTPIN_CACHE=1G HOSTPIN_STAGE=0 -- churn
n=$(echo "$CUDA_LOG_KEEP" | grep -c " REG "); u=$(echo "$CUDA_LOG_KEEP" | grep -c " UNREG ")
if [ "$n" = 3 ] && [ "$u" = 0 ]; then ok "cuda cache: 20 steps of 3 fresh buffers cost 3 registrations, 0 unregistrations"
else bad "cuda cache: $n registrations, $u unregistrations"; fi
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" "$B/cuda_prog" fork 2>&1); rc=$?
child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
if [ $rc -eq 0 ] && [ -n "$child" ] && ! grep -q "^$child CALL" "$log" && fakelog "$log"; then
	ok "cuda fork: the child ($child) made no driver call"
else bad "cuda fork (rc $rc, child '$child'): $(grep "^$child CALL" "$log" | head -2)"; fi
rm -f "$log"
# Failures injected into every driver entry point hostpin uses: the program
# completes with correct data, and each failure leaves its mark.
# fn:N:mode:mark: fail the Nth call of fn (one of hostpin's own calls: the
# fakes' order is deterministic) while cuda_prog runs mode; mark is what
# must show: counted (a pin failure or leaked block in the statistics),
# adopted (the block stayed pending and was adopted later), pushed (hostpin
# fell back to pushing the context it knows: the staging ring's context is
# known from the first staged copy on, issue 32), same (registrations as
# without the failure: a failed pop changes nothing else).
declare -A base_reg
for mode in work thread; do
	d=$(mktemp -d)
	timeout 60 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$d/log" "$B/cuda_prog" "$mode" >/dev/null 2>&1
	base_reg[$mode]=$(grep -c " REG " "$d/log")
	rm -rf "$d"
done
for spec in cuDeviceGetCount:1:work:adopted cuDeviceGet:1:work:adopted \
	cuDevicePrimaryCtxGetState:1:work:adopted cuCtxGetCurrent:4:work:pushed \
	cuCtxGetCurrent:5:work:pushed cuCtxPushCurrent_v2:1:thread:adopted \
	cuCtxPopCurrent_v2:1:thread:same cuMemHostRegister_v2:3:work:counted \
	cuMemHostUnregister:3:work:counted cuMemHostRegister_v2:2:thread:counted; do
	IFS=: read -r fn nth mode mark <<<"$spec"
	d=$(mktemp -d)
	out=$(timeout 60 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$d/log" FAKE_CUDA_FAIL="$fn:$nth" \
		HOSTPIN_STATS_FILE="$d/s.json" "$B/cuda_prog" "$mode" 2>&1); rc=$?
	inj=$(grep -c "INJECT $fn" "$d/log")
	read -r counted adopted < <(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['pin_failures']+s['leaked_blocks'], s['adopted_blocks'])" 2>/dev/null)
	pushed=$(sed -n "/INJECT $fn/,\$p" "$d/log" | grep -c "CALL cuCtxPushCurrent_v2")
	regs=$(grep -c " REG " "$d/log")
	case $mark in
	counted) seen=$((${counted:-0} >= 1)) ;;
	adopted) seen=$((${adopted:-0} >= 1 && ${counted:-1} == 0)) ;;
	pushed) seen=$((pushed >= 1 && ${adopted:-1} == 0 && ${counted:-1} == 0)) ;;
	same) seen=$((regs == ${base_reg[$mode]} && ${adopted:-1} == 0 && ${counted:-1} == 0)) ;;
	esac
	if [ $rc -eq 0 ] && [ "$inj" -ge 1 ] && [ "$seen" = 1 ] && ! grep -q VIOLATION "$d/log"; then
		ok "cuda: failure injected into $fn #$nth ($mode): job completes, data right, $mark"
	else bad "cuda: failure in $fn #$nth ($mode; rc $rc, injected $inj, want $mark: counted ${counted:-?}, adopted ${adopted:-?}, pushed $pushed, REG $regs vs ${base_reg[$mode]}): $(echo "$out" | tail -2)"; fi
	rm -rf "$d"
done
d=$(mktemp -d)
out=$(timeout 60 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$d/log" HOSTPIN_STATS_FILE="$d/s.json" \
	FAKE_CUDA_FAIL="cuMemHostRegister_v2:2:2,cuMemHostRegister_v2:4:1,cuMemHostRegister_v2:6:2" "$B/cuda_prog" work 2>&1); rc=$?
lines=$(echo "$out" | grep -c "cannot pin")
n=$(python3 -c "import json;print(json.load(open('$d/s.json'))['pin_failures'])" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$lines" = 2 ] && [ "$n" = 3 ] && echo "$out" | grep -q CUDA_ERROR_OUT_OF_MEMORY &&
	echo "$out" | grep -q CUDA_ERROR_INVALID_VALUE; then
	ok "cuda: each failure reason logged once with the driver's error name (3 failures, 2 reasons, 2 lines)"
else bad "cuda: failure reasons (rc $rc, $lines lines, ${n:-?} counted): $out"; fi
rm -rf "$d"
# cuda_api.h against the real cuda.h and cuda_runtime_api.h: a CUDA
# toolkit's, else the headers NVIDIA publishes on PyPI (the wheels
# nvidia-cuda-runtime and nvidia-cuda-crt, 2.7 MB: only their include/ is
# kept), fetched once into build/cuda-headers (make clean keeps it).  In
# make compat's Debian 11 root the same check would read the same headers:
# it runs in the host's tier only.
cuda_h=""
for f in ${CUDA_HOME:+"$CUDA_HOME/include/cuda.h"} /usr/local/cuda/include/cuda.h /usr/include/cuda.h \
	"$top/build/cuda-headers/cuda.h"; do
	[ -f "$f" ] && { cuda_h=$f; break; }
done
ch=$top/build/cuda-headers
if [ -z "$cuda_h" ] && [ "${HP_TIER:-}" != compat ]; then
	rm -rf "$ch.tmp" && mkdir -p "$ch.tmp" && /usr/bin/python3 -m venv "$ch.tmp/venv" > "$ch.tmp/log" 2>&1 &&
		"$ch.tmp/venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
			nvidia-cuda-runtime nvidia-cuda-crt -d "$ch.tmp/dl" >> "$ch.tmp/log" 2>&1 &&
		/usr/bin/python3 -c 'import glob, os, sys, zipfile
for w in glob.glob(sys.argv[1] + "/dl/*.whl"):
    z = zipfile.ZipFile(w)
    for m in z.namelist():
        i = m.find("/include/")
        if i >= 0 and not m.endswith("/"):
            out = os.path.join(sys.argv[1], "include", m[i + 9:])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            open(out, "wb").write(z.read(m))' "$ch.tmp" >> "$ch.tmp/log" 2>&1 &&
		[ -f "$ch.tmp/include/cuda.h" ] && rm -rf "$ch" && mv "$ch.tmp/include" "$ch" && cuda_h=$ch/cuda.h
	cuda_why=$(tail -1 "$ch.tmp/log" 2>/dev/null)
	rm -rf "$ch.tmp"
fi
if [ -n "$cuda_h" ]; then
	if $CC -std=c11 -Wall -Wextra -Werror -I"$(dirname "$cuda_h")" -fsyntax-only "$top/tests/unit/cuda_decls.c"; then
		ok "preload/backend/cuda_api.h agrees with $cuda_h ($(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/CUDA_VERSION \1/p' "$cuda_h"))"
	else bad "preload/backend/cuda_api.h disagrees with $cuda_h"; fi
elif [ "${HP_TIER:-}" = compat ]; then
	echo "note: cuda_api.h against cuda.h is checked in the host's tier (the same header and compiler check)"
else
	echo "SKIP: no CUDA toolkit, and nvidia-cuda-runtime could not be fetched from PyPI (${cuda_why:-?}): cuda_api.h not checked against cuda.h"
fi

# The fake's own audit (what the VIOLATION checks above rely on): a range
# unmapped while registered is flagged at the next driver call, even when a
# single page deep inside a large registration goes; a range unregistered
# before its munmap is not.
d=$(mktemp -d)
cat > "$d/audit.py" <<'PY'
import ctypes, sys
cu = ctypes.CDLL(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
cu.cuMemHostRegister_v2.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
cu.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
c = ctypes.c_void_p()
assert cu.cuInit(0) == 0 and cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), 0) == 0
assert cu.cuCtxSetCurrent(c) == 0
n = 40 << 20
p = libc.mmap(None, n, 3, 0x22, -1, 0)
assert cu.cuMemHostRegister_v2(p, n, 0) == 0
if sys.argv[2] == "hole":    # one page at 33 MiB: past the first chunks
    libc.munmap(p + (33 << 20), 4096)
else:
    assert cu.cuMemHostUnregister(p) == 0
    libc.munmap(p, n)
n_ = ctypes.c_int()
cu.cuDeviceGetCount(ctypes.byref(n_))
PY
FAKE_CUDA_LOG="$d/hole" python3 "$d/audit.py" "$F/libcuda.so.1" hole
FAKE_CUDA_LOG="$d/clean" python3 "$d/audit.py" "$F/libcuda.so.1" clean
if grep -q "VIOLATION registered-range-unmapped" "$d/hole" && ! grep -q VIOLATION "$d/clean"; then
	ok "fake CUDA audit: a page unmapped inside a 40 MiB registration is flagged, an unregistered one is not"
else bad "fake CUDA audit: hole: $(grep -c VIOLATION "$d/hole") violations, clean: $(grep -c VIOLATION "$d/clean")"; fi
rm -rf "$d"
P=$P_SAVE

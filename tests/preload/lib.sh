# Shared by every preload case: paths, the build of the test programs and
# fakes, and the helpers ok/bad/build/run.  Sourced by run.sh.
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
build suid suid.c
# the fake CUDA driver and runtime, and a program linked against them
# -Bsymbolic: the fake's cuGetProcAddress hands out its own functions, never
# a same-named symbol elsewhere in the process (hostpin's), as the driver does
$CC $CFL -Wno-unused-parameter -shared -fPIC -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 \
	-o "$F/libcuda.so.1" ../fakes/fake_cuda.c -ldl -lpthread &&
	$CC $CFL -shared -fPIC -Wl,-soname,libcudart.so.12 -o "$F/libcudart.so.12" ../fakes/fake_cudart.c \
		-Wl,-rpath,"$F" -ldl -lpthread &&
	build cuda_prog cuda_prog.c -DLINKED_DRIVER -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F" &&
	build cuda_static cuda_prog.c ../fakes/fake_cudart.c -DFAKE_STATIC -Wl,-rpath,"$F" &&
	build cuda_dl cuda_prog.c -DVIA_DLOPEN -Wl,-rpath,"$F" ||
	bad "build the CUDA fakes"
# the fake Level Zero driver (two copies, for the two-driver case) and a
# program over the real loader; HP_NO_LEVEL_ZERO=1 (the glibc compatibility
# tier: Debian 11 has no Level Zero loader) builds none of it
if [ -z "${HP_NO_LEVEL_ZERO:-}" ]; then
$CC $CFL -shared -fPIC -o "$F/libfake_ze.so" ../fakes/fake_ze.c -ldl -lpthread &&
	$CC $CFL -shared -fPIC -DFAKE_TAG=\"ze2\" -o "$F/libfake_ze2.so" ../fakes/fake_ze.c -ldl -lpthread &&
	build ze_prog ze_prog.c -rdynamic -lze_loader -lpthread || bad "build the Level Zero fake"
fi
$CC $CFL -shared -fPIC -o "$B/libnext.so" libnext.c -ldl && build dlcheck dlcheck.c -lm &&
	$CC $CFL -shared -fPIC -o "$B/libextra.so" libextra.c &&
	$CC $CFL -shared -fPIC -o "$B/libextrause.so" libextrause.c -L"$B" -l:libextra.so \
		-Wl,-rpath,"$B" || bad "build the dlsym programs"
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
# Staging is never passed through for speed in the tests (speed.c: the
# copy threads' measured rate against the link's would make a case depend
# on this machine's load); the case that tests that sets it.
export HOSTPIN_STAGE_LINK=0
# A staging ring is made inside the first copy that needs it, so that a
# case's first large copy is staged whatever the growth thread's pace (the
# default, made in the background while copies pass through, is what case
# 176's ring_background and the engine fuzz run under: they set it).
export HOSTPIN_STAGE_RING_BACKGROUND=0
# ups FILE N: wait (a generous limit, never a fixed wait that decides the
# result) until FILE holds N lines "up"; exported for `unshare ... bash -c`
ups() {
	local end=$((SECONDS + 60)) n
	# the file may not be there yet (its writers may still be opening
	# their input): none up
	until n=$(grep -c '^up$' "$1" 2>/dev/null); [ "${n:-0}" -ge "$2" ]; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}
export -f ups
# ns_hold N (inside `bash -c "$hdr"...` of the ledger cases: LIB, LH, d):
# start N ledger_holder processes pinning 64 MiB (mlock backend,
# HOSTPIN_PIN_AFTER=0), each pid 1 of a PID namespace of its own, reading
# the fifo $d/in (fd 3 of this shell holds it open) and writing to $d/ups;
# their unshare pids in ns_pids.  Returns when all N say "held" or one is
# gone.
ns_hold() {
	rm -f "$d/in" "$d/ups"; mkfifo "$d/in"
	ns_pids=""
	local i
	for i in $(seq "$1"); do
		unshare -p -f --mount-proc env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
			sh -c "echo up; exec \"\$1\" 64" sh "$LH" < "$d/in" >> "$d/ups" 2>&1 &
		ns_pids="$ns_pids $!"
	done
	exec 3>"$d/in"
	ups "$d/ups" "$1" && until [ "$(grep -c "^held$" "$d/ups")" = "$1" ] || ! kill -0 $ns_pids 2>/dev/null; do sleep 0.2; done
}
export -f ns_hold
# hold [VAR=VALUE...]: the same, one ledger_holder in this namespace, the
# VAR=VALUEs added to its environment; its pid in hold_pid.
hold() {
	rm -f "$d/in" "$d/ups"; mkfifo "$d/in"
	env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 "$@" "$LH" 64 < "$d/in" > "$d/ups" 2>&1 &
	hold_pid=$!
	exec 3>"$d/in"
	until grep -q "^held$" "$d/ups" || ! kill -0 $hold_pid 2>/dev/null; do sleep 0.2; done
}
export -f hold
# poll SECONDS CMD...: until CMD succeeds (a generous limit, never a fixed
# wait that decides the result)
poll() {
	local end=$((SECONDS + $1)); shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

# ---- the fake drivers' logs, and running programs over them ----
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
# cudaprog PROG NAME WANT-RC FAKE-LIVE ENV... -- ARGS: $B/PROG (cuda_prog
# or another build of it) under hostpin and the fake CUDA driver; rc WANT-RC,
# the fake's log clean (fakelog) and kept in CUDA_LOG_KEEP
cudaprog() {
	local prog=$1 name=$2 want=$3 live=$4; shift 4
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	# timeout outside env: only the program runs with hostpin preloaded
	# HOSTPIN_CACHE=0 unless the case sets it: every free then unregisters,
	# so the fake's live count at exit must be 0
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" "${envs[@]}" \
		"$B/$prog" "$@" 2>&1); rc=$?
	CUDA_LOG_KEEP=$(cat "$log")
	if [ $rc -eq "$want" ] && fakelog "$log" "$live"; then ok "$name"
	else bad "$name (rc $rc, want $want)"; echo "$out" | tail -5 | sed 's/^/    /'; fi
	rm -f "$log"
}
cuda() { # name expect-rc fake-live env... -- mode: cuda_prog
	local name=$1; shift
	cudaprog cuda_prog "cuda $name" "$@"
}
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
# raceprog PROG LABEL NAME ENV... -- MODE ARGS: $B/PROG (a race driven
# through the fake CUDA driver's late mode, FAKE_CUDA_LATE_DMA=1) under
# hostpin, ENV last; "LABEL: NAME" passes on exit 0, the "PROG MODE: ok"
# line and no overlapping registration in the fake's log.
raceprog() {
	local prog=$1 label=$2 name=$3; shift 3
	local envs=() log out rc why=""
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	log=$(mktemp)
	out=$(timeout 240 env $P FAKE_CUDA_LATE_DMA=1 FAKE_CUDA_LOG="$log" \
		"${envs[@]}" "$B/$prog" "$@" 2>&1); rc=$?
	[ $rc -eq 0 ] || why="$why rc=$rc"
	echo "$out" | grep -q "$prog $1: ok" || why="$why no-ok-line"
	grep -q OVERLAP "$log" && why="$why overlapping-registration"
	rm -f "$log"
	if [ -z "$why" ]; then ok "$label: $name"
	else bad "$label: $name:$why"; echo "$out" | tail -4 | sed 's/^/    /'; fi
}
# runq NAME ENV... -- CMD...: exit 0, hostpin said nothing ("cannot track",
# "cannot pin"), and with FAKE_CUDA_LOG set the fake driver saw no
# violation and nothing (RUNQ_LIVE: that many) stayed registered.
runq() {
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc why=""
	log=$(mktemp)
	out=$(env "${envs[@]}" FAKE_CUDA_LOG="$log" "$@" 2>&1); rc=$?
	[ $rc -eq 0 ] || why="rc $rc"
	echo "$out" | grep -q "hostpin\[" && why="$why; said: $(echo "$out" | grep "hostpin\[" | head -2)"
	[ -s "$log" ] && ! fakelog "$log" "${RUNQ_LIVE:-0}" && why="$why; fake driver"
	RUNQ_LOG=$(cat "$log")
	rm -f "$log"
	if [ -z "$why" ]; then ok "$name"; else bad "$name: $why"; echo "$out" | tail -5 | sed 's/^/    /'; fi
}
zerun() { # name want env... -- mode (HOSTPIN_PIN_AFTER=0 unless env says)
	local name=$1 want=$2; shift 2
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	# HOSTPIN_PIN_AFTER=0 unless the case says: the modes check the import
	# machinery on blocks they never copy (copies: ze_copy.h)
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" \
		FAKE_ZE_LOG="$log" "${envs[@]}" "$B/ze_prog" "$@" 2>&1); rc=$?
	ZE_LOG_KEEP=$(cat "$log"); ZE_OUT_KEEP=$out
	if [ $rc -eq "$want" ] && zelog "$log"; then ok "level zero $name"
	else bad "level zero $name (rc $rc)"; echo "$out" | tail -4 | sed 's/^/    /'; fi
	rm -f "$log"
}
build job_prog job_prog.c -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F" || bad "build job_prog"

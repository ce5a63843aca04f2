#!/bin/bash
# The copy engine's differential, randomized concurrency tester (issue 39):
# engine_fuzz programs run twice over the fake driver's late-DMA mode,
# without and with hostpin, and must agree.
#   fuzz.sh build
#   fuzz.sh check FILE...      each program: OK, or FAIL CLASS: DETAIL
#   fuzz.sh seeds FROM COUNT   programs of seeds FROM.. (shrunk findings in $FZ_OUT)
#   fuzz.sh time SECONDS       fresh seeds for that long
#   fuzz.sh shrink FILE        a failing program cut down (to stdout)
#   fuzz.sh replay DIR         every DIR/*.prog must agree
# FZ_GEN_OPTS: passed to `engine_fuzz gen` (e.g. "--no capture,reset");
# FZ_IGNORE_VIOLATIONS: fake VIOLATION kinds not counted, KIND|KIND (an
# open defect that make check's run leaves out: check.conf's "ignore");
# FZ_OUT: where findings go (default build/fuzz/found); FZ_SHRINK=0: keep
# findings whole.  Failure classes: hang (the watchdog's exit, 3, naming
# each thread's op; gdb's stacks of every thread go to FOUND.stacks beside
# a finding, to build/fuzz/stacks/ for a check's; FZ_GDB_S bounds gdb, 20
# s), crash, diff (the outputs differ: the first line),
# latewrite (a copy's destination changed after its error return),
# violation:KIND (the fake's log), leak-reg (registrations live at exit),
# leak-events (events live at exit beyond the rings' own: 4 per ring
# segment hostpin's log says it made, less those of segments that went
# with their context, 16 at least; under HOSTPIN_COPY=async, and one per
# block the program made: a live block's last async copy's event).
set -u
top=${FZ_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$top/build/fuzz
LIB=$top/build/libhostpin.so
EF=$B/engine_fuzz
FZ_OUT=${FZ_OUT:-$B/found}
CFL="-std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -fno-builtin"

build() {
	mkdir -p "$B"
	cc $CFL -Wno-unused-parameter -shared -fPIC -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 \
		-o "$B/libcuda.so.1" "$top/tests/fakes/fake_cuda.c" -ldl -lpthread || return 1
	cc $CFL -o "$EF" "$top"/tests/fuzz/*.c -L"$B" -l:libcuda.so.1 -Wl,-rpath,"$B" \
		-ldl -lpthread || return 1
}

# the watchdog fires after FZ_TIMEOUT s and gives gdb FZ_GDB_S s for the
# stacks: the outer kill comes after both (180 s at least)
TMO=$((${FZ_TIMEOUT:-40} + ${FZ_GDB_S:-20} + 60))
[ $TMO -ge 180 ] || TMO=180
# runprog FILE HP: run FILE (HP=1: under hostpin); sets RC, OUT, LOG, ERR,
# STK (the threads' stacks gdb wrote when the watchdog fired; none while
# NOGDB is set, as in a shrink)
runprog() {
	local f=$1 hp=$2 fenv henv log
	fenv=$(sed -n 's/^env //p' "$f")
	henv=$(sed -n 's/^hostpin //p' "$f")
	log=$(mktemp)
	local wd="FZ_TIMEOUT=${FZ_TIMEOUT:-40} FZ_GDB_S=${FZ_GDB_S:-20} FZ_STACKS=$log.stacks ${NOGDB:+FZ_GDB=}"
	if [ "$hp" = 1 ]; then
		# hostpin's log says each ring segment it made (4 events each)
		OUT=$(cd /tmp && timeout -s KILL $TMO env $wd FAKE_CUDA_LOG="$log" \
			HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$log.hp.%p" \
			$fenv $henv LD_PRELOAD="$LIB" "$EF" run "$f" 2>"$log.err"); RC=$?
	else
		OUT=$(cd /tmp && timeout -s KILL $TMO env $wd FAKE_CUDA_LOG="$log" \
			$fenv "$EF" run "$f" 2>"$log.err"); RC=$?
	fi
	LOG=$(cat "$log"); ERR=$(tail -3 "$log.err"); STK=$(cat "$log.stacks" 2>/dev/null)
	# the events the rings of the process that logged events-live last
	# hold for good: HP_RING_SLOTS (4) per segment made, less those of
	# segments that went with their context (a ring made again), 16 at
	# least
	local pid hpl made gone
	pid=$(echo "$LOG" | grep 'events-live=' | tail -1 | awk '{print $1}')
	hpl=$(cat "$log.hp.${pid:-none}" 2>/dev/null)
	made=$(echo "$hpl" | grep -c 'staging ring (.*slots of .* bytes, registered')
	gone=$(echo "$hpl" | sed -n 's/.*staging ring (.*its context ended, and its \([0-9]*\) segments.*/\1/p' |
		awk '{n += $1} END {print n + 0}')
	# what tells one failure's cause from another's, kept for the verdict
	# (the logs go): hostpin's step aside given up, the fake's refusals
	HPNOTE=$(cat "$log".hp.* 2>/dev/null | grep -h -m2 -E 'waited on for 10 s|\(712\)' | cut -c1-160
		echo "$LOG" | grep -m2 -E ' (OVERLAP|PARTIAL)' | cut -c1-120)
	RINGEV=$((4 * (made - gone)))
	[ $RINGEV -ge 16 ] || RINGEV=16
	rm -f "$log" "$log.err" "$log".hp.* "$log.stacks"
}

# verdict FILE: sets V ("" when both runs agree; else "CLASS: DETAIL");
# BASEBAD=1 when the run without hostpin itself fails (a tester bug).
verdict() {
	local f o0 l0 r0 v
	f=$(realpath "$1")
	V="" BASEBAD=0
	runprog "$f" 0; o0=$OUT l0=$LOG r0=$RC
	if [ $r0 != 0 ] || echo "$l0" | grep VIOLATION | grep -qv pageable-copy ||
		! echo "$o0" | grep -q "^== done"; then
		BASEBAD=1; V="base: rc=$r0 $(echo "$l0" | grep VIOLATION | head -1) $(echo "$o0" | grep -v '^==' | tail -1)"
		return
	fi
	runprog "$f" 1
	if echo "$OUT" | grep -q HANG-CHILD; then V="hang: forked child: $(echo "$OUT" | grep -m1 -B3 HANG-CHILD | head -1)"
	elif [ $RC = 3 ]; then V="hang: $(echo "$OUT" | grep '^HANG thread' | tr '\n' ';' | cut -c1-300)"
	elif [ $RC = 137 ]; then V="hang: killed after $TMO s"
	elif [ $RC -ge 128 ]; then V="crash: signal $((RC - 128)) $(echo "$ERR" | tail -1 | cut -c1-100)"
	elif [ $RC != 0 ]; then V="crash: exit $RC $(echo "$ERR" | tail -1 | cut -c1-100)"
	elif [ "$OUT" != "$o0" ]; then
		local d
		d=$(diff <(echo "$o0") <(echo "$OUT") | grep '^[<>]' | head -2 | tr '\n' ' ')
		case $d in
		*"> "*LATEWRITE*) V="latewrite: $d" ;;
		*) V="diff: $d${HPNOTE:+ [$(echo "$HPNOTE" | tr '\n' ' ')]}" ;;
		esac
	elif echo "$LOG" | grep VIOLATION | grep -v pageable-copy |
		grep -qvE "VIOLATION (${FZ_IGNORE_VIOLATIONS:-^})( |\$)"; then
		v=$(echo "$LOG" | grep VIOLATION | grep -v pageable-copy |
			grep -vE "VIOLATION (${FZ_IGNORE_VIOLATIONS:-^})( |\$)" | head -1)
		V="violation:$(echo "$v" | awk '{print $3}'): $v"
	else
		local e0 e1 ev
		e0=$(echo "$l0" | grep -o 'EXIT live=[0-9]*' | tail -1)
		e1=$(echo "$LOG" | grep -o 'EXIT live=[0-9]*' | tail -1)
		ev=$(echo "$LOG" | grep -o 'events-live=[0-9]*' | tail -1 | cut -d= -f2)
		# under HOSTPIN_COPY=async a block alive at exit keeps its last
		# async copy's event (one per block, released with the block):
		# at most one per block the program made (cases/async-blocks-
		# events-552340)
		local BLKEV=0
		grep -q "^hostpin .*HOSTPIN_COPY=async" "$f" &&
			BLKEV=$(grep -cE '^[0-9S]+ (alloc|realloc|mremap) ' "$f")
		if [ "$e0" != "$e1" ] && grep -q "^hostpin .*HOSTPIN_CACHE=0" "$f" &&
			! grep -q "^exit inflight" "$f"; then
			V="leak-reg: without hostpin $e0, with $e1"
		elif [ "${ev:-0}" -gt $((RINGEV + BLKEV)) ]; then V="leak-events: $ev events live at exit (rings' $RINGEV, blocks' at most $BLKEV)"
		fi
	fi
}

# the class a shrink keeps: a diff's is the op of its first differing line
class_of() {
	local c=${1%%:*}
	[ "$c" = diff ] && c="diff-$(echo "$1" | sed -n 's/^diff: [<>] [0-9]* \([a-z0-9]*\).*/\1/p')"
	echo "$c"
}

# shrink FILE CLASS: cut FILE down while its failure keeps CLASS.
shrink() {
	local f=$1 want=$2 tmp n chunk i NOGDB=1
	tmp=$(mktemp)
	local deadline=$((SECONDS + ${FZ_SHRINK_S:-240}))
	cp "$f" "$tmp.cur"
	try() { # candidate in $tmp: keep it when it fails the same way (2 tries)
		local k
		for k in 1 2; do
			verdict "$tmp"
			[ $BASEBAD = 0 ] && [ "$(class_of "$V")" = "$want" ] && { cp "$tmp" "$tmp.cur"; return 0; }
			case $want in hang|diff*|latewrite|crash) ;; *) return 1 ;; esac
		done
		return 1
	}
	n=$(grep -c '^[0-9SE] ' "$tmp.cur")
	for chunk in $((n / 2)) $((n / 4)) $((n / 8)) 16 8 4 2 1; do
		[ "$chunk" -ge 1 ] || continue
		i=1
		while [ $SECONDS -lt $deadline ]; do
			n=$(grep -c '^[0-9SE] ' "$tmp.cur")
			[ $i -gt $n ] && break
			awk -v a=$i -v b=$((i + chunk - 1)) '/^[0-9SE] /{k++; if (k>=a && k<=b) next} {print}' \
				"$tmp.cur" > "$tmp"
			try || i=$((i + chunk))
		done
	done
	# fewer knobs: drop each hostpin/env setting that is not needed
	for kv in $(sed -n 's/^hostpin //p;s/^env //p' "$tmp.cur"); do
		case $kv in FAKE_CUDA_LATE_DMA=*|FAKE_CUDA_PTDS_PER_THREAD=*) continue ;; esac
		[ $SECONDS -lt $deadline ] || break
		sed "/^\(hostpin\|env\) /s/ $kv\b//" "$tmp.cur" > "$tmp"
		try || true
	done
	cat "$tmp.cur"; rm -f "$tmp" "$tmp.cur"
}

# one SEED: generate, judge, shrink and keep a finding
one() {
	local s=$1 p
	p=$(mktemp --suffix=.prog)
	"$EF" gen "$s" ${FZ_GEN_OPTS:-} > "$p"
	verdict "$p"
	if [ $BASEBAD = 1 ]; then echo "seed $s: BASE $V"; keepstk "base-$s"; NBASE=$((NBASE + 1))
	elif [ -n "$V" ]; then
		local c; c=$(class_of "$V")
		echo "seed $s: FAIL [${SECONDS}s] $V"; NFAIL=$((NFAIL + 1))
		mkdir -p "$FZ_OUT"
		local out="$FZ_OUT/$c-$s.prog" stk=$STK
		[ -n "$stk" ] && echo "$stk" > "${out%.prog}.stacks"
		{ echo "# found: $V" | cut -c1-400
		  [ -n "$stk" ] && echo "# stacks: $(basename "${out%.prog}").stacks (gdb's, when the watchdog fired)"
		  if [ "${FZ_SHRINK:-1}" = 1 ]; then shrink "$p" "$c"; else cat "$p"; fi
		} > "$out.tmp" && mv "$out.tmp" "$out"
		verdict "$out"; echo "    shrunk: $out ($(grep -c '^[0-9SE] ' "$out") ops): ${V:-no longer fails}"
		[ -n "$STK" ] && printf '\n# the shrunk form, when it hung again:\n%s\n' "$STK" >> "${out%.prog}.stacks"
	else NOK=$((NOK + 1)); fi
	rm -f "$p"
}

# keepstk FILE: a check's hang keeps its stacks in $B/stacks (said on stderr)
keepstk() {
	[ -n "$STK" ] || return 0
	local d=$B/stacks k
	mkdir -p "$d"; k=$d/$(basename "$1" .prog)-$(date +%Y%m%d-%H%M%S)-$$.stacks
	echo "$STK" > "$k"; echo "    stacks: $k" >&2
}

NOK=0 NFAIL=0 NBASE=0
case ${1:-} in
build) build ;;
check)
	shift; st=0
	for f in "$@"; do
		verdict "$f"
		if [ -z "$V" ]; then echo "OK $f"; else echo "FAIL $f: $V"; keepstk "$f"; st=1; fi
	done
	exit $st ;;
replay)
	st=0
	for f in "$2"/*.prog; do
		[ -e "$f" ] || continue
		verdict "$f"
		if [ -z "$V" ]; then echo "OK $f"; else echo "FAIL $f: $V"; keepstk "$f"; st=1; fi
	done
	exit $st ;;
shrink) verdict "$2"; [ -n "$V" ] && shrink "$2" "$(class_of "$V")" ;;
seeds)
	for ((s = $2; s < $2 + $3; s++)); do one $s; done
	echo "engine fuzz: $NOK agreed, $NFAIL failed, $NBASE invalid"
	[ $NFAIL = 0 ] && [ $NBASE = 0 ] ;;
time)
	end=$((SECONDS + $2)); s=${FZ_SEED0:-$(( $(date +%s) % 100000000 ))}
	while [ $SECONDS -lt $end ]; do one $s; s=$((s + 1)); done
	echo "engine fuzz: $NOK agreed, $NFAIL failed, $NBASE invalid"
	[ $NFAIL = 0 ] && [ $NBASE = 0 ] ;;
*) sed -n '2,20p' "$0"; exit 2 ;;
esac

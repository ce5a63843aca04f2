# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the real CUDA 13.2 runtime over the fake driver ----
# PyPI's nvidia-cuda-runtime 13.2.86 (what `pip install torch` brings),
# fetched once into build/ (scripts/fetch-cudart), drives the fake driver
# (FAKE_CUDA_VERSION=13020: fake_rt.h answers what the runtime needs).
# cudart_real.c calls every host<->device copy entry point the runtime
# exports, linked against libcudart.so.13 and again against
# libcudart_static.a, and checks pageable semantics itself (an async H2D's
# source overwritten at return, an async D2H's data there at return), first
# without hostpin, then under hostpin's defaults, HOSTPIN_PIN_AFTER=0 and
# HOSTPIN_STAGE=0.  Under the defaults its 16 MiB buffers copied again and
# again must be registered: a REG of 16 MiB in the fake's log, "pin calls"
# above 0 in the report, and no refusal for an unguarded entry point.
# Skipped, with the reason, only when PyPI cannot be reached.
crt_err=$(mktemp)
crt=$("$top/scripts/fetch-cudart" 2>"$crt_err"); crt_rc=$?
if [ $crt_rc -eq 0 ]; then
	CRT=$crt/nvidia/cu13
	# cuda_api.h's CUDA 13.2 declarations (the copies with attributes,
	# checked only against a 13.2 or newer cuda.h) against this runtime's
	# own headers
	if $CC -std=c11 -Wall -Wextra -Werror -I"$CRT/include" -fsyntax-only "$top/tests/unit/cuda_decls.c" &&
		grep -q cuMemcpyWithAttributesAsync "$CRT/include/cuda.h"; then
		ok "preload/backend/cuda_api.h agrees with CUDA 13.2's cuda.h and cuda_runtime_api.h (copies with attributes included)"
	else bad "preload/backend/cuda_api.h disagrees with CUDA 13.2's headers"; fi
	build cudart_real cudart_real.c -I"$CRT/include" -L"$CRT/lib" -l:libcudart.so.13 \
		-Wl,-rpath,"$CRT/lib" &&
		build cudart_real_static cudart_real.c -I"$CRT/include" "$CRT/lib/libcudart_static.a" -lrt ||
		bad "build the programs over the real CUDA runtime"
	# crt_run NAME PROG WANT-REG ENV...: the program's checks hold (rc 0,
	# no FAIL line), the fake saw no violation and nothing stayed
	# registered; WANT-REG=1: a 16 MiB block was registered (REG in the
	# fake's log, pin calls > 0, no "unguarded" refusal)
	crt_run() {
		local name=$1 prog=$2 want=$3; shift 3
		local log out rc why=""
		log=$(mktemp)
		out=$(timeout 120 env FAKE_CUDA_VERSION=13020 LD_LIBRARY_PATH="$F" FAKE_CUDA_LOG="$log" \
			HOSTPIN_CACHE=0 "$@" "$B/$prog" 2>&1); rc=$?
		[ $rc -eq 0 ] || why="$why rc $rc;"
		echo "$out" | grep -q "^FAIL" && why="$why $(echo "$out" | grep "^FAIL" | head -3 | tr '\n' ';')"
		# every entry point checked, in both rounds (none skipped for
		# want of a driver entry point in the fake)
		[ "$(echo "$out" | grep -c '^ok ')" -ge 56 ] && ! echo "$out" | grep -q '^skip' ||
			why="$why only $(echo "$out" | grep -c '^ok ') checks ran ($(echo "$out" | grep '^skip' | sort -u | head -2 | tr '\n' ';'));"
		fakelog "$log" || why="$why fake driver;"
		if [ "$want" = 1 ]; then
			grep -q " REG .* 16777216 " "$log" || why="$why no 16 MiB block registered (REG $(grep -c ' REG ' "$log"));"
			echo "$out" | grep -q "pin calls [1-9]" || why="$why report: $(echo "$out" | grep -o 'pin calls [0-9]*');"
			echo "$out" | grep -q "unguarded" && why="$why $(echo "$out" | grep -m1 -o 'exports [^,]*, a copy entry point hostpin does not guard\|unguarded[^;(]*');"
		fi
		rm -f "$log"
		if [ -z "$why" ]; then ok "cudart 13.2 $name"; else bad "cudart 13.2 $name:$why"; fi
		CRT_OUT=$out
	}
	for prog in cudart_real cudart_real_static; do
		[ -x "$B/$prog" ] || continue
		crt_run "$prog: every copy entry point keeps pageable semantics without hostpin" $prog 0
		crt_run "$prog: under hostpin's defaults: semantics kept, a block copied twice registered" $prog 1 \
			LD_PRELOAD="$LIB" HOSTPIN_STATS=1
		crt_run "$prog: HOSTPIN_PIN_AFTER=0" $prog 0 LD_PRELOAD="$LIB" HOSTPIN_PIN_AFTER=0
		crt_run "$prog: HOSTPIN_STAGE=0" $prog 0 LD_PRELOAD="$LIB" HOSTPIN_STAGE=0
	done
	# The runtime's batches over blocks of hostpin's registered in 8 MiB
	# cells (HOSTPIN_PIN_AFTER=0, HOSTPIN_REGISTER_CHUNK=8M), the fake
	# refusing a host range only partly registered
	# (FAKE_CUDA_REFUSE_PARTIAL=1): the runtime reaches the driver from
	# inside hostpin's runtime hook, where the driver's hooks pass through,
	# so each entry across a registration's end must be split there
	# (hooks/batch.c; issue 39: its 1D entries, packed 3D ops, 3D ops
	# with a pitched host side, and 3D ops between a CUDA array and host
	# rows, whose bytes hostpin learns from the array's element size: each
	# went whole and was refused: rc 1).
	# And a batch of 8 entries through one registration waits once under
	# HOSTPIN_COPY=sync, the runtime's and the driver's (the driver's
	# waited once per entry: "waits 8").
	if build cudart_batch cudart_batch.c -I"$CRT/include" -L"$CRT/lib" -l:libcudart.so.13 \
		-Wl,-rpath,"$CRT/lib"; then
		for pre in "" "$LIB"; do
			who="without hostpin"; [ -z "$pre" ] || who="under hostpin"
			log=$(mktemp)
			out=$(timeout 120 env FAKE_CUDA_VERSION=13020 LD_LIBRARY_PATH="$F" FAKE_CUDA_LOG="$log" \
				FAKE_CUDA_REFUSE_PARTIAL=1 HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_CACHE=0 \
				LD_PRELOAD="$pre" "$B/cudart_batch" 2>&1); rc=$?
			why=""
			[ $rc -eq 0 ] || why="$why rc $rc;"
			[ "$(echo "$out" | grep -c '^ok ')" -eq 5 ] || why="$why $(echo "$out" | grep '^FAIL' | tr '\n' ';')"
			[ -z "$pre" ] || echo "$out" | grep -q '^registered' || why="$why blocks not registered;"
			fakelog "$log" || why="$why fake driver;"
			rm -f "$log"
			if [ -z "$why" ]; then ok "cudart 13.2 batches across registrations $who: split, bytes kept"
			else bad "cudart 13.2 batches across registrations $who:$why"; fi
		done
		for mode in waits waits-driver; do
			out=$(timeout 120 env FAKE_CUDA_VERSION=13020 LD_LIBRARY_PATH="$F" HOSTPIN_STATS=1 \
				HOSTPIN_COPY=sync HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=8M HOSTPIN_CACHE=0 \
				LD_PRELOAD="$LIB" "$B/cudart_batch" $mode 2>&1)
			if echo "$out" | grep -q '^ok ' && echo "$out" | grep -q 'through registered memory 1 (1.0M), waits 1$'; then
				ok "cudart 13.2 $mode: a batch of 8 entries through registered memory waits once (HOSTPIN_COPY=sync)"
			else bad "cudart 13.2 $mode: $(echo "$out" | grep '^FAIL\|waits [0-9]' | tr '\n' ';')"; fi
		done
	fi
elif [ $crt_rc -eq 2 ]; then
	echo "SKIP: cudart_real: PyPI could not be reached (scripts/fetch-cudart: nvidia-cuda-runtime 13.2.86)"
else
	bad "scripts/fetch-cudart: $(tail -2 "$crt_err" | tr '\n' ' ')"
fi
rm -f "$crt_err"

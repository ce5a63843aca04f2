# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- other allocators, sanitizers, valgrind, secure execution ----
PY=/usr/bin/python3
J=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
T=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
want=$($PY "$top/tests/preload/numpy_work.py" 2>&1)
for alloc in "$J" "$T"; do
	an=$(basename "$alloc")
	[ -f "$alloc" ] || { bad "$an missing (scripts/ensure-deps installs it)"; continue; }
	for order in after before; do
		[ $order = after ] && pre="$LIB:$alloc" || pre="$alloc:$LIB"
		d=$(mktemp -d)
		got=$(env LD_PRELOAD="$pre" HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_LOG=info \
			HOSTPIN_STATS_FILE="$d/s.json" $PY "$top/tests/preload/numpy_work.py" 2>"$d/err"); rc=$?
		pinned=$(python3 -c "import json;print(json.load(open('$d/s.json'))['pinned_bytes_peak'])" 2>/dev/null)
		if [ $order = after ]; then
			# hostpin owns the large blocks, the other allocator the rest
			[ $rc -eq 0 ] && [ "$got" = "$want" ] && [ "${pinned:-0}" -gt 0 ] &&
				ok "numpy with $an after hostpin: identical output, $pinned bytes pinned" ||
				bad "numpy with $an after hostpin (rc $rc, pinned ${pinned:-?})"
		else
			# the other allocator is the process's: hostpin steps aside
			[ $rc -eq 0 ] && [ "$got" = "$want" ] && grep -q "allocator is not hostpin's" "$d/err" &&
				ok "numpy with $an before hostpin: identical output, hostpin stepped aside" ||
				bad "numpy with $an before hostpin (rc $rc): $(head -3 "$d/err")"
		fi
		rm -rf "$d"
	done
done

# AddressSanitizer's runtime in the executable, valgrind's malloc: hostpin is
# not the process's allocator and stays out of the way.
if clang -fsanitize=address -g -o "$B/pinmany-asan" pinmany.c 2>/dev/null; then
	out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info "$B/pinmany-asan" 8 2>&1); rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q "allocator is not hostpin's" && echo "$out" | grep -q "pinmany: ok" &&
		ok "ASan program under hostpin: hostpin steps aside, no report" ||
		bad "ASan program under hostpin (rc $rc): $(echo "$out" | tail -5)"
else bad "build pinmany with ASan"; fi
if command -v valgrind >/dev/null; then
	out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info valgrind -q --error-exitcode=9 "$B/pinmany" 8 2>&1); rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q "not hostpin's (valgrind)" && echo "$out" | grep -q "pinmany: ok" &&
		ok "valgrind under hostpin: hostpin steps aside, no valgrind error" ||
		bad "valgrind under hostpin (rc $rc): $(echo "$out" | tail -5)"
else bad "valgrind missing"; fi

# A set-user-ID program: glibc loads a preload only from its trusted
# directory, and only if the library is itself set-user-ID; hostpin then
# reads no knob (secure_getenv) and writes no file.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	sysdir=/usr/lib/x86_64-linux-gnu
	cp "$LIB" "$sysdir/libhostpin-suidtest.so" && chmod 4755 "$sysdir/libhostpin-suidtest.so"
	d=$(mktemp -d); chmod 1777 "$d" # sticky: hostpin refuses a world-writable directory without it
	cp "$B/suid" "$d/suid" && chmod 4755 "$d/suid"
	out=$(cd "$d" && setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD=libhostpin-suidtest.so \
		HOSTPIN_STATS_FILE="$d/stats.json" HOSTPIN_LOG_FILE="$d/log" HOSTPIN_LOG=info HOSTPIN_STATS=1 \
		"$d/suid" 2>&1); rc=$?
	files=$(ls "$d" | grep -vx suid)
	rm -f "$sysdir/libhostpin-suidtest.so"
	# the test only means something if hostpin was loaded
	if [ $rc -eq 0 ] && [ -z "$files" ] && echo "$out" | grep -q "hostpin loaded: yes" &&
		echo "$out" | grep -q "suid: ok"; then
		ok "set-user-ID program with hostpin loaded: no file written"
	else bad "set-user-ID program (rc $rc, files: $files): $out"; fi
	rm -rf "$d"
else
	echo "SKIP: set-user-ID test needs root and setpriv"
fi

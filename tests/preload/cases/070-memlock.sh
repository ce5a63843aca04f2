# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- RLIMIT_MEMLOCK as an unprivileged user ----
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
	# copies in a world-readable place: the checkout may sit under a
	# directory that user nobody cannot enter (/root, say)
	d=$(mktemp -d); chmod 1777 "$d" # sticky: hostpin refuses a world-writable directory without it
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


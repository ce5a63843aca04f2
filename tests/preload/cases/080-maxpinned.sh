# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
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


# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- real programs: byte-identical output ----
PY=/usr/bin/python3
same() { # name cmd...: output with hostpin (mlock, 64K) == without
	local name=$1; shift
	local a b st
	st=$(mktemp -d)/s.json # a new file: the report refuses to overwrite
	a=$("$@" 2>&1); local ra=$?
	b=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_STATS_FILE="$st" "$@" 2>&1); local rb=$?
	local pinned
	pinned=$(python3 -c "import json;print(json.load(open('$st'))['pinned_bytes_peak'])" 2>/dev/null)
	if [ $ra -eq 0 ] && [ $rb -eq 0 ] && [ "$a" = "$b" ] && [ "${pinned:-0}" -gt 0 ]; then
		ok "$name: identical output, $pinned bytes pinned at peak"
	else
		bad "$name (rc $ra/$rb, pinned ${pinned:-?})"; diff <(echo "$a") <(echo "$b") | head -10
	fi
	rm -rf "$(dirname "$st")"
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


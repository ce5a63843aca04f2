# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the GPU check skips cleanly without a GPU ----
if out=$(PYTHON=/usr/bin/python3 "$top/scripts/gpu-check" 2>&1); then
	if echo "$out" | grep -q "SKIP: no CUDA device"; then ok "scripts/gpu-check skips cleanly without a GPU"
	else ok "scripts/gpu-check ran (a GPU is present)"; fi
else bad "scripts/gpu-check: $out"; fi
# A Python without PyTorch, and no Python at all, are told apart from "no
# device": the message names what is missing.
d=$(mktemp -d); printf '#!/bin/sh\nexec /usr/bin/python3 -c "raise ImportError(\\"No module named torch\\")"\n' > "$d/py"; chmod +x "$d/py"
out=$(PYTHON="$d/py" "$top/scripts/gpu-check" 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "PyTorch does not import in $d/py (ImportError: No module named torch)"; then
	ok "scripts/gpu-check says PyTorch does not import, not that there is no device"
else bad "scripts/gpu-check without PyTorch (rc $rc): $out"; fi
out=$(PYTHON="$d/none" "$top/scripts/gpu-check" 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "$d/none not found"; then ok "scripts/gpu-check names a missing Python"
else bad "scripts/gpu-check with a missing Python (rc $rc): $out"; fi
rm -rf "$d"
if out=$(PYTHON=/usr/bin/python3 "$top/scripts/ze-bench" 2>&1) && echo "$out" | grep -q "SKIP\|written"; then
	ok "scripts/ze-bench (Intel GPU recipe) skips cleanly without an Intel GPU"
else bad "scripts/ze-bench: $out"; fi
python3 -c "import ast; ast.parse(open('$top/scripts/gpu_check.py').read())" &&
	ok "scripts/gpu_check.py parses" || bad "scripts/gpu_check.py syntax"

# The GPU check can fail: its verdict flips on every correctness check
# forced to fail (no torch, no GPU needed) ...
if out=$(python3 "$top/scripts/gpu_check.py" selftest 2>&1); then ok "gpu_check.py selftest: $(echo "$out" | tail -1)"
else bad "gpu_check.py selftest: $out"; fi
# ... and scripts/gpu-check exits non-zero when a check fails or a run
# crashes: a stand-in python answers the torch probe and prints synthetic
# passing results (gpu_check.synth), with one check forced to fail
# (GPU_CHECK_FORCE_FAIL) or one run crashing.
d=$(mktemp -d)
python3 -c "import json, sys; sys.path.insert(0, '$top/scripts'); import gpu_check as g
for m in list(g.RUNTIME_RUNS) + list(g.DRIVER_RUNS) + list(g.REGCOST_RUNS):
    json.dump(g.synth(m), open('$d/' + m + '.json', 'w'))
for m in g.LAZY_RUNS:
    json.dump(g.synth_lazy(m), open('$d/' + m + '.json', 'w'))"
cat > "$d/py" <<STUB
#!/bin/bash
[ "\$1" = -c ] && exit 0
[ "\$2" = report ] && exec python3 "\$@"
[ "\$2" = "\${STUB_CRASH:-}" ] && exit 1
exec cat "$d/\$2.json"
STUB
chmod +x "$d/py"
gc() { env PYTHON="$d/py" GPU_CHECK_OUT="$d/out.json" "$@" "$top/scripts/gpu-check" >"$d/log" 2>&1; }
if gc && grep -q "correctness .*: ok" "$d/log"; then ok "scripts/gpu-check: passing results exit 0"
else bad "scripts/gpu-check on passing results: $(tail -3 "$d/log")"; fi
for spec in hostpin.h2d_source_overwrite_unseen hostpin.d2h_data_there_on_return \
	drvapi.paths.cuGetProcAddress.d2h_data_there_on_return; do
	if ! gc GPU_CHECK_FORCE_FAIL=$spec && grep -q "CORRECTNESS FAILURE: ${spec%%.*}" "$d/log"; then
		ok "scripts/gpu-check fails when $spec fails"
	else bad "scripts/gpu-check passes with $spec failed: $(tail -3 "$d/log")"; fi
done
if ! gc STUB_CRASH=drvapi && grep -q "gpu-check: drvapi failed" "$d/log"; then
	ok "scripts/gpu-check fails when one of its runs crashes"
else bad "scripts/gpu-check passes with its drvapi run crashed: $(tail -3 "$d/log")"; fi
rm -rf "$d"

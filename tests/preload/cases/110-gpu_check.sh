# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
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


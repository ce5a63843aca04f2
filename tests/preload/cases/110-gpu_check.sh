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
python3 -B -c "import json, sys; sys.path.insert(0, '$top/scripts'); import gpu_check as g
for m in g.ALL_RUNS:
    json.dump(g.synth_any(m), open('$d/' + m + '.json', 'w'))"
cat > "$d/py" <<STUB
#!/bin/bash
[ "\$1" = -c ] && exit 0
[ "\$2" = report ] && exec python3 "\$@"
[ "\$2" = "\${STUB_CRASH:-}" ] && exit 1
[ "\$2" = "\${STUB_HANG:-}" ] && exec sleep 60
exec cat "$d/\$2.json"
STUB
chmod +x "$d/py"
gc() { env PYTHON="$d/py" GPU_CHECK_OUT="$d/out.json" "$@" "$top/scripts/gpu-check" >"$d/log" 2>&1; }
if gc && grep -q "correctness .*: ok" "$d/log"; then ok "scripts/gpu-check: passing results exit 0"
else bad "scripts/gpu-check on passing results: $(tail -3 "$d/log")"; fi
# Every table of the copy engine (issue 24) comes out of the stand-in's
# results end to end: each line below is printed only from its run's JSON.
for want in "copy engine: GB/s, median (min-max) of 3" \
	"1024  d2h   pageable" "4  h2d     staged" "64  h2d registered" \
	"256  d2h pin_memory" "1024  h2d    default" \
	"weights 8x256 MiB copied once, s: pageable 0.300 (0.270-0.330), pin_memory() with its own copy 0.200" \
	"fresh 256 MiB tensor per step, ms/step: pageable 20.00" \
	"DataLoader 4 workers, 16x64 MiB, pin_memory=True: batch H2D ms without hostpin 2.00" \
	"checkpoint 1 GiB D2H into fresh host memory, GB/s: pageable 10.00" \
	"an H2D and a D2H of 256 MiB each, GB/s of both together, one after the other / at once (two threads, two streams): pageable 5.00 (4.50-5.50) / 5.00 (4.50-5.50), staged 5.00 (4.50-5.50) / 9.00 (8.10-9.90), pin_memory() 50.00 (45.00-55.00) / 90.00 (81.00-99.00)" \
	"torch.cuda.graph (hostpin, registered): capture of a copy from a 64 MiB CPU tensor False (Cannot copy between CPU and CUDA tensors during CUDA graph capture unless...); from a 64 KiB one hostpin does not track False; the tensor registered before True, after True, is_pinned() False" \
	"torch.cuda.graph (without hostpin): capture of a copy from a 64 MiB CPU tensor False" \
	"torch.cuda.graph (hostpin, registered): capture from its pin_memory() copy while the cache decays True, 8 replays correct True, cache evictions counted during the capture 0" \
	"registered: hostpin's own answer (hostpin_query) for its blocks, else is_pinned(); is_pinned(): what the program sees" \
	"    64  h2d      3.00     10.00      10.00    1.00        3.33       True False" \
	"   256  d2h pin_memory    50.00 (45.00-55.00)    50.00 (45.00-55.00)       True True" \
	"  1024  h2d    default    50.00 (45.00-55.00)    50.00 (45.00-55.00)       True False" \
	"adoption: weights allocated before CUDA init: registered within 0.010 s of their first copy's end; is_pinned() False" \
	"driver API via dlsym (hostpin): registered True, is_pinned() False" \
	"policy lazy_first (HOSTPIN_PIN_AFTER=1): single-use 8x256 MiB 1.000 s, 8 registrations, 8 registered" \
	"registered (hostpin_query) 5.00 (4.50-5.50) after copy 2 began; is_pinned() False" \
	"CPU threads (staged, /proc/self/task; 16 CPUs allowed)" \
	"goal (printed, not enforced): default policy: a buffer's first copy" \
	"goal (printed, not enforced): no copy" "gpu-check: wall time" \
	"staged first copy per HOSTPIN_STAGE_THREADS, GB/s, median (min-max) of 3" \
	"1024  h2d   5.00 (4.50-5.50)   9.00 (8.10-9.90) 18.00 (16.20-19.80) 36.00 (32.40-39.60) 50.00 (45.00-55.00) 50.00 (45.00-55.00)" \
	"auto chose: HOSTPIN_STAGE_THREADS=0 (auto (6 here)"; do
	if grep -qF "$want" "$d/log"; then ok "scripts/gpu-check prints: ${want:0:60}"
	else bad "scripts/gpu-check does not print '$want': $(grep -c . "$d/log") lines"; fi
done
for spec in hostpin.h2d_source_overwrite_unseen hostpin.d2h_data_there_on_return \
	drvapi.paths.cuGetProcAddress.d2h_data_there_on_return \
	eng_staged.h2d_source_overwrite_unseen eng_default.d2h_data_there_on_return \
	eng_registered.graph_capture_as_pageable eng_registered.graph_pinned_capture_ok \
	eng_registered.graph_replays_correct eng_registered.graph_program_sees_pageable \
	eng_registered.graph_registered_before_capture hostpin.program_sees_pageable \
	eng_default.loader_data_ok eng_pageable.sweep_data_ok thr_4.thr_data_ok thr_auto.thr_data_ok; do
	if ! gc GPU_CHECK_FORCE_FAIL=$spec && grep -q "CORRECTNESS FAILURE: ${spec%%.*}" "$d/log"; then
		ok "scripts/gpu-check fails when $spec fails"
	else bad "scripts/gpu-check passes with $spec failed: $(tail -3 "$d/log")"; fi
done
if ! gc STUB_CRASH=drvapi && grep -q "gpu-check: drvapi failed" "$d/log"; then
	ok "scripts/gpu-check fails when one of its runs crashes"
else bad "scripts/gpu-check passes with its drvapi run crashed: $(tail -3 "$d/log")"; fi
if ! gc STUB_CRASH=eng_registered && grep -q "gpu-check: eng_registered failed" "$d/log"; then
	ok "scripts/gpu-check fails when its copy-engine run crashes"
else bad "scripts/gpu-check passes with its eng_registered run crashed: $(tail -3 "$d/log")"; fi
# A run that never ends is stopped at GPU_CHECK_TIMEOUT and fails (no
# result); the default bound keeps a stuck run's cost on a lent GPU small.
if ! gc STUB_HANG=eng_default GPU_CHECK_TIMEOUT=2 GPU_CHECK_RUNS="pageable eng_default" &&
	grep -q "gpu-check: eng_default failed" "$d/log" &&
	grep -q "CORRECTNESS FAILURE: eng_default: no result" "$d/log"; then
	ok "scripts/gpu-check stops a stuck run at GPU_CHECK_TIMEOUT and fails it"
else bad "scripts/gpu-check with a stuck run: $(tail -3 "$d/log")"; fi
t=$(sed -n 's/.*GPU_CHECK_TIMEOUT:-\([0-9]*\).*/\1/p' "$top/scripts/gpu-check")
if [ -n "$t" ] && [ "$t" -le 100 ]; then ok "scripts/gpu-check's default per-run bound is ${t}s (<= 100)"
else bad "scripts/gpu-check's default per-run bound: '$t'"; fi
rm -rf "$d"
# GPU_CHECK_SMALL (a rehearsal over the fake driver): no buffer over 64 MiB,
# one repetition.
if out=$(cd "$top/scripts" && GPU_CHECK_SMALL=1 python3 -B -c "import gpu_check as g, gpu_check_threads as t
sizes = [g.mb(m) for m in (64, 256, 1024)] + list(g.SIZES) + [m << 20 for m in g.ENG_MIB + g.EARN_MIB + t.THR_MIB]
assert max(sizes) <= 64 << 20 and g.REPS == 1 and t.REPS == 1, sizes
print('ok')" 2>&1) && [ "$out" = ok ]; then ok "GPU_CHECK_SMALL=1: every buffer <= 64 MiB, one repetition"
else bad "GPU_CHECK_SMALL=1: $out"; fi
# The engine's knobs (HOSTPIN_STAGE*) that gpu-check passes are unknown to a
# hostpin without the engine: they must only warn, never stop the run.
if out=$(env -u HOSTPIN_STRICT LD_PRELOAD="$top/build/libhostpin.so" HOSTPIN_STAGE=1 \
	HOSTPIN_PIN_AFTER=1000000 /usr/bin/python3 -c 'print("ran")' 2>&1) && echo "$out" | grep -q '^ran$'; then
	ok "gpu-check's HOSTPIN_STAGE* knobs do not stop a program (at most a warning)"
else bad "HOSTPIN_STAGE=1 under hostpin: $out"; fi

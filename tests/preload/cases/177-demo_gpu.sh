# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- make demo's GPU branch, end to end on the fakes (issue 26, item 7) ----
# As 110-gpu_check.sh runs scripts/gpu-check: PYTHON= a stand-in
# interpreter.  Injected: it answers the torch probe "cuda"; for train.py it
# runs train_fakes.py (the same arguments and output, each step a fresh
# 4 MiB batch copied to the device through the fake CUDA driver, found on
# LD_LIBRARY_PATH); for gpu_check.py it prints gpu_check.synth's passing
# results; anything else goes to python3.  STEPS=4: seconds.
# Must hold: the demo takes its GPU branch (cuda, backend auto), the run
# with hostpin registers blocks with the driver and copies through them,
# the losses match, the table uses the reports' unit style (4.0M), the
# gpu-check part runs and the JSON it says it wrote is there after the demo.
d=$(mktemp -d)
python3 -B -c "import json, sys; sys.path.insert(0, '$top/scripts'); import gpu_check as g
for m in g.ALL_RUNS:
    json.dump(g.synth_any(m), open('$d/' + m + '.json', 'w'))"
cat > "$d/py" <<STUB
#!/bin/bash
case "\$1" in
-c) case "\$2" in *print*) echo cuda ;; esac; exit 0 ;;
*/train.py) shift; exec python3 "$top/tests/preload/train_fakes.py" "\$@" ;;
*gpu_check.py) [ "\$2" = report ] && exec python3 "\$@"; exec cat "$d/\$2.json" ;;
*) exec python3 "\$@" ;;
esac
STUB
chmod +x "$d/py"
# The batches' registration made in the copy that earns it
# (HOSTPIN_REGISTER_BACKGROUND=0), not by the registration thread: a
# loaded machine's thread could miss the demo's 4 steps (0 of 4 copies
# registered, seen in a clean clone's make check).
out=$(timeout 300 env LD_LIBRARY_PATH="$F" FAKE_CUDA_LOG="$d/fake.log" PYTHON="$d/py" STEPS=4 \
	HOSTPIN_REGISTER_BACKGROUND=0 \
	GPU_CHECK_OUT="$d/gc.json" "$top/scripts/demo" 2>&1); rc=$?
row() { echo "$out" | grep "^$1" | head -1; }
if [ $rc -eq 0 ] && echo "$out" | grep -q "^== hostpin demo: 4 training steps .* on cuda" &&
	row "copies through registered memory" | grep -qE ' [1-9][0-9]* of [1-9]' &&
	grep -q "cuMemHostRegister" "$d/fake.log" && row "same losses, bit for bit" | grep -q "yes$"; then
	ok "demo's GPU branch on the fakes: backend auto, $(row "copies through" | grep -oE '[0-9]+ of [0-9]+') copies through registered memory, same losses"
else bad "demo's GPU branch on the fakes (rc $rc): $(echo "$out" | head -14)"; fi
if row "pinned bytes, peak" | grep -qE ' 0B +4\.0M$'; then ok "demo's table in the reports' unit style: $(row "pinned bytes, peak" | tr -s ' ')"
else bad "demo's table units: $(row "pinned bytes, peak")"; fi
w=$(echo "$out" | sed -n 's/^written: //p')
if echo "$out" | grep -q "^correctness .*: ok" && [ "$w" = "$d/gc.json" ] && [ -s "$w" ] &&
	python3 -c "import json; json.load(open('$w'))"; then
	ok "demo's GPU branch runs gpu-check; the JSON it names outlives the demo ($w)"
else bad "demo's gpu-check part: written '${w:-nothing}' ($( [ -s "$w" ] && echo kept || echo gone)): $(echo "$out" | tail -3)"; fi
rm -rf "$d"

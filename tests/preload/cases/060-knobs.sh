# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- knobs ----
out=$(env $P HOSTPIN_THRESHOLD=12Q "$B/semantics" 2>&1); rc=$?
n=$(echo "$out" | grep -c 'invalid HOSTPIN_THRESHOLD="12Q": expected a size')
if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "invalid knob: one message, job completes"
else bad "invalid knob (rc $rc, $n messages): $out"; fi
out=$(env $P HOSTPIN_THRESHOLD=12Q HOSTPIN_STRICT=1 /bin/true 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "HOSTPIN_STRICT=1"; then ok "invalid knob with HOSTPIN_STRICT=1 is fatal"
else bad "strict (rc $rc): $out"; fi
for kv in "HOSTPIN_BACKEND=cuda9" "HOSTPIN_LOG=loud" "HOSTPIN_MAX_PINNED=101%" "HOSTPIN_DISABLE=yes" "HOSTPIN_THRESHOLD=1K"; do
	out=$(env $P "$kv" /bin/true 2>&1); rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "invalid ${kv%%=*}=\"${kv#*=}\": expected"; then ok "invalid $kv reported"
	else bad "invalid $kv: $out"; fi
done
out=$(env $P HOSTPIN_LOG=info /bin/true 2>&1)
k=$(grep -c '^HP_OPT(' "$top/preload/options.def")
if [ "$(echo "$out" | grep -c 'HOSTPIN_[A-Z_]*=')" = "$k" ]; then ok "HOSTPIN_LOG=info dumps all $k knobs"
else bad "knob dump: $out"; fi
log=$(mktemp -d)
env $P HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$log/hp-%p.log" /bin/true 2>/dev/null
if ls "$log"/hp-[0-9]*.log >/dev/null 2>&1 && grep -q "ready: backend" "$log"/hp-*.log; then ok "HOSTPIN_LOG_FILE with %p"
else bad "HOSTPIN_LOG_FILE"; fi
ln -s "$log/target" "$log/link"
out=$(env $P HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$log/link" /bin/true 2>&1)
if [ ! -e "$log/target" ] && echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE"; then ok "HOSTPIN_LOG_FILE refuses symlinks"
else bad "symlink log file"; fi
rm -rf "$log"

out=$(env $P HOSTPIN_PREFAULT_THREADS=100 /bin/true 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q 'invalid HOSTPIN_PREFAULT_THREADS="100": expected a number from 1 to 64'; then
	ok "a count knob out of range names the knob, the value and the range"
else bad "count knob message: $out"; fi
# the launcher and both man pages list every backend options.def knows
choices=$(grep '^HP_OPT(BACKEND' "$top/preload/options.def" | cut -d'"' -f4 | tr '|' ' ')
help=$("$top/build/hostpin" --help)
missing=""
for c in $choices; do
	echo "$help" | grep -q -- "--backend.*\b$c\b" || missing="$missing launcher:$c"
	grep -q "^\.BR* $c\b" "$top/man/hostpin.1" || missing="$missing hostpin.1:$c"
done
[ -z "$missing" ] && ok "every backend ($choices) in the launcher's help and hostpin(1)" || bad "backends not listed:$missing"

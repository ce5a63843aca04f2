# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- knobs ----
out=$(env $P HOSTPIN_THRESHOLD=12Q "$B/semantics" 2>&1); rc=$?
n=$(echo "$out" | grep -c 'invalid HOSTPIN_THRESHOLD="12Q": expected a size')
if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "invalid knob: one message, job completes"
else bad "invalid knob (rc $rc, $n messages): $out"; fi
out=$(env $P HOSTPIN_THRESHOLD=12Q HOSTPIN_STRICT=1 /bin/true 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "HOSTPIN_STRICT=1"; then ok "invalid knob with HOSTPIN_STRICT=1 is fatal"
else bad "strict (rc $rc): $out"; fi
# issue 42, item 4: a typo under HOSTPIN_STRICT=1 is no crash.  Injected:
# an invalid knob, strict, the log off.  Must hold: exit status 78 (the
# documented one, no SIGABRT's 134), the message shown even so, naming it.
out=$(sh -c 'env "$@" 2>&1; echo "rc=$?"' sh $P HOSTPIN_THRESHOLD=12Q HOSTPIN_STRICT=1 HOSTPIN_LOG=off /bin/true)
if echo "$out" | grep -qx "rc=78" && echo "$out" | grep -q "exiting with status 78 before the program starts" &&
	! echo "$out" | grep -qi "abort"; then ok "HOSTPIN_STRICT=1: exit status 78 with a message, no abort"
else bad "strict exit status: $out"; fi
# one invalid knob keeps its default; the rest of hostpin (here the report
# that was asked for, and the pinning) keeps working
j=$(mktemp)
out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_LOG=loud HOSTPIN_STATS_FILE="$j" "$B/pinmany" 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q 'invalid HOSTPIN_LOG="loud": expected off|error|warn|info|debug; using the default warn' &&
	grep -q '"backend": "mlock"' "$j" && ! grep -q '"pin_calls": 0,' "$j"; then
	ok "an invalid knob falls back to its default; the rest of hostpin runs (report written, blocks pinned)"
else bad "invalid knob fallback (rc $rc): $out $(cat "$j")"; fi
rm -f "$j"
# unknown HOSTPIN_* variables: one warning with the closest knob
# (no `set --` here: run.sh's own arguments select the cases)
for kv in "HOSTPIN_THRESHHOLD=64M THRESHOLD" "HOSTPIN_BACKENED=mlock BACKEND" "HOSTPIN_STAT=1 STATS" "HOSTPIN_log=info LOG"; do
	v=${kv% *} want=${kv#* }
	out=$(env $P "$v" /bin/true 2>&1); rc=$?
	n=$(echo "$out" | grep -c "unknown variable ${v%%=*} ignored; did you mean HOSTPIN_$want?")
	if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "unknown ${v%%=*}: one warning naming HOSTPIN_$want"
	else bad "unknown ${v%%=*} (rc $rc, $n): $out"; fi
done
out=$(env $P HOSTPIN_THRESHHOLD=64M HOSTPIN_STRICT=yes /bin/true 2>&1); rc=$?
if [ $rc -ne 0 ] && echo "$out" | grep -q "HOSTPIN_STRICT=1 and 1 invalid or unknown"; then ok "unknown variable with HOSTPIN_STRICT=yes is fatal"
else bad "unknown + strict (rc $rc): $out"; fi
# -- a misspelled knob is named once per job, not by every child --
# Injected: HOSTPIN_TRESHOLD in the environment of a shell under the
# preload that runs two commands, and of a launcher job (--stats).  Must
# hold: one warning each time (the shell's; its children stay quiet).
out=$(env $P HOSTPIN_TRESHOLD=1M sh -c '/bin/true; /bin/true; exit 0' 2>&1)
n=$(echo "$out" | grep -c 'unknown variable HOSTPIN_TRESHOLD ignored; did you mean HOSTPIN_THRESHOLD?')
out2=$(HOSTPIN_TRESHOLD=1M "$top/build/hostpin" --stats -b mlock -- sh -c '/bin/true; /bin/true; exit 0' 2>&1)
n2=$(echo "$out2" | grep -c 'unknown variable HOSTPIN_TRESHOLD')
[ "$n" = 1 ] && [ "$n2" = 1 ] && ok "a typo (HOSTPIN_TRESHOLD) warned once by a shell and its two children, once in a launcher job" ||
	{ bad "a typo warned $n times by a shell and its children, $n2 times in a launcher job (want 1, 1)"; echo "$out2" | head -5 | sed 's/^/    /'; }

# every HOSTPIN_* name the launcher and the tests set is known
# (not this file's deliberate misspellings, nor the HOSTPIN_NAME placeholder)
names=$(cd "$top" && grep -rhoE --exclude=060-knobs.sh 'HOSTPIN_[A-Z0-9_]+=' scripts tests Makefile | sort -u | sed 's/=$//' | grep -vx HOSTPIN_NAME)
envs=""
for nm in $names; do envs="$envs $nm="; done  # empty: no file is written
out=$(env $P $envs /bin/true 2>&1)
if ! echo "$out" | grep -q "unknown variable"; then ok "no HOSTPIN_* name set by scripts/ or tests/ is reported unknown ($(echo $names | wc -w) names)"
else bad "names set by scripts/tests reported unknown: $(echo "$out" | grep 'unknown variable')"; fi
# the accepted spellings, seen in the effective values (sizes as people
# read them since issue 26: 4.0M, not 4194304)
for kv in "HOSTPIN_THRESHOLD=4mb 4.0M" "HOSTPIN_THRESHOLD=4096B 4.0K" "HOSTPIN_THRESHOLD=64KiB 64.0K" "HOSTPIN_STATS=yes 1" "HOSTPIN_DISABLE=Off 0" "HOSTPIN_HUGEPAGES=TRUE 1"; do
	v=${kv% *} want=${kv#* }
	out=$(env $P HOSTPIN_LOG=info "$v" /bin/true 2>&1)
	if echo "$out" | grep -q "^hostpin\[[0-9]*\]: ${v%%=*}=$want\( \|$\)" && ! echo "$out" | grep -q "invalid HOSTPIN"; then ok "$v accepted as $want"
	else bad "$v: $(echo "$out" | grep "${v%%=*}")"; fi
done
for kv in "HOSTPIN_BACKEND=cuda9" "HOSTPIN_LOG=loud" "HOSTPIN_MAX_PINNED=101%" "HOSTPIN_DISABLE=maybe" "HOSTPIN_THRESHOLD=1K"; do
	out=$(env $P "$kv" /bin/true 2>&1); rc=$?
	if [ $rc -eq 0 ] && echo "$out" | grep -q "invalid ${kv%%=*}=\"${kv#*=}\": expected"; then ok "invalid $kv reported"
	else bad "invalid $kv: $out"; fi
done
out=$(env $P HOSTPIN_LOG=info /bin/true 2>&1)
# every knob but the test-only ones (options.def: doc "test only: ...")
k=$(grep '^HP_OPT(' "$top/preload/base/options.def" | grep -vc '"test only:')
if [ "$(echo "$out" | grep -c 'HOSTPIN_[A-Z_]*=')" = "$k" ]; then ok "HOSTPIN_LOG=info dumps all $k knobs (test-only ones left out)"
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
choices=$(grep '^HP_OPT(BACKEND' "$top/preload/base/options.def" | cut -d'"' -f4 | tr '|' ' ')
help=$("$top/build/hostpin" --help)
missing=""
for c in $choices; do
	echo "$help" | grep -q -- "--backend.*\b$c\b" || missing="$missing launcher:$c"
	grep -q "^\.BR* $c\b" "$top/man/hostpin.1" || missing="$missing hostpin.1:$c"
done
[ -z "$missing" ] && ok "every backend ($choices) in the launcher's help and hostpin(1)" || bad "backends not listed:$missing"

# -- every knob, an invalid value: one clear message, the job runs on --
# Injected: each HP_OPT knob of options.def in turn set to values its kind
# refuses (BOOL: maybe; ENUM: nosuch; COUNT, SIZE, CAP: 12Q and one past
# its maximum; STR: 256 bytes), under a program that prints a line.  Must
# hold: exit status 0 and the program's line; exactly one message "invalid
# HOSTPIN_X="V": expected ...; using the default D" (D: options.def's,
# "(empty)" for a string); the knob's effective value in the HOSTPIN_LOG=info
# dump the default's; with HOSTPIN_STRICT=1, exit status 78 before the
# program ran.  A knob added to options.def is covered without a change here.
dump_of() { # NAME, then env settings: the knob's line of the info dump
	# (the knob unset first: lib.sh sets some for every case)
	local k=$1; shift
	env -u "HOSTPIN_$k" $P HOSTPIN_LOG=info "$@" /bin/true 2>&1 | sed -n "s/^hostpin\[[0-9]*\]: \(HOSTPIN_$k=[^ ]*\).*/\1/p"
}
long=$(printf 'x%.0s' $(seq 256))
kbad="" kn=0 kv=0
while IFS='|' read -r name kind def max; do
	case $kind in
	BOOL) vals="maybe" ;;
	ENUM) vals="nosuch" ;;
	COUNT | SIZE | CAP) vals="12Q $(($(echo "$max" | sed 's/ull//g') + 1))" ;;
	STR) vals=$long ;;
	*) kbad="$kbad $name:unknown-kind-$kind"; continue ;;
	esac
	[ "$kind" = STR ] && want_def="(empty)" || want_def=$def
	base=$([ "$name" = LOG ] || dump_of "$name")
	kn=$((kn + 1))
	for v in $vals; do
		kv=$((kv + 1))
		out=$(env $P "HOSTPIN_$name=$v" /bin/echo job-ran 2>&1); rc=$?
		n=$(echo "$out" | grep -cF "invalid HOSTPIN_$name=\"$v\": expected ")
		m=$(echo "$out" | grep -F "invalid HOSTPIN_$name=\"$v\": expected " | grep -cF "; using the default $want_def")
		[ $rc -eq 0 ] && echo "$out" | grep -qx job-ran && [ "$n" = 1 ] && [ "$m" = 1 ] ||
			{ kbad="$kbad $name=${v:0:12}(rc=$rc,msgs=$n,default=$m)"; continue; }
		if [ "$name" != LOG ] && [ -n "$base" ]; then
			now=$(dump_of "$name" "HOSTPIN_$name=$v")
			[ "$now" = "$base" ] || kbad="$kbad $name=${v:0:12}(effective:$now,want:$base)"
		fi
		[ "$name" = STRICT ] && continue
		out=$(env $P "HOSTPIN_$name=$v" HOSTPIN_STRICT=1 /bin/echo job-ran 2>&1); rc=$?
		[ $rc -eq 78 ] && ! echo "$out" | grep -qx job-ran && echo "$out" | grep -qF "invalid HOSTPIN_$name=" ||
			kbad="$kbad $name=${v:0:12}(strict:rc=$rc)"
	done
done < <(sed -n 's/^HP_OPT(\([A-Z0-9_]*\), *\([A-Z]*\), *"\([^"]*\)", *"[^"]*", *[^,]*, *\(.*\), *"[^"]*")$/\1|\2|\3|\4/p' "$top/preload/base/options.def")
n_opt=$(grep -c '^HP_OPT(' "$top/preload/base/options.def")
if [ "$kn" = "$n_opt" ] && [ -z "$kbad" ]; then
	ok "every knob ($kn of options.def, $kv invalid values): one message naming it, the default kept, the job ran; HOSTPIN_STRICT=1: status 78"
else bad "invalid values over every knob ($kn of $n_opt read):$kbad"; fi

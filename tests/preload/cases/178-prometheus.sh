# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- `hostpin status --prometheus` and --prometheus-file (issue 25,
# item 3): the node's figures in Prometheus' text exposition format ----
# Injected: a private ledger (HOSTPIN_LEDGER) holding three held processes:
# a rank over the fake CUDA driver (RANK=1; it registered, copied through
# registered memory, freed into the cache), a Slurm task over mlock
# (SLURM_PROCID=5, SLURM_LOCALID=2, no RANK), and a program whose path
# holds a double quote and a backslash, with an ESC byte in an argument,
# in a launcher job (HOSTPIN_JOB).  The cache never decays while they are
# held (HOSTPIN_CACHE_DECAY_MS a day; caches of 1G, whatever the RAM), so
# every figure is still.
# Must hold: promtool check metrics passes (SKIP for that part without
# promtool; a strict awk check of the format runs anyway); the node's
# figures are --total's and the sums of the per-process series; the
# labels (rank from RANK and from SLURM_PROCID, job_pid, the command
# escaped: \" \\ and \\x1b); --prometheus-file writes PATH mode 0644
# whatever the umask, by rename (a hard link to the old file keeps the
# old contents), leaves no PATH.tmp.*, fails with a message where it
# cannot write; with no ledger, the node's figures are 0.
ST=$top/build/hostpin-status
build ledger_holder ledger_holder.c
pm=$(mktemp -d)
chmod 755 "$pm"
pl=$pm/ledger
PE="$P HOSTPIN_PIN_AFTER=0 HOSTPIN_CACHE_DECAY_MS=86400000 HOSTPIN_CACHE=1G HOSTPIN_NODE_CACHE=1G HOSTPIN_LEDGER=$pl"
odd=$pm/'hold"er\x'
cp "$B/ledger_holder" "$odd"
mkfifo "$pm/in"
env -u RANK -u LOCAL_RANK -u SLURM_PROCID -u SLURM_LOCALID $PE RANK=1 LOCAL_RANK=1 \
	FAKE_CUDA_LOG=/dev/null "$B/job_prog" rank 128 < "$pm/in" > "$pm/o1" 2>&1 &
p1=$!
env -u RANK -u LOCAL_RANK -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_LOCAL_RANK $PE \
	SLURM_PROCID=5 SLURM_LOCALID=2 HOSTPIN_BACKEND=mlock "$B/ledger_holder" 4 < "$pm/in" > "$pm/o2" 2>&1 &
p2=$!
env -u RANK -u LOCAL_RANK -u SLURM_PROCID -u SLURM_LOCALID $PE HOSTPIN_JOB=$$ HOSTPIN_BACKEND=mlock \
	"$odd" 4 $'a\033b' < "$pm/in" > "$pm/o3" 2>&1 &
p3=$!
exec {pmw}> "$pm/in"
pm_up() { grep -q freed "$pm/o1" && grep -q held "$pm/o2" && grep -q held "$pm/o3"; } 2>/dev/null
poll 60 pm_up || bad "prometheus: the three processes did not start: $(cat "$pm/o1" "$pm/o2" "$pm/o3" | head -5)"

# promcheck FILE: "" if FILE passes promtool (or "SKIP" without it) and a
# strict check of the format: # HELP and # TYPE once per family, before
# its samples; names hostpin_*; counters and only counters end in _total;
# sizes in bytes, times in seconds; label values with only \\ \" \n
# escapes; whole numbers (a fraction for seconds only).
have_promtool=0
command -v promtool >/dev/null 2>&1 && have_promtool=1
promcheck() {
	local why
	why=$(awk '
		function fail(m) { if (!bad) bad = "line " NR ": " m }
		/^# HELP / { n = $3; if (n !~ /^hostpin_[a-z_]+$/) fail("name " n)
			if (help[n]++) fail("HELP twice: " n); if (NF < 4) fail("empty HELP: " n)
			if (type[n] || seen[n]) fail("HELP after TYPE or samples: " n); next }
		/^# TYPE / { n = $3; if (NF != 4 || $4 !~ /^(gauge|counter)$/) fail("TYPE: " $0)
			if (type[n]) fail("TYPE twice: " n); if (seen[n]) fail("TYPE after samples: " n)
			if (!help[n]) fail("TYPE without HELP: " n)
			if (($4 == "counter") != (n ~ /_total$/))
				fail(($4 == "counter" ? "a counter without" : "a gauge with") " _total: " n)
			if (n ~ /byte/ && n !~ /_bytes(_total)?$/) fail("bytes not the unit: " n)
			if (n ~ /second/ && n !~ /_seconds(_total)?$/) fail("seconds not the unit: " n)
			type[n] = $4; last = n; next }
		/^#/ || /^$/ { fail("stray line: " $0); next }
		{ if (!match($0, /^hostpin_[a-z_]+/)) { fail("sample name: " $0); next }
			n = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1); seen[n] = 1
			if (n != last) fail("sample not under its TYPE: " n)
			if (substr(rest, 1, 1) == "{") {
				gsub(/\\[\\"n]/, "E", rest)
				if (index(rest, "\\")) { fail("a bad escape: " $0); next }
				if (!match(rest, /^\{([a-z_]+="[^"]*",)*[a-z_]+="[^"]*"\}/)) { fail("labels: " $0); next }
				rest = substr(rest, RLENGTH + 1) }
			if (rest !~ /^ [0-9]+(\.[0-9]+)?$/) fail("value: " $0)
			if (rest ~ /\./ && n !~ /_seconds(_total)?$/) fail("a fraction not in seconds: " $0)
			samples++ }
		END { if (!samples) fail("no sample"); print bad }' "$1")
	[ -n "$why" ] && { echo "format: $why"; return; }
	if [ $have_promtool = 1 ]; then
		why=$(promtool check metrics < "$1" 2>&1) || echo "promtool: $why"
	else echo SKIP; fi
}
# label VALUE of series NAME of process PID in FILE, and the value
psample() { awk -v n="$2" -v p="pid=\"$3\"" '$1 ~ "^" n "[{]" && index($0, p) { print $NF }' "$1"; }
plabel() { grep "^$2{pid=\"$3\"," "$1" | head -1 | sed -n "s/.*[{,]$4=\"\([^\"]*\)\".*/\1/p"; }
pnode() { awk -v n="hostpin_node_$2" '$1 == n { print $2 }' "$1"; }

HOSTPIN_LEDGER=$pl "$ST" --prometheus > "$pm/a.prom"; rc=$?
HOSTPIN_LEDGER=$pl "$ST" --prometheus --all > "$pm/all.prom"
why=$(promcheck "$pm/a.prom")
case "$why" in
'') ok "prometheus: the output passes promtool check metrics and the strict format check ($(grep -c '^# TYPE' "$pm/a.prom") families)" ;;
SKIP) echo "SKIP: promtool not installed (Debian package prometheus; make check-cluster installs it, no service started): only the strict format check ran"
	ok "prometheus: the output passes the strict format check" ;;
*) bad "prometheus (rc $rc): $why"; head -5 "$pm/a.prom" | sed 's/^/    /' ;;
esac
[ $rc -eq 0 ] && [ "$(pnode "$pm/a.prom" processes)" = 3 ] &&
	ok "prometheus: rc 0, hostpin_node_processes 3" || bad "prometheus: rc $rc, $(pnode "$pm/a.prom" processes) processes (want 3)"

# the node's figures: --total's, and the sums of the per-process series
wrong="" zero=""
for pair in live_bytes:bytes_now pinned_bytes:pinned_bytes_now cached_bytes:cached_bytes \
	cached_blocks:cached_blocks registrations:pin_calls registered_copies:copies_registered; do
	m=${pair%%:*} c=${pair#*:}
	v=$(pnode "$pm/a.prom" "$m") t=$(HOSTPIN_LEDGER=$pl "$ST" --total "$c")
	s=$(awk -v n="hostpin_process_$m" '$1 ~ "^" n "(_total)?[{]" { t += $NF } END { printf "%d", t }' "$pm/all.prom")
	[ -n "$v" ] && [ "$v" = "$t" ] && [ "$v" = "$s" ] || wrong="$wrong $m=$v/--total $c=$t/sum=$s"
	[ "${v:-0}" != 0 ] || zero="$zero $m"
done
fig="pinned $(pnode "$pm/a.prom" pinned_bytes), cached $(pnode "$pm/a.prom" cached_bytes)"
fig="$fig, registered copies $(pnode "$pm/a.prom" registered_copies)"
[ -z "$wrong$zero" ] && ok "prometheus: the node's figures equal --total's and the per-process sums ($fig)" ||
	bad "prometheus: node figures:${wrong:- equal}; zero:${zero:- none}"
v=$(psample "$pm/a.prom" hostpin_process_pinned_bytes $p2)
[ "$v" = $((4 << 20)) ] && ok "prometheus: the mlock process's pinned bytes (4 MiB)" ||
	bad "prometheus: pid $p2 pinned '$v' (want $((4 << 20)))"

# labels
lab() { plabel "$pm/a.prom" hostpin_process_pinned_bytes "$@"; }
got="rank=$(lab $p1 rank),$(lab $p1 local_rank) slurm=$(lab $p2 rank),$(lab $p2 local_rank) job=$(lab $p3 job_pid)"
[ "$got" = "rank=1,1 slurm=5,2 job=$$" ] &&
	ok "prometheus: rank and local_rank from RANK and from SLURM_PROCID/SLURM_LOCALID; job_pid from HOSTPIN_JOB" ||
	bad "prometheus labels: $got (want rank=1,1 slurm=5,2 job=$$)"
want="command=\"$pm"'/hold\"er\\x 4 a\\x1bb"'
n=$(grep "^hostpin_process_[a-z_]*{pid=\"$p3\"," "$pm/a.prom" | grep -cF "$want")
nf=$(grep -c "^# TYPE hostpin_process_" "$pm/a.prom")
[ "$n" -gt 0 ] && [ "$n" = "$nf" ] && ok "prometheus: a quote and a backslash in the command escaped (\\\" \\\\), an ESC byte as \\\\x1b, in all $n families" ||
	bad "prometheus: escaped command in $n of $nf families: $(grep "^hostpin_process_pinned_bytes{pid=\"$p3\"," "$pm/a.prom")"

# the launcher passes `status ...` on
HOSTPIN_LEDGER=$pl "$top/build/hostpin" status --prometheus | cmp -s - "$pm/a.prom" &&
	ok "prometheus: hostpin status --prometheus (the launcher) prints the same" ||
	bad "prometheus: the launcher's status --prometheus differs"
out=$("$ST" --help)
echo "$out" | grep -q -- "--prometheus " && echo "$out" | grep -q -- "--prometheus-file PATH" &&
	ok "prometheus: --help names --prometheus and --prometheus-file" || bad "prometheus: --help lacks them"
out=$(HOSTPIN_LEDGER=$pl "$ST" --prometheus --watch 1 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "goes with --prometheus-file" && ok "prometheus: --prometheus --watch refused (one exposition per output)" ||
	bad "prometheus --watch (rc $rc): $out"

# --prometheus-file: no ledger first (its figures 0), then the ledger's,
# over a file with a second (hard) link: rename leaves the link the old one
t=$pm/textfile
mkdir "$t"
(umask 077; HOSTPIN_LEDGER=$pm/none "$ST" --prometheus-file "$t/hostpin.prom"); r1=$?
cp "$t/hostpin.prom" "$pm/none.prom"
ln "$t/hostpin.prom" "$t/old"
(umask 077; HOSTPIN_LEDGER=$pl "$ST" --prometheus-file "$t/hostpin.prom"); r2=$?
mode=$(stat -c %a "$t/hostpin.prom")
left=$(ls -a "$t" | grep -c 'tmp')
why=$(promcheck "$pm/none.prom")
same=no
cmp -s "$t/hostpin.prom" "$pm/a.prom" && same=yes
if [ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$mode" = 644 ] && [ "$left" = 0 ] && [ $same = yes ] &&
	cmp -s "$t/old" "$pm/none.prom" && [ "$(pnode "$t/old" processes)" = 0 ] &&
	[ "$(pnode "$t/old" pinned_bytes)" = 0 ] && [ "$(stat -c %i "$t/old")" != "$(stat -c %i "$t/hostpin.prom")" ] &&
	{ [ -z "$why" ] || [ "$why" = SKIP ]; }; then
	ok "prometheus-file: mode 0644 under umask 077, replaced by rename (the old link keeps the no-ledger file, node figures 0), no tmp file left"
else
	bad "prometheus-file: rc $r1/$r2, mode $mode, $left tmp files, same as --prometheus: $same, old link: $(pnode "$t/old" processes) processes, no-ledger check: ${why:-ok}"
	ls -la "$t" | sed 's/^/    /'
fi
HOSTPIN_LEDGER=$pl "$ST" --prometheus-file "$t/w.prom" --watch 1 --count 2; rc=$?
[ $rc -eq 0 ] && cmp -s "$t/w.prom" "$pm/a.prom" && [ "$(ls -a "$t" | grep -c tmp)" = 0 ] &&
	ok "prometheus-file --watch 1 --count 2: rewritten, no tmp file left" || bad "prometheus-file --watch (rc $rc)"
out=$(HOSTPIN_LEDGER=$pl "$ST" --prometheus-file "$pm/no/such/dir/h.prom" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "cannot create $pm/no/such/dir/h.prom.tmp.[0-9]*\.[0-9a-f]*: No such file" && [ ! -e "$pm/no" ] &&
	ok "prometheus-file into a missing directory: rc 1, '$out'" || bad "prometheus-file missing directory (rc $rc): $out"

exec {pmw}>&-
wait $p1 $p2 $p3
rm -rf "$pm"

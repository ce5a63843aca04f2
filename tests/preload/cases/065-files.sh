# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- file errors: the path, the reason and what was lost, when seen ----
fdir=$(mktemp -d)
out=$(env $P HOSTPIN_STATS_FILE="$fdir/no/such/s-%p.json" /bin/true 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "cannot open HOSTPIN_STATS_FILE=$fdir/no/such/s-[0-9]*.json: No such file or directory (errno 2); the JSON report is lost"; then
	ok "HOSTPIN_STATS_FILE in a missing directory: expanded path, reason, report lost"
else bad "stats file in a missing directory (rc $rc): $out"; fi
out=$(env $P HOSTPIN_STATS_FILE="$fdir" /bin/true 2>&1)
if echo "$out" | grep -q "cannot open HOSTPIN_STATS_FILE=$fdir: Is a directory (errno 21); the JSON report is lost"; then
	ok "HOSTPIN_STATS_FILE naming a directory"
else bad "stats file naming a directory: $out"; fi
out=$(env $P HOSTPIN_STATS_FILE=/dev/full /bin/true 2>&1)
if echo "$out" | grep -q "cannot write HOSTPIN_STATS_FILE=/dev/full: No space left on device (errno 28); the JSON report there is incomplete"; then
	ok "HOSTPIN_STATS_FILE on a full device"
else bad "stats file on a full device: $out"; fi
out=$(env $P HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$fdir/none/h.log" /bin/true 2>&1)
if echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$fdir/none/h.log: No such file or directory (errno 2); logging to stderr instead" &&
	! echo "$out" | grep -q symlink && echo "$out" | grep -q "ready: backend"; then
	ok "HOSTPIN_LOG_FILE in a missing directory: reason, and the log goes to stderr"
else bad "log file in a missing directory: $out"; fi
ln -s "$fdir/target" "$fdir/link"
out=$(env $P HOSTPIN_LOG_FILE="$fdir/link" /bin/true 2>&1)
if echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$fdir/link: it is a symbolic link, which hostpin refuses"; then
	ok "HOSTPIN_LOG_FILE on a symlink says so"
else bad "log file on a symlink: $out"; fi
out=$(env $P HOSTPIN_LOG_FILE=/dev/full HOSTPIN_STATS=1 /bin/true 2>&1)
n=$(echo "$out" | grep -c "cannot write HOSTPIN_LOG_FILE=/dev/full: No space left on device (errno 28); this message and every later one, the report at exit included, go to stderr instead")
if [ "$n" = 1 ] && echo "$out" | grep -q "report (backend" && echo "$out" | grep -q "pin failures"; then
	ok "a log on a full device: said once, and the report reaches stderr whole"
else bad "log on a full device ($n): $out"; fi
# the version: one string, in the log, the report and the JSON
ver=$(cat "$top/VERSION")
out=$(env $P HOSTPIN_LOG=info HOSTPIN_STATS=1 HOSTPIN_STATS_FILE="$fdir/s.json" /bin/true 2>&1)
if echo "$out" | grep -q "ready: backend .* (hostpin $ver)" && echo "$out" | grep -q "report (backend .*, hostpin $ver)" &&
	grep -q "\"version\": \"$ver\"" "$fdir/s.json"; then ok "version $ver in HOSTPIN_LOG=info, the report and the JSON"
else bad "version: $out $(cat "$fdir/s.json")"; fi
rm -rf "$fdir"

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- security tier (issue 33): what another local user, or another
# process of the same user, can do to a root job through the files hostpin
# writes, the ledger and the launcher's input.  Each case runs as root in a
# mount namespace of its own (`unshare -m`) with a private sticky,
# world-writable directory $S (a tmpfs, as /tmp) and a private /dev/shm;
# user nobody plants the files, FIFOs, links and directories
# (`runuser -u nobody`), running only the system's programs (nothing of
# the clone, which may lie under a 0700 directory).  Without root the
# namespace cases print SKIP; the launcher and message cases always run. ----
ST=$top/build/hostpin-status
HP=$top/build/hostpin
build ledger_holder ledger_holder.c
$CC $CFL -o "$B/ledger_poke" ledger_poke.c || bad "build ledger_poke"
sd=$(mktemp -d)
chmod 755 "$sd"
mkdir "$sd/s"
# what each case needs, for `unshare -m bash -c`: paths, and helpers
# printing "ok: ..." and "bad: ..." lines that sec() turns into results
sec_hdr="set -u; LIB='$LIB'; ST='$ST'; LH='$B/ledger_holder'; LP='$B/ledger_poke'; S='$sd/s'
ok() { echo \"ok: \$*\"; }
bad() { echo \"bad: \$*\"; }
nob() { runuser -u nobody -- \"\$@\"; }
poll() { local end=\$((SECONDS + \$1)); shift; until \"\$@\"; do [ \$SECONDS -lt \$end ] || return 1; sleep 0.2; done; }
mount -t tmpfs -o mode=1777 tmpfs \"\$S\" && mount -t tmpfs -o size=64m,mode=1777 tmpfs /dev/shm || { bad 'mounts'; exit 1; }
cd \"\$S\"
"
# sec NAME SCRIPT: SCRIPT in a namespace of its own; its ok:/bad: lines
# become results, anything else is shown under a failure
sec() {
	local name=$1 out line any=0
	out=$(unshare -m bash -c "$sec_hdr$2" 2>&1)
	while IFS= read -r line; do
		case "$line" in
		"ok: "*) ok "$name: ${line#ok: }"; any=1 ;;
		"bad: "*) bad "$name: ${line#bad: }"; any=1
			echo "$out" | grep -v '^ok: \|^bad: ' | tail -12 | sed 's/^/    /' ;;
		esac
	done <<<"$out"
	[ $any = 1 ] || { bad "$name: no result"; echo "$out" | tail -12 | sed 's/^/    /'; }
}

if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "SKIP: not root (or no unshare -m, no user nobody): the security tier's planted files are not injected"
else

# 1. Another user's FIFO at HOSTPIN_LOG_FILE, and at HOSTPIN_STATS_FILE
# (%p: planted while the job runs, its pid seen in ps).  Must hold: the
# job never blocks (timeout 30 is a hang detector only), exits 0, and says
# in one line what it refused.
sec "FIFO" '
nob mkfifo "$S/h.log"
out=$(timeout 30 env LD_PRELOAD="$LIB" HOSTPIN_LOG_FILE="$S/h.log" /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(echo "$out" | grep -c "^hostpin")" = 1 ] &&
	echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$S/h.log: it is a FIFO, not a regular file, which hostpin refuses; logging to stderr instead"; then
	ok "another user'"'"'s FIFO at HOSTPIN_LOG_FILE: refused in one line, no hang"
else bad "FIFO at HOSTPIN_LOG_FILE (rc $rc, 124: it hung): $out"; fi
timeout 30 env LD_PRELOAD="$LIB" HOSTPIN_STATS_FILE="$S/x-%p.json" bash -c "echo \$\$ > $S/pid; until [ -e $S/go ]; do sleep 0.1; done" > "$S/job.out" 2>&1 &
jp=$!
poll 60 test -s "$S/pid"
pid=$(cat "$S/pid")
nob mkfifo "$S/x-$pid.json"; touch "$S/go"
wait $jp; rc=$?
if [ $rc = 0 ] && grep -q "cannot open HOSTPIN_STATS_FILE=$S/x-$pid.json: it is a FIFO, not a regular file, which hostpin refuses; the JSON report is lost" "$S/job.out"; then
	ok "a FIFO planted at HOSTPIN_STATS_FILE=x-%p.json while the job runs: refused at exit, no hang"
else bad "FIFO at the stats file (rc $rc, 124: it never exited): $(cat "$S/job.out")"; fi'

# 2. Files planted first: another user's log and stats files (mode 666),
# and a hard link to a file of root's.  Must hold: nothing written into
# them, each refusal said; a file hostpin creates is root's, mode 0600.
sec "planted files" '
nob sh -c ": > $S/s.json; : > $S/j.log; chmod 666 $S/s.json $S/j.log"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$S/j.log" HOSTPIN_STATS_FILE="$S/s.json" /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && [ ! -s "$S/j.log" ] && [ ! -s "$S/s.json" ] &&
	echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$S/j.log: it belongs to another user (uid 65534), which hostpin never writes into; logging to stderr instead" &&
	echo "$out" | grep -q "cannot open HOSTPIN_STATS_FILE=$S/s.json: it belongs to another user (uid 65534), which hostpin never writes into; the JSON report is lost"; then
	ok "another user'"'"'s log and stats files: left empty, refused"
else bad "planted files (rc $rc, log $(stat -c %s "$S/j.log") bytes, stats $(stat -c %s "$S/s.json") bytes): $out"; fi
echo secret > "$S/secret"; ln "$S/secret" "$S/hl.json"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_STATS_FILE="$S/hl.json" /bin/true 2>&1)
if [ "$(cat "$S/secret")" = secret ] && echo "$out" | grep -q "HOSTPIN_STATS_FILE=$S/hl.json: it has 2 hard links, which hostpin refuses"; then
	ok "a hard link to another file at HOSTPIN_STATS_FILE: never truncated"
else bad "hard link: secret now \"$(cat "$S/secret")\": $out"; fi
env LD_PRELOAD="$LIB" HOSTPIN_STATS_FILE="$S/new.json" HOSTPIN_LOG_FILE="$S/new.log" HOSTPIN_LOG=info /bin/true
if [ "$(stat -c "%U %a" "$S/new.json" "$S/new.log" | sort -u)" = "root 600" ] && [ -s "$S/new.json" ] && [ -s "$S/new.log" ]; then
	ok "files hostpin creates: root'"'"'s, mode 0600"
else bad "created files: $(stat -c "%n %U %a" "$S/new.json" "$S/new.log" 2>&1)"; fi'

# 3. A directory on the way that another user controls: a link of theirs
# (/tmp/jobs -> their directory), their directory, a world-writable one
# without the sticky bit.  Must hold: nothing is created there, the
# refusal is said; root's own link is followed.
sec "directories" '
nob sh -c "mkdir $S/nb && chmod 777 $S/nb && ln -s $S/nb $S/jobs && mkdir $S/nd"
mkdir -m 777 "$S/open"; chmod 777 "$S/open"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info HOSTPIN_STATS_FILE="$S/jobs/stats.json" HOSTPIN_LOG_FILE="$S/jobs/job.log" /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && [ -z "$(ls -A "$S/nb")" ] &&
	echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$S/jobs/job.log: $S/jobs is a symbolic link of another user (uid 65534), which hostpin does not follow" &&
	echo "$out" | grep -q "cannot open HOSTPIN_STATS_FILE=$S/jobs/stats.json: $S/jobs is a symbolic link"; then
	ok "another user'"'"'s link as a directory on the path: not followed, nothing created"
else bad "link of another user (rc $rc, in its target: $(ls -A "$S/nb")): $out"; fi
out=$(env LD_PRELOAD="$LIB" HOSTPIN_STATS_FILE="$S/nd/s.json" HOSTPIN_LOG_FILE="$S/open/o.log" /bin/true 2>&1)
if [ ! -e "$S/nd/s.json" ] && [ ! -e "$S/open/o.log" ] &&
	echo "$out" | grep -q "HOSTPIN_STATS_FILE=$S/nd/s.json: directory $S/nd/ belongs to another user (uid 65534), which hostpin does not write into" &&
	echo "$out" | grep -q "HOSTPIN_LOG_FILE=$S/open/o.log: directory $S/open/ (owner uid 0, mode 0777) can be changed by other users and has no sticky bit, which hostpin refuses"; then
	ok "another user'"'"'s directory, a world-writable one without the sticky bit: refused"
else bad "directories: $out"; fi
mkdir "$S/mine"; ln -s "$S/mine" "$S/mylink"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_STATS_FILE="$S/mylink/s.json" /bin/true 2>&1)
if [ -z "$out" ] && [ -s "$S/mine/s.json" ]; then ok "root'"'"'s own link on the path: followed"
else bad "own link: $out"; fi'

# 4. The ledger truncated by another process of the user's (a container
# sharing /dev/shm) while a hostpin process pins and hostpin status
# --watch runs.  Must hold: the process frees its block and exits 0 (no
# SIGBUS), the watcher goes on, a new process starts and exits 0.
sec "truncated ledger" '
rm -f "$S/in" "$S/ups"; mkfifo "$S/in"
env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 "$LH" 64 < "$S/in" > "$S/ups" 2>&1 &
hp=$!
exec 3>"$S/in"
poll 60 grep -q "^held$" "$S/ups" || bad "holder never held: $(cat "$S/ups")"
"$ST" --watch 1 > "$S/w.out" 2>&1 3>&- &
wp=$!
poll 60 grep -q "ledger_holder" "$S/w.out"
led=$(ls /dev/shm/hostpin-0.d/ledger-v*)
truncate -s 0 "$led"
poll 60 grep -q "truncated or replaced" "$S/w.out"
exec 3>&-
wait $hp; rc=$?
env LD_PRELOAD="$LIB" /bin/true; rc2=$?
if kill -0 $wp 2>/dev/null; then alive=1; kill $wp; else alive=0; fi
wait $wp 2>/dev/null
if [ $rc = 0 ] && [ $rc2 = 0 ] && [ $alive = 1 ]; then
	ok "a truncated ledger: the process ends 0, a new one starts, hostpin status --watch goes on"
else bad "truncated ledger: holder rc $rc (135: SIGBUS), new process rc $rc2, watcher alive $alive: $(cat "$S/ups") / $(tail -3 "$S/w.out")"; fi'

# 5. A slot written by another process of the user's, no lock, claiming
# 2^64 - 32 MiB pinned (the node total wraps) or 2^60 (nothing may ever
# pin again).  Must hold: under HOSTPIN_NODE_MAX_PINNED=64M a 96 MiB block
# is not pinned, and a 32 MiB block is.
sec "ledger sums" '
export HOSTPIN_LEDGER="$S/led"
env LD_PRELOAD="$LIB" /bin/true
"$LP" "$S/led" $((0xfffffffffe000000)) || bad "poke"
env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 HOSTPIN_NODE_MAX_PINNED=64M HOSTPIN_STATS_FILE="$S/r96.json" "$LH" 96 < /dev/null > /dev/null
if grep -q "\"pinned_bytes_peak\": 0," "$S/r96.json"; then ok "a slot near 2^64: the node sum does not wrap, 96 MiB not pinned under a 64 MiB cap"
else bad "sum wrapped: $(grep -o "\"pinned_bytes_peak\": [0-9]*" "$S/r96.json")"; fi
"$LP" "$S/led" $((1 << 60)) || bad "poke"
env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 HOSTPIN_NODE_MAX_PINNED=64M HOSTPIN_STATS_FILE="$S/r32.json" "$LH" 32 < /dev/null > /dev/null
if grep -q "\"pinned_bytes_peak\": 33554432," "$S/r32.json"; then ok "a slot claiming more than the machine has is not counted: 32 MiB pinned under 64 MiB"
else bad "bogus slot blocks pinning: $(grep -o "\"pinned_bytes_peak\": [0-9]*" "$S/r32.json")"; fi'

# 6. Another user takes /dev/shm/hostpin-0.d and fills /dev/shm with
# 100,000 names like hostpin-0.d-*.  Must hold: a root process looks at a
# handful of names (strace counts its stat and getdents calls, under 200;
# never one per entry) and uses a ledger of its own; when every name
# hostpin tries in /dev/shm is taken it says nothing at the default level,
# exits 0, and root's processes share a ledger in /run/hostpin-0.d, which
# no other user can take (issue 40 item 6; /run a private tmpfs here).
if command -v strace >/dev/null; then
sec "/dev/shm flood" '
nob sh -c "cd /dev/shm && mkdir hostpin-0.d && seq 100000 | sed s/^/hostpin-0.d-x/ | xargs touch"
strace -f -o "$S/st" -e trace=getdents64,newfstatat,fstatat64,statx,lstat,stat env LD_PRELOAD="$LIB" HOSTPIN_LOG=info /bin/true 2> "$S/err"; rc=$?
n=$(grep -c "hostpin-0\.d\|getdents" "$S/st")
if [ $rc = 0 ] && [ "$n" -lt 200 ] && grep -q "ledger /dev/shm/hostpin-0.d-1/ledger" "$S/err"; then
	ok "100,000 names of another user in /dev/shm: $n calls naming hostpin-0.d, ledger in hostpin-0.d-1"
else bad "flood (rc $rc): $n stat/getdents calls on /dev/shm: $(grep -m2 ledger "$S/err")"; fi
nob sh -c "cd /dev/shm && find . -maxdepth 1 -name hostpin-0.d-x\\* -delete && for k in 1 2 3 4 5 6 7 8; do mkdir hostpin-0.d-\$k; done"
rm -rf /dev/shm/hostpin-0.d-1 2>/dev/null; nob mkdir /dev/shm/hostpin-0.d-1
mount -t tmpfs -o mode=755 tmpfs /run
out=$(env LD_PRELOAD="$LIB" /bin/true 2>&1); rc=$?
l1=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info /bin/true 2>&1 | sed -n "s/.*: ledger \(.*\), slot.*/\1/p")
l2=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info /bin/true 2>&1 | sed -n "s/.*: ledger \(.*\), slot.*/\1/p")
if [ $rc = 0 ] && [ -z "$out" ] && [ "$l1" = "$l2" ] && echo "$l1" | grep -q "^/run/hostpin-0\.d/ledger"; then ok "every /dev/shm ledger name taken by another user: exit 0, nothing said at the default level, root shares a ledger in /run ($l1)"
else bad "all names taken (rc $rc): $out; ledgers: $l1 / $l2"; fi'
else echo "SKIP: no strace: the /dev/shm flood case"; fi

# 7. The Prometheus watcher: another user makes its old fixed temporary
# name P.tmp.PID a directory (no longer used: each snapshot takes an
# unpredictable name), and P itself a directory.  Must hold: the failed
# cycle is said, the watcher goes on, and writes P once the name is free
# again.
sec "prometheus watcher" '
bash -c "echo \$\$ > $S/wpid; until [ -e $S/go ]; do sleep 0.1; done; exec \"$ST\" --prometheus-file $S/p.prom --watch 1" > "$S/w.out" 2>&1 &
wp=$!
poll 60 test -s "$S/wpid"
nob mkdir "$S/p.prom.tmp.$(cat "$S/wpid")" "$S/p.prom"; touch "$S/go"
poll 60 grep -q "trying again" "$S/w.out"
nob rmdir "$S/p.prom"
if poll 60 test -s "$S/p.prom" && kill -0 $wp 2>/dev/null && [ "$(stat -c %a "$S/p.prom")" = 644 ] &&
	grep -q "cannot write $S/p.prom: Is a directory" "$S/w.out"; then
	ok "a cycle that cannot write: said, and the next one writes P (a squat on the old temporary name: no matter)"
else bad "watcher (alive: $(kill -0 $wp 2>/dev/null && echo yes || echo no)): $(cat "$S/w.out")"; fi
kill $wp 2>/dev/null; wait $wp 2>/dev/null
rm -f "$S/in"; mkfifo "$S/in"
env LD_PRELOAD="$LIB" sh -c "echo up > $S/up; read x" marker-cmd-line < "$S/in" &
exec 3>"$S/in"
poll 60 test -s "$S/up"
"$ST" --all --prometheus-file "$S/open.prom"
mount -t proc -o hidepid=2 proc /proc || bad "mount proc hidepid=2"
"$ST" --all --prometheus-file "$S/hid.prom"
exec 3>&-; wait
if grep -q "command=\"sh -c.*marker-cmd-line\"" "$S/open.prom" && grep -q "hostpin_process_live_bytes{pid=\"[0-9]*\".*command=\"\"}" "$S/hid.prom" &&
	! grep -q marker-cmd-line "$S/hid.prom"; then
	ok "/proc mounted hidepid=2: the world-readable Prometheus file shows no command line"
else bad "hidepid: $(grep -h -m1 live_bytes{ "$S/open.prom" "$S/hid.prom")"; fi'


# 10. (issue 40 item 6) HOSTPIN_LEDGER through another user's directory:
# nobody's symbolic link to nobody's directory ($S/lnk -> $S/nd), and
# nobody's directory itself.  Must hold: root makes no ledger in nobody's
# directory either way (nobody could rename it away, or chose where it
# goes), says why, and runs; `hostpin status` and the launcher's --stats
# probe make nothing there either; in root's own sticky directory the
# ledger is made.
sec "HOSTPIN_LEDGER walk" '
nob mkdir -m 755 "$S/nd"; nob ln -s "$S/nd" "$S/lnk"
o1=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$S/lnk/led" HOSTPIN_LOG=info /bin/true 2>&1); r1=$?
o2=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$S/nd/led" HOSTPIN_LOG=info /bin/true 2>&1); r2=$?
HOSTPIN_LEDGER="$S/nd/led" "$ST" --all > /dev/null 2>&1
o3=$(env LD_PRELOAD="$LIB" HOSTPIN_LEDGER="$S/led" HOSTPIN_LOG=info /bin/true 2>&1)
left=$(ls -A "$S/nd")
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ -z "$left" ] && echo "$o1" | grep -q "symbolic link of another user" &&
	echo "$o2" | grep -q "belongs to another user" && echo "$o3" | grep -q "ledger $S/led, slot"; then
	ok "HOSTPIN_LEDGER through nobody'"'"'s link or in nobody'"'"'s directory: refused, said, nothing made there; in root'"'"'s own: made"
else bad "HOSTPIN_LEDGER walk (want rc 0/0, nothing in nobody'"'"'s directory, the reasons): rc $r1/$r2, left: $left"
	echo "$o1"; echo "$o2"; echo "$o3"; fi'

# 11. (issue 40 item 6) nobody pre-creates /tmp/hostpin-0-lib (the
# launcher's directory for a link to a library path with a space), as a
# directory of nobody's and as a link.  Must hold: a root launch from a
# library path with a space still preloads hostpin (through a directory
# of root's), and nothing of nobody's is used.
sec "launcher link directory" "HP='$HP'"'
mount -t tmpfs -o mode=1777 tmpfs /tmp || { bad "mount /tmp"; exit 1; }
mkdir -p "/tmp/r/My Lib"; chmod 755 /tmp/r; cp "$LIB" "/tmp/r/My Lib/libhostpin.so"
for how in dir link; do
	rm -rf /tmp/hostpin-0-lib /tmp/nob
	if [ $how = dir ]; then nob mkdir -m 777 /tmp/hostpin-0-lib; else nob mkdir -m 777 /tmp/nob; nob ln -s /tmp/nob /tmp/hostpin-0-lib; fi
	mount -t tmpfs -o mode=755 tmpfs /run # the runtime directory of root, this namespace only
	out=$(HOSTPIN_LIB="/tmp/r/My Lib/libhostpin.so" "$HP" -l info /bin/true 2>&1); rc=$?
	umount /run
	if [ $rc = 0 ] && echo "$out" | grep -q "ready: backend" && [ -z "$(ls -A /tmp/hostpin-0-lib/)" ]; then
		ok "nobody'"'"'s /tmp/hostpin-0-lib ($how): a root launch from a library path with a space still preloads hostpin"
	else bad "nobody'"'"'s /tmp/hostpin-0-lib ($how) breaks a root launch (rc $rc): $out"; fi
done'

# 12. Links planted at the very names hostpin opens or makes, by another
# user, in a sticky world-writable directory (the kernel's
# fs.protected_symlinks, off on some machines, is not counted on): at
# HOSTPIN_LOG_FILE and HOSTPIN_STATS_FILE, at HOSTPIN_LEDGER, at
# /dev/shm/hostpin-0.d (pointing at a directory of root's, mode 0700, so
# that only the link itself is wrong), and at the name hostpin status
# --prometheus-file writes.  Must hold: no file of root's written through
# a link (each keeps its content), no ledger made where a link points, each
# job exits 0 saying what it refused; the Prometheus file replaces the link
# (a regular file of root's), its target untouched.
sec "links at the names" "ST='$ST'"'
echo secret > "$S/victim"; chmod 644 "$S/victim"; mkdir -m 700 "$S/rootdir"
nob ln -s "$S/victim" "$S/l.log"; nob ln -s "$S/victim" "$S/l.json"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$S/l.log" HOSTPIN_STATS_FILE="$S/l.json" /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(cat "$S/victim")" = secret ] && [ -L "$S/l.log" ] && [ -L "$S/l.json" ] &&
	echo "$out" | grep -q "cannot open HOSTPIN_LOG_FILE=$S/l.log" && echo "$out" | grep -q "cannot open HOSTPIN_STATS_FILE=$S/l.json"; then
	ok "another user'"'"'s links at HOSTPIN_LOG_FILE and HOSTPIN_STATS_FILE: not followed, refused, the job ran"
else bad "links at the log and stats files (rc $rc, victim \"$(cat "$S/victim")\"): $out"; fi
nob ln -s "$S/rootdir/led" "$S/led"
out=$(env LD_PRELOAD="$LIB" HOSTPIN_LOG=info HOSTPIN_LEDGER="$S/led" /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && [ -z "$(ls -A "$S/rootdir")" ] && [ -L "$S/led" ] && ! echo "$out" | grep -q "ledger $S/led, slot"; then
	ok "another user'"'"'s link at HOSTPIN_LEDGER: no ledger made through it, the job ran"
else bad "link at HOSTPIN_LEDGER (rc $rc, in its target: $(ls -A "$S/rootdir")): $out"; fi
rm -rf /dev/shm/hostpin-0.d /dev/shm/hostpin-0.d-* # made by the runs above
nob ln -sT "$S/rootdir" /dev/shm/hostpin-0.d
out=$(env -u HOSTPIN_LEDGER LD_PRELOAD="$LIB" HOSTPIN_LOG=info /bin/true 2>&1); rc=$?
l=$(echo "$out" | sed -n "s/.*: ledger \(.*\), slot.*/\1/p")
if [ $rc = 0 ] && [ -z "$(ls -A "$S/rootdir")" ] && [ -L /dev/shm/hostpin-0.d ] && echo "$l" | grep -q "^/dev/shm/hostpin-0\.d-[0-9]*/ledger" &&
	[ "$(stat -c "%U %a" "$(dirname "$l")")" = "root 700" ]; then
	ok "another user'"'"'s link at /dev/shm/hostpin-0.d to a directory of root'"'"'s: not followed; the ledger in $(dirname "$l"), root'"'"'s, 0700"
else bad "link at /dev/shm/hostpin-0.d (rc $rc, in its target: $(ls -A "$S/rootdir"), ledger $l): $out"; fi
nob ln -s "$S/victim" "$S/q.prom"
out=$("$ST" --all --prometheus-file "$S/q.prom" 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(cat "$S/victim")" = secret ] && [ ! -L "$S/q.prom" ] && [ "$(stat -c "%U %a" "$S/q.prom")" = "root 644" ]; then
	ok "another user'"'"'s link at the --prometheus-file name: replaced by root'"'"'s file, its target untouched"
else bad "link at the Prometheus file (rc $rc, victim \"$(cat "$S/victim")\", $(stat -c "%F %U %a" "$S/q.prom")): $out"; fi'

fi # root
umount "$sd/s" 2>/dev/null
rm -rf "$sd"

# 8. The launcher: a library path with a space, a colon and non-ASCII; -e
# values holding '=', leading dashes, non-ASCII; a command whose path
# holds a backslash.  Must hold: hostpin is loaded (no ld.so error), each
# value reaches the environment unchanged, the command runs.
ld=$(mktemp -d)
mkdir -p "$ld/My Projects/vé:nv"
cp "$LIB" "$ld/My Projects/vé:nv/libhostpin.so"
out=$(HOSTPIN_LIB="$ld/My Projects/vé:nv/libhostpin.so" "$HP" -l info /bin/true 2>&1); rc=$?
if [ $rc = 0 ] && echo "$out" | grep -q "ready: backend" && ! echo "$out" | grep -q "ld.so"; then
	ok "launcher: a library path with a space, a colon and non-ASCII is preloaded"
else bad "launcher, library path with a space (rc $rc): $out"; fi
out=$(cd "$ld" && "$HP" -e "HOSTPIN_STATS_FILE=$ld/run=1 é.json" -e 'HOSTPIN_LOG_FILE=-x=\y.log' /usr/bin/env 2>&1); rc=$?
if [ $rc = 0 ] && [ -s "$ld/run=1 é.json" ] && [ -e "$ld/-x=\\y.log" ] &&
	echo "$out" | grep -qxF "HOSTPIN_STATS_FILE=$ld/run=1 é.json"; then
	ok "launcher: -e values with '=', a leading dash, a backslash and non-ASCII reach the job unchanged"
else bad "launcher -e values (rc $rc): $out"; fi
printf '#!/bin/sh\nprintf "%%s|" "$@"\n' > "$ld/a\\b -c"; chmod +x "$ld/a\\b -c"
out=$("$HP" "$ld/a\\b -c" -x 'é\n' '--' 2>&1); rc=$?
if [ $rc = 0 ] && [ "$out" = '-x|é\n|--|' ]; then ok "launcher: a command path with a backslash and a space, arguments with dashes and backslashes"
else bad "launcher command with a backslash (rc $rc): $out"; fi
out=$("$HP" -b "$(printf 'x\033[2Jy\nhostpin: forged')" true 2>&1)
if ! printf '%s' "$out" | grep -q "$(printf '\033')" && [ "$(echo "$out" | wc -l)" = 1 ]; then
	ok "launcher: a bad value with an escape sequence and a newline is printed on one line, escaped"
else bad "launcher message not escaped: $(printf '%s' "$out" | cat -v)"; fi
rm -rf "$ld"

# 9. Knob messages: an invalid value and an unknown HOSTPIN_* name holding
# a newline and escape sequences.  Must hold: one line per message (no
# forged "hostpin[1]:" line), no escape byte reaches the output.
out=$(env $P HOSTPIN_THRESHOLD="$(printf '1M\nhostpin[1]: forged \033[31m')" "$(printf 'HOSTPIN_X\033]0;t\007Y=1')" /bin/true 2>&1)
if ! echo "$out" | grep -q '^hostpin\[1\]: forged' && ! printf '%s' "$out" | grep -q "$(printf '\033')" &&
	echo "$out" | grep -qF '1M\nhostpin[1]: forged \x1b[31m' && echo "$out" | grep -qF 'HOSTPIN_X\x1b]0;t\x07Y'; then
	ok "knob messages: a value's newline and escape sequences, an unknown name's, printed escaped"
else bad "knob messages not escaped: $(printf '%s' "$out" | cat -v)"; fi
# A backslash is doubled: a value holding a backslash and an n must not
# print as a newline's escape (the two read alike before).
out=$(env $P HOSTPIN_THRESHOLD='a\nb' /bin/true 2>&1)
out2=$(HOSTPIN_STATS_FILE='/x\ny' "$HP" --show 2>&1)
if echo "$out" | grep -qF 'HOSTPIN_THRESHOLD="a\\nb"' && echo "$out2" | grep -qF 'HOSTPIN_STATS_FILE="/x\\ny"'; then
	ok "knob messages and --show: a backslash in a value printed doubled (not read as an escaped newline)"
else bad "a backslash not doubled: $(echo "$out" | head -1) / $(echo "$out2" | grep STATS_FILE)"; fi
out=$(HOSTPIN_STATS_FILE="$(printf '/x\nHOSTPIN_BACKEND=cuda\033[1m')" "$HP" --show 2>&1)
if ! printf '%s' "$out" | grep -q "$(printf '\033')" && ! echo "$out" | grep -q '^HOSTPIN_BACKEND=cuda' &&
	echo "$out" | grep -qF 'HOSTPIN_STATS_FILE="/x\nHOSTPIN_BACKEND=cuda\x1b[1m"'; then
	ok "hostpin --show: a string knob's newline and escape sequence printed escaped"
else bad "--show not escaped: $(printf '%s' "$out" | cat -v | grep -A1 STATS_FILE)"; fi

# 13. The tree's own tools and tests make no name in a shared directory
# (/tmp, /dev/shm, /run, /var/tmp) that another user can make first: no
# shell redirection into a fixed or pid-built name there (mktemp's are
# fine), no C program that builds one from its pid (mkstemp/mkdtemp are
# fine).  Read from the tree, nothing run.  Left out: tests/fuzz (its own
# helpers), lines that plant a squat as nobody on purpose (runuser, nob),
# tests/unit/check_log.c (a %p expansion compared, no file made).  Must
# hold: no such line.
squats=$(cd "$top" && {
	grep -rnE '[0-9&]?[<>]>?[[:space:]]*"?/(tmp|dev/shm|run|var/tmp)/[A-Za-z0-9]' scripts Makefile tests 2>/dev/null
	grep -rnE '/(tmp|dev/shm|run|var/tmp)/[A-Za-z0-9._-]*(\$\$|\$BASHPID)' scripts Makefile tests 2>/dev/null
	grep -rnE '"/(tmp|dev/shm|run|var/tmp)/[^"]*%d.*getpid' scripts tests registry preload status --include=*.c --include=*.h
} | grep -v '^tests/fuzz/\|^tests/unit/check_log\.c:\|runuser\|nob \|^[^:]*:[0-9]*:[[:space:]]*#' | grep -v '^Binary' | sort -u)
[ -z "$squats" ] && ok "no tool or test of the tree writes a fixed or pid-built name in /tmp, /dev/shm, /run or /var/tmp" ||
	{ bad "names another user could make first:"; echo "$squats" | sed 's/^/    /'; }

# Sourced by tests/preload/run.sh.
# ---- faults of the node-wide ledger (issue 22, items 1-4): a full
# /dev/shm, another user's files in /dev/shm, HOSTPIN_LEDGER naming a file
# of the user's, processes sharing a ledger from other PID namespaces or
# unable to open /proc.  Each fault is injected for real (as root: a
# private tmpfs on /dev/shm in `unshare -m`, `runuser -u nobody`,
# `unshare -p -f --mount-proc`, descriptors used up under `prlimit`);
# without root they print SKIP. ----
ST=$top/build/hostpin-status
build ledger_holder ledger_holder.c
LH=$B/ledger_holder
d=$(mktemp -d)
chmod 755 "$d"
MB=$((1 << 20))
# the name of the ledger file in its directory (ledger-vV-S)
LN=$(env -u HOSTPIN_LEDGER $P HOSTPIN_LOG=info /bin/true 2>&1 | sed -n 's|.*: ledger .*/\(ledger[^,/]*\), slot.*|\1|p')
# what each scenario needs from this shell, for `unshare ... bash -c`
# the library as user nobody can read it: the clone may sit under a
# directory only root can enter (/root, mode 0700)
cp "$LIB" "$d/libhostpin.so"
hdr="set -u; LIB='$LIB'; WLIB='$d/libhostpin.so'; ST='$ST'; LH='$LH'; d='$d'; B='$B'; LN='${LN:-ledger}'"
isroot=0
[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null && isroot=1

if [ $isroot = 0 ]; then
	echo "SKIP: not root (or no unshare -m): full /dev/shm, other users' files, PID namespaces and RLIMIT_NOFILE not injected"
else

# 1. Injected: /dev/shm a tmpfs of 256 KiB, full before any hostpin process
# starts.  Must hold: /bin/true and python3 under the preload exit 0 (no
# SIGBUS), each saying once (one line) that there is no ledger.
out=$(unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=256k,mode=1777 tmpfs /dev/shm || { echo "mount failed"; exit; }
	dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null
	env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" /bin/true 2>&1; echo "rc=$?"
	env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" /usr/bin/python3 -c "print(1)" 2>&1; echo "rc=$?"' 2>&1)
if [ "$(echo "$out" | grep -c '^rc=0$')" = 2 ] && [ "$(echo "$out" | grep -c '^hostpin')" = 2 ] &&
	[ "$(echo "$out" | grep -c '^hostpin.*no ledger.*full /dev/shm')" = 2 ]; then
	ok "full /dev/shm at start: /bin/true and python3 exit 0, one line each: $(echo "$out" | grep -m1 '^hostpin')"
else bad "full /dev/shm at start (want rc=0 twice, one 'no ledger' line each):"; echo "$out" | sed 's/^/    /'; fi

# 2. Injected: /dev/shm a tmpfs of 1 MiB; one process makes the ledger,
# then /dev/shm is filled, then 14 processes start and stay.  Must hold:
# all 14 attach to the ledger (hostpin status counts 14) and exit 0, and
# none says anything.
out=$(unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=1m,mode=1777 tmpfs /dev/shm || { echo "mount failed"; exit; }
	env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" /bin/true || echo "first rc $?"
	dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null
	rm -f "$d/in" "$d/ups"; mkfifo "$d/in"; : > "$d/ups"
	pids=""
	for i in $(seq 14); do
		env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" sh -c "echo up; read x; exit 0" < "$d/in" >> "$d/ups" 2>&1 &
		pids="$pids $!"
	done
	exec 3>"$d/in"
	ups "$d/ups" 14 || echo "not all up"
	echo "status: $(env -u HOSTPIN_LEDGER "$ST" --all | tail -1)"
	exec 3>&-
	for p in $pids; do wait $p; echo "rc=$?"; done
	grep -v "^up$" "$d/ups"' 2>&1)
if [ "$(echo "$out" | grep -c '^rc=0$')" = 14 ] && echo "$out" | grep -q "^status: 14 processes" &&
	[ "$(echo "$out" | grep -vc '^rc=0$\|^status:')" = 0 ]; then
	ok "/dev/shm full after the ledger was made: 14 processes started at once attach, say nothing, exit 0"
else bad "/dev/shm full later (want 14 rc=0, 14 processes, nothing else):"; echo "$out" | sort | uniq -c | sed 's/^/    /'; fi

# 3. Injected: user nobody creates root's default ledger names first
# (/dev/shm/hostpin-0.d, /dev/shm/hostpin-0).  Must hold: root's processes
# say nothing, exit 0, and share one ledger elsewhere in /dev/shm, in a
# directory of root's mode 0700.
out=$(unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=4m,mode=1777 tmpfs /dev/shm || { echo "mount failed"; exit; }
	runuser -u nobody -- sh -c "mkdir /dev/shm/hostpin-0.d; : > /dev/shm/hostpin-0; chmod 666 /dev/shm/hostpin-0"
	env -u HOSTPIN_LEDGER -u HOSTPIN_LOG LD_PRELOAD="$LIB" /bin/true 2>&1; echo "rc=$?"
	for i in 1 2; do
		l=$(env -u HOSTPIN_LEDGER LD_PRELOAD="$LIB" HOSTPIN_LOG=info /bin/true 2>&1 | sed -n "s/.*: ledger \(.*\), slot.*/\1/p")
		echo "ledger=$l $(stat -c "%U %a" "$(dirname "${l:-/nonexistent/x}")" 2>&1)"
	done' 2>&1)
l1=$(echo "$out" | sed -n 1,2p | grep -c '^rc=0$')
ls=$(echo "$out" | grep '^ledger=' | sort -u)
if [ "$(echo "$out" | head -1)" = rc=0 ] && [ "$(echo "$ls" | wc -l)" = 1 ] &&
	echo "$ls" | grep -q '^ledger=/dev/shm/hostpin-0\.d-[0-9a-f]*/ledger-v[0-9]*-[0-9]* root 700$'; then
	ok "another user's /dev/shm/hostpin-0.d and hostpin-0: no warning, one ledger of root's elsewhere (${ls#ledger=})"
else bad "names taken by nobody (want rc=0 alone, then one ledger in a root 0700 directory):"; echo "$out" | sed 's/^/    /'; fi

# 4. Injected: user nobody runs processes whose command lines hold escape
# sequences, with ledgers at root's default names; root runs one too, in a
# ledger of its own.  Must hold: root's `hostpin status` prints no escape
# byte, shows none of nobody's processes, and shows its own command line
# escaped (\x1b).
out=$(unshare -m bash -c "$hdr"'
	mount -t tmpfs -o size=4m,mode=1777 tmpfs /dev/shm || { echo "mount failed"; exit; }
	esc=$(printf "\033]0;owned\007\033[2Jx")
	rm -f "$d/in" "$d/ups"; mkfifo "$d/in"; : > "$d/ups"; chmod 666 "$d/ups"
	runuser -u nobody -- mkdir /dev/shm/hostpin-0.d
	for l in /dev/shm/hostpin-0 "/dev/shm/hostpin-0.d/$LN"; do
		runuser -u nobody -- env LD_PRELOAD="$WLIB" HOSTPIN_LEDGER=$l sh -c "echo up; read x" "nobody$esc" < "$d/in" >> "$d/ups" 2>&1 &
	done
	env -u HOSTPIN_LEDGER LD_PRELOAD="$LIB" sh -c "echo up; read x" "root$esc" < "$d/in" >> "$d/ups" 2>&1 &
	exec 3>"$d/in"
	ups "$d/ups" 3 || echo "not all up"
	# hostpin ran in nobody processes: their two ledgers exist, owned by nobody
	for l in /dev/shm/hostpin-0 "/dev/shm/hostpin-0.d/$LN"; do [ -s "$l" ] && stat -c "other-ledger %u" "$l"; done
	env -u HOSTPIN_LEDGER "$ST" --all 2>&1
	exec 3>&-; wait' 2>&1)
if ! printf '%s' "$out" | grep -q $'\033' && ! echo "$out" | grep -q nobody &&
	[ "$(echo "$out" | grep -c '^other-ledger 65534$')" = 2 ] &&
	echo "$out" | grep -qF 'root\x1b]0;owned\x07\x1b[2Jx' && echo "$out" | grep -q '^1 process;'; then
	ok "hostpin status as root: nobody's ledgers not read, its own command line escaped ($(echo "$out" | grep -o 'root\\x1b[^ ]*'))"
else bad "hostpin status prints escape sequences or another user's processes (or nobody's two ledgers are missing):"; printf '%s\n' "$out" | cat -v | sed 's/^/    /'; fi

fi # root

# 5. Injected: HOSTPIN_LEDGER names an existing 1 MiB file of zeros, and a
# file of zeros of exactly a ledger's size, mode 0600.  Must hold: /bin/true
# exits 0 and neither file changes (hostpin writes only into files it made
# and marked); hostpin status does not change them either.
LEDGER_SIZE=$(env HOSTPIN_LEDGER="$d/real" $P /bin/true && stat -c %s "$d/real")
head -c $MB /dev/zero > "$d/zeros"
head -c "${LEDGER_SIZE:-4096}" /dev/zero > "$d/zeros2"; chmod 600 "$d/zeros2"
s1=$(md5sum < "$d/zeros"); s2=$(md5sum < "$d/zeros2")
env $P HOSTPIN_LEDGER="$d/zeros" /bin/true 2>/dev/null; r1=$?
env $P HOSTPIN_LEDGER="$d/zeros2" /bin/true 2>/dev/null; r2=$?
HOSTPIN_LEDGER="$d/zeros" "$ST" --all >/dev/null 2>&1; HOSTPIN_LEDGER="$d/zeros2" "$ST" --all >/dev/null 2>&1
if [ $r1 = 0 ] && [ $r2 = 0 ] && [ "$(md5sum < "$d/zeros")" = "$s1" ] && [ "$(md5sum < "$d/zeros2")" = "$s2" ]; then
	ok "HOSTPIN_LEDGER naming a 1 MiB file of zeros, or zeros of a ledger's size (${LEDGER_SIZE} bytes): left unchanged"
else bad "HOSTPIN_LEDGER at a file of the user's: rc $r1/$r2, changed: $([ "$(md5sum < "$d/zeros")" = "$s1" ] || echo 1MiB) $([ "$(md5sum < "$d/zeros2")" = "$s2" ] || echo ledger-size)"; fi

if [ $isroot = 1 ] && unshare -p -f --mount-proc true 2>/dev/null; then
# 6. Injected: two processes, each pid 1 in its own PID namespace
# (`unshare -p -f --mount-proc`), share one ledger, each pinning 64 MiB.
# Must hold: two live, distinct slots (hostpin status from the parent
# namespace shows both as PID 1), the node total 128 MiB, still so after
# status ran from the parent namespace; both exit 0; afterwards the total
# is 0 (no counter wrapped).
out=$(bash -c "$hdr"'
	export HOSTPIN_LEDGER=$d/pidns
	ns_hold 2
	echo "total1 $("$ST" --total pinned_bytes_now)"
	"$ST" --all | awk "\$1 == 1 && /ledger_holder 64/" | sed "s/^/row /"
	echo "total2 $("$ST" --total pinned_bytes_now)"
	exec 3>&-
	for p in $ns_pids; do wait $p; echo "rc=$?"; done
	echo "total3 $("$ST" --total pinned_bytes_now)"' 2>&1)
want=$((128 * MB))
if echo "$out" | grep -q "^total1 $want$" && echo "$out" | grep -q "^total2 $want$" &&
	[ "$(echo "$out" | grep -c '^row .*64.0M *64.0M')" = 2 ] && [ "$(echo "$out" | grep -c '^rc=0$')" = 2 ] &&
	echo "$out" | grep -q "^total3 0$"; then
	ok "two pid-1 processes in their own PID namespaces share a ledger: two live slots, node total 128 MiB, status from the parent namespace marks neither dead, total 0 after"
else bad "PID namespaces sharing a ledger (want total1/total2 $want, two rows, rc=0 twice, total3 0):"; echo "$out" | sed 's/^/    /'; fi

# 7. Injected: a process under `prlimit --nofile=32` that uses up its
# descriptors (EMFILE: it cannot open /proc/PID/stat) and then pins over
# the node cap (HOSTPIN_NODE_MAX_PINNED=100M), which makes it look for dead
# slots, while a live process holds 64 MiB.  Must hold: the live process's
# slot stays live (status shows it, the node total stays 64 MiB).
out=$(bash -c "$hdr"'
	export HOSTPIN_LEDGER=$d/nofile
	hold; p=$hold_pid
	prlimit --nofile=32 env LD_PRELOAD="$LIB" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \
		HOSTPIN_NODE_MAX_PINNED=100M "$LH" 64 nofile; echo "nofile rc=$?"
	echo "total $("$ST" --total pinned_bytes_now)"
	"$ST" --all | awk -v p=$p "\$1 == p" | sed "s/^/row /"
	exec 3>&-; wait $p; echo "rc=$?"' 2>&1)
if echo "$out" | grep -q "^nofile rc=0$" && echo "$out" | grep -q "^total $((64 * MB))$" &&
	echo "$out" | grep -q '^row .*64.0M' && echo "$out" | grep -q '^rc=0$'; then
	ok "a process at RLIMIT_NOFILE (cannot open /proc) looking for dead slots leaves a live one live (node total 64 MiB)"
else bad "RLIMIT_NOFILE reaper (want nofile rc=0, total $((64 * MB)), the holder's row):"; echo "$out" | sed 's/^/    /'; fi
else
	echo "SKIP: not root or no unshare -p: PID namespaces and the RLIMIT_NOFILE reaper not injected"
fi
rm -rf "$d"
unset LH LN LEDGER_SIZE hdr isroot MB

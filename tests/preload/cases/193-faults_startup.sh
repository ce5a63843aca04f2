# Sourced by tests/preload/run.sh.
# ---- start-up under a crowded environment (issue 40, item 10): thousands
# of unknown HOSTPIN_* variables (a job script's exports gone wrong). ----
# 1. Injected: 1,500 unknown HOSTPIN_* variables, in a process whose parent
# ran without hostpin.  Must hold: /proc/PPID/environ is opened once (not
# once per variable: start-up stays linear), 16 of them are named, one line
# counts the other 1,484, exit 0.
out=$(python3 -c '
import os, sys
e = dict(os.environ)
e.update({"HOSTPIN_NOSUCH_%d" % i: "1" for i in range(1500)})
os.execvpe(sys.argv[1], sys.argv[1:], e)' strace -f -qq -E LD_PRELOAD="$LIB" -e trace=openat -o /dev/stderr /bin/true 2>&1; echo "rc=$?")
opens=$(echo "$out" | grep -c 'openat(.*/proc/[0-9]*/environ')
named=$(echo "$out" | grep -c '^hostpin.*unknown variable HOSTPIN_NOSUCH_')
more=$(echo "$out" | grep -c '^hostpin.*1484 more unknown HOSTPIN_\* variables ignored')
if [ "$opens" = 1 ] && [ "$named" = 16 ] && [ "$more" = 1 ] && echo "$out" | grep -q '^rc=0$'; then
	ok "1,500 unknown HOSTPIN_* variables: the parent's environment read once, 16 named, one line for the other 1,484"
else bad "1,500 unknown HOSTPIN_* variables (want 1 open of /proc/PPID/environ, 16 named, 1 'more' line, rc=0): $opens, $named, $more, $(echo "$out" | tail -1)"; fi

# 2. (item 9) Injected: HOSTPIN_LIB relative (./libhostpin.so) and bare
# (libhostpin.so), the launcher run from the library's directory, the
# command changing directory before it starts a child.  Must hold: the
# LD_PRELOAD the command sees starts with '/', the child after the chdir
# loads hostpin (no "cannot be preloaded"), exit 0.
d=$(mktemp -d)
cp "$LIB" "$d/libhostpin.so"
for rel in ./libhostpin.so libhostpin.so; do
	out=$(cd "$d" && HOSTPIN_LIB=$rel "$top/build/hostpin" sh -c 'echo "pl=$LD_PRELOAD"; cd /; sh -c "echo child"' 2>&1; echo "rc=$?")
	if echo "$out" | grep -q "^pl=$d/libhostpin.so" && echo "$out" | grep -q '^child$' &&
		! echo "$out" | grep -q 'cannot be preloaded' && echo "$out" | grep -q '^rc=0$'; then
		ok "HOSTPIN_LIB=$rel: made absolute ($(echo "$out" | sed -n 's/^pl=//p' | cut -d: -f1)), a child after a chdir loads it"
	else bad "HOSTPIN_LIB=$rel (want LD_PRELOAD=$d/libhostpin.so..., the child loads it, rc 0):"; echo "$out" | sed 's/^/    /'; fi
done
rm -rf "$d"

# 3. (item 7) Injected, as root: /dev/shm a tmpfs of 256 KiB (smaller than
# a ledger; a container's /dev/shm filled up), no ledger yet, then
# `hostpin --stats /bin/true`.  Must hold: the launcher says up front
# there will be no merged report and why (no room), and the process prints
# its own report; exit 0.
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
	out=$(unshare -m sh -c 'mount -t tmpfs -o size=256k,mode=1777 tmpfs /dev/shm || exit 9
		env -u HOSTPIN_LEDGER "$1" --stats /bin/true 2>&1; echo "rc=$?"' sh "$top/build/hostpin")
	if echo "$out" | grep -q '^hostpin: --stats: no merged report: .*no room.*each process prints its own report' &&
		echo "$out" | grep -q '^hostpin\[[0-9]*\]: report' && echo "$out" | grep -q '^rc=0$'; then
		ok "hostpin --stats with a 256 KiB /dev/shm: said up front, per-process reports instead"
	else bad "hostpin --stats with a too small /dev/shm (want the reason up front and a per-process report, rc 0):"; echo "$out" | sed 's/^/    /'; fi
else
	echo "SKIP: not root or no unshare -m: a small /dev/shm not injected"
fi

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

# Sourced by tests/preload/run.sh.
# ---- hostpin's own writes never kill the program (issue 40, item 4): a
# log line or the JSON report crossing `ulimit -f` (SIGXFSZ), the exit
# report written to a pipe whose reader has gone (SIGPIPE).  Each fault is
# made for real; the program's own disposition of those signals is kept
# (a write of the program's own still gets its signal). ----
d=$(mktemp -d)
# 1. Injected: RLIMIT_FSIZE 1 KiB, the log file already 1 KiB long, every
# message logged (HOSTPIN_LOG=info).  Must hold: /bin/true exits 0 (not 153).
head -c 1024 /dev/zero > "$d/log"
rc=$(bash -c 'ulimit -f 1; env "$1" HOSTPIN_LOG=info HOSTPIN_LOG_FILE="$2" /bin/true 2>/dev/null; echo $?' sh "$P" "$d/log")
# 2. Injected: RLIMIT_FSIZE 0, so the JSON report (HOSTPIN_STATS_FILE)
# cannot be written.  Must hold: exit 0, and its failure said on stderr.
# (stderr a pipe: a file could not be written either)
out2=$(bash -c 'ulimit -f 0; env "$1" HOSTPIN_STATS_FILE="$2" /bin/true 2>&1; echo "rc=$?"' sh "$P" "$d/stats.json")
rc2=$(echo "$out2" | sed -n 's/^rc=//p')
# 3. Injected: HOSTPIN_STATS=1 with stderr a pipe whose reader closed
# before the program started (python: `| head` gone); the child's SIGPIPE
# is SIG_DFL.  Must hold: exit 0 (not 141).
rc3=$(python3 - "$LIB" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(["/bin/true"], stderr=w, env=dict(os.environ, LD_PRELOAD=sys.argv[1], HOSTPIN_STATS="1"))
print(p.returncode)
PY
)
# 4. The program's own write to the closed pipe still gets its SIGPIPE
# (hostpin restores what it blocked): rc 141, as without hostpin.
rc4=$(python3 - "$LIB" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(["sh", "-c", "echo x >&2; echo after"], stderr=w, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, LD_PRELOAD=sys.argv[1], HOSTPIN_STATS="1"))
print(p.returncode if p.returncode >= 0 else 128 - p.returncode)
PY
)
if [ "$rc" = 0 ] && [ "$rc2" = 0 ] && echo "$out2" | grep -q '^hostpin.*HOSTPIN_STATS_FILE.*File too large'  && [ "$rc3" = 0 ] && [ "$rc4" != 0 ]; then
	ok "hostpin's writes past ulimit -f (log, JSON report) and to a closed stderr pipe: rc 0 (the program's own write to the pipe: rc $rc4)"
else bad "own writes kill the program: log past ulimit -f rc $rc (want 0), JSON report rc $rc2 (want 0, a line: $(echo "$out2" | head -c 300)), closed stderr pipe rc $rc3 (want 0), the program's own write rc $rc4 (want not 0)"; fi
rm -rf "$d"

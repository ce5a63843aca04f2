# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- a real node: memory cgroups, ranks, the ledger, `hostpin status`,
# the merged report, launchers ----
# Registration states are checked here: blocks are registered at
# allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests the Nth copy.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
ST=$top/build/hostpin-status
HP=$top/build/hostpin

# A memory cgroup of 3 GiB holding this shell's child, v1 or v2; echoes the
# directory, or nothing if neither can be made.
mkcg() {
	local g
	if [ -w /sys/fs/cgroup/memory ] && g=/sys/fs/cgroup/memory/hostpin-test-$$ &&
		mkdir -p "$g" 2>/dev/null && echo 3G > "$g/memory.limit_in_bytes" 2>/dev/null; then
		echo 0 > "$g/memory.swappiness" 2>/dev/null; echo "$g"; return
	fi
	rmdir "$g" 2>/dev/null
	local v2
	v2=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
	if [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
		echo +memory > "$v2/cgroup.subtree_control" 2>/dev/null
		g=$v2/hostpin-test-$$
		if mkdir -p "$g" 2>/dev/null && echo 3G > "$g/memory.max" 2>/dev/null; then
			echo 0 > "$g/memory.swap.max" 2>/dev/null; echo "$g"; return
		fi
		rmdir "$g" 2>/dev/null
	fi
}
cg=$(mkcg)
if [ -z "$cg" ]; then
	echo "SKIP: cannot create a v1 or v2 memory cgroup (not root, or no memory controller): the 3 GiB job not run"
else
	log=$(mktemp)
	# without hostpin first: the job itself fits
	out=$(sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		timeout 600 env FAKE_CUDA_LOG="$log" "$B/job_prog" peak 2>&1); ra=$?
	out=$(sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		timeout 600 env $P HOSTPIN_LOG=info HOSTPIN_LEDGER="$log.ledger" FAKE_CUDA_LOG="$log" "$B/job_prog" peak 2>&1); rb=$?
	base=$(echo "$out" | grep -o "memory base [^;]*" | head -1)
	if [ $ra -eq 0 ] && [ $rb -eq 0 ] && echo "$base" | grep -q "memory base 3.0 GiB: cgroup"; then
		ok "a 2.1 GiB device job in a 3 GiB memory cgroup completes with the defaults ($base)"
	else bad "3 GiB cgroup job (rc $ra without hostpin, $rb with; ${base:-no base line}): $(echo "$out" | grep -v HOSTPIN_ | tail -3)"; fi
	rm -f "$log" "$log.ledger"
	rmdir "$cg" 2>/dev/null
fi

# Injected hierarchies (HOSTPIN_SYSFS_ROOT, test only: /proc/self/cgroup,
# mountinfo and the cgroup files read under it): cgroup v2 on this v1 host.
# cgtree DIR CGROUP-LINES MOUNTINFO-LINE FILE=VALUE...
cgtree() {
	local r=$1; mkdir -p "$r/proc/self"
	printf '%b' "$2" > "$r/proc/self/cgroup"
	printf '%s\n' "$3" > "$r/proc/self/mountinfo"
	shift 3
	local kv
	for kv in "$@"; do
		mkdir -p "$r/$(dirname "${kv%%=*}")"; printf '%s\n' "${kv#*=}" > "$r/${kv%%=*}"
	done
}
# cgbase NAME DIR WANT: the base (and CPUs) HOSTPIN_LOG=info reports
cgbase() {
	local out
	out=$(env $P HOSTPIN_LOG=info HOSTPIN_SYSFS_ROOT="$2" /bin/true 2>&1 | grep -o "memory base .*")
	case "$out" in
	*"$3"*) ok "$1: $out" ;;
	*) bad "$1: got '${out:-no base line}', want '$3'" ;;
	esac
}
r=$(mktemp -d)
MI2='31 24 0:27 / /sys/fs/cgroup rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate'
cgtree "$r/v2" '0::/job.slice/job-7/step\n' "$MI2" \
	sys/fs/cgroup/job.slice/memory.max=max sys/fs/cgroup/job.slice/job-7/memory.max=2147483648 \
	sys/fs/cgroup/job.slice/job-7/step/memory.max=max sys/fs/cgroup/job.slice/job-7/step/cpu.max='50000 100000'
cgbase "cgroup v2: the smallest memory.max up the hierarchy, cpu.max" "$r/v2" \
	"memory base 2.0 GiB: cgroup v2 /sys/fs/cgroup/job.slice/job-7/memory.max (RAM"
cgbase "cgroup v2: CPUs from cpu.max (50000 100000)" "$r/v2" "; CPUs 1"
# a container: the mount's root is the container's own cgroup; nothing
# above the mount point is read
cgtree "$r/ctr" '0::/kubepods/pod9/c1\n' \
	'40 30 0:27 /kubepods/pod9/c1 /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw' \
	sys/fs/cgroup/memory.max=1610612736 sys/memory.max=1048576
cgbase "cgroup v2 in a container (namespaced mount root)" "$r/ctr" \
	"memory base 1.5 GiB: cgroup v2 /sys/fs/cgroup/memory.max"
# a hybrid host: v1 memory controller, v2 without one
cgtree "$r/hy" '5:memory:/user.slice\n4:cpu,cpuacct:/user.slice\n0::/user.slice\n' \
	"$(printf '%s\n%s\n%s' "$MI2" '32 24 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory' \
		'33 24 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct')" \
	sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes=1073741824 \
	sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_quota_us=-1 sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_period_us=100000
cgbase "cgroup v1 memory.limit_in_bytes on a hybrid host" "$r/hy" \
	"memory base 1.0 GiB: cgroup v1 /sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes"
# no limit anywhere: RAM
cgtree "$r/none" '0::/\n' "$MI2" sys/fs/cgroup/cpu.max='max 100000'
cgbase "cgroup v2 without a limit: RAM" "$r/none" "RAM, no lower cgroup limit"
rm -rf "$r"

# Four ranks free 256 MiB each, then wait as at a barrier.
d=$(mktemp -d)
export HOSTPIN_LEDGER=$d/ledger
rsum() { # summed VmRSS in KiB of the pids given
	local t=0 p r
	for p in "$@"; do r=$(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null); t=$((t + ${r:-0})); done
	echo $t
}
ranks() { # MB mode(hostpin|plain): start four ranks; pids in $pids, stdin writers open
	pids=""
	for i in 0 1 2 3; do
		rm -f "$d/in$i" "$d/out$i"; mkfifo "$d/in$i" "$d/out$i"
		if [ "$2" = hostpin ]; then
			env $P RANK=$i LOCAL_RANK=$i HOSTPIN_NODE_CACHE=384M HOSTPIN_CACHE_DECAY_MS=3000 \
				FAKE_CUDA_LOG=/dev/null "$B/job_prog" rank "$1" < "$d/in$i" > "$d/out$i" 2>&1 &
		else
			env RANK=$i FAKE_CUDA_LOG=/dev/null "$B/job_prog" rank "$1" < "$d/in$i" > "$d/out$i" 2>&1 &
		fi
		pids="$pids $!"
		eval "exec {w$i}>\"$d/in$i\"; exec {r$i}<\"$d/out$i\""
	done
	freed=0
	for i in 0 1 2 3; do eval "read -r -t 300 line <&\$r$i"; [ "${line:-}" = freed ] && freed=$((freed + 1)); done
}
ranks_end() {
	for i in 0 1 2 3; do eval "exec {w$i}>&- {r$i}<&-"; done
	wait $pids 2>/dev/null
}
ranks 256 plain
plain_rss=$(rsum $pids)
ranks_end
t0=$SECONDS
ranks 256 hostpin
cached_at_free=$($ST --total cached_bytes)
rss_freed=$(rsum $pids)
status_out=$("$HP" status)
n4=$(echo "$status_out" | awk '$2 ~ /^[0-3]$/ && /job_prog rank/' | wc -l)
if [ $freed = 4 ] && [ "$n4" = 4 ]; then ok "hostpin status shows the four ranks of the running job"
else bad "hostpin status: $n4 ranks of 4 (freed $freed)"; echo "$status_out" | sed 's/^/    /'; fi
# --watch: frames (each with its header; into a pipe, no clear-screen
# codes: 175-first_hour), as many as --count
watch_out=$("$HP" status --watch 1 --count 2); wrc=$?
frames=$(printf '%s' "$watch_out" | grep -c '^ *PID ')
n8=$(echo "$watch_out" | awk '$2 ~ /^[0-3]$/ && /job_prog rank/' | wc -l)
if [ $wrc -eq 0 ] && [ "$frames" = 2 ] && [ "$n8" = 8 ]; then
	ok "hostpin status --watch 1 --count 2: two frames, the four ranks in each"
else bad "hostpin status --watch: rc $wrc, $frames frames, $n8 rank lines (want 2, 8)"; fi
budget=$((384 << 20))
under() { [ "$($ST --total cached_bytes)" -le $budget ]; }
idle() { [ "$($ST --total cached_bytes)" -eq 0 ] && [ "$($ST --total pinned_bytes_now)" -eq 0 ] &&
	[ "$(rsum $pids)" -lt $((64 * 1024)) ]; }
if [ "$cached_at_free" -le $budget ] || poll 60 under; then
	ok "four ranks: cached bytes under the node budget (384 MiB) once freed ($((cached_at_free >> 20)) MiB)"
else bad "four ranks: node cache $(($($ST --total cached_bytes) >> 20)) MiB over the 384 MiB budget"; fi
if poll 120 idle; then
	ok "four ranks: idle caches given back after the decay time (3 s; took $((SECONDS - t0)) s): RSS of the 4 ranks $((rss_freed >> 10)) MiB once freed, $(($(rsum $pids) >> 10)) MiB after; without hostpin $((plain_rss >> 10)) MiB"
else bad "four ranks: still cached $(($($ST --total cached_bytes) >> 20)) MiB, RSS $(($(rsum $pids) >> 10)) MiB (without hostpin $((plain_rss >> 10)) MiB)"; fi
ranks_end

# One merged report for a job, a process killed by SIGTERM counted.
mkfifo "$d/k_in" "$d/k_out"
out=$("$HP" --stats -- sh -c '
	"$1" work >/dev/null; "$1" work >/dev/null
	"$1" rank 64 < "$2/k_in" > "$2/k_out" & k=$!
	exec 3>"$2/k_in" 4<"$2/k_out"; read -r l <&4
	kill -TERM $k; wait $k; echo "killed $k rc $?"
	true' sh "$B/job_prog" "$d" 2>&1)
killed=$(echo "$out" | sed -n 's/^killed \([0-9]*\) rc 143$/\1/p')
nrep=$(echo "$out" | grep -c "job report:")
if [ -n "$killed" ] && [ "$nrep" = 1 ] && echo "$out" | grep -q "job report: 3 processes" &&
	echo "$out" | grep -q "pid $killed: " && ! echo "$out" | grep -q "hostpin\[.*report"; then
	ok "hostpin --stats: one merged report of the 3 processes that used hostpin (the SIGTERM-killed $killed included, the shells left out)"
else bad "merged report (killed '${killed}', $nrep reports):"; echo "$out" | sed 's/^/    /' | head -20; fi
unset HOSTPIN_LEDGER
rm -rf "$d"

# Launchers under `hostpin --`: output identical to a run without hostpin.
PY=/usr/bin/python3
if $PY -c "import torch.distributed" 2>/dev/null; then
	tr=$(mktemp -d)
	cat > "$tr/ddp.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")
r = dist.get_rank()
torch.manual_seed(r)
x = torch.randn(1 << 20)
y = x.clone()
dist.all_reduce(y)
big = torch.ones(4 << 20) * (r + 1)
dist.all_reduce(big)
# one write: lines of the two ranks never interleave
os.write(1, f"rank {r}: {float(y.sum()):.4f} {float(big.mean()):.1f}\n".encode())
dist.destroy_process_group()
PY
	run_tr() { (cd "$tr" && timeout 300 "$@" $PY -m torch.distributed.run --nproc_per_node=2 \
		--master_port=$((29500 + $$ % 1000)) --redirects=2 --tee=2 ddp.py 2>/dev/null | grep "rank [01]:" | sort); }
	a=$(run_tr env); b=$(run_tr "$HP" --)
	if [ -n "$a" ] && [ "$(echo "$a" | wc -l)" = 2 ] && [ "$a" = "$b" ]; then
		ok "torch.distributed.run, 2 ranks (gloo) under hostpin --: identical output"
	else bad "torch.distributed.run under hostpin: '$a' vs '$b'"; fi
	rm -rf "$tr"
else bad "python3-torch missing: torch.distributed.run not tested"; fi
if command -v mpirun >/dev/null; then
	mp=$(mktemp -d)
	cat > "$mp/mpi.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	size_t n = (size_t)64 << 20;
	unsigned char *p = malloc(n);
	memset(p, r ? r[0] : 'x', n);
	unsigned long s = 0;
	for (size_t i = 0; i < n; i += 4096) s += p[i];
	free(p);
	printf("rank %s: %lu\n", r ? r : "?", s);
	return 0;
}
C
	$CC -O1 -o "$mp/mpi" "$mp/mpi.c"
	run_mpi() { timeout 300 "$@" mpirun --allow-run-as-root --oversubscribe -np 2 "$mp/mpi" 2>&1 | sort; }
	a=$(run_mpi env); b=$(run_mpi "$HP" --)
	if [ "$(echo "$a" | grep -c '^rank [01]:')" = 2 ] && [ "$a" = "$b" ]; then
		ok "mpirun -np 2 under hostpin --: identical output"
	else bad "mpirun under hostpin: '$a' vs '$b'"; fi
	rm -rf "$mp"
else bad "openmpi-bin missing: mpirun not tested"; fi
P=$P_SAVE

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Slurm (issue 25, item 2): a hostpin job through srun on a real,
# single-node Slurm (Debian's slurmctld, slurmd, munge) ----
# Injected: a private cluster started here and stopped at the end (also by
# an EXIT trap): munged with its own key and socket, slurmctld -D and
# slurmd -D from a slurm.conf in a temp dir (SLURM_CONF; no systemd, no
# cgroup plugin: proctrack/linuxproc, task/none), a private ledger
# (HOSTPIN_LEDGER).  The job is the README's recipe
#   hostpin --stats -- srun -n 4 python3 job.py
# (the launcher outside srun: one job, HOSTPIN_JOB its pid, reaches the four
# tasks through srun's default --export=ALL with LD_PRELOAD; the other
# order, srun -n 4 hostpin --stats, starts four launchers, four jobs, four
# reports, which is checked too so the README's reason stays true).  The
# ranks hold three 64M numpy buffers (pinned by mlock) until the test
# creates a file; nothing waits on time.
# Must hold: four ranks, SLURM_PROCID 0..3, four slots in the ledger while
# they run (hostpin status: 4 rows, ranks 0-3); one merged report of 4
# processes; scancel of a running job ends it and the report of its 4
# processes still arrives (the launcher stays to print it); under a site's
# --export=NONE (SLURM_EXPORT_ENV) the ranks get no preload and the report
# says so, and srun --export=LD_PRELOAD,HOSTPIN_JOB,... brings it back; the
# README's sbatch --wrap line prints the report into the job's output; no
# slot is left in the ledger; no daemon, step or rank is left behind and the
# temp dir is gone.  Without root or the packages: SKIP.  About 20 s.
sl=
sl_pids=()
sl_nostep() {
	! pgrep -x slurmstepd | xargs -r ps -o stat= -p | grep -qv '^Z'
}
sl_stop() {
	[ -n "$sl" ] || return 0
	SLURM_CONF=$sl/slurm.conf scancel --quiet -u "$(id -un)" 2>/dev/null
	local p
	# the steps' slurmstepd end after their tasks (a bound, not a wait)
	poll 30 sl_nostep
	for p in "${sl_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${sl_pids[@]}"; do wait "$p" 2>/dev/null; done
	[ -s "$sl/munge/pid" ] && kill "$(cat "$sl/munge/pid")" 2>/dev/null
	# munged removes its pid file as it goes; the limit only bounds a hang
	poll 30 test ! -e "$sl/munge/pid" || kill -9 "$(cat "$sl/munge/pid")" 2>/dev/null
	rm -rf "$sl"
	sl= sl_pids=()
}
sl_why=
if [ "$(id -u)" != 0 ]; then sl_why="not root"
else
	for t in munged slurmctld slurmd srun sinfo scancel squeue; do
		command -v "$t" > /dev/null || PATH=$PATH:/usr/sbin command -v "$t" > /dev/null ||
			{ sl_why="no $t (Debian: slurmctld slurmd munge slurm-client; make check-cluster installs them, no service started)"; break; }
	done
fi
if [ -n "$sl_why" ]; then
	echo "SKIP: $sl_why: no Slurm cluster started"
else
	sl_t0=$SECONDS
	# make check inside a Slurm job: its SLURM_* (job id, SLURM_CONF)
	# belong to the outer cluster; put back after the case
	sl_env=$(export -p | grep '^declare -x SLURM_')
	for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done
	trap sl_stop EXIT
	sl=$(mktemp -d /tmp/hostpin-slurm.XXXXXX)
	chmod 755 "$sl"
	mkdir -p "$sl/munge" "$sl/state" "$sl/spool" "$sl/d1" "$sl/d2" "$sl/d3"
	chmod 700 "$sl/munge"
	head -c 1024 /dev/urandom > "$sl/munge/key"
	chmod 400 "$sl/munge/key"
	slh=$(hostname -s)
	slmem=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
	# ports of their own, away from a real cluster's 6817/6818
	slport=$((20000 + $$ % 20000))
	cat > "$sl/slurm.conf" <<-EOF
		ClusterName=hostpintest
		SlurmctldHost=$slh(127.0.0.1)
		SlurmctldPort=$slport
		SlurmdPort=$((slport + 1))
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		AuthInfo=socket=$sl/munge/sock
		CredType=cred/munge
		MpiDefault=none
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		JobAcctGatherType=jobacct_gather/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		ReturnToService=2
		StateSaveLocation=$sl/state
		SlurmdSpoolDir=$sl/spool
		SlurmctldPidFile=$sl/slurmctld.pid
		SlurmdPidFile=$sl/slurmd.pid
		SlurmctldLogFile=$sl/slurmctld.log
		SlurmdLogFile=$sl/slurmd.log
		NodeName=$slh NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$slmem State=UNKNOWN
		PartitionName=debug Nodes=ALL Default=YES State=UP OverSubscribe=FORCE
	EOF
	export SLURM_CONF=$sl/slurm.conf
	PATH=$PATH:/usr/sbin munged --key-file="$sl/munge/key" --socket="$sl/munge/sock" \
		--pid-file="$sl/munge/pid" --log-file="$sl/munge/log" --seed-file="$sl/munge/seed" --force
	PATH=$PATH:/usr/sbin slurmctld -D > "$sl/ctld.out" 2>&1 &
	sl_pids+=($!)
	PATH=$PATH:/usr/sbin slurmd -D -N "$slh" > "$sl/d.out" 2>&1 &
	sl_pids+=($!)
	sl_idle() { [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; }
	if ! poll 60 sl_idle; then
		bad "slurm: the node never became idle: $(sinfo -h -o %T 2>&1)"
		tail -5 "$sl/slurmctld.log" "$sl/slurmd.log" "$sl/ctld.out" "$sl/d.out" 2>&1 | sed 's/^/    /'
	else
		cat > "$sl/job.py" <<-'EOF'
			# a rank: three large buffers, held until the test creates DIR/go
			import os, select, sys
			import numpy as np
			d = sys.argv[1]
			bufs = [np.ones(64 << 20, dtype=np.uint8) for _ in range(3)]
			open(os.path.join(d, "up." + os.environ["SLURM_PROCID"]), "w").close()
			while not os.path.exists(os.path.join(d, "go")):
			    select.select([], [], [], 0.05)
			print("rank", os.environ["SLURM_PROCID"], "of", os.environ["SLURM_NTASKS"], sum(int(b[0]) for b in bufs))
		EOF
		H=$top/build/hostpin
		slj=(-b mlock --threshold 1M)
		sl_up() { [ "$(ls "$1" | grep -c '^up\.')" = 4 ]; }
		# srun -O: four tasks on however few CPUs; the limit is a safety net
		HOSTPIN_LEDGER=$sl/ledger timeout 300 "$H" "${slj[@]}" --stats -- \
			srun -J hp-ok -O -n 4 /usr/bin/python3 "$sl/job.py" "$sl/d1" > "$sl/o1" 2>&1 &
		sl_j=$!
		if poll 120 sl_up "$sl/d1"; then
			st=$(HOSTPIN_LEDGER=$sl/ledger "$top/build/hostpin-status")
			ranks=$(echo "$st" | awk 'NF > 5 && $1 ~ /^[0-9]+$/ && $2 != "processes;" { print $2 }' | sort -n | tr '\n' ' ')
			[ "$ranks" = "0 1 2 3 " ] && echo "$st" | grep -q '^4 processes' &&
				ok "slurm: hostpin status shows the 4 running ranks (SLURM_PROCID 0-3) in the ledger" ||
				{ bad "slurm: hostpin status while the job runs (ranks '$ranks')"; echo "$st" | sed 's/^/    /'; }
		else bad "slurm: the 4 ranks never started"; tail -5 "$sl/o1" | sed 's/^/    /'; fi
		touch "$sl/d1/go"
		wait $sl_j; rc=$?
		n=$(grep -c '^rank [0-3] of 4 3$' "$sl/o1")
		nr=$(grep -c 'job report' "$sl/o1")
		if [ $rc -eq 0 ] && [ "$n" = 4 ] && [ "$nr" = 1 ] && grep -q 'job report: 4 processes' "$sl/o1" &&
			[ "$(grep -c '^hostpin:   pid [0-9]* rank [0-3]: peak pinned 192.0M' "$sl/o1")" = 4 ] &&
			grep -q 'sum of per-process peaks 768.0M; 12 registrations' "$sl/o1"; then
			ok "slurm: hostpin --stats -- srun -n 4: four ranks, one merged report of 4 processes"
		else bad "slurm: hostpin --stats -- srun -n 4 (rc $rc, $n ranks, $nr reports)"; sed 's/^/    /' "$sl/o1"; fi
		# scancel while the ranks hold their buffers
		HOSTPIN_LEDGER=$sl/ledger timeout 300 "$H" "${slj[@]}" --stats -- \
			srun -J hp-cancel -O -n 4 /usr/bin/python3 "$sl/job.py" "$sl/d2" > "$sl/o2" 2>&1 &
		sl_j=$!
		if poll 120 sl_up "$sl/d2"; then
			scancel -n hp-cancel
			wait $sl_j; rc=$?
			if [ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q '^rank ' "$sl/o2" &&
				grep -q 'job report: 4 processes' "$sl/o2" &&
				[ "$(grep -c '^hostpin:   pid [0-9]* rank [0-3]: peak pinned 192.0M' "$sl/o2")" = 4 ]; then
				ok "slurm: scancel stops the job (rc $rc) and its report of the 4 ranks still arrives"
			else bad "slurm: scancel (rc $rc)"; sed 's/^/    /' "$sl/o2"; fi
		else bad "slurm: the ranks of the job to cancel never started"; touch "$sl/d2/go"; wait $sl_j; fi
		# the other order: a launcher per task, a report per task
		touch "$sl/d3/go"
		out=$(HOSTPIN_LEDGER=$sl/ledger timeout 300 srun -J hp-each -O -n 4 \
			"$H" "${slj[@]}" --stats -- /usr/bin/python3 "$sl/job.py" "$sl/d3" 2>&1); rc=$?
		[ $rc -eq 0 ] && [ "$(echo "$out" | grep -c 'job report: 1 process')" = 4 ] &&
			ok "slurm: srun -n 4 hostpin --stats runs four launchers: four reports of 1 process (why the README puts hostpin outside srun)" ||
			{ bad "slurm: srun -n 4 hostpin --stats (rc $rc)"; echo "$out" | sed 's/^/    /'; }
		# a site's --export=NONE: the ranks lose the preload (no report),
		# unless srun names what hostpin needs (README's line)
		sl_exp() { # DIR EXPORT-ENV SRUN-OPTS...
			local d=$1 ee=$2; shift 2
			touch "$sl/$d/go"
			HOSTPIN_LEDGER=$sl/ledger SLURM_EXPORT_ENV=$ee timeout 300 "$H" "${slj[@]}" --stats -- \
				srun -J hp-exp -O -n 4 "$@" /usr/bin/python3 "$sl/job.py" "$sl/$d" 2>&1
		}
		mkdir -p "$sl/d4" "$sl/d5"
		out=$(sl_exp d4 NONE); rc=$?
		out2=$(sl_exp d5 NONE --export=LD_PRELOAD,HOSTPIN_JOB,HOSTPIN_LEDGER,HOSTPIN_BACKEND,HOSTPIN_THRESHOLD,PATH); rc2=$?
		if [ $rc -eq 0 ] && echo "$out" | grep -q 'no process of the job used hostpin' &&
			[ $rc2 -eq 0 ] && echo "$out2" | grep -q 'job report: 4 processes'; then
			ok "slurm: under --export=NONE the ranks get no preload; --export=LD_PRELOAD,HOSTPIN_JOB,... brings the report back"
		else bad "slurm: --export=NONE (rc $rc, rc $rc2)"; echo "$out"; echo "$out2" | sed 's/^/    /'; fi
		# the README's batch line
		mkdir -p "$sl/d6"; touch "$sl/d6/go"
		HOSTPIN_LEDGER=$sl/ledger timeout 300 sbatch --wait -Q -J hp-batch -O -n 4 -o "$sl/o6" \
			--wrap "$H ${slj[*]} --stats -- srun /usr/bin/python3 $sl/job.py $sl/d6"; rc=$?
		if [ $rc -eq 0 ] && [ "$(grep -c '^rank [0-3] of 4 3$' "$sl/o6")" = 4 ] && grep -q 'job report: 4 processes' "$sl/o6"; then
			ok "slurm: sbatch -n 4 --wrap 'hostpin --stats -- srun python3 job.py': the report in the job's output"
		else bad "slurm: sbatch (rc $rc)"; sed 's/^/    /' "$sl/o6" 2>&1; fi
		st=$(HOSTPIN_LEDGER=$sl/ledger "$top/build/hostpin-status" --all)
		left=$(echo "$st" | awk 'NF > 5 && $1 ~ /^[0-9]+$/ && $2 != "processes;"' | wc -l)
		[ "$left" = 0 ] && ok "slurm: no slot left in the ledger" ||
			{ bad "slurm: $left slots left in the ledger"; echo "$st" | sed 's/^/    /'; }
	fi
	slpat=$sl mine=("${sl_pids[@]}")
	sl_stop
	trap - EXIT
	unset SLURM_CONF
	eval "$sl_env"
	# zombies left to a container's pid 1 that reaps nothing are not running
	# this case's own daemons (another Slurm on the machine is not ours)
	leftp=$({ pgrep -f "$slpat"; printf '%s\n' "${mine[@]}"; } |
		xargs -r ps -o pid=,stat=,args= -p | awk '$2 !~ /^Z/')
	[ -z "$leftp" ] && [ ! -e "$slpat" ] && ok "slurm: daemons stopped, no process left, temp dir removed ($((SECONDS - sl_t0)) s)" ||
		{ bad "slurm: left behind"; echo "$leftp" | sed 's/^/    /'; }
fi

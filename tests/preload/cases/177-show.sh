# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- hostpin --show and the HOSTPIN_LOG=info dump (issue 26, item 5) ----
# One settings list, from the library: effective values (after the memory
# base, the CPU limit and the fallbacks), sizes as people read them, the
# test-only knobs left out; --show prints it, HOSTPIN_LOG=info logs it.
H=$top/build/hostpin
sd=$(mktemp -d)
# An injected machine (HOSTPIN_SYSFS_ROOT: /proc/self/cgroup, mountinfo and
# the cgroup files are read under it): a cgroup v2 job with memory.max
# 2 GiB and cpu.max of one CPU.
show_cg() { # DIR MEMORY.MAX CPU.MAX
	mkdir -p "$1/proc/self" "$1/sys/fs/cgroup/job"
	printf '0::/job\n' > "$1/proc/self/cgroup"
	echo '31 24 0:27 / /sys/fs/cgroup rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate' > "$1/proc/self/mountinfo"
	echo "$2" > "$1/sys/fs/cgroup/job/memory.max"
	echo "$3" > "$1/sys/fs/cgroup/job/cpu.max"
}
show_cg "$sd/cg" 2147483648 '100000 100000'

# -- human sizes; the options given are in it; nothing in raw bytes --
# Injected: -t 4M.  Must hold: exit 0, a first line naming the version,
# HOSTPIN_THRESHOLD=4.0M, HOSTPIN_MMAP_MIN=2.0M (its default), no value of
# 7 or more digits.
out=$("$H" -t 4M --show 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | head -1 | grep -q "^hostpin $(cat "$top/VERSION"): backend " &&
	echo "$out" | grep -qx "HOSTPIN_THRESHOLD=4.0M" && echo "$out" | grep -qx "HOSTPIN_MMAP_MIN=2.0M" &&
	! echo "$out" | grep -qE '^HOSTPIN_[A-Z_]+=[0-9]{7,}'; then
	ok "hostpin --show: human sizes (HOSTPIN_THRESHOLD=4.0M, HOSTPIN_MMAP_MIN=2.0M), no raw bytes"
else bad "hostpin --show human sizes (rc $rc): $(echo "$out" | head -8)"; fi

# -- the caps from the memory base of an injected cgroup, the CPU limit --
# Injected: the 2 GiB / one-CPU cgroup above, -m 25%.  Must hold: the cap
# is the share of the cgroup's base, not of RAM, and says so; pre-faulting
# gets 1 thread (the CPUs), not the configured 4; the first line says the
# base and the CPUs.
out=$("$H" -m 25% -e HOSTPIN_SYSFS_ROOT="$sd/cg" --show 2>&1); rc=$?
want_mp="HOSTPIN_MAX_PINNED=512.0M (25% of the memory base 2.0G: cgroup v2 /sys/fs/cgroup/job/memory.max)"
want_nc="HOSTPIN_NODE_MAX_PINNED=1.0G (50% of the memory base 2.0G: cgroup v2 /sys/fs/cgroup/job/memory.max)"
if [ $rc -eq 0 ] && echo "$out" | grep -qxF "$want_mp" && echo "$out" | grep -qxF "$want_nc"; then
	ok "hostpin --show: caps from an injected cgroup's memory base ($want_mp)"
else bad "hostpin --show caps (rc $rc): want '$want_mp' and '$want_nc': $(echo "$out" | grep MAX_PINNED)"; fi
if echo "$out" | grep -qxF "HOSTPIN_PREFAULT_THREADS=1 (asked: 4; CPUs 1)" &&
	echo "$out" | head -1 | grep -q "memory base 2.0G (cgroup v2 /sys/fs/cgroup/job/memory.max); CPUs 1$"; then
	ok "hostpin --show: the effective pre-fault threads (1) beside CPUs 1, not the configured 4"
else bad "hostpin --show prefault threads: $(echo "$out" | grep -e PREFAULT -e '^hostpin ')"; fi
# -- the copy threads staging would start (speed.c, issue 43) --
# Injected: the one-CPU cgroup.  Must hold: auto sized to the link
# (HOSTPIN_STAGE_LINK=55) says it chose 1 thread here (the CPUs), the link,
# the memcpy rate measured, the CPUs; not sized (HOSTPIN_STAGE_LINK=0, the
# tests' setting): 1 here, and why; a count asked for is shown as asked.
a=$("$H" -e HOSTPIN_SYSFS_ROOT="$sd/cg" -e HOSTPIN_STAGE_LINK=55 --show 2>&1 | grep "^HOSTPIN_STAGE_THREADS=")
b=$("$H" -e HOSTPIN_SYSFS_ROOT="$sd/cg" -e HOSTPIN_STAGE_LINK=0 --show 2>&1 | grep "^HOSTPIN_STAGE_THREADS=")
c=$("$H" -e HOSTPIN_STAGE_LINK=55 -e HOSTPIN_STAGE_THREADS=3 --show 2>&1 | grep "^HOSTPIN_STAGE_THREADS=")
if echo "$a" | grep -qE '^HOSTPIN_STAGE_THREADS=0 \(auto \(1 here\): link 55 GB/s \(HOSTPIN_STAGE_LINK\), memcpy [0-9]+\.[0-9] GB/s a core, so [0-9]+ for the link; CPUs 1, processes staging on this node [0-9]+' &&
	[ "$b" = "HOSTPIN_STAGE_THREADS=0 (auto: 1 here; not sized by the link's speed: HOSTPIN_STAGE_LINK=0)" ] &&
	echo "$c" | grep -q '^HOSTPIN_STAGE_THREADS=3 (asked (3 here): link 55 GB/s'; then
	ok "hostpin --show: the copy threads auto chose here (1: the CPUs), the link and memcpy rate; asked for: as asked"
else bad "hostpin --show copy threads: '$a' / '$b' / '$c'"; fi
# -- test-only knobs are left out (here set, and still not listed) --
if echo "$out" | grep -q "^HOSTPIN_THRESHOLD=" && ! echo "$out" | grep -q "SYSFS_ROOT"; then
	ok "hostpin --show leaves out the test-only HOSTPIN_SYSFS_ROOT"
else bad "hostpin --show lists test-only knobs: $(echo "$out" | grep SYSFS_ROOT)"; fi

# -- a fallback: huge pages asked for where the THP mode is never --
# Injected: the THP mode file under HOSTPIN_SYSFS_ROOT, madvise then never.
# Must hold: HOSTPIN_HUGEPAGES=1 under madvise; 0, saying why, under never.
mkdir -p "$sd/cg/sys/kernel/mm/transparent_hugepage"
echo 'always [madvise] never' > "$sd/cg/sys/kernel/mm/transparent_hugepage/enabled"
a=$("$H" -e HOSTPIN_SYSFS_ROOT="$sd/cg" --show 2>&1 | grep "^HOSTPIN_HUGEPAGES=")
echo 'always madvise [never]' > "$sd/cg/sys/kernel/mm/transparent_hugepage/enabled"
b=$("$H" -e HOSTPIN_SYSFS_ROOT="$sd/cg" --show 2>&1 | grep "^HOSTPIN_HUGEPAGES=")
if [ "$a" = "HOSTPIN_HUGEPAGES=1" ] && [ "$b" = "HOSTPIN_HUGEPAGES=0 (asked: 1; the transparent huge page mode is not always or madvise)" ]; then
	ok "hostpin --show: HOSTPIN_HUGEPAGES as the THP mode allows (madvise: 1; never: 0, asked 1)"
else bad "hostpin --show huge pages: madvise '$a', never '$b'"; fi

# -- HOSTPIN_LOG=info logs the same list --
# Injected: the same cgroup and options, a program run with the preload at
# info.  Must hold: its HOSTPIN_* lines are --show's (at the same level).
show=$("$H" -l info -m 25% -e HOSTPIN_SYSFS_ROOT="$sd/cg" --show 2>/dev/null | tail -n +2)
info=$(env $P HOSTPIN_LOG=info HOSTPIN_MAX_PINNED=25% HOSTPIN_SYSFS_ROOT="$sd/cg" /bin/true 2>&1 |
	sed -n 's/^hostpin\[[0-9]*\]: \(HOSTPIN_[A-Z_]*=\)/\1/p')
if [ -n "$show" ] && [ "$show" = "$info" ] && echo "$info" | grep -qxF "$want_mp" &&
	echo "$info" | grep -qxF "HOSTPIN_PREFAULT_THREADS=1 (asked: 4; CPUs 1)" && ! echo "$info" | grep -q SYSFS_ROOT; then
	ok "HOSTPIN_LOG=info logs the list --show prints ($(echo "$info" | wc -l) lines)"
else bad "HOSTPIN_LOG=info and --show differ: $(diff <(echo "$show") <(echo "$info") | head -8)"; fi

# -- one order everywhere: --show's knobs (so HOSTPIN_LOG=info's) by name,
# as docs/knobs.md's table and hostpin(7)'s ENVIRONMENT list them (there
# HOSTPIN_LIB and HOSTPIN_COMPAT_ROOT, the launcher's and make compat's,
# come first) --
names=$(echo "$show" | sed 's/=.*//')
readme_order=$(sed -n 's/^| `\(HOSTPIN_[A-Z0-9_]*\)` |.*/\1/p' "$top/docs/knobs.md" | grep -vx HOSTPIN_SYSFS_ROOT)
man_order=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH BACKENDS/p' "$top/man/hostpin-reference.7" | awk '/^\.TP/ { getline; print }' |
	sed -n 's/^\.B \(HOSTPIN_[A-Z0-9_]*\)$/\1/p' |
	awk '!seen[$0]++' | grep -xF -f <(echo "$readme_order"))
if [ -n "$names" ] && [ "$names" = "$(echo "$names" | LC_ALL=C sort)" ] && [ "$names" = "$readme_order" ] &&
	[ "$names" = "$man_order" ]; then
	ok "--show, HOSTPIN_LOG=info, docs/knobs.md's table and hostpin(7) list the $(echo "$names" | wc -l) knobs in one order (by name)"
else bad "knob order: --show/docs/knobs.md: $(diff <(echo "$names") <(echo "$readme_order") | head -4 | tr '\n' ' '); --show/man: $(diff <(echo "$names") <(echo "$man_order") | head -4 | tr '\n' ' ')"; fi

# -- --show runs no program, prints no report, tells a library that did
# not load --
# Injected: HOSTPIN_STATS=1 (a report at exit would follow the list), a
# command after --show, a HOSTPIN_LIB that is not a library.
out=$("$H" -e HOSTPIN_STATS=1 --show 2>&1); rc=$?
if [ $rc -eq 0 ] && ! echo "$out" | grep -q "report (backend" && echo "$out" | grep -qx "HOSTPIN_STATS=1"; then
	ok "hostpin --show with HOSTPIN_STATS=1: the list alone, no report"
else bad "hostpin --show with HOSTPIN_STATS=1 (rc $rc): $(echo "$out" | tail -3)"; fi
out=$("$H" --show /bin/echo ran 2>&1); rc=$?
[ $rc -eq 2 ] && ! echo "$out" | grep -qx ran && echo "$out" | grep -q "^hostpin: --show runs no command" &&
	ok "hostpin --show with a command: a usage error, the command not run" || bad "hostpin --show cmd (rc $rc): $out"
echo "not a library" > "$sd/notlib.so"
out=$(HOSTPIN_LIB="$sd/notlib.so" "$H" --show 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "^hostpin: $sd/notlib.so did not load" &&
	ok "hostpin --show with a library that does not load: says so, exit 1" || bad "hostpin --show bad lib (rc $rc): $out"
out=$("$H" -e HOSTPIN_DISABLE=1 --show 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | head -1 | grep -q ": pass-through (HOSTPIN_DISABLE=1);" &&
	ok "hostpin --show under HOSTPIN_DISABLE=1 says pass-through" || bad "hostpin --show disabled (rc $rc): $(echo "$out" | head -2)"
# -- what 0 means (issue 42, item 6) --
# Injected: the one-CPU cgroup above, then nothing.  Must hold: the 0 of
# HOSTPIN_STAGE_THREADS says auto and the count it gives here (1 under one
# CPU), HOSTPIN_REGISTER_CHUNK's 0 says auto and whole blocks; a number
# given is shown bare.
a=$("$H" -e HOSTPIN_SYSFS_ROOT="$sd/cg" --show 2>&1)
b=$("$H" -e HOSTPIN_STAGE_THREADS=3 -e HOSTPIN_REGISTER_CHUNK=64M --show 2>&1)
# (the count may carry the link's note after it: HOSTPIN_STAGE_LINK)
if echo "$a" | grep -qE '^HOSTPIN_STAGE_THREADS=0 \(auto: 1 here[;)]' &&
	echo "$a" | grep -qxF "HOSTPIN_REGISTER_CHUNK=0B (auto: whole blocks, in pieces of at most 1.0G)" &&
	echo "$b" | grep -qE '^HOSTPIN_STAGE_THREADS=3($| \(3 here)' && echo "$b" | grep -qxF "HOSTPIN_REGISTER_CHUNK=64.0M"; then
	ok "hostpin --show says what 0 means: auto (1 thread under one CPU; whole blocks)"
else bad "hostpin --show auto: $(echo "$a$b" | grep -e STAGE_THREADS -e REGISTER_CHUNK)"; fi
rm -rf "$sd"

# Sourced by tests/preload/run.sh.
# ---- the node-wide ledger across PID namespaces (issue 22, item 4): a
# process SIGKILLed in a PID namespace of its own (a container sharing
# IPC with the host) no longer counts against node caps once it is dead,
# seen from the root namespace, by the library and by `hostpin status`
# (each process keeps an open-file-description lock on its slot, which the
# kernel drops when it dies).  Injected for real, as root: `unshare -p -f
# --mount-proc`, SIGKILL; without root it prints SKIP.  And a Level Zero
# driver that frees an imported buffer inside its own call (case 4). ----
ST=$top/build/hostpin-status
build ledger_holder ledger_holder.c
LH=$B/ledger_holder
d=$(mktemp -d)
chmod 755 "$d"
MB=$((1 << 20))
hdr="set -u; LIB='$LIB'; ST='$ST'; LH='$LH'; d='$d'"
# kids PID: the children of PID (host pids)
kids() { cat /proc/$1/task/*/children 2>/dev/null; }
export -f kids
# ns_kill: SIGKILL ns_hold's holder (pid 1 of its namespace) from the root
# namespace, wait for its unshare, close the fifo
ns_kill() { kill -KILL $(kids $ns_pids); wait $ns_pids; exec 3>&-; }
export -f ns_kill

if [ "$(id -u)" != 0 ] || ! unshare -p -f --mount-proc true 2>/dev/null; then
	echo "SKIP: not root or no unshare -p: processes of other PID namespaces not injected"
else

# 1. Injected: a process, pid 1 of its own PID namespace, pins 64 MiB
# (mlock backend) into a ledger, then is SIGKILLed from the root
# namespace.  Must hold: `hostpin status` in the root namespace counts 0
# pinned bytes and shows no row for it.
out=$(bash -c "$hdr"'
	export HOSTPIN_LEDGER=$d/ns1
	ns_hold 1
	echo "before $("$ST" --total pinned_bytes_now)"
	ns_kill
	echo "after $("$ST" --total pinned_bytes_now)"
	echo "rows $("$ST" --all | grep -c "ledger_holder 64")"' 2>&1)
if echo "$out" | grep -q "^before $((64 * MB))$" && echo "$out" | grep -q "^after 0$" &&
	echo "$out" | grep -q "^rows 0$"; then
	ok "a process SIGKILLed in its own PID namespace: hostpin status in the root namespace counts 0 bytes, no row"
else bad "SIGKILL in another PID namespace, hostpin status (want before $((64 * MB)), after 0, rows 0):"; echo "$out" | sed 's/^/    /'; fi

# 2. Injected: as 1, then (before any `hostpin status`) a process of the
# root namespace pins 64 MiB under HOSTPIN_NODE_MAX_PINNED=100M.  Must
# hold: its block is pinned (its row shows 64.0M pinned: not over the
# node cap, the dead process's 64 MiB no longer count), the node total is
# its 64 MiB alone.
out=$(bash -c "$hdr"'
	export HOSTPIN_LEDGER=$d/ns2
	ns_hold 1
	ns_kill
	hold HOSTPIN_NODE_MAX_PINNED=100M; p=$hold_pid
	echo "total $("$ST" --total pinned_bytes_now)"
	"$ST" --all | awk -v p=$p "\$1 == p" | sed "s/^/row /"
	exec 3>&-; wait $p; echo "rc=$?"' 2>&1)
if echo "$out" | grep -q "^total $((64 * MB))$" && echo "$out" | grep -q '^row .*64.0M *64.0M' &&
	echo "$out" | grep -q "^rc=0$"; then
	ok "after a SIGKILL in another PID namespace, a root-namespace process under HOSTPIN_NODE_MAX_PINNED=100M pins 64 MiB (node total 64 MiB)"
else bad "SIGKILL in another PID namespace, node cap (want total $((64 * MB)), its row 64.0M pinned, rc=0):"; echo "$out" | sed 's/^/    /'; fi

# 3. Injected: in a PID namespace of its own (under a shell, pid 1), a
# process pins 64 MiB and forks a child that lives on; the parent is
# SIGKILLed.  Must hold: the parent's slot is dead (the child, which
# inherited the parent's descriptor of the ledger, took a description of
# its own and so does not keep the parent's lock), the child's live: one
# row of `ledger_holder 64 fork` left.
out=$(bash -c "$hdr"'
	export HOSTPIN_LEDGER=$d/ns3
	rm -f "$d/in" "$d/ups"; mkfifo "$d/in"; : > "$d/ups"
	unshare -p -f --mount-proc sh -c "env LD_PRELOAD=\"$LIB\" HOSTPIN_BACKEND=mlock HOSTPIN_PIN_AFTER=0 \"\$1\" 64 fork; echo sh-done; cat >/dev/null" sh "$LH" < "$d/in" >> "$d/ups" 2>&1 &
	u=$!
	exec 3>"$d/in"
	until [ "$(grep -c "^held$\|^child$" "$d/ups")" = 2 ] || ! kill -0 $u 2>/dev/null; do sleep 0.2; done
	echo "rows-before $("$ST" --all | grep -c "ledger_holder 64 fork")"
	sh=$(kids $u); parent=$(kids $sh)
	kill -KILL $parent
	until grep -q "^sh-done$" "$d/ups" || ! kill -0 $u 2>/dev/null; do sleep 0.2; done
	echo "rows-after $("$ST" --all | grep -c "ledger_holder 64 fork")"
	exec 3>&-; wait $u' 2>&1)
if echo "$out" | grep -q "^rows-before 2$" && echo "$out" | grep -q "^rows-after 1$"; then
	ok "a forked child in another PID namespace does not keep its SIGKILLed parent's slot live (2 rows, then 1)"
else bad "fork, then SIGKILL of the parent in another PID namespace (want rows-before 2, rows-after 1):"; echo "$out" | sed 's/^/    /'; fi

fi # root

# ---- a driver that frees an imported buffer inside one of its own calls
# (issue 22, item 15's remaining piece) ----
if [ -z "${HP_NO_LEVEL_ZERO:-}" ]; then
# 4. Injected: the fake Level Zero driver allocates 32 MiB with malloc
# inside zeContextCreate and frees it INSIDE zeContextDestroy
# (FAKE_ZE_CTX_FREE_IN_CALL=1), as a real driver frees under its own lock;
# under the defaults and HOSTPIN_PIN_AFTER=0.  Since issue 41 that buffer
# is the driver's (the next allocator's, never hostpin's nor imported).
# Must hold: no call into the driver from inside that free (the fake
# records one as VIOLATION reentrant-call, checked by zelog; a real driver
# would deadlock); nothing stays imported at exit and every release
# succeeded; under PIN_AFTER=0 the program's own block is imported and its
# import released after zeContextDestroy, at its free.
for pa in 2 0; do
	lazy=; [ $pa = 0 ] || lazy=HP_EXPECT_LAZY=1
	zerun "driver frees its own buffer inside zeContextDestroy: no call into it from there [PIN_AFTER=$pa]" 0 \
		FAKE_ZE_CTX_ALLOC=malloc FAKE_ZE_CTX_FREE_IN_CALL=1 HOSTPIN_PIN_AFTER=$pa $lazy -- ctx_alloc
	[ $pa = 0 ] && { echo "$ZE_LOG_KEEP" | awk '/CALL zeContextDestroy/ {d = 1} / RELEASE / && d {r = 1} END {exit !r}' ||
		bad "level zero ctx free in call (PIN_AFTER=$pa): the program's import was not released after zeContextDestroy"; }
done
fi
rm -rf "$d"
unset LH hdr MB

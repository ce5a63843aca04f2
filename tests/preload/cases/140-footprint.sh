# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- what hostpin pins and commits: registration at the Nth copy, untouched
# memory, huge pages, NUMA placement ----
build footprint footprint.c -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F"

# Registration at the Nth copy: every copy entry point counts, sync and async,
# however found (linked, cuGetProcAddress, cudaGetDriverEntryPoint, dlsym).
for nth in "" 1 3 0; do
	log=$(mktemp)
	out=$(timeout 120 env $P HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" \
		${nth:+HOSTPIN_PIN_AFTER=$nth} "$B/footprint" nth "${nth:-2}" 2>&1); rc=$?
	if [ $rc -eq 0 ] && fakelog "$log"; then ok "registration at copy ${nth:-2} (HOSTPIN_PIN_AFTER=${nth:-default}): every sync and async path counts"
	else bad "registration at copy ${nth:-2}: rc $rc: $out"; fi
	rm -f "$log"
done

# The copy count follows the buffer: moved by realloc (mremap of hostpin's
# block) or by the program's mremap, or cut by a partial munmap.  (The
# program looks for the registration right after the copy that earns it:
# inside that copy, HOSTPIN_REGISTER_BACKGROUND=0; case 184 has the
# background.)
log=$(mktemp)
out=$(timeout 120 env $P HOSTPIN_CACHE=0 HOSTPIN_REGISTER_BACKGROUND=0 FAKE_CUDA_LOG="$log" "$B/footprint" carry 2>&1); rc=$?
if [ $rc -eq 0 ] && fakelog "$log"; then ok "registration counts the buffer's copies across realloc, mremap and a partial unmap"
else bad "copy count across moves: rc $rc: $out"; fi
rm -f "$log"

# Untouched memory stays uncommitted: a sparse 8 GiB mapping and a 4 GiB
# calloc touched at 1% stay near 1% resident, with and without a device (the
# fake driver active, each copied once), and under the mlock backend.
for cfg in "none:" "cuda:cuda" "mlock:"; do
	name=${cfg%%:*} arg=${cfg#*:}
	envs="HOSTPIN_CACHE=0"
	[ "$name" = mlock ] && envs="$envs HOSTPIN_BACKEND=mlock"
	out=$(timeout 300 env $P $envs "$B/footprint" rss 8 4 $arg 2>&1); rc=$?
	if [ $rc -eq 0 ]; then ok "footprint [$name]: $(echo "$out" | tr '\n' ';')"
	else bad "footprint [$name]: rc $rc: $out"; fi
done

# NUMA placement against an injected topology (HOSTPIN_SYSFS_ROOT, test
# only): two nodes with memory, the device's PCI function on node 1.  A block
# allocated before the device is known goes to the thread's node (0 here),
# blocks after it to the device's; the cache hands a block only to a request
# on its node.  The machine has one node, so mbind refuses node 1: the
# policy's choice is read from the debug log.
root=$(mktemp -d)
mkdir -p "$root/sys/devices/system/node" "$root/sys/bus/pci/devices/0000:3b:00.0"
echo 0-1 > "$root/sys/devices/system/node/has_memory"
echo 1 > "$root/sys/bus/pci/devices/0000:3b:00.0/numa_node"
numa_run() { # env... : sets NA NB NC and NUMA_LOG
	local log
	log=$(mktemp)
	out=$(timeout 60 env $P HOSTPIN_SYSFS_ROOT="$root" HOSTPIN_LOG=debug HOSTPIN_LOG_FILE="$log" \
		FAKE_CUDA_DELAY_US=200 "$@" "$B/footprint" numa 2>&1)
	NUMA_LOG=$(cat "$log"); rm -f "$log"
	eval "$(echo "$out" | sed -n 's/^A=\(.*\) B=\(.*\) C=\(.*\)$/NA=\1 NB=\2 NC=\3/p')"
}
NA= NB= NC=; numa_run
if echo "$NUMA_LOG" | grep -q "numa: block $NA (4194304 bytes) on node 0" &&
	echo "$NUMA_LOG" | grep -q "host NUMA node 1 (PCI numa_node)" &&
	echo "$NUMA_LOG" | grep -q "numa: block $NB (4194304 bytes) on node 1" &&
	[ -n "$NA" ] && [ "$NA" != "$NB" ] && [ "$NB" = "$NC" ]; then
	ok "numa: before the device, the thread's node (0); after, the device's PCI node (1); the cache reuses only same-node blocks"
else bad "numa (PCI node): A=$NA B=$NB C=$NC: $(echo "$NUMA_LOG" | grep -i "numa" | head -5)"; fi
NA= NB= NC=; numa_run FAKE_CUDA_NUMA_ID=0
if echo "$NUMA_LOG" | grep -q "host NUMA node 0 (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID)" &&
	[ -n "$NA" ] && [ "$NA" = "$NB" ] && [ "$NB" = "$NC" ]; then
	ok "numa: the driver's HOST_NUMA_ID (0) wins over sysfs; a node-0 block is reused for node-0 requests"
else bad "numa (HOST_NUMA_ID): A=$NA B=$NB C=$NC: $(echo "$NUMA_LOG" | grep -i "numa" | head -5)"; fi
NA= NB= NC=; numa_run HOSTPIN_NUMA=off
if ! echo "$NUMA_LOG" | grep -q "numa: block" && [ -n "$NA" ] && [ "$NA" = "$NB" ]; then
	ok "numa: HOSTPIN_NUMA=off places nothing"
else bad "numa off: A=$NA B=$NB: $(echo "$NUMA_LOG" | grep "numa:" | head -3)"; fi
rm -rf "$root"

# Huge pages kept: a 1 GiB np.ones and its product under the mlock backend
# keep AnonHugePages comparable to a run without hostpin, and numpy's own
# MADV_HUGEPAGE is still on both arrays' mappings.
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
	base=$(/usr/bin/python3 "$top/tests/preload/thp.py" 2>&1)
	with=$(env $P HOSTPIN_BACKEND=mlock /usr/bin/python3 "$top/tests/preload/thp.py" 2>&1)
	bk=${base% *} wk=${with% *}
	if [ "${with#* }" != 1 ]; then bad "huge pages: numpy's MADV_HUGEPAGE undone under hostpin ($with)"
	elif [ "$thp" = never ]; then
		echo "NOTE: THP mode is never here: AnonHugePages not compared"
		ok "huge pages: numpy's own MADV_HUGEPAGE is kept (THP never: advice only)"
	elif [ "$wk" -ge $((bk / 2)) ] 2>/dev/null; then
		ok "huge pages [mlock, THP $thp]: AnonHugePages $((wk >> 10)) MiB with hostpin, $((bk >> 10)) MiB without"
	else bad "huge pages [mlock, THP $thp]: AnonHugePages '$with' with hostpin, '$base' without"; fi
else echo "SKIP: no python3-numpy: huge-page test"; fi

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Level Zero backend through the real loader and the fake driver ----
# (HOSTPIN_PIN_AFTER=0 throughout: the import machinery on blocks these
# programs never copy; copies and HOSTPIN_PIN_AFTER: 101-ze_copies.sh)
for variant in "" "ZE_ENABLE_LOADER_INTERCEPT=1" "ZE_ENABLE_ALT_DRIVERS=$ZE1,$ZE2"; do
	v=${variant:+ [$(echo "$variant" | sed "s|$F/||g")]}
	zerun "adopt: pending before zeInit, imported after$v" 0 $variant -- adopt
	if echo "$ZE_LOG_KEEP" | awk '/CALL zexDriverImport/ {i=1} /CALL zeInit/ {if (i) bad=1} END {exit bad}'; then
		ok "level zero: nothing imported before the program's zeInit$v"
	else bad "level zero: import before zeInit$v"; fi
	zerun "work: imported once, released once before unmap$v" 0 $variant -- work
	zerun "coexistence: program imports inside a hostpin block$v" 0 $variant -- foreign
	zerun "program releases hostpin's import through the hook$v" 0 $variant -- drop_hooked
done
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_PIN_AFTER=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$log" "$B/ze_prog" noinit 2>&1); rc=$?
if [ $rc -eq 0 ] && ! grep -q "CALL" "$log"; then
	ok "level zero: a process that never calls zeInit: hostpin makes no Level Zero call"
else bad "level zero noinit (rc $rc): $(head -3 "$log") $out"; fi
rm -f "$log"
zerun "work with two drivers" 0 "ZE_ENABLE_ALT_DRIVERS=$ZE1,$ZE2" -- work
n=$(echo "$ZE_LOG_KEEP" | grep " IMPORT " | awk '{print $2}' | sort -u | wc -l)
[ "$n" = 2 ] && ok "level zero: with two drivers, both get the imports" || bad "level zero: imports reached $n driver(s)"
# Must hold (audit c): the program releases hostpin's import (through the
# hook) while a discard holds the block, inside its import again: the
# release waits for the hold and imports the block again (it stayed
# flagged imported, never imported again).
pd=$(mktemp -d)
zerun "program releases hostpin's import while a discard holds the block: imported again" 0 \
	HOSTPIN_TEST_PAUSE="$pd" FAKE_ZE_IMPORT_HOOK=1 -- drop_held
rm -rf "$pd"
zerun "program drops hostpin's import behind its back: no second release" 0 HOSTPIN_STATS=1 -- drop
if echo "$ZE_OUT_KEEP" | grep -q "imports of hostpin's released by the program [1-9]"; then
	ok "level zero: the dropped import is counted in the report"
else bad "level zero: dropped import not counted: $(echo "$ZE_OUT_KEEP" | grep -i dropped)"; fi
log=$(mktemp)
out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$log" "$B/ze_prog" fork 2>&1); rc=$?
child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
if [ $rc -eq 0 ] && [ -n "$child" ] && ! grep -q "^$child ze CALL" "$log" && zelog "$log"; then
	ok "level zero fork: the child ($child) made no Level Zero call"
else bad "level zero fork (rc $rc, child '$child')"; fi
rm -f "$log"
out=$(timeout 60 env $P HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_NO_IMPORT=1 "$B/ze_prog" work 2>&1); rc=$?
n=$(echo "$out" | grep -c "Level Zero driver lacks host-pointer import")
if [ $rc -eq 0 ] && [ "$n" = 1 ]; then ok "level zero: a driver without the extension is reported once, the job completes"
else bad "level zero no-extension (rc $rc, $n messages): $out"; fi
for spec in zexDriverImportExternalPointer:2 zexDriverReleaseImportedPointer:2 \
	zexDriverGetHostPointerBaseAddress:2 zeDriverGetExtensionFunctionAddress:1 zeDeviceGet:1; do
	d=$(mktemp -d)
	out=$(timeout 60 env $P HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_LOG="$d/log" FAKE_ZE_FAIL="$spec" \
		HOSTPIN_STATS_FILE="$d/s.json" "$B/ze_prog" work 2>&1); rc=$?
	inj=$(grep -c "INJECT" "$d/log")
	counted=$(python3 -c "import json;s=json.load(open('$d/s.json'));print(s['pin_failures']+s['leaked_blocks']+s['imports_dropped'])" 2>/dev/null)
	if [ $rc -eq 0 ] && [ "$inj" -ge 1 ] && ! grep -q VIOLATION "$d/log"; then
		ok "level zero: failure injected into ${spec%%:*}: job completes, data right, ${counted:-0} counted"
	else bad "level zero: failure in $spec (rc $rc, injected $inj): $(echo "$out" | tail -2)"; fi
	rm -rf "$d"
done
if [ -f /usr/include/level_zero/ze_api.h ]; then
	if $CC -std=c11 -Wall -Wextra -Werror -fsyntax-only "$top/tests/unit/ze_decls.c"; then
		ok "preload/backend/ze_api.h agrees with the Level Zero headers"
	else bad "preload/backend/ze_api.h disagrees with the Level Zero headers"; fi
fi


# NUMA: blocks allocated once Level Zero is up go to the node of the
# device's PCI function (zeDevicePciGetPropertiesExt, then sysfs), against
# an injected two-node topology (HOSTPIN_SYSFS_ROOT, test only).  The
# machine has one node, so mbind refuses node 1: the choice is read from
# the debug log.
root=$(mktemp -d)
mkdir -p "$root/sys/devices/system/node" "$root/sys/bus/pci/devices/0000:9a:00.0"
echo 0-1 > "$root/sys/devices/system/node/has_memory"
echo 1 > "$root/sys/bus/pci/devices/0000:9a:00.0/numa_node"
zerun "numa: work with the device on node 1 (injected)" 0 HOSTPIN_SYSFS_ROOT="$root" FAKE_ZE_PCI=0000:9A:00.0 \
	HOSTPIN_LOG=debug HOSTPIN_LOG_FILE="$root/log" -- work
if grep -q "Level Zero device (PCI 0000:9a:00.0): host NUMA node 1 (PCI numa_node)" "$root/log" &&
	grep -q "numa: block .* on node 1" "$root/log" && ! grep -q "numa: block .* on node 0" "$root/log"; then
	ok "level zero numa: the device's PCI node (1) from zeDevicePciGetPropertiesExt; blocks placed there"
else bad "level zero numa: $(grep -i "numa" "$root/log" | head -4)"; fi
rm -rf "$root"

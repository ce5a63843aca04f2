# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- faults of drivers and their lifetimes (issue 22, items 9-12): a
# driver unloaded after a failure, contexts of a second device, CUDA graph
# capture in global mode, thousands of unloads ----
build drivers_dl drivers.c -DDL &&
	build drivers drivers.c -L"$F" -l:libcuda.so.1 -Wl,-rpath,"$F" ||
	bad "build the drivers programs"

# 9. Injects: a registration the driver refuses (CUDA_ERROR_OUT_OF_MEMORY,
# whose name is a string of the driver's), then the driver is unloaded
# (dlclose of the only handle).  Must hold: the exit report
# (HOSTPIN_STATS=1) prints the reason and the process exits 0 (the report
# keeps no pointer into the unloaded driver).
log=$(mktemp)
out=$(timeout 60 env $P HOSTPIN_PIN_AFTER=0 HOSTPIN_CACHE=0 HOSTPIN_STATS=1 FAKE_CUDA_LOG="$log" \
	FAKE_CUDA_PATH="$F/libcuda.so.1" FAKE_CUDA_FAIL=cuMemHostRegister_v2:1 "$B/drivers_dl" unload 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "CUDA_ERROR_OUT_OF_MEMORY: 1" && grep -q "INJECT cuMemHostRegister_v2" "$log"; then
	ok "drivers: a failure reason outlives the driver's unload (exit report rc 0, reason printed)"
else bad "drivers: failure reason after the driver's unload (rc $rc)"; echo "$out" | tail -4 | sed 's/^/    /'; fi
rm -f "$log"

# 12. Injects: 6000 dlopen/dlclose of a small library while a hook
# (cuGetProcAddress_v2, linked) is called each time.  Must hold: hostpin
# never says its forwarding cache is full, and after the unloads the
# hook's next definition comes from the cache: at most one resolution
# (HOSTPIN_LOG=debug says each) in the 200 calls after the mark, where
# every unload made one before it.
log=$(mktemp)
out=$(timeout 120 env $P HOSTPIN_LOG=debug FAKE_CUDA_LOG="$log" HP_EXTRA_LIB="$B/libextra.so" \
	"$B/drivers" fwdcache 2>&1); rc=$?
before=$(echo "$out" | sed '/^MARK$/q' | grep -c "cuGetProcAddress_v2: forwarding for callers")
after=$(echo "$out" | sed '1,/^MARK$/d' | grep -c "cuGetProcAddress_v2: forwarding for callers")
if [ $rc -eq 0 ] && ! echo "$out" | grep -q "forwarding cache full" && [ "$before" -ge 6000 ] && [ "$after" -le 1 ]; then
	ok "drivers: after 6000 unloads the forwarding cache still answers ($before resolutions during, $after after)"
else bad "drivers: forwarding cache after 6000 unloads (rc $rc, $before resolutions during, $after after): $(echo "$out" | grep 'cache full')"; fi
rm -f "$log"

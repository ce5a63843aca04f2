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

# 10. Injects: device 0's primary context in use (a block registered
# through it), device 1's primary context retained and released (its end
# must not make hostpin forget device 0's), then a thread with no current
# context (as the cache's decay thread) frees the block.  Must hold: it is
# unregistered through a context that still lives (the fake's log has its
# UNREG), nothing leaked, nothing registered at exit, no violation.
cuda_drv() { # name env... -- mode: drivers under hostpin, the fake's log checked
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	out=$(timeout 120 env $P FAKE_CUDA_LOG="$log" FAKE_CUDA_PATH="$F/libcuda.so.1" "${envs[@]}" \
		"$B/${DRV_BIN:-drivers}" "$@" 2>&1); rc=$?
	DRV_LOG_KEEP=$(cat "$log") DRV_OUT_KEEP=$out
	if [ $rc -eq 0 ] && fakelog "$log" 0; then ok "drivers: $name"
	else bad "drivers: $name (rc $rc)"; echo "$out" | tail -4 | sed 's/^/    /'; fi
	rm -f "$log"
}
cuda_drv "another device's context retained and released; a thread without a context unregisters through device 0's" \
	HOSTPIN_PIN_AFTER=0 HOSTPIN_CACHE=0 FAKE_CUDA_DEVICES=2 -- ctx2
if echo "$DRV_LOG_KEEP" | grep -q " UNREG "; then ok "drivers: the block was unregistered (fake's UNREG)"
else bad "drivers: no UNREG in the fake's log"; fi

# 10, retried.  Injects: the thread without a context cannot push one
# (cuCtxPushCurrent_v2 fails once).  Must hold: the block is not leaked
# (leaked_blocks 0) but kept registered, and released at the program's next
# copy; nothing registered at exit, no violation.
cuda_drv "an unregistration with no context to push waits and is retried, not leaked" \
	HOSTPIN_PIN_AFTER=0 HOSTPIN_CACHE=0 FAKE_CUDA_FAIL=cuCtxPushCurrent_v2:1 -- ctx_retry

# 10, the table.  Injects: 70 contexts made by the program, a block
# registered through each.  Must hold: hostpin says once that it follows
# no more than 64 live contexts (it used to stop learning without a word);
# every block registered and unregistered, no violation.
cuda_drv "70 contexts of the program: each block registered and released" \
	HOSTPIN_PIN_AFTER=0 HOSTPIN_CACHE=0 FAKE_CUDA_OWN_CTXS=1 -- manyctx
n=$(echo "$DRV_OUT_KEEP" | grep -c "more than 64 live CUDA contexts")
if [ "$n" = 1 ]; then ok "drivers: past 64 contexts hostpin says so, once"
else bad "drivers: past 64 contexts said $n times"; fi

# 11. Injects: a CUDA graph captured in global mode on one thread (the
# fake fails every registration, unregistration and wait made meanwhile
# by any thread, and logs "VIOLATION capture-invalidated-by"), while
# another thread copies a block to its HOSTPIN_PIN_AFTER-th copy, frees a
# registered block the cache does not keep (HOSTPIN_CACHE=16M) and frees
# one the cache keeps, which the decay thread (HOSTPIN_CACHE_DECAY_MS=1)
# gives back during the capture (the program waits for that event, not
# for a time: hostpin's debug log says both releases wait, or the fake saw
# both unregistrations).  Must hold: no invalidated capture (the
# program checks EndCapture's result too), no registration or
# unregistration call reaches the driver during the capture, and after it
# ends the copied block is registered and the two released ones are
# unregistered; nothing registered at exit.
# what the fake saw: no registration call during the capture; after it, the
# copied block registered and 3 unregistrations (the 2 deferred, the one
# the decay thread gave back after the capture)
cap_checks() { # how
	if echo "$DRV_LOG_KEEP" | awk '/CAPTURE BEGIN/ {c=1} /CAPTURE END/ {c=0} c && /CALL cuMemHost(Register_v2|Unregister)/ {bad=1} END {exit bad}'; then
		ok "drivers ($1): no cuMemHostRegister/cuMemHostUnregister call between BeginCapture and EndCapture"
	else bad "drivers ($1): a registration call during the capture"; fi
	local n r
	n=$(echo "$DRV_LOG_KEEP" | sed -n '/CAPTURE END/,$p' | grep -c " UNREG ")
	r=$(echo "$DRV_LOG_KEEP" | sed -n '/CAPTURE END/,$p' | grep -c " REG ")
	if [ "$n" = 3 ] && [ "$r" = 1 ]; then ok "drivers ($1): after the capture 1 registration and 3 unregistrations (2 deferred, 1 decayed)"
	else bad "drivers ($1): after the capture $r registrations, $n unregistrations"; fi
}
# HOSTPIN_STAGE=0: the counts are of hostpin's blocks, without the staging
# ring's registration (staged copies and captures: 176-staged_copies.sh)
hd=$(mktemp -d)
cuda_drv "global-mode graph capture: registration and unregistration wait for its end" \
	HOSTPIN_STAGE=0 HOSTPIN_PIN_AFTER=2 HOSTPIN_CACHE=16M HOSTPIN_CACHE_DECAY_MS=1 \
	HOSTPIN_LOG=debug HOSTPIN_LOG_FILE="$hd/hostpin.log" -- capture
rm -rf "$hd"
cap_checks linked
# the same with every entry point found by dlsym on the driver's handle (as
# ctypes and plug-ins find them): begin and end are counted there too
hd=$(mktemp -d)
DRV_BIN=drivers_dl cuda_drv "global-mode graph capture, entry points from dlsym on the driver's handle" \
	HOSTPIN_STAGE=0 HOSTPIN_PIN_AFTER=2 HOSTPIN_CACHE=16M HOSTPIN_CACHE_DECAY_MS=1 \
	HOSTPIN_LOG=debug HOSTPIN_LOG_FILE="$hd/hostpin.log" -- capture
rm -rf "$hd"
cap_checks dlsym

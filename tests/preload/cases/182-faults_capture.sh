# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- CUDA graph capture (issue 22, item 11, continued): the begin entry
# points into a graph, the capture modes, the program's own unmaps during
# a capture.  One program (capture_modes.c), linked to the fake driver and
# runtime: one thread begins a capture and waits, the main thread works
# meanwhile.  The fake fails every call a capture prohibits (global mode:
# any thread's registration, unregistration or wait; thread-local: the
# capturing thread's), logs "VIOLATION capture-invalidated-by" and ends
# the capture with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
build capture_modes capture_modes.c -L"$F" -l:libcudart.so.12 -l:libcuda.so.1 -Wl,-rpath,"$F" ||
	bad "build capture_modes"

cap_run() { # name mode env...: capture_modes under hostpin, the fake's log checked
	local name=$1 m=$2; shift 2
	local log out rc
	log=$(mktemp)
	out=$(timeout 120 env $P HOSTPIN_STAGE=0 HOSTPIN_CACHE=0 FAKE_CUDA_LOG="$log" "$@" \
		"$B/capture_modes" "$m" 2>&1); rc=$?
	if [ $rc -eq 0 ] && fakelog "$log" 0; then ok "capture: $name"
	else bad "capture: $name (rc $rc)"; echo "$out" | tail -4 | sed 's/^/    /'; fi
	# no registration call reaches the driver between begin and end (in
	# thread-local mode the main thread's may: checked by the program)
	if [ "$m" != local ]; then
		if awk '/CAPTURE BEGIN/ {c=1} /CAPTURE END/ {c=0} c && /CALL cuMemHost(Register_v2|Unregister)/ {bad=1} END {exit bad}' "$log"; then
			ok "capture ($m): no cuMemHostRegister/cuMemHostUnregister call between begin and end"
		else bad "capture ($m): a registration call during the capture"; fi
	fi
	rm -f "$log"
}

# 1. Injects: a global-mode capture begun with cuStreamBeginCaptureToGraph
# (the driver's, CUDA 12.3: linked, then found by cuGetProcAddress_v2),
# then cudaStreamBeginCaptureToGraph (the runtime's); meanwhile the main thread copies a block to its second copy
# (HOSTPIN_PIN_AFTER=2) and frees a registered one (HOSTPIN_CACHE=0).  Must
# hold: the capture stays valid (no violation, EndCapture returns 0), the
# copied block is registered and the freed one unregistered after the end.
cap_run "a capture begun into a graph (driver) holds registration and unregistration back" togr_drv HOSTPIN_PIN_AFTER=2
cap_run "a capture begun into a graph (driver, cuGetProcAddress) holds registration and unregistration back" togr_gpa HOSTPIN_PIN_AFTER=2
cap_run "a capture begun into a graph (runtime) holds registration and unregistration back" togr_rt HOSTPIN_PIN_AFTER=2

# 2. Injects: a thread-local capture; the capturing thread copies a block to
# its second copy and frees a registered one; meanwhile the main thread
# does the same.  Must hold: the main thread's block is registered and its
# freed block unregistered DURING the capture (thread-local mode prohibits
# other threads nothing); the capturing thread's registration and
# unregistration wait (no violation) and are made when its capture ends.
cap_run "thread-local capture: other threads register and unregister meanwhile, the capturing thread waits" local HOSTPIN_PIN_AFTER=2

# 3. Injects: a global-mode capture; meanwhile the main thread, over
# mappings registered at their mmap (HOSTPIN_PIN_AFTER=0): munmaps one
# whole, MADV_DONTNEED on part of one, MADV_FREE on one, mremap grows one,
# mmap(MAP_FIXED) over one, munmaps part of one.  Must hold: no driver call
# during the capture (the capture stays valid); munmap returns 0 and the
# mapping is unregistered and unmapped when the capture ends; DONTNEED
# returns 0 and the part reads zero, the rest unchanged; MADV_FREE returns
# 0; mremap, MAP_FIXED and the partial munmap fail with ENOMEM and change
# nothing; afterwards each works as usual, nothing leaked or left pinned.
cap_run "the program's munmap, madvise, mremap and MAP_FIXED over registered mappings during a capture" unmaps HOSTPIN_PIN_AFTER=0

# 4. Injects (the engine tester's discard-unmapped-552341, made certain):
# a global-mode capture begun while the main thread's MADV_DONTNEED of 3
# cells of a registered mapping (HOSTPIN_REGISTER_CHUNK=1M) is between
# unregistering them and registering them again (the first held at the
# fake's gate).  Must hold: the discard ends whole before the capture
# begins and returns 0, the part reads zero; the mapping stays registered
# whole; munmap unregisters it (nothing registered over unmapped memory).
cap_run "a capture begun during a discard's registration of its cells again waits for the discard" \
	discard_race HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=1M

# 5. Injects: a global-mode capture begun while the main thread's munmap of
# part of a registered mapping (HOSTPIN_REGISTER_CHUNK=1M; [2.5M, 3.5M) of
# 8 MiB), mmap(MAP_FIXED) over that part, or mremap moving that part away,
# is between unregistering the cells it touches and registering the half
# cells left around it again (the lower one held at the fake's gate).  Must
# hold: the call ends whole before the capture begins and succeeds; what
# survives is registered whole (no cell left registered under a range
# counted unregistered); munmap unregisters it all.
for m in split_munmap split_fixed split_mremap; do
	cap_run "a capture begun during a partial release's registrations again waits for the call ($m)" \
		$m HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=1M
done

# 6. Injects (the engine tester's violation-capture-cell-73101353, made
# certain): a global-mode capture begun while the main thread's mmap
# registers the mapping in cells inside the call (HOSTPIN_PIN_AFTER=0,
# HOSTPIN_REGISTER_CHUNK=1M; the first whole cell held at the fake's gate),
# as a copy registers a block too small for the background.  Must hold:
# the cells are all made before the capture begins (the gate held across
# them, as across one driver call); the mapping is registered whole after
# the capture and munmap unregisters it all (no cell left registered under
# a range counted unregistered).
cap_run "a capture begun during a registration in cells inside a call waits for the call" \
	fresh_race HOSTPIN_PIN_AFTER=0 HOSTPIN_REGISTER_CHUNK=1M

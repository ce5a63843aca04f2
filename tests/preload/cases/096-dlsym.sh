# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- dlsym and dlvsym behave as without hostpin for every other lookup ----
run "dlsym: without hostpin" LD_PRELOAD="$B/libnext.so" -- "$B/dlcheck" libc.so.6
run "dlsym: RTLD_NEXT from a preload after hostpin resolves past it, not past hostpin" \
	LD_PRELOAD="$LIB:$B/libnext.so" -- "$B/dlcheck" libc.so.6
run "dlsym: RTLD_NEXT from a preload before hostpin finds hostpin" \
	LD_PRELOAD="$B/libnext.so:$LIB" -- "$B/dlcheck" libhostpin.so

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- the cache of freed blocks, HOSTPIN_MAX_PINNED ----
run "cache: order, fit, cap, calloc zeroing, 8 threads" $P HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=12M -- "$B/cache"
run "HOSTPIN_MAX_PINNED=64M holds under 8 threads" $P HOSTPIN_BACKEND=mlock HOSTPIN_MAX_PINNED=64M HP_CAP_MB=64 -- "$B/maxpin"
run "8 threads mixed sizes + a mapping/forking thread [mlock, cache 32M]" $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K HOSTPIN_CACHE=32M -- "$B/threads" 2000

out=$(env $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 HOSTPIN_BACKTRACE=2 "$B/sites" 2>&1)
if echo "$out" | grep -q "site 1: 64.0M pinned at peak" &&
	echo "$out" | grep -A1 "site 1:" | grep -q "#0 load_weights" &&
	echo "$out" | grep -A1 "site 2:" | grep -q "#0 make_batch"; then
	ok "HOSTPIN_BACKTRACE names the sites that own the most pinned memory"
else bad "HOSTPIN_BACKTRACE report: $(echo "$out" | grep site)"; fi

if env $P HOSTPIN_STATS=1 /bin/true 2>&1 | grep -q "report (backend"; then
	ok "HOSTPIN_STATS=1 reports even for a program that closes stderr at exit (/bin/true)"
else bad "no report from /bin/true"; fi


# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- constructors, fork, quiet processes, threads ----
run "early constructor allocations" $P HP_EXPECT_ACTIVE=1 -- "$B/early"
run "early constructor allocations [mlock]" $P HOSTPIN_BACKEND=mlock -- "$B/early"
run "fork [mlock]" $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=1 -- "$B/forked"
run "fork [none]" $P -- "$B/forked"
run "fork while another thread holds the loader's lock: the child's malloc, mmap and exit (its report) do not wait for it [mlock]" $P HOSTPIN_BACKEND=mlock HOSTPIN_STATS=2 -- "$B/forked" loader
run "fork while another thread holds the loader's lock: the child's malloc, mmap and exit do not wait for it [none]" $P -- "$B/forked" loader
run "quiet process: no thread, no device library" $P HOSTPIN_BACKEND=mlock -- "$B/quiet"
run "no device, 4-20 MiB blocks churned under the defaults: no thread, nothing pinned, blocks served" $P -- "$B/quiet" large
run "8 threads mixed sizes + a mapping/forking thread [mlock]" $P HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K -- "$B/threads" 2000
run "8 threads mixed sizes + a mapping/forking thread [none]" $P -- "$B/threads" 2000


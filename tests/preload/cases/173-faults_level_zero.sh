# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- Level Zero's own gaps (issue 22, items 13-15), through the real
# Debian loader and the fake driver ----
[ -n "${HP_NO_LEVEL_ZERO:-}" ] && return 0

# 13. Injects: zeInit, then the program's first large buffers are a 32 MiB
# mmap, a mapping grown by mremap and a malloc, under the defaults
# (HOSTPIN_PIN_AFTER=2, auto backend).  Must hold: nothing counts Level Zero
# copies, so each is imported at once (the fake driver says so); the grown
# mapping's old import is released before the new one is made (no overlap,
# no import of unmapped memory: zelog).
zerun "defaults: mmap, mremap growth and malloc after zeInit are imported at once" 0 HOSTPIN_CACHE=1 -- mmap_init

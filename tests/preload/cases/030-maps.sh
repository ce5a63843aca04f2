# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- application mappings vs smaps ----
run "maps [mlock]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 -- "$B/maps"
run "maps [none]" $P HOSTPIN_BACKEND=none -- "$B/maps"
run "maps [mlock, HOSTPIN_MMAP=shared]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 \
	HOSTPIN_MMAP=shared HP_EXPECT_SHARED=1 -- "$B/maps"
run "maps [mlock, HOSTPIN_MMAP=all: file-backed too]" $P HOSTPIN_BACKEND=mlock HP_EXPECT_LOCKED=1 \
	HOSTPIN_MMAP=all HP_EXPECT_SHARED=1 HP_EXPECT_FILE=1 -- "$B/maps"


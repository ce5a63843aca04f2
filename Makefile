# hostpin: thin top level.  Out-of-tree objects under build/.
#   make            build build/libhostpin.so and the launcher
#   make check      install missing Debian packages, build, run every test
#   make compat     build and run the preload tests under glibc 2.31 (Debian 11)
#   make demo       run a PyTorch CPU training loop under hostpin, print the report
#   make bench      benchmarks; results in bench/RESULTS.md
#   make install    PREFIX=/usr/local DESTDIR=
CC ?= cc
CFLAGS ?= -O2 -g
WARN := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
B := build
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man

CHECK_PKGS := check libunwind-dev libze-dev libze1 pkg-config
RUN_PKGS := python3-torch python3-numpy coreutils libjemalloc2 libtcmalloc-minimal4 valgrind clang
DEPS_STAMP := $(B)/.deps

REG_SRC := registry/registry.c
PRELOAD_SRC := $(sort $(wildcard preload/*.c))
PRELOAD_HDR := $(wildcard preload/*.h preload/*.def) registry/registry.h
LIB := $(B)/libhostpin.so

UNIT_SRC := $(sort $(wildcard tests/unit/check_*.c)) tests/unit/runner.c
# The unit runner and the ThreadSanitizer stress programs compile hostpin in,
# with its libc names renamed so that the tests call the policy directly and
# the sanitizer keeps the process's allocator.
UNIT_MODS := $(PRELOAD_SRC)
EMBED := -DHP_EMBEDDED_TEST $(foreach f,malloc free calloc realloc reallocarray \
	posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size \
	mmap mmap64 munmap mremap madvise,-D$(f)=hpx_$(f))

.PHONY: all check demo bench install clean deps unit sanitize preload-tests stress gpu-check compat
all: $(LIB) $(B)/hostpin

$(LIB): $(REG_SRC) $(PRELOAD_SRC) $(PRELOAD_HDR) preload/exports.map
	@mkdir -p $(B)
	$(CC) $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,--version-script=preload/exports.map -Wl,-z,now \
		-o $@ $(REG_SRC) $(PRELOAD_SRC) -ldl -lpthread

$(B)/hostpin: scripts/hostpin
	@mkdir -p $(B)
	sed 's|@LIBDIR_BUILD@|$(abspath $(B))|' $< > $@ && chmod +x $@

$(DEPS_STAMP): scripts/ensure-deps
	@mkdir -p $(B)
	scripts/ensure-deps $(CHECK_PKGS) $(RUN_PKGS)
	@touch $@
deps: $(DEPS_STAMP)

CHECK_FLAGS = $(shell pkg-config --cflags --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -pthread)

$(B)/test/unit: $(DEPS_STAMP) $(UNIT_SRC) tests/unit/unit.h $(REG_SRC) $(UNIT_MODS) $(PRELOAD_HDR) man/hostpin.7
	@mkdir -p $(B)/test
	$(CC) $(WARN) $(CFLAGS) $(EMBED) -DHP_SRCDIR='"$(CURDIR)"' -o $@ $(UNIT_SRC) $(REG_SRC) $(UNIT_MODS) $(CHECK_FLAGS) -ldl -lpthread

# The registry suite again under ThreadSanitizer and ASan+UBSan.
REG_TEST := tests/unit/check_registry.c tests/unit/runner.c $(REG_SRC)
$(B)/test/registry-tsan: $(DEPS_STAMP) $(REG_TEST) tests/unit/unit.h registry/registry.h
	@mkdir -p $(B)/test
	$(CC) $(WARN) -O1 -g -DHP_REGISTRY_ONLY -fsanitize=thread -o $@ $(REG_TEST) $(CHECK_FLAGS)
$(B)/test/registry-asan: $(DEPS_STAMP) $(REG_TEST) tests/unit/unit.h registry/registry.h
	@mkdir -p $(B)/test
	$(CC) $(WARN) -O1 -g -DHP_REGISTRY_ONLY -fsanitize=address,undefined \
		-fno-sanitize-recover=all -o $@ $(REG_TEST) $(CHECK_FLAGS)

unit: $(B)/test/unit
	$(B)/test/unit

# Stress: the threads program (also run under LD_PRELOAD by the preload
# tests) and the pre-fault pool, with hostpin compiled in, under TSan.
STRESS := threads prefault
$(B)/test/%-tsan: tests/stress/%.c $(REG_SRC) $(PRELOAD_SRC) $(PRELOAD_HDR) tests/preload/tp.h
	@mkdir -p $(B)/test
	clang $(WARN) -O1 -g -fsanitize=thread $(EMBED) -o $@ $< $(REG_SRC) $(PRELOAD_SRC) -ldl -lpthread
stress: $(DEPS_STAMP) $(foreach s,$(STRESS),$(B)/test/$(s)-tsan)
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K \
		HOSTPIN_CACHE=32M $(B)/test/threads-tsan 300
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=0 \
		HOSTPIN_PREFAULT_THREADS=4 $(B)/test/prefault-tsan

sanitize: $(B)/test/registry-tsan $(B)/test/registry-asan
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 CK_FORK=no $(B)/test/registry-tsan
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 CK_FORK=no $(B)/test/registry-asan

preload-tests: $(DEPS_STAMP) all
	tests/preload/run.sh

# glibc 2.31: build and run the preload tests in a Debian 11 root, made
# once under build/bullseye (scripts/compat-tier).
compat:
	scripts/compat-tier

# Tiers, fastest first: unit (and the registry under sanitizers), preload,
# stress, compat.
check: $(DEPS_STAMP) all
	$(MAKE) --no-print-directory unit sanitize preload-tests stress compat

demo: $(DEPS_STAMP) all
	scripts/demo

bench: $(DEPS_STAMP) all
	scripts/ensure-deps valgrind gnuplot-nox
	scripts/bench

gpu-check:
	scripts/gpu-check

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/libhostpin.so
	sed 's|@LIBDIR_BUILD@|$(LIBDIR)|' scripts/hostpin > $(DESTDIR)$(BINDIR)/hostpin
	chmod 0755 $(DESTDIR)$(BINDIR)/hostpin
	install -m 0644 man/hostpin.1 $(DESTDIR)$(MANDIR)/man1/hostpin.1
	install -m 0644 man/hostpin.7 $(DESTDIR)$(MANDIR)/man7/hostpin.7

clean:
	rm -rf $(B)

# hostpin: thin top level.  Out-of-tree objects under build/.
#   make            build build/libhostpin.so and the launcher
#   make check      install missing Debian packages, build, run every test; one summary line
#   make check-cluster  the Slurm and Prometheus cases, their packages installed first
#   make compat     build and run the preload tests under glibc 2.31 (Debian 11)
#   make demo       the same PyTorch job without and with hostpin, side by side
#   make check-torch  PyPI torch, DeepSpeed, CuPy over the fake driver (venv in build/; not in check)
#   make check-xpu  PyPI dpctl 0.21.1 (Intel's SYCL runtime) over the fake Level Zero driver (venv in
#                   build/; not in check)
#   make bench      benchmarks against glibc, jemalloc, tcmalloc; bench/RESULTS.md
#   make install    PREFIX=/usr/local DESTDIR= PYTHON=python3 PYDIR=  (stops if PYTHON would not find
#                   hostpin.py there; a manifest under PREFIX: make uninstall PREFIX= undoes it)
#   make deb        build/hostpin_VERSION_ARCH.deb from a staged install
#   make wheel      build/hostpin-VERSION-py3-none-manylinux_2_28_x86_64.whl (pip install it)
CC ?= cc
CFLAGS ?= -O2 -g
# The one version string: the library (HOSTPIN_LOG=info, the report), the
# launcher (--version) and the packages all take it from VERSION.
VERSION := $(shell cat VERSION)
WARN := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -DHP_VERSION='"$(VERSION)"'

B := build
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# The Python module (python/hostpin.py) goes where the target interpreter
# $(PYTHON) looks under PREFIX: its own site directory when that lies under
# PREFIX/lib (Debian's python3 and PREFIX=/usr/local:
# /usr/local/lib/python3.X/dist-packages; a venv and PREFIX=the venv), else
# its posix_prefix path under PREFIX (then on PYTHONPATH by hand).  Not
# sysconfig's default scheme with base=PREFIX: Debian's (posix_local) adds
# local/ to any base.  The .deb sets Debian's own /usr/lib/python3/dist-packages.
PYTHON ?= python3
PYDIR_PY := import os, site, sys, sysconfig; p = os.path.abspath(sys.argv[1]); \
	c = [sysconfig.get_path("purelib")] + getattr(site, "getsitepackages", list)(); \
	print(next((d for d in c if d.startswith(p.rstrip("/") + "/lib/")), \
	sysconfig.get_path("purelib", "posix_prefix", vars={"base": p, "platbase": p})))
PYDIR ?= $(shell $(PYTHON) -c '$(PYDIR_PY)' '$(PREFIX)' 2>/dev/null || echo '$(PREFIX)/lib/python3/dist-packages')

CHECK_PKGS := check libunwind-dev libze-dev libze1 pkg-config python3-venv
RUN_PKGS := python3-torch python3-numpy coreutils libjemalloc2 libtcmalloc-minimal4 valgrind clang \
	openmpi-bin debootstrap
# The Slurm case runs its own munged, slurmctld and slurmd (own config,
# ports and state directory, started and stopped by the case); the
# Prometheus case needs only promtool.  scripts/ensure-deps installs with
# service starts forbidden, but on a host where systemd runs the packages
# would still enable their units for the next boot: there make check
# installs them only under CI=true (a throwaway machine) or when asked,
# make check-cluster, and the two cases say they skipped.
CLUSTER_PKGS := prometheus slurmctld slurmd munge slurm-client
CLUSTER_DEPS := $(if $(or $(filter true,$(CI)),$(if $(wildcard /run/systemd/system),,no-systemd)),$(CLUSTER_PKGS))
DEPS_STAMP := $(B)/.deps

REG_SRC := registry/registry.c registry/registry_read.c
PRELOAD_SRC := $(sort $(wildcard preload/*/*.c))
PRELOAD_HDR := $(wildcard preload/*.h preload/*/*.h preload/*/*.def) registry/registry.h registry/registry_int.h
LIB := $(B)/libhostpin.so

UNIT_SRC := $(sort $(wildcard tests/unit/check_*.c)) tests/unit/runner.c
# The unit runner and the ThreadSanitizer stress programs compile hostpin in,
# with its libc names renamed so that the tests call the policy directly and
# the sanitizer keeps the process's allocator.
UNIT_MODS := $(PRELOAD_SRC)
EMBED := -DHP_EMBEDDED_TEST $(foreach f,malloc free calloc realloc reallocarray \
	posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size \
	mmap mmap64 munmap mremap madvise,-D$(f)=hpx_$(f))

.PHONY: fuzz fuzz-build fuzz-long all check layers check-cluster check-torch check-xpu check-engine-fuzz demo bench bench-peers install uninstall deb wheel pkg-check clean distclean deps unit sanitize preload-tests stress gpu-check compat
all: $(LIB) $(B)/hostpin $(B)/hostpin-status

$(LIB): $(REG_SRC) $(PRELOAD_SRC) $(PRELOAD_HDR) preload/exports.map VERSION
	@mkdir -p $(B)
	$(CC) $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -shared \
		-Wl,--version-script=preload/exports.map -Wl,-z,now \
		-o $@ $(REG_SRC) $(PRELOAD_SRC) -ldl -lpthread

# `hostpin status` and the launcher's merged report: the ledger's reader
STATUS_SRC := status/hostpin-status.c status/ledger_read.c status/prometheus.c status/report.c status/run.c \
	status/clean.c
$(B)/hostpin-status: $(STATUS_SRC) status/run.h status/status.h $(PRELOAD_HDR)
	@mkdir -p $(B)
	$(CC) $(WARN) $(CFLAGS) -o $@ $(STATUS_SRC)

$(B)/hostpin: scripts/hostpin VERSION
	@mkdir -p $(B)
	sed -e 's|@LIBDIR_BUILD@|$(abspath $(B))|' -e 's|@VERSION@|$(VERSION)|' $< > $@ && chmod +x $@

$(DEPS_STAMP): scripts/ensure-deps
	@mkdir -p $(B)
	scripts/ensure-deps $(CHECK_PKGS) $(RUN_PKGS) $(CLUSTER_DEPS)
	@touch $@
deps: $(DEPS_STAMP)

CHECK_FLAGS = $(shell pkg-config --cflags --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt -pthread)

$(B)/test/unit: $(DEPS_STAMP) $(UNIT_SRC) tests/unit/unit.h $(REG_SRC) $(UNIT_MODS) $(PRELOAD_HDR) man/hostpin-reference.7
	@mkdir -p $(B)/test
	$(CC) $(WARN) $(CFLAGS) $(EMBED) -DHP_SRCDIR='"$(CURDIR)"' -o $@ $(UNIT_SRC) $(REG_SRC) $(UNIT_MODS) $(CHECK_FLAGS) -ldl -lpthread

# The registry suite again under ThreadSanitizer and ASan+UBSan.
REG_TEST := tests/unit/check_registry.c tests/unit/runner.c $(REG_SRC)
$(B)/test/registry-tsan: $(DEPS_STAMP) $(REG_TEST) tests/unit/unit.h registry/registry.h registry/registry_int.h
	@mkdir -p $(B)/test
	$(CC) $(WARN) -O1 -g -DHP_REGISTRY_ONLY -fsanitize=thread -o $@ $(REG_TEST) $(CHECK_FLAGS)
$(B)/test/registry-asan: $(DEPS_STAMP) $(REG_TEST) tests/unit/unit.h registry/registry.h registry/registry_int.h
	@mkdir -p $(B)/test
	$(CC) $(WARN) -O1 -g -DHP_REGISTRY_ONLY -fsanitize=address,undefined \
		-fno-sanitize-recover=all -o $@ $(REG_TEST) $(CHECK_FLAGS)

unit: $(B)/test/unit
	$(B)/test/unit

# The layers of preload/ include only downward (scripts/check-layers; the
# exceptions, each with its reason, in scripts/layers.allow).
layers:
	scripts/check-layers

# Stress: the threads program (also run under LD_PRELOAD by the preload
# tests) and the pre-fault pool, with hostpin compiled in, under TSan.
# Each under a time limit (under a minute each on a loaded 2-core machine):
# a hang fails the check instead of holding CI until its own limit (a
# forked child once waited for ever for the loader's lock there).
STRESS := threads prefault
STRESS_LIMIT := timeout -k 10 600
$(B)/test/%-tsan: tests/stress/%.c $(REG_SRC) $(PRELOAD_SRC) $(PRELOAD_HDR) tests/preload/tp.h
	@mkdir -p $(B)/test
	clang $(WARN) -O1 -g -fsanitize=thread $(EMBED) -o $@ $< $(REG_SRC) $(PRELOAD_SRC) -ldl -lpthread
stress: $(DEPS_STAMP) $(foreach s,$(STRESS),$(B)/test/$(s)-tsan)
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 HOSTPIN_BACKEND=mlock HOSTPIN_THRESHOLD=64K \
		HOSTPIN_CACHE=32M $(STRESS_LIMIT) $(B)/test/threads-tsan 300
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 HOSTPIN_BACKEND=mlock HOSTPIN_CACHE=0 \
		HOSTPIN_PREFAULT_THREADS=4 $(STRESS_LIMIT) $(B)/test/prefault-tsan

sanitize: $(B)/test/registry-tsan $(B)/test/registry-asan
	TSAN_OPTIONS=halt_on_error=1:exitcode=66 CK_FORK=no $(B)/test/registry-tsan
	ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1 CK_FORK=no $(B)/test/registry-asan

preload-tests: $(DEPS_STAMP) all
	tests/preload/run.sh

# libFuzzer targets (tests/libfuzzer/): the knob parser, the ledger as the
# library and `hostpin status` read it, the cgroup and /proc parsers, the
# output-path walk, with ASan and UBSan.  `make fuzz`: about a minute in
# all (a check tier; skipped when clang has no libFuzzer runtime);
# `make fuzz-long FUZZ_SECONDS=N`: each target N seconds (default 600).
FUZZ := knobs ledger_lib ledger_status cgroup outpath
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 600
$(B)/fuzz/libhp.a: $(REG_SRC) $(PRELOAD_SRC) $(PRELOAD_HDR)
	@mkdir -p $(B)/fuzz/o
	@rm -f $(B)/fuzz/o/*.o $@
	@for f in $(REG_SRC) $(PRELOAD_SRC); do \
		clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(EMBED) -c $$f \
			-o $(B)/fuzz/o/$$(echo $$f | tr / _).o || exit 1; done
	ar rcs $@ $(B)/fuzz/o/*.o
$(B)/fuzz/fuzz_ledger_status: tests/libfuzzer/fuzz_ledger_status.c $(STATUS_SRC) status/status.h $(PRELOAD_HDR)
	@mkdir -p $(B)/fuzz
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -DHP_VERSION='"$(VERSION)"' -o $@ $< \
		$(filter-out status/hostpin-status.c,$(STATUS_SRC))
$(B)/fuzz/fuzz_%: tests/libfuzzer/fuzz_%.c $(B)/fuzz/libhp.a
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $(EMBED) -o $@ $< $(B)/fuzz/libhp.a -ldl -lpthread
fuzz-build: $(foreach t,$(FUZZ),$(B)/fuzz/fuzz_$(t))
fuzz:
	scripts/fuzz-run 12
fuzz-long:
	scripts/fuzz-run $(FUZZ_SECONDS)

# glibc 2.31: build and run the preload tests in a Debian 11 root, made
# once under build/bullseye (scripts/compat-tier).
compat:
	scripts/compat-tier

# Tiers: layers (the include directions, in seconds), unit (and the registry
# under sanitizers), stress, then compat
# (which makes the Debian 11 root once) and pkg-check (which builds the
# wheel in that root) before the preload tests, whose containers case
# uses both.  Every tier runs; each one's output is kept in
# build/check/TIER.log and the last line sums them all (scripts/check-summary).
CHECK_TIERS := layers unit sanitize stress fuzz compat pkg-check preload-tests
check: $(DEPS_STAMP) all
	@rm -rf $(B)/check
	@for t in $(CHECK_TIERS); do scripts/check-tier $$t $(MAKE) --no-print-directory $$t; done
	@scripts/check-summary $(CHECK_TIERS)

# The copy engine's differential, randomized concurrency tester
# (tests/fuzz/fuzz.sh; a short run is the preload case engine_fuzz):
# replays tests/fuzz/cases, then fresh seeds for FUZZ_SECONDS (default
# 600), or FUZZ_COUNT seeds from FUZZ_SEED; FUZZ_OPTS: engine_fuzz gen's
# (e.g. --no capture).  Findings, shrunk, go to build/fuzz/found.
FUZZ_SECONDS ?= 600
check-engine-fuzz: all
	tests/fuzz/fuzz.sh build
	tests/fuzz/fuzz.sh replay tests/fuzz/cases
	FZ_GEN_OPTS="$(FUZZ_OPTS)" tests/fuzz/fuzz.sh $(if $(FUZZ_COUNT),seeds $(or $(FUZZ_SEED),1) $(FUZZ_COUNT),time $(FUZZ_SECONDS))

# The cases that run a private Slurm cluster and promtool, their packages
# installed first (no service is started: scripts/ensure-deps).
check-cluster: all
	scripts/ensure-deps $(CLUSTER_PKGS)
	@rm -f $(B)/check/cluster.*
	@scripts/check-tier cluster tests/preload/run.sh prometheus slurm
	@scripts/check-summary cluster

# PyPI's torch 2.15 (CUDA 13.2), DeepSpeed and CuPy over the fake driver,
# without and with hostpin (scripts/check-torch; a venv in build/torch-venv,
# made once).  Not part of check: it downloads about 4 GB once.
check-torch: all
	scripts/check-torch

# PyPI's dpctl 0.21.1 (Intel's SYCL runtime 2025.3, its Unified Runtime
# Level Zero adapter) over the fake Level Zero driver through Debian's
# loader and tests/fakes/ze_loader_shim.c, without and with hostpin
# (scripts/check-xpu; a venv in build/xpu-venv, made once).  Not part of
# check: it downloads about 240 MB once; its run took 3.5 minutes here.
check-xpu: all
	scripts/check-xpu

# The Python module's tests (with and without hostpin), then the Debian
# package: built, installed, smoke-tested and removed again.
pkg-check: $(DEPS_STAMP) all
	scripts/pkg-check

# The demo needs only PyTorch and numpy, not the test packages.
# PYTHON=/path/to/python: the demo runs that interpreter (a venv's PyTorch),
# and installs nothing.
demo: all
	$(if $(PYTHON),,scripts/ensure-deps python3-torch python3-numpy)
	scripts/demo

# The only target that writes bench/ (RESULTS.md and the plots); scripts/bench
# alone writes build/bench/.
bench: $(DEPS_STAMP) all
	scripts/ensure-deps valgrind gnuplot-nox libjemalloc2 libtcmalloc-minimal4 python3-torch
	BENCH_DIR=bench scripts/bench
# Only the peer comparison (glibc, tuned glibc, jemalloc, tcmalloc, each with
# and without hostpin), replacing that section of bench/RESULTS.md.
bench-peers: $(DEPS_STAMP) all
	scripts/ensure-deps gnuplot-nox libjemalloc2 libtcmalloc-minimal4 python3-torch
	BENCH_DIR=bench scripts/bench peers

gpu-check:
	scripts/gpu-check

# What make install writes, without DESTDIR; make uninstall removes what the
# manifest under the prefix lists (scripts/install-manifest), so the two agree
# whatever PYDIR or the other directories were: uninstall needs PREFIX alone.
MAN7_PAGES := hostpin.7 hostpin-reference.7
INSTALL_DIRS := $(LIBDIR) $(BINDIR) $(MANDIR)/man1 $(MANDIR)/man7 $(INCLUDEDIR) $(PKGCONFIGDIR) \
	$(COMPLETIONDIR) $(PYDIR)
INSTALL_FILES := $(LIBDIR)/libhostpin.so $(BINDIR)/hostpin $(BINDIR)/hostpin-status \
	$(MANDIR)/man1/hostpin.1 $(addprefix $(MANDIR)/man7/,$(MAN7_PAGES)) $(INCLUDEDIR)/hostpin.h \
	$(PKGCONFIGDIR)/hostpin.pc $(COMPLETIONDIR)/hostpin $(PYDIR)/hostpin.py
MANIFEST ?= $(PREFIX)/share/hostpin/install-manifest

# Before anything is written: hostpin.py must go where $(PYTHON) looks.
# A python3 that is not Debian's (pyenv, conda), or any prefix of one's own
# (PREFIX=$HOME/.local/opt, /tmp/p), is not searched: stop and say what to
# do, the first suggestion one that works for any prefix (PYDIR= on the
# command line), rather than leave the module where no interpreter finds it
# unasked.  PYDIR=... on the command line, DESTDIR (a staged install) or no
# $(PYTHON) at all skip the check.
install: all
	@[ -n "$(DESTDIR)" ] || [ "$(origin PYDIR)" = "command line" ] || ! command -v $(PYTHON) >/dev/null 2>&1 || \
		$(PYTHON) -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' '$(PYDIR)' 2>/dev/null || { \
		echo "make install: $(PYTHON) ($$(command -v $(PYTHON))) does not search $(PYDIR), where hostpin.py would go;" >&2; \
		echo "  nothing installed.  Either:" >&2; \
		echo "  - add PYDIR=$(PYDIR) to the command line: installs there (any prefix);" >&2; \
		echo "    import hostpin then needs PYTHONPATH=$(PYDIR); the launcher and library need nothing;" >&2; \
		echo "  - or name an interpreter that searches it (PYTHON=/usr/bin/python3 with PREFIX=/usr/local);" >&2; \
		echo "  - or put the wheel into your interpreter's environment (make wheel; pip install build/hostpin-*.whl)" >&2; \
		exit 1; }
	@[ -n "$(DESTDIR)" ] || scripts/install-manifest dirs '$(MANIFEST)' $(INSTALL_DIRS)
	install -d $(addprefix $(DESTDIR),$(INSTALL_DIRS))
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/libhostpin.so
	sed -e 's|@LIBDIR_BUILD@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' scripts/hostpin > $(DESTDIR)$(BINDIR)/hostpin
	chmod 0755 $(DESTDIR)$(BINDIR)/hostpin
	install -m 0755 $(B)/hostpin-status $(DESTDIR)$(BINDIR)/hostpin-status
	install -m 0644 man/hostpin.1 $(DESTDIR)$(MANDIR)/man1/hostpin.1
	install -m 0644 $(addprefix man/,$(MAN7_PAGES)) $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 preload/hostpin.h $(DESTDIR)$(INCLUDEDIR)/hostpin.h
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' \
		'# the library to preload; programs find the query API with dlsym' \
		'preload=$${libdir}/libhostpin.so' '' 'Name: hostpin' \
		'Description: page-locks and registers large host buffers with the GPU driver (LD_PRELOAD)' \
		'Version: $(VERSION)' 'Cflags: -I$${includedir}' 'Libs:' \
		> $(DESTDIR)$(PKGCONFIGDIR)/hostpin.pc
	install -m 0644 scripts/hostpin.bash-completion $(DESTDIR)$(COMPLETIONDIR)/hostpin
	install -m 0644 python/hostpin.py $(DESTDIR)$(PYDIR)/hostpin.py
	@[ -n "$(DESTDIR)" ] || scripts/install-manifest files '$(MANIFEST)' $(INSTALL_FILES)
	@[ -n "$(DESTDIR)" ] || echo 'make install: the files are listed in $(MANIFEST); make uninstall PREFIX=$(PREFIX) removes them'
	@[ -n "$(DESTDIR)" ] || $(PYTHON) -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' '$(PYDIR)' 2>/dev/null || \
		echo 'note: $(PYTHON) does not search $(PYDIR) (PYDIR given): import hostpin needs PYTHONPATH=$(PYDIR)'

# First the user's ledgers that no process uses (hostpin status --clean:
# /dev/shm/hostpin-UID.d/ outlives every process).  Then the manifest's
# list when there is one; else (a staged install, or one made before the
# manifest existed) the files at this make's paths.
uninstall:
	@[ -n "$(DESTDIR)" ] || [ ! -x '$(BINDIR)/hostpin-status' ] || '$(BINDIR)/hostpin-status' --clean || true
	@if [ -z "$(DESTDIR)" ] && [ -f '$(MANIFEST)' ]; then \
		echo 'make uninstall: removing what $(MANIFEST) lists'; scripts/install-manifest remove '$(MANIFEST)'; \
	else \
		[ -n "$(DESTDIR)" ] || echo 'make uninstall: no $(MANIFEST); removing the files at this make'"'"'s paths (PYDIR=$(PYDIR))'; \
		rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES)) $(DESTDIR)$(PYDIR)/__pycache__/hostpin.*.pyc; \
		rmdir $(DESTDIR)$(PYDIR)/__pycache__ 2>/dev/null || true; \
	fi

# A Debian package from a staged install (dpkg-deb; no debhelper needed).
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_MULTIARCH = $(shell $(CC) -print-multiarch)
DEB := $(B)/hostpin_$(VERSION)_$(DEB_ARCH).deb
# The package depends on the newest glibc the built binaries ask for (their
# *UND* symbol versions; 2.28 at least): a deb built on Debian 12 needs 2.34.
DEB_GLIBC = $(shell objdump -T $(LIB) $(B)/hostpin-status | awk '/\*UND\*/' | \
	grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | { cat; echo 2.28; } | sort -V | tail -1)
deb: all
	rm -rf $(B)/deb && mkdir -p $(B)/deb/root/DEBIAN
	$(MAKE) --no-print-directory install DESTDIR=$(abspath $(B))/deb/root PREFIX=/usr \
		LIBDIR=/usr/lib/$(DEB_MULTIARCH) PYDIR=/usr/lib/python3/dist-packages
	gzip -9n $(B)/deb/root/usr/share/man/man1/hostpin.1 $(addprefix $(B)/deb/root/usr/share/man/man7/,$(MAN7_PAGES))
	# the licence (LICENSE), in Debian's machine-readable copyright format
	install -d $(B)/deb/root/usr/share/doc/hostpin
	{ printf '%s\n' 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
		'Upstream-Name: hostpin' '' 'Files: *'; sed -n 's/^Copyright (c) /Copyright: /p' LICENSE; \
		echo 'License: MIT'; sed -n '/^Permission/,$$p' LICENSE | sed -e 's/^$$/./' -e 's/^/ /'; } \
		> $(B)/deb/root/usr/share/doc/hostpin/copyright
	chmod 0644 $(B)/deb/root/usr/share/doc/hostpin/copyright
	printf '%s\n' 'Package: hostpin' 'Version: $(VERSION)' 'Architecture: $(DEB_ARCH)' \
		'Maintainer: hostpin developers <hostpin@localhost>' 'Section: libs' 'Priority: optional' \
		'Depends: libc6 (>= $(DEB_GLIBC))' 'Suggests: python3' \
		'Description: pin large host buffers for GPU copies (LD_PRELOAD)' \
		' hostpin makes the large host buffers of an unmodified program page-locked' \
		' and registered with the GPU driver (CUDA, Level Zero), so host-device' \
		' copies run at DMA speed.  Launcher, library, header, pkg-config file,' \
		' bash completion, Python module and manual pages.' > $(B)/deb/root/DEBIAN/control
	# on removal, root's ledgers that no process uses (hostpin status --clean)
	printf '%s\n' '#!/bin/sh' 'set -e' \
		'if [ "$$1" = remove ] && [ -x /usr/bin/hostpin-status ]; then /usr/bin/hostpin-status --clean >/dev/null 2>&1 || true; fi' \
		> $(B)/deb/root/DEBIAN/prerm
	chmod 0755 $(B)/deb/root/DEBIAN/prerm
	dpkg-deb --root-owner-group -Zxz --build $(B)/deb/root $(DEB)

# A wheel written by scripts/make-wheel (zipfile: no pip, setuptools or
# network): as root the library and hostpin-status built in make compat's
# Debian 11 root, whose glibc symbol check backs the manylinux_2_28 tag;
# without root the host's build, tagged with the glibc it needs.
wheel: all
	scripts/make-wheel

# Keeps the Debian 11 root (build/bullseye, made once by make compat: a
# download of a few minutes), pkg-check's auditwheel (a venv from PyPI) and
# the cuda.h the cuda case checks against (from PyPI where no CUDA toolkit
# is installed); make distclean removes them too.
clean:
	find $(B) -mindepth 1 -maxdepth 1 ! -name bullseye ! -name auditwheel-venv ! -name cuda-headers -exec rm -rf {} + 2>/dev/null || true
distclean:
	rm -rf $(B)

# Sourced by tests/preload/run.sh (lib.sh's helpers and variables).
# ---- however the GPU stack is loaded: local scopes, unloading, two
# runtimes, dlsym on a handle, other dlsym interposers, zeInitDrivers ----
# These check where calls go and what is registered, so blocks are
# registered at allocation (HOSTPIN_PIN_AFTER=0); 140-footprint tests
# registration at the Nth copy.
P_SAVE=$P; P="$P HOSTPIN_PIN_AFTER=0"
L=$B/loading
mkdir -p "$L"
# Runtimes with symbol versions, as NVIDIA's are (libcudart.so.13 defines
# every name @libcudart.so.13): a caller's reference names its runtime.
for v in 12 13; do
	printf 'libcudart.so.%s { global: *; };\n' $v > "$L/rt$v.map"
	$CC $CFL -shared -fPIC -Wl,-soname,libcudart.so.$v -Wl,--version-script="$L/rt$v.map" \
		-o "$L/libcudart.so.$v" ../fakes/fake_cudart.c -L"$F" -l:libcuda.so.1 -Wl,-rpath,"$F" -ldl -lpthread ||
		bad "build the versioned runtime $v"
done
plug() { # out runtime-dir runtime-soname extra...
	local out=$1 dir=$2 so=$3; shift 3
	$CC $CFL -shared -fPIC -DAS_PLUGIN -DLINKED_DRIVER -DRT_SONAME=\""$so"\" -o "$L/$out" cuda_prog.c \
		-L"$dir" -l:"$so" -L"$F" -l:libcuda.so.1 -Wl,-rpath,"$dir" -Wl,-rpath,"$F" "$@" -ldl -lpthread ||
		bad "build $out"
}
plug libplug_cuda.so "$F" libcudart.so.12
plug libplug_rt13.so "$L" libcudart.so.13
$CC $CFL -shared -fPIC -DAS_PLUGIN -o "$L/libplug_ze.so" ze_prog.c -lze_loader -ldl || bad "build libplug_ze.so"
build plughost plughost.c
$CC $CFL -DLINK_RT -o "$L/plughost_rt12" plughost.c -Wl,--no-as-needed -L"$L" -l:libcudart.so.12 \
	-Wl,-rpath,"$L" -ldl -lpthread || bad "build plughost_rt12"
$CC $CFL -shared -fPIC -o "$L/libze_initdrivers.so" ze_initdrivers.c -ldl &&
	$CC $CFL -DWITH_INITDRIVERS -o "$L/ze_initdrivers_prog" ze_prog.c -L"$L" -l:libze_initdrivers.so -Wl,-rpath,"$L" -lze_loader -ldl ||
	bad "build the zeInitDrivers path"
$CC $CFL -Wno-nonnull-compare -shared -fPIC -o "$L/libdlwrap.so" dlwrap.c -ldl || bad "build libdlwrap.so"

# plugrun NAME LOGVAR LOGCHECK ENV... -- ARGS...: plughost under hostpin,
# the fake's log checked
plugrun() {
	local name=$1 var=$2 check=$3; shift 3
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
	local log out rc
	log=$(mktemp)
	out=$(timeout 60 env $P HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 "$var=$log" "${envs[@]}" "$@" 2>&1); rc=$?
	if [ $rc -eq 0 ] && $check "$log"; then ok "loading: $name"
	else bad "loading: $name (rc $rc)"; echo "$out" | tail -5 | sed 's/^/    /'; fi
	rm -f "$log"
}
zeok() { zelog "$1"; }
cuok() { ! grep -q "VIOLATION\|OVERLAP\|CTXCREATE" "$1"; }

# Runtime and driver only in a plug-in's local scope
for m in work sync adopt rtdefault; do
	plugrun "CUDA runtime only in a plug-in opened RTLD_LOCAL ($m)" FAKE_CUDA_LOG cuok \
		FAKE_CUDA_DELAY_US=2000 -- "$B/plughost" "$L/libplug_cuda.so" local $m
done
plugrun "Level Zero loader only in a plug-in opened RTLD_LOCAL (work)" FAKE_ZE_LOG zeok \
	ZE_ENABLE_ALT_DRIVERS="$ZE1" -- "$B/plughost" "$L/libplug_ze.so" local work
plugrun "Level Zero loader only in a plug-in opened RTLD_LOCAL (adopt)" FAKE_ZE_LOG zeok \
	ZE_ENABLE_ALT_DRIVERS="$ZE1" -- "$B/plughost" "$L/libplug_ze.so" local adopt
# Unloading: a plug-in opened global, then closed with its runtime,
# driver or loader; its blocks freed after; opened again: registered again
plugrun "CUDA plug-in unloaded: no call into the unloaded driver, blocks registered again on reload" \
	FAKE_CUDA_LOG cuok PLUG_UNLOADS=libcuda.so.1 -- "$B/plughost" "$L/libplug_cuda.so" global x unload
plugrun "Level Zero plug-in unloaded: no call into the unloaded loader and driver, imported again on reload" \
	FAKE_ZE_LOG true ZE_ENABLE_ALT_DRIVERS="$ZE1" PLUG_UNLOADS=libze_loader.so.1 -- \
	"$B/plughost" "$L/libplug_ze.so" global x unload
# Two runtimes: the program's (libcudart.so.12, global) and a plug-in's
# (libcudart.so.13, local); the plug-in's calls and its dlsym(RTLD_DEFAULT)
# reach its own
plugrun "two runtimes: a plug-in's calls reach its own runtime, by version" FAKE_CUDA_LOG cuok \
	-- "$L/plughost_rt12" "$L/libplug_rt13.so" local rtdefault
# zeInitDrivers (loader-side path provided by the test: Debian's loader
# 1.8 lacks it)
plugrun "zeInitDrivers: blocks from before adopted" FAKE_ZE_LOG zeok ZE_ENABLE_ALT_DRIVERS="$ZE1" \
	-- "$L/ze_initdrivers_prog" initdrivers
# The driver's own 4 MiB allocation inside zeDriverGetProperties, by
# malloc and by operator new
for how in malloc new; do
	plugrun "the driver's allocation ($how) inside its own entry point: no call back into it" FAKE_ZE_LOG zeok \
		ZE_ENABLE_ALT_DRIVERS="$ZE1" FAKE_ZE_ALLOC_IN_CALL=$how -- "$B/ze_prog" reenter
done
# The same for the CUDA driver: 4 MiB allocated inside cuMemAlloc_v2
# (blocks registered at allocation, so a registration from there would be
# a call back into the driver).  The driver's block is freed into the
# cache, pending; the program's next 4 MiB block reuses it, and it is
# registered then: two blocks cached registered at exit.
build ranges ranges.c
for how in malloc new; do
	RUNQ_LIVE=2 runq "the CUDA driver's allocation ($how) inside its own entry point: no call back into it" \
		$P HOSTPIN_BACKEND=cuda HP_FAKE_CUDA="$F/libcuda.so.1" HP_EXPECT_PINNED=1 \
		FAKE_CUDA_ALLOC_IN_CALL=$how -- "$B/ranges" reenter
done
# zeInit through dlsym on the loader's handle (ctypes)
plugrun "zeInit and the extension lookup found on the loader's handle are seen" FAKE_ZE_LOG zeok \
	ZE_ENABLE_ALT_DRIVERS="$ZE1" HP_ZE_HANDLE=1 -- "$B/ze_prog" adopt
# Another dlsym interposer before and after hostpin: it sees every lookup,
# and hostpin's copies stay guarded
for order in before after; do
	d=$(mktemp -d)
	if [ $order = before ]; then pre="$L/libdlwrap.so:$LIB"; else pre="$LIB:$L/libdlwrap.so"; fi
	out=$(timeout 60 env LD_PRELOAD="$pre" HP_EXPECT_ACTIVE=1 HOSTPIN_CACHE=0 HOSTPIN_PIN_AFTER=0 \
		FAKE_CUDA_LOG="$d/log" HP_PATH=dldrv DLWRAP_LOG="$d/wrap" HOSTPIN_STATS_FILE="$d/s.json" \
		"$B/cuda_prog" sync 2>&1); rc=$?
	seen=$(grep -c "^cuMemcpy" "$d/wrap" 2>/dev/null)
	copies=$(python3 -c "import json;print(json.load(open('$d/s.json'))['copies_seen'])" 2>/dev/null)
	if [ $rc -eq 0 ] && [ "${seen:-0}" -ge 2 ] && [ "${copies:-0}" -ge 2 ]; then
		ok "loading: a dlsym interposer preloaded $order hostpin sees the lookups ($seen), copies guarded ($copies)"
	else bad "loading: dlsym interposer $order hostpin (rc $rc, seen ${seen:-0}, copies ${copies:-?}): $(echo "$out" | tail -2)"; fi
	rm -rf "$d"
done
# What libhostpin.so exports (the version script no longer hides by
# wildcard): the libc names, the hooks, the query API, nothing else
exp=$(readelf --dyn-syms -W "$LIB" | awk '$7 != "UND" && $5 == "GLOBAL" && $4 != "OBJECT" {print $8}' |
	grep -v "^\(cu\|cuda\|ze\)[A-Z]" | sort | tr '\n' ' ')
want="aligned_alloc calloc dlclose dlsym@@GLIBC_2.34 dlsym@GLIBC_2.2.5 dlvsym@@GLIBC_2.34 dlvsym@GLIBC_2.2.5 free hostpin_backend hostpin_query hostpin_stats madvise malloc malloc_usable_size memalign mmap mmap64 mremap munmap posix_memalign pvalloc realloc reallocarray valloc "
if [ "$exp" = "$want" ]; then ok "loading: libhostpin.so exports only its names (dlsym and dlvsym under glibc's versions)"
else bad "loading: exports differ: $exp"; fi
P=$P_SAVE

"""hostpin from Python: ctypes over the query API of hostpin.h.

    import hostpin
    hostpin.loaded()        # is libhostpin.so preloaded into this process?
    hostpin.stats()         # dict of the counters (hostpin_stats), or None
    hostpin.query(x)        # what hostpin knows about x, or None
    hostpin.backend()       # "mlock", "cuda", ... or None
    hostpin.library_path()  # the libhostpin.so to preload, or None

x is a numpy array, a torch tensor, a ctypes object, a writable buffer, or
an address (int).  Without hostpin every call returns None (or False) and
hostpin.why_not() says why; nothing raises.  `python3 -m hostpin` prints
the counters; `python3 -m hostpin [options] CMD...` runs CMD under the
launcher, as `hostpin [options] CMD...` does.  The functions exist only while
libhostpin.so is loaded: run the program under `hostpin` or
LD_PRELOAD=.../libhostpin.so.  Installed from the wheel (make wheel) this is
a package that carries libhostpin.so, hostpin-status and the launcher.
"""
import ctypes
import os

__all__ = ["loaded", "why_not", "stats", "query", "backend", "address_of",
           "library_path", "run",
           "KIND_MALLOC", "KIND_MMAP", "LOCKED", "REGISTERED", "PENDING"]

# hostpin_range.flags (hostpin.h)
KIND_MALLOC = 0x1
KIND_MMAP = 0x2
LOCKED = 0x10
REGISTERED = 0x20
PENDING = 0x40

# struct hostpin_stats, in hostpin.h's order: every field a uint64_t.
STATS_FIELDS = (
    "blocks_now", "bytes_now", "blocks_peak", "bytes_peak",
    "pinned_blocks_now", "pinned_bytes_now", "pinned_bytes_peak",
    "pin_failures", "pending_blocks", "mmap_ranges_now", "mmap_bytes_now",
    "pin_ns", "over_cap", "pin_calls", "unpin_calls", "adopted_blocks",
    "foreign_ranges", "copies_seen", "copies_registered",
    "copy_bytes_registered", "copy_waits", "leaked_blocks", "cached_blocks",
    "cached_bytes", "cache_hits", "cache_evictions", "imports_dropped",
)


class _Stats(ctypes.Structure):
    _fields_ = [(f, ctypes.c_uint64) for f in STATS_FIELDS]


class _Range(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("flags", ctypes.c_uint)]


_WHY = ("libhostpin.so is not loaded in this process: run it under "
        "`hostpin` or with LD_PRELOAD=/path/to/libhostpin.so")
_api = None


def _load():
    """The three entry points, looked up in the global scope once."""
    global _api
    if _api is None:
        try:
            proc = ctypes.CDLL(None)
            q, s, b = proc.hostpin_query, proc.hostpin_stats, proc.hostpin_backend
        except (AttributeError, OSError):
            _api = False
        else:
            q.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Range)]
            q.restype = ctypes.c_int
            s.argtypes = [ctypes.POINTER(_Stats), ctypes.c_size_t]
            s.restype = ctypes.c_int
            b.argtypes = []
            b.restype = ctypes.c_char_p
            _api = (q, s, b)
    return _api or None


def loaded():
    """True if libhostpin.so is loaded in this process."""
    return _load() is not None


def why_not():
    """Why the other calls return None: a sentence, or None if loaded."""
    return None if loaded() else _WHY


def backend():
    """The active backend's name ("disabled" when hostpin is a
    pass-through), or None without hostpin."""
    api = _load()
    return api[2]().decode() if api else None


def stats():
    """The counters of hostpin_stats() as a dict, or None without hostpin."""
    api = _load()
    if not api:
        return None
    s = _Stats()
    if api[1](ctypes.byref(s), ctypes.sizeof(s)) != 0:
        return None
    return {f: getattr(s, f) for f in STATS_FIELDS}


def address_of(obj):
    """The address of obj's first byte: an int as is, a torch tensor's
    data_ptr(), a numpy array's data pointer, a ctypes object's address,
    or a writable buffer's."""
    if isinstance(obj, bool):
        raise TypeError("a bool is not an address")
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "data_ptr") and callable(obj.data_ptr):  # torch
        return int(obj.data_ptr())
    ai = getattr(obj, "__array_interface__", None)  # numpy and friends
    if isinstance(ai, dict) and ai.get("data"):
        return int(ai["data"][0])
    if isinstance(obj, ctypes._SimpleCData) or isinstance(
            obj, (ctypes.Array, ctypes.Structure, ctypes.Union)):
        return ctypes.addressof(obj)
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError("cannot tell the address of a %s: pass an int, a "
                        "numpy array, a torch tensor, a ctypes object or a "
                        "writable buffer" % type(obj).__name__) from None
    if mv.readonly or mv.nbytes == 0:
        raise TypeError("cannot tell the address of a read-only or empty "
                        "buffer: pass its address as an int")
    return ctypes.addressof(ctypes.c_char.from_buffer(mv))


def query(obj):
    """What hostpin knows about the memory of obj (see address_of): a dict
    with base, len, flags and the flags by name (malloc, mmap, locked,
    registered, pending), or None if hostpin tracks no range there, or is
    not loaded (see why_not())."""
    api = _load()
    addr = address_of(obj)
    if not api:
        return None
    r = _Range()
    if not api[0](ctypes.c_void_p(addr), ctypes.byref(r)):
        return None
    f = r.flags
    return {"base": r.base or 0, "len": r.len, "flags": f,
            "malloc": bool(f & KIND_MALLOC), "mmap": bool(f & KIND_MMAP),
            "locked": bool(f & LOCKED), "registered": bool(f & REGISTERED),
            "pending": bool(f & PENDING)}


_HERE = os.path.dirname(os.path.abspath(__file__))


def library_path():
    """The libhostpin.so to preload (for LD_PRELOAD in a torchrun or srun
    line): the one installed with this module (the wheel), else the one
    loaded in this process, else None."""
    own = os.path.join(_HERE, "libhostpin.so")
    if os.path.isfile(own):
        return own
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                f = line.split(None, 5)
                if len(f) == 6 and os.path.basename(f[5].strip()) == "libhostpin.so":
                    return f[5].strip()
    except OSError:
        pass
    return None


def _launcher():
    """The launcher: the wheel's (beside libhostpin.so and hostpin-status
    in this package), else `hostpin` on PATH (make install, the package)."""
    own = os.path.join(_HERE, "hostpin")
    if os.path.isfile(own):
        return own
    import shutil
    return shutil.which("hostpin")


def run(args):
    """Replace this process with `hostpin ARGS...` (the launcher: options,
    then the command).  Returns only on failure, with an exit status."""
    import sys
    launcher = _launcher()
    if launcher is None:
        print("hostpin: no launcher: neither installed with this module nor "
              "`hostpin` on PATH", file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv("/bin/sh", ["sh", launcher] + list(args))
    except OSError as e:
        print("hostpin: cannot run %s: %s" % (launcher, e), file=sys.stderr)
        return 127


def _console():
    """The wheel's `hostpin` console script: the launcher."""
    import sys
    return run(sys.argv[1:])


def _main(args=None):
    import sys
    if args is None:
        args = sys.argv[1:]
    if args:
        return run(args)
    if not loaded():
        print("hostpin: " + _WHY, file=sys.stderr)
        return 1
    print("hostpin backend: %s" % backend())
    for k, v in stats().items():
        print("%-22s %d" % (k, v))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

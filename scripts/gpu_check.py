"""The measurement half of scripts/gpu-check.  Each mode runs in its own
process (with or without hostpin preloaded) and prints one JSON object;
`report DIR OUT` combines them into a table and a JSON file and exits 1
when any correctness check failed or a measurement is missing (see
verdict()).  `selftest` shows, without torch or a GPU, that the verdict
fails on every check forced to fail; `synth MODE` prints a passing result
for MODE, for scripts/gpu-check's own test.  GPU_CHECK_FORCE_FAIL=RUN.KEY
(KEY may be paths.NAME.KEY) makes report treat that check as failed."""
import ctypes
import json
import os
import statistics
import sys
import time

from gpu_check_threads import THREAD_RUNS, measure_threads, report_threads, synth_threads

MB = 1 << 20
# GPU_CHECK_SMALL=1: a rehearsal (over the fake driver, say): every size
# 1/16 of the real check's (at most 64 MiB), one repetition per cell.
SMALL = os.environ.get("GPU_CHECK_SMALL") == "1"


def mb(mib):
    """Bytes of a buffer the real check makes mib MiB large (1/16 of it
    under GPU_CHECK_SMALL)."""
    return (mib // 16 if SMALL else mib) * MB


SIZES = [mb(64), mb(256), mb(1024)]
HOSTPIN_REGISTERED = 0x20  # hostpin.h's hostpin_range.flags


class _Range(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t),
                ("flags", ctypes.c_uint)]


_query = []  # hostpin_query, looked up once ([None] without hostpin)


def hostpin_flags(addr):
    """hostpin's own answer about the memory at addr (hostpin_query of
    hostpin.h): the flags of the block it tracks there, 0 if it tracks none;
    None when hostpin is not preloaded."""
    if not _query:
        try:
            q = ctypes.CDLL(None).hostpin_query
            q.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Range)]
            q.restype = ctypes.c_int
        except AttributeError:
            q = None
        _query.append(q)
    if _query[0] is None:
        return None
    r = _Range()
    return r.flags if _query[0](addr, ctypes.byref(r)) else 0


def registered(t):
    """Whether the tensor's host memory is registered with the driver:
    hostpin's answer (hostpin_query) for a block hostpin tracks, else
    torch's is_pinned() (memory the program pinned; hostpin not preloaded).
    is_pinned() is no answer for hostpin's blocks: hostpin's registrations
    are invisible to the program (invariant 14), so it is False for them."""
    f = hostpin_flags(t.data_ptr())
    return bool(f & HOSTPIN_REGISTERED) if f else bool(t.is_pinned())


def wait_registered(t, limit):
    """Seconds until the tensor's memory is registered, polled: a block
    hostpin tracks may be registered in the background; None if not within
    limit seconds.  Memory hostpin does not track (or no hostpin): no wait,
    0 if is_pinned(), else None."""
    t0 = time.perf_counter()
    while not registered(t):
        if not hostpin_flags(t.data_ptr()) or time.perf_counter() - t0 > limit:
            return None
        time.sleep(0.001)
    return time.perf_counter() - t0


def hostpin_stats():
    class S(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in (
            "blocks_now bytes_now blocks_peak bytes_peak pinned_blocks_now "
            "pinned_bytes_now pinned_bytes_peak pin_failures pending_blocks "
            "mmap_ranges_now mmap_bytes_now pin_ns over_cap pin_calls "
            "unpin_calls adopted_blocks foreign_ranges copies_seen "
            "copies_registered copy_bytes_registered copy_waits "
            "leaked_blocks cached_blocks cached_bytes cache_hits "
            "cache_evictions imports_dropped").split()]
    try:
        f = ctypes.CDLL(None).hostpin_stats
    except AttributeError:
        return None
    s = S()
    f(ctypes.byref(s), ctypes.sizeof(s))
    return {k: getattr(s, k) for k, _ in S._fields_}


def active_devices():
    """Devices whose primary context is active, asked of the driver."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        n = ctypes.c_int()
        if cu.cuDeviceGetCount(ctypes.byref(n)) != 0:
            return None
        act = []
        for i in range(n.value):
            d, fl, a = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
            cu.cuDeviceGet(ctypes.byref(d), i)
            cu.cuDevicePrimaryCtxGetState(d, ctypes.byref(fl), ctypes.byref(a))
            if a.value:
                act.append(i)
        return act
    except OSError:
        return None


def bw(fn, nbytes, reps=2 if SMALL else 8):
    import torch
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return nbytes / statistics.median(ts) / 1e9


def measure(mode):
    import torch
    r = {"mode": mode, "preloaded": "LD_PRELOAD" in os.environ}
    # weights allocated before CUDA is initialised: adoption
    weights = torch.empty(mb(256), dtype=torch.uint8).fill_(7)
    torch.cuda.init()
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    wg = weights.to(dev, non_blocking=True)
    torch.cuda.synchronize()
    # registered by hostpin once CUDA is up (adoption), perhaps in the
    # background: waited for a little
    r["weights_registered_s"] = wait_registered(weights, 3)
    r["weights_is_pinned_after_first_copy"] = bool(weights.is_pinned())
    r["weights_copy_correct"] = bool((wg[:: 4099].cpu() == 7).all())
    r["bw"] = {}
    for n in SIZES:
        x = torch.empty(n, dtype=torch.uint8).fill_(1)
        y = torch.empty(n, dtype=torch.uint8)
        g = torch.empty(n, dtype=torch.uint8, device=dev).fill_(2)
        e = {"registered": registered(x), "is_pinned": bool(x.is_pinned())}
        e["h2d"] = bw(lambda: g.copy_(x, non_blocking=True), n)
        e["d2h"] = bw(lambda: y.copy_(g, non_blocking=True), n)
        if mode == "pageable":
            xp, yp = x.pin_memory(), torch.empty(n, dtype=torch.uint8).pin_memory()
            e["pin_memory_h2d"] = bw(lambda: g.copy_(xp, non_blocking=True), n)
            e["pin_memory_d2h"] = bw(lambda: yp.copy_(g, non_blocking=True), n)
            del xp, yp
        r["bw"][str(n // MB)] = e
        del x, y, g
    # hostpin's registrations are invisible to the program (invariant 14):
    # is_pinned() of its blocks is False, as of pageable memory
    r["program_sees_pageable"] = not any(e["is_pinned"] for e in r["bw"].values())
    # correctness of non_blocking copies as the program sees them
    n = mb(64)
    src = torch.empty(n, dtype=torch.uint8).fill_(3)
    g = torch.empty(n, dtype=torch.uint8, device=dev)
    g.copy_(src, non_blocking=True)
    src.fill_(4)  # overwrite right after the call returns
    torch.cuda.synchronize()
    r["h2d_source_overwrite_unseen"] = bool((g[:: 4099] == 3).all())
    g.fill_(5)
    dst = torch.empty(n, dtype=torch.uint8).fill_(0)
    dst.copy_(g, non_blocking=True)
    r["d2h_data_there_on_return"] = bool((dst[:: 4099] == 5).all())
    torch.cuda.synchronize()
    r["d2h_data_there_after_sync"] = bool((dst[:: 4099] == 5).all())
    # a training loop: a fresh 256 MiB CPU tensor each step, copied over
    def loop(pinned):
        ts = []
        for _ in range(16):
            t0 = time.perf_counter()
            x = torch.empty(mb(256), dtype=torch.uint8, pin_memory=pinned).fill_(1)
            x.to(dev, non_blocking=True)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t0)
            del x
        return statistics.median(ts[4:]) * 1e3
    r["loop_ms"] = loop(False)
    if mode == "pageable":
        r["loop_pin_memory_ms"] = loop(True)
    r["stats"] = hostpin_stats()
    r["active_devices"] = active_devices()
    return r


def measure_driver_api():
    """The driver-API copy paths: cuMemcpyHtoDAsync_v2 / cuMemcpyDtoHAsync_v2
    found with dlsym on libcuda's handle (ctypes) and through
    cuGetProcAddress_v2, on PyTorch's tensors and current stream."""
    import torch
    torch.cuda.init()
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    cu = ctypes.CDLL("libcuda.so.1")
    n = mb(64)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    proto_h2d = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_void_p)
    proto_d2h = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                 ctypes.c_size_t, ctypes.c_void_p)
    paths = {"dlsym": (proto_h2d(("cuMemcpyHtoDAsync_v2", cu)),
                       proto_d2h(("cuMemcpyDtoHAsync_v2", cu)))}
    gpa = cu.cuGetProcAddress_v2
    fns = []
    for name in ("cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync"):
        f = ctypes.c_void_p()
        rc = gpa(name.encode(), ctypes.byref(f), 12000, ctypes.c_uint64(0), None)
        fns.append(f.value if rc == 0 else None)
    if all(fns):
        paths["cuGetProcAddress"] = (proto_h2d(fns[0]), proto_d2h(fns[1]))
    r = {"preloaded": "LD_PRELOAD" in os.environ, "paths": {}}
    for name, (h2d, d2h) in paths.items():
        src = torch.empty(n, dtype=torch.uint8).fill_(3)
        g = torch.empty(n, dtype=torch.uint8, device=dev)
        e = {"registered": registered(src), "is_pinned": bool(src.is_pinned())}
        rc = h2d(g.data_ptr(), src.data_ptr(), n, stream)
        src.fill_(4)  # overwrite right after the call returns
        torch.cuda.synchronize()
        e["rc"] = rc
        e["h2d_source_overwrite_unseen"] = bool((g[:: 4099] == 3).all())
        g.fill_(5)
        torch.cuda.synchronize()
        dst = torch.empty(n, dtype=torch.uint8).fill_(0)
        d2h(dst.data_ptr(), g.data_ptr(), n, stream)
        e["d2h_data_there_on_return"] = bool((dst[:: 4099] == 5).all())
        torch.cuda.synchronize()
        e["h2d_gbps"] = bw(lambda: h2d(g.data_ptr(), src.data_ptr(), n, stream), n)
        e["d2h_gbps"] = bw(lambda: d2h(dst.data_ptr(), g.data_ptr(), n, stream), n)
        r["paths"][name] = e
    r["stats"] = hostpin_stats()
    return r


def regcost():
    import torch
    torch.cuda.init()
    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    s0 = hostpin_stats()
    t0 = time.perf_counter()
    x = torch.empty(mb(1024), dtype=torch.uint8)
    dt = time.perf_counter() - t0
    s1 = hostpin_stats()
    gib = mb(1024) / (1024 * MB)
    return {"alloc_s_per_gib": dt / gib, "pin_s_per_gib": (s1["pin_ns"] - s0["pin_ns"]) / 1e9 / gib,
            "registered": registered(x),
            "env": {k: v for k, v in os.environ.items() if k.startswith("HOSTPIN_")}}


# The runs whose JSON the report reads, and in each the checks that must
# hold.  Under HOSTPIN_COPY=async hostpin does not wait, so the program may
# see async semantics on return: only the data after a sync must be right.
RUNTIME_RUNS = {
    "pageable": ("weights_copy_correct", "h2d_source_overwrite_unseen",
                 "d2h_data_there_on_return", "d2h_data_there_after_sync"),
    "hostpin": ("weights_copy_correct", "h2d_source_overwrite_unseen",
                "d2h_data_there_on_return", "d2h_data_there_after_sync",
                "program_sees_pageable"),
    "hostpin_async": ("weights_copy_correct", "d2h_data_there_after_sync"),
}
DRIVER_RUNS = ("drvapi_pageable", "drvapi")
DRIVER_PATHS = ("dlsym", "cuGetProcAddress")
DRIVER_CHECKS = ("h2d_source_overwrite_unseen", "d2h_data_there_on_return")
REGCOST_RUNS = ("regcost_1", "regcost_2", "regcost_4", "regcost_8",
                "regcost_huge")


def force_fail(res, spec):
    """Make the check named RUN.KEY (or RUN.paths.NAME.KEY) fail."""
    if not spec:
        return
    keys = spec.split(".")
    node = res
    for k in keys[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(k), dict):
            return
        node = node[k]
    node[keys[-1]] = 1 if keys[-1] == "rc" else False


def verdict(res):
    """The correctness failures in a report's results, as strings; empty
    when every check held.  A run that is missing or unreadable (it
    crashed, timed out or printed no JSON) fails too."""
    bad = []
    only = os.environ.get("GPU_CHECK_RUNS", "").split()

    def chosen(run):  # GPU_CHECK_RUNS: only those runs ran
        return not only or run in only

    def flat(runs):  # {run: its checks}, each a key of its result dict
        for run, checks in runs.items():
            if not chosen(run):
                continue
            r = res.get(run)
            if not isinstance(r, dict):
                bad.append(f"{run}: no result")
                continue
            bad.extend(f"{run}: {c}" for c in checks if r.get(c) is not True)

    flat(RUNTIME_RUNS)
    for run in DRIVER_RUNS:
        if not chosen(run):
            continue
        r = res.get(run)
        paths = r.get("paths") if isinstance(r, dict) else None
        if not isinstance(paths, dict):
            bad.append(f"{run}: no result")
            continue
        for name in DRIVER_PATHS:
            e = paths.get(name)
            if not isinstance(e, dict):
                bad.append(f"{run}: path {name} not exercised")
                continue
            if e.get("rc") != 0:
                bad.append(f"{run} {name}: rc {e.get('rc')}")
            bad += [f"{run} {name}: {c}" for c in DRIVER_CHECKS
                    if e.get(c) is not True]
    for run in REGCOST_RUNS:
        if chosen(run) and not isinstance(res.get(run), dict):
            bad.append(f"{run}: no result")
    flat(ENG_RUNS)
    # under hostpin, a capture from its block comes out as one from pageable
    # memory without hostpin (invariant 14)
    p, r = res.get("eng_pageable"), res.get("eng_registered")
    if (chosen("eng_pageable") and chosen("eng_registered") and isinstance(p, dict)
            and isinstance(r, dict) and "graph_capture_ok" in p
            and r.get("graph_capture_ok") != p["graph_capture_ok"]):
        bad.append(f"eng_registered: graph capture from a hostpin block {r.get('graph_capture_ok')}, "
                   f"from pageable memory without hostpin (eng_pageable) {p['graph_capture_ok']}")
    flat(THREAD_RUNS)
    return bad


def synth(mode):
    """A result for MODE with every correctness check passing (for tests:
    no torch, no GPU)."""
    if mode in RUNTIME_RUNS:
        g = 3.0 if mode == "pageable" else 10.0
        bw_ = {"h2d": g, "d2h": g, "registered": mode != "pageable", "is_pinned": False,
               "pin_memory_h2d": 10.0, "pin_memory_d2h": 10.0}
        r = {"mode": mode, "preloaded": mode != "pageable",
             "weights_registered_s": 0.01 if mode != "pageable" else None,
             "weights_is_pinned_after_first_copy": False,
             "bw": {"64": dict(bw_)}, "loop_ms": 1.0,
             "loop_pin_memory_ms": 1.0, "stats": None,
             "active_devices": [0]}
        r.update({c: True for c in RUNTIME_RUNS["hostpin"]})
        return r
    if mode in DRIVER_RUNS:
        e = {"registered": mode == "drvapi", "is_pinned": False, "rc": 0, "h2d_gbps": 10.0,
             "d2h_gbps": 10.0}
        e.update({c: True for c in DRIVER_CHECKS})
        return {"preloaded": mode == "drvapi", "stats": None,
                "paths": {n: dict(e) for n in DRIVER_PATHS}}
    return {"alloc_s_per_gib": 0.1, "pin_s_per_gib": 0.1,
            "registered": True, "env": {}}


def selftest():
    """The verdict passes on passing results and fails on each check
    forced to fail, and on each run missing."""
    runs = (list(RUNTIME_RUNS) + list(DRIVER_RUNS) + list(REGCOST_RUNS) + list(ENG_RUNS)
            + list(THREAD_RUNS))
    good = {m: synth_any(m) for m in runs}
    fails = []
    if verdict(good):
        fails.append(f"passing results judged failed: {verdict(good)}")
    specs = [f"{r}.{c}" for r, cs in list(RUNTIME_RUNS.items()) + list(ENG_RUNS.items())
             + list(THREAD_RUNS.items()) for c in cs]
    specs += [f"{r}.paths.{p}.{c}" for r in DRIVER_RUNS for p in DRIVER_PATHS
              for c in DRIVER_CHECKS + ("rc",)]
    for spec in specs:
        res = json.loads(json.dumps(good))
        force_fail(res, spec)
        if not verdict(res):
            fails.append(f"{spec} forced to fail: verdict still passes")
    for run in runs:
        res = json.loads(json.dumps(good))
        res[run] = None
        if not verdict(res):
            fails.append(f"{run} missing: verdict still passes")
    for run in DRIVER_RUNS:
        for p in DRIVER_PATHS:
            res = json.loads(json.dumps(good))
            del res[run]["paths"][p]
            if not verdict(res):
                fails.append(f"{run} path {p} missing: verdict still passes")
    res = json.loads(json.dumps(good))
    res["eng_pageable"]["graph_capture_ok"] = True
    if not verdict(res):
        fails.append("graph capture without hostpin differing from with: verdict still passes")
    for f in fails:
        print(f"gpu_check selftest: FAIL: {f}")
    print(f"gpu_check selftest: {len(specs)} checks, {len(runs)} runs: "
          f"{'ok' if not fails else 'FAILED'}")
    return 1 if fails else 0


def page_nodes(addr, nbytes, samples=1024):
    """NUMA nodes of a sample of the pages of [addr, addr+nbytes), asked of
    the kernel with move_pages(2) and no target nodes: {node: pages}."""
    page = os.sysconf("SC_PAGE_SIZE")
    npages = max(1, nbytes // page)
    step = max(1, npages // samples)
    addrs = [addr + i * page for i in range(0, npages, step)]
    ptrs = (ctypes.c_void_p * len(addrs))(*addrs)
    status = (ctypes.c_int * len(addrs))()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(279, 0, ctypes.c_ulong(len(addrs)), ptrs, None, status, 0) != 0:
        return {"error": ctypes.get_errno()}
    nodes = {}
    for st in status:
        nodes[str(st)] = nodes.get(str(st), 0) + 1  # negative: -errno
    return nodes


def measure_lazy():
    """The default policy (HOSTPIN_PIN_AFTER, register at the Nth copy): 8
    buffers of 256 MiB each copied once (weights), then one buffer copied 16
    times (a batch buffer), and where the reused block's pages are."""
    import torch
    torch.cuda.init()
    torch.empty(1, device="cuda")
    n = mb(256)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    r = {"preloaded": "LD_PRELOAD" in os.environ,
         "pin_after": os.environ.get("HOSTPIN_PIN_AFTER", "default")}
    s0 = hostpin_stats() or {}
    t0 = time.perf_counter()
    bufs = []
    for i in range(8):
        b = torch.empty(n, dtype=torch.uint8).fill_(i)
        dev.copy_(b)
        torch.cuda.synchronize()
        bufs.append(b)
    r["single_use_s"] = time.perf_counter() - t0
    r["single_use_registered"] = sum(registered(b) for b in bufs)
    s1 = hostpin_stats() or {}
    r["single_use_registrations"] = s1.get("pin_calls", 0) - s0.get("pin_calls", 0)
    del bufs
    b = torch.empty(n, dtype=torch.uint8).fill_(1)
    ts = []
    for _ in range(16):
        t0 = time.perf_counter()
        dev.copy_(b)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    r["reused_s"] = sum(ts)
    r["reused_gbps_first"] = n / ts[0] / 1e9
    r["reused_gbps_after"] = n / statistics.median(ts[2:]) / 1e9
    r["reused_registered"] = registered(b)
    r["reused_is_pinned"] = bool(b.is_pinned())
    s2 = hostpin_stats() or {}
    r["reused_registrations"] = s2.get("pin_calls", 0) - s1.get("pin_calls", 0)
    r["reused_page_nodes"] = page_nodes(b.data_ptr(), n)
    assert bool((dev[:4096].cpu() == 1).all())
    return r


LAZY_RUNS = ("lazy_pageable", "lazy", "lazy_first")


def synth_lazy(mode):
    """A measure_lazy result (for tests: no torch, no GPU)."""
    reg = mode != "lazy_pageable"
    return {"preloaded": reg, "pin_after": "1" if mode == "lazy_first" else "default",
            "single_use_s": 1.0, "single_use_registered": 8 if mode == "lazy_first" else 0,
            "single_use_registrations": 8 if mode == "lazy_first" else 0,
            "reused_s": 1.0, "reused_gbps_first": 10.0, "reused_gbps_after": 50.0 if reg else 10.0,
            "reused_registered": reg, "reused_is_pinned": False,
            "reused_registrations": 1 if reg else 0,
            "reused_page_nodes": {"0": 1024}}


def report_lazy(res):
    """The lines of measure_lazy's runs in the report."""
    for k in ("lazy_pageable", "lazy", "lazy_first"):
        r = res.get(k)
        if r:
            print(f"policy {k} (HOSTPIN_PIN_AFTER={r['pin_after']}): single-use 8x256 MiB "
                  f"{r['single_use_s']:.3f} s, {r['single_use_registrations']} registrations, "
                  f"{r.get('single_use_registered')} registered; reused 16x256 MiB {r['reused_s']:.3f} s "
                  f"(first {r['reused_gbps_first']:.2f} GB/s, then {r['reused_gbps_after']:.2f} GB/s), "
                  f"{r['reused_registrations']} registrations, registered {r.get('reused_registered')} "
                  f"(is_pinned() {r.get('reused_is_pinned')}), "
                  f"page nodes {r['reused_page_nodes']}")


def report(d, out):
    res = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".json"):
            try:
                res[f[:-5]] = json.load(open(os.path.join(d, f)))
            except ValueError:
                res[f[:-5]] = None
    force_fail(res, os.environ.get("GPU_CHECK_FORCE_FAIL"))
    try:
        import torch
        res["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        res["torch"] = torch.__version__
    except ImportError:  # the self-test's synthetic results
        res["device"], res["torch"] = None, None
    res["date"] = time.strftime("%Y-%m-%d %H:%M:%S")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    p, h, a = res.get("pageable"), res.get("hostpin"), res.get("hostpin_async")
    print(f"hostpin gpu-check on {res['device']} (torch {res['torch']})")
    env = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("HOSTPIN_"))
    if env:
        print(f"the caller's environment (each run's own settings override it): {env}")
    if SMALL:
        print("GPU_CHECK_SMALL=1: a rehearsal, not a measurement: each buffer 1/16 of the size "
              "its label gives (table rows give the sizes used), one repetition")
    print("registered: hostpin's own answer (hostpin_query) for its blocks, else is_pinned(); "
          "is_pinned(): what the program sees, False for hostpin's blocks (invariant 14: "
          "hostpin's registrations are invisible to the program)")
    ok = True
    if isinstance(p, dict) and isinstance(h, dict):
        print(f"{'MiB':>6} {'dir':>4} {'pageable':>9} {'hostpin':>9} {'pin_memory':>10} "
              f"{'hp/pin':>7} {'hp/pageable':>11} registered is_pinned()")
        for n in p["bw"]:
            for dname in ("h2d", "d2h"):
                pg, hp, pm = p["bw"][n][dname], h["bw"][n][dname], p["bw"][n]["pin_memory_" + dname]
                print(f"{n:>6} {dname:>4} {pg:9.2f} {hp:9.2f} {pm:10.2f} {hp / pm:7.2f} "
                      f"{hp / pg:11.2f} {str(h['bw'][n].get('registered')):>10} "
                      f"{h['bw'][n]['is_pinned']}")
                ok &= hp >= 0.95 * pm and hp >= 3 * pg
        ws = h.get("weights_registered_s")
        print(f"adoption: weights allocated before CUDA init: registered "
              f"{'within ' + format(ws, '.3f') + ' s of' if ws is not None else 'NOT within 3 s of'} "
              f"their first copy's end; is_pinned() {h['weights_is_pinned_after_first_copy']}")
        print(f"loop (fresh 256 MiB tensor per step), ms/step: pageable {p['loop_ms']:.2f}, "
              f"hostpin {h['loop_ms']:.2f}, pin_memory() {p['loop_pin_memory_ms']:.2f}")
        for name, r in (("sync", h), ("async", a)):
            if isinstance(r, dict):
                print(f"HOSTPIN_COPY={name}: H2D source overwrite unseen {r['h2d_source_overwrite_unseen']}, "
                      f"D2H data there on return {r['d2h_data_there_on_return']}, "
                      f"after sync {r['d2h_data_there_after_sync']}")
        print(f"active devices at the end: without {p['active_devices']}, with hostpin {h['active_devices']}")
    for k in DRIVER_RUNS:
        r = res.get(k)
        for name, e in (r if isinstance(r, dict) else {}).get("paths", {}).items():
            print(f"driver API via {name} ({'hostpin' if r['preloaded'] else 'pageable'}): "
                  f"registered {e.get('registered')}, is_pinned() {e['is_pinned']}, H2D source overwrite unseen "
                  f"{e['h2d_source_overwrite_unseen']}, D2H data there on return "
                  f"{e['d2h_data_there_on_return']}, H2D {e['h2d_gbps']:.2f} GB/s, "
                  f"D2H {e['d2h_gbps']:.2f} GB/s")
    for k in sorted(res):
        if k.startswith("regcost_") and isinstance(res[k], dict):
            print(f"registration {k[8:]:>5}: {res[k]['pin_s_per_gib']:.3f} s/GiB pinning, "
                  f"{res[k]['alloc_s_per_gib']:.3f} s/GiB allocation")
    report_lazy(res)
    report_engine(res)
    report_threads(res, fmt)
    print(f"performance goal (hostpin >= 95% of pin_memory and >= 3x pageable): "
          f"{'met' if ok else 'NOT met'}")
    bad = verdict(res)
    res["correctness_failures"] = bad
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    for b in bad:
        print(f"CORRECTNESS FAILURE: {b}")
    print(f"correctness (every copy path keeps pageable semantics, every run completed): "
          f"{'ok' if not bad else f'FAILED ({len(bad)})'}")
    print(f"written: {out}")
    return 1 if bad else 0


# ---- the copy engine's tables (issue 24): three repetitions per cell ----
# Runs (scripts/gpu-check gives each its environment):
#   eng_pageable    no hostpin: the pageable and pin_memory() rows and baselines
#   eng_staged      HOSTPIN_STAGE=1, a buffer never registered (PIN_AFTER high)
#   eng_registered  HOSTPIN_STAGE=1, blocks registered at allocation; the
#                   torch.cuda.graph check with a fast-decaying cache
#   eng_default     HOSTPIN_STAGE=1, the default policy: first copy and steady
#                   state, weights, a fresh tensor per step, DataLoader,
#                   checkpoint; the copy that earns registration (background)
#   eng_inline      the default policy with HOSTPIN_REGISTER_BACKGROUND=0:
#                   the copy that earns registration, registering inside it
# Buffers of one cell's repetitions stay alive until the cell is done so that
# a "fresh" buffer is never a block hostpin's cache hands back.
ENG_MIB = (2, 4, 16, 64) if SMALL else (4, 64, 256, 1024)
REPS = 1 if SMALL else 3
WARM = 4  # copies between a buffer's first and its steady-state copies
ENG_RUNS = {
    "eng_pageable": ("sweep_data_ok", "weights_data_ok", "checkpoint_data_ok",
                     "loader_data_ok", "h2d_source_overwrite_unseen",
                     "d2h_data_there_on_return", "duplex_data_ok"),
    "eng_staged": ("sweep_data_ok", "h2d_source_overwrite_unseen",
                   "d2h_data_there_on_return", "duplex_data_ok"),
    "eng_registered": ("sweep_data_ok", "graph_registered_before_capture",
                       "graph_program_sees_pageable", "graph_capture_as_pageable",
                       "graph_pinned_capture_ok", "graph_replays_correct"),
    "eng_default": ("sweep_data_ok", "weights_data_ok", "checkpoint_data_ok",
                    "loader_data_ok", "h2d_source_overwrite_unseen",
                    "d2h_data_there_on_return", "earn_data_ok"),
    "eng_inline": ("earn_data_ok",),
}
EARN_MIB = (16, 64) if SMALL else (256, 1024)
EARN_WAIT_S = 5  # the most earn() waits for a background registration


def threads():
    return len(os.listdir("/proc/self/task"))


def cell(xs):
    """median (min-max) of a list of numbers, as a dict."""
    return {"med": statistics.median(xs), "min": min(xs), "max": max(xs),
            "all": list(xs)}


def semantics(dev):
    """Pageable semantics of a 64 MiB non_blocking copy as the program sees
    them: the H2D source overwritten right after the call, the D2H data
    there on return."""
    import torch
    n = mb(64)
    src = torch.empty(n, dtype=torch.uint8).fill_(3)
    g = torch.empty(n, dtype=torch.uint8, device=dev)
    g.copy_(src, non_blocking=True)
    src.fill_(4)
    torch.cuda.synchronize()
    r = {"h2d_source_overwrite_unseen": bool((g[:: 4099] == 3).all())}
    g.fill_(5)
    dst = torch.empty(n, dtype=torch.uint8).fill_(0)
    dst.copy_(g, non_blocking=True)
    r["d2h_data_there_on_return"] = bool((dst[:: 4099] == 5).all())
    torch.cuda.synchronize()
    return r


def earn(dev):
    """The copy that earns registration (HOSTPIN_PIN_AFTER=2: a buffer's
    second copy): ms of copies 1-4 of a fresh buffer (H2D), and ms from the
    start of copy 2 until hostpin says the buffer is registered (its own
    answer, hostpin_query: is_pinned() stays False, invariant 14; nan if
    not within EARN_WAIT_S after copy 4).  The buffers stay alive
    (returned) so that none is a cached block handed back."""
    import torch
    out, ok, keep = {}, True, []
    for mib in EARN_MIB:
        n = mib * MB
        g = torch.empty(n, dtype=torch.uint8, device=dev)
        per = {k: [] for k in ("copy1", "copy2", "copy3", "copy4", "registered_ms")}
        is_pinned = False
        for r in range(REPS):
            x = torch.empty(n, dtype=torch.uint8).fill_(20 + r)
            keep.append(x)
            t2 = 0.0
            for i in range(1, 5):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                if i == 2:
                    t2 = t0
                g.copy_(x, non_blocking=True)
                torch.cuda.synchronize()
                per[f"copy{i}"].append((time.perf_counter() - t0) * 1e3)
            waited = wait_registered(x, EARN_WAIT_S)
            per["registered_ms"].append((time.perf_counter() - t2) * 1e3
                                        if waited is not None else float("nan"))
            is_pinned = is_pinned or bool(x.is_pinned())
            ok = ok and bool((g[:: 4099] == 20 + r).all())
        out[str(mib)] = {k: cell(v) for k, v in per.items()}
        out[str(mib)]["is_pinned"] = is_pinned
    return out, ok, keep


def sweep(dev, pinned):
    """H2D/D2H GB/s at ENG_MIB: per repetition a fresh source (filled) and a
    fresh, untouched destination; the first copy of each, then WARM copies,
    then the steady state (enough copies to move >= 256 MiB)."""
    import torch
    import resource
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    out, ok, tmax = {}, True, threads()
    for mib in ENG_MIB:
        n = mib * MB
        k = max(1, 256 // mib)
        g = torch.empty(n, dtype=torch.uint8, device=dev).fill_(2)
        keep = []
        t = {"h2d_first": [], "h2d": [], "d2h_first": [], "d2h": []}

        def timed(fn, times=1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(times):
                fn()
            torch.cuda.synchronize()
            return n * times / (time.perf_counter() - t0) / 1e9
        for r in range(REPS):
            v = 10 + r
            x = torch.empty(n, dtype=torch.uint8, pin_memory=pinned).fill_(v)
            y = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
            keep += [x, y]
            h2d = lambda: g.copy_(x, non_blocking=True)  # noqa: E731
            d2h = lambda: y.copy_(g, non_blocking=True)  # noqa: E731
            t["h2d_first"].append(timed(h2d))
            timed(h2d, WARM)
            t["h2d"].append(timed(h2d, k))
            ok &= bool((g[:: 4099] == v).all())
            t["d2h_first"].append(timed(d2h))
            timed(d2h, WARM)
            t["d2h"].append(timed(d2h, k))
            ok &= bool((y[:: 4099] == v).all())
            tmax = max(tmax, threads())
        out[str(mib)] = {key: cell(xs) for key, xs in t.items()}
        out[str(mib)]["registered"] = registered(keep[0])
        out[str(mib)]["is_pinned"] = bool(keep[0].is_pinned())
        del keep, g, x, y
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    return out, ok, tmax, cpu


def weights_once(dev, how):
    """8 x 256 MiB buffers (filled beforehand, not timed) copied to the
    device once each; how == "pin_memory": pin_memory() of each, timed
    with its own copy.  Seconds per repetition.  Every buffer (and pinned
    copy) is returned to be kept alive: no repetition reuses a block."""
    import torch
    n, ts, ok, keep = mb(256), [], True, []
    gs = [torch.empty(n, dtype=torch.uint8, device=dev) for _ in range(8)]
    for r in range(REPS):
        bufs = [torch.empty(n, dtype=torch.uint8).fill_(16 * r + i) for i in range(8)]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for g, b in zip(gs, bufs):
            if how == "pin_memory":
                b = b.pin_memory()
                keep.append(b)
            g.copy_(b, non_blocking=True)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
        ok &= all(bool((g[:: 4099] == 16 * r + i).all()) for i, g in enumerate(gs))
        keep += bufs
    return cell(ts), ok, keep


def checkpoint(dev, how):
    """1 GiB D2H into fresh host memory (allocation timed): GB/s; the
    buffers are returned to be kept alive."""
    import torch
    n, gbps, ok, keep = mb(1024), [], True, []
    g = torch.empty(n, dtype=torch.uint8, device=dev)
    for r in range(REPS):
        g.fill_(40 + r)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if how == "pin_memory":
            h = torch.empty(n, dtype=torch.uint8, pin_memory=True)
            h.copy_(g, non_blocking=True)
        else:
            h = g.cpu()
        torch.cuda.synchronize()
        gbps.append(n / (time.perf_counter() - t0) / 1e9)
        ok &= bool((h[:: 4099] == 40 + r).all())
        keep.append(h)
    return cell(gbps), ok, keep


def fresh_loop(dev, pinned):
    """A fresh 256 MiB tensor per step (allocated, filled, copied): ms per
    step, each repetition the mean of 4 steps after 4 warm-up steps."""
    import torch
    reps = []
    for r in range(REPS + 1):
        t0 = time.perf_counter()
        for _ in range(4):
            x = torch.empty(mb(256), dtype=torch.uint8, pin_memory=pinned).fill_(1)
            x.to(dev, non_blocking=True)
            torch.cuda.synchronize()
            del x
        if r:
            reps.append((time.perf_counter() - t0) / 4 * 1e3)
    return cell(reps)


class _Batches:
    """16 batches of 64 MiB made by the workers (shared memory)."""
    def __len__(self):
        return 16

    def __getitem__(self, i):
        import torch
        return torch.full((mb(64),), i + 1, dtype=torch.uint8)


def loader(dev, pin):
    """DataLoader, 4 workers: the H2D time of a batch (ms, median of the
    epoch) and the wall time per batch, one epoch per repetition."""
    import torch
    from torch.utils.data import DataLoader
    h2d, wall, ok = [], [], True
    for r in range(REPS):
        dl = DataLoader(_Batches(), batch_size=None, num_workers=4, pin_memory=pin)
        ts = []
        t0 = time.perf_counter()
        for i, b in enumerate(dl):
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            gb = b.to(dev, non_blocking=True)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t1)
            ok &= bool((gb[:: 4099] == i + 1).all())
        wall.append((time.perf_counter() - t0) / 16 * 1e3)
        h2d.append(statistics.median(ts) * 1e3)
    return {"h2d_ms": cell(h2d), "wall_ms": cell(wall)}, ok


def duplex(dev, pinned):
    """An H2D and a D2H of 256 MiB each at once, on two threads and two
    streams, against the same two one after the other on one thread: GB/s
    of both together, median (min-max) of REPS; and whether the data
    arrived.  pinned: the host buffers from pin_memory()."""
    import threading
    import torch
    n = mb(256)

    def host(v):
        t = torch.empty(n, dtype=torch.uint8)
        return (t.pin_memory() if pinned else t).fill_(v)
    a, b = host(30), host(0)
    ga = torch.empty(n, dtype=torch.uint8, device=dev)
    gb = torch.empty(n, dtype=torch.uint8, device=dev).fill_(31)
    sa, sb = torch.cuda.Stream(dev), torch.cuda.Stream(dev)
    torch.cuda.synchronize()  # gb filled before a stream of its own reads it

    def h2d():
        with torch.cuda.stream(sa):
            ga.copy_(a, non_blocking=True)
        sa.synchronize()

    def d2h():
        with torch.cuda.stream(sb):
            b.copy_(gb, non_blocking=True)
        sb.synchronize()
    h2d()  # warm-up: each direction's staging ring is made at its first copy
    d2h()
    torch.cuda.synchronize()
    out = {"serial": [], "duplex": []}
    ok = True
    for _ in range(REPS):
        b.fill_(0)
        t0 = time.perf_counter()
        h2d()
        d2h()
        out["serial"].append(2 * n / (time.perf_counter() - t0) / 1e9)
        ok &= bool((b[:: 4099] == 31).all())
        b.fill_(0)
        ga.fill_(0)
        torch.cuda.synchronize()
        go = threading.Barrier(3)

        def run(f):
            go.wait()
            f()
        ts = [threading.Thread(target=run, args=(f,)) for f in (h2d, d2h)]
        for t in ts:
            t.start()
        go.wait()
        t0 = time.perf_counter()
        for t in ts:
            t.join()
        out["duplex"].append(2 * n / (time.perf_counter() - t0) / 1e9)
        ok &= bool((b[:: 4099] == 31).all()) and bool((ga[:: 4099] == 30).all())
    return {k: cell(v) for k, v in out.items()}, ok


def capture_outcome(dev, src):
    """Whether torch.cuda.graph captures a step copying from the CPU tensor
    src (and the error when not): torch refuses a copy from a CPU tensor
    that is_pinned() calls pageable during a capture."""
    import torch
    g = torch.empty(src.numel(), dtype=torch.uint8, device=dev)
    torch.cuda.synchronize()
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            g.copy_(src, non_blocking=True)
        return True, None
    except Exception as e:  # noqa: BLE001 - the outcome compared
        return False, str(e)[:300]


def graph_check(dev):
    """torch.cuda.graph and hostpin's blocks (eng_registered: registered at
    allocation, HOSTPIN_PIN_AFTER=0, a cache that decays fast; eng_pageable
    runs it without hostpin, the outcome to match).  hostpin's
    registrations are invisible to the program (invariant 14): torch sees
    its block x as pageable (is_pinned() False) and treats a capture of a
    copy from it as from pageable memory.  So (1) that capture's outcome
    must equal the outcome from a pageable tensor hostpin does not track,
    in the same process (and the verdict compares it with eng_pageable's,
    where x is pageable memory without hostpin); (2) what a program does
    instead, a step copying from x.pin_memory(), is captured while
    hostpin's cache decays (four blocks freed just before the capture,
    which lasts longer than their decay time: the decay thread must not
    unregister them meanwhile, which would invalidate a global-mode
    capture; one more freed between replays), and each replay, after x is
    refilled and copied into the pinned tensor, sees x's current contents."""
    import torch
    n = mb(64)
    r = {}
    s0 = hostpin_stats() or {}
    junk = [torch.empty(n, dtype=torch.uint8).fill_(1) for _ in range(4)]
    for j in junk:
        j.to(dev)
    x = torch.empty(n, dtype=torch.uint8).fill_(0)
    # registered at allocation, or (in the background) soon after
    r["graph_registered_before_capture"] = wait_registered(x, 3) is not None
    r["graph_program_sees_pageable"] = not x.is_pinned()
    xp = x.pin_memory()
    g = torch.empty(n, dtype=torch.uint8, device=dev)
    out = torch.empty(n, dtype=torch.uint8, device=dev)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        g.copy_(xp, non_blocking=True)
        out.copy_(g)
        out.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    del junk  # cached now; decaying during the capture
    s1 = hostpin_stats() or {}
    r["graph_replays"] = 0
    try:
        with torch.cuda.graph(graph):
            g.copy_(xp, non_blocking=True)
            time.sleep(0.2)  # > HOSTPIN_CACHE_DECAY_MS: the decay is due
            out.copy_(g)
            out.add_(1)
        r["graph_pinned_capture_ok"] = True
    except Exception as e:  # noqa: BLE001 - reported, fails the check
        r["graph_pinned_capture_ok"] = False
        r["graph_pinned_capture_error"] = str(e)[:300]
    s2 = hostpin_stats() or {}
    r["graph_evictions_during_capture"] = s2.get("cache_evictions", 0) - s1.get("cache_evictions", 0)
    ok = r["graph_pinned_capture_ok"]
    for i in range(8 if ok else 0):
        x.fill_(i + 1)
        xp.copy_(x)
        graph.replay()
        torch.cuda.synchronize()
        ok &= bool((out[:: 4099] == i + 2).all())
        t = torch.empty(n, dtype=torch.uint8).fill_(9)
        t.to(dev)
        del t
        time.sleep(0.05)
        r["graph_replays"] = i + 1
    r["graph_replays_correct"] = ok
    s3 = hostpin_stats() or {}
    r["graph_cache_evictions"] = s3.get("cache_evictions", 0) - s0.get("cache_evictions", 0)
    # last: a refused capture leaves nothing behind that the above needs
    r["graph_capture_ok"], r["graph_capture_error"] = capture_outcome(dev, x)
    ref = torch.empty(64 << 10, dtype=torch.uint8).fill_(1)  # < HOSTPIN_THRESHOLD
    r["graph_ref_hostpin_flags"] = hostpin_flags(ref.data_ptr())
    r["graph_capture_pageable_ok"], r["graph_capture_pageable_error"] = capture_outcome(dev, ref)
    r["graph_capture_as_pageable"] = r["graph_capture_ok"] == r["graph_capture_pageable_ok"]
    r["graph_registered_after"] = registered(x)
    return r


def measure_engine(mode):
    import torch
    r = {"mode": mode, "preloaded": "LD_PRELOAD" in os.environ,
         "env": {k: v for k, v in os.environ.items() if k.startswith("HOSTPIN_")},
         "cpus": len(os.sched_getaffinity(0)), "threads_start": threads()}
    torch.cuda.init()
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    torch.empty(1, device=dev)
    r["threads_cuda"] = threads()
    oks = {}
    # The checkpoint's and the weights' buffers stay alive until the end:
    # freed, they would be cached (hostpin's cache, PyTorch's pinned one)
    # and handed to the sweep's buffers of the same size as "fresh" ones.
    hold = []
    if mode in ("eng_pageable", "eng_default"):
        r["checkpoint_gbps"], oks["c"], k1 = checkpoint(dev, "pageable")
        r["weights_s"], oks["w"], k2 = weights_once(dev, "pageable")
        hold += k1 + k2
        if mode == "eng_pageable":
            r["checkpoint_pin_memory_gbps"], oks["c2"], k1 = checkpoint(dev, "pin_memory")
            r["weights_pin_memory_s"], oks["w2"], k2 = weights_once(dev, "pin_memory")
            hold += k1 + k2
        r["checkpoint_data_ok"] = oks["c"] and oks.get("c2", True)
        r["weights_data_ok"] = oks["w"] and oks.get("w2", True)
    if mode in ("eng_default", "eng_inline"):
        r["earn"], r["earn_data_ok"], k3 = earn(dev)
        hold += k3
    if mode == "eng_inline":
        r["threads_end"] = threads()
        r["stats"] = hostpin_stats()
        return r
    r["sweep"], ok, tmax, cpu = sweep(dev, False)
    r["sweep_cpu_s"] = cpu
    if mode == "eng_pageable":
        r["sweep_pin_memory"], ok2, _, r["sweep_pin_memory_cpu_s"] = sweep(dev, True)
        ok &= ok2
    r["sweep_data_ok"] = ok
    r["threads_max"] = tmax
    del hold  # the DataLoader forks: a smaller parent
    if mode in ("eng_pageable", "eng_default"):
        r["loop_ms"] = fresh_loop(dev, False)
        if mode == "eng_pageable":
            r["loop_pin_memory_ms"] = fresh_loop(dev, True)
        r["loader"], ok = loader(dev, False)
        r["loader_pin_memory"], ok2 = loader(dev, True)
        r["loader_data_ok"] = ok and ok2
    if mode in ("eng_pageable", "eng_staged", "eng_default"):
        r.update(semantics(dev))
    if mode in ("eng_pageable", "eng_staged"):
        r["duplex"], r["duplex_data_ok"] = duplex(dev, False)
        if mode == "eng_pageable":
            r["duplex_pin_memory"], ok = duplex(dev, True)
            r["duplex_data_ok"] &= ok
    if mode in ("eng_pageable", "eng_registered"):
        r.update(graph_check(dev))
    r["threads_end"] = threads()
    r["stats"] = hostpin_stats()
    return r


def synth_engine(mode):
    """A measure_engine result with every check passing (no torch, no GPU)."""
    c = lambda v: {"med": v, "min": v * 0.9, "max": v * 1.1, "all": [v] * REPS}  # noqa: E731
    def sw(g, registered, is_pinned=False):
        return {str(m): {"h2d_first": c(g), "h2d": c(g), "d2h_first": c(g), "d2h": c(g),
                         "registered": registered, "is_pinned": is_pinned} for m in ENG_MIB}
    if mode == "eng_inline":
        return {"mode": mode, "preloaded": True, "env": {}, "cpus": 16, "threads_start": 1,
                "threads_cuda": 4, "threads_end": 5, "stats": None, "earn_data_ok": True,
                "earn": {str(m): dict({k: c(9.0) for k in ("copy1", "copy2", "copy3", "copy4",
                                                             "registered_ms")}, is_pinned=False)
                         for m in EARN_MIB}}
    g = 5.0 if mode in ("eng_pageable", "eng_staged") else 50.0
    r = {"mode": mode, "preloaded": mode != "eng_pageable", "env": {}, "cpus": 16,
         "threads_start": 1, "threads_cuda": 4, "threads_max": 6, "threads_end": 6,
         "sweep": sw(g, mode in ("eng_registered", "eng_default")), "sweep_cpu_s": 1.0,
         "stats": None}
    if mode in ("eng_pageable", "eng_staged"):
        r["duplex"] = {"serial": c(5.0), "duplex": c(5.0 if mode == "eng_pageable" else 9.0)}
    if mode == "eng_pageable":
        r["duplex_pin_memory"] = {"serial": c(50.0), "duplex": c(90.0)}
        r["sweep_pin_memory"] = sw(50.0, True, True)
        r.update({"checkpoint_pin_memory_gbps": c(20.0), "weights_pin_memory_s": c(0.2),
                  "loop_pin_memory_ms": c(10.0)})
    if mode in ("eng_pageable", "eng_default"):
        r.update({"checkpoint_gbps": c(10.0), "weights_s": c(0.3), "loop_ms": c(20.0),
                  "loader": {"h2d_ms": c(5.0), "wall_ms": c(30.0)},
                  "loader_pin_memory": {"h2d_ms": c(2.0), "wall_ms": c(25.0)}})
    if mode == "eng_default":
        r["earn"] = {str(m): dict({k: c(5.0) for k in ("copy1", "copy2", "copy3", "copy4",
                                                       "registered_ms")}, is_pinned=False)
                     for m in EARN_MIB}
    if mode in ("eng_pageable", "eng_registered"):
        # torch refuses the capture from a CPU tensor it calls pageable: a
        # hostpin block, as pageable memory without hostpin
        err = "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless..."
        r.update({"graph_replays": 8, "graph_evictions_during_capture": 0,
                  "graph_cache_evictions": 5 if mode == "eng_registered" else 0,
                  "graph_registered_after": mode == "eng_registered",
                  "graph_registered_before_capture": mode == "eng_registered",
                  "graph_ref_hostpin_flags": 0 if mode == "eng_registered" else None,
                  "graph_capture_ok": False, "graph_capture_error": err,
                  "graph_capture_pageable_ok": False, "graph_capture_pageable_error": err,
                  "graph_program_sees_pageable": True, "graph_capture_as_pageable": True,
                  "graph_pinned_capture_ok": True, "graph_replays_correct": True})
    r.update({k: True for k in ENG_RUNS[mode]})
    return r


def synth_any(mode):
    """A passing result for any run (for scripts/gpu-check's own test)."""
    if mode in LAZY_RUNS:
        return synth_lazy(mode)
    if mode in ENG_RUNS:
        return synth_engine(mode)
    if mode in THREAD_RUNS:
        return synth_threads(mode)
    return synth(mode)


ALL_RUNS = (list(RUNTIME_RUNS) + list(DRIVER_RUNS) + list(REGCOST_RUNS) + list(LAZY_RUNS)
            + list(ENG_RUNS) + list(THREAD_RUNS))


def rehearsal(out):
    """scripts/check-torch's verdict on a rehearsal over the fake driver
    (GPU_CHECK_SMALL=1): the fake runs no kernels and no graphs, so the
    data checks (compared on the device) and the graph captures fail there
    and are not judged; judged: every run chosen left a result, and what
    needs no kernel: the program sees hostpin's blocks as pageable
    (invariant 14) while hostpin's own answer (hostpin_query) says they are
    registered where the run registers them, and the capture from a hostpin
    block comes out as from pageable memory.  Prints the failures; 1 if any."""
    res = json.load(open(out))
    only = os.environ.get("GPU_CHECK_RUNS", "").split()
    bad = [f"{k}: no result" for k in ALL_RUNS
           if (not only or k in only) and not isinstance(res.get(k), dict)]

    def want(run, what, ok):
        if isinstance(res.get(run), dict) and not ok(res[run]):
            bad.append(f"{run}: {what}")
    want("hostpin", "program_sees_pageable", lambda r: r.get("program_sees_pageable") is True)
    want("hostpin", "registered (hostpin_query)",
         lambda r: all(e.get("registered") for e in r["bw"].values()))
    want("drvapi", "registered (hostpin_query)",
         lambda r: all(e.get("registered") for e in r["paths"].values()))
    for k in REGCOST_RUNS:
        want(k, "registered (hostpin_query)", lambda r: r.get("registered") is True)
    for k in ("lazy", "lazy_first"):
        want(k, "the reused buffer registered (hostpin_query)",
             lambda r: r.get("reused_registered") is True)
    for k in ("eng_registered", "eng_default"):
        want(k, "sweep buffers registered, is_pinned() False",
             lambda r: all(e.get("registered") and e.get("is_pinned") is False
                           for e in r["sweep"].values()))
    for k in ("eng_default", "eng_inline"):
        want(k, "the copy that earns registration: registered (hostpin_query)",
             lambda r: all(x == x for e in r["earn"].values()  # x == x: not nan
                           for x in e["registered_ms"]["all"]))
    for c in ("graph_registered_before_capture", "graph_program_sees_pageable",
              "graph_capture_as_pageable"):
        want("eng_registered", c, lambda r: r.get(c) is True)
    for b in bad:
        print(f"gpu_check rehearsal: FAIL: {b}")
    print(f"gpu_check rehearsal: {'ok' if not bad else f'FAILED ({len(bad)})'}")
    return 1 if bad else 0


def fmt(c, f="{:.2f}"):
    """A cell: median (min-max)."""
    if not isinstance(c, dict):
        return "-"
    return f"{f.format(c['med'])} ({f.format(c['min'])}-{f.format(c['max'])})"


def report_engine(res):
    """The copy engine's tables; the goals printed, not enforced."""
    P, S, R, D, I = (res.get(k) if isinstance(res.get(k), dict) else None
                     for k in ("eng_pageable", "eng_staged", "eng_registered", "eng_default",
                               "eng_inline"))
    if not any((P, S, R, D, I)):
        return
    print(f"copy engine: GB/s, median (min-max) of {REPS}; first = a fresh buffer's first "
          f"copy, steady = after {WARM} more copies")
    rows = [("pageable", P and P.get("sweep")), ("staged", S and S.get("sweep")),
            ("registered", R and R.get("sweep")), ("pin_memory", P and P.get("sweep_pin_memory")),
            ("default", D and D.get("sweep"))]
    print(f"{'MiB':>6} {'dir':>4} {'memory':>10} {'first':>22} {'steady':>22} registered is_pinned()")
    med = {}
    for mib in ENG_MIB:
        for d in ("h2d", "d2h"):
            for name, sw in rows:
                e = (sw or {}).get(str(mib))
                if not isinstance(e, dict):
                    continue
                med[(name, mib, d)] = (e[d + "_first"]["med"], e[d]["med"])
                print(f"{mib:>6} {d:>4} {name:>10} {fmt(e[d + '_first']):>22} "
                      f"{fmt(e[d]):>22} {str(e.get('registered')):>10} {e.get('is_pinned')}")
    goals = []
    first_ok = steady_ok = slower_ok = None
    for mib in ENG_MIB:
        for d in ("h2d", "d2h"):
            pin = med.get(("pin_memory", mib, d))
            pg = med.get(("pageable", mib, d))
            df = med.get(("default", mib, d))
            if pin and df:
                if mib >= 64:
                    first_ok = (first_ok is not False) and df[0] >= 0.8 * pin[1]
                steady_ok = (steady_ok is not False) and df[1] >= 0.98 * pin[1]
            if pg:
                for name in ("staged", "registered", "default"):
                    v = med.get((name, mib, d))
                    if v:
                        slower_ok = (slower_ok is not False) and v[0] >= pg[0] and v[1] >= pg[1]
    earn_ok = None
    for mib in EARN_MIB:
        e = ((D or {}).get("earn") or {}).get(str(mib))
        if isinstance(e, dict):
            earn_ok = (earn_ok is not False) and e["copy2"]["med"] <= 1.1 * e["copy1"]["med"]
    word = lambda b: "not measured" if b is None else ("met" if b else "NOT met")  # noqa: E731
    goals.append(f"default policy: the copy that earns registration no slower than the staged "
                 f"copy before it (copy 2 <= 1.1x copy 1): {word(earn_ok)}")
    goals.append(f"default policy: a buffer's first copy >= 0.8x pin_memory() from 64 MiB: {word(first_ok)}")
    goals.append(f"default policy: steady state >= 0.98x pin_memory() from 4 MiB: {word(steady_ok)}")
    goals.append(f"no copy (staged, registered, default) slower than pageable (first against first, "
                 f"steady against steady): {word(slower_ok)}")
    if D:
        P = P or {}
        print(f"weights 8x256 MiB copied once, s: pageable {fmt(P.get('weights_s'), '{:.3f}')}, "
              f"pin_memory() with its own copy {fmt(P.get('weights_pin_memory_s'), '{:.3f}')}, "
              f"hostpin default {fmt(D.get('weights_s'), '{:.3f}')}")
        print(f"fresh 256 MiB tensor per step, ms/step: pageable {fmt(P.get('loop_ms'))}, "
              f"pin_memory() {fmt(P.get('loop_pin_memory_ms'))}, hostpin default {fmt(D.get('loop_ms'))}")
        for key, pin in (("loader", "False"), ("loader_pin_memory", "True")):
            a, b = P.get(key) or {}, D.get(key) or {}
            print(f"DataLoader 4 workers, 16x64 MiB, pin_memory={pin}: batch H2D ms without "
                  f"hostpin {fmt(a.get('h2d_ms'))}, with {fmt(b.get('h2d_ms'))}; wall ms/batch "
                  f"without {fmt(a.get('wall_ms'))}, with {fmt(b.get('wall_ms'))}")
        print(f"checkpoint 1 GiB D2H into fresh host memory, GB/s: pageable "
              f"{fmt(P.get('checkpoint_gbps'))}, pin_memory() {fmt(P.get('checkpoint_pin_memory_gbps'))}, "
              f"hostpin default {fmt(D.get('checkpoint_gbps'))}")
    for name, r in (("background", D), ("inline", I)):
        for mib in EARN_MIB:
            e = ((r or {}).get("earn") or {}).get(str(mib))
            if isinstance(e, dict):
                print(f"the copy that earns registration, fresh {mib} MiB H2D, ms ({name}"
                      f"{', HOSTPIN_REGISTER_BACKGROUND=0' if name == 'inline' else ''}): copy 1 "
                      f"{fmt(e['copy1'])}, copy 2 (earns) {fmt(e['copy2'])}, copy 3 "
                      f"{fmt(e['copy3'])}, copy 4 {fmt(e['copy4'])}; registered (hostpin_query) "
                      f"{fmt(e['registered_ms'])} after copy 2 began; is_pinned() {e.get('is_pinned')}")
    if P or S:
        dp, ds, dq = ((r or {}).get(k) or {} for r, k in ((P, "duplex"), (S, "duplex"),
                                                          (P, "duplex_pin_memory")))
        print(f"an H2D and a D2H of 256 MiB each, GB/s of both together, one after the other / "
              f"at once (two threads, two streams): pageable {fmt(dp.get('serial'))} / "
              f"{fmt(dp.get('duplex'))}, staged {fmt(ds.get('serial'))} / {fmt(ds.get('duplex'))}, "
              f"pin_memory() {fmt(dq.get('serial'))} / {fmt(dq.get('duplex'))}")
    for name, r in (("without hostpin", P), ("hostpin, registered", R)):
        if r and "graph_capture_ok" in r:
            err = lambda k: f" ({r[k]})" if r.get(k) else ""  # noqa: E731
            print(f"torch.cuda.graph ({name}): capture of a copy from a 64 MiB CPU tensor "
                  f"{r.get('graph_capture_ok')}{err('graph_capture_error')}; from a 64 KiB one "
                  f"hostpin does not track {r.get('graph_capture_pageable_ok')}; the tensor "
                  f"registered before {r.get('graph_registered_before_capture')}, after "
                  f"{r.get('graph_registered_after')}, is_pinned() "
                  f"{not r.get('graph_program_sees_pageable')}")
            print(f"torch.cuda.graph ({name}): capture from its pin_memory() copy while the cache "
                  f"decays {r.get('graph_pinned_capture_ok')}{err('graph_pinned_capture_error')}, "
                  f"{r.get('graph_replays', 0)} replays correct {r.get('graph_replays_correct')}, "
                  f"cache evictions counted during the capture "
                  f"{r.get('graph_evictions_during_capture')}, in all {r.get('graph_cache_evictions')}")
    for name, r in (("pageable", P), ("staged", S), ("registered", R), ("default", D)):
        if r:
            print(f"CPU threads ({name}, /proc/self/task; {r.get('cpus')} CPUs allowed): start "
                  f"{r.get('threads_start')}, after CUDA init {r.get('threads_cuda')}, max during "
                  f"the sweep {r.get('threads_max')}, end {r.get('threads_end')}; sweep CPU time "
                  f"{r.get('sweep_cpu_s', 0):.2f} s")
    for gl in goals:
        print(f"goal (printed, not enforced): {gl}")


if __name__ == "__main__":
    m = sys.argv[1]
    if m == "report":
        sys.exit(report(sys.argv[2], sys.argv[3]))
    if m == "selftest":
        sys.exit(selftest())
    if m == "rehearsal":
        sys.exit(rehearsal(sys.argv[2]))
    if m == "synth":
        print(json.dumps(synth_any(sys.argv[2])))
        sys.exit(0)
    if m.startswith("eng_"):
        print(json.dumps(measure_engine(m)))
    elif m.startswith("thr_"):
        print(json.dumps(measure_threads(m)))
    elif m.startswith("regcost"):
        print(json.dumps(regcost()))
    elif m.startswith("lazy"):
        print(json.dumps(measure_lazy()))
    elif m.startswith("drvapi"):
        print(json.dumps(measure_driver_api()))
    else:
        print(json.dumps(measure(m)))

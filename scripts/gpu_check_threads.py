"""scripts/gpu-check's staged first copy per copy-thread count (issue 43).
Runs (scripts/gpu-check gives each its environment):
  thr_pageable  no hostpin: the driver's pageable path, the baseline
  thr_1 .. thr_8  HOSTPIN_STAGE_THREADS=1, 2, 4, 8, staging on, buffers
                never registered (HOSTPIN_PIN_AFTER high)
  thr_auto      the same with the default count (HOSTPIN_STAGE_THREADS=0:
                sized to HOSTPIN_STAGE_LINK and the memcpy rate)
Each: a fresh pageable buffer's first H2D, and a first D2H into a fresh
pageable destination, at THR_MIB, GB/s, median (min-max) of REPS, the data
checked (thr_data_ok); and the count hostpin chose (its --show line)."""
import os
import subprocess
import time

MB = 1 << 20
SMALL = os.environ.get("GPU_CHECK_SMALL") == "1"  # a rehearsal: gpu_check.py
THR_MIB = (16, 64) if SMALL else (256, 1024)
REPS = 1 if SMALL else 3
THREAD_RUNS = {"thr_pageable": ("thr_data_ok",), "thr_1": ("thr_data_ok",),
               "thr_2": ("thr_data_ok",), "thr_4": ("thr_data_ok",),
               "thr_8": ("thr_data_ok",), "thr_auto": ("thr_data_ok",)}
COLS = ("thr_pageable", "thr_1", "thr_2", "thr_4", "thr_8", "thr_auto")


def cell(xs):
    import statistics
    return {"med": statistics.median(xs), "min": min(xs), "max": max(xs), "all": list(xs)}


def chosen():
    """hostpin's HOSTPIN_STAGE_THREADS line in this environment (--show)."""
    if "LD_PRELOAD" not in os.environ:
        return None
    env = dict(os.environ, HOSTPIN_SHOW="1")
    try:
        out = subprocess.run(["true"], env=env, capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("HOSTPIN_STAGE_THREADS="):
            return line
    return None


def measure_threads(mode):
    import torch
    torch.cuda.init()
    dev = torch.device("cuda", 0)
    torch.empty(1, device=dev)
    r = {"mode": mode, "preloaded": "LD_PRELOAD" in os.environ,
         "env": {k: v for k, v in os.environ.items() if k.startswith("HOSTPIN_")},
         "cpus": len(os.sched_getaffinity(0)), "chosen": chosen()}
    ok = True
    for mib in THR_MIB:
        n = mib * MB
        g = torch.empty(n, dtype=torch.uint8, device=dev).fill_(1)
        keep, t = [], {"h2d_first": [], "d2h_first": []}
        for rep in range(REPS):
            v = 20 + rep
            x = torch.empty(n, dtype=torch.uint8).fill_(v)
            y = torch.empty(n, dtype=torch.uint8)
            keep += [x, y]  # alive: never a cached block handed back
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            g.copy_(x, non_blocking=True)
            torch.cuda.synchronize()
            t["h2d_first"].append(n / (time.perf_counter() - t0) / 1e9)
            ok &= bool((g[::4099] == v).all())
            t0 = time.perf_counter()
            y.copy_(g, non_blocking=True)
            torch.cuda.synchronize()
            t["d2h_first"].append(n / (time.perf_counter() - t0) / 1e9)
            ok &= bool((y[::4099] == v).all())
        r[str(mib)] = {k: cell(xs) for k, xs in t.items()}
        del keep, g
    r["thr_data_ok"] = ok
    return r


def synth_threads(mode):
    """A passing measure_threads result (no torch, no GPU)."""
    v = 5.0 if mode == "thr_pageable" else {"thr_1": 9.0, "thr_2": 18.0, "thr_4": 36.0,
                                             "thr_8": 50.0, "thr_auto": 50.0}[mode]
    c = {"med": v, "min": v * 0.9, "max": v * 1.1, "all": [v] * REPS}
    r = {"mode": mode, "preloaded": mode != "thr_pageable", "env": {}, "cpus": 16,
         "chosen": None if mode == "thr_pageable" else
         "HOSTPIN_STAGE_THREADS=0 (auto (6 here): link 55 GB/s (HOSTPIN_STAGE_LINK), ...)",
         "thr_data_ok": True}
    for mib in THR_MIB:
        r[str(mib)] = {"h2d_first": c, "d2h_first": c}
    return r


def report_threads(res, fmt):
    """The table: first copies per copy-thread count, and what auto chose."""
    rs = {k: res.get(k) if isinstance(res.get(k), dict) else None for k in COLS}
    if not any(rs.values()):
        return
    print(f"staged first copy per HOSTPIN_STAGE_THREADS, GB/s, median (min-max) of {REPS}: "
          "a fresh pageable buffer, never registered")
    print(f"{'MiB':>6} {'dir':>4} " + " ".join(f"{c[4:]:>18}" for c in COLS))
    for mib in THR_MIB:
        for d in ("h2d_first", "d2h_first"):
            cells = [fmt(((rs[c] or {}).get(str(mib)) or {}).get(d)) for c in COLS]
            print(f"{mib:>6} {d[:3]:>4} " + " ".join(f"{x:>18}" for x in cells))
    a = rs["thr_auto"]
    print(f"auto chose: {(a or {}).get('chosen')}")

"""A PyTorch CPU loop that creates and drops large tensors each step.
Prints: ms per step after the first, minor faults per step after the first,
and hostpin's registration calls made after the first step (-1 without
hostpin)."""
import ctypes
import resource
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "blocks_now bytes_now blocks_peak bytes_peak pinned_blocks_now "
        "pinned_bytes_now pinned_bytes_peak pin_failures pending_blocks "
        "mmap_ranges_now mmap_bytes_now pin_ns over_cap pin_calls "
        "unpin_calls").split()]


def pin_calls():
    try:
        f = ctypes.CDLL(None).hostpin_stats
    except AttributeError:
        return None
    s = Stats()
    f(ctypes.byref(s), ctypes.sizeof(s))
    return s.pin_calls


def step():
    # a batch, an activation and a gradient-sized buffer, dropped each step
    a = torch.ones(16 << 20)           # 64 MiB
    b = torch.empty(8 << 20).fill_(2)  # 32 MiB
    c = a[: 8 << 20] * b               # 32 MiB
    return float(c[123])


step()
p0 = pin_calls()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
t0 = time.perf_counter()
for _ in range(steps):
    step()
dt = (time.perf_counter() - t0) * 1e3 / steps
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) // steps
p1 = pin_calls()
print(f"{dt:.3f} {faults} {-1 if p0 is None else p1 - p0}")

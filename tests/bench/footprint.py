# Footprint of a Python workload, with or without hostpin preloaded:
#   footprint.py strings|numpy [FAKE_CUDART]
# strings: a list of 1M short strings (CPython's object arenas); numpy: a
# 1 GiB np.ones and its product.  With FAKE_CUDART (a path to the fake
# runtime), device 0 is made active first, as a CUDA job would.  Prints one
# line: peak RSS (VmHWM), locked memory (VmLck) and hostpin's pinned bytes.
import ctypes
import sys


def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) >> 10
    return -1


def pinned_peak_mib():
    try:
        f = ctypes.CDLL(None).hostpin_stats
    except AttributeError:
        return 0
    buf = (ctypes.c_uint64 * 64)()
    f(buf, ctypes.sizeof(buf))
    return buf[6] >> 20  # pinned_bytes_peak


if len(sys.argv) > 2:
    ctypes.CDLL(sys.argv[2]).cudaSetDevice(0)
if sys.argv[1] == "strings":
    xs = ["item-%d-%s" % (i, "x" * (i % 40)) for i in range(1000000)]
    assert len(xs) == 1000000
else:
    import numpy as np
    a = np.ones(1 << 27)
    b = a * 3.0
    assert float(b[99]) == 3.0
print("VmHWM %d MiB, VmLck %d MiB, pinned peak %d MiB" %
      (status("VmHWM"), status("VmLck"), pinned_peak_mib()))

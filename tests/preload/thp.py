# Huge pages of a large numpy array (numpy advises MADV_HUGEPAGE itself):
# prints AnonHugePages (KiB, /proc/self/smaps_rollup) and whether both
# arrays' mappings still carry the huge-page advice ("hg" in VmFlags).
import re

import numpy as np


def anon_huge_kb():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return -1


def advised(addr):
    inside = False
    for line in open("/proc/self/smaps"):
        m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) ", line)
        if m:
            inside = int(m.group(1), 16) <= addr < int(m.group(2), 16)
        elif inside and line.startswith("VmFlags:"):
            return "hg" in line.split()[1:]
    return False


a = np.ones(1 << 27)  # 1 GiB of float64
b = a * 3.0
assert float(b[12345]) == 3.0
mid = a.nbytes // 2
print(anon_huge_kb(), int(advised(a.ctypes.data + mid) and advised(b.ctypes.data + mid)))

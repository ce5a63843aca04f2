"""PyPI's torch (and DeepSpeed, CuPy) over the fake CUDA driver, one
scenario per run: `python check_torch.py SCENARIO`.  Exit 0 when every check
of the scenario held; prints "FAIL: ..." per broken check.  Run by
scripts/check-torch without hostpin and under hostpin's modes; the checks
rely only on copies (the fake runs no kernels)."""
import os
import sys
import tempfile

import torch

MiB = 1 << 20
fails = []
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import hostpin  # noqa: E402  (the repository's module: hostpin.query)

UNDER_HOSTPIN = "libhostpin" in os.environ.get("LD_PRELOAD", "")


def registered_by_hostpin(addr, what):
    """Under hostpin: wait (a generous limit, polled) until hostpin has
    registered the block at addr, so the checks that follow look at a
    registered block; a FAIL if it never does."""
    if not UNDER_HOSTPIN:
        return
    import time
    end = time.monotonic() + 60
    while time.monotonic() < end:
        q = hostpin.query(addr)
        if q and q["registered"]:
            return
        time.sleep(0.1)
    fails.append(f"hostpin never registered {what}: {hostpin.query(addr)}")
    print("FAIL:", fails[-1], flush=True)


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what, flush=True)


def pattern(nbytes, seed):
    n = nbytes // 4
    return (torch.arange(n, dtype=torch.int32) * 7 + seed)


def roundtrip():
    for mib in (64, 512):
        x = pattern(mib * MiB, mib)
        for _ in range(3):  # copied again and again: hostpin registers it
            y = x.cuda()
            z = y.cpu()
            check(torch.equal(z, x), f"round trip of {mib} MiB")
            del y, z


def h2d_nonblocking():
    x = pattern(64 * MiB, 3)
    want = x.clone()
    for _ in range(3):
        y = x.to("cuda", non_blocking=True)
        x.fill_(-1)  # at return: the copy must have taken the old data
        torch.cuda.synchronize()
        check(torch.equal(y.cpu(), want), "non_blocking H2D: the source overwritten at return changed the copy")
        x.copy_(want)


def d2h_nonblocking():
    want = pattern(64 * MiB, 5)
    y = want.cuda()
    for _ in range(3):
        z = torch.empty_like(want)  # pageable
        z.copy_(y, non_blocking=True)
        # read at return, no synchronize: pageable memory has the data
        check(torch.equal(z, want), "non_blocking D2H into pageable memory: data not there at return")
        torch.cuda.synchronize()


def pinning():
    x = pattern(64 * MiB, 9)
    for _ in range(3):
        x.cuda()  # copies: hostpin registers x
    registered_by_hostpin(x.data_ptr(), "a tensor copied three times")
    check(not x.is_pinned(), "is_pinned() of pageable memory (registered by hostpin) is True")
    px = x.pin_memory()
    check(px.is_pinned(), "pin_memory() result not pinned")
    check(px.data_ptr() != x.data_ptr(), "pin_memory() returned the same memory, not a copy")
    x.fill_(-9)
    check(torch.equal(px, pattern(64 * MiB, 9)), "pin_memory() copy changed with its source")
    ds = torch.utils.data.TensorDataset(pattern(64 * MiB, 11).reshape(64, -1))
    n = 0
    for (b,) in torch.utils.data.DataLoader(ds, batch_size=16, pin_memory=True):
        check(b.is_pinned(), "DataLoader(pin_memory=True) batch not pinned")
        # its own pinned copy (cudaHostAlloc), not the collated batch that
        # looked pinned because hostpin registered it (HOSTPIN_PIN_AFTER=0)
        check(not UNDER_HOSTPIN or hostpin.query(b.data_ptr()) is None,
              "DataLoader(pin_memory=True) skipped a batch hostpin had registered")
        check(torch.equal(b.cuda().cpu(), b), "DataLoader batch round trip")
        n += 1
    check(n == 4, "DataLoader batches")


def workers():
    ds = torch.utils.data.TensorDataset(pattern(64 * MiB, 13).reshape(64, -1))
    want = pattern(64 * MiB, 13).reshape(64, -1)
    seen = 0
    for (b,) in torch.utils.data.DataLoader(ds, batch_size=8, num_workers=2):
        y = b.to("cuda", non_blocking=True)
        check(torch.equal(y.cpu(), want[seen:seen + 8]), "two-worker DataLoader batch (shared memory) round trip")
        seen += 8
    check(seen == 64, "two-worker DataLoader saw every batch")


def save_load():
    y = pattern(64 * MiB, 15).cuda()
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "t.pt")
        torch.save(y, f)
        z = torch.load(f)
        check(z.is_cuda and torch.equal(z.cpu(), y.cpu()), "torch.load of a CUDA tensor")
        z = torch.load(f, mmap=True)
        check(z.is_cuda and torch.equal(z.cpu(), y.cpu()), "torch.load(mmap=True) of a CUDA tensor")


def repeated():
    b = torch.empty(64 * MiB // 4, dtype=torch.int32)
    for i in range(8):
        b.fill_(i)
        y = b.to("cuda", non_blocking=True)
        b.fill_(-1)
        z = torch.empty_like(b)
        z.copy_(y, non_blocking=True)
        check(bool((z == i).all()), f"buffer copied repeatedly while it changes: round {i}")


def deepspeed_native():
    os.environ["DS_PIN_MEMORY_BACKEND"] = "native"
    os.environ["DS_PIN_MEMORY_REGISTER_DEVICE"] = "1"
    from deepspeed.utils.pin_memory import get_native_pinned_memory
    pm = get_native_pinned_memory()
    src = pattern(64 * MiB, 17)
    for r in range(5):  # pin, copy, free, re-pin
        t = pm.pin(src)
        y = t.cuda()
        check(torch.equal(y.cpu(), src), f"DeepSpeed native round {r}")
        pm.unpin(t)
        del t, y


def cupy_checks():
    import cupy
    import numpy
    a = numpy.arange(16 * MiB, dtype=numpy.int32)
    for _ in range(3):
        g = cupy.asarray(a)
        check(numpy.array_equal(cupy.asnumpy(g), a), "cupy asarray/asnumpy")
    s = cupy.cuda.Stream(non_blocking=True)
    g = cupy.empty_like(g)
    b = a.copy()
    g.set(b, stream=s)
    b[:] = -1  # set() from pageable memory: staged at return
    s.synchronize()
    out = numpy.empty_like(a)
    g.get(stream=s, out=out)
    check(numpy.array_equal(out, a), "cupy set/get on a stream")
    p = cupy.cuda.alloc_pinned_memory(a.nbytes)
    pa = numpy.frombuffer(p, a.dtype, a.size)
    pa[:] = a
    check(numpy.array_equal(cupy.asnumpy(cupy.asarray(pa)), a), "cupy pinned memory round trip")
    # copied to the device by address (cupy's asarray stages through its
    # own pinned buffer): hostpin registers the numpy array itself
    for _ in range(3):
        cupy.cuda.runtime.memcpy(g.data.ptr, a.ctypes.data, a.nbytes, 1)
    registered_by_hostpin(a.ctypes.data, "a numpy array copied three times")
    at = cupy.cuda.runtime.pointerGetAttributes(a.ctypes.data)
    check(at.type == 0 and at.hostPointer == 0 and at.devicePointer == 0,
          f"pointerGetAttributes of a numpy array: type {at.type}, host {at.hostPointer:#x}, device {at.devicePointer:#x}")


SCENARIOS = {f.__name__: f for f in (roundtrip, h2d_nonblocking, d2h_nonblocking, pinning, workers, save_load,
                                     repeated, deepspeed_native, cupy_checks)}

if __name__ == "__main__":
    name = sys.argv[1]
    if name == "list":
        print(" ".join(SCENARIOS))
        sys.exit(0)
    check(torch.cuda.is_available(), "torch.cuda.is_available() over the fake driver")
    SCENARIOS[name]()
    print(f"{name}: {'FAILED' if fails else 'ok'}")
    sys.exit(1 if fails else 0)

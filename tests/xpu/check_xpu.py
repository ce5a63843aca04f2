"""make check-xpu's scenarios: dpctl 0.21.1 (Intel's SYCL runtime and its
Unified Runtime Level Zero adapter, from PyPI) over the fake Level Zero
driver (tests/fakes/fake_ze.c) through Debian's loader and
tests/fakes/ze_loader_shim.c.  No kernel runs on the fake: every check moves
data host -> device -> host by copies and compares bytes.

check_xpu.py list        the scenario names
check_xpu.py NAME        run one; exit 0 when every check held

scripts/check-xpu runs each without hostpin, under hostpin's defaults and
under HOSTPIN_PIN_AFTER=0, and reads the fake driver's log.
XPU_MAX_MIB caps the round trip's sizes (default 512)."""
import ctypes
import os
import sys
import threading

# UR_L0_USE_IMMEDIATE_COMMANDLISTS picks the adapter's command lists; it is
# read when the adapter starts, so before dpctl is imported.
SCEN = sys.argv[1] if len(sys.argv) > 1 else "list"
if SCEN in ("lists_immediate", "lists_regular"):
    os.environ["UR_L0_USE_IMMEDIATE_COMMANDLISTS"] = (
        "1" if SCEN == "lists_immediate" else "0")

import warnings  # noqa: E402

warnings.simplefilter("ignore", DeprecationWarning)
import numpy as np  # noqa: E402

MiB = 1 << 20
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL: " + what, flush=True)


def pattern(n, seed):
    """n fresh bytes, different for every seed"""
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def setup():
    global dpctl, dm, dpt, q
    import dpctl
    import dpctl.memory as dm
    import dpctl.tensor as dpt
    q = dpctl.SyclQueue("level_zero:gpu")
    print("device:", q.sycl_device.name, flush=True)


def sizes():
    top = int(os.environ.get("XPU_MAX_MIB", "512"))
    s, out = 1, []
    while s <= top:
        out.append(s)
        s *= 2
    return out


def roundtrip():
    """asarray/asnumpy of fresh arrays, 1 MiB to 512 MiB, each size twice
    (hostpin's default imports a block at its second copy)"""
    for i, mib in enumerate(sizes()):
        for k in range(2):
            a = pattern(mib * MiB, 2 * i + k)
            x = dpt.asarray(a, sycl_queue=q)
            b = dpt.asnumpy(x)
            check(np.array_equal(a, b), "asarray/asnumpy %d MiB (%d)" % (mib, k))
            del a, x, b


def memcpy():
    """queue.memcpy and memcpy_async + events between numpy buffers and USM
    device memory"""
    n = 48 * MiB
    for k in range(3):
        a = pattern(n, 100 + k)
        b = np.zeros(n, dtype=np.uint8)
        d = dm.MemoryUSMDevice(n, queue=q)
        q.memcpy(d, a, n)
        q.memcpy(b, d, n)
        check(np.array_equal(a, b), "memcpy host->device->host (%d)" % k)
        c = np.zeros(n, dtype=np.uint8)
        src = pattern(n, 200 + k)  # alive until the copy ran
        e1 = q.memcpy_async(d, src, n)
        e2 = q.memcpy_async(c, d, n, [e1])
        e2.wait()
        check(np.array_equal(c, src), "memcpy_async + events (%d)" % k)
        # halves, out of one buffer and back into another
        h = n // 2
        e3 = q.memcpy_async(d, a[h:], h)
        e4 = q.memcpy_async(c[:h], d, h, [e3])
        q.wait()
        e4.wait()
        check(np.array_equal(c[:h], a[h:]), "memcpy_async halves (%d)" % k)


def usm():
    """USM host, shared and device objects: filled from the host, copied
    between them, read back"""
    n = 8 * MiB
    a = pattern(n, 7)
    mh = dm.MemoryUSMHost(n, queue=q)
    ms = dm.MemoryUSMShared(n, queue=q)
    md = dm.MemoryUSMDevice(n, queue=q)
    check(mh.get_usm_type() == "host" and ms.get_usm_type() == "shared" and
          md.get_usm_type() == "device", "USM types %s %s %s" % (
              mh.get_usm_type(), ms.get_usm_type(), md.get_usm_type()))
    mh.copy_from_host(a)
    q.memcpy(md, mh, n)
    q.memcpy(ms, md, n)
    out = np.frombuffer(ms.copy_to_host(), dtype=np.uint8)
    check(np.array_equal(a, out), "USM host -> device -> shared")
    b = np.zeros(n, dtype=np.uint8)
    q.memcpy(b, ms, n)
    check(np.array_equal(a, b), "USM shared -> numpy")
    del mh, ms, md


def lists(immediate):
    """the adapter's immediate or regular command lists, as the fake's log
    shows"""
    roundtrip_small = int(os.environ.get("XPU_MAX_MIB", "512")) >= 64
    for k, mib in enumerate((1, 16, 64 if roundtrip_small else 1)):
        a = pattern(mib * MiB, 300 + k)
        check(np.array_equal(a, dpt.asnumpy(dpt.asarray(a, sycl_queue=q))),
              "round trip %d MiB" % mib)
    memcpy()
    log = os.environ.get("FAKE_ZE_LOG")
    if log:
        text = open(log).read()
        imm = text.count("CALL zeCommandListCreateImmediate")
        exe = text.count("CALL zeCommandQueueExecuteCommandLists")
        if immediate:  # every copy on an immediate list
            check(imm > 0 and exe == 0, "immediate lists %d, regular lists "
                  "executed %d" % (imm, exe))
        else:
            check(exe > 0, "no regular command list executed")


def sycl_lib():
    d = os.path.dirname(dpctl.__file__)
    for p in (os.path.join(d, "..", "..", "..", "libsycl.so.8"), "libsycl.so.8"):
        try:
            return ctypes.CDLL(p)
        except OSError:
            pass
    raise OSError("libsycl.so.8 not found")


def prepare():
    """the runtime's own import: sycl::ext::oneapi::experimental::
    prepare_for_device_copy and release_from_device_copy on numpy memory
    (hostpin's, under hostpin), with copies in between"""
    lib = sycl_lib()
    prep = getattr(lib, "_ZN4sycl3_V13ext6oneapi12experimental23prepare_for_"
                   "device_copyEPKvmRKNS0_5queueE")
    rel = getattr(lib, "_ZN4sycl3_V13ext6oneapi12experimental24release_from_"
                  "device_copyEPKvRKNS0_5queueE")
    prep.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    rel.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    qref = q.addressof_ref()
    for k, n in enumerate((4 * MiB, 64 * MiB)):
        a = pattern(n, 400 + k)
        b = np.zeros(n, dtype=np.uint8)
        for m in (a, b):
            prep(m.ctypes.data, n, qref)
        d = dm.MemoryUSMDevice(n, queue=q)
        for _ in range(2):
            q.memcpy(d, a, n)
            q.memcpy(b, d, n)
        check(np.array_equal(a, b), "copies through prepared memory %d MiB" % (n >> 20))
        for m in (a, b):
            rel(m.ctypes.data, qref)
        b[:] = 0
        q.memcpy(b, d, n)
        check(np.array_equal(a, b), "copy after release %d MiB" % (n >> 20))
    log = os.environ.get("FAKE_ZE_LOG")
    if log:
        check("CALL zexDriverImportExternalPointer" in open(log).read(),
              "the runtime's import never reached the driver")


def pointer_type():
    """sycl::get_pointer_type (dpctl's DPCTLUSM_GetPointerType) on numpy
    buffers: unknown, with hostpin or without; on USM: its kind"""
    lib = ctypes.CDLL(os.path.join(os.path.dirname(dpctl.__file__),
                                   "libDPCTLSyclInterface.so"))
    gpt = lib.DPCTLUSM_GetPointerType
    gpt.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    gpt.restype = ctypes.c_int
    ctx = q.sycl_context.addressof_ref()
    for n in (4096, 1 * MiB, 64 * MiB):
        a = pattern(n, 500)
        for _ in range(3):  # copied, so that hostpin imports it
            dpt.asnumpy(dpt.asarray(a, sycl_queue=q))
        t = gpt(a.ctypes.data, ctx)
        print("pointer type of a %d-byte numpy buffer: %d" % (n, t))
        check(t == 0, "numpy buffer of %d bytes is USM type %d, not unknown" % (n, t))
    md = dm.MemoryUSMDevice(MiB, queue=q)
    mh = dm.MemoryUSMHost(MiB, queue=q)
    check(gpt(md._pointer, ctx) == 1 and gpt(mh._pointer, ctx) == 3,
          "USM device/host pointer types %d %d" % (gpt(md._pointer, ctx), gpt(mh._pointer, ctx)))


def threads():
    """eight threads copying at once, each its own buffers, the queue
    shared"""
    errs = []

    def work(t):
        try:
            for k in range(4):
                n = (t + 1) * 3 * MiB + k * 4096
                a = pattern(n, 600 + 10 * t + k)
                d = dm.MemoryUSMDevice(n, queue=q)
                b = np.zeros(n, dtype=np.uint8)
                q.memcpy_async(d, a, n).wait()
                q.memcpy_async(b, d, n).wait()
                if not np.array_equal(a, b):
                    errs.append("thread %d copy %d" % (t, k))
        except Exception as e:  # reported below
            errs.append("thread %d: %r" % (t, e))

    ts = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errs:
        check(False, e)


def fork():
    """copies, then a fork: the child copies nothing, exits; the parent
    copies on"""
    a = pattern(32 * MiB, 700)
    for _ in range(2):
        check(np.array_equal(a, dpt.asnumpy(dpt.asarray(a, sycl_queue=q))),
              "round trip before the fork")
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        b = a.copy()  # the child's own large block; no device work
        os._exit(0 if np.array_equal(a, b) else 3)
    _, st = os.waitpid(pid, 0)
    check(os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0, "child status %d" % st)
    for _ in range(2):
        check(np.array_equal(a, dpt.asnumpy(dpt.asarray(a, sycl_queue=q))),
              "round trip after the fork")


SCENARIOS = {
    "roundtrip": roundtrip,
    "memcpy": memcpy,
    "usm": usm,
    "lists_immediate": lambda: lists(True),
    "lists_regular": lambda: lists(False),
    "prepare": prepare,
    "pointer_type": pointer_type,
    "threads": threads,
    "fork": fork,
}

if __name__ == "__main__":
    if SCEN == "list":
        print(" ".join(SCENARIOS))
        sys.exit(0)
    setup()
    SCENARIOS[SCEN]()
    print("%s: %s" % (SCEN, "FAIL %d" % len(fails) if fails else "ok"), flush=True)
    sys.exit(1 if fails else 0)

"""The fakes' stand-in for train.py --device cuda (no PyTorch, no GPU):
the same arguments and output (every step's "loss", --times: train_args.py), each step a
fresh 4 MiB host batch (--batch x 256 float32s) copied to the device and a
result copied back, through the fake CUDA driver (libcuda.so.1 on
LD_LIBRARY_PATH: tests/fakes/fake_cuda.c) by ctypes, as PyTorch's CUDA
allocator and copies reach the driver.  Used by 177-demo_gpu.sh to run
make demo's GPU branch end to end."""
import ctypes
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ beside the tests
import train_args  # noqa: E402 (the arguments, shared with train.py)

args = train_args.parse()
assert args.device == "cuda", "the stand-in is for --device cuda"

cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r:
        raise SystemExit(f"train_fakes: {what} failed: CUresult {r}")
ck(cu.cuInit(0), "cuInit")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
n = args.batch * 256 * 4
dptr = ctypes.c_uint64()
ck(cu.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(n)), "cuMemAlloc_v2")
back = ctypes.create_string_buffer(64)
times = []
for step in range(args.steps):
    t0 = time.perf_counter()
    x = ctypes.create_string_buffer(n)     # a fresh large host batch each step
    ctypes.memset(ctypes.addressof(x), (step * 7 + 1) & 0xff, 64)
    ck(cu.cuMemcpyHtoD_v2(dptr, x, ctypes.c_size_t(n)), "cuMemcpyHtoD_v2")
    ck(cu.cuMemcpyDtoH_v2(back, dptr, ctypes.c_size_t(64)), "cuMemcpyDtoH_v2")
    loss = sum(back.raw) / (64 * 255)      # what came back: same run to run
    del x
    print(train_args.step_line(step, loss))
    times.append(time.perf_counter() - t0)
cu.cuDevicePrimaryCtxRelease_v2(dev)
train_args.write_times(args.times, times)

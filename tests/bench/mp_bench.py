"""Python multiprocessing moving numpy arrays: a Pool, a Queue and shared
memory, under one start method.  Prints the seconds the work took.
    python3 mp_bench.py fork|spawn [ROUNDS]
"""
import multiprocessing as mp
import sys
import time
from multiprocessing import shared_memory

import numpy as np

N = 1 << 20  # 8 MiB of float64 per array


def work(a):
    return a * 2.0 + 1.0


def consumer(q, out):
    s = 0.0
    while True:
        a = q.get()
        if a is None:
            break
        s += float(a[::4096].sum())
    out.put(s)


def shm_worker(name, n):
    m = shared_memory.SharedMemory(name=name)
    v = np.ndarray((n,), dtype=np.float64, buffer=m.buf)
    v *= 3.0
    del v
    m.close()


def main():
    method = sys.argv[1] if len(sys.argv) > 1 else "fork"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ctx = mp.get_context(method)
    arrays = [np.full(N, float(i)) for i in range(8)]
    t0 = time.perf_counter()
    with ctx.Pool(2) as pool:
        for _ in range(rounds):
            res = pool.map(work, arrays)
            assert all(r[7] == a[7] * 2.0 + 1.0 for r, a in zip(res, arrays))
    q, out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=consumer, args=(q, out))
    p.start()
    for _ in range(rounds):
        for a in arrays:
            q.put(a)
    q.put(None)
    got = out.get()
    p.join()
    assert got == rounds * sum(float(a[::4096].sum()) for a in arrays)
    m = shared_memory.SharedMemory(create=True, size=N * 8)
    try:
        v = np.ndarray((N,), dtype=np.float64, buffer=m.buf)
        v[:] = 1.0
        for _ in range(rounds):
            w = ctx.Process(target=shm_worker, args=(m.name, N))
            w.start()
            w.join()
        assert v[12345] == 3.0 ** rounds
        del v
    finally:
        m.close()
        m.unlink()
    print("%.4f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    main()

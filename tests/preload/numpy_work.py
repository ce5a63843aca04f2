"""A numpy workload with large temporaries; prints exact results."""
import hashlib
import numpy as np

rng = np.random.default_rng(42)
a = rng.standard_normal((1500, 1500))
b = a @ a.T
c = np.sort(rng.integers(0, 1 << 40, size=3_000_000))
d = np.concatenate([c, c[::-1]]).reshape(2, -1).cumsum(axis=1)
e = np.fft.rfft(rng.standard_normal(1 << 20))
for arr in (b, c, d, e):
    print(arr.shape, arr.dtype, hashlib.sha256(arr.tobytes()).hexdigest())
print(repr(float(b.trace())), repr(float(np.abs(e).sum())))

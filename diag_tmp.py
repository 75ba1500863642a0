import sys, numpy as np
sys.path.insert(0, "tests")
from test_half_cuda import acoustic, _close, _values
from backends.cuda import CudaBackend
shape, kw = (40, 36, 33), dict(time_m=1, time_M=50, dt=1.0)
res = {}
for fmt in (None, "float16"):
    for be, pairs in (("c", True), ("cuda", True), ("cuda", False)):
        CudaBackend.pair_loads = pairs
        op, u, r = acoustic(fmt, be, f"D{be}{fmt}{pairs}", shape=shape, nt=52)
        op.apply(**kw)
        res[(fmt, be, pairs)] = (_values(u).copy(), np.asarray(r.data, np.float32).copy(), u.storage_scale)
for fmt in (None, "float16"):
    c = res[(fmt, "c", True)]
    for pairs in (True, False):
        g = res[(fmt, "cuda", pairs)]
        d = np.abs(c[0] - g[0]); i = np.unravel_index(d.argmax(), d.shape)
        print(fmt, pairs, "scales", c[2], g[2], "u rel", d.max() / np.abs(c[0]).max(), "at", i, "rec rel", np.abs(c[1]-g[1]).max()/np.abs(c[1]).max())
c32 = res[(None, "c", True)]; c16 = res[("float16", "c", True)]
print("c16 vs c32 (unscaled)", np.abs(c16[0]*c16[2] - c32[0]).max()/np.abs(c32[0]).max())

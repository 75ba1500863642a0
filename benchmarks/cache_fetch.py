"""How long a cached fetch takes: ``jitcache.build`` of a library already in the cache, and an
Operator's construction + first apply from a warm cache (median of many repetitions).

    python benchmarks/cache_fetch.py [--reps 400] [--op-reps 30]

The Operator is the so 8 acoustic propagator of ``stencilgen/seismic`` on a small 3D grid (C
backend), so the library has the size of a real one; its build is done once before timing.
Also times hashing the library alone (sha256), the cost the integrity check adds to the first
fetch of a library in a process (later fetches find it verified by inode, size and times).
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jitcache  # noqa: E402
from stencilgen import Eq, Grid, Operator, TimeFunction, configuration, solve  # noqa: E402


def _operator():
    grid = Grid(shape=(24, 24, 24), extent=(230.0, 230.0, 230.0), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = 1.0 / 1.5 ** 2
    eq = Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))
    return Operator([eq], name="Fetch"), u


def _median_ms(fn, reps: int) -> tuple[float, float]:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--op-reps", type=int, default=30)
    args = parser.parse_args()
    configuration["cache-dir"] = tempfile.mkdtemp(prefix="stencilgen-fetch-")
    configuration["log-level"] = "WARNING"
    op, u = _operator()
    op.apply(time_M=1, dt=0.1)                     # the one build
    b = op._build
    size = b.library_path.stat().st_size
    tc = op._toolchain()
    print(f"library {b.library_path.name}: {size / 1024:.0f} KiB")

    def fetch():
        jitcache.build(op.ccode, tc, op.name, cache_dir=configuration["cache-dir"])
    med, best = _median_ms(fetch, args.reps)
    print(f"jitcache.build, cached fetch: median {med:.3f} ms (best {best:.3f}) "
          f"over {args.reps}")
    verified = getattr(getattr(jitcache, "trust", None), "_VERIFIED", None)
    if verified is not None:     # the library hashed on every fetch, as a new process does
        def first_fetch():
            verified.clear()
            fetch()
        med, best = _median_ms(first_fetch, args.reps)
        print(f"jitcache.build, cached fetch hashing the library: median {med:.3f} ms "
              f"(best {best:.3f})")
    data = b.library_path.read_bytes()
    med, best = _median_ms(lambda: hashlib.sha256(b.library_path.read_bytes()).hexdigest(),
                           args.reps)
    print(f"read + sha256 of the library: median {med:.3f} ms (best {best:.3f})")
    med, best = _median_ms(lambda: hashlib.sha256(data).hexdigest(), args.reps)
    print(f"sha256 of the library in memory: median {med:.3f} ms (best {best:.3f})")
    mib = np.random.default_rng(0).bytes(1 << 20)
    med, best = _median_ms(lambda: hashlib.sha256(mib).hexdigest(), args.reps)
    print(f"sha256 of 1 MiB in memory: median {med:.3f} ms (best {best:.3f})")

    def construct_and_apply():
        op2, _ = _operator()
        op2.apply(time_M=1, dt=0.1)
    med, best = _median_ms(construct_and_apply, args.op_reps)
    print(f"Operator construction + first apply (warm cache): median {med:.1f} ms "
          f"(best {best:.1f}) over {args.op_reps}")


if __name__ == "__main__":
    main()

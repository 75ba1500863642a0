"""What summing Fourier modes on the fly costs an acoustic run (Devito's seismic tutorial 17):
the same propagation with no mode, one complex64 mode, and ``--nfreq`` modes on a frequency
Dimension (``Function(dimensions=(f, x, y, z))``), GPts/s of the wave update each.

    python benchmarks/fourier_modes.py -d 256 256 256 -nt 200 --nfreq 5

Each figure is the median of ``--repeat`` applies after one warm-up; the extra bytes a mode
adds per point and step (a complex64 read and write, 16 bytes, against the wave's roughly 16)
bound what the sums should cost on a memory-bound GPU.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import (Dimension, Eq, Function, Grid, Inc, Operator, TimeFunction,  # noqa: E402
                        exp, solve)


def build(shape, nfreq, backend):
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape))
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / 2.0 ** 2
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    u.data[1][tuple(n // 2 for n in shape)] = 1.0
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
    time_ = grid.time_dim
    if nfreq:
        f = Dimension(name="f")
        freqs = Function(name="frequencies", dimensions=(f,), shape=(nfreq,))
        freqs.data[:] = np.linspace(0.005, 0.015, num=nfreq)
        modes = Function(name="modes", grid=grid, space_order=0, dtype=np.complex64,
                         dimensions=(f, *grid.dimensions), shape=(nfreq, *shape))
        eqs.append(Inc(modes, exp(-2j * np.pi * freqs * time_ * time_.spacing) * u))
    return Operator(eqs, backend=backend), u


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-d", "--shape", type=int, nargs="+", default=[256, 256, 256])
    p.add_argument("-nt", type=int, default=200)
    p.add_argument("--nfreq", type=int, default=5)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--backend", default="auto")
    a = p.parse_args(argv)
    shape = tuple(a.shape)
    points = float(np.prod(shape)) * a.nt
    print(f"{'modes':>6} {'seconds':>9} {'GPts/s':>8}")
    base = None
    for nfreq in sorted({0, 1, a.nfreq}):
        op, u = build(shape, nfreq, a.backend)
        op.apply(time_M=2, dt=1.0)   # build, allocate
        times = []
        for _ in range(a.repeat):
            start = time.perf_counter()
            op.apply(time_m=1, time_M=a.nt, dt=1.0)
            times.append(time.perf_counter() - start)
        t = statistics.median(times)
        base = base or t
        print(f"{nfreq:>6} {t:>9.4f} {points / t / 1e9:>8.2f}   x{t / base:.2f} of no mode")


if __name__ == "__main__":
    main()

"""CUDA thread-block shapes for 3D loop nests: GPts/s of a copy, the acoustic and the SA-TTI
kernels for each candidate shape (the first is the backend's default).

    python benchmarks/cuda_blocks.py [--copy 512] [--acoustic 512] [--tti 412 423 476] [--nt 50]

The copy (``u.forward = u``, 8 bytes per point) is reported as GB/s. Prints one table row per
shape.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backends.cuda as cuda  # noqa: E402
from demos.dummy_benchmark.run import setup as tti_setup  # noqa: E402
from stencilgen import (Eq, Function, Grid, Operator, TimeFunction, configuration,  # noqa: E402
                        platform, solve)

SHAPES = [(32, 4, 2), (32, 8, 1), (64, 4, 1), (128, 2, 1), (256, 1, 1), (32, 16, 1), (64, 8, 1)]


def _grid(shape):
    return Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)


def copy(n, nt, tag):
    u = TimeFunction(name="u", grid=_grid((n, n, n)), time_order=1, space_order=2)
    op = Operator([Eq(u.forward, u)], name=f"Copy{tag}", backend="cuda")
    op.apply(time_M=1)
    s = op.apply(time_m=0, time_M=nt - 1)
    return 8 * s.globals.points / s.globals.time / 1e9


def acoustic(n, nt, tag):
    grid = _grid((n, n, n))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / 2.0 ** 2
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))],
                  name=f"Acoustic{tag}", backend="cuda")
    op.apply(time_m=0, time_M=1, dt=1.0)
    return op.apply(time_m=0, time_M=nt - 1, dt=1.0).gpointss


def tti(shape, nt, tag):
    op, P, M, medium, dt = tti_setup(shape, 8, np.float32, "cuda")
    op.apply(time_m=1, time_M=2, dt=dt)
    return op.apply(time_m=1, time_M=nt, dt=dt).gpointss


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--copy", type=int, default=512)
    p.add_argument("--acoustic", type=int, default=512)
    p.add_argument("--tti", nargs=3, type=int, default=[412, 423, 476])
    p.add_argument("--nt", type=int, default=50)
    args = p.parse_args(argv)
    configuration["log-level"] = "WARNING"
    gpu, what, _ = platform.probe_gpu()
    if not gpu:
        sys.exit(f"cuda_blocks: needs an NVIDIA GPU ({what})")
    tc = platform.toolchain("cuda")
    print(f"{what}; {tc.version()}; {' '.join(tc.cflags)}")
    rows = []
    for i, block in enumerate(SHAPES):
        cuda.BLOCK[3] = block
        tag = "x".join(map(str, block)).replace("x", "_")
        rows.append((block, copy(args.copy, args.nt, tag), acoustic(args.acoustic, args.nt, tag),
                     tti(tuple(args.tti), args.nt, tag)))
        print(rows[-1], flush=True)
    print(f"\n{'block':>12s} {'copy GB/s':>10s} {'acoustic GPts/s':>16s} {'SA-TTI GPts/s':>14s}")
    for block, c, a, t in rows:
        print(f"{str(block):>12s} {c:10.1f} {a:16.2f} {t:14.2f}")


if __name__ == "__main__":
    main()

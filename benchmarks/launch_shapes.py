"""Launch shapes (CUDA) or cache blocks (C) of 3D loop nests: GPts/s of a copy, the acoustic
and the SA-TTI kernels for each shape the backend offers (what the autotuner chooses among),
every nest of an Operator run with the same shape.

    python benchmarks/launch_shapes.py [--backend cuda] [--copy 512] [--acoustic 512]
                                       [--tti 412 423 476] [--nt 50]

The copy (``u.forward = u``, 8 bytes per point) is reported as GB/s. Prints one table row per
shape: its number, then the figures of each workload.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from demos.dummy_benchmark.run import setup as tti_setup  # noqa: E402
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, configuration, platform, solve
from stencilgen.runtime import autotune

#: the shape every nest runs with, and the backend (set by main)
SHAPE = [0]
BACKEND = ["cuda"]


def _run(op, **kwargs):
    """``op`` applied with launch shape SHAPE[0] in all its nests (kept as if tuned)."""
    args, _ = op._arguments(**kwargs)
    autotune.Remembered(op.source_path.parent).put(
        autotune.size_key(op.program, args), [SHAPE[0]] * max(len(op.program.kernels), 1))
    return op.apply(autotune=False, **kwargs)


def _grid(shape):
    return Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)


def copy(n, nt):
    u = TimeFunction(name="u", grid=_grid((n, n, n)), time_order=1, space_order=2)
    op = Operator([Eq(u.forward, u)], name="Copy", backend=BACKEND[0])
    _run(op, time_M=1)
    s = _run(op, time_m=0, time_M=nt - 1)
    return 8 * s.globals.points / s.globals.time / 1e9


def acoustic(n, nt):
    grid = _grid((n, n, n))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / 2.0 ** 2
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))],
                  name="Acoustic", backend=BACKEND[0])
    _run(op, time_m=0, time_M=1, dt=1.0)
    return _run(op, time_m=0, time_M=nt - 1, dt=1.0).gpointss


def tti(shape, nt):
    op, P, M, medium, dt = tti_setup(shape, 8, np.float32, BACKEND[0])
    _run(op, time_m=1, time_M=2, dt=dt)
    return _run(op, time_m=1, time_M=nt, dt=dt).gpointss


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cuda", choices=["cuda", "c"])
    p.add_argument("--copy", type=int, default=512)
    p.add_argument("--acoustic", type=int, default=512)
    p.add_argument("--tti", nargs=3, type=int, default=[412, 423, 476])
    p.add_argument("--nt", type=int, default=50)
    args = p.parse_args(argv)
    configuration["log-level"] = "WARNING"
    BACKEND[0] = args.backend
    gpu, what, _ = platform.probe_gpu()
    if args.backend == "cuda" and not gpu:
        sys.exit(f"launch_shapes: the CUDA backend needs an NVIDIA GPU ({what})")
    tc = platform.toolchain(args.backend)
    print(f"{what}; {tc.version()}; {' '.join(tc.cflags)}")
    probe = Operator([Eq(TimeFunction(name="u", grid=_grid((8, 8, 8))).forward, 1.0)],
                     name="Probe", backend=BACKEND[0])
    shapes = next(iter(probe._emitter.launch_shapes().values()))
    rows = []
    for i, what in enumerate(shapes):
        SHAPE[0] = i
        rows.append((i, what, copy(args.copy, args.nt), acoustic(args.acoustic, args.nt),
                     tti(tuple(args.tti), args.nt)))
        print(rows[-1], flush=True)
    print(f"\n{'shape':>5s} {'copy GB/s':>10s} {'acoustic GPts/s':>16s} {'SA-TTI GPts/s':>14s}"
          "  launch")
    for i, what, c, a, t in rows:
        print(f"{i:5d} {c:10.1f} {a:16.2f} {t:14.2f}  {what}")


if __name__ == "__main__":
    main()

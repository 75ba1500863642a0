#!/usr/bin/env python
"""Isotropic, constant-density acoustic wave propagation: ``m * u.dt2 - u.laplace = 0``.

    python demos/acoustic/run.py -d 64 64 64 -nt 40 -so 8
    python demos/acoustic/run.py -d 201 201 -nt 500 --dtype float64     # a 2D run

Units: lengths in metres, velocity in km/s (= m/ms), hence time in milliseconds. The model is
homogeneous, v = 1.5 km/s (m = 1/v**2 in s**2/km**2), with a grid spacing of 10 m in every
dimension, so the extent is (shape - 1) * 10 m. The time step follows the CFL condition

    dt = 0.5 * h_min / (v * sqrt(ndim))        [ms]

which is inside the stability limit of the leapfrog scheme for every space order stencilgen
supports (the limit is 2 / sqrt(ndim * sum|w_k|) >= 0.63 / sqrt(ndim) in units of h_min / v,
where w_k are the second-derivative weights). The initial condition is a smooth Gaussian bump
in the centre of the model, in both the u(t=0) and u(t=dt) slots (zero initial velocity); the
time loop runs time = 1 .. nt and the script ends with the wavefield's largest amplitude.

The script needs only ``stencilgen``: it runs from a checkout (``python demos/acoustic/run.py``)
and after ``pip install .``. The performance report is printed at log level PERF, which this
script selects unless STENCILGEN_LOGGING is set.

Built to be extended (sources and receivers come later): ``make_model`` builds the grid and
the physical parameters, ``build_operator`` the wavefield and its Operator, ``run`` sets the
initial condition and steps it, ``main`` is the command line.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass

from pathlib import Path

import numpy as np

try:
    import stencilgen
except ImportError:  # a checkout that is not installed: use the package two levels up
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import stencilgen
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve

VELOCITY = 1.5      # km/s (= m/ms)
SPACING = 10.0      # m
COURANT = 0.5       # dt = COURANT * h_min / (v * sqrt(ndim))
DTYPES = {"float32": np.float32, "float64": np.float64}


@dataclass
class Model:
    """The grid and the physical parameters of a homogeneous acoustic model."""

    grid: Grid
    m: Function          # squared slowness 1/v**2, s**2/km**2
    velocity: float      # km/s
    dt: float            # ms, from the CFL condition

    @property
    def spacing(self) -> tuple[float, ...]:
        return self.grid.spacing


@dataclass
class Result:
    """What ``run`` returns: the fields, the performance summary and the final amplitude."""

    model: Model
    op: Operator
    u: TimeFunction
    summary: object          # stencilgen's PerformanceSummary
    nt: int
    final_slot: int          # the time slot of u holding the last wavefield, u(t = (nt+1)*dt)

    @property
    def wavefield(self) -> np.ndarray:
        return self.u.data[self.final_slot]

    @property
    def max_amplitude(self) -> float:
        return float(np.max(np.abs(self.wavefield)))

    @property
    def finite(self) -> bool:
        return bool(np.all(np.isfinite(self.wavefield)))


def critical_dt(spacing, velocity: float = VELOCITY, courant: float = COURANT) -> float:
    """The time step (ms) for a spacing in m and a velocity in km/s: courant*h_min/(v*sqrt(ndim))."""
    return courant * min(spacing) / (velocity * math.sqrt(len(spacing)))


def make_model(shape, spacing: float = SPACING, velocity: float = VELOCITY, dtype=np.float32,
               space_order: int = 8, courant: float = COURANT) -> Model:
    """A homogeneous model on a grid of ``shape`` points ``spacing`` metres apart."""
    shape = tuple(int(n) for n in shape)
    extent = tuple((n - 1) * spacing for n in shape)
    grid = Grid(shape=shape, extent=extent, dtype=dtype)
    m = Function(name="m", grid=grid, space_order=space_order)
    m.data[:] = 1.0 / velocity ** 2
    return Model(grid=grid, m=m, velocity=velocity,
                 dt=critical_dt(grid.spacing, velocity, courant))


def build_operator(model: Model, space_order: int = 8, backend: str | None = None,
                   name: str = "Acoustic"):
    """The wavefield u and the Operator stepping ``m * u.dt2 - u.laplace = 0``; returns (op, u)."""
    u = TimeFunction(name="u", grid=model.grid, time_order=2, space_order=space_order)
    pde = model.m * u.dt2 - u.laplace
    stencil = Eq(u.forward, solve(pde, u.forward))
    return Operator([stencil], name=name, backend=backend), u


def gaussian_bump(grid: Grid, width: float) -> np.ndarray:
    """exp(-r**2 / (2 width**2)), r the distance (m) from the centre of the grid."""
    axes = [o + np.arange(n) * h for o, n, h in zip(grid.origin, grid.shape, grid.spacing)]
    centre = [o + e / 2 for o, e in zip(grid.origin, grid.extent)]
    r2 = sum(c ** 2 for c in np.meshgrid(*[a - c for a, c in zip(axes, centre)], indexing="ij"))
    return np.exp(-r2 / (2 * width ** 2))


def initial_condition(model: Model, u: TimeFunction, width: float | None = None) -> float:
    """The bump in u(t=0) and u(t=dt) (a wave at rest); returns its width in m."""
    width = 3 * max(model.spacing) if width is None else width
    bump = gaussian_bump(model.grid, width)
    u.data[:] = 0
    u.data[0] = bump
    u.data[1] = bump
    return width


def run(model: Model, op: Operator, u: TimeFunction, nt: int, time_m: int = 1) -> Result:
    """Step time = time_m .. time_m + nt - 1 (u's slots must already hold the initial state)."""
    time_M = time_m + nt - 1
    summary = op.apply(time_m=time_m, time_M=time_M, dt=model.dt)
    return Result(model=model, op=op, u=u, summary=summary, nt=nt, final_slot=(time_M + 1) % 3)


# -- the command line ------------------------------------------------------------------------

def _grid_points(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"{value} grid points: each dimension needs at least 2")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _space_order(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 2 or value > 32 or value % 2:
        raise argparse.ArgumentTypeError(f"{value}: use an even number from 2 to 32")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/acoustic/run.py",
        description="Isotropic constant-density acoustic propagation m*u.dt2 - u.laplace = 0 "
                    f"(v = {VELOCITY} km/s, spacing {SPACING:g} m, a Gaussian bump at rest in "
                    "the centre, dt from the CFL condition in ms); prints the performance "
                    "report and the final wavefield's largest amplitude.")
    p.add_argument("-d", "--shape", dest="shape", nargs="+", type=_grid_points,
                   default=[64, 64, 64], metavar="N",
                   help="grid points per dimension: 3 values (3D) or 2 (2D); default 64 64 64")
    p.add_argument("-nt", "-tn", "--nt", dest="nt", type=_positive, default=40,
                   help="number of time steps (time = 1..nt); default 40")
    p.add_argument("-so", "--space-order", dest="space_order", type=_space_order, default=8,
                   help="space order of the Laplacian, even, 2..32; default 8")
    p.add_argument("--backend", choices=("c", "auto"), default=None,
                   help="code generator (default: STENCILGEN_BACKEND, else auto)")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                   help="floating-point type of the fields; default float32")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    if len(args.shape) not in (2, 3):
        p.error(f"argument -d/--shape: expected 2 values (2D) or 3 values (3D), "
                f"got {len(args.shape)}: {' '.join(map(str, args.shape))}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if "STENCILGEN_LOGGING" not in os.environ:
        stencilgen.configuration["log-level"] = "PERF"
    shape = tuple(args.shape)
    model = make_model(shape, dtype=DTYPES[args.dtype], space_order=args.space_order)
    ndim = len(shape)
    print(f"Acoustic {ndim}D: shape {shape}, spacing {SPACING:g} m, extent "
          f"{tuple(model.grid.extent)} m, v = {VELOCITY} km/s, space order {args.space_order}, "
          f"{args.dtype}")
    print(f"dt = {model.dt:.6g} ms (CFL: {COURANT} * h_min / (v * sqrt(ndim)) with "
          f"h_min = {min(model.spacing):g} m, v = {VELOCITY} km/s, ndim = {ndim}); "
          f"{args.nt} steps simulate {args.nt * model.dt:.6g} ms")
    op, u = build_operator(model, space_order=args.space_order, backend=args.backend)
    width = initial_condition(model, u)
    print(f"Initial condition: Gaussian bump of width {width:g} m in the centre, "
          f"in u(t=0) and u(t=dt)")
    result = run(model, op, u, args.nt)
    print(f"Final wavefield u(t = {(args.nt + 1) * model.dt:.6g} ms): max |u| = "
          f"{result.max_amplitude:.6e}, finite: {'yes' if result.finite else 'NO'}")
    return 0 if result.finite else 1


if __name__ == "__main__":
    sys.exit(main())

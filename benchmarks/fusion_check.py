"""Fused CUDA nests against the C backend: every launch shape of the fused kernel, after nt steps.

    python benchmarks/fusion_check.py --nt 200
    python benchmarks/fusion_check.py --nt 3 --programs tti3d --first-shape   # under
        compute-sanitizer: one shape, few steps

Programs (each on a shape that leaves partial tiles along the inner dimensions and uneven
chunks along the outer one): SA-TTI in 3D and 2D on a random smooth medium (stencilgen/seismic/tti.py),
the variable-density acoustic with staggered fluxes, and the acoustic wave equation (which has
nothing to fuse: it checks that programs outside the pattern still agree). Prints per program
and launch shape the largest difference from C relative to the largest value of each field;
exits 1 if any exceeds --tol (1e-4, float32 round-off over 200 steps).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from stencilgen import Eq, Function, Grid, TimeFunction, configuration, solve  # noqa: E402
from stencilgen.runtime import autotune  # noqa: E402
from stencilgen.runtime.operator import Operator  # noqa: E402


def _smooth(rng, shape, lo, hi):
    """Random values in [lo, hi] varying smoothly (a few low modes)."""
    axes = np.meshgrid(*[np.linspace(0, 1, n) for n in shape], indexing="ij")
    field = sum(np.sin(2 * np.pi * (rng.uniform(0.5, 2) * a + rng.uniform())) for a in axes)
    field = (field - field.min()) / (np.ptp(field) or 1)
    return lo + (hi - lo) * field


def _bump(grid):
    centre = [o + e / 2 for o, e in zip(grid.origin, grid.extent)]
    axes = [np.arange(n) * h - c for n, h, c in zip(grid.shape, grid.spacing, centre)]
    r2 = sum(a ** 2 for a in np.meshgrid(*axes, indexing="ij"))
    return np.exp(-r2 / (2 * (4 * grid.spacing[0]) ** 2)).astype(np.float32)


def sa_tti(shape, backend):
    from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt, tti_medium
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    rng = np.random.default_rng(5)
    eps = _smooth(rng, shape, 0.1, 0.25)
    medium = tti_medium(grid, 8, V=_smooth(rng, shape, 1.5, 3.0), b=_smooth(rng, shape, 0.5, 1),
                        epsilon=eps, delta=eps * _smooth(rng, shape, 0.2, 0.8),
                        theta=_smooth(rng, shape, 0, 1.2),
                        phi=_smooth(rng, shape, 0, 3) if len(shape) == 3 else None)
    op, P, M = sa_tti_operator(medium, 8, backend=backend, name=f"TTI{len(shape)}d{backend}")
    return op, (P, M), tti_critical_dt(medium, 8)


def variable_density(shape, backend):
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    p = TimeFunction(name="p", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    b = Function(name="b", grid=grid, space_order=8)
    rng = np.random.default_rng(7)
    m.data[:] = 1 / _smooth(rng, shape, 1.5, 3.0) ** 2
    b.data[:] = _smooth(rng, shape, 0.5, 1.0)
    div = 0
    for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
        div += getattr(b * getattr(p, name)(x0=d + d.spacing / 2), name)(x0=d - d.spacing / 2)
    op = Operator([Eq(p.forward, solve(m * p.dt2 - div, p.forward))], backend=backend,
                  name=f"VD{backend}")
    return op, (p,), 0.5


def acoustic(shape, backend):
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / _smooth(np.random.default_rng(3), shape, 1.5, 3.0) ** 2
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))], backend=backend,
                  name=f"AC{backend}")
    return op, (u,), 0.5


PROGRAMS = {"tti3d": (sa_tti, (61, 45, 83)), "tti2d": (sa_tti, (131, 157)),
            "vd3d": (variable_density, (53, 37, 71)), "acoustic": (acoustic, (45, 39, 70))}


def run(op, fields, dt, nt, choice=None):
    """The fields after ``nt`` steps from a bump in the first (at two time levels)."""
    for f in fields:
        f.data[:] = 0
    bump = _bump(fields[0].grid)
    fields[0].data[0] = bump
    fields[0].data[1] = bump
    kwargs = dict(time_m=1, time_M=nt, dt=dt)
    if choice is not None:
        args, _ = op._arguments(**kwargs)
        autotune.Remembered(op.source_path.parent).put(autotune.size_key(op.program, args),
                                                       choice)
    op.apply(autotune=False, **kwargs)
    return [np.array(f.data) for f in fields]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nt", type=int, default=200)
    p.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    p.add_argument("--first-shape", action="store_true", help="the default shape only")
    p.add_argument("--tol", type=float, default=1e-4)
    args = p.parse_args(argv)
    configuration["fusion"] = True   # the CUDA operators fuse what they can
    worst = 0.0
    print(f"{'program':10s} {'launch shape':42s} {'max |cuda - c| / max |c| per field'}")
    for name in args.programs:
        make, shape = PROGRAMS[name]
        op_c, fields_c, dt = make(shape, "c")
        ref = run(op_c, fields_c, dt, args.nt)
        op, fields, _ = make(shape, "cuda")
        em = op._emitter
        shapes, default = em.launch_shapes(), em.default_shapes()
        fused = [k for k in op.program.steps if k.fusion is not None]
        timer = fused[0].section.timer if fused else None
        options = [None] if timer is None else list(range(len(shapes[timer])))
        if args.first_shape:
            options = options[:1]
        for s in options:
            choice = None
            label = "(nothing fused)" if timer is None else shapes[timer][s]
            if timer is not None:
                choice = [s if t == timer else default.get(t, 0)
                          for t in range(len(op.program.kernels))]
            out = run(op, fields, dt, args.nt, choice)
            errs = [float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
                    for a, b in zip(out, ref)]
            worst = max([worst] + errs)
            print(f"{name:10s} {label:42s} " + " ".join(f"{e:.2e}" for e in errs), flush=True)
    print(f"worst {worst:.2e} (tolerance {args.tol:g})")
    return 0 if worst <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())

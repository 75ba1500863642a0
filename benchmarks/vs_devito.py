"""stencilgen's C/OpenMP backend against Devito on the same program text, alternately in one run.

    PYTHONPATH=/path/to/devito python benchmarks/vs_devito.py --shape 160 160 160 --nt 40

Each program is written once against a module ``api`` that is either ``devito`` or
``stencilgen``; both get the same data (a unit impulse at the centre, whose wave leaves the
denormal tail real shots have). Devito runs with its OpenMP language (``language='openmp'``)
and its default optimisation; stencilgen with ``backend='c'``. Both respect OMP_NUM_THREADS.
Each Operator is built and applied once for two steps first (compile and first touch
excluded; with ``--autotune`` ten steps with ``autotune=True``, which both libraries accept
and keep for later applies), then the two are applied alternately ``--repeats`` times for ``--nt`` steps from
the same initial data, and the best wall time of each is kept. Prints GPts/s of each and the
ratio stencilgen / Devito.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def acoustic(api, shape, so):
    """m u_tt = laplace(u), m = 1/1.5^2."""
    grid = api.Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    u = api.TimeFunction(name="u", grid=grid, time_order=2, space_order=so)
    m = api.Function(name="m", grid=grid, space_order=so)
    m.data[:] = 1 / 1.5 ** 2
    return [api.Eq(u.forward, api.solve(m * u.dt2 - u.laplace, u.forward))], u


def staggered(api, shape, so):
    """Variable density: m p_tt = sum over axes of (b p_d(x0=d+h/2))_d(x0=d-h/2)."""
    grid = api.Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    p = api.TimeFunction(name="p", grid=grid, time_order=2, space_order=so)
    m = api.Function(name="m", grid=grid, space_order=so)
    b = api.Function(name="b", grid=grid, space_order=so)
    m.data[:] = 1 / 1.5 ** 2
    b.data[:] = 1.0
    div = 0
    for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
        inner = getattr(p, name)(x0=d + d.spacing / 2)
        div += getattr(b * inner, name)(x0=d - d.spacing / 2)
    return [api.Eq(p.forward, api.solve(m * p.dt2 - div, p.forward))], p


def sa_tti(api, shape, so):
    """The self-adjoint TTI system of stencilgen/seismic/tti.py (Bube et al. 2016) on the dummy
    benchmark's constant medium, written once for both: P and M, fluxes of forward-staggered
    gradients, backward-staggered divergences."""
    import sympy
    grid = api.Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    P = api.TimeFunction(name="P", grid=grid, time_order=2, space_order=so)
    M = api.TimeFunction(name="M", grid=grid, time_order=2, space_order=so)
    medium = {}
    for name, value in (("V", 1.5), ("b", 1.0), ("epsilon", 0.1), ("delta", 0.05),
                        ("theta", np.pi / 6), ("phi", np.pi / 4)):
        medium[name] = api.Function(name=name, grid=grid, space_order=so)
        medium[name].data_with_halo[:] = value
    V, b, eps, dlt, th, ph = (medium[k] for k in ("V", "b", "epsilon", "delta", "theta", "phi"))
    f = 0.85
    eta = sympy.sqrt(2 * (eps - dlt) / (f + 2 * eps))
    cross = f * eta * sympy.sqrt(1 - eta ** 2)
    n = [sympy.sin(th) * sympy.cos(ph), sympy.sin(th) * sympy.sin(ph), sympy.cos(th)]
    names = ("dx", "dy", "dz")

    def grad(u):
        return [getattr(u, nm)(x0=d + d.spacing / 2) for nm, d in zip(names, grid.dimensions)]

    def div(v):
        return sum(getattr(c, nm)(x0=d - d.spacing / 2)
                   for c, nm, d in zip(v, names, grid.dimensions))

    gp, gm = grad(P), grad(M)
    ngp = sum(a * g for a, g in zip(n, gp))
    ngm = sum(a * g for a, g in zip(n, gm))
    flux_p = [b * ((1 + 2 * eps) * gp[i] - (2 * eps + f * eta ** 2) * n[i] * ngp
                   + cross * n[i] * ngm) for i in range(3)]
    flux_m = [b * ((1 - f) * gm[i] + f * eta ** 2 * n[i] * ngm + cross * n[i] * ngp)
              for i in range(3)]
    eqs = [api.Eq(u.forward, api.solve(b / V ** 2 * u.dt2 - div(flux), u.forward))
           for u, flux in ((P, flux_p), (M, flux_m))]
    return eqs, P


PROGRAMS = {"acoustic": acoustic, "staggered": staggered, "sa-tti": sa_tti}


def _impulse(field):
    field.data[:] = 0.0
    centre = tuple(n // 2 for n in field.data.shape[1:])
    field.data[(slice(None),) + centre] = 1.0


def build(api, program, shape, so, autotune):
    eqs, field = PROGRAMS[program](api, shape, so)
    options = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    op = api.Operator(eqs, name=f"{program.replace('-', '').capitalize()}Bench", **options)
    dt = 0.5 * 10.0 / 1.5 / np.sqrt(3) / 3   # well below the so 8 stability limit
    _impulse(field)
    # compile, first touch, and with --autotune each library's own block-shape tuning (kept by
    # both for the later applies of the same Operator and size)
    op.apply(time_m=1, time_M=nt_tuning(autotune), dt=dt, autotune=autotune)
    return op, field, dt


def nt_tuning(autotune):
    return 10 if autotune else 2


def timed(op, field, dt, nt):
    _impulse(field)
    start = time.perf_counter()
    op.apply(time_m=1, time_M=nt, dt=dt)
    return time.perf_counter() - start


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", nargs=3, type=int, default=[160, 160, 160])
    p.add_argument("--nt", type=int, default=40)
    p.add_argument("--so", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--autotune", action="store_true",
                   help="let both tune their loop blocks in the first apply (default: neither)")
    p.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    p.add_argument("--time-tiling", default="0", metavar="W,T",
                   help="stencilgen's time-skewed tiles (STENCILGEN_TIME_TILING): W points "
                        "along each tiled dimension, T steps; 0 (default): none")
    args = p.parse_args(argv)
    try:
        import devito
    except ImportError:
        sys.exit("vs_devito: Devito is not importable (pip install devito, or put it on "
                 "PYTHONPATH)")
    import stencilgen
    devito.configuration["language"] = "openmp"
    devito.configuration["log-level"] = "WARNING"
    stencilgen.configuration["log-level"] = "WARNING"
    stencilgen.configuration["time-tiling"] = args.time_tiling
    shape, points = tuple(args.shape), float(np.prod(args.shape)) * args.nt
    threads = os.environ.get("OMP_NUM_THREADS", f"all ({os.cpu_count()} cores)")
    print(f"Devito {devito.__version__} vs stencilgen C, {'x'.join(map(str, shape))}, "
          f"{args.nt} steps, space order {args.so}, OMP_NUM_THREADS={threads}, "
          f"best of {args.repeats}, autotuning {'on' if args.autotune else 'off'} in both, "
          f"stencilgen time tiles {args.time_tiling}")
    print(f"{'program':10s} {'Devito GPts/s':>14s} {'stencilgen GPts/s':>18s} {'ratio':>6s}")
    for program in args.programs:
        runs = {api.__name__: build(api, program, shape, args.so, args.autotune)
                for api in (devito, stencilgen)}
        best = {name: float("inf") for name in runs}
        for _ in range(args.repeats):
            for name, (op, field, dt) in runs.items():
                best[name] = min(best[name], timed(op, field, dt, args.nt))
        dev, sg = points / best["devito"] / 1e9, points / best["stencilgen"] / 1e9
        print(f"{program:10s} {dev:14.3f} {sg:18.3f} {sg / dev:6.2f}", flush=True)


if __name__ == "__main__":
    main()

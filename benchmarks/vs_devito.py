"""stencilgen's C/OpenMP backend against Devito on the same program text, alternately in one run.

    python benchmarks/vs_devito.py --shape 160 160 160 --nt 40 --median 3
    python benchmarks/vs_devito.py --time-tiling default off 32,16 32,0,16 --median 3

Each program is written once against a module ``api`` that is either ``devito`` or
``stencilgen``; both get the same data (a unit impulse at the centre, whose wave leaves the
denormal tail real shots have). Devito runs with its OpenMP language (``language='openmp'``)
and its default optimisation; stencilgen with ``backend='c'``. Both respect OMP_NUM_THREADS.

What is measured is what a user's program gets: no setting forced, and each Operator's first
apply (compile, first touch; the same ``--nt`` steps as the timed ones) with ``autotune``
left at None, so each library tunes by itself only where it would (stencilgen: a run of
2e9 point updates or more; Devito: never by default). ``--autotune`` passes
``autotune=True`` to both first applies instead (``NT_TUNING`` steps: a whole batch of
stencilgen's deepest time tiles), and both keep what they tuned for the later applies.

``--time-tiling`` takes one or more stencilgen settings, each a stencilgen Operator of its
own built under it: ``default`` (no setting forced: STENCILGEN_TIME_TILING or the built-in
default), ``off``, ``on``/``auto``, ``W,T``, ``W0,W1,T``, ``W,0,T`` (x alone). Devito and
every stencilgen Operator are then applied alternately ``--repeats`` times for ``--nt`` steps
from the same initial data, the best wall time of each kept: one run. ``--median N`` makes N
runs (the Operators built once) and prints each, then the median of each column over them.
Each row: the program, Devito's GPts/s, then per setting stencilgen's GPts/s and the ratio
stencilgen / Devito of the same run (the first setting's first: ``default`` unless others are
asked). A last line per program says what stencilgen's time loop ran with per setting.
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


#: steps of the first apply with --autotune: a whole batch of the deepest time tiles offered
#: (backends/time_tiling.CHOICES) and a few more
NT_TUNING = 20


def build(api, program, shape, so, autotune, nt, setting=None):
    """An Operator of ``program`` (stencilgen's under the time-tiling ``setting``, None: the
    default) after its first apply: ``nt`` steps with autotune=None, or NT_TUNING with
    autotune=True."""
    eqs, field = PROGRAMS[program](api, shape, so)
    options = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    name = f"{program.replace('-', '').capitalize()}Bench"
    if setting is not None and setting != "default":
        name += "_" + "".join(ch if ch.isalnum() else "x" for ch in setting)
        with api.switchconfig(time_tiling=setting):
            op = api.Operator(eqs, name=name, **options)
    else:
        op = api.Operator(eqs, name=name, **options)
    dt = 0.5 * 10.0 / 1.5 / np.sqrt(3) / 3   # well below the so 8 stability limit
    _impulse(field)
    # compile, first touch, and what the library does by itself in a user's first apply
    # (with --autotune, each library's own tuning, kept by both for the later applies)
    op.apply(time_m=1, time_M=NT_TUNING if autotune else nt, dt=dt,
             autotune=True if autotune else None)
    return op, field, dt


def timed(op, field, dt, nt):
    _impulse(field)
    start = time.perf_counter()
    op.apply(time_m=1, time_M=nt, dt=dt)
    return time.perf_counter() - start


def ran_with(op, nt, threads) -> str:
    """What stencilgen's time loop ran with in an apply of ``nt`` steps: the tuned choice
    kept for the size, else the default (``time_tiling.untuned``, the generated code's rule)."""
    from backends.c import time_tiling
    from stencilgen.runtime import autotune
    em = op._emitter
    t = em.tiling()
    if t is None:
        why = next((n for n in em.notes if n.startswith("no time tiles")), "")
        return "untiled" + (f" ({why})" if why else "")
    if not t.untiled:
        return f"tiles {t.describe(t.choices[0])}"
    args = op.arguments(time_m=1, time_M=nt, dt=1.0)
    timer = time_tiling.timed_nest(op.program).section.timer
    kept = autotune.Remembered(op.source_path.parent).get(autotune.size_key(op.program, args))
    if kept is not None:
        return f"tuned: {em.launch_shapes()[timer][kept[timer]]}"
    extents = [args[d.upper] - args[d.lower] + 1 for d in op.program.dims]
    pick = time_tiling.untuned(t, extents, nt, threads)
    return "untuned: " + ("untiled" if pick is None else f"tiles {t.describe(t.choices[pick])}")


def _threads() -> int:
    """The OpenMP threads a parallel region gets (OMP_NUM_THREADS, else every core)."""
    text = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(text) if text.isdigit() else len(os.sched_getaffinity(0))


def _row(program, dev, sgs) -> str:
    return f"{program:10s} {dev:14.3f}" + "".join(f" {sg:18.3f} {sg / dev:6.2f}" for sg in sgs)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", nargs=3, type=int, default=[160, 160, 160])
    p.add_argument("--nt", type=int, default=40)
    p.add_argument("--so", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3,
                   help="alternate applies of each Operator in a run, the best kept (3)")
    p.add_argument("--median", type=int, default=1, metavar="N",
                   help="runs (each --repeats alternate applies of every Operator); prints "
                        "each and the median of each column over them (1)")
    p.add_argument("--autotune", action="store_true",
                   help="let both tune their loop blocks in the first apply, autotune=True "
                        "(default: autotune=None, what a user's apply gets)")
    p.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    p.add_argument("--time-tiling", nargs="+", default=["default"], metavar="SETTING",
                   help="stencilgen Operators to measure, one per time-tiling setting: "
                        "default (nothing forced), off, on/auto, W,T, W0,W1,T or W,0,T "
                        "(x alone); the first fills the first columns (default: default)")
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
    settings = args.time_tiling
    for setting in settings:   # refused now rather than after Devito's build
        if setting != "default":
            with stencilgen.switchconfig(time_tiling=setting):
                pass
    shape, points = tuple(args.shape), float(np.prod(args.shape)) * args.nt
    threads = os.environ.get("OMP_NUM_THREADS", f"all ({os.cpu_count()} cores)")
    default = stencilgen.configuration["time-tiling"]
    print(f"Devito {devito.__version__} vs stencilgen C, {'x'.join(map(str, shape))}, "
          f"{args.nt} steps, space order {args.so}, OMP_NUM_THREADS={threads}, "
          f"best of {args.repeats} alternate applies a run, "
          f"{f'median of {args.median} runs, ' if args.median > 1 else ''}"
          f"autotune={'True' if args.autotune else 'None'} in the first apply of both, "
          f"stencilgen time-tiling settings: "
          f"{', '.join(f'default ({default!r})' if s == 'default' else s for s in settings)}")
    head = f"{'program':10s} {'Devito GPts/s':>14s} {'stencilgen GPts/s':>18s} {'ratio':>6s}"
    head += "".join(f" {'sg ' + s + ' GPts/s':>18s} {'ratio':>6s}" for s in settings[1:])
    print(head, flush=True)
    for program in args.programs:
        ops = [("devito", build(devito, program, shape, args.so, args.autotune, args.nt))]
        ops += [(s, build(stencilgen, program, shape, args.so, args.autotune, args.nt, s))
                for s in settings]
        runs = []
        for r in range(args.median):
            best = [float("inf")] * len(ops)
            for _ in range(args.repeats):
                for i, (_, (op, field, dt)) in enumerate(ops):
                    best[i] = min(best[i], timed(op, field, dt, args.nt))
            speed = [points / b / 1e9 for b in best]
            runs.append(speed)
            if args.median > 1:
                print(f"  run {r + 1}: " + _row(program, speed[0], speed[1:]), flush=True)
        if args.median > 1:   # each column's median; the ratios those of the runs
            dev = float(np.median([s[0] for s in runs]))
            sgs = [float(np.median([s[i] for s in runs])) for i in range(1, len(ops))]
            ratios = [float(np.median([s[i] / s[0] for s in runs])) for i in range(1, len(ops))]
            print(f"{program:10s} {dev:14.3f}" +
                  "".join(f" {sg:18.3f} {q:6.2f}" for sg, q in zip(sgs, ratios)), flush=True)
        else:
            print(_row(program, runs[0][0], runs[0][1:]), flush=True)
        print("  ran with: " + "; ".join(
            f"{s}: {ran_with(op, args.nt, _threads())}" for s, (op, _, _) in ops[1:]),
            flush=True)


if __name__ == "__main__":
    main()

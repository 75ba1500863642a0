"""GPts/s of the acoustic propagator against grid size (space order 8) and against space order
(a fixed grid), per backend.

    python benchmarks/scaling.py --backend c --sizes 64 128 192 --space-orders 4 8 12 16
    python benchmarks/scaling.py --backend c cuda --sizes 128 256 512 --plot scaling.png

The propagator is the constant-density acoustic wave equation with a sponge (the acoustic
demo's, ``stencilgen/seismic``), on cubes of ``--sizes`` points a side; each Operator is applied
once to warm up (build, device copies, tuning) and then timed for ``--nt`` steps three times,
the best kept: kernel time from the performance summary. ``--plot`` draws both series (``charts.py``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import configuration  # noqa: E402
from stencilgen import seismic  # noqa: E402
from benchmarks import charts  # noqa: E402

ORDER_SIZE = 128   # the cube of the space-order series (or the largest size, if smaller)


def gpoints(backend, n, so, nt, repeats=3) -> float:
    """GPts/s of the acoustic propagator on an n^3 cube (a 10-point sponge inside): the best
    of ``repeats`` timed runs (short runs on a multicore vary by tens of percent)."""
    nbl = min(10, n // 4)
    model = seismic.homogeneous_model((n - 2 * nbl,) * 3, 10.0, nbl=nbl, space_order=so,
                                      dtype=np.float32)
    op, u = seismic.acoustic_operator(model, backend=backend, name=f"Scaling{so}")
    u.data[:, n // 2, n // 2, n // 2] = 1.0
    dt = model.critical_dt
    op.apply(time_m=1, time_M=2, dt=dt)
    return max(op.apply(time_m=1, time_M=nt, dt=dt).globals.gpointss for _ in range(repeats))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["c"])
    p.add_argument("--sizes", nargs="+", type=int, default=[64, 128, 192])
    p.add_argument("--space-orders", nargs="+", type=int, default=[4, 8, 12, 16])
    p.add_argument("--nt", type=int, default=20)
    p.add_argument("--plot", metavar="FILE.png", help="also draw the chart there")
    args = p.parse_args(argv)
    if args.plot:
        charts.pyplot()   # say at once if matplotlib is missing
    configuration["log-level"] = "WARNING"
    by_size, by_order = {}, {}
    fixed = min(ORDER_SIZE, max(args.sizes))
    print(f"{'backend':8s} {'grid':>10s} {'so':>3s} {'points':>12s} {'GPts/s':>10s}")
    for backend in args.backend:
        for series, runs in ((by_size, [(n, 8) for n in args.sizes]),
                             (by_order, [(fixed, so) for so in args.space_orders])):
            for n, so in runs:
                g = gpoints(backend, n, so, args.nt)
                x = n ** 3 if series is by_size else so
                series.setdefault(backend, []).append((x, g))
                print(f"{backend:8s} {f'{n}^3':>10s} {so:3d} {n ** 3:12d} {g:10.6g}",
                      flush=True)
    drawn = {}
    if args.plot:
        drawn = charts.scaling_chart(args.plot, by_size, by_order,
                                     title=f"GPts/s, {args.nt} steps", fixed=f"{fixed}^3")
        print(f"Wrote {args.plot}")
    return drawn


if __name__ == "__main__":
    main()

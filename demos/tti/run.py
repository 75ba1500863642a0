#!/usr/bin/env python
"""One seismic shot in a layered anisotropic (TTI) model with the self-adjoint TTI propagator.

    python demos/tti/run.py -d 301 201                # 2D: 3 km x 2 km
    python demos/tti/run.py -d 101 81 81 -so 8        # 3D
    python demos/tti/run.py -d 301 201 --storage float16 --compensated   # P, M, medium in 16 bits

The propagator is ``stencilgen/seismic/tti.py`` (Bube et al. 2016), the same as the benchmark's,
here with a sponge of ``--nbl`` points per side. The model has three flat layers, top down:

    V (km/s)  rho (g/cc)  epsilon  delta  tilt theta
    1.5       1.0         0        0      0        (isotropic water-like layer)
    2.5       2.0         0.12     0.04   25 deg
    3.5       2.3         0.20     0.08   40 deg

(b = 1/rho, f = 0.85, azimuth phi = 0, so the axis tilts in the x-z plane), interfaces at 1/3
and 2/3 of the depth. A Ricker source (``--f0`` kHz) sits below the top centre and a line of
receivers records P at the same depth. dt is 0.8 times the derived stability limit
(``tti_stability_limit``) and is printed. Writes ``shot_record.png`` (with the direct wave and
the first reflection that ray theory predicts: both travel in the isotropic top layer only)
and ``wavefield_snapshot.png`` (the velocity model and P halfway), prints progress and the
performance report (log level PERF unless STENCILGEN_LOGGING is set). matplotlib is optional.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/cli.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen.distributed.mpi import gather  # noqa: E402
from stencilgen import seismic  # noqa: E402
from demos import cli  # noqa: E402
from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt, tti_medium  # noqa: E402

SPACING = 10.0
NBL = 40
F0 = 0.010
VELOCITY = (1.5, 2.5, 3.5)
DENSITY = (1.0, 2.0, 2.3)
EPSILON = (0.0, 0.12, 0.20)
DELTA = (0.0, 0.04, 0.08)
THETA_DEG = (0.0, 25.0, 40.0)
PICTURES = ("shot_record.png", "wavefield_snapshot.png")


def layer_index(model) -> np.ndarray:
    """The layer (0, 1, 2) of every point of the padded grid, from its depth."""
    grid = model.grid
    z = grid.origin[-1] + np.arange(grid.shape[-1]) * grid.spacing[-1]
    k = np.searchsorted(np.asarray(model.layers[1]), z, side="right")
    return np.broadcast_to(k, grid.shape)


def make_medium(model, space_order: int, storage=None):
    """The TTI parameters of the layers on the model's padded grid (V from the model), stored
    as ``storage`` (None: the grid's dtype; numpy.float16 or "bfloat16")."""
    k = layer_index(model)
    pick = lambda values: np.asarray(values, dtype=np.float64)[k]  # noqa: E731
    return tti_medium(model.grid, space_order, V=model.vp, b=1.0 / pick(DENSITY),
                      epsilon=pick(EPSILON), delta=pick(DELTA),
                      theta=np.radians(pick(THETA_DEG)), phi=0.0, f=0.85,
                      damp=gather(model.damp, root=None),
                      storage=storage)


def expected_arrivals(model, shot):
    """Direct wave and first reflection (the isotropic top layer), ray theory, ms."""
    src = shot.src.coordinates.data[0]
    rec = shot.rec.coordinates.data
    x = rec[:, 0]
    offsets = np.hypot(*(rec[:, :-1] - src[:-1]).T) if model.dim == 3 else np.abs(x - src[0])
    delay = 1.0 / shot.f0
    zs, zr = float(src[-1]), float(rec[0, -1])
    interfaces = list(model.layers[1])
    return [("direct wave", x, delay + seismic.direct_times(offsets, VELOCITY[0], zr - zs)),
            (f"reflection, interface at {interfaces[0]:g} m", x,
             delay + seismic.reflection_times(offsets, 0, interfaces, VELOCITY, zs, zr))]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/tti/run.py",
        description="One shot in a layered TTI model with the self-adjoint TTI propagator and "
                    "a sponge; writes shot_record.png and wavefield_snapshot.png.")
    cli.add_common(p, (201, 151), "number of time steps; default: until the reflection from "
                   "the second interface is back at the receivers")
    cli.add_shot_flags(p, NBL, F0)
    cli.add_storage(p, "P, M and the medium's parameters")
    p.add_argument("--clip", type=cli.percentile, default=98.0,
                   help="colour range of the shot record: this percentile of |P|; default 98")
    return p


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    cli.check_dims(p, args)
    cli.check_storage(p, args)
    cli.perf_logging()
    rank = cli.mpi_setup(args)   # ranks other than 0 print and draw nothing
    shape, so = tuple(args.shape), args.space_order
    model = seismic.layered_model(shape, SPACING, velocities=VELOCITY, nbl=args.nbl,
                                  space_order=so, dtype=cli.DTYPES[args.dtype])
    medium = make_medium(model, so, cli.storage(args))
    dt = tti_critical_dt(medium, so)
    print(f"SA-TTI {len(shape)}D: shape {shape} + {args.nbl} absorbing points per side, spacing "
          f"{SPACING:g} m, space order {so}, {cli.storage_label(args)}")
    for i, z in enumerate((0.0,) + tuple(model.layers[1])):
        print(f"  layer from {z:6.0f} m: V = {VELOCITY[i]} km/s, rho = {DENSITY[i]}, epsilon = "
              f"{EPSILON[i]}, delta = {DELTA[i]}, theta = {THETA_DEG[i]:g} deg")
    cli.print_mpi(model.grid)
    src = seismic.source_at(model)
    rec = seismic.receiver_line(model, model.shape[0])
    zs = float(src[0, -1])
    if args.nt is None:
        two_way = seismic.reflection_times([0.0], 1, list(model.layers[1]), VELOCITY, zs, zs)[0]
        time = seismic.time_axis(0.0, 2.0 / args.f0 + 1.2 * two_way, dt)
    else:
        time = seismic.TimeAxis(start=0.0, stop=(args.nt - 1) * dt, step=dt, num=args.nt)
    print(f"dt = {dt:.6g} ms (0.8 x the SA-TTI stability limit for V_max = {medium.vmax:g} "
          f"km/s, epsilon_max = {medium.epsmax:g}); {time.num} steps simulate "
          f"{time.num * dt:.6g} ms")
    shot = seismic.make_shot(model, time, args.f0, src, rec)
    op, P, M = sa_tti_operator(medium, so, shot=shot, backend=args.backend, name="SATTIShot",
                               compensated=args.compensated)
    result = seismic.run_shot(model, shot, op, P)
    finite = result.finite and bool(np.all(np.isfinite(M.data)))
    print(f"Final P: max |P| = {result.max_amplitude:.6e}, finite: {'yes' if finite else 'NO'}")
    print(cli.traffic_line(args, result.summary, P))
    if not args.plot or rank:
        print("--no-plot: no pictures written")
    elif not seismic.have_matplotlib():
        print(f"No pictures: {seismic.MATPLOTLIB_HINT}")
    else:
        outdir = Path(args.outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        print(f"Wrote {seismic.plot_shot_record(result.record, shot.time.values, rec[:, 0], outdir / PICTURES[0], title=f'Shot record, {model.dim}D layered TTI model, Ricker {args.f0 * 1000:g} Hz', percentile=args.clip, arrivals=expected_arrivals(model, shot))}")
        field = result.snapshot if model.dim == 2 else result.snapshot[:, result.snapshot.shape[1] // 2, :]
        print(f"Wrote {seismic.plot_snapshot(field, model, outdir / PICTURES[1], time_ms=result.snapshot_time, src=src, rec=rec)}")
    return 0 if finite and math.isfinite(result.summary.globals.time) else 1


if __name__ == "__main__":
    sys.exit(main())

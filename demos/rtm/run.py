#!/usr/bin/env python
"""Reverse-time migration with the self-adjoint TTI propagator: a few shots over a layered
anisotropic model with one reflector, imaged in the model without it.

    python demos/rtm/run.py -d 201 121 --nshots 3                    # 2 km x 1.2 km
    python demos/rtm/run.py -d 201 121 --nshots 3 --checkpoints 20   # binomial checkpointing
    python demos/rtm/run.py -d 201 121 --keep snapshots --factor 4   # every 4th step kept

The true model: an anisotropic layer (V = 1.5 km/s, epsilon = 0.10, delta = 0.04, tilt 20
degrees) over a faster one (V = 2.5 km/s) from ``--reflector`` (default 60 % of the depth).
The migration model has the top layer everywhere, so it holds the kinematics of the
reflection and none of it. For each shot (sources spread along x near the surface, a line
of receivers): the observed data in the true model; the forward run in the migration model,
keeping its wavefield (in memory, as snapshots, or recomputed from ``--checkpoints``
states); the residual sent back by the adjoint (``demos/seismic/imaging.py``), which sums the
cross-correlation image. The image is the sum over shots, Laplacian-filtered. Writes
``rtm_image.png`` and ``rtm_shot_records.png``; prints a line per shot with the cost of the
imaging relative to one forward run (and the recompute factor with checkpoints), and the
depth where the image is strongest against the reflector's.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/seismic
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen import SparseTimeFunction  # noqa: E402
from demos import seismic  # noqa: E402
from demos.seismic import cli, imaging  # noqa: E402
from demos.seismic.tti import tti_critical_dt, tti_medium  # noqa: E402

SPACING = 10.0
NBL = 30
F0 = 0.015
TOP, BOTTOM = 1.5, 2.5                   # km/s
ANISOTROPY = dict(epsilon=0.10, delta=0.04, theta=math.radians(20.0), f=0.85)
PICTURES = ("rtm_image.png", "rtm_shot_records.png")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/rtm/run.py",
        description="Reverse-time migration of a few shots with the SA-TTI propagator; "
                    "writes rtm_image.png and rtm_shot_records.png.")
    cli.add_common(p, (201, 121), "number of time steps; default: until the reflection "
                   "from the reflector is back at the surface from the farthest shot")
    p.add_argument("--nshots", type=cli.positive, default=3, help="number of shots; default 3")
    p.add_argument("--reflector", type=float, default=None, metavar="Z",
                   help="depth of the reflector in m; default 60%% of the depth")
    p.add_argument("--keep", choices=imaging.KEEP, default=None,
                   help="how the forward wavefield is kept: in memory (default), snapshots "
                        "(every --factor steps) or checkpoints (--checkpoints states)")
    p.add_argument("--factor", type=cli.positive, default=4,
                   help="snapshot every this many steps (--keep snapshots); default 4")
    p.add_argument("--checkpoints", type=cli.positive, default=None, metavar="N",
                   help="binomial checkpointing with at most N stored states (sets --keep "
                        "checkpoints)")
    cli.add_shot_flags(p, NBL, F0)
    return p


@dataclass
class Survey:
    """The models, the operators and the shots' geometry of one run."""

    model: object            # the true model (seismic.Model: grid, sponge, vp)
    true: imaging.Forward    # the forward run in the true model (observed data)
    fwd: imaging.Forward     # the forward run in the migration model, keeping its wavefield
    adj: imaging.Adjoint
    dt: float
    sources: np.ndarray      # (nshots, ndim)
    reflector: float


def _medium(model, velocity, so):
    """The TTI parameters of ``velocity`` (km/s, padded grid) with the demo's anisotropy."""
    return tti_medium(model.grid, so, V=velocity, b=1.0, phi=0.0, damp=model.damp.data,
                      **ANISOTROPY)


def build(args) -> Survey:
    """Models, time axis, geometry and the three Operators."""
    shape, so = tuple(args.shape), args.space_order
    depth = (shape[-1] - 1) * SPACING
    reflector = 0.6 * depth if args.reflector is None else float(args.reflector)
    model = seismic.layered_model(shape, SPACING, velocities=(TOP, BOTTOM),
                                  interfaces=(reflector,), nbl=args.nbl, space_order=so,
                                  dtype=cli.DTYPES[args.dtype])
    true_medium = _medium(model, model.vp, so)
    smooth = _medium(model, np.full_like(model.vp, TOP), so)
    dt = tti_critical_dt(true_medium, so)
    width = (shape[0] - 1) * SPACING
    xs = np.linspace(0.2 * width, 0.8 * width, args.nshots) if args.nshots > 1 else \
        np.array([0.5 * width])
    sources = np.array([[x] + [0.5 * w for w in model.extent[1:-1]] + [2 * SPACING]
                        for x in xs])
    if args.nt is None:
        far = max(np.max(np.abs(xs)), np.max(np.abs(width - xs)))
        two_way = 2 * math.hypot(far / 2, reflector) / TOP
        nt = int((1.5 / args.f0 + 1.1 * two_way) / dt) + 1
    else:
        nt = args.nt
    axis = seismic.TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    rec = seismic.receiver_line(model, shape[0], depth=2 * SPACING)
    shot = seismic.make_shot(model, axis, args.f0, sources[0], rec)
    keep = "checkpoints" if args.checkpoints else (args.keep or "memory")
    backend = args.backend
    true = imaging.forward_operator(true_medium, shot.src, shot.rec, None, backend=backend,
                                    name="RTMObserved")
    fwd = imaging.forward_operator(smooth, shot.src, shot.rec, keep, args.factor,
                                   backend=backend, name="RTMForward")
    residual = SparseTimeFunction(name="resid", grid=model.grid, npoint=len(rec), nt=nt,
                                  coordinates=rec)
    adj = imaging.adjoint_operator(smooth, residual, forward=fwd, backend=backend,
                                   name="RTMAdjoint")
    for op in (true.op, fwd.op, adj.op):
        op.cfunction   # noqa: B018 - built now, so that the shots' times hold no build
    return Survey(model, true, fwd, adj, dt, sources, reflector)


@dataclass
class Result:
    image: np.ndarray        # the filtered image on the padded grid
    raw: np.ndarray          # the summed cross-correlation image
    records: list
    reflector: float
    depth: float             # where the filtered image is strongest, m
    cost: float              # imaging time over one forward run, median over the shots


def image_depth(image: np.ndarray, model) -> float:
    """The depth (m) where |image|, summed over the physical domain across, is largest."""
    inner = model.physical(image)
    profile = np.abs(inner).reshape(-1, inner.shape[-1]).sum(axis=0)
    skip = 5   # the rows next to the sources and receivers
    k = skip + int(np.argmax(profile[skip:]))
    return model.origin[-1] + k * model.spacing[-1]


def migrate_all(s: Survey, args) -> Result:
    """Every shot: observed data, forward, residual back, image summed; a line per shot."""
    total, records, costs = None, [], []
    for i, position in enumerate(s.sources):
        for f in (s.true, s.fwd):
            f.src.coordinates.data[0] = position
        t0 = time.perf_counter()
        plain = imaging.run_forward(s.true, s.dt).globals_with_setup.time
        observed = np.array(s.true.rec.data)
        records.append(observed)
        m = imaging.migrate(s.fwd, s.adj, observed, s.dt, args.checkpoints)
        total = m.image if total is None else total + m.image
        costs.append((m.forward_seconds + m.adjoint_seconds) / plain)
        extra = "" if m.checkpoints is None else \
            (f", {m.checkpoints} checkpoints: {m.forward_steps} forward steps for "
             f"{s.fwd.src.data.shape[0]} (recompute factor "
             f"{m.forward_steps / s.fwd.src.data.shape[0]:.2f})")
        print(f"[shot {i + 1}/{len(s.sources)}] source x = {position[0]:.0f} m: forward "
              f"{plain:.2f} s; imaging {m.forward_seconds:.2f} s forward + "
              f"{m.adjoint_seconds:.2f} s adjoint = {costs[-1]:.2f} forward runs{extra}; "
              f"{time.perf_counter() - t0:.1f} s in all", flush=True)
    filtered = imaging.laplace_filter(total, s.model.spacing)
    # the median: the first shot's runs also copy the models to the GPU and tune launches
    return Result(filtered, total, records, s.reflector, image_depth(filtered, s.model),
                  float(np.median(costs)))


def _plot(s: Survey, r: Result, outdir: Path, f0: float):
    plotted = r.image if s.model.dim == 2 else r.image[:, r.image.shape[1] // 2, :]
    rec = s.fwd.rec.coordinates.data
    wrote = seismic.plot_snapshot(plotted, s.model, outdir / PICTURES[0], src=s.sources,
                                  rec=rec, label="RTM image (Laplacian-filtered)")
    print(f"Wrote {wrote}")
    times = np.arange(s.fwd.src.data.shape[0]) * s.dt
    wrote = seismic.plot_shot_record(r.records[len(r.records) // 2], times, rec[:, 0],
                                     outdir / PICTURES[1], title="Observed shot record "
                                     f"(middle shot), Ricker {f0 * 1000:g} Hz")
    print(f"Wrote {wrote}")


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    cli.check_dims(p, args)
    if args.checkpoints and args.keep not in (None, "checkpoints"):
        p.error(f"--checkpoints goes with --keep checkpoints, not --keep {args.keep}")
    s = build(args)
    nt = s.fwd.src.data.shape[0]
    print(f"RTM, SA-TTI {s.model.dim}D: shape {tuple(args.shape)} + {args.nbl} absorbing points "
          f"per side, spacing {SPACING:g} m, space order {args.space_order}, {args.dtype}; "
          f"reflector at {s.reflector:g} m; {len(s.sources)} shots, {nt} steps of "
          f"{s.dt:.4g} ms; wavefield kept: {s.fwd.keep}"
          + (f" (every {args.factor} steps)" if s.fwd.keep == "snapshots" else "")
          + (f" ({args.checkpoints} states)" if args.checkpoints else ""))
    r = migrate_all(s, args)
    print(f"Image: strongest at depth {r.depth:g} m, reflector at {r.reflector:g} m "
          f"({abs(r.depth - r.reflector) / SPACING:.1f} grid points apart); imaging costs "
          f"{r.cost:.2f} forward runs per shot (median)")
    if args.plot and seismic.have_matplotlib():
        outdir = Path(args.outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        _plot(s, r, outdir, args.f0)
    elif args.plot:
        print(f"No pictures: {seismic.MATPLOTLIB_HINT}")
    ok = np.all(np.isfinite(r.image)) and abs(r.depth - r.reflector) <= 3 * SPACING
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

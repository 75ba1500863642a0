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
states); the residual sent back by the adjoint (``stencilgen/seismic/imaging.py``), which sums the
cross-correlation image. The image is the sum over shots, Laplacian-filtered. Writes
``rtm_image.png`` and ``rtm_shot_records.png``; prints a line per shot with the cost of the
imaging relative to one forward run (and the recompute factor with checkpoints), and the
depth where the image is strongest against the reflector's.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/cli.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen import seismic  # noqa: E402
from stencilgen.seismic import imaging  # noqa: E402
from stencilgen.seismic.rtm import F0, NBL, SPACING, Survey, build  # noqa: E402
from demos import cli  # noqa: E402

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

"""A survey of many shots farmed over Dask workers (``stencilgen.seismic.survey``): shots along a line
at the surface of a layered model, each worker building its Operator once, the records written
to ``--out`` as shots finish (``shot_NNNNN.npz``, the geometry beside each), a rerun skipping
those already there.

    python demos/survey/run.py --nshots 32 --workers 2 -d 201 151 -nt 800
    python demos/survey/run.py --nshots 8 --backend cuda -d 301 301 201     # a worker per GPU
    python demos/survey/run.py --nshots 16 --scheduler tcp://10.0.0.5:8786 --rtm

By default a local cluster: one worker per GPU on the CUDA backend (each seeing only its
own; ``--gpus N`` for fewer) or ``--workers`` worker processes sharing the cores;
``--scheduler`` joins a running one (e.g. dask-jobqueue on SLURM/PBS, or dask-mpi under
mpirun). ``--rtm``: SA-TTI reverse-time
migration of each shot (the RTM demo's models), the images summed on the workers into the
stacked image, written as ``image.npy``. Printed: shots run, skipped and failed, shots per
minute, and (``--rtm``) the depth where the stacked image is strongest.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from stencilgen import configuration  # noqa: E402
from stencilgen.seismic.survey import Shot, cluster_size, run_survey  # noqa: E402
from stencilgen import seismic  # noqa: E402
from demos import cli  # noqa: E402
from stencilgen.seismic import shots  # noqa: E402

SPACING = 10.0
NBL = 30
F0 = 0.015
ACOUSTIC_STEPS = 600


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_common(p, (201, 151), "time steps; default 600 (--rtm: long enough for the "
                   "reflection, as the RTM demo chooses)")
    p.add_argument("--nshots", type=cli.positive, default=32, help="shots; default 32")
    p.add_argument("--workers", type=cli.positive, default=None,
                   help="CPU worker processes of the local cluster (default: a group of 4 "
                        "cores each)")
    p.add_argument("--gpus", type=cli.nonnegative, default=None,
                   help="GPU workers of the local cluster, one per GPU (default: every GPU "
                        "where the backend is CUDA, none on the C backend)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="a running Dask scheduler to use instead of a local cluster")
    p.add_argument("--out", default="survey_records", help="where the records go")
    p.add_argument("--gathers", action="store_true",
                   help="also write each shot's record as a SEG-Y gather, shot_NNNNN.sgy, as "
                        "it finishes (needs pip install 'stencilgen[segy]')")
    p.add_argument("--rtm", action="store_true",
                   help="SA-TTI reverse-time migration of each shot, images stacked")
    return p


def _line(model_extent, nshots: int) -> np.ndarray:
    """Sources along x at 2 grid spacings depth, centred across y in 3D."""
    width = model_extent[0]
    xs = np.linspace(0.1 * width, 0.9 * width, nshots) if nshots > 1 else [0.5 * width]
    return np.array([[x] + [0.5 * e for e in model_extent[1:-1]] + [2 * SPACING] for x in xs])


def acoustic_survey(args):
    """The layered model, its geometry and what the workers get."""
    model = seismic.layered_model(tuple(args.shape), SPACING, velocities=(1.5, 2.5, 3.5),
                                  nbl=NBL, space_order=args.space_order)
    rec = seismic.receiver_line(model, args.shape[0], depth=2 * SPACING)
    geometry = [Shot(i, s[None, :], rec) for i, s in enumerate(_line(model.extent,
                                                                      args.nshots))]
    inputs = {"vp": model.physical(model.vp), "spacing": model.spacing, "nbl": NBL,
              "space_order": args.space_order, "nt": args.nt, "f0": F0, "nrec": len(rec),
              "backend": args.backend}
    return shots.acoustic_setup, shots.acoustic_shoot, geometry, inputs, model


def rtm_survey(args):
    """The RTM demo's models (built on each worker from its flags) and this geometry."""
    from demos.rtm.run import parser as rtm_parser
    flags = ["-d", *map(str, args.shape), "-so", str(args.space_order), "--nshots",
             str(args.nshots)] + (["-nt", str(args.nt)] if args.nt else [])
    flags += ["--backend", args.backend] if args.backend else []
    rtm_args = rtm_parser().parse_args(flags)
    model = seismic.layered_model(tuple(args.shape), SPACING, nbl=rtm_args.nbl,
                                  space_order=args.space_order)
    rec = seismic.receiver_line(model, args.shape[0], depth=2 * SPACING)
    geometry = [Shot(i, s[None, :], rec) for i, s in enumerate(_line(model.extent,
                                                                      args.nshots))]
    return shots.rtm_setup, shots.rtm_shoot, geometry, vars(rtm_args), model


def _workers(args) -> int | None:
    """The local cluster's workers (None: a scheduler of the user's)."""
    if args.scheduler:
        return None
    return sum(cluster_size(args.workers, args.gpus))


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.nt is None and not args.rtm:
        args.nt = ACOUSTIC_STEPS
    cli.perf_logging()
    configuration["log-level"] = "INFO"
    if args.backend:   # the local cluster's default: a worker per GPU on the CUDA backend
        configuration["backend"] = args.backend
    logging.getLogger("distributed").setLevel(logging.ERROR)
    setup, shoot, geometry, inputs, model = (rtm_survey if args.rtm else acoustic_survey)(args)
    steps = inputs["nt"] if inputs["nt"] else "auto"
    print(f"Survey: {len(geometry)} shots, grid {'x'.join(map(str, args.shape))}, "
          f"{steps} steps, {'SA-TTI RTM' if args.rtm else 'acoustic forward'}; "
          f"records in {args.out}")
    t0 = time.perf_counter()
    try:
        result = run_survey(setup, shoot, geometry, inputs=inputs, out=args.out,
                            scheduler=args.scheduler, workers=args.workers, gpus=args.gpus,
                            gathers=args.gathers)
    except KeyboardInterrupt:
        kept = len(list(Path(args.out).glob("shot_*.npz")))
        print(f"Interrupted: {kept} records in {args.out}; run the same command again to "
              "do the others")
        return 130   # the shell's code for a run stopped by SIGINT
    minutes = (time.perf_counter() - t0) / 60
    rate = len(result.done) / minutes if minutes > 0 else 0.0
    steady, workers = result.rates()[1], _workers(args)
    after = f", {steady:.1f} shots/min after the first shot's end ({result.first:.1f} s)" \
        if steady is not None else ""
    settled = result.rates(workers)[1] if workers and workers > 1 else None
    if settled is not None:
        after += f", {settled:.1f} after the first {workers} ({result.ends[workers - 1]:.1f} s)"
    print(f"Ran {len(result.done)} shots ({len(result.skipped)} already on disk, "
          f"{len(result.failed)} failed) in {60 * minutes:.1f} s: {rate:.1f} shots/min{after}")
    for index, message in sorted(result.failed.items()):
        print(f"  shot {index} failed: {message}")
    if args.rtm and result.image is not None:
        from demos.rtm.run import image_depth
        from stencilgen.seismic import imaging
        filtered = imaging.laplace_filter(result.image, model.spacing)
        np.save(Path(args.out) / "image.npy", filtered)
        print(f"Stacked image of {len(result.done)} shots: strongest at depth "
              f"{image_depth(filtered, model):.0f} m; written to {args.out}/image.npy")
    return 1 if result.failed else 0


if __name__ == "__main__":
    sys.exit(main())

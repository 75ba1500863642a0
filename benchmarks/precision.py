"""Accuracy of 16-bit storage: float16 and bfloat16 wavefields (and media) against float32.

    python benchmarks/precision.py                          # both workloads, C backend (~2 min)
    python benchmarks/precision.py --workloads acoustic -d 201 201 161 --backend cuda
    python benchmarks/precision.py --workloads tti -d 101 101 81 --nbl 20 --backend cuda

Workloads (space order 8 by default, -nt time steps, 2000 by default):
  acoustic  the acoustic demo's shot (demos/acoustic): three flat layers, v = 1.5, 2.5, 3.5
            km/s, spacing 10 m, a sponge of --nbl points per side, a 10 Hz Ricker source two
            spacings below the top centre and a line of receivers (one per grid point in x)
            at the same depth; 2D or 3D by the number of -d values. Default 801 x 401 (8 km
            x 4 km) + 20: wide enough that half the wave's energy is still in the grid at
            step 2000, so the final energy error is that of the wave, not of a residue.
  tti       demos/tti's shot with the self-adjoint TTI propagator: the same layers with
            epsilon, delta and a tilt, b = 1/rho, the same sponge, source and receivers.
            Default 31^3 + 10 (3D): by step 2000 the sponge has taken nearly all of the wave
            (the header says how much is left), the final energy error is a residue's.
Each runs once with float32 storage (the reference) and then with float16 and bfloat16
storage of the wavefields and of the medium's parameters (as the demos' --storage does;
``--medium float32`` keeps the medium in float32), each without and with compensated
stepping; dt is the same for all (from the parameters as given).
Printed per workload, a row per storage: bytes per grid point per time step (what the
performance summary counts), the shot record's relative L2 error ||rec - rec32|| / ||rec32||,
the energy error of the final wavefield |E - E32| / E32 with E = sum(u^2) (TTI: P^2 + M^2)
from ``data_unscaled``, the largest |rec - rec32| relative to max |rec32|, and the storage
scale the first apply chose (a power of two: the wavefields hold value / scale). Each run is
10 applies of nt/10 steps; "energy error over the run" is the largest |E - E32| after an
apply, relative to the largest E32 (well conditioned where the final energy is a residue).

``study(workload, shape, ...)`` returns the rows (the tests call it with small grids).
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import seismic  # noqa: E402
from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt  # noqa: E402
from demos.tti import run as tti_demo  # noqa: E402
from stencilgen import InvalidOperator, configuration  # noqa: E402

#: (storage, compensated) of the rows: the reference first
CASES = (("float32", False), ("float16", False), ("float16", True), ("bfloat16", False),
         ("bfloat16", True))
SHAPES = {"acoustic": (801, 401), "tti": (31, 31, 31)}
NBL = {"acoustic": 20, "tti": 10}
CHUNKS = 10      # applies per run: the energy is taken after each
F0 = 0.010       # kHz


@dataclass
class Run:
    """One run's outputs: the shot record, the final wavefields (physical units), the energy
    sum(u^2) at the end of each chunk of steps, the bytes per point, the scale chosen."""

    record: np.ndarray
    fields: list
    energies: np.ndarray
    bytes_per_point: float
    scale: float
    seconds: float


@dataclass
class Row:
    """One line of the table."""

    storage: str
    compensated: bool
    bytes_per_point: float
    record_l2: float          # ||rec - rec32|| / ||rec32||
    energy: float             # |E - E32| / E32 of the final wavefields
    record_max: float         # max |rec - rec32| / max |rec32|
    scale: float
    seconds: float
    energy_peak: float        # max over the chunks of |E - E32|, relative to max E32
    final_share: float        # E32 at the end / max E32 (how much of the wave is left)
    refused: str = ""         # why the backend cannot run this storage (then no figures)


def _shot(model, dt: float, nt: int):
    time_axis = seismic.TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    return seismic.make_shot(model, time_axis, F0, seismic.source_at(model),
                             seismic.receiver_line(model, model.shape[0]))


def _layers(shape, so: int, nbl: int, storage, velocities=(1.5, 2.5, 3.5)):
    return seismic.layered_model(shape, 10.0, velocities=velocities, nbl=nbl, space_order=so,
                                 storage=storage)


def _acoustic(shape, nt, so, nbl, backend, storage, compensated, medium):
    model = _layers(shape, so, nbl, medium)
    shot = _shot(model, model.critical_dt, nt)
    op, u = seismic.acoustic_operator(model, shot, backend=backend, storage=storage or "float32",
                                      compensated=compensated, name="PrecisionAcoustic")
    return op, shot, [u], model.critical_dt


def _tti(shape, nt, so, nbl, backend, storage, compensated, medium):
    model = _layers(shape, so, nbl, None, tti_demo.VELOCITY)
    params = tti_demo.make_medium(model, so, medium)
    dt = tti_critical_dt(params, so)
    shot = _shot(model, dt, nt)
    op, P, M = sa_tti_operator(params, so, shot=shot, backend=backend,
                               storage=storage or "float32", compensated=compensated,
                               name="PrecisionTTI")
    return op, shot, [P, M], dt


WORKLOADS = {"acoustic": _acoustic, "tti": _tti}


def _energy(fields, slot: int) -> tuple[float, list]:
    """sum(u^2) over ``fields`` at time slot ``slot`` (physical units), and the arrays."""
    values = [np.array(f.data_unscaled[slot], dtype=np.float64) for f in fields]
    return sum(float(np.sum(v ** 2)) for v in values), values


def run_case(workload: str, shape, nt: int = 2000, so: int = 8, nbl: int = 10,
             backend: str = "c", storage: str = "float32", compensated: bool = False,
             chunks: int = CHUNKS, medium32: bool = False) -> Run:
    """One shot of ``workload`` with its wavefields and medium stored as ``storage`` (the
    medium as float32 with ``medium32``), run as ``chunks`` applies (the energy is taken
    after each; the steps are the same)."""
    store = None if storage == "float32" else storage
    op, shot, fields, dt = WORKLOADS[workload](tuple(shape), nt, so, nbl, backend, store,
                                               compensated, None if medium32 else store)
    bounds = [nt * k // chunks for k in range(chunks + 1)]
    energies, summaries, seconds = [], [], 0.0
    for lo, hi in zip(bounds, bounds[1:]):
        t0 = time.perf_counter()
        summaries.append(op.apply(time_m=lo, time_M=hi - 1, dt=dt))
        seconds += time.perf_counter() - t0
        energy, final = _energy(fields, hi % 3)
        energies.append(energy)
    summary = seismic.combine_summaries(summaries)
    return Run(np.array(shot.rec.data, dtype=np.float64), final, np.array(energies),
               seismic.bytes_per_point(summary), fields[0].storage_scale, seconds)


def compare(run: Run, ref: Run, storage: str, compensated: bool) -> Row:
    """The row of ``run`` against the float32 reference ``ref``."""
    diff = run.record - ref.record
    energy = sum(float(np.sum(f ** 2)) for f in run.fields)
    energy32 = sum(float(np.sum(f ** 2)) for f in ref.fields)
    peak = float(ref.energies.max())
    return Row(storage, compensated, run.bytes_per_point,
               float(np.linalg.norm(diff) / np.linalg.norm(ref.record)),
               abs(energy - energy32) / energy32,
               float(np.abs(diff).max() / np.abs(ref.record).max()), run.scale, run.seconds,
               float(np.abs(run.energies - ref.energies).max()) / peak,
               float(ref.energies[-1]) / peak)


def study(workload: str, shape, nt: int = 2000, so: int = 8, nbl: int = 10,
          backend: str = "c", cases=CASES, medium32: bool = False) -> list[Row]:
    """The table of ``workload``: the float32 reference's row, then one per case (the
    medium stored as the wavefields, or as float32 with ``medium32``)."""
    ref = run_case(workload, shape, nt, so, nbl, backend)
    rows = [compare(ref, ref, "float32", False)]
    for storage, compensated in cases:
        if storage == "float32":
            continue
        try:
            run = run_case(workload, shape, nt, so, nbl, backend, storage, compensated,
                           medium32=medium32)
        except InvalidOperator as e:      # e.g. OpenACC cannot inject into bfloat16
            nan = math.nan
            rows.append(Row(storage, compensated, nan, nan, nan, nan, nan, 0.0, nan, nan,
                            str(e)))
            continue
        rows.append(compare(run, ref, storage, compensated))
    return rows


def table(rows) -> list[str]:
    """The rows as a Markdown table."""
    lines = ["| storage | compensated | bytes/point | record L2 error | final energy error | "
             "record max error | energy error over the run | scale |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.refused:
            lines.append(f"| {r.storage} | {'yes' if r.compensated else 'no'} | refused: "
                         f"{r.refused} |||||")
            continue
        scale = "1" if r.scale == 1 else f"2^{int(math.log2(r.scale))}"
        lines.append(f"| {r.storage} | {'yes' if r.compensated else 'no'} | "
                     f"{r.bytes_per_point:.1f} | {r.record_l2:.2e} | {r.energy:.2e} | "
                     f"{r.record_max:.2e} | {r.energy_peak:.2e} | {scale} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-d", "--shape", nargs="+", type=int, default=None,
                   help="physical grid points per dimension (default: acoustic "
                        f"{' '.join(map(str, SHAPES['acoustic']))}, tti "
                        f"{' '.join(map(str, SHAPES['tti']))}), plus --nbl per side")
    p.add_argument("-nt", "--nt", type=int, default=2000, help="time steps; default 2000")
    p.add_argument("-so", "--space-order", type=int, default=8, help="default 8")
    p.add_argument("--nbl", type=int, default=None,
                   help="sponge points per side; default acoustic 20, tti 10")
    p.add_argument("--backend", choices=("c", "openacc", "cuda"), default="c")
    p.add_argument("--workloads", nargs="+", choices=tuple(WORKLOADS), default=list(WORKLOADS))
    p.add_argument("--medium", choices=("same", "float32"), default="same",
                   help="what the medium's parameters are stored as: as the wavefields (as "
                        "the demos do; default), or float32 (the wavefields' error alone)")
    args = p.parse_args(argv)
    configuration["log-level"] = "WARNING"
    for name in args.workloads:
        shape = tuple(args.shape or SHAPES[name])
        nbl = NBL[name] if args.nbl is None else args.nbl
        t0 = time.perf_counter()
        rows = study(name, shape, args.nt, args.space_order, nbl, args.backend,
                     medium32=args.medium == "float32")
        print(f"\n{name}: grid {shape} + {nbl} sponge points per side, space order "
              f"{args.space_order}, {args.nt} steps, backend {args.backend}, medium stored "
              f"{'as the wavefields' if args.medium == 'same' else 'as float32'} "
              f"({time.perf_counter() - t0:.0f} s); the final float32 energy is "
              f"{100 * rows[0].final_share:.3g} % of its largest\n")
        print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

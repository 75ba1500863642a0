#!/usr/bin/env python
"""Isotropic, constant-density acoustic wave propagation: one seismic shot.

    python demos/acoustic/run.py -d 301 201 --outdir out      # 2D: 3 km x 2 km, layered
    python demos/acoustic/run.py -d 64 64 64 -so 8             # 3D
    python demos/acoustic/run.py -d 201 201 -nt 500 --no-plot
    python demos/acoustic/run.py -d 301 201 --storage float16 --compensated
    python demos/acoustic/run.py --model marmousi.sgy --gather shot.sgy   # SEG-Y in and out

Units: lengths in metres, velocity in km/s (= m/ms), hence time in milliseconds and frequency
in kHz. The model (``stencilgen/seismic``) has three horizontal layers, v = 1.5, 2.5, 3.5 km/s, with
interfaces at 1/3 and 2/3 of the depth, on a grid of ``-d`` points 10 m apart, padded by an
absorbing (sponge) layer of ``--nbl`` points on every side. The PDE is

    m * u.dt2 - u.laplace + damp * u.dt = 0,      m = 1 / v**2,

``damp`` being zero in the physical domain. One shot: a Ricker wavelet of peak frequency
``--f0`` (kHz, delayed by 1/f0) injected two grid spacings below the top centre, recorded by a
line of ``--nrec`` receivers along x at the same depth (in 3D at the centre in y). The time
step is 0.8 times the leapfrog stability limit, derived from the Laplacian's weights:

    dt = 0.8 * 2 / (v_max * sqrt(sum_d S / h_d**2)),   S = sum_i |w_i| of the d2/dx2 stencil

(S = 6.50 at space order 8: dt = 0.444 h / v_max in 2D, 0.362 h / v_max in 3D). By default the
run lasts until the reflection from the deepest interface is back at the receivers.

``--model FILE.sgy`` reads the velocity model from a SEG-Y file instead (its shape, spacing
and origin from its headers, ``stencilgen.seismic.segy``), ``--gather FILE.sgy`` writes the
shot's record as a SEG-Y gather.

Outputs, in ``--outdir`` (default: the current directory): ``shot_record.png`` (receivers
across, time down, gray, clipped at a percentile; next to it the same record with the arrival
times ray theory predicts for the direct wave and each interface) and
``wavefield_snapshot.png`` (the velocity model and a 2D slice of u halfway through the run).
matplotlib is optional: without it the script says how to get it and still runs. Progress is
printed per chunk of time steps; the performance report, summed over the chunks, is printed at
log level PERF, which this script selects unless STENCILGEN_LOGGING is set.

``--storage float16`` (or ``bfloat16``) stores u, m and damp in 16 bits, the arithmetic staying
float32: half the bytes per point; u's scale (a power of two) is chosen at the first apply
from the source's largest increment. ``--compensated`` keeps what u's stores round off in a
companion field (6 more bytes per point, a few times less error: benchmarks/precision.py).
The report names the storage and the bytes per point the performance summary counts.

The script needs only ``stencilgen`` and the ``demos/cli.py`` next to it: it runs from a
checkout (``python demos/acoustic/run.py``) and after ``pip install .`` in a checkout.

Also here, used by the tests as a library: the homogeneous, sponge-free building blocks of the
first version of this demo (``make_model``, ``build_operator``, ``initial_condition``, ``run``:
a Gaussian bump at rest, dt = 0.5 * h_min / (v * sqrt(ndim))), whose discrete energy is
conserved. The shot uses ``make_shot_model``, ``build_shot``, ``run_shot``, ``save_pictures``.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/cli.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve  # noqa: E402
from stencilgen import seismic  # noqa: E402
from demos import cli  # noqa: E402

VELOCITY = 1.5      # km/s (= m/ms)
SPACING = 10.0      # m
COURANT = 0.5       # dt = COURANT * h_min / (v * sqrt(ndim))
DTYPES = cli.DTYPES


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
class Result(seismic.FinalWavefield):
    """What ``run`` returns: the fields, the performance summary and the final amplitude."""

    model: Model
    op: Operator
    u: TimeFunction
    summary: object          # stencilgen's PerformanceSummary
    nt: int
    final_slot: int          # the time slot of u holding the last wavefield, u(t = (nt+1)*dt)


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


# -- one seismic shot: layered model, sponge, Ricker source, receiver line --------------------

LAYER_VELOCITIES = (1.5, 2.5, 3.5)   # km/s, top down
NBL = 40                              # absorbing layer, points per side
F0 = 0.010                            # kHz: a 10 Hz Ricker wavelet
PICTURES = ("shot_record.png", "wavefield_snapshot.png")


def make_shot_model(shape, spacing: float = SPACING, nbl: int = NBL, space_order: int = 8,
                    dtype=np.float32, velocities=LAYER_VELOCITIES,
                    storage=None) -> seismic.Model:
    """The layered model (interfaces evenly in depth) padded by ``nbl`` sponge points; m and
    damp stored as ``storage`` (None: dtype; numpy.float16 or "bfloat16")."""
    return seismic.layered_model(shape, spacing, velocities=velocities, nbl=nbl,
                                 space_order=space_order, dtype=dtype, storage=storage)


def default_duration(model: seismic.Model, f0: float, source_depth: float) -> float:
    """ms until the zero-offset reflection from the deepest interface has passed (or the
    direct wave crossed the model when there is no interface), with a 20 % margin."""
    interfaces = _interfaces(model)
    if interfaces:
        z = source_depth
        v = _layer_velocities(model)
        two_way = seismic.reflection_times([0.0], len(interfaces) - 1, interfaces, v, z, z)[0]
    else:
        two_way = max(model.extent) / model.vmax
    return 1.0 / f0 + 1.2 * two_way + 1.0 / f0


def build_shot(model: seismic.Model, f0: float = F0, nrec: int | None = None,
               nt: int | None = None, space_order: int | None = None,
               backend: str | None = None, name: str = "Acoustic", storage=None,
               compensated: bool = False):
    """The shot (source at the top centre, receiver line), u and the Operator: (shot, op, u).

    ``nt`` time samples (= time steps run); by default ``default_duration`` / dt. u is stored
    as ``storage`` (default: as the model's m), ``compensated`` if asked.
    """
    dt = model.critical_dt
    src = seismic.source_at(model)
    nrec = model.shape[0] if nrec is None else nrec
    rec = seismic.receiver_line(model, nrec)
    if nt is None:
        time = seismic.time_axis(0.0, default_duration(model, f0, float(src[0, -1])), dt)
    else:
        time = seismic.TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=int(nt))
    shot = seismic.make_shot(model, time, f0, src, rec)
    op, u = seismic.acoustic_operator(model, shot, space_order=space_order, backend=backend,
                                      name=name, storage=storage, compensated=compensated)
    return shot, op, u


ShotResult, run_shot = seismic.ShotResult, seismic.run_shot


def _interfaces(model: seismic.Model) -> list[float]:
    """Depths (m) of the layer interfaces of a layered model (none for any other model)."""
    return list(model.layers[1]) if model.layers else []


def _layer_velocities(model: seismic.Model) -> list[float]:
    """The layers' velocities, top down (of a layered model; else the velocity at the top)."""
    if model.layers:
        return list(model.layers[0])
    return [float(model.physical(model.vp)[(model.shape[0] // 2,) + (0,) * (model.dim - 1)])]


def expected_arrivals(model: seismic.Model, shot: seismic.Shot):
    """(label, x, t) curves of the direct wave and each primary reflection, t in ms including
    the wavelet's peak delay 1/f0 (flat layers; ray theory)."""
    src = shot.src.coordinates.data[0]
    rec = shot.rec.coordinates.data
    x = rec[:, 0]
    offsets = np.hypot(*(rec[:, :-1] - src[:-1]).T) if model.dim == 3 else np.abs(x - src[0])
    delay = 1.0 / shot.f0
    v = _layer_velocities(model)
    zs, zr = float(src[-1]), float(rec[0, -1])
    curves = [("direct wave", x, delay + seismic.direct_times(offsets, v[0], zr - zs))]
    interfaces = _interfaces(model)
    for k, depth in enumerate(interfaces):
        t = seismic.reflection_times(offsets, k, interfaces, v, zs, zr)
        curves.append((f"reflection, interface at {depth:g} m", x, delay + t))
    return curves


def save_pictures(result: ShotResult, outdir, percentile: float = 98.0) -> list[Path]:
    """Writes shot_record.png and wavefield_snapshot.png into ``outdir``; returns the paths."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    model, shot = result.model, result.shot
    rec_x = shot.rec.coordinates.data[:, 0]
    record = seismic.plot_shot_record(
        result.record, shot.time.values, rec_x, outdir / PICTURES[0],
        title=f"Shot record, {model.dim}D layered model, Ricker {shot.f0 * 1000:g} Hz",
        percentile=percentile, arrivals=expected_arrivals(model, shot))
    field = result.snapshot
    if model.dim == 3:
        field = field[:, field.shape[1] // 2, :]
    snap = seismic.plot_snapshot(field, model, outdir / PICTURES[1],
                                 time_ms=result.snapshot_time,
                                 src=shot.src.coordinates.data, rec=shot.rec.coordinates.data)
    return [record, snap]


# -- the command line ------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/acoustic/run.py",
        description="One acoustic seismic shot, m*u.dt2 - u.laplace + damp*u.dt = 0, in a "
                    f"layered model (v = {', '.join(map(str, LAYER_VELOCITIES))} km/s, spacing "
                    f"{SPACING:g} m) with an absorbing layer: a Ricker source at the top centre, "
                    "a receiver line; writes shot_record.png and wavefield_snapshot.png and "
                    "prints the performance report. Units: m, km/s, ms, kHz.")
    cli.add_common(p, (64, 64, 64),
                   "number of time steps (= receiver samples); default: until the reflection "
                   "from the deepest interface is back at the receivers",
                   so_help="space order of the Laplacian, even, 2..32; default 8")
    cli.add_storage(p, "u, m and damp")
    p.add_argument("--nbl", type=cli.nonnegative, default=NBL,
                   help=f"absorbing layer width in grid points per side; default {NBL}")
    p.add_argument("--f0", type=cli.frequency, default=F0,
                   help=f"peak frequency of the Ricker wavelet in kHz; default {F0:g}")
    p.add_argument("--nrec", type=cli.positive, default=None,
                   help="number of receivers along x; default: one per grid point in x")
    p.add_argument("--outdir", default=".",
                   help="directory for the PNG pictures (created if missing); default: the "
                        "current directory")
    p.add_argument("--no-plot", dest="plot", action="store_false",
                   help="do not draw the pictures")
    p.add_argument("--model", metavar="FILE.sgy", default=None,
                   help="read the velocity model from a SEG-Y file (stencilgen.seismic.segy: "
                        "shape, spacing and origin from its headers; -d is then ignored); "
                        "needs pip install 'stencilgen[segy]'")
    p.add_argument("--model-spacing", type=float, nargs="+", default=None, metavar="M",
                   help="with --model: the spacing (m), one value or one per axis, where the "
                        "file's headers do not say it (checked against them where they do)")
    p.add_argument("--gather", metavar="FILE.sgy", default=None,
                   help="write the shot's record as a SEG-Y gather (one trace a receiver, "
                        "with source and receiver coordinates, offsets and the sample "
                        "interval in its trace headers)")
    p.add_argument("--clip", type=cli.percentile, default=98.0,
                   help="colour range of the shot record: this percentile of |u| (lower it "
                        "to see weak reflections); default 98")
    return p


def load_model(args) -> seismic.Model:
    """The layered model of ``-d``, or with ``--model`` the SEG-Y file's."""
    options = dict(nbl=args.nbl, space_order=args.space_order, dtype=DTYPES[args.dtype],
                   storage=cli.storage(args))
    if args.model is None:
        return make_shot_model(tuple(args.shape), **options)
    from stencilgen.seismic import segy
    return segy.read_model(args.model, spacing=args.model_spacing).model(**options)


def parse_args(argv=None) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    cli.check_dims(p, args)
    cli.check_storage(p, args)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    cli.perf_logging()
    rank = cli.mpi_setup(args)   # ranks other than 0 print and draw nothing
    model = load_model(args)
    shape, ndim = model.shape, model.dim
    print(f"Acoustic {ndim}D: shape {shape} + {args.nbl} absorbing points per side (grid "
          f"{model.grid.shape}), spacing {', '.join(f'{h:g}' for h in model.spacing)} m, "
          f"extent {model.extent} m, space order {args.space_order}, "
          f"{cli.storage_label(args)}")
    if args.model is None:
        layers = ", ".join(f"{v:g}" for v in _layer_velocities(model))
        tops = ", ".join(f"{z:g}" for z in _interfaces(model))
        print(f"Model: layers v = {layers} km/s, interfaces at depth {tops or 'none'} m")
    else:
        vp = model.physical(model.vp)
        print(f"Model: {args.model}, v = {vp.min():g} .. {vp.max():g} km/s, origin "
              f"{model.origin} m")
    cli.print_mpi(model.grid)
    s_sum = seismic.laplacian_weight_sum(args.space_order)
    shot, op, u = build_shot(model, f0=args.f0, nrec=args.nrec, nt=args.nt,
                             space_order=args.space_order, backend=args.backend,
                             compensated=args.compensated)
    dt, nt = shot.time.step, shot.nt
    print(f"dt = {dt:.6g} ms (CFL: {model.safety:g} * 2 / (v_max * sqrt(sum_d S / h_d**2)) "
          f"with S = sum|w| = {s_sum:.4g}, h_min = {min(model.spacing):g} m, v_max = "
          f"{model.vmax:g} km/s; stability limit {model.stability_limit:.6g} ms); {nt} steps "
          f"simulate {nt * dt:.6g} ms")
    src = shot.src.coordinates.data[0]
    rec = shot.rec.coordinates.data
    print(f"Shot: Ricker wavelet, f0 = {args.f0 * 1000:g} Hz (peak at {1 / args.f0:g} ms), at "
          f"{tuple(float(c) for c in src)} m; {len(rec)} receivers from x = {rec[0, 0]:g} to "
          f"{rec[-1, 0]:g} m at depth {rec[0, -1]:g} m")
    for label, _, t in expected_arrivals(model, shot)[1:]:
        print(f"  expected {label}: {np.nanmin(t):.1f} ms at the nearest receiver")
    result = run_shot(model, shot, op, u)
    print(f"Final wavefield u(t = {nt * dt:.6g} ms): max |u| = {result.max_amplitude:.6e}, "
          f"finite: {'yes' if result.finite else 'NO'}")
    print(cli.traffic_line(args, result.summary, u))
    if args.gather and not rank:
        from stencilgen.seismic import segy
        print(f"Wrote the gather {segy.write_gather(args.gather, shot)}")
    if not args.plot or rank:
        print("--no-plot: no pictures written")
    elif not seismic.have_matplotlib():
        print(f"No pictures: {seismic.MATPLOTLIB_HINT}")
    else:
        for path in save_pictures(result, args.outdir, percentile=args.clip):
            print(f"Wrote {path}")
    return 0 if result.finite else 1


if __name__ == "__main__":
    sys.exit(main())

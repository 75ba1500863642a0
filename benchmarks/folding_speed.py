"""The adjoint runs with the gradient (and SA-TTI's image) folded into the adjoint's stencil
nest (``ir/folding``) against the same adjoints built unfolded (a nest of their own after
the injections), in one run, alternately: the acoustic FWI gradient and the SA-TTI imaging
condition and gradient.

    python benchmarks/folding_speed.py --backend cuda --acoustic 256 256 256 --tti 192 192 192 -nt 100
    python benchmarks/folding_speed.py --backend c --acoustic 64 64 64 --tti 48 48 48 -nt 20

The forward run keeps every step once; each adjoint is applied once to warm up, then
``--repeat`` times in turn. Figures: the median kernel time of the adjoint run (performance
summary), GPts/s, and how far the folded gradient is from the unfolded one (round-off: the
order of the additions).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import Grid, SparseTimeFunction  # noqa: E402
from stencilgen.seismic import imaging  # noqa: E402
from stencilgen.seismic.model import Model  # noqa: E402
from stencilgen.seismic.propagators import acoustic_imaging_operators  # noqa: E402
from stencilgen.seismic.tti import tti_critical_dt, tti_medium  # noqa: E402
from stencilgen.seismic.wavelets import ricker  # noqa: E402


def _sparse(grid, name, points, nt):
    return SparseTimeFunction(name=name, grid=grid, npoint=len(points), nt=nt,
                              coordinates=np.asarray(points, dtype=float))


def _geometry(grid, nt):
    """A source near the top middle, a line of receivers along the first axis."""
    o, e = np.asarray(grid.origin), np.asarray(grid.extent)

    def at(*fractions):
        return list(o + np.asarray(fractions) * e)
    mid = [0.5] * (len(e) - 2)
    return [at(0.5, *mid, 0.2)], [at(x, *mid, 0.2) for x in np.linspace(0.2, 0.8, 50)]


def _timed(runs, repeat):
    """Median seconds of each of ``runs`` (name -> function returning a summary)."""
    times = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(repeat):
        for name, run in runs.items():
            times[name].append(run().globals.time)
    return {name: statistics.median(t) for name, t in times.items()}


def acoustic(args):
    shape, nt = tuple(args.acoustic), args.nt
    model = Model(vp=np.full(shape, 2.0, dtype=np.float32), spacing=10.0, nbl=args.nbl,
                  space_order=8, dtype=np.float32)
    grid, dt = model.grid, float(model.critical_dt)
    src_at, rec_at = _geometry(grid, nt)
    ways = {}
    for name, unfolded in (("folded", False), ("unfolded", True)):
        src, rec = _sparse(grid, "src", src_at, nt), _sparse(grid, "rec", rec_at, nt)
        reca, srca = _sparse(grid, "reca", rec_at, nt), _sparse(grid, "srca", src_at, nt)
        src.data[:, 0] = ricker(0.015, np.arange(nt) * dt)
        fwd, adj, fields, grad, _ = acoustic_imaging_operators(
            model, src, rec, reca, srca, args.backend, f"Fold{name}", checkpoints=None,
            _unfolded=unfolded)
        fwd.apply(time_m=0, time_M=nt - 1, dt=dt)
        reca.data[:] = np.asarray(rec.data)[::-1]
        ways[name] = (adj, fields[2], srca, grad)

    def run(name):
        adj, v, srca, grad = ways[name]
        for f in (v, srca, grad):
            f.zero()
        return adj.apply(time_m=0, time_M=nt - 1, dt=dt)
    times = _timed({n: (lambda n=n: run(n)) for n in ways}, args.repeat)
    a, b = (np.array(ways[n][3].data) for n in ("folded", "unfolded"))
    return model.grid.shape, times, float(np.abs(a - b).max() / np.abs(b).max())


def sa_tti(args):
    shape, nt = tuple(args.tti), args.nt
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    z = np.linspace(0, 1, shape[-1], dtype=np.float32)
    medium = tti_medium(grid, 8, V=np.broadcast_to(1.5 + z, shape), b=1.0, epsilon=0.1,
                        delta=0.04, theta=0.3, phi=0.2, f=0.85)
    dt = 0.9 * tti_critical_dt(medium, 8)
    src_at, rec_at = _geometry(grid, nt)
    src, rec = _sparse(grid, "src", src_at, nt), _sparse(grid, "rec", rec_at, nt)
    src.data[:, 0] = ricker(0.015, np.arange(nt) * dt)
    fwd = imaging.forward_operator(medium, src, rec, "memory", backend=args.backend,
                                   name="FoldTTIF")
    imaging.run_forward(fwd, dt)
    ways = {}
    for name, unfolded in (("folded", False), ("unfolded", True)):
        resid = _sparse(grid, "resid", rec_at, nt)
        resid.data[:] = np.asarray(rec.data)[::-1]
        ways[name] = imaging.adjoint_operator(medium, resid, forward=fwd, backend=args.backend,
                                              name=f"FoldTTI{name}", _unfolded=unfolded)
    times = _timed({n: (lambda n=n: imaging.run_adjoint(ways[n], dt)) for n in ways},
                   args.repeat)
    a, b = (np.array(ways[n].gradient.data) for n in ("folded", "unfolded"))
    return grid.shape, times, float(np.abs(a - b).max() / np.abs(b).max())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="cuda")
    p.add_argument("--acoustic", type=int, nargs=3, default=[256, 256, 256])
    p.add_argument("--tti", type=int, nargs=3, default=[192, 192, 192])
    p.add_argument("--nbl", type=int, default=20)
    p.add_argument("-nt", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print(f"# adjoint runs, {args.nt} steps, space order 8, float32, backend {args.backend}")
    print("| adjoint | grid | unfolded s | folded s | folded GPts/s | speed-up | gradient apart |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, case in (("acoustic gradient", acoustic), ("SA-TTI image + gradient", sa_tti)):
        shape, times, off = case(args)
        rate = int(np.prod(shape)) * args.nt / times["folded"] / 1e9
        print(f"| {label} | {'x'.join(map(str, shape))} | {times['unfolded']:.4f} | "
              f"{times['folded']:.4f} | {rate:.2f} | "
              f"{times['unfolded'] / times['folded']:.2f}x | {off:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GPts/s of the SA-TTI benchmark and the acoustic propagator against a copy-bandwidth roofline.

    python benchmarks/roofline.py --backend c --tti 128 128 128 --acoustic 256 256 256 --nt 20
    python benchmarks/roofline.py --backend cuda --tti 412 423 476 --acoustic 512 512 512 --nt 200
    python benchmarks/roofline.py --backend c cuda --plot roofline.png   # and the chart
    python benchmarks/roofline.py --backend cuda --storage float32 float16 bfloat16  # 16 bits

The roofline is measured in the same run: an Operator of the same backend copying one float32
time slot into the other (``u.forward = u``) on the larger grid moves 8 bytes per point and
step; on a GPU, CuPy's device-to-device copy of the same size is measured too (where CuPy is
installed), and the better of the two is taken as the attainable bandwidth. A propagator's compulsory traffic per point and step (each
array it touches read once and written once, from the performance summary) then bounds it at
``bandwidth / bytes`` points per second; the table gives the fraction of that bound reached.
Each Operator is applied once to warm up (JIT build, first-touch, device copies) and then
timed; the figures are the kernels' times from the performance summary. ``--plot`` draws
each nest as a point (flop/B, GFlops/s, as printed) under each backend's roofline: the
measured bandwidth and the compute ceiling (``charts.py``). ``--storage`` runs both
workloads with their fields (wavefields, medium, temporaries) stored in each format named,
arithmetic in float32, and prints each one's speed-up over the first.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import Eq, Grid, Operator, TimeFunction, configuration  # noqa: E402
from stencilgen import seismic  # noqa: E402
from demos.dummy_benchmark.run import setup as tti_setup  # noqa: E402
from benchmarks import charts  # noqa: E402


def _grid(shape):
    return Grid(shape=tuple(shape), extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)


def copy_bandwidth(backend, shape, nt=20):
    """GB/s of ``u.forward = u`` (float32, one slot into the other, ``nt`` steps): the
    attainable memory bandwidth of this backend."""
    u = TimeFunction(name="u", grid=_grid(shape), time_order=1, space_order=2)
    u.data[:] = 1.0
    op = Operator([Eq(u.forward, u)], name="Copy", backend=backend)
    op.apply(time_M=1)
    s = op.apply(time_m=0, time_M=nt - 1)
    return 8.0 * s.globals.points / s.globals.time / 1e9


def vendor_copy_bandwidth(shape, repeats=20):
    """GB/s of a device-to-device copy of a float32 array of ``shape`` points done by CuPy
    (the vendor's copy kernel), or None without CuPy or a GPU."""
    try:
        import cupy as cp
        a = cp.ones(int(np.prod(shape)), dtype=cp.float32)
    except Exception:  # no CuPy, or no usable GPU
        return None
    b = cp.empty_like(a)
    cp.copyto(b, a)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        cp.copyto(b, a)
    stop.record()
    stop.synchronize()
    seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3
    return 2.0 * a.nbytes * repeats / seconds / 1e9


def _storage(name):
    return None if name == "float32" else name


def tti(backend, shape, nt, storage="float32"):
    op, P, M, medium, dt = tti_setup(shape, 8, np.float32, backend, storage=_storage(storage))
    op.apply(time_m=1, time_M=2, dt=dt)
    return op.apply(time_m=1, time_M=nt, dt=dt)


def acoustic(backend, shape, nt, storage="float32"):
    """The acoustic demo's propagator (sponge of 40 points included in ``shape``), a source."""
    nbl = 40
    model = seismic.layered_model(tuple(n - 2 * nbl for n in shape), 10.0, nbl=nbl,
                                  space_order=8, dtype=np.float32, storage=_storage(storage))
    ta = seismic.TimeAxis(start=0.0, stop=(nt + 1) * model.critical_dt, step=model.critical_dt,
                          num=nt + 2)
    shot = seismic.make_shot(model, ta, 0.010, seismic.source_at(model),
                             seismic.receiver_line(model, 101))
    op, u = seismic.acoustic_operator(model, shot, backend=backend, name="AcousticBench")
    op.apply(time_m=0, time_M=1, dt=model.critical_dt)
    return op.apply(time_m=0, time_M=nt - 1, dt=model.critical_dt)


def measure(backend, args):
    """(bandwidth GB/s, what it is, summary rows, nests) of one backend on this machine."""
    bigger = max(args.tti, args.acoustic, key=lambda s: s[0] * s[1] * s[2])
    own = copy_bandwidth(backend, bigger)
    vendor = vendor_copy_bandwidth(bigger) if backend in ("cuda", "openacc") else None
    # the roofline is the better of the two copies: what the memory can deliver
    bw = max(own, vendor or 0.0)
    rows, nests = [], []
    runs = [(f"SA-TTI {st}" if len(args.storage) > 1 else "SA-TTI", args.tti, tti, st)
            for st in args.storage]
    runs += [(f"acoustic {st}" if len(args.storage) > 1 else "acoustic", args.acoustic,
              acoustic, st) for st in args.storage]
    for name, shape, run, storage in runs:
        s = run(backend, shape, args.nt, storage)
        # each nest's share of the roofline: its compulsory bytes over what the copy moves in
        # its time
        nests += [(name, e, e.traffic / (e.time * bw * 1e9) if e.time else 0.0)
                  for e in s.sections.values() if e.points]
        bytes_per_point = s.globals.traffic / s.globals.points
        bound = bw / bytes_per_point
        rows.append((name, "x".join(map(str, shape)), args.nt, s.globals.gpointss,
                     s.globals.gflopss, bytes_per_point, bound, s.globals.gpointss / bound))
    grid = "x".join(map(str, bigger))
    what = (f"copy bandwidth {own:.1f} GB/s with this backend's u.forward = u (float32, "
            f"{grid})" + (f", {vendor:.1f} GB/s with CuPy's device copy" if vendor else "")
            + f"; roofline at {bw:.1f} GB/s")
    return bw, what, rows, nests


def speedups(rows):
    """Per workload and storage, GPts/s over that workload's first storage's."""
    first, out = {}, []
    for r in rows:
        workload = r[0].split()[0]
        first.setdefault(workload, r[3])
        out.append((r[0], r[5], r[3], r[3] / first[workload]))
    return out


def report(backend, what, rows, nests):
    print(f"\nbackend {backend}: {what}")
    print(f"{'workload':18s} {'grid':>12s} {'nt':>4s} {'GPts/s':>8s} {'GFlops/s':>9s} "
          f"{'B/pt':>6s} {'roof GPts/s':>11s} {'% roof':>7s}")
    for r in rows:
        print(f"{r[0]:18s} {r[1]:>12s} {r[2]:4d} {r[3]:8.3f} {r[4]:9.1f} {r[5]:6.0f} "
              f"{r[6]:11.2f} {100 * r[7]:6.1f}%")
    print(f"\n{'workload':14s} {'nest':>10s} {'time s':>8s} {'GPts/s':>8s} {'B/pt':>6s} "
          f"{'% roof':>7s} {'flop/B':>8s} {'GFlops/s':>10s}")
    for workload, e, fraction in nests:
        print(f"{workload:14s} {e.name:>10s} {e.time:8.4f} {e.gpointss:8.3f} "
              f"{e.traffic / e.points:6.0f} {100 * fraction:6.1f}% {e.oi:8.4g} "
              f"{e.gflopss:10.6g}")


def peak(backend, given):
    """(GFlop/s, note) of the compute ceiling: ``--peak-gflops``, a GPU's datasheet, or this
    CPU's estimate."""
    if given:
        return given, "given"
    if backend in ("cuda", "openacc"):
        from stencilgen import platform
        found, name, _ = platform.probe_gpu()
        known = charts.gpu_peak(name) if found else None
        if known:
            return known
    return charts.cpu_peak()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["c"])
    p.add_argument("--tti", nargs=3, type=int, default=[128, 128, 128])
    p.add_argument("--acoustic", nargs=3, type=int, default=[256, 256, 256])
    p.add_argument("--nt", type=int, default=20)
    p.add_argument("--plot", metavar="FILE.png", help="also draw the roofline chart there")
    p.add_argument("--storage", nargs="+", default=["float32"],
                   choices=["float32", "float16", "bfloat16"],
                   help="what the fields are stored as (several: each, and the speed-ups)")
    p.add_argument("--peak-gflops", type=float, default=None,
                   help="the compute ceiling (default: the GPU's datasheet fp32 peak, or an "
                        "estimate of this CPU's)")
    args = p.parse_args(argv)
    if args.plot:
        charts.pyplot()   # say at once if matplotlib is missing
    configuration["log-level"] = "INFO"
    points, roofs = [], {}
    for backend in args.backend:
        bw, what, rows, nests = measure(backend, args)
        report(backend, what, rows, nests)
        if len(args.storage) > 1:
            print(f"\n{'workload':18s} {'B/pt':>6s} {'GPts/s':>8s} {'x first':>8s}")
            for name, bpt, rate, ratio in speedups(rows):
                print(f"{name:18s} {bpt:6.0f} {rate:8.3f} {ratio:8.2f}")
        roofs[backend] = (bw,) + tuple(peak(backend, args.peak_gflops))
        points += [(f"{w} {e.name}", backend, e.oi, e.gflopss) for w, e, _ in nests]
    drawn = []
    if args.plot:
        drawn = charts.roofline_chart(args.plot, points, roofs,
                                      title="Roofline: " + ", ".join(args.backend))
        print(f"\nWrote {args.plot} ({len(drawn)} points)")
    return drawn


if __name__ == "__main__":
    main()

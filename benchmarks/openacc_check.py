"""OpenACC against C: where the OpenACC build runs, whether it matches, and how fast it is.

    python benchmarks/openacc_check.py [--program acoustic|tti] [--shape 320 320 320] [--nt 60]
                                       [--vector-lengths 0 128] [--skip-programs]

1. Names the OpenACC toolchain (and whether it offloads), then builds the test programs of
   tests/programs.py for C and OpenACC in parallel and runs each with both backends (as
   tests/test_openacc.py does):
   the max relative difference, its tolerance and where the OpenACC regions ran (as the
   OpenACC runtime reports it from inside a compute region).
2. Times a float32 propagator (space order 8) at --shape for --nt steps with C/OpenMP and with
   OpenACC (each of --vector-lengths, 0 meaning the compiler's choice): GPts/s from the
   performance summary, and the difference between the final wavefields. --program picks the
   acoustic equation or the SA-TTI system of demos/dummy_benchmark (e.g. --shape 412 423 476
   --nt 200 for the benchmark's size).
The last lines printed are a short table.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backends.openacc import OpenACCBackend  # noqa: E402
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, platform, solve  # noqa: E402


def check_programs():
    sys.path.insert(0, str(ROOT / "tests"))            # where test_openacc finds its programs
    import test_openacc as t
    start = time.perf_counter()
    compile_seconds = t.prebuild(processes=os.cpu_count())
    build_wall = time.perf_counter() - start
    rows = []
    for name in t.PROGRAMS:
        for key, dtype in t.DTYPES.items():
            diff, tol, op = t.compare(name, dtype)
            lib = op._build.library
            rows.append((f"{name} {key}", diff, tol, "GPU" if lib.stencilgen_acc_device() else "host"))
    return rows, compile_seconds, build_wall


def _acoustic(backend, shape):
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = Function(name="m", grid=grid, space_order=8)
    rng = np.random.default_rng(5)
    m.data[:] = 1 / rng.uniform(1.5, 3.0, size=shape) ** 2      # dt v / h <= 0.3: stable
    u.data[:] = 0
    u.data[(0, *(n // 2 for n in shape))] = 1.0                 # an impulse at the centre
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))],
                  name="bench_acoustic", backend=backend)
    return op, u, dict(time_m=0, dt=1.0)


def _tti(backend, shape):
    from demos.dummy_benchmark import run as dummy
    op, P, _, _, dt = dummy.setup(shape, 8, np.float32, backend)
    return op, P, dict(time_m=1, dt=dt)


PROGRAMS = {"acoustic": _acoustic, "tti": _tti}


def timed_run(program, backend, shape, nt, vector_length=None):
    """(final wavefield, summary, build seconds, where the OpenACC regions ran)."""
    op, field, kwargs = PROGRAMS[program](backend, shape)
    if backend == "openacc" and vector_length:
        # the same program printed with another EmitOptions; the source is built on first use
        options = dataclasses.replace(platform.emit_options("openacc"),
                                      vector_length=vector_length)
        op.ccode = OpenACCBackend(op.program, options).emit()
    t0 = time.perf_counter()
    op.cfunction                                   # build (or fetch) outside the timing
    build = time.perf_counter() - t0
    time_m = kwargs.pop("time_m")
    summary = op.apply(time_m=time_m, time_M=time_m + nt - 1, **kwargs)
    where = ""
    if backend == "openacc":
        where = "GPU" if op._build.library.stencilgen_acc_device() else "host"
    return field.data[(time_m + nt) % 3].copy(), summary, build, where


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs="+", default=[320, 320, 320])
    ap.add_argument("--nt", type=int, default=60, help="time steps")
    ap.add_argument("--program", choices=sorted(PROGRAMS), default="acoustic")
    ap.add_argument("--vector-lengths", type=int, nargs="+", default=[0, 128])
    ap.add_argument("--skip-programs", action="store_true")
    args = ap.parse_args(argv)
    tc = platform.toolchain("openacc")
    print(f"OpenACC toolchain: {tc.name}: {tc.cc} ({tc.version()})")
    print(f"  flags: {' '.join(tc.cflags)}")
    rows, compile_s, build_wall = ([], 0.0, 0.0) if args.skip_programs else check_programs()

    perf = []
    shape = tuple(args.shape)
    ref, summary, build, _ = timed_run(args.program, "c", shape, args.nt)
    perf.append(("C/OpenMP", summary, build, "", 0.0))
    scale = np.abs(ref).max()
    for vl in args.vector_lengths:
        out, summary, build, where = timed_run(args.program, "openacc", shape, args.nt, vl)
        diff = np.abs(out.astype(np.float64) - ref).max() / scale
        perf.append((f"OpenACC vl={vl or 'default'}", summary, build, where, diff))

    print()
    if rows:
        bad = [r for r in rows if r[1] > r[2]]
        on_gpu = sum(r[3] == "GPU" for r in rows)
        print(f"programs: {len(rows)} (OpenACC vs C), {len(rows) - len(bad)} within tolerance, "
              f"{on_gpu} ran on the GPU; compiling took {compile_s:.0f} s of CPU "
              f"({build_wall:.0f} s wall in parallel)")
        print(f"{'program':28s} {'max rel diff':>12s} {'tolerance':>9s}  where")
        for name, diff, tol, where in rows:
            flag = "" if diff <= tol else "  <-- FAIL"
            print(f"{name:28s} {diff:12.2e} {tol:9.0e}  {where}{flag}")
    print(f"\n{args.program} so=8 float32 {'x'.join(map(str, shape))}, {args.nt} steps")
    print(f"{'backend':20s} {'build s':>8s} {'kernel s':>9s} {'GPts/s':>7s} {'GFlops/s':>9s} "
          f"{'rel diff':>9s}  where")
    for label, s, build, where, diff in perf:
        print(f"{label:20s} {build:8.1f} {s.globals.time:9.3f} {s.gpointss:7.2f} "
              f"{s.gflopss:9.1f} {diff:9.1e}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

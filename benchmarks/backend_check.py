"""The seismic workloads on several backends: the same outputs, and how fast each backend is.

    python benchmarks/backend_check.py --backends c cuda openacc --tti 412 423 476 --nt 200

Workloads (float32, space order 8):
  tti-dummy     the SA-TTI benchmark of demos/dummy_benchmark (P and M after --nt steps);
  acoustic-shot the acoustic demo's shot: layered model, sponge, Ricker source, receiver line
                (the record and the final wavefield), physical grid --acoustic;
  tti-shot      demos/tti's shot in the layered TTI model with the sponge (record and P),
                physical grid --tti-shot.
Each runs on every backend of --backends; the first is the reference. Printed per workload
and backend: build and kernel seconds, GPts/s, the largest difference from the reference
relative to the reference's largest value (over every output), and, for OpenACC, where the
runtime says the compute regions ran. Ends with a short table; exits 1 if a difference
exceeds --tolerance.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import seismic  # noqa: E402
from demos.dummy_benchmark.run import setup as tti_setup  # noqa: E402
from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt  # noqa: E402
from stencilgen import configuration  # noqa: E402


def _tti_demo():
    spec = importlib.util.spec_from_file_location("tti_demo", ROOT / "demos" / "tti" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tti_dummy(backend, shape, nt):
    op, P, M, _, dt = tti_setup(shape, 8, np.float32, backend)
    return op, dict(time_m=1, time_M=nt, dt=dt), lambda: [P.data[(nt + 1) % 3], M.data[(nt + 1) % 3]]


def _shot(model, dt, nt, f0=0.010):
    ta = seismic.TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    return seismic.make_shot(model, ta, f0, seismic.source_at(model),
                             seismic.receiver_line(model, model.shape[0]))


def acoustic_shot(backend, shape, nt):
    model = seismic.layered_model(shape, 10.0, nbl=20, space_order=8, dtype=np.float32)
    shot = _shot(model, model.critical_dt, nt)
    op, u = seismic.acoustic_operator(model, shot, backend=backend, name="AcousticShot")
    return (op, dict(time_m=0, time_M=nt - 1, dt=model.critical_dt),
            lambda: [shot.rec.data, u.data[nt % 3]])


def tti_shot(backend, shape, nt):
    demo = _tti_demo()
    model = seismic.layered_model(shape, 10.0, velocities=demo.VELOCITY, nbl=20, space_order=8,
                                  dtype=np.float32)
    medium = demo.make_medium(model, 8)
    dt = tti_critical_dt(medium, 8)
    shot = _shot(model, dt, nt)
    op, P, M = sa_tti_operator(medium, 8, shot=shot, backend=backend, name="TTIShot")
    return op, dict(time_m=0, time_M=nt - 1, dt=dt), lambda: [shot.rec.data, P.data[nt % 3]]


def run(workload, backend, shape, nt):
    t0 = time.perf_counter()
    op, kwargs, outputs = workload(backend, shape, nt)
    op.cfunction                                    # build or fetch, outside the timing
    build = time.perf_counter() - t0
    summary = op.apply(**kwargs)
    where = ""
    if backend == "openacc":
        where = "GPU" if op._build.library.stencilgen_acc_device() else "host"
    outs = [np.array(o, dtype=np.float64) for o in outputs()]
    return outs, summary, build, where


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", nargs="+", default=["c", "cuda", "openacc"])
    p.add_argument("--tti", nargs=3, type=int, default=[64, 64, 64])
    p.add_argument("--nt", type=int, default=100, help="steps of tti-dummy")
    p.add_argument("--acoustic", nargs="+", type=int, default=[101, 101, 81])
    p.add_argument("--tti-shot", nargs="+", type=int, default=[81, 61, 61])
    p.add_argument("--shot-nt", type=int, default=400, help="steps of the shots")
    p.add_argument("--only", nargs="+", default=["tti-dummy", "acoustic-shot", "tti-shot"])
    p.add_argument("--tolerance", type=float, default=1e-4)
    args = p.parse_args(argv)
    configuration["log-level"] = "INFO"
    plan = {"tti-dummy": (tti_dummy, args.tti, args.nt),
            "acoustic-shot": (acoustic_shot, args.acoustic, args.shot_nt),
            "tti-shot": (tti_shot, args.tti_shot, args.shot_nt)}
    rows, worst = [], 0.0
    for name in args.only:
        workload, shape, nt = plan[name]
        ref = None
        for backend in args.backends:
            outs, s, build, where = run(workload, backend, tuple(shape), nt)
            finite = all(np.all(np.isfinite(o)) for o in outs)
            if ref is None:
                ref, diff = outs, 0.0
            else:
                diff = max(np.abs(o - r).max() / max(np.abs(r).max(), 1e-30)
                           for o, r in zip(outs, ref))
                worst = max(worst, diff)
            rows.append((name, "x".join(map(str, shape)), nt, backend, build, s.globals.time,
                         s.gpointss, diff, where, finite))
            print(f"{name} {backend}: {s.gpointss:.3f} GPts/s, max rel diff {diff:.2e} "
                  f"{where}", flush=True)
    print(f"\n{'workload':14s} {'grid':>12s} {'nt':>4s} {'backend':8s} {'build s':>7s} "
          f"{'kernel s':>8s} {'GPts/s':>7s} {'rel diff':>9s} where finite")
    for r in rows:
        print(f"{r[0]:14s} {r[1]:>12s} {r[2]:4d} {r[3]:8s} {r[4]:7.1f} {r[5]:8.3f} {r[6]:7.2f} "
              f"{r[7]:9.2e} {r[8]:5s} {'yes' if r[9] else 'NO'}")
    ok = worst <= args.tolerance and all(r[9] for r in rows)
    print(f"largest difference from {args.backends[0]}: {worst:.2e} "
          f"(tolerance {args.tolerance:g}): {'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""The SA-TTI benchmark: the self-adjoint TTI propagator on constant ("dummy") parameters.

    python demos/dummy_benchmark/run.py                                  # 64^3, 100 steps
    python demos/dummy_benchmark/run.py -d 412 423 476 -nt 200 --backend cuda
    python demos/dummy_benchmark/run.py -d 412 423 476 -nt 200 --backend cuda --chunks 10
    python demos/dummy_benchmark/run.py -d 412 423 476 -nt 200 --backend cuda --storage float16

The propagator is ``stencilgen/seismic/tti.py`` (Bube et al. 2016: two fields P and M, nested
staggered derivatives, space order 8 by default). The medium is constant, V = 1.5 km/s,
b = 1, epsilon = 0.1, delta = 0.05, f = 0.85, theta = pi/6, phi = pi/4, stored in full arrays
as a real model would be; there are no absorbing boundaries, as in the benchmark this one
follows. Spacing 10 m; dt is 0.8 times the stability limit derived in ``tti_stability_limit``
and is printed. P starts as a Gaussian bump at the centre, so every step does real arithmetic.

``--storage float16`` or ``bfloat16`` stores P, M and the medium in 16 bits (float32
arithmetic), ``--compensated`` adds the companion fields of compensated stepping.

Printed: the jit-compiled (or fetched) line, the code-generation time, the run time,
``Global performance: [OI=..., X GFlops/s, Y GPts/s]`` and a line per section (log level PERF,
selected unless STENCILGEN_LOGGING is set), then max |P| and whether the fields are finite.
GPts/s counts grid points times time steps per second, so it compares across space orders.
Last, the storage and the bytes per grid point per step the performance summary counts.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

# the checkout this script lives in: stencilgen (installed or not) and demos/cli.py
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from stencilgen import Grid  # noqa: E402
from stencilgen.data.places import DeviceMemoryError  # noqa: E402
from stencilgen.distributed.mpi import allreduce_max  # noqa: E402
from demos import cli  # noqa: E402
from stencilgen.seismic.propagators import field_values  # noqa: E402
from stencilgen.seismic.tti import (DUMMY_MEDIUM, sa_tti_operator, tti_critical_dt,  # noqa: E402
                               tti_medium, tti_stability_limit)

SPACING = 10.0   # m


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="demos/dummy_benchmark/run.py",
        description="Self-adjoint TTI propagator on constant parameters: prints the run time, "
                    "GFlops/s and GPts/s.")
    cli.add_common(p, (64, 64, 64), "number of time steps; default 100", nt_default=100)
    p.add_argument("--chunks", type=cli.positive, default=None, metavar="K",
                   help="run the steps as K applies of nt/K steps each, after a first apply "
                        "of nt/K steps (the fields stay on the GPU between them), and print "
                        "the kernel and with-setup figures of the K")
    cli.add_storage(p, "P, M and the medium's parameters")
    p.add_argument("--nested", choices=("extended", "domain"), default="domain",
                   help="where the fluxes of the nested derivatives are computed: on the "
                        "domain only, zero beyond (default), or past the domain's edges too, "
                        "from the halos (Devito's)")
    return p


def setup(shape, space_order=8, dtype=np.float32, backend=None, storage=None,
          compensated=False, nested="domain"):
    """(op, P, M, medium, dt): the benchmark's Operator, fields and time step; the fields
    and the medium stored as ``storage`` (None: dtype; numpy.float16 or "bfloat16");
    ``nested``: the Operator's."""
    shape = tuple(int(n) for n in shape)
    grid = Grid(shape=shape, extent=tuple(SPACING * (n - 1) for n in shape), dtype=dtype)
    medium = tti_medium(grid, space_order, storage=storage, **DUMMY_MEDIUM)
    op, P, M = sa_tti_operator(medium, space_order, backend=backend, name="SATTIBenchmark",
                               compensated=compensated, nested=nested)
    bump(P, grid)
    return op, P, M, medium, tti_critical_dt(medium, space_order)


def bump(P, grid):
    """P at times 0 and 1: a Gaussian of 4 spacings at the centre, built plane by plane on
    the points this rank owns (a large split grid never has the whole of it in one place)."""
    owned = grid.decomposition.owned if grid.decomposition is not None else \
        tuple((0, n - 1) for n in grid.shape)
    centre = [o + e / 2 for o, e in zip(grid.origin, grid.extent)]
    # exp(-|r|^2 / 2s^2) is the product of one Gaussian per axis
    factors = [np.exp(-(np.arange(lo, hi + 1) * h - c) ** 2 / (2 * (4 * SPACING) ** 2))
               for (lo, hi), h, c in zip(owned, grid.spacing, centre)]
    rest = factors[1]
    for f in factors[2:]:
        rest = np.multiply.outer(rest, f)
    data = P.data.local if grid.decomposition is not None else P.data   # local indices
    for i, value in enumerate(factors[0]):
        data[0, i] = value * rest
        data[1, i] = value * rest


def run_chunks(op, nt, chunks, dt):
    """A first apply of nt/chunks steps, then ``chunks`` more of as many; prints the figures
    of the latter (kernels, and the wall time of each apply: "with setup"). Returns the last
    step and the last summary."""
    if nt % chunks:
        raise SystemExit(f"--chunks {chunks} must divide -nt {nt}")
    step = nt // chunks
    first = op.apply(time_m=1, time_M=step, dt=dt)
    print(f"First apply ({step} steps, fields going to the device): "
          f"{first.globals_with_setup.time:.3f} s with setup")
    runs, t0 = [], time.perf_counter()
    for c in range(1, chunks + 1):
        runs.append(op.apply(time_m=1 + c * step, time_M=(c + 1) * step, dt=dt))
    loop = time.perf_counter() - t0
    kernels = sum(r.globals.time for r in runs)
    setup = sum(r.globals_with_setup.time for r in runs)
    points = sum(r.globals.gpointss * r.globals.time for r in runs)   # point updates
    print(f"Chunked: {chunks} applies of {step} steps: kernels {kernels:.3f} s "
          f"[{points / kernels:.3f} GPts/s], with setup {setup:.3f} s "
          f"[{points / setup:.3f} GPts/s], loop wall {loop:.3f} s; with setup / kernels = "
          f"{setup / kernels:.3f}")
    return (chunks + 1) * step, runs[-1]


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    cli.check_dims(p, args)
    cli.check_storage(p, args)
    cli.perf_logging()
    cli.mpi_setup(args)
    shape = tuple(args.shape)
    dtype = cli.DTYPES[args.dtype]
    print(f"SA-TTI dummy benchmark: shape {shape}, spacing {SPACING:g} m, space order "
          f"{args.space_order}, {args.nt} time steps, {cli.storage_label(args)}, "
          f"nested derivatives {args.nested}")
    t0 = time.perf_counter()
    op, P, M, medium, dt = setup(shape, args.space_order, dtype, args.backend,
                                 cli.storage(args), args.compensated, args.nested)
    limit = tti_stability_limit(medium.grid.spacing, medium.vmax, medium.epsmax, args.space_order)
    print(f"Medium: V = {DUMMY_MEDIUM['V']} km/s, epsilon = {DUMMY_MEDIUM['epsilon']}, delta = "
          f"{DUMMY_MEDIUM['delta']}, f = {DUMMY_MEDIUM['f']}, theta = pi/6, phi = pi/4, b = 1")
    print(f"dt = {dt:.6g} ms (0.8 x the stability limit {limit:.6g} ms = 2 / (V sqrt(1 + 2 eps) "
          f"sqrt(sum_d (S1 / h_d)^2)), S1 = sum|w| of the staggered d/dx)")
    cli.print_mpi(medium.grid)
    print(f"Operator built in {time.perf_counter() - t0:.2f} s (code generation "
          f"{op.codegen_seconds:.2f} s), {len(op.program.kernels)} loop nests, "
          f"{sum(k.flops for k in op.program.steps)} flops per point per step")
    try:
        if args.chunks:
            last, summary = run_chunks(op, args.nt, args.chunks, dt)
        else:
            last, summary = args.nt, op.apply(time_m=1, time_M=args.nt, dt=dt)
    except DeviceMemoryError as exc:
        if medium.grid.decomposition is not None:
            raise   # every rank ends with the message (stencilgen.distributed.mpi)
        print(f"Stopped before the run: {exc}", file=sys.stderr)
        return 2
    slot = (last + 1) % 3
    final = field_values(P, slot)
    finite = bool(np.all(np.isfinite(final)) and np.all(np.isfinite(M.data[slot])))
    finite = allreduce_max(float(not finite), medium.grid) == 0.0   # every rank's
    peak = allreduce_max(float(np.abs(final).max()) if final.size else 0.0, medium.grid)
    ran = f"Ran {last} steps ({last * dt:.6g} ms)"
    if not args.chunks:
        ran += f" in {summary.globals.time:.3f} s: {summary.globals.gpointss:.3f} GPts/s"
    print(f"{ran}; max |P| = {peak:.4e}, "
          f"finite: {'yes' if finite else 'NO'}")
    print(cli.traffic_line(args, summary, P))
    held = cli.gpu_memory_line(medium.grid)
    if held:
        print(held)
    return 0 if finite and math.isfinite(summary.globals.time) else 1


if __name__ == "__main__":
    sys.exit(main())

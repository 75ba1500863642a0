"""Programs run whole and split over MPI ranks (tests/test_mpi.py): each returns its fields
and receiver records gathered on rank 0. Sources and receivers sit on the blocks' edges.

Run as ``mpiexec -n N python tests/mpi_programs.py PROGRAM OUT.npz [MODE [BACKEND]]`` (MODE:
basic, overlap, or serial: no MPI at all; BACKEND: c, the default, or cuda); rank 0 writes the
arrays to OUT.npz.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stencilgen import (Eq, Function, Grid, Inc, NODE, Operator, SparseTimeFunction,  # noqa: E402
                        TimeFunction, VectorTimeFunction, configuration, div, exp, grad, solve)
from stencilgen.distributed.mpi import gather  # noqa: E402

BACKEND = {"name": "c"}


def _ricker(nt, dt, f0):
    t = np.arange(nt) * dt - 1.0 / f0
    a = (np.pi * f0 * t) ** 2
    return ((1 - 2 * a) * np.exp(-a)).astype(np.float32)


def _edges(n, parts=(2, 3, 4)):
    """Coordinates (in points) on the edges between the blocks of n points split in 2, 3, 4."""
    out = []
    for p in parts:
        base, extra = divmod(n, p)
        out.append(base + (1 if extra else 0) - 0.5)   # between the first two blocks
    return out


def acoustic(comm, so=8, n=(61, 47), nt=120):
    """2D acoustic with a sponge and a layered velocity; sources at block edges along both
    dimensions, a receiver line crossing every block."""
    h = 10.0
    grid = Grid(n, extent=tuple(h * (k - 1) for k in n), comm=comm)
    m, damp = (Function(name=name, grid=grid, space_order=so) for name in ("m", "damp"))
    vp = np.full(n, 1.5, dtype=np.float32)
    vp[:, n[1] // 2:] = 2.5
    m.data[:] = 1.0 / vp ** 2
    ramp = np.zeros(n, dtype=np.float32)
    for axis, k in enumerate(n):
        d = np.minimum(np.arange(k), np.arange(k)[::-1]).astype(np.float32)
        prof = np.where(d < 8, (8 - d) / 8, 0) ** 2 * 0.2
        ramp += prof.reshape([-1 if a == axis else 1 for a in range(2)])
    damp.data[:] = ramp
    u = TimeFunction(name="u", grid=grid, space_order=so, time_order=2)
    dt = 0.4 * h / 2.5
    xs = _edges(n[0])
    src = SparseTimeFunction(name="src", grid=grid, npoint=3, nt=nt)
    src.coordinates.data[:] = [[xs[0] * h, 20.3 * h], [xs[1] * h, _edges(n[1])[0] * h],
                               [17.2 * h, _edges(n[1])[2] * h]]
    src.data[:] = _ricker(nt, dt, 0.02)[:, None]
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=23, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(3.3 * h, (n[0] - 4.1) * h, 23)
    rec.coordinates.data[:, 1] = _edges(n[1])[0] * h
    pde = m * u.dt2 - u.laplace + damp * u.dt
    eqs = [Eq(u.forward, solve(pde, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * dt ** 2 / m)
    eqs += rec.interpolate(expr=u)
    Operator(eqs, name="MpiAcoustic", backend=BACKEND["name"])(time_M=nt - 2, dt=dt)
    return {"u": gather(u), "rec": np.array(rec.data)}


def fourier(comm, so=4, n=(45, 38), nt=60):
    """Complex fields over the ranks: the acoustic wave's Fourier mode summed on the fly
    (complex64), and a complex field diffused with a complex coefficient (its halo, complex
    values, exchanged), injected into by complex samples."""
    h = 10.0
    grid = Grid(n, extent=tuple(h * (k - 1) for k in n), comm=comm)
    m = Function(name="m", grid=grid, space_order=so)
    m.data[:] = 1.0 / 1.5 ** 2
    u = TimeFunction(name="u", grid=grid, space_order=so, time_order=2)
    w = TimeFunction(name="w", grid=grid, space_order=so, dtype=np.complex64)
    xx, yy = np.meshgrid(np.arange(n[0]), np.arange(n[1]), indexing="ij")
    w.data[0] = np.exp(-((xx - 20.0) ** 2 + (yy - 17.0) ** 2) / 30.0) * (1 + 0.5j)
    mode = Function(name="mode", grid=grid, space_order=0, dtype=np.complex64)
    dt = 0.4 * h / 1.5
    src = SparseTimeFunction(name="src", grid=grid, npoint=2, nt=nt)
    src.coordinates.data[:] = [[_edges(n[0])[0] * h, 17.3 * h], [31.2 * h, _edges(n[1])[1] * h]]
    src.data[:] = _ricker(nt, dt, 0.02)[:, None]
    zs = SparseTimeFunction(name="zs", grid=grid, npoint=2, nt=nt, dtype=np.complex64,
                            coordinates=src.coordinates.data)
    zs.data[:] = (1 - 2j) * _ricker(nt, dt, 0.03)[:, None]
    time = grid.time_dim
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward)),
           Eq(w.forward, w + 0.2 * exp(0.3j) * w.laplace * h ** 2 / 4)]
    eqs += src.inject(field=u.forward, expr=src * dt ** 2 / m)
    eqs += zs.inject(field=w.forward, expr=zs)
    eqs += [Inc(mode, exp(-2j * np.pi * 0.01 * time * time.spacing) * u)]
    Operator(eqs, name="MpiFourier", backend=BACKEND["name"])(time_M=nt - 2, dt=dt)
    return {"mode": gather(mode), "w": gather(w)}


def staggered(comm, so=4, n=(52, 45), nt=80):
    """The first-order velocity-pressure system on a staggered grid."""
    h = 10.0
    grid = Grid(n, extent=tuple(h * (k - 1) for k in n), comm=comm)
    ro, l2m = (Function(name=name, grid=grid, space_order=so) for name in ("ro", "l2m"))
    vp = np.full(n, 1.5, dtype=np.float32)
    vp[:, n[1] // 2:] = 2.2
    rho = np.full(n, 1.0, dtype=np.float32)
    rho[n[0] // 3:, :] = 1.8
    ro.data[:] = 1.0 / rho
    l2m.data[:] = rho * vp ** 2
    p = TimeFunction(name="p", grid=grid, staggered=NODE, space_order=so, time_order=1)
    v = VectorTimeFunction(name="v", grid=grid, space_order=so, time_order=1)
    dt = 0.4 * h / 2.2 / np.sqrt(2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[_edges(n[0])[0] * h, _edges(n[1])[0] * h]]
    src.data[:, 0] = _ricker(nt, dt, 0.02)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=9, nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(4.2 * h, (n[0] - 5.3) * h, 9)
    rec.coordinates.data[:, 1] = _edges(n[1])[1] * h
    eqs = [Eq(v.forward, solve(v.dt - ro * grad(p), v.forward)),
           Eq(p.forward, solve(p.dt - l2m * div(v.forward), p.forward))]
    eqs += src.inject(field=p.forward, expr=src * dt)
    eqs += rec.interpolate(expr=p)
    Operator(eqs, name="MpiStaggered", backend=BACKEND["name"])(time_M=nt - 2, dt=dt)
    return {"p": gather(p), "vx": gather(v[0]), "vy": gather(v[1]), "rec": np.array(rec.data)}


def sa_tti(comm, so=8, n=(30, 27, 25), nt=40):
    """The SA-TTI propagator of stencilgen/seismic on a small 3D grid, a source and receivers on
    the blocks' edges; its fluxes computed past the edges (Devito's nested derivatives: the
    ranks compute them over their neighbours' points too, from halos exchanged as deep)."""
    from stencilgen.seismic.tti import sa_tti_operator, tti_critical_dt, tti_medium
    from stencilgen.seismic.geometry import make_shot
    from stencilgen.seismic.wavelets import TimeAxis
    h = 10.0
    grid = Grid(n, extent=tuple(h * (k - 1) for k in n), comm=comm)
    theta = np.linspace(0.2, 0.7, n[0], dtype=np.float32)[:, None, None] * np.ones(n)
    medium = tti_medium(grid, so, V=1.5, epsilon=0.12, delta=0.04, theta=theta)
    dt = tti_critical_dt(medium, so)
    time = TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    edges = [_edges(k)[0] * h for k in n]
    rec = np.stack([np.linspace(2.7 * h, (n[0] - 3.4) * h, 7), np.full(7, edges[1]),
                    np.full(7, edges[2])], axis=1)
    shot = make_shot(grid, time, 0.03, [edges], rec)
    op, P, M = sa_tti_operator(medium, so, shot, backend=BACKEND["name"], name="MpiSATTI",
                               nested="extended")
    op(time_M=nt - 2, dt=dt)
    return {"P": gather(P), "M": gather(M), "rec": np.array(shot.rec.data)}


PROGRAMS = {"acoustic": acoustic, "staggered": staggered, "sa_tti": sa_tti, "fourier": fourier}


def main(argv):
    program, out = argv[1], argv[2]
    mode = argv[3] if len(argv) > 3 else "basic"
    BACKEND["name"] = argv[4] if len(argv) > 4 else "c"
    configuration["log-level"] = "WARNING"
    if mode == "serial":
        result = PROGRAMS[program](None)
        np.savez(out, **result)
        return
    configuration["mpi"] = mode
    from mpi4py import MPI
    result = PROGRAMS[program](MPI.COMM_WORLD)
    if MPI.COMM_WORLD.Get_rank() == 0:
        np.savez(out, **result)


if __name__ == "__main__":
    main(sys.argv)

"""The test programs that the backend tests share (test_cuda.py, test_openacc.py).

A program builder is a plain function ``builder(dtype, rng) -> Program``: it makes its Grid
(of ``dtype``) and Functions, fills their data from the numpy Generator ``rng``, and returns a
:class:`Program`: the equations for an Operator, the arguments for ``apply``, the functions
whose values the run produces (to compare between backends) and the number of time steps it
runs (1 without a time loop; comparisons may scale their float tolerance with it).

``PROGRAMS`` names every program; ``build(name, dtype)`` builds one from data seeded by its
name and dtype, so that two builds (one per backend) hold the same values. The grids have
unequal spacings along the axes, and time steps are a fraction of the smallest spacing.
"""
from __future__ import annotations

import multiprocessing
import zlib
from dataclasses import dataclass, field

import numpy as np
import sympy

import jitcache
from stencilgen import (Constant, Eq, Function, Grid, Operator, SparseFunction,
                        SparseTimeFunction, TimeFunction, configuration, solve)

SHAPES = {1: (41,), 2: (23, 19), 3: (17, 15, 13)}
EXTENTS = {1: (1.3,), 2: (1.3, 0.7), 3: (1.3, 0.7, 2.1)}
DTYPES = {"f32": np.float32, "f64": np.float64}
# a backend against the C backend: the largest difference relative to the largest |C value|
TOL = {np.float32: 2e-5, np.float64: 1e-12}


@dataclass
class Program:
    """What a program builder returns (see the module docstring)."""

    eqs: list
    kwargs: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    steps: int = 1


def _grid(dim, dtype):
    return Grid(shape=SHAPES[dim], extent=EXTENTS[dim], dtype=dtype)


def _rand(f, rng, lo=-1.0, hi=1.0):
    f.data[:] = rng.uniform(lo, hi, size=f.data.shape)
    return f


def laplace(dim, so):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=so), rng)
        out = Function(name="out", grid=grid, space_order=so)
        return Program([Eq(out, u.laplace)], {}, [out])
    return build


def axis_derivatives(dtype, rng):
    grid = _grid(3, dtype)
    u = _rand(Function(name="u", grid=grid, space_order=4), rng)
    outs = [Function(name=n, grid=grid, space_order=4) for n in ("fx", "fy", "fz", "fzz")]
    return Program([Eq(outs[0], u.dx), Eq(outs[1], u.dy), Eq(outs[2], u.dz), Eq(outs[3], u.dz2)],
                   {}, outs)


def cross_derivatives(dim):
    """Mixed derivatives: u_xy in 2D; in 3D u_xy and u_yz alone and all three pairs summed."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=4), rng)
        if dim == 2:
            out = Function(name="fxy", grid=grid, space_order=4)
            return Program([Eq(out, u.dx.dy)], {}, [out])
        outs = [Function(name=n, grid=grid, space_order=4) for n in ("fxy", "fyz", "fsum")]
        return Program([Eq(outs[0], u.dx.dy), Eq(outs[1], u.dy.dz),
                        Eq(outs[2], u.dx.dy + u.dy.dz + u.dx.dz)], {}, outs)
    return build


def staggered(dtype, rng):
    grid = _grid(3, dtype)
    x, y, z = grid.dimensions
    u = _rand(Function(name="u", grid=grid, space_order=8), rng)
    outs = [Function(name=n, grid=grid, space_order=8) for n in ("dxp", "dym", "dzp")]
    return Program([Eq(outs[0], u.dx(x0=x + x.spacing / 2)),
                    Eq(outs[1], u.dy(x0=y - y.spacing / 2)),
                    Eq(outs[2], u.dz(x0=z + z.spacing / 2))], {}, outs)


def expression_derivative(dim):
    """div(b grad u) with staggered pairs at space order 8: the inner product is a temporary."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=8), rng)
        b = _rand(Function(name="b", grid=grid, space_order=8), rng, 0.5, 2.0)
        out = Function(name="out", grid=grid, space_order=8)
        expr = 0
        for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
            expr += getattr(b * getattr(u, name)(x0=d + d.spacing / 2), name)(x0=d - d.spacing / 2)
        return Program([Eq(out, expr)], {}, [out])
    return build


def hoisted_invariant(dtype, rng):
    """sin(theta), sqrt(1 + 2 eps) and 1/m are time invariant: hoisted into arrays computed
    before the time loop."""
    grid = _grid(3, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    u.data[:] = rng.uniform(-1, 1, size=u.data.shape)
    m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
    th = _rand(Function(name="th", grid=grid, space_order=4), rng, -3, 3)
    eps = _rand(Function(name="eps", grid=grid, space_order=4), rng, 0.0, 0.3)
    pde = m * u.dt2 - sympy.sqrt(1 + 2 * eps) * u.laplace - sympy.sin(th) * u.dx
    dt = 0.1 * min(grid.spacing)
    return Program([Eq(u.forward, solve(pde, u.forward))], dict(time_m=0, time_M=4, dt=dt), [u], 4)


def coupled(dtype, rng):
    """Velocity-pressure, 2D, staggered: three TimeFunctions updated from each other."""
    grid = _grid(2, dtype)
    x, y = grid.dimensions
    p, vx, vy = (TimeFunction(name=n, grid=grid, time_order=1, space_order=4)
                 for n in ("p", "vx", "vy"))
    for f in (p, vx, vy):
        f.data[0] = rng.uniform(-1, 1, size=grid.shape)
    b = _rand(Function(name="b", grid=grid, space_order=4), rng, 0.5, 1.5)
    k = _rand(Function(name="k", grid=grid, space_order=4), rng, 0.5, 1.5)
    dt = 0.1 * min(grid.spacing)
    eqs = [Eq(vx.forward, vx - dt * b * p.dx(x0=x + x.spacing / 2)),
           Eq(vy.forward, vy - dt * b * p.dy(x0=y + y.spacing / 2)),
           Eq(p.forward, p - dt * k * (vx.forward.dx(x0=x - x.spacing / 2)
                                       + vy.forward.dy(x0=y - y.spacing / 2)))]
    return Program(eqs, dict(time_m=0, time_M=3, dt=dt), [p, vx, vy], 4)


def damped_acoustic(dim):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
        u.data[:] = rng.uniform(-1, 1, size=u.data.shape)
        m = _rand(Function(name="m", grid=grid, space_order=8), rng, 0.3, 1.2)
        eta = _rand(Function(name="eta", grid=grid, space_order=8), rng, 0.0, 5.0)
        dt = 0.2 * min(grid.spacing)
        pde = m * u.dt2 - u.laplace + eta * u.dt
        return Program([Eq(u.forward, solve(pde, u.forward))], dict(time_m=1, time_M=4, dt=dt),
                       [u], 4)
    return build


def acoustic_with_sources(dim):
    """An acoustic shot: a source injected and receivers interpolated every step; a Constant
    scales the source."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
        m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
        nt, lo, ext = 8, np.array(grid.origin), np.array(grid.extent)
        pts = lo + rng.random((5, dim)) * ext
        src = SparseTimeFunction(name="src", grid=grid, npoint=5, nt=nt, coordinates=pts)
        src.data[:] = rng.uniform(-1, 1, size=src.data.shape)
        rec = SparseTimeFunction(name="rec", grid=grid, npoint=7, nt=nt,
                                 coordinates=lo + rng.random((7, dim)) * ext)
        a = Constant(name="a", value=0.7)
        dt = 0.2 * min(grid.spacing)
        eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
        eqs += src.inject(field=u.forward, expr=a * src * dt ** 2 / m)
        eqs += rec.interpolate(expr=u)
        return Program(eqs, dict(time_m=0, time_M=nt - 2, dt=dt), [u, rec], nt)
    return build


def sparse_only(dim):
    """Injection then interpolation with no time loop (many points share cells: atomics)."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        f = Function(name="f", grid=grid)
        lo, ext = np.array(grid.origin), np.array(grid.extent)
        pts = lo + rng.random((60, dim)) * ext * 0.3          # crowded in a corner
        s = SparseFunction(name="s", grid=grid, npoint=60, coordinates=pts)
        s.data[:] = rng.uniform(-1, 1, size=60)
        g = _rand(Function(name="g", grid=grid), rng)
        r = SparseFunction(name="r", grid=grid, npoint=9,
                           coordinates=lo + rng.random((9, dim)) * ext)
        return Program(s.inject(field=f, expr=s) + r.interpolate(expr=g * g), {}, [f, r])
    return build


def chained(dtype, rng):
    """Functions computed inside the time loop, each from the one before (v, w, then q)."""
    grid = _grid(2, dtype)
    q = TimeFunction(name="q", grid=grid, time_order=1, space_order=2)
    v = Function(name="v", grid=grid, space_order=2)
    w = Function(name="w", grid=grid, space_order=2)
    q.data[0] = rng.uniform(-1, 1, size=grid.shape)
    dt = 0.1 * min(grid.spacing) ** 3                   # q is updated from a third derivative
    eqs = [Eq(v, q.dx), Eq(w, v.dy + q), Eq(q.forward, q + grid.time_dim.spacing * w.dx)]
    return Program(eqs, dict(time_m=0, time_M=3, dt=dt), [q, v, w], 4)


def saved_wavefield(dtype, rng):
    """A TimeFunction saving every step (direct time index, no modulo)."""
    grid = _grid(2, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2, save=6)
    u.data[0] = rng.uniform(-1, 1, size=grid.shape)
    dt = 0.1 * min(grid.spacing)
    return Program([Eq(u.forward, u + dt * u.laplace)], dict(dt=dt), [u], 5)


def in_place(dtype, rng):
    """An in-place stencil (a sequential sweep) and two equations writing one field."""
    grid = _grid(2, dtype)
    a = _rand(Function(name="a", grid=grid, space_order=2), rng)
    h = _rand(Function(name="h", grid=grid, space_order=2), rng)
    k = 0.2 * min(grid.spacing) ** 2      # a stable weight for the sweep
    return Program([Eq(a, a + k * a.laplace), Eq(h, h + 1), Eq(h, 2 * h + a)], {}, [a, h])


def backward(dtype, rng):
    """Time running from time_M down: a saved field written through ``.backward``."""
    grid = _grid(2, dtype)
    b = TimeFunction(name="b", grid=grid, time_order=1, space_order=2, save=6)
    b.data[5] = rng.uniform(-1, 1, size=grid.shape)
    dt = 0.1 * min(grid.spacing)
    return Program([Eq(b.backward, b + dt * b.laplace)], dict(time_m=1, time_M=5, dt=dt),
                   [b], 5)


PROGRAMS = {
    "laplace1d_so2": laplace(1, 2), "laplace2d_so4": laplace(2, 4),
    "laplace3d_so8": laplace(3, 8), "laplace1d_so12": laplace(1, 12),
    "laplace3d_so12": laplace(3, 12), "laplace2d_so16": laplace(2, 16),
    "laplace3d_so16": laplace(3, 16),
    "dxdydz3d": axis_derivatives, "cross2d": cross_derivatives(2),
    "cross3d": cross_derivatives(3), "staggered3d": staggered,
    "temporary2d": expression_derivative(2), "temporary3d": expression_derivative(3),
    "invariant3d": hoisted_invariant, "coupled2d": coupled, "chained2d": chained,
    "damped1d": damped_acoustic(1), "damped3d": damped_acoustic(3),
    "shot2d": acoustic_with_sources(2), "shot3d": acoustic_with_sources(3),
    "sparse1d": sparse_only(1), "sparse3d": sparse_only(3), "saved2d": saved_wavefield,
    "inplace2d": in_place, "backward2d": backward,
}


def build(name, dtype):
    """Program ``name`` of ``dtype``, its data seeded by the name and the dtype."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{np.dtype(dtype).name}".encode()))
    return PROGRAMS[name](dtype, rng)


def _build_one(job):
    name, dtype, backend, op_name, cache_dir = job
    configuration["cache-dir"] = cache_dir
    try:
        op = Operator(build(name, dtype).eqs, name=op_name, backend=backend)
        return jitcache.build(op.ccode, op._toolchain(), op.name, cache_dir=cache_dir).seconds
    except Exception:      # noqa: BLE001 - the test that needs this build compiles it and says why
        return 0.0


def prebuild(jobs, processes=None):
    """Compile programs in parallel processes, each job a (program name, dtype, backend,
    Operator name); Operators made later with the same name fetch the builds from the cache.
    Returns the seconds spent compiling, summed."""
    jobs = [(*job, configuration["cache-dir"]) for job in jobs]
    # spawned, not forked: a fork of a process that has run OpenACC on the GPU hung in the
    # child (the H200 machine, gcc 12's libgomp nvptx plugin); spawned children start clean
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return sum(pool.map(_build_one, jobs))

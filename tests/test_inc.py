"""Devito's ``Inc`` (``lhs += rhs``): accumulations over the time steps, as a frequency-domain
sum builds its mode step by step, against NumPy; the same as ``Eq(f, f + rhs)``, on a
subdomain, on vectors; a reduction into a function of fewer dimensions is refused."""
from __future__ import annotations

import re

import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, Inc, InvalidEquation, Operator, TimeFunction,
                        VectorFunction, cos)
from backend_cases import backends, run, target






@pytest.mark.parametrize("backend", backends())
def test_a_sum_over_the_time_steps(backend, tmp_path):
    """A diffusing field u and, each step, Inc(f, u * cos(w * time * dt)): f is the
    cosine transform of u's history at w, as NumPy computes it from the same steps."""
    grid = Grid(shape=(12, 10), dtype=np.float64)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    f = Function(name="f", grid=grid)
    rng = np.random.default_rng(3)
    start = rng.random((12, 10))
    u.data[0] = start
    dt, w, nt = 1e-4, 3.0, 20
    time = grid.time_dim
    op = Operator([Inc(f, u * cos(w * time * time.spacing)),
                   Eq(u.forward, u + time.spacing * u.laplace)],
                  backend=target(backend), name=f"Fourier{backend}")
    run(op, backend, tmp_path, time_m=0, time_M=nt - 1, dt=dt)
    h = np.array(grid.spacing)
    v, want = np.pad(start, 1), np.zeros_like(start)
    for n in range(nt):
        inner = v[1:-1, 1:-1]
        want += inner * np.cos(w * n * dt)
        lap = ((v[2:, 1:-1] - 2 * inner + v[:-2, 1:-1]) / h[0] ** 2
               + (v[1:-1, 2:] - 2 * inner + v[1:-1, :-2]) / h[1] ** 2)
        v = np.pad(inner + dt * lap, 1)
    assert float(np.abs(want).max()) > 1
    np.testing.assert_allclose(f.data, want, rtol=1e-10, atol=1e-12)


def test_inc_is_eq_of_the_sum_on_subdomains_and_vectors():
    grid = Grid(shape=(8, 8))
    f, g, h = (Function(name=n, grid=grid) for n in "fgh")
    g.data[:] = np.arange(64).reshape(8, 8)
    f.data[:] = h.data[:] = 1.0
    Operator(Inc(f, 2 * g, subdomain=grid.interior), name="IncInterior").apply()
    Operator(Eq(h, h + 2 * g, subdomain=grid.interior), name="EqInterior").apply()
    assert np.array_equal(f.data, h.data) and f.data[0, 0] == 1.0 and f.data[3, 4] == 57.0
    v = VectorFunction(name="v", grid=grid)
    v[0].data[:], v[1].data[:] = 1.0, 2.0
    Operator(Inc(v, v), name="IncVector").apply()
    assert np.all(v[0].data == 2.0) and np.all(v[1].data == 4.0)
    assert repr(Inc(f, g)) == "Inc(f(x, y), g(x, y))"


@pytest.mark.parametrize("backend", backends())
def test_reductions_into_functions_of_fewer_dimensions(backend, tmp_path):
    """Inc(f(x), g(x, y)) sums over y, Inc(h(y), k(x, y, z)) over x and z (NumPy's sums);
    inside a time loop a sum over y of each step's field adds up over the steps."""
    grid = Grid(shape=(5, 6), dtype=np.float64)
    x, y = grid.dimensions
    g = Function(name="g", grid=grid)
    g.data[:] = np.random.default_rng(5).random((5, 6))
    f = Function(name="f", dimensions=(x,), shape=(5,), dtype=np.float64)
    f.data[:] = 1.0
    run(Operator(Inc(f, g * g), backend=target(backend), name=f"SumY{backend}"), backend,
        tmp_path)
    np.testing.assert_allclose(f.data, 1.0 + (g.data ** 2).sum(axis=1), rtol=1e-12)
    cube = Grid(shape=(4, 5, 3))
    a, b, c = cube.dimensions
    k = Function(name="k", grid=cube)
    k.data[:] = np.arange(60).reshape(4, 5, 3)
    h = Function(name="h", dimensions=(b,), shape=(5,))
    run(Operator(Inc(h, k), backend=target(backend), name=f"SumXZ{backend}"), backend,
        tmp_path)
    np.testing.assert_allclose(h.data, k.data.sum(axis=(0, 2)), rtol=1e-6)
    u = TimeFunction(name="u", grid=grid)
    u.data[0] = g.data
    total = Function(name="total", dimensions=(x,), shape=(5,), dtype=np.float64)
    run(Operator([Inc(total, u), Eq(u.forward, 2 * u)], backend=target(backend),
                 name=f"SumSteps{backend}"), backend, tmp_path, time_m=0, time_M=2)
    np.testing.assert_allclose(total.data, 7 * g.data.sum(axis=1), rtol=1e-6)


def test_only_inc_sums_into_fewer_dimensions():
    grid = Grid(shape=(4, 5))
    x, y = grid.dimensions
    s = Function(name="s", dimensions=(x,), shape=(4,))
    g = Function(name="g", grid=grid)
    with pytest.raises(InvalidEquation, match=r"or sums into one with Inc"):
        Operator(Eq(s, g))


def test_a_sum_on_a_grid_split_over_ranks_is_refused(monkeypatch):
    """Each rank would sum its own block only: refused, with what to do instead."""
    MPI = pytest.importorskip("mpi4py.MPI")
    grid = Grid(shape=(4, 6), comm=MPI.COMM_SELF)
    x, y = grid.dimensions
    monkeypatch.setattr(type(grid.decomposition), "size", property(lambda self: 2))  # two ranks
    s = Function(name="s", dimensions=(x,), shape=(4,))
    g = Function(name="g", grid=grid)
    with pytest.raises(InvalidEquation, match="split over MPI ranks is not supported"):
        Operator(Inc(s, g))


def test_a_sum_over_the_inner_loops_runs_the_outer_ones_in_parallel_on_a_cpu():
    """Inc(f(x), g(x, y)): each x is one thread's (OpenMP over x, y in order); a sum over
    the outer loop (h(y) += k(x, y)) runs x in order, the threads sharing y. Both give
    NumPy's sums."""
    grid = Grid(shape=(64, 48), dtype=np.float64)
    x, y = grid.dimensions
    g = Function(name="g", grid=grid)
    g.data[:] = np.random.default_rng(2).random((64, 48))
    f = Function(name="f", dimensions=(x,), shape=(64,), dtype=np.float64)
    h = Function(name="h", dimensions=(y,), shape=(48,), dtype=np.float64)
    inner = Operator(Inc(f, g), backend="c", name="SumInner")
    outer = Operator(Inc(h, g), backend="c", name="SumOuter")
    assert "omp parallel for collapse" not in inner.ccode
    assert [k.reduces for k in inner.program.kernels] == [1]
    assert [k.outer for k in outer.program.kernels] == [1]
    assert "omp parallel for simd" in outer.ccode and not outer.program.kernels[0].sequential
    inner.apply()
    outer.apply()
    np.testing.assert_allclose(f.data, g.data.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(h.data, g.data.sum(axis=0), rtol=1e-12)


def _batch_sum(backend, name, summed):
    """A wave on (b, x, z) copies and, in its nest, the product u.forward * u summed over
    the copies into g(x, z) (``summed``), or kept per copy in G(b, x, z)."""
    import stencilgen
    from stencilgen import SpaceDimension
    b, x, z = stencilgen.BatchDimension("b"), SpaceDimension("x"), SpaceDimension("z")
    grid = Grid(shape=(5, 14, 11), extent=(4.0, 130.0, 100.0), dimensions=(b, x, z))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    u.data[:, :, 7, 5] = np.arange(1, 6)
    u.data[:, 2, 3, 8] = 0.5
    if summed:
        out = Function(name="g", dimensions=(x, z), shape=(14, 11), space_order=4)
        acc = Inc(out, u.forward * u)
    else:
        out = Function(name="G", grid=grid, space_order=4)
        acc = Eq(out, out + u.forward * u)
    eqs = [Eq(u.forward, 2 * u - u.backward + 0.02 * (u.dx2 + u.dz2)), acc]
    return Operator(eqs, backend=target(backend), name=name), out


@pytest.mark.parametrize("backend", backends())
def test_a_sum_over_a_batch_shares_the_stencils_nest(backend, tmp_path):
    """Inc(g(x, z), u.forward * u) over a BatchDimension b: one nest with the stencil, not
    in order, the copies walked in order for each point (C: b in order, the threads over x;
    CUDA: a thread per (x, z), the sum in a register); g is the sum over b of what each copy
    accumulates on its own."""
    op, g = _batch_sum(backend, f"BatchSum{backend}", True)
    assert [(k.outer, k.sequential) for k in op.program.kernels] == [(1, None)]
    if target(backend) == "cuda":
        assert re.search(r"sg_sum0(\[sg_k\])? \+=", op.ccode)
    run(op, backend, tmp_path, time_M=9)
    ref, per_copy = _batch_sum("c", "BatchApart", False)
    ref.apply(time_M=9)
    want = per_copy.data.sum(axis=0)
    assert np.abs(want).max() > 0.1
    np.testing.assert_allclose(g.data, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())

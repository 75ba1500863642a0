"""Devito's Functions without a grid (``Function(name=, shape=, dimensions=)``), Grids on the
user's dimensions (``Grid(dimensions=(x, z))``, ``SpaceDimension(spacing=Constant(...))``)
and space orders 0 and 1, against NumPy and Devito 4.8.23's numbers."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from stencilgen import (Constant, Dimension, Eq, Function, Grid, HaloError, InvalidArgument,
                        InvalidEquation, Operator, SpaceDimension, SparseFunction,
                        SparseTimeFunction, TimeFunction)
from test_cuda import needs_gpu, needs_nvcc

REFERENCE = Path(__file__).resolve().parent / "reference"
sys.path.insert(0, str(REFERENCE))


def _forward_dx(a, h, axis=0):
    """Devito's f.dx at space orders 1 and 2: (f(x + h) - f(x))/h, zero beyond the domain."""
    nxt = np.roll(a, -1, axis=axis)
    nxt[tuple(-1 if k == axis else slice(None) for k in range(a.ndim))] = 0.0
    return (nxt - a) / h


# -- Functions without a grid ------------------------------------------------------------------

def _coefficients(backend="c", name="Coeffs"):
    """A 3D update reading coefficients on (x,), (y,) (the innermost loop's) and (x, z)."""
    grid = Grid(shape=(7, 6, 5), extent=(0.6, 1.0, 0.8))
    x, y, z = grid.dimensions
    rng = np.random.default_rng(8)
    cx = Function(name="cx", shape=(7,), dimensions=(x,))
    cz = Function(name="cz", shape=(5,), dimensions=(z,))
    cxz = Function(name="cxz", shape=(7, 5), dimensions=(x, z))
    u, f = Function(name="u", grid=grid), Function(name="f", grid=grid)
    for g in (cx, cz, cxz, u):
        g.data[:] = rng.uniform(0.5, 1.5, g.shape)
    eq = Eq(f, cx * u + stencilgen.sin(cz) * u.dx + cxz.dz + cxz * cx.dx)
    return Operator([eq], backend=backend, name=name), (cx, cz, cxz, u, f), grid


def test_coefficients_without_a_grid_match_numpy():
    op, (cx, cz, cxz, u, f), grid = _coefficients()
    op.apply()
    hx, _, hz = grid.spacing
    a, bx, bz, bxz = (g.data.astype(np.float64) for g in (u, cx, cz, cxz))
    want = (bx[:, None, None] * a + np.sin(bz)[None, None, :] * _forward_dx(a, hx)
            + _forward_dx(bxz, hz, axis=1)[:, None, :]
            + bxz[:, None, :] * _forward_dx(bx, hx)[:, None, None])
    assert np.allclose(f.data, want, rtol=1e-5, atol=1e-5)
    assert cx.grid.implicit and cx.halo == ((1, 1),) and cx.data_with_halo.shape == (9,)
    arrays = {a.name: a for a in op.program.arrays}
    assert arrays["cz"].axes == (2,) and arrays["cxz"].axes == (0, 2) and arrays["u"].axes == ()
    assert op.program.before   # sin(cz) computed once, before the loop nest that reads it


def test_functions_on_their_own_dimensions():
    i, j = Dimension(name="i"), Dimension(name="j")
    a = Function(name="a", shape=(3, 4), dimensions=(i, j))
    b = Function(name="b", shape=(3, 4), dimensions=(i, j))
    w = Function(name="w", shape=(4,), dimensions=(j,))
    b.data[:] = np.arange(12).reshape(3, 4)
    w.data[:] = [1, -2, 3, -4]
    op = Operator([Eq(a, 2 * b + w)], backend="c")
    op.apply()
    assert np.array_equal(a.data, 2 * np.arange(12).reshape(3, 4) + np.array([1, -2, 3, -4]))
    assert op.grid.dimensions == (i, j) and op.grid.implicit
    op.apply(i_m=1, j_M=2)   # bounds by the dimensions' names, as Devito
    with pytest.raises(InvalidEquation, match="has no spacing"):
        Operator([Eq(a, b.diff(i))], backend="c")


def test_a_gridless_function_alone_in_its_operator():
    grid = Grid(shape=(6, 5))
    x, _ = grid.dimensions
    c = Function(name="c", shape=(6,), dimensions=(x,))
    c.data[:] = np.arange(6)
    Operator([Eq(c, c + 1)], backend="c").apply()
    assert np.array_equal(c.data, np.arange(1, 7))


def test_gridless_misuse_is_reported():
    grid = Grid(shape=(6, 5))
    x, y = grid.dimensions
    u, f = Function(name="u", grid=grid), Function(name="f", grid=grid)
    c = Function(name="c", shape=(6,), dimensions=(x,))
    short = Function(name="short", shape=(4,), dimensions=(x,))
    with pytest.raises(InvalidEquation, match="short has 4 points along x but the equations "
                                              "loop over 6"):
        Operator([Eq(f, u + short)], backend="c")
    with pytest.raises(InvalidEquation, match=r"c spans \(x,\) but the Operator loops over"):
        Operator([Eq(c, c + 1), Eq(f, u * c)], backend="c")
    swapped = Function(name="swapped", shape=(5, 6), dimensions=(y, x))
    with pytest.raises(InvalidEquation, match="not among the loop dimensions"):
        Operator([Eq(f, swapped)], backend="c")
    with pytest.raises(InvalidArgument, match="shape= and dimensions= together"):
        Function(name="g", shape=(6,))
    with pytest.raises(InvalidArgument, match="needs grid="):
        TimeFunction(name="v", shape=(6,), dimensions=(x,))
    with pytest.raises(InvalidArgument, match="is not one of"):
        Function(name="g", grid=grid, shape=(5,), dimensions=(x,))
    on_grid = Function(name="g", grid=grid, shape=(6,), dimensions=(x,))
    assert on_grid.shape == (6,) and on_grid.grid.implicit


# -- Grid(dimensions=) and spacings as Constants ---------------------------------------------

def test_grid_on_x_and_z_with_constant_spacings():
    """The derivatives use the Constants' values (not the extent's spacing, as Devito), which
    apply(h_z=) overrides; so do the sparse positions."""
    hx, hz = Constant(name="h_x", value=0.5), Constant(name="h_z", value=0.25)
    x, z = SpaceDimension(name="x", spacing=hx), SpaceDimension(name="z", spacing=hz)
    grid = Grid(shape=(6, 5), extent=(9.0, 9.0), dimensions=(x, z))
    assert grid.dimensions == (x, z) and grid.spacing == (1.8, 2.25)
    assert x != SpaceDimension(name="x") and z.spacing is hz
    u, f = Function(name="u", grid=grid), Function(name="f", grid=grid)
    u.data[:] = np.random.default_rng(1).standard_normal(grid.shape)
    op = Operator([Eq(f, u.diff(x) + u.diff(z))], backend="c")
    a = u.data.astype(np.float64)
    for kwargs, (sx, sz) in (({}, (0.5, 0.25)), ({"h_z": 2.0}, (0.5, 2.0))):
        op.apply(**kwargs)
        want = _forward_dx(a, sx) + _forward_dx(a, sz, axis=1)
        assert np.allclose(f.data, want, rtol=1e-5, atol=1e-5)
    s = SparseFunction(name="s", grid=grid, npoint=1)
    s.coordinates.data[:] = [[1.0, 0.5]]   # nodes (2, 2) at the Constants' spacings
    Operator(s.interpolate(expr=u), backend="c").apply()
    assert np.isclose(s.data[0], u.data[2, 2], rtol=1e-6)


def test_grid_dimensions_are_checked():
    with pytest.raises(InvalidArgument, match="2 of distinct names"):
        Grid(shape=(4, 4), dimensions=(SpaceDimension(name="x"),))
    with pytest.raises(InvalidArgument, match="SpaceDimensions"):
        Grid(shape=(4,), dimensions=(Dimension(name="i"),))
    with pytest.raises(InvalidArgument, match="clash with the time"):
        Grid(shape=(4,), dimensions=(SpaceDimension(name="t"),))
    with pytest.raises(InvalidArgument, match="spacing must be a Constant"):
        SpaceDimension(name="z", spacing=0.1)


# -- space orders 0 and 1 ------------------------------------------------------------------------

def test_a_batch_dimension_holds_independent_copies():
    """A BatchDimension (stencilgen's own: shots in one launch) has no halo and refuses
    derivatives; a 2D wave equation on (b, x, z) with shared coefficients of (x, z) gives
    each copy what it gives alone (copy k's source k+1 times as strong: k+1 times the field)."""
    b, x, z = stencilgen.BatchDimension("b"), SpaceDimension("x"), SpaceDimension("z")
    grid = Grid(shape=(3, 24, 22), extent=(2.0, 230.0, 210.0), dimensions=(b, x, z))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    assert u.halo[1:] == ((0, 0), (4, 4), (4, 4))
    with pytest.raises(InvalidArgument, match="BatchDimension"):
        u.diff(b)
    m = Function(name="m", dimensions=(x, z), shape=(24, 22), space_order=4)
    m.data[:] = 1 / np.linspace(1.5, 2.5, 22) ** 2
    eq = Eq(u.forward, 2 * u - u.backward + 0.5 / m * (u.dx2 + u.dz2))
    u.data[:, :, 12, 11] = np.arange(1, 4)
    Operator(eq, name="Batched").apply(time_M=30, dt=1.0)
    grid1 = Grid(shape=(24, 22), extent=(230.0, 210.0), dimensions=(x, z))
    v = TimeFunction(name="u", grid=grid1, time_order=2, space_order=4)
    v.data[:, 12, 11] = 1
    m1 = Function(name="m", grid=grid1, space_order=4)
    m1.data[:] = m.data
    Operator(Eq(v.forward, 2 * v - v.backward + 0.5 / m1 * (v.dx2 + v.dz2)),
             name="Single").apply(time_M=30, dt=1.0)
    assert float(np.abs(v.data).max()) > 0.01
    for k in range(3):
        assert np.abs(u.data[:, k] - (k + 1) * v.data).max() <= 1e-5 * np.abs(v.data).max()

    class TwoRanks:
        def Get_size(self):
            return 2
    with pytest.raises(InvalidArgument, match="BatchDimension is not split over MPI ranks"):
        Grid(shape=(3, 24, 22), dimensions=(b, x, z), comm=TwoRanks())


def test_sparse_points_of_a_batch_sit_on_its_copies():
    """Along a BatchDimension a sparse point belongs to one copy: injection adds to copy k
    only (no corner loop along the batch: half the atomics of a 2D batch), and a point's
    samples read its own copy; the off-grid weights along x and z as without a batch."""
    b, x, z = stencilgen.BatchDimension("b"), SpaceDimension("x"), SpaceDimension("z")
    grid = Grid(shape=(3, 12, 10), extent=(2.0, 110.0, 90.0), dimensions=(b, x, z))
    f = Function(name="f", grid=grid, space_order=2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=2, nt=1,
                             coordinates=[(1.0, 33.0, 47.0), (2.0, 50.0, 50.0)])
    src.data[:] = [[3.0, 5.0]]
    op = Operator(src.inject(field=f, expr=src), name="BatchInject")
    assert "for (int c_b" not in op.ccode and "const int c_b = 0;" in op.ccode
    op.apply(time_M=0)
    assert np.all(f.data[0] == 0)
    assert f.data[1].sum() == pytest.approx(3.0) and f.data[2, 5, 5] == pytest.approx(5.0)
    # 33 = 3.3 cells, 47 = 4.7 cells: the bilinear weights
    assert f.data[1, 3, 4] == pytest.approx(3.0 * 0.7 * 0.3)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=1,
                             coordinates=[(1.0, 33.0, 47.0), (2.0, 50.0, 50.0)])
    f.data[0] = 100.0
    Operator(rec.interpolate(expr=f), name="BatchSample").apply(time_M=0)
    assert rec.data[0, 0] == pytest.approx(f.data[1, 3, 4] * 0.7 * 0.3 + f.data[1, 3, 5]
                                           * 0.7 * 0.7 + f.data[1, 4, 4] * 0.3 * 0.3
                                           + f.data[1, 4, 5] * 0.3 * 0.7)
    assert rec.data[0, 1] == pytest.approx(5.0)


def test_space_order_zero_has_no_halo():
    grid = Grid(shape=(5, 4))
    f = Function(name="f", grid=grid, space_order=0)
    g = Function(name="g", grid=grid, space_order=0)
    assert f.halo == ((0, 0), (0, 0)) and f.data_with_halo.shape == (5, 4)
    f.data[:] = 3.0
    Operator([Eq(g, 2 * f)], backend="c").apply()
    assert np.array_equal(g.data, np.full((5, 4), 6.0))
    with pytest.raises((InvalidArgument, AttributeError, HaloError)):
        Operator([Eq(g, f.dx)], backend="c")


@pytest.mark.parametrize("so", [3, 5])
def test_odd_space_orders_above_one_are_refused(so):
    with pytest.raises(InvalidArgument, match="use 0, 1 or an even integer"):
        Function(name="f", grid=Grid(shape=(4, 4)), space_order=so)


def test_space_order_one_halo_is_devitos():
    ref = np.load(REFERENCE / "subdomain_program.npz")   # subdomain_program.space_order_one
    f = Function(name="f", grid=Grid(shape=(9, 7)), space_order=1)
    assert f.halo == ((1, 1), (1, 1)) and f.data_with_halo.shape == tuple(ref["so1_halo"])


def test_space_order_one_dx_is_devitos():
    import subdomain_program
    ref = np.load(REFERENCE / "subdomain_program.npz")
    out = subdomain_program.space_order_one(stencilgen)
    assert np.allclose(out["so1_dx"], ref["so1_dx"], rtol=1e-6, atol=1e-6)


# -- CUDA and OpenACC ------------------------------------------------------------------------

def test_openacc_on_the_host_equals_c_for_coefficients():
    op_c, fs_c, _ = _coefficients("c", "CoeffsC")
    op_a, fs_a, _ = _coefficients("openacc", "CoeffsAcc")
    op_c.apply()
    op_a.apply()
    assert np.allclose(fs_a[-1].data, fs_c[-1].data, rtol=1e-6, atol=1e-6)


@needs_nvcc
def test_cuda_source_with_gridless_coefficients_compiles():
    op, _, _ = _coefficients("cuda", "CoeffsCuda")
    assert "const long sg_cz_p" not in op.ccode   # not pitched: it spans one dimension
    cz = next(a for a in op.program.arrays if a.user == "cz")
    lay = op._emitter.device_layout(cz, (12,), 4, (2,))
    assert lay.pitch == lay.width == 12 and lay.front == 0
    assert op.cfunction is not None


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
def test_gridless_coefficients_on_the_gpu_equal_c(backend):
    if backend == "openacc" and "host" in stencilgen.platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    op_c, fs_c, _ = _coefficients("c", "CoeffsC")
    op_g, fs_g, _ = _coefficients(backend, f"Coeffs{backend}")
    op_c.apply()
    op_g.apply()
    assert np.allclose(fs_g[-1].data, fs_c[-1].data, rtol=1e-6, atol=1e-6)

"""Defaults as in Devito, overrides on another grid, and integral inputs (issue 11, items 4, 5, 8).

Where Devito 4.8 is the reference the expected number is Devito 4.8.23's, computed with it and
written here (the tests do not import Devito).
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy
from sympy.core.function import AppliedUndef

from stencilgen import (Eq, Function, Grid, InvalidArgument, Operator, SparseTimeFunction,
                        TimeFunction)


# -- item 4a: Grid without extent is the unit cube ---------------------------------------------

def test_grid_without_extent_is_the_unit_cube():
    # Devito 4.8: Grid(shape=(11,)).spacing == (0.1,), extent (1.0,);
    # Grid(shape=(5, 7)).spacing == (0.25, 0.16666667); Grid(shape=(3, 4, 5)) (0.5, 1/3, 0.25)
    assert Grid(shape=(11,)).extent == (1.0,)
    assert Grid(shape=(11,)).spacing == pytest.approx((0.1,))
    assert Grid(shape=(5, 7)).spacing == pytest.approx((0.25, 0.16666667))
    assert Grid(shape=(3, 4, 5)).spacing == pytest.approx((0.5, 1 / 3, 0.25))
    assert Grid(shape=(3, 4, 5)).origin == (0.0, 0.0, 0.0)
    # and the compiled code uses that spacing: x**2 has second derivative 2
    grid = Grid(shape=(11,), dtype=np.float64)
    f, out = (Function(name=n, grid=grid) for n in ("f", "out"))
    f.data[:] = np.linspace(0.0, 1.0, 11) ** 2
    Operator([Eq(out, f.dx2)]).apply()
    np.testing.assert_allclose(out.data[1:-1], 2.0, rtol=1e-9)


# -- item 4c: derivative schemes ------------------------------------------------------------------

def _stencil(expr, f, dim):
    """{offset: weight} of the expanded derivative ``expr`` of ``f`` along ``dim``, the
    weights times spacing**order (read off the terms f(dim + k*h) * w / h**order)."""
    h = dim.spacing
    out = {}
    for term in sympy.Add.make_args(sympy.expand(expr)):
        app, = [a for a in term.atoms(AppliedUndef) if a.func == f.func]
        arg, = [a for a in app.args if a.has(dim)]
        k = int(sympy.simplify((arg - dim) / h))
        coeff = sympy.simplify(term / app)
        order = -sympy.degree(sympy.denom(coeff), h) + sympy.degree(sympy.numer(coeff), h)
        out[k] = out.get(k, 0.0) + float(coeff * h ** -order)
    return {k: w for k, w in out.items() if w != 0}


# Devito 4.8.23's `.evaluate`, weights as it prints them (times h**order):
DEVITO_SPACE = {
    # f.dx at so 2: -f(x)/h_x + f(x + h_x)/h_x (the forward difference)
    ("dx", 2): {0: -1.0, 1: 1.0},
    ("dx2", 2): {-1: 1.0, 0: -2.0, 1: 1.0},
    ("dx", 4): {-2: 0.0833333333, -1: -0.666666667, 1: 0.666666667, 2: -0.0833333333},
    ("dx2", 4): {-2: -0.0833333333, -1: 1.33333333, 0: -2.5, 1: 1.33333333,
                 2: -0.0833333333},
    ("dx", 8): {-4: 0.00357142857, -3: -0.0380952381, -2: 0.2, -1: -0.8, 1: 0.8, 2: -0.2,
                3: 0.0380952381, 4: -0.00357142857},
    ("dx2", 8): {-4: -0.00178571429, -3: 0.0253968254, -2: -0.2, -1: 1.6, 0: -2.84722222,
                 1: 1.6, 2: -0.2, 3: 0.0253968254, 4: -0.00178571429},
}


@pytest.mark.parametrize("name, so", sorted(DEVITO_SPACE))
def test_space_derivatives_are_devitos(name, so):
    grid = Grid(shape=(11,))
    x, = grid.dimensions
    f = Function(name="f", grid=grid, space_order=so)
    got = _stencil(getattr(f, name).evaluate(), f, x)
    want = DEVITO_SPACE[(name, so)]
    assert got.keys() == want.keys(), (got, want)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-8), (k, got, want)


def test_first_derivatives_of_order_2_are_forward_as_in_devito():
    grid = Grid(shape=(11, 9))
    x, y = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2)
    g = Function(name="g", grid=grid, space_order=4)
    # Devito 4.8: f.dy = -f(x, y)/h_y + f(x, y + h_y)/h_y; g.dx(fd_order=2) and
    # Derivative(g, x, fd_order=2) = -g(x)/h_x + g(x + h_x)/h_x; f.dx(x0=x + h_x) =
    # -f(x + h_x)/h_x + f(x + 2*h_x)/h_x; f.dx(x0=x - h_x/2) = f(x)/h_x - f(x - h_x)/h_x
    assert _stencil(f.dy.evaluate(), f, y) == {0: -1.0, 1: 1.0}
    assert _stencil(g.dx(fd_order=2).evaluate(), g, x) == {0: -1.0, 1: 1.0}
    assert _stencil(g.diff(x, fd_order=2).evaluate(), g, x) == {0: -1.0, 1: 1.0}
    assert _stencil(f.dx(x0=x + x.spacing).evaluate(), f, x) == {1: -1.0, 2: 1.0}
    assert _stencil(f.dx(x0=x - x.spacing / 2).evaluate(), f, x) == {-1: -1.0, 0: 1.0}
    # run: the forward difference of x**2 is 2x + h
    grid = Grid(shape=(11,), dtype=np.float64)
    f, out = (Function(name=n, grid=grid, space_order=2) for n in ("f", "out"))
    xs = np.linspace(0.0, 1.0, 11)
    f.data[:] = xs ** 2
    Operator([Eq(out, f.dx)]).apply()
    np.testing.assert_allclose(out.data[:-1], 2 * xs[:-1] + 0.1, rtol=1e-9)


@pytest.mark.parametrize("time_order", [1, 2])
def test_time_derivatives_are_devitos(time_order):
    grid = Grid(shape=(11,))
    t = grid.stepping_dim
    v = TimeFunction(name="v", grid=grid, time_order=time_order, space_order=2)
    # Devito 4.8: v.dt = -v(t, x)/dt + v(t + dt, x)/dt at time_order 1 and 2;
    # v.backward.dt = v(t, x)/dt - v(t - dt, x)/dt; v.dt2 = (v(t - dt) - 2 v(t) + v(t + dt))/dt**2
    assert _stencil(v.dt.evaluate(), v, t) == {0: -1.0, 1: 1.0}
    assert _stencil(v.backward.dt.evaluate(), v, t) == {-1: -1.0, 0: 1.0}
    assert _stencil(v.dt(x0=t + t.spacing / 2).evaluate(), v, t) == {0: -1.0, 1: 1.0}
    if time_order == 2:
        assert _stencil(v.dt2.evaluate(), v, t) == {-1: 1.0, 0: -2.0, 1: 1.0}


# -- item 4b: the default time_m ------------------------------------------------------------------

def test_default_time_m_is_devitos():
    grid = Grid(shape=(4,), extent=(3.0,))
    # time_order 2 reading u.backward: Devito 4.8 runs time 1..5, u.data[:, 0] = [22, 11, 16]
    u = TimeFunction(name="u", grid=grid, time_order=2)
    u.data[0], u.data[1] = 1.0, 2.0
    summary = Operator([Eq(u.forward, 2 * u - u.backward + 1)]).apply(time_M=5)
    assert summary.timesteps == 5
    np.testing.assert_array_equal(u.data[:, 0], [22.0, 11.0, 16.0])
    # time_order 2 reading no earlier step: Devito 4.8 runs 0..5, w.data[:, 0] = [7, 5, 6]
    w = TimeFunction(name="w", grid=grid, time_order=2)
    w.data[0] = 1.0
    Operator([Eq(w.forward, w + 1)]).apply(time_M=5)
    np.testing.assert_array_equal(w.data[:, 0], [7.0, 5.0, 6.0])
    # time_order 1: Devito 4.8 runs 0..5, v.data[:, 0] = [7, 6]
    v = TimeFunction(name="v", grid=grid, time_order=1)
    v.data[0] = 1.0
    Operator([Eq(v.forward, v + 1)]).apply(time_M=5)
    np.testing.assert_array_equal(v.data[:, 0], [7.0, 6.0])
    # saved, time_order 2, no bounds given: Devito 4.8 runs 1..6
    s = TimeFunction(name="s", grid=grid, time_order=2, save=8)
    s.data[0], s.data[1] = 1.0, 2.0
    Operator([Eq(s.forward, 2 * s - s.backward + 1)]).apply()
    np.testing.assert_array_equal(s.data[:, 0], [1, 2, 4, 7, 11, 16, 22, 29])


# -- item 4d: time bounds inferred from sparse functions ------------------------------------------

def _sparse_grid():
    return Grid(shape=(11,), extent=(10.0,))


def test_injection_into_u_forward_runs_to_nt_minus_2():
    grid = _sparse_grid()
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=11, coordinates=[(4.0,)])
    src.data[:] = 1.0
    # time_order 1: Devito 4.8 runs time 0..9 (time_M = 9), u.data[:, 4] = [10, 9]
    u = TimeFunction(name="u", grid=grid, time_order=1)
    summary = Operator([Eq(u.forward, u)] + src.inject(field=u.forward, expr=src)).apply()
    assert summary.timesteps == 10
    np.testing.assert_array_equal(u.data[:, 4], [10.0, 9.0])
    # time_order 2 (leapfrog): Devito 4.8 runs 1..9, u2.data[:, 4] = [36, 45, 28]
    u2 = TimeFunction(name="u2", grid=grid, time_order=2)
    Operator([Eq(u2.forward, 2 * u2 - u2.backward)]
             + src.inject(field=u2.forward, expr=src)).apply()
    np.testing.assert_array_equal(u2.data[:, 4], [36.0, 45.0, 28.0])


def test_interpolation_and_saved_fields_bound_time_as_devito():
    grid = _sparse_grid()
    # interpolation from q in an Operator writing q.forward: Devito 4.8 runs 0..9 and
    # rec.data[:, 0] = [0, 1, ..., 9, 0] (the last sample not written)
    q = TimeFunction(name="q", grid=grid, time_order=1)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=11, coordinates=[(4.0,)])
    Operator([Eq(q.forward, q + 1)] + rec.interpolate(expr=q)).apply()
    np.testing.assert_array_equal(rec.data[:, 0], list(range(10)) + [0])
    # a saved TimeFunction of 11 steps written at time + 1: Devito 4.8 runs 0..9
    qs = TimeFunction(name="qs", grid=grid, time_order=1, save=11)
    Operator([Eq(qs.forward, qs + 1)]).apply()
    np.testing.assert_array_equal(qs.data[:, 0], np.arange(11))


# -- item 5: overrides on a grid of another spacing or origin -------------------------------------

def test_override_uses_its_grid_spacing():
    op_grid = Grid(shape=(11,), extent=(10.0,), dtype=np.float64)
    f, out = (Function(name=n, grid=op_grid) for n in ("f", "out"))
    op = Operator([Eq(out, f.dx2)])
    other = Grid(shape=(11,), extent=(5.0,), dtype=np.float64)       # spacing 0.5
    f2, out2 = (Function(name=n, grid=other) for n in ("f2", "out2"))
    f2.data[:] = np.linspace(0.0, 5.0, 11) ** 2
    op.apply(f=f2, out=out2)
    np.testing.assert_allclose(out2.data[1:-1], 2.0, rtol=1e-12)   # spacing 1 would give 0.5


def test_override_uses_its_grid_origin():
    op_grid = Grid(shape=(11,), extent=(10.0,), dtype=np.float64)
    f = Function(name="f", grid=op_grid)
    rec = SparseTimeFunction(name="rec", grid=op_grid, npoint=1, nt=2, coordinates=[(2.5,)])
    u = TimeFunction(name="u", grid=op_grid)
    op = Operator([Eq(u.forward, u + f)] + rec.interpolate(expr=f))
    shifted = Grid(shape=(11,), extent=(10.0,), origin=(5.0,), dtype=np.float64)
    f2 = Function(name="f2", grid=shifted)
    f2.data[:] = np.linspace(5.0, 15.0, 11)                  # f2 = x on the shifted grid
    rec2 = SparseTimeFunction(name="rec2", grid=shifted, npoint=1, nt=2, coordinates=[(7.5,)])
    u2 = TimeFunction(name="u2", grid=shifted)
    op.apply(f=f2, rec=rec2, u=u2, time_M=0)
    assert rec2.data[0, 0] == pytest.approx(7.5)             # origin 0 would read 12.5


def test_overrides_on_disagreeing_grids_are_refused():
    op_grid = Grid(shape=(11,), extent=(10.0,))
    f, out = (Function(name=n, grid=op_grid) for n in ("f", "out"))
    op = Operator([Eq(out, f.dx2)])
    f2 = Function(name="f2", grid=Grid(shape=(11,), extent=(5.0,)))
    with pytest.raises(InvalidArgument, match=r"disagree on the grid.*f2 \(spacing \(0\.5,\).*"
                                              r"out \(spacing \(1\.0,\)"):
        op.apply(f=f2)
    f3 = Function(name="f3", grid=Grid(shape=(11,), extent=(10.0,), origin=(1.0,)))
    with pytest.raises(InvalidArgument, match=r"disagree on the grid.*origin \(1\.0,\)"):
        op.apply(f=f3)
    op.apply(f=Function(name="f4", grid=Grid(shape=(11,), extent=(10.0,))))   # same geometry


# -- item 8: integral sizes and bounds ------------------------------------------------------------

@pytest.mark.parametrize("shape", [(10.7, 10), (10.0, 10), (True, 10), ("10", 10)])
def test_grid_shape_must_be_integers(shape):
    with pytest.raises(InvalidArgument, match=r"Grid: an entry of shape .* not an integer; "
                                              r"give whole numbers of points"):
        Grid(shape=shape)


def test_numpy_integers_are_sizes_and_bounds():
    grid = Grid(shape=(np.int64(6), np.int32(5)))
    assert grid.shape == (6, 5) and all(type(n) is int for n in grid.shape)
    u = TimeFunction(name="u", grid=grid, save=np.int64(4))
    src = SparseTimeFunction(name="src", grid=grid, npoint=np.int32(2), nt=np.int64(3))
    assert u.shape == (4, 6, 5) and src.shape == (3, 2)
    f = Function(name="f", grid=grid)
    Operator([Eq(f, f + 1)]).apply(x_m=np.int64(1), x_M=np.int32(4))
    assert f.data[:, 0].tolist() == [0, 1, 1, 1, 1, 0]


@pytest.mark.parametrize("key, value", [("x_m", 1.7), ("x_m", "abc"), ("x_M", 4.0),
                                        ("y_m", True)])
def test_space_bounds_must_be_integers(key, value):
    grid = Grid(shape=(6, 5))
    f = Function(name="f", grid=grid)
    op = Operator([Eq(f, f + 1)])
    with pytest.raises(InvalidArgument, match=rf"apply: {key} is .* not an integer; pass a grid "
                                              r"index from 0 to \d"):
        op.apply(**{key: value})
    assert not f.data.any()


@pytest.mark.parametrize("key, value", [("time_m", 1.5), ("time_M", 3.0), ("time_M", "3"),
                                        ("time_m", False)])
def test_time_bounds_must_be_integers(key, value):
    grid = Grid(shape=(6,))
    u = TimeFunction(name="u", grid=grid)
    op = Operator([Eq(u.forward, u + 1)])
    kwargs = {"time_M": 3, key: value}
    with pytest.raises(InvalidArgument, match=rf"apply: {key} is .* not an integer; pass"):
        op.apply(**kwargs)


@pytest.mark.parametrize("kwargs, what", [(dict(save=2.5), "save"), (dict(save=True), "save"),
                                          (dict(time_order=2.0), "time_order")])
def test_time_function_sizes_must_be_integers(kwargs, what):
    with pytest.raises(InvalidArgument, match=rf"{what} is .* not an integer"):
        TimeFunction(name="u", grid=Grid(shape=(6,)), **kwargs)


@pytest.mark.parametrize("kwargs, what", [(dict(npoint=1.5, nt=3), "npoint"),
                                          (dict(npoint=1, nt=3.0), "nt"),
                                          (dict(npoint=True, nt=3), "npoint")])
def test_sparse_sizes_must_be_integers(kwargs, what):
    with pytest.raises(InvalidArgument, match=rf"{what} is .* not an integer"):
        SparseTimeFunction(name="s", grid=Grid(shape=(6,)), **kwargs)


def test_print_summary_gives_the_report_a_user_reads():
    grid = Grid(shape=(16, 16))
    u = TimeFunction(name="u", grid=grid)
    summary = Operator([Eq(u.forward, u + 1)], name="Printed").apply(time_M=3)
    text = str(summary)
    assert text.splitlines() == summary.report()
    assert text.startswith("Operator `Printed` ran in ") and "GPts/s" in text
    assert "PerfEntry(" not in text and "section0 ran in" in text

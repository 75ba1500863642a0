"""Devito's semantics where we share its API: equations in order, in-place stencils as
sequential sweeps, backward time marching, user names that meet generated ones. The
expected numbers are Devito 4.8.23's, computed with it and written down here."""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import (Constant, Eq, Function, Grid, InvalidEquation, Operator,
                        SparseTimeFunction, TimeFunction)

BACKENDS = ["c", "openacc"]


def _line(n=8):
    grid = Grid(shape=(n,), extent=(float(n - 1),))
    return grid, grid.dimensions[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_equations_writing_one_field_run_in_order(backend):
    grid, _ = _line()
    h = Function(name="h", grid=grid)
    Operator([Eq(h, h + 1), Eq(h, h + 2)], backend=backend).apply()
    assert np.all(h.data == 3.0)               # Devito 4.8: 3 (each Eq a full assignment)
    # later equations read what earlier ones stored at the point, in the order written
    a, b = Function(name="a", grid=grid), Function(name="b", grid=grid)
    h.data[:] = np.arange(8.0)
    Operator([Eq(a, h + 1), Eq(h, 2 * a), Eq(b, h + a)], backend=backend).apply()
    x = np.arange(8.0)
    assert np.array_equal(a.data, x + 1) and np.array_equal(h.data, 2 * (x + 1))
    assert np.array_equal(b.data, 3 * (x + 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_stencil_is_devitos_sequential_sweep(backend, stencilgen_log):
    grid, _ = _line()
    f = Function(name="f", grid=grid, space_order=2)
    f.data[:] = [0, 1, 4, 4, 1, 0, 1, 4]
    Operator([Eq(f, f + 0.25 * f.dx2)], backend=backend).apply()
    devito = [0.25, 1.5625, 3.39062, 3.09766, 1.27441, 0.5686, 1.64215, 2.41054]
    assert np.allclose(f.data, devito, atol=1e-5)          # a Jacobi update gives 1.5, 3.25...
    assert any("runs sequentially (x up)" in line for line in stencilgen_log.take())


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_laplacian_sweeps_x_then_y(backend):
    grid = Grid(shape=(6, 5), extent=(5.0, 4.0))
    a = Function(name="a", grid=grid, space_order=2)
    a.data[:] = np.random.default_rng(1).random((6, 5))
    ref = np.pad(a.data.astype(np.float64), 1)
    for i in range(1, 7):
        for j in range(1, 6):
            ref[i, j] += 0.25 * (ref[i - 1, j] + ref[i + 1, j] + ref[i, j - 1] + ref[i, j + 1]
                                 - 4 * ref[i, j])
    Operator([Eq(a, a + 0.25 * a.laplace)], backend=backend).apply()
    assert np.abs(a.data - ref[1:-1, 1:-1]).max() <= 1e-6 * np.abs(ref).max()


@pytest.mark.parametrize("backend", BACKENDS)
def test_read_ahead_in_place_sweeps_down_as_devito(backend, stencilgen_log):
    """``u.forward`` read one point ahead: Devito walks x downwards so the read is updated."""
    grid, x = _line()
    u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2)
    u.data[0] = [0, 1, 4, 4, 1, 0, 1, 4]
    u.data[1] = [1, 2, 3, 4, 5, 6, 7, 8]
    ahead = u.forward.dx(x0=x + x.spacing / 2)   # Devito 4.8's u.forward.dx at space order 2
    Operator([Eq(u.forward, u + 0.1 * ahead)], backend=backend).apply(time_m=0, time_M=0)
    devito = [0.0206446, 1.2064462, 4.0644622, 3.6446199, 0.4462, -0.538, 0.62, 3.2]
    assert np.allclose(u.data[1], devito, atol=1e-6)
    assert any("runs sequentially (x down)" in line for line in stencilgen_log.take())


@pytest.mark.parametrize("backend", BACKENDS)
def test_backward_operator_runs_time_downwards(backend):
    grid, _ = _line(4)
    b = TimeFunction(name="b", grid=grid, save=5, space_order=2)
    b.data[4] = 10.0
    Operator([Eq(b.backward, b - 1)], backend=backend).apply(time_m=1, time_M=4)
    assert np.array_equal(b.data[:, 0], [6, 7, 8, 9, 10])     # Devito 4.8 (forward: 10 at 4 only)
    c = TimeFunction(name="c", grid=grid, time_order=1, space_order=2)
    Operator([Eq(c.backward, c + 1)], backend=backend).apply(time_m=0, time_M=3)
    assert np.array_equal(c.data[:, 0], [3, 4])                # Devito 4.8


def test_forward_and_backward_in_one_operator_is_refused():
    grid, _ = _line(4)
    u = TimeFunction(name="u", grid=grid, time_order=1)
    v = TimeFunction(name="v", grid=grid, time_order=1)
    with pytest.raises(InvalidEquation, match="both .forward and .backward"):
        Operator([Eq(u.forward, u + 1), Eq(v.backward, v + 1)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_injection_by_a_constant_named_w(backend):
    grid, _ = _line(5)
    v = TimeFunction(name="v", grid=grid, time_order=1, space_order=2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=2,
                             coordinates=np.array([[1.5]]))
    src.data[:] = 1.0
    w = Constant(name="w", value=3.0)
    Operator([Eq(v.forward, v)] + src.inject(field=v.forward, expr=src * w),
             backend=backend).apply(time_m=0, time_M=0)
    assert np.array_equal(v.data[1], [0.0, 1.5, 1.5, 0.0, 0.0])     # Devito 4.8


@pytest.mark.parametrize("backend", BACKENDS)
def test_constants_named_like_the_loop_counter_and_spacing(backend):
    grid = Grid(shape=(4, 3), extent=(3.0, 4.0))
    g = Function(name="g", grid=grid, space_order=2)
    g.data[:] = 1.0
    outs = [Function(name=f"f{i}", grid=grid) for i in range(4)]
    time, x, h_x, y = (Constant(name=n, value=v) for n, v in
                       (("time", 100.0), ("x", 10.0), ("h_x", 7.0), ("y", 0.5)))
    eqs = [Eq(outs[0], g * time), Eq(outs[1], g * x), Eq(outs[2], g.dx2 + h_x),
           Eq(outs[3], g * y)]
    Operator(eqs, backend=backend).apply()
    inner = (slice(1, -1), slice(None))       # g.dx2 reads the zero halo at the x edges
    assert np.all(outs[0].data == 100.0) and np.all(outs[1].data == 10.0)
    assert np.all(outs[2].data[inner] == 7.0) and np.all(outs[3].data == 0.5)


def test_data_takes_a_list_of_slices_as_devitos_data():
    """``f.data[[slice(1, 3), slice(0, 2)]]`` is one slice per axis (Devito's Data), for reading
    and writing; a list of integers stays numpy's index array (rows 1 and 2)."""
    grid = Grid(shape=(4, 5))
    f = Function(name="f", grid=grid)
    values = np.arange(20.0).reshape(4, 5)
    f.data[:] = values
    np.testing.assert_array_equal(f.data[[slice(1, 3), slice(0, 2)]], values[1:3, 0:2])
    np.testing.assert_array_equal(f.data[[slice(1, 3), 4]], values[1:3, 4])
    f.data[[slice(0, 1), slice(None)]] = -1.0
    np.testing.assert_array_equal(f.data[0], -1.0)
    np.testing.assert_array_equal(f.data[[1, 2]], values[[1, 2]])

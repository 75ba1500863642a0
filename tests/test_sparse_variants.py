"""Devito's sparse variants (tests/test_interpolation.py of Devito, its expectations): an
interpolation that adds to the samples (``increment=True``), the ``u_t=``/``p_t=`` time
shifts of interpolate and inject, and injection into a tuple of fields; on C, OpenACC where
it builds, and the CUDA backend's source through the emulation."""
from __future__ import annotations

import numpy as np
import pytest

import stencilgen
from stencilgen import (Grid, InvalidArgument, Operator, SparseFunction, SparseTimeFunction,
                        TimeFunction, Function)
from backend_cases import backends, run, target

SHAPE_COORDS = [((11, 11), [(.05, .9), (.01, .8)]),
                ((11, 11, 11), [(.05, .9), (.01, .8), (0.07, 0.84)])]
SHAPE_COORDS_INJECT = [((11, 11), [(.05, .95), (.45, .45)], 1.),
                       ((11, 11, 11), [(.05, .95), (.45, .45), (.45, .45)], 0.5)]






def _box(shape, time=False):
    """Devito's unit box: values 0 to 1 along x (the first dimension)."""
    grid = Grid(shape=shape)
    a = TimeFunction(name="a", grid=grid, time_order=1) if time else Function(name="a",
                                                                             grid=grid)
    ramp = np.broadcast_to(np.linspace(0, 1, shape[0]).reshape((-1,) + (1,) * (len(shape) - 1)),
                           shape)
    a.data[:] = ramp
    return a


def _points(grid, ranges, npoints, cls=SparseFunction, name="points", **kw):
    coords = np.stack([np.linspace(r[0], r[1], npoints) for r in ranges], axis=1)
    return cls(name=name, grid=grid, npoint=npoints, coordinates=coords, **kw)


BACKENDS = backends()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape, coords", SHAPE_COORDS)
def test_interpolate_increment(shape, coords, backend, tmp_path):
    """interpolate(increment=True) adds to the samples: 1 + x at each point."""
    a = _box(shape)
    p = _points(a.grid, coords, 20)
    p.data[:] = 1.0
    run(Operator(p.interpolate(a, increment=True), backend=target(backend), name=f"Inc{backend}"),
         backend, tmp_path)
    np.testing.assert_allclose(p.data, p.coordinates.data[:, 0] + 1.0, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape, coords", SHAPE_COORDS)
def test_interpolate_time_shift(shape, coords, backend, tmp_path):
    """u_t: the field read at t + 1 (slot 1 holds x, slot 0 zero); p_t: the sample written at
    time + 1; both."""
    for u_t, p_t, row in ((1, None, 0), (None, 1, 1), (1, 1, 1)):
        a = _box(shape, time=True)
        if u_t:
            a.data[0] = 0.0
        p = _points(a.grid, coords, 20, SparseTimeFunction, nt=10)
        p.data[:] = 1.0
        t = a.grid.stepping_dim
        kw = {}
        if u_t:
            kw["u_t"] = t + 1
        if p_t:
            kw["p_t"] = p.grid.time_dim + 1
        op = Operator(p.interpolate(a, **kw), backend=target(backend), name=f"Shift{backend}")
        run(op, backend, tmp_path, time_m=0, time_M=0)
        np.testing.assert_allclose(p.data[row], p.coordinates.data[:, 0], rtol=1e-6)
        others = np.delete(np.arange(10), row)
        assert np.all(p.data[others] == 1.0)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape, coords, result", SHAPE_COORDS_INJECT)
def test_inject_time_shift(shape, coords, result, backend, tmp_path):
    """u_t: injected into slot t + 1; p_t: the sample of time + 1 injected; both. A line of
    points through the middle adds ``result`` to the nodes beside it (Devito's)."""
    for u_t, p_t, slot in ((1, None, 1), (None, 1, 0), (1, 1, 1)):
        a = _box(shape, time=True)
        a.data[:] = 0.0
        p = _points(a.grid, coords, 19, SparseTimeFunction, nt=10)
        p.data[:] = 0.0
        p.data[1 if p_t else 0] = 1.0
        t, time = a.grid.stepping_dim, a.grid.time_dim
        kw = {}
        if u_t:
            kw["u_t"] = t + 1
        if p_t:
            kw["p_t"] = time + 1
        op = Operator(p.inject(a, p, **kw), backend=target(backend), name=f"InjShift{backend}")
        run(op, backend, tmp_path, time_m=0, time_M=0)
        inner = (slot, slice(1, -1)) + (slice(4, 6),) * (len(shape) - 1)
        np.testing.assert_allclose(a.data[inner], result, rtol=1e-5)
        assert np.all(a.data[1 - slot] == 0.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_inject_into_a_tuple_of_fields(backend, tmp_path):
    """inject((u, v), expr=(e1, e2)) and inject((u, v), expr=e): each field gets its own
    expression, or the same one."""
    grid = Grid(shape=(11, 11))
    u, v, w = (Function(name=n, grid=grid) for n in "uvw")
    p = _points(grid, [(.05, .95), (.45, .45)], 19)
    p.data[:] = 1.0
    run(Operator(p.inject((u, v), expr=(p, 2 * p)) + p.inject((w,), expr=3 * p),
                  backend=target(backend), name=f"Tuple{backend}"), backend, tmp_path)
    inner = (slice(1, -1), slice(4, 6))
    for f, scale in ((u, 1), (v, 2), (w, 3)):
        np.testing.assert_allclose(f.data[inner], scale * 1.0, rtol=1e-5)
    u.data[:] = v.data[:] = 0
    run(Operator(p.inject((u, v), expr=p), backend=target(backend), name=f"Same{backend}"),
         backend, tmp_path)
    np.testing.assert_allclose(u.data, v.data)
    assert float(np.abs(u.data).max()) > 0


def test_bad_shifts_and_tuples_say_what_to_give():
    grid = Grid(shape=(5, 5))
    a = TimeFunction(name="a", grid=grid)
    u, v = (Function(name=n, grid=grid) for n in "uv")
    p = _points(grid, [(.1, .9), (.5, .5)], 3, SparseTimeFunction, nt=4)
    with pytest.raises(InvalidArgument, match="2 fields and 3 expressions"):
        p.inject((u, v), expr=(p, p, p))
    x = grid.dimensions[0]
    with pytest.raises(InvalidArgument, match=r"u_t=x \+ 1 is not time \(or t\) plus"):
        p.interpolate(a, u_t=x + 1)
    with pytest.raises(TypeError):
        _points(grid, [(.1, .9), (.5, .5)], 3).interpolate(a, u_t=1)


@pytest.mark.parametrize("backend", backends(emulated=False))
def test_arrays_passed_for_sparse_functions(backend):
    """op.apply(points=ndarray), as Devito's RTM tutorial passes its residual: the array's
    values at the compiled function's points; an interpolation writes into the array (its
    own data, or another's), an injection reads it."""
    a = _box((11, 11))
    p = _points(a.grid, SHAPE_COORDS[0][1], 20)
    op = Operator(p.interpolate(a), backend=target(backend), name=f"ArrInterp{backend}")
    mine = p.data
    op.apply(points=mine)
    np.testing.assert_allclose(p.data, p.coordinates.data[:, 0], rtol=1e-6)
    other = np.zeros(20, dtype=np.float32)
    op.apply(points=other)
    np.testing.assert_allclose(other, p.coordinates.data[:, 0], rtol=1e-6)
    b = Function(name="b", grid=a.grid)
    q = _points(a.grid, [(.05, .95), (.45, .45)], 19, SparseTimeFunction, name="q", nt=3)
    inj = Operator(q.inject(b, q), backend=target(backend), name=f"ArrInject{backend}")
    inj.apply(q=np.ones((3, 19)), time_m=0, time_M=0)
    np.testing.assert_allclose(b.data[1:-1, 4:6], 1.0, rtol=1e-5)
    assert np.all(q.data == 0)   # the function built with the Operator is left alone
    with pytest.raises(InvalidArgument, match=r"give real numbers of shape \(nt, npoint\)"):
        inj.apply(q=np.ones((3, 18)))


# -- precomputed weights (Devito's TestPrecomputed) --------------------------------------

def _linear_weights(points, grid, r):
    """Devito's precompute_linear_interpolation: the cells and linear weights, placed at
    nodes r/2 - 1 and r/2 of r (the others zero)."""
    points = np.asarray(points)
    h = np.asarray(grid.spacing)
    cells = np.floor(points / h).astype(int)
    coeffs = np.zeros((len(points), grid.dim, r))
    rs = r // 2 - 1
    coeffs[:, :, rs] = ((cells + 1) * h - points) / h
    coeffs[:, :, rs + 1] = (points - cells * h) / h
    return cells, coeffs


COORDS = np.array([(.05, .9), (.01, .8), (0.07, 0.84)])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("r", [2, 4, 6])
def test_precomputed_interpolation(r, backend, tmp_path):
    """sin(x) + sin(y) on a 101^2 grid interpolated at three points with the linear weights
    (Devito's expectations, rtol 1e-6 of the exact values); by cells or by coordinates."""
    grid = Grid(shape=(101, 101))
    m = Function(name="m", grid=grid, space_order=r)
    xs = [np.arange(n) * h for n, h in zip(grid.shape, grid.spacing)]
    m.data[:] = np.sin(xs[0])[:, None] + np.sin(xs[1])[None, :]
    cells, coeffs = _linear_weights(COORDS, grid, r)
    for given in ({"gridpoints": cells}, {"coordinates": COORDS}):
        sf = stencilgen.PrecomputedSparseFunction(name="s", grid=grid, r=r, npoint=3,
                                                  interpolation_coeffs=coeffs, **given)
        run(Operator(sf.interpolate(m), backend=target(backend), name=f"Pre{backend}"),
             backend, tmp_path)
        want = np.sin(COORDS[:, 0]) + np.sin(COORDS[:, 1])
        np.testing.assert_allclose(sf.data, want, rtol=1e-4)   # linear interpolation's error
        plain = SparseFunction(name="s", grid=grid, npoint=3, coordinates=COORDS)
        run(Operator(plain.interpolate(m), backend=target(backend), name=f"Lin{backend}"),
             backend, tmp_path)
        np.testing.assert_allclose(sf.data, plain.data, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("r", [2, 4, 6])
def test_precomputed_time_interpolation_and_injection(r, backend, tmp_path):
    """A saved field holding its step at every point: each sample is the step; injecting
    ones through a PrecomputedSparseTimeFunction along a line through the grid adds
    nt * 0.25 / 2 to each slot of a two-slot field beside it (Devito's expectations)."""
    grid = Grid(shape=(101, 101))
    u = TimeFunction(name="u", grid=grid, space_order=r, save=5)
    u.data[:] = np.arange(5)[:, None, None]
    cells, coeffs = _linear_weights(COORDS, grid, r)
    sf = stencilgen.PrecomputedSparseTimeFunction(name="s", grid=grid, r=r, npoint=3, nt=5,
                                                  gridpoints=cells,
                                                  interpolation_coeffs=coeffs)
    assert sf.data.shape == (5, 3)
    run(Operator(sf.interpolate(u), backend=target(backend), name=f"PreT{backend}"), backend,
         tmp_path, time_m=0, time_M=4)
    np.testing.assert_allclose(sf.data, np.arange(5)[:, None] * np.ones((1, 3)), atol=1e-5)
    box = Grid(shape=(11, 11))
    m = TimeFunction(name="m", grid=box, space_order=r)
    line = [(.05, .45), (.95, .45)]
    cells, coeffs = _linear_weights(line, box, r)
    nt = 20
    src = stencilgen.PrecomputedSparseTimeFunction(name="q", grid=box, r=r, npoint=2,
                                                   nt=nt, gridpoints=cells,
                                                   interpolation_coeffs=coeffs)
    src.data[:] = 1.0
    run(Operator(src.inject(m, src), backend=target(backend), name=f"PreInj{backend}"), backend,
         tmp_path, time_m=0, time_M=nt - 1)
    for slot in range(2):
        np.testing.assert_allclose(m.data[slot][0:2, 4:6], nt * 0.25 / 2, rtol=1e-5)
        np.testing.assert_allclose(m.data[slot][9:11, 4:6], nt * 0.25 / 2, rtol=1e-5)


def test_precomputed_input_is_checked():
    grid = Grid(shape=(11, 11))
    good = dict(name="s", grid=grid, npoint=2, r=2, gridpoints=[[1, 1], [2, 2]],
                interpolation_coeffs=np.full((2, 2, 2), 0.5))
    with pytest.raises(InvalidArgument, match=r"= \(2, 2, 3\) with r even"):
        stencilgen.PrecomputedSparseFunction(**{**good, "r": 3,
                                                "interpolation_coeffs": np.ones((2, 2, 3))})
    with pytest.raises(InvalidArgument, match="give gridpoints="):
        stencilgen.PrecomputedSparseFunction(**{**good, "gridpoints": None})
    with pytest.raises(InvalidArgument, match=r"give \(2, 2\) whole numbers"):
        stencilgen.PrecomputedSparseFunction(**{**good, "gridpoints": [[1.5, 1], [2, 2]]})
    sf = stencilgen.PrecomputedSparseFunction(**{**good, "r": 4,
                                                 "interpolation_coeffs": np.ones((2, 2, 4))})
    thin = Function(name="thin", grid=grid, space_order=1)
    with pytest.raises(stencilgen.HaloError, match="space_order of at least 2"):
        Operator(sf.interpolate(thin))
    shifted = Function(name="shifted", grid=grid, space_order=2, staggered=grid.dimensions[0])
    with pytest.raises(stencilgen.InvalidEquation, match="precomputed weights with staggered"):
        Operator(sf.inject(shifted, sf))


def test_sparse_functions_on_given_dimensions():
    """SparseFunction(dimensions=(p,), shape=(npoint,)) and SparseTimeFunction(dimensions=
    (time, p), shape=(nt, npoint)): the point dimension named by the user; one Dimension
    before the points (rows: test_sparse) is taken, more (or with time) refused with what is
    supported."""
    from stencilgen import Dimension
    a = _box((11, 11))
    grid = a.grid
    p, q = Dimension("p"), Dimension("q")
    s = SparseFunction(name="s", grid=grid, dimensions=(p,), shape=(3,),
                       coordinates=[(.1, .2), (.5, .5), (.9, .1)])
    assert s.dimensions == (p,) and s.npoint == 3
    Operator(s.interpolate(a)).apply()
    np.testing.assert_allclose(s.data, [.1, .5, .9], rtol=1e-6)
    r = SparseTimeFunction(name="r", grid=grid, dimensions=(grid.time_dim, q), shape=(4, 2),
                           coordinates=[(.1, .2), (.5, .5)])
    assert r.dimensions == (grid.time_dim, q) and r.data.shape == (4, 2)
    u = TimeFunction(name="u", grid=grid)
    u.data[:] = 1.0
    Operator(r.interpolate(u)).apply(time_M=3)
    assert np.all(r.data == 1.0)
    rows = SparseFunction(name="z", grid=grid, dimensions=(q, p), shape=(3, 2))
    assert rows.data.shape == (3, 2) and rows.indices[0] == q   # rows before the points
    with pytest.raises(InvalidArgument, match="more dimensions is not supported"):
        SparseFunction(name="z", grid=grid, dimensions=(Dimension("r"), q, p),
                       shape=(2, 3, 2))
    with pytest.raises(InvalidArgument, match="more dimensions is not supported"):
        SparseTimeFunction(name="z", grid=grid, dimensions=(grid.time_dim, q, p),
                           shape=(4, 3, 2), nt=4)
    with pytest.raises(InvalidArgument, match="npoint=2 but shape"):
        SparseFunction(name="z", grid=grid, dimensions=(p,), shape=(3,), npoint=2)

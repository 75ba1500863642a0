"""Sources and receivers: multilinear injection/interpolation, exactness, adjointness, errors."""
import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, InvalidArgument, Operator, SparseFunction,
                        SparseTimeFunction, TimeFunction)
from devito_reference import assert_matches_devito
from test_cuda import needs_nvcc

SHAPES = [(17,), (9, 11), (6, 7, 8)]


def _grid(shape, dtype=np.float64):
    return Grid(shape=shape, extent=tuple(2.0 * (n - 1) for n in shape),
                origin=tuple(-1.0 - i for i in range(len(shape))), dtype=dtype)


def _random_points(grid, n, rng):
    lo = np.array(grid.origin)
    return lo + rng.random((n, grid.dim)) * np.array(grid.extent)


@pytest.mark.parametrize("shape", SHAPES)
def test_interpolation_reproduces_linear_fields(shape):
    rng = np.random.default_rng(1)
    grid = _grid(shape)
    f = Function(name="f", grid=grid)
    coeff = rng.standard_normal(grid.dim)
    axes = np.meshgrid(*[o + h * np.arange(n) for o, h, n in
                         zip(grid.origin, grid.spacing, shape)], indexing="ij")
    f.data[:] = 0.5 + sum(c * a for c, a in zip(coeff, axes))
    rec = SparseFunction(name="rec", grid=grid, npoint=25,
                         coordinates=_random_points(grid, 25, rng))
    Operator(rec.interpolate(expr=f)).apply()
    exact = 0.5 + rec.coordinates.data @ coeff
    np.testing.assert_allclose(rec.data, exact, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_inject_then_interpolate_at_nodes_is_exact(shape):
    rng = np.random.default_rng(2)
    grid = _grid(shape)
    f = Function(name="f", grid=grid)
    nodes = np.array([[o + h * rng.integers(0, n) for o, h, n in
                       zip(grid.origin, grid.spacing, shape)] for _ in range(4)])
    nodes = np.unique(nodes, axis=0)
    src = SparseFunction(name="src", grid=grid, npoint=len(nodes), coordinates=nodes)
    src.data[:] = rng.standard_normal(len(nodes))
    rec = SparseFunction(name="rec", grid=grid, npoint=len(nodes), coordinates=nodes)
    Operator(src.inject(field=f, expr=src) + rec.interpolate(expr=f)).apply()
    np.testing.assert_allclose(rec.data, src.data, rtol=0, atol=1e-13)
    assert np.count_nonzero(f.data) == len(nodes)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-13), (np.float32, 1e-5)])
def test_injection_is_the_adjoint_of_interpolation(shape, dtype, tol):
    """<inject(s), u> == <s, interpolate(u)> for random s, u and random points."""
    rng = np.random.default_rng(3)
    grid = _grid(shape, dtype)
    pts = _random_points(grid, 30, rng)
    u = Function(name="u", grid=grid)
    u.data[:] = rng.standard_normal(shape)
    v = Function(name="v", grid=grid)
    s = SparseFunction(name="s", grid=grid, npoint=30, coordinates=pts)
    s.data[:] = rng.standard_normal(30)
    r = SparseFunction(name="r", grid=grid, npoint=30, coordinates=pts)
    Operator(s.inject(field=v, expr=s)).apply()
    Operator(r.interpolate(expr=u)).apply()
    lhs = np.dot(v.data.ravel().astype(float), u.data.ravel().astype(float))
    rhs = np.dot(s.data.astype(float), r.data.astype(float))
    assert abs(lhs - rhs) <= tol * max(abs(lhs), 1.0), (lhs, rhs)


def test_source_and_receiver_in_a_time_loop():
    """A source injected each step reaches a receiver; the trace matches a NumPy loop."""
    grid = Grid(shape=(41,), extent=(40.0,), dtype=np.float64)
    u = TimeFunction(name="u", grid=grid, time_order=1)
    nt = 12
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt, coordinates=[(10.25,)])
    src.data[:, 0] = np.arange(nt)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=nt, coordinates=[(10.25,)])
    eqs = [Eq(u.forward, 0.5 * u)] + src.inject(field=u.forward, expr=src)
    eqs += rec.interpolate(expr=u)
    Operator(eqs).apply(time_M=nt - 2)
    ref = np.zeros(41)
    trace = []
    for n in range(nt - 1):
        nxt = 0.5 * ref
        nxt[10] += 0.75 * n
        nxt[11] += 0.25 * n
        trace.append(0.75 * ref[10] + 0.25 * ref[11])
        ref = nxt
    np.testing.assert_allclose(rec.data[:nt - 1, 0], trace, rtol=1e-12)


def test_default_time_bounds_come_from_nt():
    """Devito 4.8's default: time_M = nt - 1 - 1 (the Operator also writes u at time + 1), so
    nt=5 runs time 0..3 and records 4 samples."""
    grid = Grid(shape=(8,), extent=(7.0,))
    u = TimeFunction(name="u", grid=grid)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=5, coordinates=[(3.0,)])
    u.data[0] = 1.0
    summary = Operator([Eq(u.forward, u + 1)] + rec.interpolate(expr=u)).apply()
    assert summary.timesteps == 4
    np.testing.assert_allclose(rec.data[:, 0], [1, 2, 3, 4, 0])


def test_bad_sparse_input():
    grid = Grid(shape=(10, 10), extent=(9.0, 9.0))
    f = Function(name="f", grid=grid)
    with pytest.raises(InvalidArgument, match=r"coordinates of shape \(3, 2\).*\(2, 2\)"):
        SparseFunction(name="s", grid=grid, npoint=2, coordinates=np.zeros((3, 2)))
    with pytest.raises(InvalidArgument, match="npoint"):
        SparseFunction(name="s", grid=grid, npoint=0)
    with pytest.raises(InvalidArgument, match="give nt"):
        SparseTimeFunction(name="s", grid=grid, npoint=2)
    s = SparseFunction(name="s", grid=grid, npoint=3,
                       coordinates=[(1.0, 1.0), (4.0, 9.5), (2.0, 2.0)])
    op = Operator(s.interpolate(expr=f))
    with pytest.raises(InvalidArgument, match=r"s: point 1 at \(4, 9.5\) lies outside the "
                       r"domain \(0, 0\) \.\. \(9, 9\) \(1 point\(s\) outside\)") as info:
        op.apply()
    assert "np." not in str(info.value)   # plain numbers, not numpy scalars' reprs
    s.coordinates.data[1] = (np.nan, 1.0)
    with pytest.raises(InvalidArgument, match=r"s: point 1 has a non-finite coordinate "
                       r"\(nan, 1\)"):
        op.apply()
    u = TimeFunction(name="u", grid=grid)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=4, coordinates=[(1.0, 1.0)])
    op = Operator([Eq(u.forward, u + 1)] + rec.interpolate(expr=u))
    with pytest.raises(InvalidArgument, match="rec has nt=4 time samples.*time_M <= 3"):
        op.apply(time_M=10)
    with pytest.raises(InvalidArgument, match="inject: field must be a grid Function"):
        rec.inject(field=3, expr=rec)


@pytest.mark.parametrize("npoint", [50, 3000])
def test_injection_below_and_above_the_parallel_threshold(npoint):
    """Few points are injected by one thread, many by the OpenMP team (atomics): both leave
    the sum of what was injected on the grid, and each point's linear weights sum to one."""
    from stencilgen import Function, SparseFunction
    grid = Grid(shape=(21, 19, 17), extent=(2.0, 1.8, 1.6))
    rng = np.random.default_rng(npoint)
    f = Function(name="f", grid=grid)
    coords = rng.random((npoint, 3)) * np.array(grid.extent) * 0.999
    s = SparseFunction(name="s", grid=grid, npoint=npoint, coordinates=coords)
    s.data[:] = rng.uniform(0.5, 1.5, size=npoint)
    op = Operator(s.inject(field=f, expr=s), name=f"Inject{npoint}", backend="c")
    assert "if(s_np >= 1024)" in op.ccode
    op.apply()
    assert np.isclose(f.data.sum(dtype=np.float64), s.data.sum(dtype=np.float64), rtol=1e-5)


def test_devito_sparse_conventions():
    """interpolate() and inject() are single terms with .evaluate that lists take with + and
    +=; SparseTimeFunction takes Devito's time_order."""
    grid = Grid(shape=(9, 8))
    f = Function(name="f", grid=grid)
    i, j = np.meshgrid(np.arange(9), np.arange(8), indexing="ij")
    f.data[:] = 2 * i + 3 * j          # bilinear interpolation is exact on it
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=3, time_order=2)
    rec.coordinates.data[:] = [[0.25, 0.5], [0.5, 0.125]]
    term = rec.interpolate(expr=f)
    assert term.evaluate == [term] and ([] + term) == [term] == (term + [])
    other = SparseTimeFunction(name="rec2", grid=grid, npoint=1, nt=3)
    other.coordinates.data[:] = [[0.75, 0.25]]
    pair = term
    pair += other.interpolate(expr=2 * f)     # a term plus a term: a list of both
    assert isinstance(pair, list) and pair[0] is term and len(pair) == 2
    eqs = []
    eqs += pair
    Operator(eqs).apply(time_M=0)
    index = rec.coordinates.data / np.array(grid.spacing)
    assert np.allclose(rec.data[0], 2 * index[:, 0] + 3 * index[:, 1], rtol=1e-6)
    index = other.coordinates.data[0] / np.array(grid.spacing)
    assert np.isclose(other.data[0, 0], 2 * (2 * index[0] + 3 * index[1]), rtol=1e-6)
    with pytest.raises(InvalidArgument, match="time_order=3"):
        SparseTimeFunction(name="bad", grid=grid, npoint=1, nt=2, time_order=3)


@pytest.mark.parametrize("staggered", [False, True], ids=["node", "cell"])
def test_sparse_function_ignores_nt_as_devito_does(staggered):
    """Devito's SparseFunction has no time axis whatever ``nt`` says (``p.data.shape ==
    (1,)``): injecting ``b*p`` (b = 2, p = 1) at grid node (5, 5, 5) runs once, so the field
    gains 2 in all (with a time axis it was 2 * nt = 20): all of it at the node, or 1/8 in
    each of the eight cells around it for a cell-centred field (the point sits at their
    common corner; Devito 4.8 shifts a staggered field's positions by h/2 the same way)."""
    grid = Grid(shape=(11, 11, 11), extent=(10.0, 10.0, 10.0))
    kw = dict(staggered=grid.dimensions) if staggered else {}
    a = Function(name="a", grid=grid, **kw)
    b = Function(name="b", grid=grid, **kw)
    b.data[:] = 2.0
    p = SparseFunction(name="p", grid=grid, npoint=1, nt=10)
    assert p.data.shape == (1,) and not p.is_TimeFunction
    p.coordinates.data[:] = [[5.0, 5.0, 5.0]]
    p.data[:] = 1.0
    Operator(p.inject(a, expr=b * p))()
    assert float(np.sum(a.data)) == pytest.approx(2.0, rel=1e-6)
    if staggered:
        np.testing.assert_allclose(a.data[4:6, 4:6, 4:6], 0.25, rtol=1e-6)
    else:
        assert a.data[5, 5, 5] == pytest.approx(2.0, rel=1e-6)
    q = SparseTimeFunction(name="q", grid=grid, npoint=1, nt=10)
    assert q.data.shape == (10, 1)


def test_injections_add_what_devito_adds():
    """tests/reference/injection_program.py under Devito 4.8.23 (stored) and stencilgen: an
    expression injected into fields staggered along x, z and x and y is evaluated where their
    values sit (the node function in it averaged onto them); a function staggered along y in
    the expression of a node field is averaged onto the nodes; in float32 a point on a node
    puts all of its value there (the same nodes written: none leaks 1e-7 to its neighbours);
    a point within half a cell of a staggered field's edge adds to its halo, and an
    interpolation from a staggered function reads its halo there, as Devito's."""
    assert_matches_devito("injection_program", same_zeros=True)


def test_a_dimension_before_the_points_gives_devitos_numbers():
    """tests/reference/sparse_rows_program.py: ``SparseFunction(dimensions=(scale, dim),
    shape=(3, npoint))``, each row interpolating ``a * p.indices[0]`` (Devito's
    test_interpolate_custom and test_interpolate_indexed, 2D and 3D) and injecting
    ``p * (1 + p.indices[0])``, as Devito 4.8.23 computes them."""
    assert_matches_devito("sparse_rows_program")


@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=needs_nvcc), "openacc"])
def test_rows_of_a_sparse_function_on_the_other_backends(backend, tmp_path):
    """The rows' interpolation and injection give C's numbers on CUDA (emulated, where nvcc
    is) and OpenACC."""
    import cuda_emulation
    import stencilgen
    from devito_reference import reference
    program, _ = reference("sparse_rows_program")
    grid = Grid(shape=(9, 10), extent=(1., 1.))
    a = Function(name="a", grid=grid)
    a.data[:] = np.random.default_rng(3).standard_normal(grid.shape)
    results = {}
    for be in ("c", backend):
        p = program._points(stencilgen, grid, ((.05, .9), (.01, .8)), 11)
        p.data[:] = 1.
        b = Function(name="b", grid=grid)
        eqs = p.interpolate(a * (p.indices[0] - 1)) + \
            p.inject(field=b, expr=p * (2 + p.indices[0]))
        op = Operator(eqs, backend=be, name=f"Rows{be}")
        if be == "cuda":
            assert cuda_emulation.run(op, str(tmp_path)) == 0
        else:
            op.apply()
        results[be] = (np.array(p.data), np.array(b.data))
    for got, want in zip(results[backend], results["c"]):
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    with pytest.raises(stencilgen.InvalidEquation, match="read it at a row, 0 to 2"):
        Operator(p.inject(field=b, expr=p.func(5, p.indices[1])), backend="c")

"""Staggered functions, vectors and tensors as Devito's: where values sit, how an Eq's
right-hand side is taken at its left-hand side's point, the vector calculus operators, and
the staggered ports on the GPU backends."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from stencilgen import (CELL, NODE, Eq, Function, Grid, InvalidArgument, InvalidEquation,
                        Operator, TensorFunction, TensorTimeFunction, TimeFunction,
                        VectorFunction, VectorTimeFunction, configuration, curl, diag, div,
                        grad, laplace, platform, solve)
from stencilgen.symbolic.differentiable import plain

from test_cuda import needs_gpu
from devito_reference import assert_matches_devito
from test_devito_ports import TOLERANCE

ROOT = Path(__file__).resolve().parents[1]


def _terms(expr):
    """{function access: weight} of an expanded expression (spacings set to 1)."""
    grid_h = {s: 1 for s in expr.free_symbols if s.name.startswith("h_")}
    flat = sp.expand(plain(expr).subs(grid_h))
    return {f: flat.coeff(f) for f in flat.atoms(sp.core.function.AppliedUndef)}


def test_where_values_sit():
    grid = Grid(shape=(5, 6))
    x, y = grid.dimensions
    hx, hy = x.spacing, y.spacing
    assert Function(name="a", grid=grid, staggered=x).args == (x + hx / 2, y)
    assert Function(name="b", grid=grid, staggered=CELL).args == (x + hx / 2, y + hy / 2)
    assert Function(name="c", grid=grid, staggered=NODE).args == (x, y)
    v = TimeFunction(name="v", grid=grid, staggered=(y,))
    assert v.staggered == (0, 0, 1) and v.dimensions[1:] == (x, y)
    assert v[v.dimensions[0] + 1, x, y + 1] == v.forward.subs(y, y + hy)
    assert v.data.shape == (2, 5, 6)


@pytest.mark.parametrize("so, weights", [(2, (-1, 1)), (4, (1 / 24, -9 / 8, 9 / 8, -1 / 24))])
def test_a_node_lhs_reads_a_staggered_derivative_across_the_node(so, weights):
    """Eq(p, v.dx): v sits at x + h/2, so the derivative at x uses the midpoint weights."""
    grid = Grid(shape=(9,))
    x, = grid.dimensions
    p = Function(name="p", grid=grid, space_order=so)
    v = Function(name="v", grid=grid, staggered=x, space_order=so)
    got = _terms(Eq(p, v.dx).evaluate().rhs)
    k = len(weights) // 2
    want = {v.subs(x, x + (i - k) * x.spacing): w for i, w in enumerate(weights)}
    assert {f: float(w) for f, w in got.items()} == pytest.approx(
        {f: float(w) for f, w in _terms(sum(w * f for f, w in want.items())).items()})


def test_a_staggered_lhs_averages_node_functions_onto_its_points():
    grid = Grid(shape=(6, 6))
    x, y = grid.dimensions
    ro = Function(name="ro", grid=grid)
    txy = Function(name="txy", grid=grid, staggered=(x, y))
    got = _terms(Eq(txy, ro).evaluate().rhs)
    corners = [ro.subs({x: x + i * x.spacing, y: y + j * y.spacing})
               for i in (0, 1) for j in (0, 1)]
    assert got == _terms(sp.Add(*corners) / 4) and set(got.values()) == {sp.Rational(1, 4)}


def test_two_point_first_derivative_leans_back_for_staggered_functions():
    """Devito's rule: with staggered= given (NODE too) the two-point .dx at the function's
    own point is backward, without it forward."""
    grid = Grid(shape=(6,))
    x, = grid.dimensions
    q = Function(name="q", grid=grid)
    p = Function(name="p", grid=grid, staggered=NODE)
    assert _terms(q.dx.evaluate()) == _terms(q.subs(x, x + x.spacing) - q)
    assert _terms(p.dx.evaluate()) == _terms(p - p.subs(x, x - x.spacing))


@pytest.mark.parametrize("so", [2, 4, 8])
def test_staggered_derivative_converges_at_its_order(so):
    """d/dx of sin(6x) at the nodes from values at the midpoints: error falls as h^so."""
    errors = []
    for n in (17, 33):
        grid = Grid(shape=(n,), extent=(1.0,), dtype=np.float64)
        x, = grid.dimensions
        v = Function(name="v", grid=grid, staggered=x, space_order=so, dtype=np.float64)
        p = Function(name="p", grid=grid, space_order=so, dtype=np.float64)
        xs = np.linspace(0, 1, n)
        v.data[:] = np.sin(6 * (xs + 0.5 / (n - 1)))
        H = v.halo[0][0]
        v.data_with_halo[:H] = np.sin(6 * (xs[0] + (np.arange(-H, 0) + 0.5) / (n - 1)))
        v.data_with_halo[-H:] = np.sin(6 * (xs[-1] + (np.arange(1, H + 1) + 0.5) / (n - 1)))
        Operator([Eq(p, v.dx)], backend="c").apply()
        errors.append(np.abs(p.data - 6 * np.cos(6 * xs)).max())
    assert np.log2(errors[0] / errors[1]) > so - 0.3


def test_staggered_div_is_minus_the_adjoint_of_grad():
    """<grad p, v> = -<p, div v> on a staggered pair when the fields vanish near the edges."""
    rng = np.random.default_rng(3)
    grid = Grid(shape=(24, 20), dtype=np.float64)
    p = Function(name="p", grid=grid, space_order=4, dtype=np.float64)
    q = Function(name="q", grid=grid, space_order=4, dtype=np.float64)
    v = VectorFunction(name="v", grid=grid, space_order=4, dtype=np.float64)
    g = VectorFunction(name="g", grid=grid, space_order=4, dtype=np.float64)
    for f in (p, v[0], v[1]):
        f.data[4:-4, 4:-4] = rng.standard_normal((16, 12))
    Operator([Eq(g, grad(p)), Eq(q, div(v))], backend="c").apply()
    lhs = sum(np.vdot(g[i].data, v[i].data) for i in range(2))
    rhs = -np.vdot(p.data, q.data)
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_staggered_is_devitos_tuple_of_zeros_and_ones():
    """``f.staggered`` as Devito 4.8 has it: 0 or 1 per dimension of the function (CELL: 1 on
    every one, time included), () without staggered=, indexable by dimension; another
    function built with ``staggered=f.staggered`` sits where f does."""
    grid = Grid(shape=(5, 6))
    x, y = grid.dimensions
    a = Function(name="a", grid=grid, staggered=x)
    assert a.staggered == (1, 0) and a.staggered[x] == 1 and a.staggered[y] == 0
    assert Function(name="b", grid=grid).staggered == ()
    node = Function(name="c", grid=grid, staggered=NODE).staggered
    assert node == (0, 0) and node.on_node and node == Function(name="d", grid=grid).staggered
    assert TimeFunction(name="u", grid=grid, staggered=CELL).staggered == (1, 1, 1)
    assert TimeFunction(name="w", grid=grid, staggered=(x, y)).staggered == (0, 1, 1)
    again = Function(name="e", grid=grid, staggered=a.staggered)
    assert again.staggered == a.staggered and again.args == a.args
    cell = Function(name="g", grid=grid, staggered=TimeFunction(name="v", grid=grid,
                                                                 staggered=CELL).staggered)
    assert cell.args == Function(name="k", grid=grid, staggered=CELL).args


def test_vector_and_tensor_functions():
    grid = Grid(shape=(5, 5, 5))
    x, y, z = grid.dimensions
    v = VectorTimeFunction(name="v", grid=grid, space_order=4)
    tau = TensorTimeFunction(name="t", grid=grid)
    assert [c.name for c in v] == ["v_x", "v_y", "v_z"]
    assert [c.staggered for c in v] == [(0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)]
    assert tau[0, 1] is tau[1, 0] and tau[1, 2].staggered == (0, 0, 1, 1)
    assert tau[0, 0].staggered.on_node and len(tau.values()) == 6
    assert TensorFunction(name="d", grid=grid, diagonal=True).values()[1].name == "d_yy"
    c = curl(v)
    assert c[0] == v[2].dy - v[1].dz
    assert div(v) == v[0].dx + v[1].dy + v[2].dz
    assert grad(v)[1, 2] == v[1].dz and grad(v).transpose(inner=False)[2, 1] == v[1].dz
    assert grad(v).T[2, 1] == v[1].dz.T
    assert div(tau)[1] == tau[1, 0].dx + tau[1, 1].dy + tau[1, 2].dz
    assert diag(div(v))[2, 2] == div(v) and diag(div(v))[0, 1] == 0
    assert laplace(v[0]) == v[0].dx2 + v[0].dy2 + v[0].dz2
    eqs = Eq(tau.forward, solve(tau.dt - grad(v) - grad(v).transpose(inner=False),
                                tau.forward)).components
    assert [e.lhs.name for e in eqs] == ["t_xx", "t_xy", "t_xz", "t_yy", "t_yz", "t_zz"]


def test_vector_equations_run_entry_by_entry():
    grid = Grid(shape=(8, 7))
    v = VectorTimeFunction(name="v", grid=grid)
    p = Function(name="p", grid=grid)
    p.data[:] = np.arange(56, dtype=np.float32).reshape(8, 7) ** 2 / 50
    Operator(Eq(v.forward, v + 2.0 * grad(p)), backend="c").apply(time_M=0)
    h = grid.spacing
    want_x = 2.0 * (p.data[1:, :] - p.data[:-1, :]) / h[0]
    assert np.allclose(v[0].data[1][:-1, :], want_x, rtol=1e-5)
    want_y = 2.0 * (p.data[:, 1:] - p.data[:, :-1]) / h[1]
    assert np.allclose(v[1].data[1][:, :-1], want_y, rtol=1e-5)


def test_solve_a_vector_equation_without_a_right_hand_side():
    """``solve(Eq(U.dt + grad(U)*U), U.forward)`` (Devito's CFD tutorial 02): the scalar 0 on
    the right stands for a zero vector, and each entry is solved for its own unknown."""
    grid = Grid(shape=(5, 5))
    U = VectorTimeFunction(name="U", grid=grid)
    pde = U.dt + grad(U) * U
    got = solve(Eq(pde), U.forward)
    assert [got[i] for i in range(2)] == [solve(Eq(pde[i]), U[i].forward) for i in range(2)]
    assert solve(Eq(pde, 0 * grad(U[0])), U.forward)[1] == got[1]


def test_errors_say_what_to_write():
    grid = Grid(shape=(5, 5))
    other = Grid(shape=(4, 4))
    x, y = grid.dimensions
    with pytest.raises(InvalidArgument, match="staggered="):
        Function(name="a", grid=grid, staggered=other.dimensions[0].func("w"))
    v = Function(name="v", grid=grid, staggered=x)
    w = Function(name="w", grid=grid, staggered=y)
    p = Function(name="p", grid=grid)
    with pytest.raises(InvalidEquation, match="staggered differently .* none of them first"):
        Eq(p, (w * v).dx).evaluate()
    with pytest.raises(InvalidEquation, match="one Eq per entry"):
        Eq(p, grad(p))
    with pytest.raises(InvalidArgument, match="shapes"):
        grad(p) + VectorFunction(name="w", grid=Grid(shape=(4, 4, 4)))
    with pytest.raises(InvalidArgument, match="scalar"):
        grad(p) + 1


def _run_port(name, monkeypatch):
    monkeypatch.setenv("FRAMEWORK", "stencilgen")
    sys.path.insert(0, str(ROOT))
    for mod in ("demos.devito_ports.framework", f"demos.devito_ports.{name}"):
        sys.modules.pop(mod, None)
    return importlib.import_module(f"demos.devito_ports.{name}").run()


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
@pytest.mark.parametrize("name", ["staggered_acoustic", "elastic", "acoustic_xz", "elastic_xz",
                                  "elastic_dt2", "vector_convection", "vector_burgers"])
def test_staggered_ports_on_the_gpu_give_devitos_numbers(backend, name, monkeypatch):
    if backend == "openacc" and "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    old = configuration["backend"]
    configuration["backend"] = backend
    try:
        out = _run_port(name, monkeypatch)
    finally:
        configuration["backend"] = old
    ref = np.load(ROOT / "demos" / "devito_ports" / "reference" / f"{name}.npz")
    for key, value in out.items():
        scale = np.abs(ref[key]).max()
        assert np.abs(value - ref[key]).max() <= TOLERANCE[name] * scale, (name, key)


def test_sparse_points_on_a_staggered_field():
    """Injection weights count from where the target's values sit (x + h/2); interpolation
    reads the field averaged onto the nodes (as Devito 4.8)."""
    from stencilgen import SparseTimeFunction
    grid = Grid(shape=(11, 11), extent=(10.0, 10.0))
    x, y = grid.dimensions
    v = TimeFunction(name="v", grid=grid, staggered=x)
    w = TimeFunction(name="w", grid=grid, staggered=x)
    d = np.arange(121, dtype=np.float64).reshape(11, 11) ** 1.5
    v.data[0] = d
    pts = [[3.3, 4.6], [7.0, 2.0]]
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=3)
    src = SparseTimeFunction(name="src", grid=grid, npoint=2, nt=3)
    rec.coordinates.data[:] = pts
    src.coordinates.data[:] = pts
    src.data[:] = 1.0
    Operator([Eq(v.forward, v)] + rec.interpolate(expr=v) + src.inject(field=w.forward, expr=src),
             backend="c").apply(time_M=0)
    nodes = d.copy()
    nodes[1:] = 0.5 * (d[:-1] + d[1:])       # v averaged onto the nodes x_i
    want_rec, want_w = [], np.zeros((11, 11))
    for px, py in pts:
        i, j = int(np.floor(px)), int(np.floor(py))
        a, b = px - i, py - j
        want_rec.append((1 - a) * (1 - b) * nodes[i, j] + a * (1 - b) * nodes[i + 1, j]
                        + (1 - a) * b * nodes[i, j + 1] + a * b * nodes[i + 1, j + 1])
        i = int(np.floor(px - 0.5))
        a = px - 0.5 - i
        for di, wx in ((0, 1 - a), (1, a)):
            for dj, wy in ((0, 1 - b), (1, b)):
                want_w[i + di, j + dj] += wx * wy
    assert np.allclose(rec.data[0], want_rec, rtol=1e-6)
    assert np.allclose(w.data[1], want_w, atol=1e-6)


def test_vectors_take_matrices_and_diag_takes_vectors_and_tensors():
    """Devito's algebra (the ADER tutorial's ``v + dt**2*Matrix([...])/2``): a sympy Matrix
    (or list) of the vector's length adds entry by entry, either side; ``diag`` of a vector
    puts it on the diagonal, of a tensor keeps its diagonal; a matrix of another length is
    refused with the shapes."""
    grid = Grid(shape=(5, 5))
    x, y = grid.dimensions
    v = VectorTimeFunction(name="v", grid=grid)
    dt = grid.stepping_dim.spacing
    w = v + dt ** 2 * sp.Matrix([x, y]) / 2
    assert list(w) == [v[0] + dt ** 2 * x / 2, v[1] + dt ** 2 * y / 2]
    assert list(sp.Matrix([1, 2]) + v) == [v[0] + 1, v[1] + 2]
    assert list(v - [1, 2]) == [v[0] - 1, v[1] - 2]
    # a field times a Matrix is a Matrix, entry by entry (the ADER tutorial's c**2*graddiv(v))
    c = Function(name="c", grid=grid)
    m = c ** 2 * sp.Matrix([v[0].dx, v[1].dy])
    assert isinstance(m, sp.MatrixBase) and list(m) == [c ** 2 * v[0].dx, c ** 2 * v[1].dy]
    assert list(sp.Matrix([1, 2]) / c) == [1 / c, 2 / c]
    assert list(v + dt * m) == [v[0] + dt * c ** 2 * v[0].dx, v[1] + dt * c ** 2 * v[1].dy]
    d = diag(v)
    assert d.shape == (2, 2) and d[0, 0] == v[0] and d[1, 1] == v[1] and d[0, 1] == 0
    tau = TensorTimeFunction(name="t", grid=grid)
    kept = diag(tau)
    assert kept[0, 0] == tau[0, 0] and kept[1, 1] == tau[1, 1] and kept[0, 1] == 0
    with pytest.raises(InvalidArgument, match=r"matrix of shape \(3, 1\)"):
        v + sp.Matrix([1, 2, 3])


def test_avg_mode_averages_as_devitos():
    """tests/reference/average_program.py under Devito 4.8.23 (stored) and stencilgen: a node
    function averaged onto points staggered along x, y and both, as the mean, the harmonic
    mean and the safe harmonic mean (zeros and a negative value there: their inverses taken
    as zero, the points next to them 0 as Devito's); an unknown mode is an error."""
    assert_matches_devito("average_program", same_zeros=True)
    grid = Grid(shape=(4, 4))
    with pytest.raises(InvalidArgument, match="avg_mode='geometric'; give one of"):
        Function(name="b", grid=grid, avg_mode="geometric")


def test_products_and_sums_of_differently_placed_functions_give_devitos_numbers():
    """tests/reference/staggered_products_program.py under Devito 4.8.23 (stored) and
    stencilgen: derivatives of products of node and staggered functions (a TimeFunction's
    place first, then a node function's), of sums of them, on left-hand sides on the nodes
    (staggered=NODE given or not), staggered along x, y or both, at space orders 2 and 4;
    Devito's test_param_stagg_inner, test_param_stagg_add and test_deriv_stagg_plain among
    them: float32 round-off apart."""
    assert_matches_devito("staggered_products_program")


def test_a_product_of_two_functions_first_by_priority_at_different_places_is_refused():
    """Two staggered Functions (one priority) staggered differently: Devito takes the one
    sympy orders first, so the result would hang on the functions' names; ours says so."""
    grid = Grid(shape=(6, 5))
    x, y = grid.dimensions
    a = Function(name="a", grid=grid, space_order=2, staggered=x)
    b = Function(name="b", grid=grid, space_order=2, staggered=y)
    g = Function(name="g", grid=grid, space_order=2, staggered=NODE)
    with pytest.raises(InvalidEquation, match="none of them first by Devito's priority"):
        Operator(Eq(g, (a * b).dx), backend="c")


def test_functions_staggered_behind_give_devitos_numbers():
    """tests/reference/backward_staggered_program.py under Devito 4.8.23 (stored) and
    stencilgen: ``staggered=-x`` (values half a spacing behind the nodes), its derivatives
    and values taken on the nodes and at points staggered either way, a node function's
    derivative taken behind, Devito's test_fd_space_staggered for the left staggering, and an
    interpolation: float32 round-off apart; and the polynomials differentiated exactly, as
    that test asserts."""
    assert_matches_devito("backward_staggered_program")
    sys.path.insert(0, str(ROOT / "tests" / "reference"))
    try:
        program = importlib.import_module("backward_staggered_program")
    finally:
        sys.path.remove(str(ROOT / "tests" / "reference"))
    import stencilgen
    xx = np.linspace(-1, 1, 101)
    dx = xx[1] - xx[0]
    for so in (4, 8):
        for where, at in (("left", xx), ("right", xx), ("centered", xx + dx / 2)):
            got = program.polynomial(stencilgen, so, {"backend": "c"}, where)
            exact = sum(i * at ** (i - 1) for i in range(1, so - 1))
            assert np.abs(got - exact)[so:-so].max() < 1e-3 * np.abs(exact).max(), (so, where)


def test_staggered_behind_reads_back_and_injects_where_its_values_sit():
    """``f.staggered`` is Devito's -1 where the values sit behind; an injection into such a
    function spreads each point over the values around it by the linear weights of their
    own places, x_i - h/2 (Devito 4.8.23's puts them half a cell ahead, as for staggered=x:
    a point on node 5 into indices 4 and 5, not 5 and 6)."""
    from stencilgen import SparseFunction
    grid = Grid(shape=(11, 10), extent=(1.0, 0.9), dtype=np.float64)
    x, y = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2, staggered=-x)
    assert tuple(f.staggered) == (-1, 0) and f.staggered[x] == -1
    assert f.args == (x - x.spacing / 2, y)
    points = np.array([(0.5, 0.5), (0.53, 0.47), (0.02, 0.85), (0.91, 0.1)])
    values = np.random.default_rng(9).random(4)
    src = SparseFunction(name="src", grid=grid, npoint=4)
    src.coordinates.data[:] = points
    src.data[:] = values
    Operator(src.inject(f, expr=src), backend="c").apply()
    hx, hy = grid.spacing
    hat = lambda t: np.maximum(0, 1 - np.abs(t))   # noqa: E731
    i, j = np.meshgrid(np.arange(11), np.arange(10), indexing="ij")
    want = sum(v * hat(px / hx - (i - 0.5)) * hat(py / hy - j)
               for v, (px, py) in zip(values, points))
    assert np.abs(f.data - want).max() < 1e-12


def test_a_second_derivative_from_two_points_is_refused():
    """At space order 2 a function staggered along x has two points around a node for
    ``f.dx2`` there: Devito gives zero, stencilgen says what to give."""
    grid = Grid(shape=(6, 5))
    x, _ = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2, staggered=-x)
    g = Function(name="g", grid=grid, space_order=2, staggered=NODE)
    with pytest.raises(InvalidArgument, match="would sample only 2 points.*fd_order >= 4"):
        Operator(Eq(g, f.dx2), backend="c")

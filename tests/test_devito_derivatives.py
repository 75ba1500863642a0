"""Devito's derivative spellings on stencilgen's expressions: one-sided and centred shorthands
(``u.dxl``, ``u.dxr``, ``u.dxc``), higher orders (``u.dx3``), cross shorthands (``u.dxdy``),
the rotated ``u.dx45``, the adjoint ``.T``, custom ``weights=``, ``first_derivative`` with the
``left``/``right``/``centered`` markers, and the errors for names we cannot offer.

Weights are checked against Fornberg's weights on explicitly listed nodes, accuracy by the
observed convergence order of the compiled C code, ``.T`` by the adjoint identity
<D u, v> = <u, D.T v> on interior-supported random fields, and, where Devito is importable,
the stencils against Devito's own.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from stencilgen import Derivative, Eq, Function, Grid, Operator, TimeFunction
from stencilgen.symbolic.derivatives import centered, evaluate, first_derivative, left, right
from stencilgen.symbolic.differentiable import plain
from stencilgen.errors import InvalidArgument, UnsupportedDerivative
from stencilgen.symbolic.fd_weights import fornberg_weights
from devito_reference import assert_matches_devito

R = sp.Rational


def _grid2(so=4, n=11):
    grid = Grid(shape=(n, n), extent=(1.0, 1.0), dtype=np.float64)
    return grid, Function(name="u", grid=grid, space_order=so)


def _stencil(expr, fname):
    """{offsets: coefficient} of the accesses to ``fname`` in ``expr`` with every spacing 1:
    the numbers of a stencil, whichever library built the expression (read back from its
    printed form, so that only plain sympy objects remain)."""
    expr = sp.sympify(str(expr))
    expr = expr.subs({s: 1 for s in expr.free_symbols if s.name in ("h_x", "h_y", "h_z", "dt")})
    accesses = [a for a in expr.atoms(sp.Function) if type(a).__name__ == fname]
    dummies = {a: sp.Dummy() for a in accesses}
    flat = sp.expand(expr.xreplace(dummies))
    table = {}
    for a, d in dummies.items():
        key = tuple(int(arg - next(iter(arg.free_symbols))) for arg in a.args)
        c = float(flat.coeff(d))
        if c != 0.0:
            table[key] = table.get(key, 0.0) + c
    return table


def _same(ours, theirs):
    assert ours.keys() == theirs.keys(), (sorted(ours), sorted(theirs))
    for k in ours:
        assert ours[k] == pytest.approx(theirs[k], rel=1e-8, abs=1e-12), k


def _fornberg_1d(offsets, x0, n):
    return {(o, 0): float(w) for o, w in zip(offsets, fornberg_weights(offsets, x0, n)) if w != 0}


# -- exact weights ----------------------------------------------------------------------------

@pytest.mark.parametrize("so", [2, 4, 8])
def test_one_sided_and_centred_weights_are_fornbergs(so):
    """dxl / dxr: the so+1 centred nodes moved one node back / ahead; dxc: the centred ones
    (three points even at so 2, where u.dx is the two-point forward difference)."""
    _, u = _grid2(so)
    centred = list(range(-(so // 2), so // 2 + 1))
    _same(_stencil(evaluate(u.dxl), "u"), _fornberg_1d([o - 1 for o in centred], 0, 1))
    _same(_stencil(evaluate(u.dxr), "u"), _fornberg_1d([o + 1 for o in centred], 0, 1))
    _same(_stencil(evaluate(u.dxc), "u"), _fornberg_1d(centred, 0, 1))
    ys = {(0, o): c for (o, _), c in _fornberg_1d([o - 1 for o in centred], 0, 1).items()}
    _same(_stencil(evaluate(u.dyl), "u"), ys)


def test_higher_derivatives_sample_so_plus_one_nodes():
    """dx3 and dx4 at space order 4 use the five centred nodes (second-order accurate), as
    Devito defines them; dx6 at space order 8 the nine."""
    _, u = _grid2(4)
    _same(_stencil(evaluate(u.dx3), "u"), _fornberg_1d(range(-2, 3), 0, 3))
    _same(_stencil(evaluate(u.dx4), "u"), _fornberg_1d(range(-2, 3), 0, 4))
    _, u8 = _grid2(8)
    _same(_stencil(evaluate(u8.dx6), "u"), _fornberg_1d(range(-4, 5), 0, 6))


def test_first_derivative_and_side_markers():
    _, u = _grid2(4)
    x, _ = u.grid.dimensions
    for side, shorthand in ((left, u.dxl), (right, u.dxr), (centered, u.dxc)):
        assert evaluate(first_derivative(u, dim=x, side=side, fd_order=4)) == evaluate(shorthand)
        assert evaluate(Derivative(u, x, side=side.name)) == evaluate(shorthand)
    two = _stencil(evaluate(first_derivative(u, dim=x, fd_order=2)), "u")
    _same(two, {(-1, 0): -0.5, (1, 0): 0.5})
    _same(_stencil(evaluate(first_derivative(u, dim=x, side=left, fd_order=2)), "u"),
          {(-2, 0): 0.5, (-1, 0): -2.0, (0, 0): 1.5})
    assert evaluate(u.dxl(fd_order=2)) == evaluate(first_derivative(u, dim=x, side=left, fd_order=2))


def test_custom_weights_follow_the_nodes_left_to_right():
    _, u = _grid2(4)
    x, _ = u.grid.dimensions
    w = [R(1, 12), R(-2, 3), 0, R(2, 3), R(-1, 12)]
    assert sp.simplify(plain(evaluate(u.dx(weights=w)) - evaluate(u.dx))) == 0
    assert evaluate(Derivative(u, x, weights=w)) == evaluate(u.dx(weights=w))
    drp = np.array([-0.1, 0.6, -1.0, 0.0, 1.0, -0.6, 0.1]) / 1.2    # 7 nodes: more than so+1
    table = _stencil(evaluate(u.dx(weights=drp)), "u")
    _same(table, {(o, 0): float(c) for o, c in zip(range(-3, 4), drp) if c != 0})
    _same(_stencil(evaluate(u.dx2(weights=[1, -2, 1])), "u"), {(-1, 0): 1, (0, 0): -2, (1, 0): 1})
    stag = _stencil(evaluate(u.dx(x0=x + x.spacing / 2, weights=[-1, 1])), "u")
    _same(stag, {(0, 0): -1, (1, 0): 1})


@pytest.mark.parametrize("n, p, mid, side", [
    (1, 1, 0, 0), (1, 3, 0, 0), (1, 5, 0, 0), (2, 3, 0, 0), (2, 5, 0, 0), (1, 1, 0, -1),
    (1, 3, 0, 1), (1, 3, R(1, 2), 0), (1, 1, R(1, 2), 0), (2, 3, R(1, 2), 0)])
def test_odd_fd_orders_take_devitos_nodes(n, p, mid, side):
    """An odd fd_order p (``u.dx(fd_order=3)``, the DSL tutorial's ``fd_order=1``): Devito's
    nodes are those within p/2 of x0, moved by a side, two ahead of a node for p = 1; the
    weights are Fornberg's on them."""
    _, u = _grid2(6)
    x, _ = u.grid.dimensions
    lo, hi = sp.ceiling(mid - R(p, 2)) + side, sp.floor(mid + R(p, 2)) + side
    nodes = list(range(int(lo), int(hi) + 1 + (lo == hi)))
    kw = dict(fd_order=p, x0=x + mid * x.spacing) if mid else dict(fd_order=p)
    if side:
        d = (u.dxl if side < 0 else u.dxr)(**kw)
    else:
        d = Derivative(u, (x, n), **kw)
    _same(_stencil(evaluate(d), "u"), _fornberg_1d(nodes, mid, n))


def test_an_odd_fd_order_converges_at_its_order_in_compiled_code():
    """``u.dx(fd_order=3)`` is the three-point centred difference: second order, observed on
    sin(x) in the compiled C code."""
    errors = []
    for nx in (41, 81):
        grid = Grid(shape=(nx,), extent=(2.0,), dtype=np.float64)
        u = Function(name="u", grid=grid, space_order=4)
        f = Function(name="f", grid=grid, space_order=4)
        xs = np.linspace(0.0, 2.0, nx)
        u.data[:] = np.sin(xs)
        Operator(Eq(f, u.dx(fd_order=3)), backend="c").apply()
        errors.append(np.max(np.abs(f.data[2:-2] - np.cos(xs[2:-2]))))
    assert 3.6 < errors[0] / errors[1] < 4.4


def test_weights_with_the_spacing_in_them_are_taken_as_given():
    """Devito scales user weights by h**-order only when they are all numbers; weights that
    hold the spacing (``w / x.spacing**2``, the DRP tutorial's) are the coefficients: the two
    spellings give one stencil, and the compiled second derivative of x**2 is 2 either way
    (it was off by 1/h**2 with the spacing in the weights)."""
    grid = Grid(shape=(21, 21), extent=(200.0, 200.0), dtype=np.float64)
    x, _ = grid.dimensions
    u = Function(name="u", grid=grid, space_order=4)
    w = np.array([R(-1, 12), R(4, 3), R(-5, 2), R(4, 3), R(-1, 12)])
    plain_w, scaled = u.dx2(weights=list(w)), u.dx2(weights=list(w / x.spacing ** 2))
    assert sp.simplify(plain(evaluate(plain_w) - evaluate(scaled))) == 0
    u.data[:] = (np.arange(21) * 10.0)[:, None] ** 2
    for d in (plain_w, scaled):
        f = Function(name="f", grid=grid, space_order=4)
        Operator(Eq(f, d), backend="c").apply()
        np.testing.assert_allclose(f.data[2:-2, 2:-2], 2.0, rtol=1e-12)


def test_rotated_derivative_weights():
    """dx45: the mean over the grid's diagonals of the centred difference along each, signed
    by the diagonal's direction along x, over h_x."""
    _, u = _grid2(2)
    _same(_stencil(evaluate(u.dx45), "u"),
          {(1, 1): .25, (-1, -1): -.25, (1, -1): .25, (-1, 1): -.25})
    _same(_stencil(evaluate(u.dy45), "u"),
          {(1, 1): .25, (-1, -1): -.25, (1, -1): -.25, (-1, 1): .25})


# -- the transpose ----------------------------------------------------------------------------

def test_transpose_of_centred_and_staggered_first_derivatives_is_minus():
    _, u = _grid2(4)
    x, _ = u.grid.dimensions
    h = x.spacing
    assert sp.expand(plain(evaluate(u.dxc.T) + evaluate(u.dxc))) == 0
    assert sp.expand(plain(evaluate(u.dx(x0=x + h / 2).T) + evaluate(u.dx(x0=x - h / 2)))) == 0
    assert sp.expand(plain(evaluate(u.dx2.T) - evaluate(u.dx2))) == 0
    assert u.dx.T.T == u.dx


def test_adjoint_identity_compiled():
    """<D u, v> = <u, D.T v> for u, v vanishing near the boundary, every D at once in one C
    operator: centred, left, right, staggered, custom weights, third derivative. The fields
    have space order 6 (a halo of 3) for the one-sided stencils of order 4, which read 3
    nodes away."""
    n, so = 41, 6
    grid = Grid(shape=(n,), extent=(1.0,), dtype=np.float64)
    x, = grid.dimensions
    u = Function(name="u", grid=grid, space_order=so)
    v = Function(name="v", grid=grid, space_order=so)
    rng = np.random.default_rng(7)
    for f in (u, v):
        f.data[:] = 0.0
        f.data[2 * so:-2 * so] = rng.standard_normal(n - 4 * so)
    ops = {"c": lambda f: f.dx, "l": lambda f: f.dxl(fd_order=4), "r": lambda f: f.dxr(fd_order=4),
           "s": lambda f: f.dx(x0=x + x.spacing / 2), "w": lambda f: f.dx(weights=[1, -8, 0, 8, -1]),
           "3": lambda f: f.dx3}
    outs, eqs = {}, []
    for key, d in ops.items():
        du = Function(name=f"du{key}", grid=grid, space_order=so)
        dtv = Function(name=f"dtv{key}", grid=grid, space_order=so)
        outs[key] = (du, dtv)
        eqs += [Eq(du, d(u)), Eq(dtv, d(v).T)]
    Operator(eqs, name="adjoint_ids", backend="c").apply()
    for key, (du, dtv) in outs.items():
        lhs, rhs = float(np.dot(du.data, v.data)), float(np.dot(u.data, dtv.data))
        assert abs(lhs) > 1e-3, key
        assert lhs == pytest.approx(rhs, rel=1e-12), key


# -- accuracy of the compiled code ------------------------------------------------------------

def _observed_order(build, exact, ns, dims=1, so=6):
    """Slope of log(max error) against log(h) over the grids ``ns`` (errors in [0.3, 0.7])."""
    errors = []
    for n in ns:
        grid = Grid(shape=(n + 1,) * dims, extent=(1.0,) * dims, dtype=np.float64)
        u = Function(name="u", grid=grid, space_order=so)
        out = Function(name="out", grid=grid, space_order=so)
        xs = np.meshgrid(*[np.linspace(0.0, 1.0, n + 1)] * dims, indexing="ij")
        u.data[:] = np.sin(2 * np.pi * xs[0] + 0.3) * np.cos(np.pi * xs[-1] - 0.2 * dims)
        Operator([Eq(out, build(u))], name="order_" + build.__name__, backend="c").apply()
        mask = np.all([(c > 0.3 - 1e-12) & (c < 0.7 + 1e-12) for c in xs], axis=0)
        errors.append(np.abs(out.data[mask] - exact(*xs)[mask]).max())
    assert np.all(np.diff(errors) < 0), errors
    return -np.polyfit(np.log(ns), np.log(errors), 1)[0]


def _fx(x, k=1):
    """The k-th x derivative of sin(2 pi x + 0.3) cos(pi x - 0.2) (1D test field)."""
    X = sp.Symbol("X")
    return sp.lambdify(X, sp.diff(sp.sin(2 * sp.pi * X + 0.3) * sp.cos(sp.pi * X - 0.2), X, k))(x)


def dxl(u):
    return u.dxl(fd_order=4)


def dxr(u):
    return u.dxr(fd_order=4)


def dx3(u):
    return u.dx3(fd_order=4)


def dx45(u):
    return u.dx45


@pytest.mark.parametrize("build, formal, k", [(dxl, 4, 1), (dxr, 4, 1), (dx3, 2, 3)])
def test_convergence_order(build, formal, k):
    p = _observed_order(build, lambda x: _fx(x, k), (16, 32, 64))
    assert abs(p - formal) < 0.3, p


def test_rotated_derivative_converges():
    X, Y = sp.symbols("X Y")
    f = sp.sin(2 * sp.pi * X + 0.3) * sp.cos(sp.pi * Y - 0.4)
    exact = sp.lambdify((X, Y), sp.diff(f, X))
    p = _observed_order(dx45, exact, (16, 32, 64), dims=2, so=4)
    assert abs(p - 4) < 0.3, p


# -- errors -----------------------------------------------------------------------------------

def test_devito_names_we_cannot_offer_raise_our_error():
    grid, u = _grid2(4)
    cases = {"dz": "no dimension 'z'", "dzl": "no dimension 'z'", "dx5": "Derivative(u, (x, 5)",
             "dxdydz": "no dimension 'z'", "dx6": "space_order"}
    for name, words in cases.items():
        with pytest.raises(UnsupportedDerivative) as info:
            getattr(u, name)
        assert words in str(info.value) and "Did you mean" not in str(info.value)
        assert not hasattr(u, name)
    v = TimeFunction(name="v", grid=grid, space_order=2, time_order=1)
    with pytest.raises(UnsupportedDerivative, match="time derivatives go up to order 1"):
        v.dt2dx
    with pytest.raises(UnsupportedDerivative, match=r"-u.dx45"):
        u.dx45.T
    line = Function(name="w", grid=Grid(shape=(5,)), space_order=2)
    with pytest.raises(UnsupportedDerivative, match="needs a grid of 2 or 3"):
        line.dx45


def test_other_names_stay_plain_attribute_errors():
    _, u = _grid2(4)
    for name in ("dx1", "dydx", "dxx", "foo", "d", "_eval_foo"):
        with pytest.raises(AttributeError) as info:
            getattr(u + 1, name)
        assert not isinstance(info.value, UnsupportedDerivative), name


def test_bad_side_and_weights_are_invalid_arguments():
    _, u = _grid2(4)
    x, y = u.grid.dimensions
    with pytest.raises(InvalidArgument, match="first derivatives only"):
        Derivative(u, (x, 2), side=left)
    with pytest.raises(InvalidArgument, match="not a side"):
        Derivative(u, x, side="up")
    with pytest.raises(InvalidArgument, match="odd number"):
        u.dx(weights=[1, -1])
    with pytest.raises(InvalidArgument, match="even number"):
        u.dx(x0=x + x.spacing / 2, weights=[1, 0, -1])
    with pytest.raises(InvalidArgument, match="at least 3"):
        u.dx2(weights=[1])
    cross = Derivative(u, x, y, side=right)   # Devito's: the side of every dimension
    assert cross.side == "right" and cross.expr.side == "right" and cross.expr.cross
    with pytest.raises(InvalidArgument, match="one dimension"):
        Derivative(u, x, y, weights=[1, 0, -1])
    with pytest.raises(InvalidArgument, match=r"fd_order=2 for the cross derivative along x, "
                                              r"y: give one order a dimension"):
        u.dxdy(fd_order=2)


# -- Devito's own numbers -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def devito():
    return pytest.importorskip("devito", reason="Devito is not installed: the comparison with "
                                                "Devito's own stencils needs it (CI has none)")


def _pairs(dv):
    """(stencilgen expression, Devito expression) for the same spelling on both."""
    dgrid = dv.Grid(shape=(11, 11), extent=(1.0, 1.0))
    sgrid = Grid(shape=(11, 11), extent=(1.0, 1.0))
    dx_, dy_ = dgrid.dimensions
    sx, sy = sgrid.dimensions
    du = dv.Function(name="u", grid=dgrid, space_order=4)
    su = Function(name="u", grid=sgrid, space_order=4)
    dtf = dv.TimeFunction(name="v", grid=dgrid, space_order=2, time_order=2)
    stf = TimeFunction(name="v", grid=sgrid, space_order=2, time_order=2)
    w = [0.1, -0.7, 0.0, 0.7, -0.1]
    pairs = [(getattr(su, n), getattr(du, n), "u") for n in
             ("dxl", "dxr", "dxc", "dyl", "dyr", "dx3", "dx4", "dxdy", "dx2dy3", "dx45", "dy45")]
    pairs += [(getattr(stf, n), getattr(dtf, n), "v") for n in ("dtl", "dtr", "dtc", "dtdx")]
    pairs += [
        (su.dx.T, du.dx.T, "u"), (su.dxl.T, du.dxl.T, "u"), (su.dx2.T, du.dx2.T, "u"),
        (su.dx(x0=sx + sx.spacing / 2).T, du.dx(x0=dx_ + dx_.spacing / 2).T, "u"),
        (su.dx(weights=w), du.dx(weights=w), "u"),
        (Derivative(su, sy, weights=w), dv.Derivative(du, dy_, weights=w), "u"),
        (first_derivative(su, dim=sx, side=left, fd_order=2),
         dv.first_derivative(du, dim=dx_, side=dv.left, fd_order=2), "u"),
        (first_derivative(su * su, dim=sy, side=right, fd_order=4),
         dv.first_derivative(du * du, dim=dy_, side=dv.right, fd_order=4), "u"),
        (Derivative(su, (sx, 3), fd_order=4, x0=sx + sx.spacing / 2),
         dv.Derivative(du, (dx_, 3), fd_order=4, x0=dx_ + dx_.spacing / 2), "u"),
        (Derivative(su, (sx, 2), fd_order=4, x0=sx + sx.spacing / 2),
         dv.Derivative(du, (dx_, 2), fd_order=4, x0=dx_ + dx_.spacing / 2), "u"),
        # odd orders, and weights that hold the spacing (taken as given)
        (su.dx(fd_order=1), du.dx(fd_order=1), "u"), (su.dx(fd_order=3), du.dx(fd_order=3), "u"),
        (su.dx2(fd_order=3), du.dx2(fd_order=3), "u"),
        (su.dxr(fd_order=3), du.dxr(fd_order=3), "u"),
        (su.dx(x0=sx + sx.spacing / 2, fd_order=3),
         du.dx(x0=dx_ + dx_.spacing / 2, fd_order=3), "u"),
        (su.dx2(weights=[R(-1, 12) / sx.spacing ** 2, R(4, 3) / sx.spacing ** 2,
                         R(-5, 2) / sx.spacing ** 2, R(4, 3) / sx.spacing ** 2,
                         R(-1, 12) / sx.spacing ** 2]),
         du.dx2(weights=[R(-1, 12) / dx_.spacing ** 2, R(4, 3) / dx_.spacing ** 2,
                         R(-5, 2) / dx_.spacing ** 2, R(4, 3) / dx_.spacing ** 2,
                         R(-1, 12) / dx_.spacing ** 2]), "u"),
    ]
    return pairs


def test_stencils_equal_devitos(devito):
    for ours, theirs, fname in _pairs(devito):
        _same(_stencil(evaluate(ours), fname), _stencil(theirs.evaluate, fname))


def test_every_devito_shorthand_works_or_says_why(devito):
    """Each shorthand Devito offers on a 3D TimeFunction exists here too, or raises our error."""
    dgrid = devito.Grid(shape=(5, 5, 5))
    names = sorted(devito.TimeFunction(name="v", grid=dgrid, space_order=4, time_order=2)._fd)
    v = TimeFunction(name="v", grid=Grid(shape=(5, 5, 5)), space_order=4, time_order=2)
    missing = []
    for name in names:
        try:
            getattr(v, name)
        except UnsupportedDerivative:
            missing.append(name)
    assert missing == [], missing


def test_derivatives_print_and_answer_sympys_questions():
    """A notebook prints an Eq (the CFD tutorials do): sympy's pprint and latex show
    ``lhs = rhs`` with derivatives as partial fractions, and a Derivative answers sympy's
    ``expr``, ``variables``, ``variable_count`` and ``derivative_count``."""
    grid = Grid(shape=(5, 5))
    x, y = grid.dimensions
    u = TimeFunction(name="u", grid=grid, space_order=2)
    d = u.dx2
    assert d.expr == u and d.variables == (x, x) and d.variable_count == ((x, 2),)
    assert d.derivative_count == 2 and u.dxdy.expr.variables == (x,)
    eq = Eq(u.dt, u.laplace + (u + 1).dx)
    tex = sp.latex(eq)
    assert " = " in tex and r"\frac{\partial}{\partial t}" in tex
    assert r"\frac{\partial^{2}}{\partial x^{2}}" in tex and r"\left(" in tex
    assert eq._repr_latex_() == f"$\\displaystyle {tex}$"
    art = sp.pretty(eq, use_unicode=True)
    assert "=" in art and "dt" in art and "Derivative" not in art


def test_derivative_arguments_give_devitos_numbers():
    """tests/reference/derivative_arguments_program.py under Devito 4.8.23 (stored) and
    stencilgen: cross derivatives with an order per dimension, a side or an x0 (every
    dimension of the cross derivative takes them), of a function staggered along x (taken
    where the equation's left-hand side sits, every dimension), nested ones (the inner where
    the function's values sit), rotated ones of a node function: float32 round-off apart."""
    assert_matches_devito("derivative_arguments_program")


def test_x0_reads_back_as_devitos_dict():
    """``.x0``: the points given by dimension, a cross derivative's every dimension's; {} where
    none was given (Devito 4.8.23's frozendicts compare equal)."""
    _, u = _grid2(4)
    x, y = u.grid.dimensions
    hx, hy = x.spacing, y.spacing
    assert u.dx.x0 == {} and u.dxdy.x0 == {}
    assert u.dx(x0=x + hx / 2).x0 == {x: x + hx / 2}
    assert u.dxdy(x0={x: x + hx / 2, y: y - hy / 2}).x0 == {x: x + hx / 2, y: y - hy / 2}
    assert Derivative(u, x, y, x0={y: y + hy / 2}).x0 == {y: y + hy / 2}
    assert u.dx.dy(x0=y + hy / 2).x0 == {y: y + hy / 2}   # nested: the outer's own only


def test_time_derivative_x0_in_either_time_dimension():
    """``u.dt(x0=time - dt/2)`` (Devito's self-adjoint example) is ``u.dt(x0=t - dt/2)``:
    the stepping dimension's x0 given in the time dimension it steps."""
    grid = Grid(shape=(6, 6), extent=(1.0, 1.0), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=2)
    t, time = grid.stepping_dim, grid.time_dim
    a = u.dt(x0=time - time.spacing / 2)
    b = u.dt(x0=t - t.spacing / 2)
    assert a == b and a.x0 == {t: t - t.spacing / 2}
    assert evaluate(a) == evaluate(b) != evaluate(u.dt)


def test_zero_order_derivatives():
    """Order 0 is the expression itself (Devito's, tests/reference); at an x0 it is Devito's
    interpolation there, Fornberg's weights of order 0 on fd_order nodes (Devito's
    test_zero_fd_interp, test_zero_spec); an x0 along a dimension a derivative does not take
    interpolates its operand there first, on two nodes (the cases' numbers are Devito's in
    tests/reference/derivative_arguments_program.py)."""
    _, u = _grid2(4)
    x, y = u.grid.dimensions
    hx, hy = x.spacing, y.spacing
    assert Derivative(u, (x, 0)) == u
    assert evaluate(Derivative(u, (x, 0), (y, 1))) == evaluate(Derivative(u, y))
    at = Derivative(u, (x, 0), x0={x: x + hx / 2})
    want = (-u.subs(x, x - hx) + 9 * u + 9 * u.subs(x, x + hx) - u.subs(x, x + 2 * hx)) / 16
    assert sp.simplify(plain(evaluate(at)) - plain(want)) == 0
    f = Function(name="f", grid=u.grid, space_order=2)
    mean = (f + f.subs(y, y + hy)) / 2
    spec = Derivative(f, (x, 2), (y, 0))(x0={y: y + hy / 2})
    assert sp.simplify(plain(evaluate(mean.dx2)) - plain(evaluate(spec))) == 0
    assert spec.x0 == {y: y + hy / 2} and f.dx(x0={y: y + hy / 2}).x0 == {y: y + hy / 2}


def test_devitos_cross_derivative_identities():
    """Devito's test_issue_2442 and test_cross_newnest: a centred cross derivative is the
    centred derivatives nested, and u.dxdy - u.dx.dy evaluates to zero on a node function."""
    grid = Grid(shape=(11, 11))
    f = Function(name="f", grid=grid, space_order=2)
    assert f.dxdy(side=centered).evaluate == f.dxc.dyc.evaluate
    assert sp.simplify((f.dxdy - f.dx.dy).evaluate) == 0

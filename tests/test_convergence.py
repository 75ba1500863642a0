"""Observed orders of accuracy: every derivative kind, and the wave equation against analytic
standing waves.

Each test runs the compiled operator on a sequence of refined float64 grids, measures the
maximum error against the exact answer where the zero halo cannot reach, fits the log-log
slope error ~ C h**p and compares p with the formal order. Grid ladders are chosen so that the
finest error stays far above round-off (> 1e-10) and the coarsest is already in the asymptotic
regime; the helper also checks that the errors fall monotonically, so a lucky slope through
noisy data cannot pass.

Why |observed - formal| <= 0.3 and not a one-sided bound: for the smooth, non-symmetric fields
used here (phase-shifted sin/cos products) the leading error term C h**p f^(p+k) is non-zero
at the sample points, so no super-convergence is expected in any of these cases, and a slope
well above the formal order would itself signal a bug (e.g. a stencil evaluated at the wrong
point and compared against a wrong "exact" value that happens to match better).
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve

TOL = 0.3
X, Y = sp.symbols("X Y", real=True)

# A smooth, non-symmetric test field in 1D, and one in 2D.
F1 = sp.sin(2 * sp.pi * X + sp.Rational(3, 10)) * sp.cos(sp.pi * X)
F2 = sp.sin(2 * sp.pi * X + sp.Rational(3, 10)) * sp.cos(3 * sp.pi * Y - sp.Rational(1, 2))
# A smooth, strictly positive coefficient for the variable-coefficient operator.
B1 = 1 + sp.Rational(1, 2) * sp.sin(3 * sp.pi * X + 1)


def _num(expr, *syms):
    return sp.lambdify(syms, expr, "numpy")


def _order(ns, errors):
    """Observed order: minus the least-squares slope of log(error) against log(h) (h = 1/n)."""
    hs = 1.0 / np.asarray(ns, dtype=float)
    return float(np.polyfit(np.log(hs), np.log(errors), 1)[0])


def _check_order(label, ns, errors, formal, tol=TOL):
    errors = np.asarray(errors)
    table = ", ".join(f"n={n}: {e:.3e}" for n, e in zip(ns, errors))
    assert np.all(np.isfinite(errors)), f"{label}: non-finite error ({table})"
    assert np.all(errors > 1e-11), f"{label}: error near round-off, ladder badly chosen ({table})"
    assert np.all(np.diff(errors) < 0), f"{label}: error does not decrease ({table})"
    p = _order(ns, errors)
    assert abs(p - formal) <= tol, (f"{label}: observed order {p:.3f}, formal {formal} "
                                    f"(errors {table})")
    print(f"{label}: observed order {p:.3f} ({table})")   # shown with pytest -s
    return p


def _interior(xs, reach, h):
    """Nodes whose stencil (reach nodes either side) stays inside [0, 1], with margin: and at
    a fixed physical window [0.3, 0.7], the same for every grid of a ladder."""
    assert reach * h < 0.3, "coarsest grid too coarse: the stencil would touch the halo"
    return (xs > 0.3 - 1e-12) & (xs < 0.7 + 1e-12)


def _centred_dx(e, d, so):
    """The centred first derivative at space order ``so``: ``e.diff(d)``, written out at space
    order 2 (the mean of the two staggered differences), where Devito's default, and so
    stencilgen's, is the forward difference (order 1, tests/test_defaults.py)."""
    if so != 2:
        return e.diff(d)
    h = d.spacing
    return (e.diff(d, x0=d + h / 2) + e.diff(d, x0=d - h / 2)) / 2


def _grid1(n, so):
    grid = Grid(shape=(n + 1,), extent=(1.0,), dtype=np.float64)
    u = Function(name="u", grid=grid, space_order=so)
    out = Function(name="out", grid=grid, space_order=so)
    return grid, u, out, np.linspace(0.0, 1.0, n + 1)


# Ladders per space order: the finest error of the highest order stays ~1e-8 (round-off of a
# derivative on these grids is ~1e-13), the coarsest is already asymptotic.
LADDER = {2: (32, 64, 128, 256), 4: (16, 32, 64, 128), 8: (16, 24, 32, 48)}


# -- first and second derivatives, centred and staggered -------------------------------------

@pytest.mark.parametrize("so", [2, 4, 8])
@pytest.mark.parametrize("kind", ["dx", "dx2", "dx_staggered"])
def test_derivative_order(kind, so):
    f = _num(F1, X)
    exact = {"dx": _num(sp.diff(F1, X), X), "dx2": _num(sp.diff(F1, X, 2), X),
             "dx_staggered": _num(sp.diff(F1, X), X)}[kind]
    errors = []
    for n in LADDER[so]:
        grid, u, out, xs = _grid1(n, so)
        x, = grid.dimensions
        h = 1.0 / n
        u.data[:] = f(xs)
        if kind == "dx":
            expr, where = _centred_dx(u, x, so), xs
        elif kind == "dx2":
            expr, where = u.dx2, xs
        else:
            # the forward-staggered derivative: its value at x + h/2 is stored at node x
            expr, where = u.dx(x0=x + x.spacing / 2), xs + h / 2
        Operator([Eq(out, expr)], name=f"conv_{kind}").apply()
        mask = _interior(xs, so // 2, h)
        errors.append(np.abs(out.data[mask] - exact(where[mask])).max())
    _check_order(f"{kind} so={so}", LADDER[so], errors, so)


@pytest.mark.parametrize("so", [2, 4])
def test_cross_derivative_order(so):
    f = _num(F2, X, Y)
    exact = _num(sp.diff(F2, X, Y), X, Y)
    ns = LADDER[so]
    errors = []
    for n in ns:
        grid = Grid(shape=(n + 1, n + 1), extent=(1.0, 1.0), dtype=np.float64)
        u = Function(name="u", grid=grid, space_order=so)
        out = Function(name="out", grid=grid, space_order=so)
        xs = np.linspace(0.0, 1.0, n + 1)
        xx, yy = np.meshgrid(xs, xs, indexing="ij")
        u.data[:] = f(xx, yy)
        x, y = grid.dimensions
        Operator([Eq(out, _centred_dx(_centred_dx(u, x, so), y, so))], name="conv_dxdy").apply()
        m = _interior(xs, so // 2, 1.0 / n)
        errors.append(np.abs(out.data[np.ix_(m, m)] - exact(xx, yy)[np.ix_(m, m)]).max())
    _check_order(f"dx.dy so={so}", ns, errors, so)


# -- derivative of an expression: D-( b * D+ u ) -----------------------------------------------
#
# (b * u.dx(x0=x + h/2)).dx(x0=x - h/2) multiplies b sampled at the *node* x_i by the staggered
# derivative of u at x_i + h/2, then differences that product back to x_i. Call the product at
# node j  T_j = b(x_j) * (u'(x_j + h/2) + O(h^p)). As a function of the node position,
# T(x_j) = Phi(x_j + h/2) with Phi(xi) = b(xi - h/2) * u'(xi), so the outer derivative at
# x_i - h/2 approximates Phi'(x_i) to order p:
#     result_i = d/dxi [ b(xi - h/2) u'(xi) ] at xi = x_i  + O(h^p)                         (*)
# Against the physical (b u')' the difference is Phi'(x_i) - (b u')'(x_i)
#     = -(h/2) (b' u')'(x_i) + O(h^2),
# a first-order error whenever b is not constant (b is not interpolated to the midpoint).
# Hence three checks:
#   constant b    -> b u'' at order p;
#   smooth b      -> (b u')' at order >= 1 (only 1 is expected, see above);
#   smooth b      -> the shifted-coefficient analogue (*) at order p: this pins down that the
#                    operator is exactly "b at the node, u' at the midpoint", to full order.
# The nested stencil reaches p - 1 nodes each side (inner -(p/2-1)..p/2, outer -p/2..p/2-1).

EXPR_LADDER = {2: (32, 64, 128, 256), 4: (32, 64, 128, 256), 8: (32, 48, 64, 96)}


def _expr_errors(so, b_expr, target):
    """Max interior errors of D-(b D+ u) on the ladder against target(xs, h)."""
    f = _num(F1, X)
    b = _num(b_expr + 0 * X, X)
    errors = []
    for n in EXPR_LADDER[so]:
        grid, u, out, xs = _grid1(n, so)
        x, = grid.dimensions
        h = 1.0 / n
        bf = Function(name="b", grid=grid, space_order=so)
        u.data[:] = f(xs)
        bf.data[:] = b(xs)
        expr = (bf * u.dx(x0=x + x.spacing / 2)).dx(x0=x - x.spacing / 2)
        Operator([Eq(out, expr)], name="conv_divgrad").apply()
        mask = _interior(xs, so - 1, h)
        errors.append(np.abs(out.data[mask] - target(xs[mask], h)).max())
    return errors


@pytest.mark.parametrize("so", [2, 4, 8])
def test_expression_derivative_constant_coefficient(so):
    b0 = sp.Rational(17, 10)
    exact = _num(b0 * sp.diff(F1, X, 2), X)
    errors = _expr_errors(so, b0, lambda xs, h: exact(xs))
    _check_order(f"D-(b D+u), constant b, so={so}", EXPR_LADDER[so], errors, so)


@pytest.mark.parametrize("so", [2, 4, 8])
def test_expression_derivative_smooth_coefficient_shifted_analogue(so):
    H = sp.Symbol("H", positive=True)
    phi = B1.subs(X, X - H / 2) * sp.diff(F1, X)        # Phi(xi) = b(xi - h/2) u'(xi)
    exact = _num(sp.diff(phi, X), X, H)
    errors = _expr_errors(so, B1, exact)
    _check_order(f"D-(b D+u) vs d/dx[b(x-h/2) u'], so={so}", EXPR_LADDER[so], errors, so)


@pytest.mark.parametrize("so", [2, 4, 8])
def test_expression_derivative_smooth_coefficient_physical(so):
    exact = _num(sp.diff(B1 * sp.diff(F1, X), X), X)
    ns = EXPR_LADDER[so]
    errors = np.asarray(_expr_errors(so, B1, lambda xs, h: exact(xs)))
    assert np.all(np.diff(errors) < 0), errors
    p = _order(ns, errors)
    # consistent, at least first order; b at the node instead of the midpoint costs the rest
    assert p >= 1 - TOL, f"D-(b D+u) vs (b u')', so={so}: observed order {p:.3f} < 1 ({errors})"


# -- the wave equation against analytic standing waves -------------------------------------------
#
# u_tt = c^2 laplace(u), written m u_tt - laplace(u) = 0 with m = 1/c^2, exact solution
#     u = prod_d sin(pi k_d x_d) * cos(omega t),  omega = c pi |k|,   on [0, 1]^dim.
# The sine vanishes at the boundary nodes, but the zero halo is not the odd extension that a
# Dirichlet boundary needs: boundary node 0 reads u_{-1} = 0 instead of -u_1, so after one step
# u_0 = (c dt/h)^2 u_1 != 0 (test_zero_halo_is_not_dirichlet shows it). That error then travels
# inwards at most so/2 nodes per step, so after N steps nodes with index in
# [N so/2, n - N so/2] still hold the free-space discrete solution, and only those are compared.
# With dt = h/2 (c = 1) and N = n/4 steps the window is the fixed physical region [1/4, 3/4] and
# the final time T = 1/8 is the same on every grid.

C = 1.0
CFL = 0.5          # c dt / h; stable for the 2nd-order Laplacian in 3D (limit 1/sqrt(3))


def _standing_wave(dim, so, n, ks):
    grid = Grid(shape=(n + 1,) * dim, extent=(1.0,) * dim, dtype=np.float64)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=so)
    m = Function(name="m", grid=grid, space_order=so)
    m.data[:] = 1.0 / C ** 2
    coords = np.meshgrid(*[np.linspace(0.0, 1.0, n + 1)] * dim, indexing="ij")
    shape = np.ones_like(coords[0])
    for k, xc in zip(ks, coords):
        shape = shape * np.sin(np.pi * k * xc)
    omega = C * np.pi * float(np.sqrt(sum(k * k for k in ks)))
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))], name=f"wave{dim}d")
    return u, shape, omega, op


def _wave_error_interior(dim, n, ks):
    so = 2
    h = 1.0 / n
    dt = CFL * h / C
    steps = n // 4                                   # final time = steps * dt = 1/8
    assert steps * 4 == n
    u, shape, omega, op = _standing_wave(dim, so, n, ks)
    u.data[0] = shape
    u.data[1] = shape * np.cos(omega * dt)
    op.apply(time_m=1, time_M=steps - 1, dt=dt)      # computes t = 2 dt .. steps * dt
    numeric = u.data[steps % 3]
    exact = shape * np.cos(omega * steps * dt)
    reach = steps * so // 2                          # nodes the boundary error can have reached
    window = (slice(reach, n + 1 - reach),) * dim
    assert numeric[window].size > 0
    # Relative to the largest |u(x, 0)| in the window: the error of a single mode is the mode
    # shape times a scalar, so this takes out how well each grid's nodes sample its peaks.
    err = np.abs(numeric[window] - exact[window]).max() / np.abs(shape[window]).max()
    return err, numeric, shape, window, steps


@pytest.mark.parametrize("dim, ns, ks", [
    (1, (40, 80, 160, 320), (3,)),
    (2, (24, 48, 96, 192), (2, 3)),
    # 3D: the O(h^3) start-up term (u(dt) exact, not the discrete mode) has the opposite sign
    # of the O(h^2) phase error and lowers coarse-grid slopes (16..40 gives 1.81, as the
    # dispersion relation below predicts to 4 digits), so the 3D ladder starts at 24.
    (3, (24, 32, 48, 64), (1, 2, 2)),
])
def test_wave_equation_standing_wave_order2(dim, ns, ks):
    errors = [_wave_error_interior(dim, n, ks)[0] for n in ns]
    _check_order(f"wave {dim}D so=2, dt=h/2", ns, errors, 2)


def _discrete_amplitude(ks, h, dt, steps, lap_weights):
    """The amplitude after ``steps`` leapfrog steps of the mode prod sin(pi k x) in the discrete
    scheme, started from the exact u(0), u(dt). The mode is an eigenfunction of the discrete
    Laplacian with eigenvalue -s, s = -sum_d (w_0 + 2 sum_j w_j cos(j pi k_d h)) / h^2, so
    u^n = shape * (cos(W n) + B sin(W n)) with cos(W) = 1 - (c dt)^2 s / 2."""
    w0, rest = lap_weights[0], lap_weights[1:]
    s = -sum(w0 + 2 * sum(w * np.cos((j + 1) * np.pi * k * h) for j, w in enumerate(rest))
             for k in ks) / h ** 2
    W = np.arccos(1 - (C * dt) ** 2 * s / 2)
    omega = C * np.pi * np.sqrt(sum(k * k for k in ks))
    B = (np.cos(omega * dt) - np.cos(W)) / np.sin(W)
    return np.cos(W * steps) + B * np.sin(W * steps)


@pytest.mark.parametrize("dim, n, ks", [(1, 80, (3,)), (2, 48, (2, 3)), (3, 32, (1, 2, 2))])
def test_wave_equation_matches_discrete_dispersion(dim, n, ks):
    """Sharper than an order: in the clean window the computed field must be the discrete
    scheme's own standing wave (its dispersion relation, from the weights 1, -2, 1) to
    round-off, i.e. the operator is exactly leapfrog + 3-point Laplacian with c^2 = 1/m."""
    err, numeric, shape, window, steps = _wave_error_interior(dim, n, ks)
    h = 1.0 / n
    amp = _discrete_amplitude(ks, h, CFL * h / C, steps, (-2.0, 1.0))
    diff = np.abs(numeric[window] - amp * shape[window]).max() / np.abs(shape[window]).max()
    assert diff < 1e-12, f"{dim}D: max relative difference from the discrete mode {diff:.2e}"
    assert err > 1e3 * diff      # the analytic error is resolved, not round-off


def test_zero_halo_is_not_dirichlet():
    """One step of the so=2 wave update at boundary node 0: u_{-1} is the zero halo, so
    u_0(2dt) = 2 u_0(dt) - u_0(0) + (c dt/h)^2 (u_1 - 2 u_0 + 0) = (c dt/h)^2 u_1(dt)."""
    n = 40
    h = 1.0 / n
    dt = CFL * h / C
    u, shape, omega, op = _standing_wave(1, 2, n, (3,))
    u.data[0] = shape
    u.data[1] = shape * np.cos(omega * dt)
    op.apply(time_m=1, time_M=1, dt=dt)
    expected = (C * dt / h) ** 2 * u.data[1][1]
    assert u.data[2][0] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert u.data[2][-1] == pytest.approx((C * dt / h) ** 2 * u.data[1][-2], rel=1e-12, abs=1e-15)
    assert abs(expected) > 1e-3            # a real departure from u = 0, not round-off


def _odd_halo(u, H):
    """Write the odd reflection of the domain into the halo of every time slot: the image
    method, which makes the discrete problem exactly Dirichlet (u_{-k} = -u_k)."""
    a = u.data_with_halo
    a[:, :H] = -a[:, 2 * H:H:-1]
    a[:, -H:] = -a[:, -H - 2:-2 * H - 2:-1]


def test_wave_equation_space_order4_with_dt_like_h2():
    """1D, space order 4, dt = h^2/(2 h_0): the time error O(dt^2) = O(h^4) no longer hides the
    fourth-order space error, so the total error falls at order 4 in h. Many small steps would
    let the zero-halo error reach the whole grid, so here the halo is rewritten before every
    step with the odd reflection (one apply per step): the discrete problem is then exactly
    Dirichlet and the error is compared on the whole domain."""
    so, k, T = 4, 3, 0.25
    ns = (16, 32, 64)
    errors = []
    for n in ns:
        h = 1.0 / n
        dt = 0.5 * h * (h * ns[0])
        steps = int(round(T / dt))
        assert abs(steps * dt - T) < 1e-12
        u, shape, omega, op = _standing_wave(1, so, n, (k,))
        u.data[0] = shape
        u.data[1] = shape * np.cos(omega * dt)
        for step in range(1, steps):
            _odd_halo(u, u.halo[1][0])
            op.apply(time_m=step, time_M=step, dt=dt)
        numeric = u.data[steps % 3]
        errors.append(np.abs(numeric - shape * np.cos(omega * T)).max() / np.abs(shape).max())
        # with the odd halo the sine mode is an exact eigenfunction of the discrete Dirichlet
        # problem: the whole domain must follow the discrete dispersion relation (weights of
        # the 5-point Laplacian -5/2, 4/3, -1/12) to round-off
        amp = _discrete_amplitude((k,), h, dt, steps, (-5 / 2, 4 / 3, -1 / 12))
        diff = np.abs(numeric - amp * shape).max() / np.abs(shape).max()
        assert diff < 1e-11, f"n={n}: relative difference from the discrete mode {diff:.2e}"
    _check_order("wave 1D so=4, dt ~ h^2", ns, errors, 4)

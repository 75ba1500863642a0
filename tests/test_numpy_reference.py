"""Compiled operators against an independent NumPy evaluation on random data.

The reference below shares nothing with stencilgen's finite-difference machinery: its weights
come from solving the moment (Taylor) conditions in exact rational arithmetic (checked against
published table rows in ``test_reference_weights``), its stencils are written out here, and
the halo is modelled as what it is, zeros outside the domain (``_shift`` fills with zeros).

Tolerances, relative to the largest |reference| value:
- float64: 1e-12 (round-off of sums of a few dozen terms is ~1e-15);
- float32: ``F32_PER_TERM * number of terms`` of the evaluated sum (about 8 float32 epsilons per
  term: each term rounds its weight, the spacing and the product, and sums cancel).
The failure message reports the observed maximum relative difference.
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial
import zlib

import numpy as np
import pytest

from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve

F64_TOL = 1e-12
F32_PER_TERM = 1e-6
DTYPES = [np.float32, np.float64]

SHAPES = {1: (37,), 2: (23, 19), 3: (17, 15, 13)}
EXTENTS = {1: (1.3,), 2: (1.3, 0.7), 3: (1.3, 0.7, 2.1)}

# The largest relative difference seen per test id, printed at the end with ``pytest -s``.
OBSERVED: dict = {}


# -- independent weights ----------------------------------------------------------------------

def _solve_exact(a, b):
    """Gauss-Jordan elimination on Fractions."""
    n = len(b)
    m = [list(row) + [rhs] for row, rhs in zip(a, b)]
    for col in range(n):
        piv = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[piv] = m[piv], m[col]
        p = m[col][col]
        m[col] = [v / p for v in m[col]]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col]
                m[r] = [vr - f * vc for vr, vc in zip(m[r], m[col])]
    return [row[n] for row in m]


def fd_weights(offsets, x0, deriv):
    """Weights w with sum w_i f(offsets_i) = f^(deriv)(x0) for polynomials of degree
    < len(offsets): the moment conditions sum_i w_i (o_i - x0)^k / k! = delta_{k, deriv}."""
    offs = [Fraction(o) - Fraction(x0) for o in offsets]
    n = len(offs)
    a = [[o ** k / factorial(k) for o in offs] for k in range(n)]
    b = [Fraction(int(k == deriv)) for k in range(n)]
    return _solve_exact(a, b)


def stencil(deriv, order, shift):
    """(integer offsets from the node, weights) of the standard symmetric stencils: centred
    at a node (shift 0) on -order/2..order/2, or the first derivative at a midpoint (shift
    +-1/2) on the order nearest nodes."""
    shift = Fraction(shift)
    half = order // 2
    if shift == 0:
        offsets = list(range(-half, half + 1))
    else:
        assert deriv == 1 and shift.denominator == 2
        lo = shift - Fraction(1, 2) - (half - 1)
        offsets = [int(lo + i) for i in range(order)]
    return offsets, fd_weights(offsets, shift, deriv)


def test_reference_weights():
    """The reference weights reproduce published rows (Fornberg 1988, Table 1; the standard
    staggered-grid coefficients)."""
    F = Fraction
    assert stencil(1, 2, 0)[1] == [F(-1, 2), 0, F(1, 2)]
    assert stencil(1, 4, 0)[1] == [F(1, 12), F(-2, 3), 0, F(2, 3), F(-1, 12)]
    assert stencil(2, 4, 0)[1] == [F(-1, 12), F(4, 3), F(-5, 2), F(4, 3), F(-1, 12)]
    assert stencil(2, 8, 0)[1] == [F(-1, 560), F(8, 315), F(-1, 5), F(8, 5), F(-205, 72),
                                   F(8, 5), F(-1, 5), F(8, 315), F(-1, 560)]
    assert stencil(1, 2, F(1, 2)) == ([0, 1], [-1, 1])
    assert stencil(1, 4, F(1, 2)) == ([-1, 0, 1, 2], [F(1, 24), F(-9, 8), F(9, 8), F(-1, 24)])
    assert stencil(1, 4, F(-1, 2)) == ([-2, -1, 0, 1], [F(1, 24), F(-9, 8), F(9, 8), F(-1, 24)])
    # c_k (f(x + (k - 1/2) h) - f(x - (k - 1/2) h)) with c = 1225/1024, -245/3072, 49/5120,
    # -5/7168: the leftmost node (k = 4, minus sign) first
    assert stencil(1, 8, F(1, 2))[1][:4] == [F(5, 7168), F(-49, 5120), F(245, 3072),
                                             F(-1225, 1024)]


# -- the NumPy reference: arrays on the domain, zeros outside (the halo) ----------------------

def _shift(a, axis, k):
    """b[..., i, ...] = a[..., i + k, ...], zero where i + k falls outside the domain."""
    if k == 0:
        return a
    out = np.zeros_like(a)
    n = a.shape[axis]
    if abs(k) >= n:
        return out
    dst = [slice(None)] * a.ndim
    src = [slice(None)] * a.ndim
    if k > 0:
        dst[axis], src[axis] = slice(0, n - k), slice(k, n)
    else:
        dst[axis], src[axis] = slice(-k, n), slice(0, n + k)
    out[tuple(dst)] = a[tuple(src)]
    return out


def D(a, axis, h, deriv=1, order=2, shift=0):
    """The FD derivative of domain array a (float64) along axis, zero halo; (value, terms)."""
    offsets, weights = stencil(deriv, order, shift)
    out = np.zeros_like(a)
    for o, w in zip(offsets, weights):
        if w != 0:
            out += float(w) * _shift(a, axis, o)
    return out / h ** deriv, sum(1 for w in weights if w != 0)


def _grid(dim, dtype):
    return Grid(shape=SHAPES[dim], extent=EXTENTS[dim], dtype=dtype)


def first(e, d, so):
    """The centred first derivative of ``e`` along ``d`` at space order ``so``: ``e.diff(d)``,
    written out at space order 2 (the mean of the two staggered differences) since there
    Devito's default, and so stencilgen's, is the forward difference."""
    if so != 2:
        return e.diff(d)
    h = d.spacing
    return (e.diff(d, x0=d + h / 2) + e.diff(d, x0=d - h / 2)) / 2


def _random(f, rng, lo=-1.0, hi=1.0):
    f.data[:] = rng.uniform(lo, hi, size=f.data.shape)
    return np.asarray(f.data, dtype=np.float64).copy()


def _compare(label, numeric, reference, dtype, terms):
    numeric = np.asarray(numeric, dtype=np.float64)
    scale = np.abs(reference).max()
    assert scale > 0, f"{label}: degenerate reference"
    diff = np.abs(numeric - reference).max() / scale
    tol = F64_TOL if dtype == np.float64 else F32_PER_TERM * terms
    OBSERVED[(label, np.dtype(dtype).name)] = (diff, tol)
    assert np.all(np.isfinite(numeric)), f"{label}: non-finite values"
    assert diff <= tol, (f"{label}: max relative difference {diff:.3e} from the NumPy "
                         f"reference exceeds {tol:.1e} ({np.dtype(dtype).name}, {terms} terms)")


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if OBSERVED:
        print("\nmax relative difference vs NumPy (dtype, observed, tolerance):")
        for (label, dt), (diff, tol) in sorted(OBSERVED.items()):
            print(f"  {label:40s} {dt:8s} {diff:.2e}  (tol {tol:.0e})")


def _seed(*key):
    """A generator seeded from the test's parameters (stable across runs and processes)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# -- Laplacian: 1D/2D/3D, space orders 2..16 --------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8, 12, 16])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_laplace(dim, so, dtype):
    rng = _seed("laplace", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    out = Function(name="out", grid=grid, space_order=so)
    ud = _random(u, rng)
    Operator([Eq(out, u.laplace)], name="ref_laplace").apply()
    ref, terms = np.zeros_like(ud), 0
    for axis, h in enumerate(grid.spacing):
        val, t = D(ud, axis, h, deriv=2, order=so)
        ref += val
        terms += t
    _compare(f"laplace {dim}D so={so}", out.data, ref, dtype, terms)


# -- first and second derivatives along each axis, cross derivatives ------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
def test_axis_derivatives_3d(so, dtype):
    rng = _seed("axis", so, dtype)
    grid = _grid(3, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    outs = {k: Function(name=k, grid=grid, space_order=so)
            for k in ("fx", "fy", "fz", "fxx", "fyy", "fzz")}
    ud = _random(u, rng)
    x, y, z = grid.dimensions
    Operator([Eq(outs["fx"], first(u, x, so)), Eq(outs["fy"], first(u, y, so)),
              Eq(outs["fz"], first(u, z, so)),
              Eq(outs["fxx"], u.dx2), Eq(outs["fyy"], u.dy2), Eq(outs["fzz"], u.dz2)],
             name="ref_axis").apply()
    hs = grid.spacing
    for name, axis, deriv in (("fx", 0, 1), ("fy", 1, 1), ("fz", 2, 1),
                              ("fxx", 0, 2), ("fyy", 1, 2), ("fzz", 2, 2)):
        ref, terms = D(ud, axis, hs[axis], deriv=deriv, order=so)
        _compare(f"{name} 3D so={so}", outs[name].data, ref, dtype, terms)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
@pytest.mark.parametrize("dim", [1, 2])
def test_axis_derivatives_low_dim(dim, so, dtype):
    rng = _seed("axis-low", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    fx = Function(name="fx", grid=grid, space_order=so)
    fxx = Function(name="fxx", grid=grid, space_order=so)
    ud = _random(u, rng)
    eqs = [Eq(fx, first(u, grid.dimensions[0], so)), Eq(fxx, u.dx2)]
    if dim == 2:
        fy = Function(name="fy", grid=grid, space_order=so)
        eqs.append(Eq(fy, first(u, grid.dimensions[1], so)))
    Operator(eqs, name="ref_axis_low").apply()
    h = grid.spacing
    ref, terms = D(ud, 0, h[0], 1, so)
    _compare(f"fx {dim}D so={so}", fx.data, ref, dtype, terms)
    ref, terms = D(ud, 0, h[0], 2, so)
    _compare(f"fxx {dim}D so={so}", fxx.data, ref, dtype, terms)
    if dim == 2:
        ref, terms = D(ud, 1, h[1], 1, so)
        _compare(f"fy {dim}D so={so}", fy.data, ref, dtype, terms)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
@pytest.mark.parametrize("dim", [2, 3])
def test_cross_derivatives(dim, so, dtype):
    rng = _seed("cross", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    fxy = Function(name="fxy", grid=grid, space_order=so)
    dims = grid.dimensions
    eqs = [Eq(fxy, first(first(u, dims[0], so), dims[1], so))]
    if dim == 3:
        x, y, z = dims
        fyz = Function(name="fyz", grid=grid, space_order=so)
        fzx = Function(name="fzx", grid=grid, space_order=so)
        eqs += [Eq(fyz, first(first(u, y, so), z, so)), Eq(fzx, first(first(u, z, so), x, so))]
    ud = _random(u, rng)
    Operator(eqs, name="ref_cross").apply()
    h = grid.spacing
    pairs = [("fxy", fxy, 0, 1)]
    if dim == 3:
        pairs += [("fyz", fyz, 1, 2), ("fzx", fzx, 2, 0)]
    for name, f, a, b in pairs:
        inner, t1 = D(ud, a, h[a], 1, so)
        ref, t2 = D(inner, b, h[b], 1, so)
        _compare(f"{name} {dim}D so={so}", f.data, ref, dtype, t1 * t2)


# -- staggered first derivatives (x0 = x +- h/2) ------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
def test_staggered_derivatives(so, dtype):
    rng = _seed("stagger", so, dtype)
    grid = _grid(3, dtype)
    x, y, z = grid.dimensions
    u = Function(name="u", grid=grid, space_order=so)
    cases = [("dxp", 0, +1, u.dx(x0=x + x.spacing / 2)),
             ("dxm", 0, -1, u.dx(x0=x - x.spacing / 2)),
             ("dyp", 1, +1, u.dy(x0=y + y.spacing / 2)),
             ("dym", 1, -1, u.dy(x0=y - y.spacing / 2)),
             ("dzp", 2, +1, u.dz(x0=z + z.spacing / 2)),
             ("dzm", 2, -1, u.dz(x0=z - z.spacing / 2))]
    outs = {name: Function(name=name, grid=grid, space_order=so) for name, *_ in cases}
    ud = _random(u, rng)
    Operator([Eq(outs[name], e) for name, _, _, e in cases], name="ref_stagger").apply()
    h = grid.spacing
    for name, axis, sign, _ in cases:
        ref, terms = D(ud, axis, h[axis], 1, so, shift=Fraction(sign, 2))
        _compare(f"{name} 3D so={so}", outs[name].data, ref, dtype, terms)


# -- derivatives of expressions: div(b grad u) on the staggered pair ---------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_expression_derivative(dim, so, dtype):
    """sum_d (b * u.d(x0=d + h/2)).d(x0=d - h/2): b at the node times the forward-staggered
    derivative, differenced back. The reference forms the product T = b * D+u on the domain
    (zeros outside, as b's zero halo makes it), then D-T."""
    rng = _seed("expr", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    b = Function(name="b", grid=grid, space_order=so)
    out = Function(name="out", grid=grid, space_order=so)
    ud = _random(u, rng)
    bd = _random(b, rng, 0.5, 2.0)
    expr = 0
    for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
        term = b * getattr(u, name)(x0=d + d.spacing / 2)
        expr = expr + getattr(term, name)(x0=d - d.spacing / 2)
    Operator([Eq(out, expr)], name="ref_divgrad").apply()
    h = grid.spacing
    ref, terms = np.zeros_like(ud), 0
    for axis in range(dim):
        t, t1 = D(ud, axis, h[axis], 1, so, shift=Fraction(1, 2))
        val, t2 = D(bd * t, axis, h[axis], 1, so, shift=Fraction(-1, 2))
        ref += val
        terms += t1 * t2
    _compare(f"div(b grad u) {dim}D so={so}", out.data, ref, dtype, terms)


# -- time stepping: the acoustic equation with a varying m -------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("dim, so", [(1, 8), (2, 4), (3, 8)])
def test_acoustic_steps(dim, so, dtype):
    rng = _seed("acoustic", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=so)
    m = Function(name="m", grid=grid, space_order=so)
    md = _random(m, rng, 0.3, 1.2)                        # m = 1/c^2 varies in space
    u0 = rng.uniform(-1, 1, size=grid.shape)
    u1 = rng.uniform(-1, 1, size=grid.shape)
    u.data[0] = u0
    u.data[1] = u1
    prev, cur = np.asarray(u.data[0], np.float64).copy(), np.asarray(u.data[1], np.float64).copy()
    dt = 0.2 * min(grid.spacing)
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))], name="ref_acoustic")
    nsteps = 4
    op.apply(time_m=1, time_M=nsteps, dt=dt)              # t = 2 dt .. 5 dt
    h = grid.spacing
    dtc = float(np.asarray(dt, dtype=dtype))
    for _ in range(nsteps):
        lap, terms = np.zeros_like(cur), 0
        for axis in range(dim):
            val, t = D(cur, axis, h[axis], 2, so)
            lap += val
            terms += t
        prev, cur = cur, 2 * cur - prev + dtc ** 2 / md * lap
    _compare(f"acoustic {dim}D so={so}, {nsteps} steps", u.data[(nsteps + 1) % 3], cur, dtype,
             (terms + 3) * nsteps)
    _compare(f"acoustic {dim}D so={so}, previous step", u.data[nsteps % 3], prev, dtype,
             (terms + 3) * nsteps)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 8])
def test_damped_acoustic_steps(so, dtype):
    """m u_tt + eta u_t = laplace(u), u_t centred, (u.forward - u.backward) / (2 dt) (written
    out: Devito's u.dt is the forward difference), so solve divides by m/dt^2 + eta/(2 dt)."""
    rng = _seed("damped", so, dtype)
    grid = _grid(3, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=so)
    m = Function(name="m", grid=grid, space_order=so)
    eta = Function(name="eta", grid=grid, space_order=so)
    md = _random(m, rng, 0.3, 1.2)
    ed = _random(eta, rng, 0.0, 5.0)
    u.data[0] = rng.uniform(-1, 1, size=grid.shape)
    u.data[1] = rng.uniform(-1, 1, size=grid.shape)
    prev, cur = np.asarray(u.data[0], np.float64).copy(), np.asarray(u.data[1], np.float64).copy()
    dt = 0.2 * min(grid.spacing)
    dt_ = grid.stepping_dim.spacing
    pde = m * u.dt2 - u.laplace + eta * (u.forward - u.backward) / (2 * dt_)
    op = Operator([Eq(u.forward, solve(pde, u.forward))], name="ref_damped")
    nsteps = 3
    op.apply(time_m=1, time_M=nsteps, dt=dt)
    h = grid.spacing
    dtc = float(np.asarray(dt, dtype=dtype))
    for _ in range(nsteps):
        lap, terms = np.zeros_like(cur), 0
        for axis in range(3):
            val, t = D(cur, axis, h[axis], 2, so)
            lap += val
            terms += t
        nxt = (lap + md * (2 * cur - prev) / dtc ** 2 + ed * prev / (2 * dtc)) \
            / (md / dtc ** 2 + ed / (2 * dtc))
        prev, cur = cur, nxt
    _compare(f"damped acoustic 3D so={so}", u.data[(nsteps + 1) % 3], cur, dtype,
             (terms + 6) * nsteps)


# -- two coupled TimeFunctions: staggered velocity-pressure ------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
def test_coupled_velocity_pressure(so, dtype):
    """v.forward = v - dt b grad+ p;  p.forward = p - dt k div- v.forward (2D, time_order 1).
    The pressure update reads the new velocities at neighbouring points, so it must see the
    whole updated velocity fields (and their zero halos)."""
    rng = _seed("coupled", so, dtype)
    grid = _grid(2, dtype)
    x, y = grid.dimensions
    p = TimeFunction(name="p", grid=grid, time_order=1, space_order=so)
    vx = TimeFunction(name="vx", grid=grid, time_order=1, space_order=so)
    vy = TimeFunction(name="vy", grid=grid, time_order=1, space_order=so)
    b = Function(name="b", grid=grid, space_order=so)
    k = Function(name="k", grid=grid, space_order=so)
    bd = _random(b, rng, 0.5, 1.5)
    kd = _random(k, rng, 0.5, 1.5)
    for f in (p, vx, vy):
        f.data[0] = rng.uniform(-1, 1, size=grid.shape)
    P, VX, VY = (np.asarray(f.data[0], np.float64).copy() for f in (p, vx, vy))
    dt = 0.1 * min(grid.spacing)
    eqs = [Eq(vx.forward, vx - dt * b * p.dx(x0=x + x.spacing / 2)),
           Eq(vy.forward, vy - dt * b * p.dy(x0=y + y.spacing / 2)),
           Eq(p.forward, p - dt * k * (vx.forward.dx(x0=x - x.spacing / 2)
                                       + vy.forward.dy(x0=y - y.spacing / 2)))]
    nsteps = 3
    Operator(eqs, name="ref_coupled").apply(time_m=0, time_M=nsteps - 1, dt=dt)
    h = grid.spacing
    dtc = float(np.asarray(dt, dtype=dtype))
    half = Fraction(1, 2)
    for _ in range(nsteps):
        gx, t = D(P, 0, h[0], 1, so, shift=half)
        gy, _ = D(P, 1, h[1], 1, so, shift=half)
        VX = VX - dtc * bd * gx
        VY = VY - dtc * bd * gy
        P = P - dtc * kd * (D(VX, 0, h[0], 1, so, shift=-half)[0]
                            + D(VY, 1, h[1], 1, so, shift=-half)[0])
    terms = 4 * t * nsteps
    s = nsteps % 2
    _compare(f"coupled vx so={so}", vx.data[s], VX, dtype, terms)
    _compare(f"coupled vy so={so}", vy.data[s], VY, dtype, terms)
    _compare(f"coupled p so={so}", p.data[s], P, dtype, terms)


# -- a second equation reading the first one's result at neighbouring points -------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4, 8])
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_chained_equations(dim, so, dtype):
    """Eq(v, u.dx) then Eq(w, v.dx) (and v.dy in 2D/3D) in one Operator: the second sees the
    whole updated v, including v's zero halo outside the domain."""
    rng = _seed("chain", dim, so, dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    v = Function(name="v", grid=grid, space_order=so)
    w = Function(name="w", grid=grid, space_order=so)
    ud = _random(u, rng)
    v.data[:] = 123.0                                    # stale values must be overwritten
    x, *rest = grid.dimensions
    second = first(v, x, so) if dim == 1 else first(v, x, so) + first(v, rest[0], so)
    op = Operator([Eq(v, first(u, x, so)), Eq(w, second)], name="ref_chain")
    op.apply()
    h = grid.spacing
    vref, t1 = D(ud, 0, h[0], 1, so)
    wref, t2 = D(vref, 0, h[0], 1, so)
    if dim > 1:
        wref = wref + D(vref, 1, h[1], 1, so)[0]
    _compare(f"chain v {dim}D so={so}", v.data, vref, dtype, t1)
    _compare(f"chain w {dim}D so={so}", w.data, wref, dtype, t1 * t2 * 2)
    # a second run gives the same result (nothing depends on the previous contents)
    op.apply()
    _compare(f"chain w rerun {dim}D so={so}", w.data, wref, dtype, t1 * t2 * 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_chained_equations_read_written_halo(dtype):
    """Outside the domain v is whatever its halo holds: with a halo written by the user the
    second equation reads those values (the operator writes v only on the domain)."""
    so, dim = 4, 2
    rng = _seed("chain-halo", dtype)
    grid = _grid(dim, dtype)
    u = Function(name="u", grid=grid, space_order=so)
    v = Function(name="v", grid=grid, space_order=so)
    w = Function(name="w", grid=grid, space_order=so)
    ud = _random(u, rng)
    v.data_with_halo[:] = rng.uniform(-1, 1, size=v.data_with_halo.shape)
    halo = np.asarray(v.data_with_halo, np.float64).copy()
    Operator([Eq(v, u.dx), Eq(w, v.dx + v.dy)], name="ref_chain_halo").apply()
    h = grid.spacing
    H = v.halo[0][0]
    vref, t1 = D(ud, 0, h[0], 1, so)
    full = halo.copy()
    full[H:-H, H:-H] = vref                               # v: new domain, the user's halo
    wref = np.zeros_like(vref)
    for axis in range(2):
        offsets, weights = stencil(1, so, 0)
        for o, wgt in zip(offsets, weights):
            sl = [slice(H, -H), slice(H, -H)]
            n = full.shape[axis]
            sl[axis] = slice(H + o, n - H + o)
            wref += float(wgt) * full[tuple(sl)] / h[axis]
    assert np.array_equal(np.asarray(v.data_with_halo)[:H], halo[:H]), "v's halo was modified"
    _compare("chain w, written halo", w.data, wref, dtype, t1 * 2 * so)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_equation_reads_old_values_before_they_are_overwritten(dtype):
    """Eq(w, v.dx + v) then Eq(v, u.dy): the first equation sees v as it was on entry (every
    point of it), the second then overwrites v."""
    so = 4
    rng = _seed("anti", dtype)
    grid = _grid(2, dtype)
    u, v, w = (Function(name=n, grid=grid, space_order=so) for n in ("u", "v", "w"))
    ud = _random(u, rng)
    vd = _random(v, rng)
    Operator([Eq(w, v.dx + v), Eq(v, u.dy)], name="ref_anti").apply()
    h = grid.spacing
    ref, terms = D(vd, 0, h[0], 1, so)
    _compare("anti-dependence w", w.data, ref + vd, dtype, terms + 1)
    ref, terms = D(ud, 1, h[1], 1, so)
    _compare("anti-dependence v", v.data, ref, dtype, terms)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("so", [2, 4])
def test_chained_equations_in_time_loop(so, dtype):
    """Inside the time loop: v = q.dx, w = v.dy + q, q.forward = q + dt w.dx. Each equation
    reads the previous one's whole result at neighbouring points, every step."""
    rng = _seed("chain-loop", so, dtype)
    grid = _grid(2, dtype)
    q = TimeFunction(name="q", grid=grid, time_order=1, space_order=so)
    v, w = (Function(name=n, grid=grid, space_order=so) for n in ("v", "w"))
    q.data[0] = rng.uniform(-1, 1, size=grid.shape)
    c = np.asarray(q.data[0], np.float64).copy()
    dt = 0.05 * min(grid.spacing)
    nsteps = 3
    x, y = grid.dimensions
    Operator([Eq(v, first(q, x, so)), Eq(w, first(v, y, so) + q),
              Eq(q.forward, q + dt * first(w, x, so))],
             name="ref_chain_loop").apply(time_m=0, time_M=nsteps - 1, dt=dt)
    h = grid.spacing
    dtc = float(np.asarray(dt, dtype=dtype))
    for _ in range(nsteps):
        vv, t = D(c, 0, h[0], 1, so)
        ww = D(vv, 1, h[1], 1, so)[0] + c
        last_v, last_w = vv, ww
        c = c + dtc * D(ww, 0, h[0], 1, so)[0]
    terms = nsteps * (t ** 3 + 2)
    _compare(f"chain in loop v so={so}", v.data, last_v, dtype, terms)
    _compare(f"chain in loop w so={so}", w.data, last_w, dtype, terms)
    _compare(f"chain in loop q so={so}", q.data[nsteps % 2], c, dtype, terms)

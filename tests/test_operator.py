"""Operator semantics: time stepping as Devito's, overrides, scheduling, hoisting, the code."""
import numpy as np
import pytest
import sympy

from stencilgen import Constant, Eq, Function, Grid, InvalidArgument, Operator, TimeFunction, solve


def test_time_buffer_semantics_match_devito():
    """t = time_m..time_M, each step writes slot (t+1) % 3 from slots t and t-1."""
    grid = Grid(shape=(4, 5))
    u = TimeFunction(name="u", grid=grid, time_order=2)
    u.data[0] = 1.0
    u.data[1] = 2.0
    op = Operator([Eq(u.forward, 2 * u - u.backward + 3)])
    op.apply(time_m=1, time_M=6)
    seq = [1.0, 2.0]
    for _ in range(1, 7):
        seq.append(2 * seq[-1] - seq[-2] + 3)
    assert np.all(u.data[(6 + 1) % 3] == seq[-1])
    assert np.all(u.data[6 % 3] == seq[-2])


def test_saved_time_function_keeps_every_step():
    grid = Grid(shape=(6,))
    u = TimeFunction(name="u", grid=grid, time_order=1, save=8)
    u.data[0] = np.arange(6)
    Operator([Eq(u.forward, u * 2)]).apply()
    for n in range(8):
        np.testing.assert_array_equal(u.data[n], np.arange(6) * 2 ** n)


def test_coupled_fields_and_constant_override():
    grid = Grid(shape=(5, 5))
    p = TimeFunction(name="p", grid=grid)
    q = TimeFunction(name="q", grid=grid)
    c = Constant(name="c", value=0.5)
    p.data[0] = 1.0
    q.data[0] = 0.0
    op = Operator([Eq(p.forward, p - c * q), Eq(q.forward, q + c * p)])
    op.apply(time_M=9)
    pr, qr = 1.0, 0.0
    for _ in range(10):
        pr, qr = pr - 0.5 * qr, qr + 0.5 * pr
    np.testing.assert_allclose(p.data[10 % 2], pr, rtol=1e-6)
    np.testing.assert_allclose(q.data[10 % 2], qr, rtol=1e-6)
    p.data[0] = 1.0
    q.data[0] = 0.0
    op.apply(time_M=0, c=2.0)
    np.testing.assert_allclose(q.data[1], 2.0)


def test_function_override():
    grid = Grid(shape=(6, 6))
    a = Function(name="a", grid=grid)
    b = Function(name="b", grid=grid)
    out = Function(name="out", grid=grid)
    a.data[:] = 1.0
    b.data[:] = 7.0
    op = Operator([Eq(out, a * 2)])
    op.apply(a=b)
    assert np.all(out.data == 14.0)


def test_neighbour_reads_split_loop_nests_and_same_point_reads_fuse():
    grid = Grid(shape=(16,), extent=(1.0,))
    f = Function(name="f", grid=grid, space_order=2)
    v = Function(name="v", grid=grid, space_order=2)
    w = Function(name="w", grid=grid, space_order=2)
    f.data[:] = np.random.default_rng(0).standard_normal(16)
    x, = grid.dimensions
    h_x = x.spacing

    def dx(e):   # the centred difference, written out: Devito's .dx at space order 2 is forward
        return (e.dx(x0=x + h_x / 2) + e.dx(x0=x - h_x / 2)) / 2
    split = Operator([Eq(v, dx(f)), Eq(w, dx(v))])
    fused = Operator([Eq(v, dx(f)), Eq(w, 3 * v)])
    assert len(split.program.kernels) == 2
    assert len(fused.program.kernels) == 1
    split.apply()
    h = grid.spacing[0]
    pad = np.pad(f.data.astype(float), 1)
    dv = (pad[2:] - pad[:-2]) / (2 * h)
    pad = np.pad(dv, 1)
    np.testing.assert_allclose(w.data, (pad[2:] - pad[:-2]) / (2 * h), rtol=2e-5, atol=1e-3)
    fused.apply()
    np.testing.assert_allclose(w.data, 3 * dv, rtol=1e-5, atol=1e-4)


def test_time_invariant_calls_are_hoisted_out_of_the_time_loop():
    grid = Grid(shape=(8, 9))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    theta = Function(name="theta", grid=grid, space_order=2)
    theta.data[:] = np.linspace(0, 1, 72).reshape(8, 9)
    op = Operator([Eq(u.forward, u + sympy.sin(theta) * sympy.cos(theta) + u.dx)])
    step_code = "".join(str(a.rhs) for k in op.program.steps for a in k.body)
    before_code = "".join(str(a.rhs) for k in op.program.before for a in k.body)
    assert "sin" not in step_code and "cos" not in step_code
    assert "sin" in before_code
    op.apply(time_M=0)
    th = theta.data.astype(np.float64)
    pad = np.pad(np.zeros((8, 9)), 1)
    np.testing.assert_allclose(u.data[1], np.sin(th) * np.cos(th) + 0 * pad[1:-1, 1:-1],
                               rtol=1e-6, atol=1e-7)


def test_float32_code_stays_float32_and_float64_uses_double():
    for dtype, bad, good in ((np.float32, "double ", "F*"), (np.float64, "float ", "double")):
        grid = Grid(shape=(8, 8), dtype=dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
        m = Function(name="m", grid=grid)
        op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace + sympy.sqrt(m), u.forward))])
        code = str(op).replace("double *restrict timers", "").replace("const double start", "")
        assert bad not in code
        assert good in code
        if dtype == np.float32:
            assert "sqrtf(" in code and "pow(" not in code


def test_symmetric_weights_are_factorised():
    """A 1D so-8 Laplacian update: 4 symmetric pairs -> about one multiply per pair."""
    grid = Grid(shape=(32,))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    op = Operator([Eq(u.forward, 2 * u - u.backward + u.dx2)])
    # 4 pair sums + 4 pair products + centre + 4 sums + scale + 2 for 2u - u.backward
    assert op.program.steps[0].flops <= 18
    assert op.program.steps[0].bytes == 3 * 4   # three float32 time slots of u


def test_openmp_and_simd_in_the_code():
    grid = Grid(shape=(8, 8, 8))
    u = TimeFunction(name="u", grid=grid, space_order=4)
    code = str(Operator([Eq(u.forward, u + u.laplace)]))
    assert "#pragma omp parallel for collapse(2)" in code
    assert "#pragma omp simd" in code


def test_generated_source_is_identical_across_processes():
    """The cache key is the source text: it must not depend on Python's hash seed."""
    import subprocess
    import sys
    script = (
        "import hashlib, sympy\n"
        "from stencilgen import *\n"
        "g = Grid(shape=(6, 7, 8))\n"
        "x, y, z = g.dimensions\n"
        "u = TimeFunction(name='u', grid=g, time_order=2, space_order=8)\n"
        "a, b, c = [Function(name=n, grid=g, space_order=8) for n in 'abc']\n"
        "e = (b * sympy.sin(c) * u.dx(x0=x + x.spacing/2)).dx(x0=x - x.spacing/2) + a * u.dy.dz\n"
        "op = Operator([Eq(u.forward, 2*u - u.backward + e)])\n"
        "print(hashlib.sha1(op.ccode.encode()).hexdigest())\n")
    digests = set()
    for seed in ("1", "2", "3"):
        env = dict(__import__("os").environ, PYTHONHASHSEED=seed, STENCILGEN_LOGGING="WARNING")
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True)
        digests.add(out.stdout.strip().splitlines()[-1])
    assert len(digests) == 1


def _matrix(op, src, dst):
    """The matrix of ``dst = op(src)`` on the domain, column by column."""
    n = src.data.size
    out = np.zeros((dst.data.size, n))
    for j in range(n):
        src.data[:] = 0
        src.data.flat[j] = 1
        op.apply()
        out[:, j] = dst.data.ravel()
    return out


def _flux_fields(so):
    """A 9x8 grid, b with random values in its halo too, u and out."""
    grid = Grid(shape=(9, 8), extent=(1.2, 1.0), dtype=np.float64)
    b, u, out = (Function(name=n, grid=grid, space_order=so) for n in ("b", "u", "out"))
    b.data_with_halo[:] = np.random.default_rng(so).uniform(1, 2, b.data_with_halo.shape)
    return grid, b, u, out


def _flux_form(b, u, out, nested):
    dims = u.grid.dimensions
    return Operator([Eq(out, sum((b * u.diff(d, x0=d + d.spacing / 2))
                                 .diff(d, x0=d - d.spacing / 2) for d in dims))], nested=nested)


@pytest.mark.parametrize("so", [2, 4, 8])
def test_nested_staggered_derivative_is_minus_gradient_transpose(so):
    """With nested="domain", (b u.dx(+h/2)).dx(-h/2) summed over axes is exactly
    -sum G_d^T B G_d on the domain at every order, G_d the forward-staggered derivative onto
    the domain's points, even when b's halo holds non-zero values: the inner expression is a
    zero-halo temporary, never computed over b's halo."""
    grid, b, u, out = _flux_fields(so)
    L = _matrix(_flux_form(b, u, out, "domain"), u, out)
    B = np.diag(b.data.ravel())
    ref = np.zeros_like(L)
    for d in grid.dimensions:
        G = _matrix(Operator([Eq(out, u.diff(d, x0=d + d.spacing / 2))]), u, out)
        ref -= G.T @ B @ G
    np.testing.assert_allclose(L, ref, rtol=0, atol=1e-12 * np.abs(ref).max())


@pytest.mark.parametrize("so", [2, 4, 8])
def test_nested_staggered_derivative_by_default_reaches_past_the_edges(so):
    """By default (Devito's expansion) the same form is -sum G_d^T B G_d with G_d reaching
    the staggered points past the domain the outer stencil reads (so/2 of them) and B holding
    b's halo there: G_d and B taken on a grid wider by so/2 a side, u zero beyond the domain
    (its halo). Symmetric, so the operator is still exactly self-adjoint."""
    grid, b, u, out = _flux_fields(so)
    shape, w = grid.shape, so // 2
    L = _matrix(_flux_form(b, u, out, "extended"), u, out)
    wide = Grid(shape=tuple(n + 2 * w for n in shape),
                extent=tuple(e + 2 * w * h for e, h in zip(grid.extent, grid.spacing)),
                dtype=np.float64)
    wu, wout = (Function(name=n, grid=wide, space_order=so) for n in ("wu", "wout"))
    inside = tuple(slice(w, w + n) for n in shape)
    domain = np.zeros(wide.shape, dtype=bool)
    domain[inside] = True
    B = np.diag(np.array(b.data_with_halo)[tuple(slice(so - w, so - w + n + 2 * w)
                                                 for n in shape)].ravel())
    ref = np.zeros_like(L)
    for d in wide.dimensions:
        G = _matrix(Operator([Eq(wout, wu.diff(d, x0=d + d.spacing / 2))]), wu, wout)
        G = G[:, domain.ravel()]
        ref -= G.T @ B @ G
    np.testing.assert_allclose(L, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(L, L.T, rtol=0, atol=1e-12 * np.abs(L).max())


def test_diff_spells_the_same_derivatives_as_the_shorthands():
    grid = Grid(shape=(6, 5))
    x, y = grid.dimensions
    u = Function(name="u", grid=grid, space_order=4)
    h = x.spacing / 2
    pairs = [(u.diff(x), u.dx), (u.diff(x, 2), u.dx2), (u.diff(x, x), u.dx2),
             (u.diff(x, y), u.dx.dy), (u.diff(x, x0=x + h), u.dx(x0=x + h)),
             (u.diff(y, fd_order=2), u.dy(fd_order=2))]
    for a, b in pairs:
        assert sympy.simplify(a.evaluate() - b.evaluate()) == 0, (a, b)
    with pytest.raises(InvalidArgument, match=r"diff: expected grid dimensions.*got 2"):
        u.diff(2)

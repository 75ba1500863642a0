"""Devito's ConditionalDimension: snapshots every ``factor`` steps (``TimeFunction(time_dim=
t_sub, save=...)``, stored at ``time / factor`` where ``time % factor == 0``) and equations
that run only where a condition holds (``Eq(..., implicit_dims=c)``). Checked against NumPy,
against a run that saves every step, and against Devito 4.8.23's numbers
(tests/conditional_programs.py)."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import conditional_programs
import stencilgen
from stencilgen import (And, CondEq, ConditionalDimension, Constant, Eq, Function, Ge, Grid, Gt,
                        InvalidArgument, InvalidEquation, Le, Lt, Ne, Not, Operator, Or,
                        SparseTimeFunction, TimeFunction, platform, solve)
from test_cuda import needs_gpu, needs_nvcc


def _wave(save=None, time_dim=None, factor=None, backend="c", name="Wave"):
    """A 2D so-4 wave from a Gaussian; with ``factor``, snapshots every ``factor`` steps."""
    grid = Grid(shape=(21, 18), extent=(200.0, 170.0))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4, save=save)
    xs, ys = np.meshgrid(np.arange(21), np.arange(18), indexing="ij")
    u.data[0] = u.data[1] = np.exp(-((xs - 9.0) ** 2 + (ys - 8.0) ** 2) / 6.0)
    eqs = [Eq(u.forward, solve(u.dt2 / 2.25 - u.laplace, u.forward))]
    usave = None
    if factor is not None:
        t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=factor)
        k = factor if isinstance(factor, int) else int(factor.data)
        usave = TimeFunction(name="usave", grid=grid, time_order=0, save=save_for(k),
                             time_dim=t_sub)
        eqs.append(Eq(usave, u))
    return Operator(eqs, backend=backend, name=name), u, usave


NT = 20


def save_for(factor):
    """Snapshots of steps 0..NT-2 (the last step NT - 2 writes u at NT - 1)."""
    return (NT - 2) // factor + 1


@pytest.mark.parametrize("factor", [3, Constant(name="k", value=4)], ids=["int", "Constant"])
def test_snapshots_are_every_kth_step_of_a_saved_run(factor):
    full_op, full, _ = _wave(save=NT, name="Full")
    full_op.apply(dt=2.0)          # Devito's default time_M: NT - 2
    op, u, usave = _wave(factor=factor)
    k = factor if isinstance(factor, int) else 4
    summary = op.apply(time_M=NT - 2, dt=2.0)
    assert usave.shape == (save_for(k), 21, 18)
    # time_m is 1 (u.backward is read), as Devito's: step 0 runs not, nor stores snapshot 0
    want = full.data[::k]
    assert np.abs(usave.data[1:] - want[1:]).max() <= 1e-6 * np.abs(want).max()
    assert not usave.data[0].any() and not np.array_equal(usave.data[2], usave.data[1])
    # the test of the step is made once a step, before the loop nest it guards
    src = op.ccode
    test = src.index("if (time % t_subf == 0 && t_sub < usave_nt)")   # clipped as Devito
    assert src.index("for (long x", test) < src.index("timers[1]", test)
    assert src.count("% t_subf") == 1 and "const long t_sub = time / t_subf;" in src
    # the snapshot section ran at the steps it stored, a point each
    assert summary["section1"].points == (save_for(k) - 1) * 21 * 18
    assert summary["section0"].points == (NT - 2) * 21 * 18


def test_devito_s_defaults_and_the_snapshots_clipped():
    """Devito's default time_M fills the snapshots; a longer run leaves those past them
    unwritten (Devito 4.8.23 clips, test_dimension.py::test_symbolic_factor_override)."""
    op, u, usave = _wave(factor=3)
    n = save_for(3)                            # 7 snapshots
    op.apply(dt=2.0)                           # Devito: time_M = factor * save - 1 = 20
    assert np.abs(usave.data[n - 1]).max() > 0 and op.arguments(dt=2.0)["time_M"] == 20
    op2, u2, usave2 = _wave(factor=3, name="Longer")
    op2.apply(time_M=30, dt=2.0)               # 10 steps past snapshot 6: u runs on
    assert np.array_equal(usave2.data, usave.data)
    assert not np.array_equal(u2.data, u.data)
    op.apply(time_m=3, time_M=5, dt=2.0)       # snapshot 1 only


def test_snapshots_read_backwards_in_time():
    """An adjoint-like Operator reads the snapshots at the steps that have one, with time
    running down (v.backward): acc = sum over stored steps of usave[time/k]*(time_M - time)."""
    grid = Grid(shape=(7, 6))
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=3)
    usave = TimeFunction(name="usave", grid=grid, time_order=0, save=5, time_dim=t_sub)
    usave.data[:] = np.random.default_rng(5).standard_normal(usave.shape)
    v = TimeFunction(name="v", grid=grid)
    acc = Function(name="acc", grid=grid)
    op = Operator([Eq(v.backward, v + 1), Eq(acc, acc + usave * v)], backend="c")
    op.apply(time_m=2, time_M=13)
    want = sum(usave.data[s // 3] * (13 - s) for s in range(2, 14) if s % 3 == 0)
    assert np.allclose(acc.data, want, rtol=1e-6)
    assert op.program.time_step == -1


def test_devito_s_numbers():
    """Snapshots of a wave, the tutorial's conditions and an RTM pattern (shot, snapshots,
    adjoint image) give Devito 4.8.23's numbers to float32 round-off over tens of steps."""
    ref = np.load(conditional_programs.REFERENCE)
    out = conditional_programs.results(stencilgen)
    assert set(out) == set(ref.files)
    for key, value in out.items():
        scale = np.abs(ref[key]).max()
        assert scale > 0 and value.shape == ref[key].shape, key
        assert np.abs(value - ref[key]).max() <= 5e-5 * scale, key


def test_conditions_match_numpy():
    grid = Grid(shape=(9, 8))
    x, y = grid.dimensions
    g = Function(name="g", grid=grid)
    g.data[:] = np.random.default_rng(2).integers(-2, 3, grid.shape)
    conds = {"gt": Gt(g, 0), "lt": Lt(g, 0), "ge": Ge(g, 1), "le": Le(g, -1), "ne": Ne(g, 0),
             "eq": CondEq(g, 2), "and": And(Gt(g, -1), Lt(x, 4)), "or": Or(Lt(g, 0), Ge(y, 6)),
             "not": Not(Gt(g, 0))}
    outs = {k: Function(name=f"o_{k}", grid=grid) for k in conds}
    eqs = [Eq(outs[k], g + 1, implicit_dims=ConditionalDimension(f"c_{k}", parent=y,
                                                                  condition=c))
           for k, c in conds.items()]
    op = Operator(eqs, backend="c")
    op.apply()
    a = g.data
    xs, ys = np.meshgrid(np.arange(9), np.arange(8), indexing="ij")
    want = {"gt": a > 0, "lt": a < 0, "ge": a >= 1, "le": a <= -1, "ne": a != 0, "eq": a == 2,
            "and": (a > -1) & (xs < 4), "or": (a < 0) | (ys >= 6), "not": ~(a > 0)}
    for k, mask in want.items():
        assert mask.any() and not mask.all(), k
        assert np.array_equal(outs[k].data, np.where(mask, a + 1, 0)), k
    assert op.ccode.count("if (") >= len(conds)


def test_conditions_on_time_and_factors_of_space():
    """A condition on time runs the equation at those steps (in the time loop, though it
    reads no TimeFunction); a factor on x runs it on every k-th x."""
    grid = Grid(shape=(8, 5))
    x, y = grid.dimensions
    time = grid.time_dim
    n, total, rows = (Function(name=k, grid=grid) for k in ("n", "total", "rows"))
    window = ConditionalDimension("window", parent=time, condition=And(Ge(time, 2), Lt(time, 7)))
    every3 = ConditionalDimension("every3", parent=time, factor=3)
    xk = ConditionalDimension("xk", parent=x, factor=3)
    last = ConditionalDimension("last", parent=x, condition=CondEq(x, x.symbolic_max))
    op = Operator([Eq(n, n + 1, implicit_dims=window),
                   Eq(total, total + time, implicit_dims=every3),
                   Eq(rows, rows + 1, implicit_dims=xk), Eq(rows, 9, implicit_dims=last)],
                  backend="c")
    summary = op.apply(time_M=10, x_M=6)
    assert np.all(n.data[:7] == 5) and np.all(total.data[:7] == 0 + 3 + 6 + 9)
    assert np.array_equal(rows.data[:6], np.repeat(np.arange(6)[:, None] % 3 == 0, 5, axis=1))
    assert np.all(rows.data[6] == 9) and not rows.data[7].any()
    run = {k.name: k for k in op.program.kernels}
    assert run["section0"].stage == "before" and "x % xkf == 0" in op.ccode
    assert summary["section2"].points == 5 * 35 and summary["section3"].points == 4 * 35


def test_conditions_are_checked():
    grid = Grid(shape=(5, 4))
    x, y = grid.dimensions
    time = grid.time_dim
    for bad in (0, -2, 2.5, "4", True):
        with pytest.raises(InvalidArgument, match="factor must be a positive integer"):
            ConditionalDimension("c", parent=time, factor=bad)
    with pytest.raises(InvalidArgument, match="give factor= .* or condition="):
        ConditionalDimension("c", parent=time)
    with pytest.raises(InvalidArgument, match="parent must be a grid dimension"):
        ConditionalDimension("c", factor=2)
    f = Function(name="f", grid=grid)
    with pytest.raises(InvalidArgument, match="write CondEq"):
        ConditionalDimension("c", parent=x, condition=Eq(f, 1))
    with pytest.raises(InvalidArgument, match="indirect=True"):
        ConditionalDimension("c", parent=x, condition=Gt(f, 0), indirect=True)
    with pytest.raises(InvalidArgument, match="relation must be"):
        ConditionalDimension("c", parent=x, factor=2, relation=sympy.Not)
    t_sub = ConditionalDimension("t_sub", parent=time, factor=2)
    assert TimeFunction(name="s", grid=grid, time_order=0, time_dim=t_sub).data.shape[0] == 1
    with pytest.raises(InvalidArgument, match="time_dim must be the grid's time dimension"):
        TimeFunction(name="s", grid=grid, save=3,
                     time_dim=ConditionalDimension("xs", parent=x, factor=2))
    with pytest.raises(InvalidEquation, match="implicit_dims must hold Dimensions"):
        Eq(f, 1, implicit_dims=(Gt(f, 0),))
    other = ConditionalDimension("other", parent=stencilgen.Dimension("i", integer=True),
                                 factor=2)
    with pytest.raises(InvalidEquation, match="counts i, which is not a dimension of the grid"):
        Operator([Eq(f, 1, implicit_dims=other)], backend="c")
    never = ConditionalDimension("never", parent=x, condition=sympy.false)
    with pytest.raises(InvalidEquation, match="never hold"):
        Operator([Eq(f, 1, implicit_dims=never)], backend="c")
    usave = TimeFunction(name="usave", grid=grid, time_order=0, save=3, time_dim=t_sub)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=5)
    with pytest.raises(InvalidEquation, match="ConditionalDimensions of time only"):
        cx = ConditionalDimension("cx", parent=x, condition=Gt(f, 0))
        Operator(rec.interpolate(expr=f, implicit_dims=cx), backend="c")
    k = Constant(name="k", value=2.5)
    slow = ConditionalDimension("slow", parent=time, factor=k)
    op = Operator([Eq(f, f + 1, implicit_dims=slow)], backend="c")
    with pytest.raises(InvalidArgument, match="factor of ConditionalDimension slow is k=2.5"):
        op.apply(time_M=7)
    f.data[:] = 0
    op.apply(time_M=7, k=2)         # the Constant's value given to apply, as Devito
    op.apply(time_M=7, k=3)
    assert np.all(f.data == 4 + 3)


def _programs_on(backend, settings):
    settings["backend"] = backend
    return conditional_programs.results(stencilgen)


def test_openacc_gives_c_s_numbers(restore_settings):
    """The OpenACC build (on the host here, on the GPU where it offloads) equals C's."""
    c = _programs_on("c", restore_settings)
    acc = _programs_on("openacc", restore_settings)
    for key, value in c.items():
        assert np.allclose(acc[key], value, rtol=1e-6, atol=1e-6), key


@needs_nvcc
def test_cuda_source_tests_the_step_on_the_host():
    op, _, _ = _wave(factor=3, backend="cuda", name="WaveCuda")
    src = op.ccode
    host = src[src.index("for (long time = time_m"):]
    assert "const long t_sub = time / t_subf;" in host and \
        "if (time % t_subf == 0 && t_sub < usave_nt) {" in host
    kernel = src[src.index("WaveCuda_section1("):src.index("WaveCuda_section1(") + 400]
    # the snapshot written through a pointer at its step, set on the host
    assert "float *__restrict__ sg_usave_t_sub" in kernel and "% t_subf" not in kernel
    assert "usave + t_sub*sg_d_usave_st" in host
    assert op.cfunction is not None


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
def test_conditions_and_snapshots_on_the_gpu_equal_c(backend, restore_settings):
    if backend == "openacc" and "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    c = _programs_on("c", restore_settings)
    gpu = _programs_on(backend, restore_settings)
    for key, value in c.items():
        assert np.allclose(gpu[key], value, rtol=1e-5, atol=1e-5 * np.abs(value).max()), key


# -- Functions on ConditionalDimensions (Devito's tutorial: demos/devito_ports) -------------
def _port(settings, backend):
    import importlib
    settings["backend"] = backend
    return importlib.import_module("demos.devito_ports.conditional_dimension").run()


def test_functions_on_conditional_dimensions_match_numpy(restore_settings):
    """h on (x, ci) holds g where ci's condition holds; f on a subsampled i holds every
    fourth g; f on (c_even, y) is written at x/2 where x is even Or on the last row, And
    the row before the last (Devito's tutorial asserts), on C and OpenACC alike."""
    for backend in ("c", "openacc"):
        out = _port(restore_settings, backend)
        eye = np.eye(10)
        want = eye.copy()
        want[5:] = 0
        assert np.array_equal(out["op4"], want), backend
        assert np.array_equal(out["op5"], np.arange(16.0)[::4]), backend
        assert np.all(out["or"] == 1), backend
        assert np.all(out["and"][:-1] == 0) and np.all(out["and"][-1] == 1), backend


def test_a_strict_relation_alone_decides():
    """Devito's relation='strict' (its tutorial, newer than 4.8.23): the edge condition
    x == x_M - 2 alone decides where f on (c_even, y) is written, at row 7 // 2."""
    grid = Grid(shape=(10, 10))
    x, y = grid.dimensions
    c_even = ConditionalDimension(name="ceven", parent=x, factor=2, relation=Or)
    edge = ConditionalDimension(name="cedge", parent=x, condition=CondEq(x, x.symbolic_max - 2),
                                relation="strict")
    f = Function(name="f", grid=grid, dimensions=(c_even, y), shape=(5, 10), space_order=0)
    Operator(Eq(f, 1, implicit_dims=edge), backend="c")()
    assert np.all(f.data[3] == 1) and np.count_nonzero(f.data) == 10


def test_functions_on_conditional_dimensions_are_checked():
    size = 16
    from stencilgen import Dimension
    i = Dimension(name="i")
    ci = ConditionalDimension(name="ci", parent=i, factor=4)
    g = Function(name="g", shape=(size,), dimensions=(i,))
    short = Function(name="f", shape=(3,), dimensions=(ci,))
    with pytest.raises(InvalidEquation, match="3 points along ci.*which index 4 of them"):
        Operator(Eq(short, g), backend="c")
    f = Function(name="f", shape=(4,), dimensions=(ci,))
    with pytest.raises(InvalidEquation, match="the loops run over i"):
        Operator(Eq(f, 1.0), backend="c")
    h = Function(name="h", shape=(size,), dimensions=(i,))
    with pytest.raises(InvalidEquation, match="reads f, which another equation"):
        Operator([Eq(f, g), Eq(h, f)], backend="c")
    with pytest.raises(InvalidEquation, match="indexed by ci \\+ 1 along ci"):
        Operator(Eq(f, f.subs(ci, ci + 1) + g), backend="c")
    # a Constant factor: the size is checked when apply knows it
    k = Constant(name="k", value=4.0)
    ck = ConditionalDimension(name="ck", parent=i, factor=k)
    fk = Function(name="fk", shape=(4,), dimensions=(ck,))
    op = Operator(Eq(fk, g), backend="c")
    g.data[:] = np.arange(size)
    op.apply()
    assert np.array_equal(fk.data, np.arange(16.0)[::4])
    with pytest.raises(InvalidArgument, match="fk has 4 points.*factor is 2: it needs 8"):
        op.apply(k=2.0)


@pytest.mark.gpu
@needs_gpu
def test_functions_on_conditional_dimensions_on_the_gpu(restore_settings):
    c = _port(restore_settings, "c")
    gpu = _port(restore_settings, "cuda")
    for key, value in c.items():
        assert np.array_equal(gpu[key], value), key


def test_a_constant_in_a_condition_on_time_is_an_argument():
    """Devito's test_subdomains.py::test_guarding: two equations on a SubDomainSet under
    conditions on time that only a Constant holds (c < 1, c >= 1); apply(c=) picks the other."""
    from stencilgen import Constant, SubDomainSet

    class Dummy(SubDomainSet):
        name = "dummy"
    grid = Grid(shape=(10, 10))
    dummy = Dummy(N=1, bounds=(1, 1, 1, 1), grid=grid)
    time = grid.time_dim
    c = Constant(name="c", value=0.5)
    cond_a = ConditionalDimension(name="cond_a", parent=time, condition=c < 1.0)
    cond_b = ConditionalDimension(name="cond_b", parent=time, condition=c >= 1.0)
    f = TimeFunction(name="f", grid=grid)
    g = TimeFunction(name="g", grid=grid)
    op = Operator([Eq(f.forward, f + 1.0, subdomain=dummy, implicit_dims=[cond_a]),
                   Eq(g.forward, g + 1.0, subdomain=dummy, implicit_dims=[cond_b])])
    op.apply(time_M=3)
    assert f.data[0, 5, 5] == 4 and f.data[0, 0, 5] == 0 and np.all(g.data == 0)
    op.apply(time_M=3, c=2.0)
    assert f.data[0, 5, 5] == 4 and g.data[0, 5, 5] == 4


@pytest.mark.parametrize("backend", ["c", pytest.param("cuda", marks=needs_nvcc)])
def test_snapshots_without_save_are_a_buffer(backend, tmp_path):
    """A TimeFunction on a ConditionalDimension of time without save= holds time_order + 1
    snapshots, the slot of snapshot k being k modulo their number: its last two equal those of
    the same run saving every snapshot (CUDA emulated; Devito allocates the buffer but indexes
    it without the modulo, past its end)."""
    import cuda_emulation
    grid = Grid(shape=(5, 6))
    ts = ConditionalDimension("t_sub", parent=grid.time_dim, factor=3)
    out = {}
    for save in (None, 7):
        u = TimeFunction(name="u", grid=grid)
        u.data[0] = np.arange(30, dtype=np.float32).reshape(5, 6) / 10
        w = TimeFunction(name="w", grid=grid, time_dim=ts, save=save)
        eqs = [Eq(u.forward, u + 1), Eq(w.forward, 0.5 * w + u)]
        op = Operator(eqs, backend=backend, name=f"Buffer{save or 0}")
        if backend == "cuda":
            assert cuda_emulation.run(op, str(tmp_path), time_M=17) == 0
        else:
            op.apply(time_M=17)
        out[save] = np.array(w.data)
    buffered, saved = out[None], out[7]
    assert buffered.shape[0] == 2 and np.abs(saved[-1]).max() > 10
    # snapshot k + 1 = 6 is written last (at step 15): slot 6 % 2 = 0; snapshot 5 in slot 1
    np.testing.assert_allclose(buffered[0], saved[6], rtol=1e-6)
    np.testing.assert_allclose(buffered[1], saved[5], rtol=1e-6)


def _coarse(grid, factor, **kw):
    """A Grid of every ``factor``-th point of ``grid``'s (Devito's subsampled grid)."""
    dims = tuple(ConditionalDimension(d.name + "sub", parent=d, factor=factor)
                 for d in grid.dimensions)
    return Grid(tuple((n - 1) // factor + 1 for n in grid.shape), dimensions=dims,
                time_dimension=grid.time_dim, **kw)


def _laplace_so4(values, h):
    """The 4th-order Laplacian of ``values`` (zeros beyond), spacing ``h`` per axis."""
    w = np.array([-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12])
    padded = np.pad(values.astype(np.float64), 2)
    out = np.zeros(values.shape)
    for axis, hd in enumerate(h):
        for k, wk in enumerate(w):
            shifted = np.roll(padded, 2 - k, axis=axis)[2:-2, 2:-2]
            out += wk * shifted / hd ** 2
    return out


@pytest.mark.parametrize("backend", ["c", pytest.param("cuda", marks=needs_nvcc)])
def test_derivatives_on_a_coarse_grid_use_its_spacing(backend, tmp_path):
    """A 4th-order Laplacian of a function alone on a Grid of every third point (which Devito
    4.8.23 fails to compile: its indices hold the spacing) equals NumPy's on the coarse
    values with the coarse spacing; the loops run over the parents, n * factor points by
    default (CUDA emulated)."""
    import cuda_emulation
    grid = Grid(shape=(13, 10), extent=(3.0, 4.5))
    coarse = _coarse(grid, 3, extent=(3.0, 4.5))
    v = TimeFunction(name="v", grid=coarse, space_order=4, time_order=1)
    start = np.cos(np.arange(20, dtype=np.float32).reshape(5, 4))
    v.data[0] = start
    op = Operator([Eq(v.forward, v.laplace)], backend=backend, name="CoarseLaplace")
    if backend == "cuda":
        assert cuda_emulation.run(op, str(tmp_path), time_M=0) == 0
    else:
        op.apply(time_M=0)
    assert coarse.spacing == (0.75, 1.5)
    np.testing.assert_allclose(v.data[1], _laplace_so4(start, coarse.spacing), rtol=1e-5,
                               atol=1e-5)
    assert coarse.spacing_map == {d.spacing: np.float32(h / 3) for d, h in
                                  zip(grid.dimensions, coarse.spacing)}


def test_a_coarse_grid_is_checked():
    """A Grid of ConditionalDimensions takes those of space dimensions with a whole factor,
    one per dimension; its functions are read whole steps from their points, within the
    halo."""
    grid = Grid(shape=(9, 9))
    x, y = grid.dimensions
    odd = ConditionalDimension("xodd", parent=x, condition=sympy.Eq(x % 2, 1))
    with pytest.raises(InvalidArgument, match="whole factor and no condition"):
        Grid((5, 5), dimensions=(odd, ConditionalDimension("ys", parent=y, factor=2)))
    twice = (ConditionalDimension("xa", parent=x, factor=2),
             ConditionalDimension("xb", parent=x, factor=4))
    with pytest.raises(InvalidArgument, match="subsample one dimension twice"):
        Grid((5, 3), dimensions=twice)
    coarse = _coarse(grid, 2)
    u = TimeFunction(name="u", grid=coarse, space_order=2)
    xs = coarse.dimensions[0]
    with pytest.raises(InvalidEquation, match="whole steps"):
        Operator([Eq(u.forward, u.subs(xs, xs + x.spacing))], backend="c")
    with pytest.raises(stencilgen.HaloError, match="halo is 2 points"):
        Operator([Eq(u.forward, u.subs(xs, xs + 3 * xs.spacing))], backend="c")
    w = u.func(name="w")
    assert w.grid is coarse and w.space_order == 2

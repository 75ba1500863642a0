"""``op.apply(u=u2)`` with a function other than the one the Operator was built with, as
Devito's userapi tutorial on apply does: a saved or sampled time axis may have another
length (a run-time argument; the default ``time_M`` follows the function bound), a wider
halo is read where it lies; a ring buffer of another size, another dtype, grid shape or
kind of function is refused with a message saying what to pass."""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, InvalidArgument, Operator, SparseFunction,
                        SparseTimeFunction, TimeFunction, platform, solve)
from test_cuda import needs_gpu, needs_nvcc

NX, NY, NU = 12, 10, 0.5
DT = 0.2 * 0.1 ** 2 / NU


def _diffusion(backend="c", name="SavedDiffusion"):
    """A saved diffusion built for 4 steps (space order 2)."""
    grid = Grid(shape=(NX, NY), extent=(1.1, 0.9))
    u = TimeFunction(name="u", grid=grid, space_order=2, save=4)
    op = Operator(Eq(u.forward, solve(u.dt - NU * u.laplace, u.forward)), backend=backend,
                  name=name)
    return op, grid


def _start():
    x, y = np.meshgrid(np.linspace(0, 1.1, NX), np.linspace(0, 0.9, NY), indexing="ij")
    return np.exp(-((x - 0.5) ** 2 + (y - 0.4) ** 2) / 0.05)


def _numpy(start, steps):
    """Every state of the explicit scheme from ``start``, zero outside the domain."""
    a, out = start.astype(np.float64), [start]
    hx, hy = 1.1 / (NX - 1), 0.9 / (NY - 1)
    for _ in range(steps):
        p = np.pad(a, 1)
        a = a + DT * NU * ((p[2:, 1:-1] - 2 * a + p[:-2, 1:-1]) / hx ** 2
                           + (p[1:-1, 2:] - 2 * a + p[1:-1, :-2]) / hy ** 2)
        out.append(a)
    return np.array(out)


def _longer_and_shorter(op, grid):
    """Apply ``op`` to a function saving 9 steps (a wider halo: space_order 4) and to one
    saving 2, each from the same start; their data."""
    out = []
    for save, so in ((9, 4), (2, 2)):
        f = TimeFunction(name=f"w{save}", grid=grid, space_order=so, save=save)
        f.data[0] = _start()
        op.apply(u=f, dt=DT)
        out.append(np.array(f.data))
    return out


def test_the_tutorial_cells():
    """Devito's tutorial: save=3 runs 2 steps by default, save=5 given at apply 4, save=2
    one; the window x_m=2, y_m=2, time_M=0 writes one step of a corner."""
    grid = Grid(shape=(4, 4))
    u = TimeFunction(name="u", grid=grid, save=3)
    op = Operator(Eq(u.forward, u + 1))
    assert op.arguments()["time_M"] == 1
    op.apply()
    assert np.array_equal(u.data, np.arange(3)[:, None, None] * np.ones((3, 4, 4)))
    u.data[:] = 0.0
    op.apply(x_m=2, y_m=2, time_M=0)
    want = np.zeros((3, 4, 4))
    want[1, 2:, 2:] = 1.0
    assert np.array_equal(u.data, want)
    with pytest.raises(InvalidArgument, match="saves 3 time steps.*time_M <= 1"):
        op.apply(time_M=2)
    for save in (5, 2, 7):
        u2 = TimeFunction(name="u", grid=grid, save=save)
        assert op.arguments(u=u2)["time_M"] == save - 2
        op.apply(u=u2)
        assert np.array_equal(u2.data, np.arange(save)[:, None, None] * np.ones((save, 4, 4)))
    with pytest.raises(InvalidArgument, match="saves 5 time steps.*time_M <= 3"):
        op.apply(u=TimeFunction(name="u", grid=grid, save=5), time_M=4)
    ring = TimeFunction(name="u", grid=grid)      # two slots, indexed directly
    op.apply(u=ring)
    assert np.array_equal(ring.data, np.arange(2)[:, None, None] * np.ones((2, 4, 4)))


def test_saved_diffusion_on_a_longer_and_a_shorter_function():
    op, grid = _diffusion()
    longer, shorter = _longer_and_shorter(op, grid)
    assert np.abs(longer - _numpy(_start(), 8)).max() < 1e-6
    assert np.abs(shorter - _numpy(_start(), 1)).max() < 1e-6
    args = op.arguments(u=TimeFunction(name="w", grid=grid, save=6), dt=DT)
    assert (args["time_m"], args["time_M"], args["u_nt"]) == (0, 4, 6)


def test_a_ring_buffer_keeps_its_size():
    """Devito too refuses a buffered function with more or fewer slots than the one built;
    a saved one with as many slots cycles through them like it."""
    grid = Grid(shape=(4, 4))
    v = TimeFunction(name="v", grid=grid)
    op = Operator(Eq(v.forward, v + 1))
    for kwargs, what in ((dict(time_order=2), "3 time slots \\(time_order=2\\)"),
                         (dict(save=5), "5 time slots \\(save=5\\)")):
        with pytest.raises(InvalidArgument, match=what + ".*cycles through v's 2 .*time_order=1 "
                                                         "and no save"):
            op.apply(v=TimeFunction(name="v", grid=grid, **kwargs), time_M=4)
    same = TimeFunction(name="v", grid=grid, save=2, space_order=4)
    op.apply(v=same, time_M=4)
    assert np.array_equal(same.data[:, 1, 1], [4.0, 5.0])


def test_overrides_of_another_dtype_shape_or_kind_are_refused():
    grid = Grid(shape=(5, 4))
    f = Function(name="f", grid=grid)
    u = TimeFunction(name="u", grid=grid, save=3)
    op = Operator([Eq(u.forward, u + f)])
    cases = [(dict(f=Function(name="f", grid=grid, dtype=np.float64)),
              "holds float64, the Operator was built for float32; pass a Function built like "
              "f with dtype=float32"),
             (dict(f=Function(name="f", grid=Grid(shape=(5, 5)))),
              "grid of shape \\(5, 5\\), f on \\(5, 4\\)"),
             (dict(f=TimeFunction(name="f", grid=grid)), "is a TimeFunction, f a Function"),
             (dict(u=Function(name="u", grid=grid)),
              "is a Function, u a TimeFunction\\(save=...\\)"),
             (dict(u=TimeFunction(name="u", grid=grid, save=3, dtype=np.float64)),
              "holds float64")]
    for kwargs, message in cases:
        with pytest.raises(InvalidArgument, match=message):
            op.apply(**kwargs)


def _sparse_program():
    grid = Grid(shape=(6, 5), extent=(5.0, 4.0))
    u = TimeFunction(name="u", grid=grid)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=4)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=2, nt=4)
    eqs = [Eq(u.forward, u + 1)] + src.inject(field=u.forward, expr=src) \
        + rec.interpolate(expr=u)
    return grid, u, Operator(eqs, name="SparseOverride")


def test_sparse_functions_of_another_length_and_point_count():
    """Sources and receivers on grid nodes (weights 1): u at a source point gains its
    samples; the default time_M is the fewest samples bound less one. Devito 4.8.23 gives
    the same numbers where both have one length; it refuses two lengths."""
    grid, u, op = _sparse_program()
    src = SparseTimeFunction(name="s", grid=grid, npoint=2, nt=7)
    src.coordinates.data[:] = [[2.0, 1.0], [4.0, 2.0]]
    src.data[:, 0], src.data[:, 1] = np.arange(7) + 1, 10.0
    for nt in (7, 5):
        rec = SparseTimeFunction(name="r", grid=grid, npoint=2, nt=nt)
        rec.coordinates.data[:] = [[2.0, 1.0], [4.0, 2.0]]
        u.data[:] = 0.0
        op.apply(src=src, rec=rec)
        steps = nt - 1        # time 0..nt-2 (u.forward), samples 0..nt-2 recorded
        level = np.zeros((nt, 2))
        for t in range(steps):
            level[t + 1] = level[t] + 1 + src.data[t]
        assert np.array_equal(rec.data[:steps], level[:steps])
        assert np.array_equal(u.data[steps % 2][[2, 4], [1, 2]], level[steps])
    with pytest.raises(InvalidArgument, match="is a SparseFunction, src a SparseTimeFunction"):
        op.apply(src=SparseFunction(name="s", grid=grid, npoint=1))


def test_openacc_binds_the_lengths_as_c():
    """The OpenACC build (on the host here, on the GPU there) copies the bound lengths."""
    c_op, grid = _diffusion("c")
    op, _ = _diffusion("openacc", "SavedDiffusionACC")
    for a, b in zip(_longer_and_shorter(c_op, grid), _longer_and_shorter(op, grid)):
        assert np.abs(a - b).max() < 1e-6


@needs_nvcc
def test_cuda_copies_the_bound_length():
    """The device copy of a saved field is as long as the function bound (compiled here,
    run on the GPU below): u_nt slots of u_st elements, not the 4 the Operator was built for;
    the entry point copies no array (the caller keeps them on the GPU)."""
    op, _ = _diffusion("cuda", "SavedDiffusionCUDA")
    assert "const long u_len = u_nt*u_st;" in op.ccode
    assert "cudaMemcpy2D" not in op.ccode and "HostToDevice" not in op.ccode
    assert "4*u_st" not in op.ccode
    assert op.cfunction is not None


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("backend", ["cuda", "openacc"])
def test_gpu_overrides_equal_c(backend):
    if backend == "openacc" and "host" in platform.toolchain("openacc").name:
        pytest.skip("no offloading OpenACC compiler")
    c_op, grid = _diffusion("c")
    op, _ = _diffusion(backend, f"SavedDiffusionGPU_{backend}")
    for a, b in zip(_longer_and_shorter(c_op, grid), _longer_and_shorter(op, grid)):
        assert np.abs(a - b).max() < 1e-6


def test_a_constant_passed_for_a_constant_gives_its_value():
    """Devito's ``op.apply(c=other)`` with ``other`` a Constant: that Constant's value now,
    for a Constant of the equations and for a ConditionalDimension's factor."""
    from stencilgen import ConditionalDimension, Constant
    grid = Grid(shape=(6,))
    c, other = Constant(name="c", value=1.0), Constant(name="other", value=3.5)
    f = Function(name="f", grid=grid)
    op = Operator(Eq(f, f + c), name="ConstantOverride")
    op.apply(c=other)
    np.testing.assert_array_equal(f.data, 3.5)
    other.data = -1.0
    op.apply(c=other)
    np.testing.assert_array_equal(f.data, 2.5)
    op.apply()
    np.testing.assert_array_equal(f.data, 3.5)

    time = grid.time_dim
    k, four = Constant(name="k", value=2), Constant(name="four", value=4)
    sub = ConditionalDimension(name="ts", parent=time, factor=k)
    u = TimeFunction(name="u", grid=grid)
    usave = TimeFunction(name="usave", grid=grid, save=4, time_dim=sub)
    op = Operator([Eq(u.forward, u + 1), Eq(usave, u)], name="FactorOverride")
    op.apply(time_M=11, k=four)
    np.testing.assert_array_equal(usave.data[:, 0], [0, 4, 8, 0])


def _reusable_shot(backend, name, n=41, nt=60, nsrc=1, nrec=5, save=60, seed=0):
    """An acoustic shot: velocity, a saved wavefield, sources and receivers at random points
    (``seed``), and its Operator on ``backend``."""
    grid = Grid(shape=(n, n), extent=(400., 400.))
    rng = np.random.default_rng(seed)
    vp = Function(name="vp", grid=grid, space_order=4)
    vp.data[:] = 1.5 + 0.5 * rng.random((n, n))
    u = TimeFunction(name="u", grid=grid, space_order=4, time_order=2, save=save)
    src = SparseTimeFunction(name="src", grid=grid, npoint=nsrc, nt=nt)
    src.coordinates.data[:] = rng.uniform(100, 300, (nsrc, 2))
    src.data[:] = rng.standard_normal((nt, nsrc))
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=nrec, nt=nt)
    rec.coordinates.data[:] = rng.uniform(50, 350, (nrec, 2))
    eqs = [Eq(u.forward, solve(u.dt2 / vp ** 2 - u.laplace, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * 0.5 ** 2 * vp ** 2) + rec.interpolate(expr=u)
    return Operator(eqs, backend=backend, name=name), (vp, u, src, rec)


@pytest.mark.parametrize("backend", ["c", "openacc",
                                     pytest.param("cuda", marks=[pytest.mark.gpu, needs_gpu])])
def test_one_operator_reused_with_every_object_passed_by_name(backend):
    """Devito's pattern op.apply(vp=..., u=..., src=..., rec=...): one Operator applied to a
    velocity, a saved wavefield of another save=, and sources and receivers of other counts,
    points and lengths gives, bit for bit, the numbers of an Operator built on those."""
    op, _ = _reusable_shot(backend, f"Reused{backend}")
    kw = dict(nt=50, nsrc=3, nrec=7, save=50, seed=1)
    _, (vp, u, src, rec) = _reusable_shot(backend, f"Others{backend}", **kw)
    op.apply(vp=vp, u=u, src=src, rec=rec, dt=0.5)
    own, (_, u_own, _, rec_own) = _reusable_shot(backend, f"Own{backend}", **kw)
    own.apply(dt=0.5)
    assert np.abs(rec_own.data).max() > 0.1
    assert np.array_equal(rec.data, rec_own.data) and np.array_equal(u.data, u_own.data)


@needs_nvcc
def test_one_cuda_operator_reused_by_name_emulated(tmp_path):
    """The same on the CUDA backend's source, run on the host by the emulation."""
    import cuda_emulation
    op, _ = _reusable_shot("cuda", "ReusedEmu")
    kw = dict(nt=50, nsrc=3, nrec=7, save=50, seed=1)
    _, (vp, u, src, rec) = _reusable_shot("cuda", "OthersEmu", **kw)
    assert cuda_emulation.run(op, str(tmp_path), vp=vp, u=u, src=src, rec=rec, dt=0.5) == 0
    own, (_, u_own, _, rec_own) = _reusable_shot("c", "OwnEmu", **kw)
    own.apply(dt=0.5)
    scale = np.abs(rec_own.data).max()
    assert scale > 0.1 and np.abs(rec.data - rec_own.data).max() <= 1e-5 * scale
    assert np.abs(u.data - u_own.data).max() <= 1e-5 * np.abs(u_own.data).max()

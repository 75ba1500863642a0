"""Launch shapes and autotuning: every shape the CUDA backend offers gives the C backend's
numbers (on a GPU), the tuner keeps the fastest per section and the caller's data, and the
GPU cost model decides which invariants stay arrays."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy

import programs
from programs import TOL
from stencilgen import (ConditionalDimension, Eq, Function, Grid, Operator, TimeFunction, solve,
                        switchconfig, Gt)
from stencilgen.runtime import autotune
from stencilgen.compiler.pipeline import compile_program
from test_cuda import needs_gpu

GPU_PROGRAMS = ["laplace3d_so8", "damped3d", "temporary3d", "shot3d", "coupled2d",
                "chained2d", "inplace2d", "invariant3d"]


def _make(name, backend):
    prog = programs.build(name, np.float32)
    return Operator(prog.eqs, name=name, backend=backend), prog.kwargs, prog.outputs


def _worst(outs_c, outs_g):
    worst = 0.0
    for fc, fg in zip(outs_c, outs_g):
        ref = np.asarray(fc.data_with_halo, dtype=np.float64)
        got = np.asarray(fg.data_with_halo, dtype=np.float64)
        worst = max(worst, float(np.abs(got - ref).max() / np.abs(ref).max()))
    return worst


def _remember(op, kwargs, shape):
    """Make ``op`` run every section with launch shape ``shape`` (as if it had been tuned)."""
    args, _ = op._arguments(**kwargs)
    key = autotune.size_key(op.program, args)
    autotune.Remembered(op.source_path.parent).put(key, [shape] * max(len(op.program.kernels), 1))


# -- on a GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", GPU_PROGRAMS)
def test_every_launch_shape_equals_c(name):
    """Each shape (one or two points per thread, every block) gives the C backend's numbers;
    the 3D grids have an odd outermost extent, so the last pair of points overlaps."""
    op_c, kwargs, outs_c = _make(name, "c")
    op_c.apply(**kwargs)
    offered = _make(name, "cuda")[0]._emitter.launch_shapes()
    assert offered, "a grid program must offer launch shapes on CUDA"
    for shape in range(max(len(v) for v in offered.values())):
        op_g, kwargs_g, outs_g = _make(name, "cuda")
        _remember(op_g, kwargs_g, shape)
        op_g.apply(autotune=False, **kwargs_g)
        worst = _worst(outs_c, outs_g)
        assert worst <= TOL[np.float32], f"{name}, shape {shape}: differs from C by {worst:.2e}"


def _thin(backend):
    """An acoustic step, to run on one plane of the outermost dimension (x_m = x_M): shorter
    than two points per thread."""
    grid = Grid(shape=(6, 9, 37), extent=(0.5, 0.8, 3.6), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=2)
    m = Function(name="m", grid=grid, space_order=2)
    m.data[:] = 1.0
    u.data[:] = np.random.default_rng(3).uniform(-1, 1, size=u.data.shape)
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))], name="Thin",
                  backend=backend)
    return op, u


@pytest.mark.gpu
@needs_gpu
def test_a_nest_shorter_than_the_points_per_thread_equals_c():
    run = dict(time_M=3, dt=0.01, x_m=2, x_M=2)
    op_c, u_c = _thin("c")
    op_c.apply(**run)
    for shape in (1, 3):   # two points per thread, if the nest were long enough
        op_g, u_g = _thin("cuda")
        _remember(op_g, run, shape)
        op_g.apply(autotune=False, **run)
        assert _worst([u_c], [u_g]) <= TOL[np.float32]


@pytest.mark.gpu
@needs_gpu
def test_autotuning_keeps_the_data_and_remembers(caplog):
    """Tuning runs trial steps on the caller's data: the result is still the C backend's, and
    the choice is kept beside the build for the next apply of that size."""
    op_c, kwargs, outs_c = _make("damped3d", "c")
    op_c.apply(**kwargs)
    op_g, kwargs_g, outs_g = _make("damped3d", "cuda")
    op_g.apply(autotune=True, **kwargs_g)
    assert _worst(outs_c, outs_g) <= TOL[np.float32]
    table = json.loads((op_g.source_path.parent / "tuning.json").read_text())
    args, _ = op_g._arguments(**kwargs_g)
    choice = table[autotune.size_key(op_g.program, args)]
    assert len(choice) == len(op_g.program.kernels)
    offered = op_g._emitter.launch_shapes()
    assert all(0 <= choice[s] < len(v) for s, v in offered.items())


# -- anywhere -----------------------------------------------------------------------------------

def test_tune_keeps_the_fastest_shape_of_each_section():
    # section 0 is fastest with shape 2, section 1 with shape 0, section 2 has one shape
    times = {0: [3.0, 2.0, 1.0, 4.0], 1: [0.5, 0.9, 0.7, 0.8], 2: [1.0]}
    seen = []

    def run(choice):
        seen.append(list(choice))
        return np.array([times[s][min(c, len(times[s]) - 1)] for s, c in enumerate(choice)])

    best = autotune.tune(run, {0: 4, 1: 4, 2: 1}, 3)
    assert list(best) == [2, 0, 0]
    assert len(seen) == 4 and all(c[2] == 0 for c in seen)


def test_tune_keeps_a_default_unless_another_is_clearly_faster():
    """With a margin of 5 %, section 0's default (shape 1, 2.0 s) gives way to shape 2
    (1.0 s); section 1's default (shape 2, 0.52 s) stays against shape 0 (0.5 s)."""
    times = {0: [3.0, 2.0, 1.0], 1: [0.5, 0.9, 0.52]}

    def run(choice):
        return np.array([times[s][c] for s, c in enumerate(choice)])

    assert list(autotune.tune(run, {0: 3, 1: 3}, 2, 1, {0: 1, 1: 2}, 0.05)) == [2, 2]
    assert list(autotune.tune(run, {0: 3, 1: 3}, 2, 1, {0: 1, 1: 2}, 0.0)) == [2, 0]


@pytest.mark.parametrize("asked, setting, remembered, updates, expected", [
    (True, "off", True, 1.0, True),           # asked: always
    (False, "auto", False, 1e12, False),       # refused: never
    (None, "auto", False, 1e12, True),         # a large run of a new size
    (None, "auto", True, 1e12, False),         # its size is tuned already
    (None, "auto", False, 1e6, False),         # a tiny run
    (None, "off", False, 1e12, False),         # switched off
    (None, "on", False, 1e6, True),            # on: any run of a new size
    (None, "on", True, 1e6, False),
])
def test_when_a_run_is_tuned(asked, setting, remembered, updates, expected):
    assert autotune.wanted(asked, setting, remembered, updates) is expected


def test_remembered_shapes_survive_a_bad_file(tmp_path):
    memory = autotune.Remembered(tmp_path)
    assert memory.get("8x8") is None
    memory.put("8x8", [1, 3])
    memory.put("9x9", [0])
    assert list(memory.get("8x8")) == [1, 3] and list(memory.get("9x9")) == [0]
    (tmp_path / "tuning.json").write_text("{not json")
    assert memory.get("8x8") is None      # unreadable: tuned again, not a crash
    memory.put("8x8", [2])
    assert list(memory.get("8x8")) == [2]


@pytest.mark.parametrize("name", ["damped3d", "temporary3d", "shot3d", "invariant3d"])
def test_every_c_cache_block_gives_the_same_numbers(name, tmp_path, monkeypatch):
    """Cache blocking only reorders the points: every block shape's result equals the
    unblocked one's bit for bit, and autotuning keeps the caller's data and its choice
    (time tiles off: their receivers equal to round-off, tests/test_time_tiling.py)."""
    from stencilgen import configuration
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    monkeypatch.setitem(configuration._values, "time-tiling", None)
    op0, kwargs0, outs0 = _make(name, "c")
    offered = op0._emitter.launch_shapes()
    assert offered and all(len(v) > 1 for v in offered.values())
    _remember(op0, kwargs0, 0)
    op0.apply(autotune=False, **kwargs0)
    for shape in range(1, max(len(v) for v in offered.values())):
        op, kwargs, outs = _make(name, "c")
        _remember(op, kwargs, shape)
        op.apply(autotune=False, **kwargs)
        for a, b in zip(outs0, outs):
            assert np.array_equal(a.data_with_halo, b.data_with_halo), (name, shape)
    op, kwargs, outs = _make(name, "c")
    op.apply(autotune=True, **kwargs)
    for a, b in zip(outs0, outs):
        assert np.array_equal(a.data_with_halo, b.data_with_halo), (name, "autotuned")
    assert (op.source_path.parent / "tuning.json").exists()


def test_openacc_offers_no_shapes():
    op, _, _ = _make("damped3d", "openacc")
    assert op._emitter.launch_shapes() == {}
    assert "sg_blocks3" not in op.ccode


def _damped(phi_too):
    grid = Grid(shape=(12, 10, 9), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    m = Function(name="m", grid=grid, space_order=4)
    damp = Function(name="damp", grid=grid, space_order=4)
    phi = Function(name="phi", grid=grid, space_order=4)
    pde = m * u.dt2 - u.laplace + damp * u.dt
    if phi_too:
        pde = pde - (sympy.sin(phi) + sympy.cos(phi)) * u.dx
    return [Eq(u.forward, solve(pde, u.forward))]


def _stored(eqs, flops_per_byte):
    prog, _ = compile_program(eqs, "Damped", True, flops_per_byte)
    return sorted(str(k.body[-1].rhs) for k in prog.before)


def test_gpu_recomputes_a_division_but_stores_angles():
    """Where arithmetic is cheap next to bytes, 1/(2m + dt*damp) is recomputed from m and damp
    (read anyway); sin and cos of phi (two arrays for one, but ~60 operations each) stay
    arrays, on a GPU (14 flops per byte) and a CPU (8) alike. With no arithmetic to spare
    (0 flops per byte) every costly invariant is an array."""
    assert len(_stored(_damped(False), 0)) == 1
    assert _stored(_damped(False), 14) == [] and _stored(_damped(False), 8) == []
    assert _stored(_damped(True), 8) == _stored(_damped(True), 14)
    gpu = _stored(_damped(True), 14)
    assert gpu and all("phi" in s for s in gpu) and not any("damp" in s for s in gpu)
    prog, _ = compile_program(_damped(True), "Damped", True, 14)
    counted = {k.name: k.bytes for k in prog.steps}
    cpu, _ = compile_program(_damped(True), "Damped", True, 0)
    assert sum(counted.values()) < sum(k.bytes for k in cpu.steps)


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
def test_cuda_kernels_read_time_slots_through_their_own_pointers():
    """u[t0], u[t1] and u[t2] are three restrict pointers, set on the host; a kernel that
    reads what it writes (an in-place sweep) is never launched two points per thread."""
    op = Operator(_damped(False), name="Damped", backend="cuda")
    src = op.ccode
    assert "const float *__restrict__ sg_u_t0" in src and "float *__restrict__ sg_u_t2" in src
    # set on the host with the time stride of the device copy (rows at a pitch)
    assert "u + t0*sg_d_u_st" in src and "u_st," not in src.split("extern \"C\"")[0]
    assert "<int, 2>, sg_grid" in src
    # inplace2d: a sequential sweep, and h = h + 1 then h = 2h + a at each point
    prog = programs.build("inplace2d", np.float32)
    inplace = Operator(prog.eqs, name="inplace2d", backend="cuda")
    assert "<int, 2>, sg_grid" not in inplace.ccode


def test_saved_steps_are_read_through_a_pointer_per_step():
    """A TimeFunction saving every step, read at time and time - 1 and written at time + 1:
    three restrict pointers set on the host, so the kernel's 32-bit instance is chosen from
    one step's plane, not from every saved step (which would leave it 64-bit)."""
    grid = Grid(shape=(8, 8))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=2, save=5)
    src = Operator([Eq(u.forward, 2 * u - u.backward + u.laplace)], name="Saved",
                   backend="cuda").ccode
    assert "float *__restrict__ sg_u_time_p1" in src
    assert "const float *__restrict__ sg_u_time_m1" in src
    assert "u + (time + 1)*sg_d_u_st" in src and "u + (time - 1)*sg_d_u_st" in src
    flags = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("const bool sg_narrow0")]
    assert flags == ["const bool sg_narrow0 = false;",            # STENCILGEN_WIDE_INDEX
                     "const bool sg_narrow0 = sg_d_u_st <= 1073741824L;"]
    # snapshots at a ConditionalDimension's index: a pointer at the snapshot's step
    v = TimeFunction(name="v", grid=grid, space_order=2)
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=2)
    snap = TimeFunction(name="snap", grid=grid, save=3, time_dim=t_sub)
    snaps = Operator([Eq(v.forward, v + 1), Eq(snap, v)], name="SavedSub", backend="cuda").ccode
    assert "float *__restrict__ sg_snap_t_sub" in snaps and "snap + t_sub*sg_d_snap_st" in snaps


@pytest.mark.parametrize("dtype, per", [(np.float32, 32), (np.float64, 16)])
def test_device_rows_start_their_interior_on_128_bytes(dtype, per):
    """The device layout's declarations, evaluated for many halos and widths: the first
    interior point of every row lies on a 128-byte boundary, rows do not overlap, and each
    host stride maps to a whole number of device rows."""
    from backends.common import device_layout
    grid = Grid(shape=(5, 6, 7), dtype=dtype)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    op = Operator([Eq(u.forward, u + 1)], name="Rows", backend="cuda")
    a = op.program.array("u")
    lines = device_layout.declarations(a, "z_size", str)
    for halo in range(0, 40, 3):
        for z in (1, 7, 31, 32, 33, 100):
            env = {"u_h2": halo, "z_size": z, "u_s1": 2 * halo + z}
            env["u_s0"] = env["u_s1"] * 9
            env["u_st"] = env["u_s0"] * 8
            env["u_len"] = 2 * env["u_st"]
            for ln in lines:
                name, value = ln.removeprefix("const long ").rstrip(";").split(" = ")
                env[name] = eval(value.replace("/", "//"), {}, env)
            front, pitch, width = env["sg_u_f"], env["sg_u_p"], env["sg_u_w"]
            assert (front + halo) % per == 0 and pitch % per == 0
            assert width <= pitch < width + per      # rows do not overlap, little is wasted
            assert env["sg_d_u_s1"] == pitch and env["sg_d_u_st"] == 72 * pitch
            assert env["sg_u_dlen"] >= front + (env["u_len"] // width - 1) * pitch + width


def test_tune_keeps_each_shapes_best_time_over_rounds():
    """One slow trial (a loaded machine) must not hide the fastest shape when every shape is
    timed several times."""
    true = [2.0, 1.0, 1.5]
    calls = []

    def run(choice):
        calls.append(int(choice[0]))
        slow = 3.0 if len(calls) == 2 else 1.0      # shape 1's first trial runs slow
        return np.array([true[choice[0]] * slow])

    assert list(autotune.tune(run, {0: 3}, 1, rounds=1)) == [2]
    calls.clear()
    assert list(autotune.tune(run, {0: 3}, 1, rounds=2)) == [1]
    assert calls == [0, 1, 2, 0, 1, 2]


def test_jamming_blocks_are_offered_where_rows_are_independent():
    """The C cache blocks that jam x rows (``c_blocking.JAM`` a z loop) are among the tuned
    choices of a parallel nest, which then holds the jammed loop with a loop for the rows
    left; a nest under a condition at each point is not jammed (the condition is x's)."""
    from backends.c import blocking as c_blocking
    jams = [b for b in c_blocking.BLOCKS if b[2] > 1]
    assert jams and c_blocking.BLOCKS[c_blocking.DEFAULT_LIGHT] in jams
    op, _, _ = _make("damped3d", "c")
    described = next(iter(op._emitter.launch_shapes().values()))
    assert sum("x rows jammed" in d for d in described) >= len(jams)
    assert f"x += {c_blocking.JAM}" in op.ccode and "sg_blocks3[sg_s][2] > 1" in op.ccode
    grid = Grid(shape=(9, 8, 7))
    f = Function(name="f", grid=grid)
    f.data[::2] = 1
    u = TimeFunction(name="u", grid=grid, space_order=2)
    where = ConditionalDimension("where", parent=grid.dimensions[0], condition=Gt(f, 0))
    guarded = Operator([Eq(u.forward, u.laplace + 1, implicit_dims=where)], backend="c",
                       name="Guarded")
    assert "sg_blocks3[sg_s][2] > 1" not in guarded.ccode
    guarded.apply(time_M=0, dt=0.1)
    assert np.array_equal(u.data[1], np.where(f.data > 0, 1.0, 0.0).astype(np.float32))

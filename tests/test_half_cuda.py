"""16-bit storage on the CUDA backend: __half / __nv_bfloat16 arrays, paired loads (two points
a thread along the innermost dimension, backends/cuda_pairs.py), atomic adds rounded once,
the NaN/Inf count on the bits, the padded device rows and the runtime's converting copies.

Everywhere nvcc is, the generated sources are compiled, and run on the host through an
emulation of the CUDA runtime (tests/cuda_emulation.py) against the C backend storing the
same format; on a GPU (``-m gpu``) they run for real against the C backend.
"""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import cuda_emulation
from backends.cuda import runtime as cuda_runtime
from backends.common import device_layout
from backends.cuda.backend import CudaBackend
from stencilgen import (ConditionalDimension, Eq, Function, Grid, Gt, NumericalWarning,
                        Operator, SparseTimeFunction, TimeFunction, solve, switchconfig)
from test_cuda import needs_gpu, needs_nvcc

FORMATS = ["float16", "bfloat16"]
#: a 16-bit run against the C backend storing the same format: the largest difference
#: relative to the largest value (a few units in the last place of the format)
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2}
#: emulated on the host, the same arithmetic as the C backend's: within one unit in the last
#: place of the largest value
ULP = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
PAIR_LOAD = {"float16": "__half22float2(*(const __half2 *)&",
             "bfloat16": "__bfloat1622float2(*(const __nv_bfloat162 *)&"}
PAIR_STORE = {"float16": "__floats2half2_rn(", "bfloat16": "__floats2bfloat162_rn("}


def _values(f) -> np.ndarray:
    return np.asarray(f.data, dtype=np.float32)


def _close(a, b) -> float:
    """The largest difference of two fields relative to the largest value of ``a``."""
    a, b = _values(a), _values(b)
    scale = float(np.abs(a).max())
    assert scale > 0
    return float(np.abs(a - b).max()) / scale


# -- the programs ---------------------------------------------------------------------------

def acoustic(storage, backend, name, shape=(14, 13, 11), nt=12, so=8):
    """The acoustic wave equation at space order 8 with three sources (two at one node: their
    atomic adds meet) and three receivers."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape))
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=so, storage=storage)
    m = Function(name="m", grid=grid, space_order=so, storage=storage)
    m.data[:] = 1.0 / np.linspace(1.5, 2.5, shape[0])[:, None, None] ** 2
    at = [tuple(f * 10.0 * (n - 1) for n in shape) for f in (0.5, 0.5, 0.31)]
    src = SparseTimeFunction(name="src", grid=grid, npoint=3, nt=nt, coordinates=at)
    src.data[:] = np.sin(np.arange(nt) * 0.4)[:, None] * np.array([100.0, 70.0, 50.0])
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=3, nt=nt, coordinates=[
        tuple(f * 10.0 * (n - 1) for n in shape) for f in (0.2, 0.55, 0.77)])
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
    eqs += src.inject(field=u.forward, expr=src * grid.stepping_dim.spacing ** 2 / m)
    eqs += rec.interpolate(expr=u)
    return Operator(eqs, name=name, backend=backend), u, rec


def staggered2d(storage, backend, name, shape=(21, 19), nt=12):
    """Velocity-pressure on a staggered 2D grid (derivatives at half points read odd and even
    offsets) with a source into the pressure."""
    grid = Grid(shape=shape, extent=(200.0, 180.0))
    x, y = grid.dimensions
    p, vx, vy = (TimeFunction(name=n, grid=grid, space_order=4, storage=storage)
                 for n in ("p", "vx", "vy"))
    b = Function(name="b", grid=grid, space_order=4, storage=storage)
    b.data[:] = np.linspace(0.5, 1.0, shape[1])[None, :]
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt, coordinates=[(95.0, 83.0)])
    src.data[:, 0] = np.sin(np.arange(nt) * 0.5) * 10.0
    dt = 1.0
    eqs = [Eq(vx.forward, vx - dt * b * p.dx(x0=x + x.spacing / 2)),
           Eq(vy.forward, vy - dt * b * p.dy(x0=y + y.spacing / 2)),
           Eq(p.forward, p - dt * (vx.forward.dx(x0=x - x.spacing / 2)
                                   + vy.forward.dy(x0=y - y.spacing / 2)))]
    eqs += src.inject(field=p.forward, expr=src)
    return Operator(eqs, name=name, backend=backend), p, vy


def guarded(storage, backend, name):
    """A nest under a condition at each point (a guard): the scalar kernel."""
    grid = Grid(shape=(10, 9, 12))
    y = grid.dimensions[1]
    u = TimeFunction(name="u", grid=grid, space_order=2, storage=storage)
    v = TimeFunction(name="v", grid=grid, space_order=2, storage=storage)
    u.data[0] = np.random.default_rng(3).standard_normal(grid.shape)
    positive = ConditionalDimension(name="positive", parent=y, condition=Gt(u, 0.3))
    return Operator([Eq(v.forward, v + u, implicit_dims=positive)], name=name,
                    backend=backend), v


def odd_reads(storage, backend, name):
    """A nest that reads the innermost dimension at odd offsets only (z - 1, z + 1)."""
    grid = Grid(shape=(6, 7, 9))
    x, y, z = grid.dimensions
    u = Function(name="u", grid=grid, space_order=2, storage=storage)
    out = Function(name="out", grid=grid, space_order=2, storage=storage)
    u.data[:] = np.random.default_rng(5).uniform(-1, 1, grid.shape)
    return Operator([Eq(out, u[x, y, z + 1] - 3 * u[x, y, z - 1])], name=name,
                    backend=backend), out


def compensated(backend, name, shape=(12, 11, 13)):
    """Compensated stepping: a float16 wavefield and its companion of what stores round off
    (both written by one nest, both paired)."""
    grid = Grid(shape=shape, extent=tuple(10.0 * (n - 1) for n in shape))
    u = TimeFunction(name="u", grid=grid, space_order=4, time_order=2, storage="float16",
                     compensated=True)
    u.data[0:2, shape[0] // 2, shape[1] // 2, shape[2] // 2] = 1.0
    m = Function(name="m", grid=grid, space_order=4)
    m.data[:] = 1 / 1.5 ** 2
    return Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))], name=name,
                    backend=backend), u


def _kernel(src, name):
    """The text of the ``__global__`` function ``name``."""
    start = src.index(f"\n{name}(")
    return src[start:src.index("\n}\n", start)]


# -- everywhere nvcc is: the sources compile and say what they should -------------------------

@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
@needs_nvcc
@pytest.mark.parametrize("fmt", FORMATS)
def test_acoustic_reads_pairs_and_injects_with_one_rounding(fmt):
    op, _, _ = acoustic(fmt, "cuda", f"HalfAcoustic_{fmt}")
    src, prog = op.ccode, op.program
    elem = {"float16": "__half", "bfloat16": "__nv_bfloat16"}[fmt]
    header = {"float16": "cuda_fp16.h", "bfloat16": "cuda_bf16.h"}[fmt]
    assert f"#include <{header}>" in src and src.count("#include <cuda_") == 2
    stencil = next(k for k in prog.kernels if not k.is_sparse)
    body = _kernel(src, stencil.section.function)
    # every read of u and m is a pair (21 of u_t0 for 2 points, 1 of u_t1, 1 of m), widened
    assert body.count(PAIR_LOAD[fmt]) == 23
    assert "__half2float(" not in body and "__bfloat162float(" not in body
    assert f"const {elem} *__restrict__ sg_u_t0" in body and f"{elem} *__restrict__ sg_u_t2" in body
    assert body.count(PAIR_STORE[fmt]) == 1             # one pair store where both are inside
    assert "sg_z = ((z_m) & ~(sg_int)1) + 2*(" in body
    assert "(z_M - z_m + 1 + 2)/2" in src               # threads along x: pairs of points
    # the injection (launched with the receivers: ``cuda_sparse``) adds through the 16-bit
    # helper into u's slot
    assert re.search(r"sg_atomic_add\(&sg_u_t\d\[", src)
    assert "atomicCAS(word, old," in src and src.count("atomicAdd(") == 1   # the NaN count's
    assert op.cfunction is not None                     # nvcc builds it


@needs_nvcc
def test_staggered_program_pairs_odd_and_even_offsets():
    op, _, _ = staggered2d("float16", "cuda", "HalfStaggered")
    src = op.ccode
    grids = [k for k in op.program.kernels if not k.is_sparse]
    assert grids and all(PAIR_LOAD["float16"] in _kernel(src, k.section.function)
                         for k in grids)
    assert op.cfunction is not None


@needs_nvcc
def test_a_guarded_nest_keeps_one_point_a_thread():
    op, _ = guarded("float16", "cuda", "HalfGuarded")
    src = op.ccode
    nest = next(k for k in op.program.kernels if k.guard is not None)
    body = _kernel(src, nest.section.function)
    assert "__half2 " not in body and "sg_z" not in body
    assert "__half2float(" in body and "__float2half_rn(" in body   # widened, rounded
    assert op.cfunction is not None


@needs_nvcc
def test_odd_offsets_read_the_pairs_around_them():
    """u[z - 1] and u[z + 1] at points sg_z and sg_z + 1: the pairs at sg_z - 2, sg_z and
    sg_z + 2; point 0 takes .y of the first two, point 1 .x of the last two."""
    op, _ = odd_reads("float16", "cuda", "HalfOdd")
    src = op.ccode
    body = _kernel(src, op.program.kernels[0].section.function)
    loads = dict(re.findall(r"const float2 (sg_h\d+) = __half22float2\(\*\(const __half2 \*\)"
                            r"&u\[\(x\)\*u_s0 \+ \(y\)\*u_s1 \+ \(?(sg_z(?: [-+] 2)?)\)?\]\);",
                            body))
    at = {offset: var for var, offset in loads.items()}
    assert set(at) == {"sg_z - 2", "sg_z", "sg_z + 2"}
    values = re.findall(r"sg_v0_(\d) = (.*);", body)
    used = {j: set(re.findall(r"(sg_h\d+)\.([xy])", text)) for j, text in values}
    assert used["0"] == {(at["sg_z - 2"], "y"), (at["sg_z"], "y")}
    assert used["1"] == {(at["sg_z"], "x"), (at["sg_z + 2"], "x")}
    text = dict(values)
    assert f"-3.e+00F*{at['sg_z - 2']}.y" in text["0"] and f"-3.e+00F*{at['sg_z']}.x" in text["1"]
    assert op.cfunction is not None


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
def test_debug_builds_and_the_switch_keep_scalar_loads(monkeypatch):
    monkeypatch.setattr(CudaBackend, "pair_loads", False)
    op, _, _ = acoustic("float16", "cuda", "HalfSwitchOff")
    assert "float2 sg_h" not in op.ccode and "__half2float(" in op.ccode
    assert "<int, 2>, sg_grid" in op.ccode        # two points along x, as for float32
    monkeypatch.setattr(CudaBackend, "pair_loads", True)
    from stencilgen.configuration import configuration
    monkeypatch.setitem(configuration._values, "debug", True)
    op, _, _ = acoustic("float16", "cuda", "HalfDebug")
    assert "float2 sg_h" not in op.ccode and "sg_checked(" in op.ccode


def test_16_bit_device_rows_keep_two_free_elements_each_side():
    """Pitched rows of 16-bit values: each row's first domain point on 128 bytes, at least
    PAIR_PAD elements free before the first row and after every row, and the entry point's
    declarations give the layout the caller allocates."""
    op, _, _ = acoustic("float16", "cuda", "HalfRows")
    a = op.program.array("u")
    lines = device_layout.declarations(a, "z_size", str)
    for halo in range(0, 70, 3):
        for z in (1, 7, 31, 52, 54, 60, 61, 62, 64, 100, 126):
            shape = (3, 2 * halo + 5, 2 * halo + 6, 2 * halo + z)
            lay = device_layout.DeviceLayout.of(shape, 2, halo)
            front, pitch, width = lay.front, lay.pitch, lay.width
            assert (front + halo) % 64 == 0 and pitch % 64 == 0
            assert front >= 2 and pitch >= width + 2 and pitch < width + 2 + 64
            env = {"u_h2": halo, "z_size": z, "u_s1": width}
            env["u_s0"] = env["u_s1"] * shape[2]
            env["u_st"] = env["u_s0"] * shape[1]
            env["u_len"] = 3 * env["u_st"]
            for ln in lines:
                name, value = ln.removeprefix("const long ").rstrip(";").split(" = ")
                env[name] = eval(value.replace("/", "//"), {}, env)
            assert (env["sg_u_f"], env["sg_u_p"], env["sg_u_dlen"]) == \
                (front, pitch, lay.length)
    # 32-bit rows are as before: no pad
    assert device_layout.DeviceLayout.of((4, 40), 4, 4).pitch == 64
    assert device_layout.DeviceLayout.of((4, 40), 4, 4).front == 28


def test_runtime_copies_convert_into_both_formats():
    import ml_dtypes
    assert cuda_runtime.type_code(np.dtype(np.float16)) == "e"
    assert cuda_runtime.type_code(np.dtype(ml_dtypes.bfloat16)) == "E"
    assert cuda_runtime.type_code(np.dtype("V2")) is None
    src = cuda_runtime.source()
    assert "sg_rt_from<__nv_bfloat16>" in src and "case 'E'" in src


@needs_nvcc
def test_runtime_source_compiles(tmp_path):
    path = tmp_path / "rt.cu"
    path.write_text(cuda_runtime.source())
    done = subprocess.run(["nvcc", "-std=c++17", "-arch=sm_80", "-c", str(path), "-o",
                           str(tmp_path / "rt.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- emulated on the host: the CUDA source's numbers --------------------------------------------

@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
@needs_nvcc
@pytest.mark.parametrize("fmt", FORMATS)
def test_emulated_acoustic_equals_the_c_backend(fmt, tmp_path):
    """Paired kernel, scalar kernel (the switch off) and the C backend, on a subdomain whose
    innermost range starts at an odd index and ends at an even one: within one unit in the
    last place, receivers too."""
    kw = dict(time_M=9, dt=1.0, z_m=1, z_M=8, x_m=1)
    op_c, uc, rc = acoustic(fmt, "c", f"HalfEmuC_{fmt}")
    op_c.apply(**kw)
    op_g, ug, rg = acoustic(fmt, "cuda", f"HalfEmuG_{fmt}")
    assert PAIR_LOAD[fmt] in op_g.ccode
    assert cuda_emulation.run(op_g, str(tmp_path), **kw) == 0
    assert _close(uc, ug) <= ULP[fmt] and _close(rc, rg) <= ULP[fmt]
    assert np.all(_values(ug)[..., 9:] == 0) and np.all(_values(ug)[..., :1] == 0)
    if fmt == "float16":
        CudaBackend.pair_loads = False
        try:
            op_s, us, _ = acoustic(fmt, "cuda", f"HalfEmuS_{fmt}")
        finally:
            CudaBackend.pair_loads = True
        assert cuda_emulation.run(op_s, str(tmp_path), **kw) == 0
        assert _close(uc, us) <= ULP[fmt]


@needs_nvcc
def test_emulated_staggered_equals_the_c_backend_in_chunks(tmp_path, monkeypatch):
    """The 2D staggered program, its nests launched in chunks along x (the grid limits shrunk):
    the chunks start where the pairs before them end."""
    op_c, pc, vc = staggered2d("float16", "c", "HalfStagC", shape=(9, 150))
    op_c.apply(time_M=8)
    monkeypatch.setattr("backends.cuda.kernel_text.GRID_LIMIT", ("1L", "2L", "2L"))
    op_g, pg, vg = staggered2d("float16", "cuda", "HalfStagG", shape=(9, 150))
    assert "sg_b0 += 1L*sg_block.x" in op_g.ccode
    assert cuda_emulation.run(op_g, str(tmp_path), time_M=8) == 0
    assert _close(pc, pg) <= ULP["float16"] and _close(vc, vg) <= ULP["float16"]


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
@needs_nvcc
def test_emulated_compensated_stepping_equals_the_c_backend(tmp_path):
    """The wavefield to one unit in the last place; its companion (rounding residues, which
    the C backend's contracted multiply-adds change a little) to a few of its own."""
    op_c, uc = compensated("c", "HalfCompC")
    op_c.apply(time_M=8, dt=1.0)
    op_g, ug = compensated("cuda", "HalfCompG")
    body = _kernel(op_g.ccode, op_g.program.kernels[0].section.function)
    assert body.count(PAIR_STORE["float16"]) == 2 and "__half2float(__float2half_rn(" in body
    assert cuda_emulation.run(op_g, str(tmp_path), time_M=8, dt=1.0) == 0
    assert _close(uc, ug) <= ULP["float16"]
    assert _close(uc.compensation, ug.compensation) <= 4 * ULP["float16"]


_FENCED = textwrap.dedent("""
    import sys
    import numpy as np
    import cuda_emulation
    from backends.common import device_layout
    from stencilgen import Eq, Grid, Operator, TimeFunction
    device_layout.PAIR_PAD = int(sys.argv[1])
    grid = Grid(shape=(62,), extent=(1.0,))
    u = TimeFunction(name="u", grid=grid, space_order=1, time_order=2, storage="float16")
    u.data[:] = np.random.default_rng(0).uniform(-1, 1, u.data.shape)
    op = Operator([Eq(u.forward, 2*u - u.backward + 1e-3*u.dx2(fd_order=2))],
                  name=f"Fenced{sys.argv[1]}", backend="cuda")
    print("STATUS", cuda_emulation.run(op, sys.argv[3], fence=sys.argv[2], time_M=3, dt=1.0))
""")


@needs_nvcc
def test_paired_reads_stay_inside_the_allocation(tmp_path):
    """Each device copy against an inaccessible page, before it or after it: the run reads
    nothing beyond. Without the pads (PAIR_PAD 0) a pair read past the row's halo faults:
    a 1D row of 62 points and halo 1 fills 64 elements, one pitch, with nothing after it.
    (Only an odd reach as wide as the halo overruns it, so space order 1: a wider halo is
    even and holds the pair's second element.)"""
    script = tmp_path / "fenced.py"
    script.write_text(_FENCED)

    def run(pad, fence):
        return subprocess.run([sys.executable, str(script), str(pad), fence, str(tmp_path)],
                              capture_output=True, text=True, cwd=str(tmp_path),
                              env=_env())
    for fence in ("start", "end"):
        done = run(2, fence)
        assert done.returncode == 0 and "STATUS 0" in done.stdout, done.stderr[-2000:]
    assert run(0, "end").returncode != 0      # the fence catches what the pads prevent


def _env():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([root, here]))


# -- on a GPU ---------------------------------------------------------------------------------

@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("fmt", FORMATS)
def test_gpu_acoustic_equals_the_c_backend(fmt):
    """50 steps of the acoustic shot (sources, receivers) stored in 16 bits: the CUDA backend
    (the paired kernel, and the staged one) against the C backend storing the same format."""
    shape, kw = (40, 36, 33), dict(time_m=1, time_M=50, dt=1.0)
    op_c, uc, rc = acoustic(fmt, "c", f"HalfGpuC_{fmt}", shape=shape, nt=52)
    op_c.apply(**kw)
    for stage in (False, True):
        with switchconfig(staging=stage, fusion="on"):   # "on": no twin run apart
            op_g, ug, rg = acoustic(fmt, "cuda", f"HalfGpuG{int(stage)}_{fmt}", shape=shape,
                                    nt=52)
            assert (PAIR_LOAD[fmt] in op_g.ccode) == (not stage)
            assert any(k.fusion is not None for k in op_g.program.kernels) == stage
            op_g.apply(**kw)
        assert _close(uc, ug) <= TOL[fmt]
        assert _close(rc, rg) <= TOL[fmt]


@pytest.mark.gpu
@needs_gpu
def test_gpu_compensated_stepping_equals_the_c_backend():
    op_c, uc = compensated("c", "HalfGpuCompC", shape=(40, 36, 33))
    op_c.apply(time_M=50, dt=1.0)
    op_g, ug = compensated("cuda", "HalfGpuCompG", shape=(40, 36, 33))
    op_g.apply(time_M=50, dt=1.0)
    a, b = uc.data_unscaled, ug.data_unscaled     # the field: stored values + companion
    assert float(np.abs(a - b).max()) <= TOL["float16"] * float(np.abs(a).max())


@pytest.mark.gpu
@needs_gpu
def test_gpu_paired_equals_scalar_kernel(monkeypatch):
    shape, kw = (40, 36, 33), dict(time_m=1, time_M=50, dt=1.0, z_m=3, z_M=30)
    op_p, up, _ = acoustic("float16", "cuda", "HalfGpuPaired", shape=shape, nt=52)
    op_p.apply(**kw)
    monkeypatch.setattr(CudaBackend, "pair_loads", False)
    op_s, us, _ = acoustic("float16", "cuda", "HalfGpuScalar", shape=shape, nt=52)
    assert "float2 sg_h" not in op_s.ccode
    op_s.apply(**kw)
    assert _close(us, up) <= TOL["float16"]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("fmt", FORMATS)
def test_gpu_staggered_equals_the_c_backend(fmt):
    op_c, pc, vc = staggered2d(fmt, "c", f"HalfGpuStagC_{fmt}", shape=(61, 77), nt=52)
    op_c.apply(time_M=50)
    op_g, pg, vg = staggered2d(fmt, "cuda", f"HalfGpuStagG_{fmt}", shape=(61, 77), nt=52)
    op_g.apply(time_M=50)
    assert _close(pc, pg) <= TOL[fmt] and _close(vc, vg) <= TOL[fmt]


@pytest.mark.gpu
@needs_gpu
def test_gpu_injection_into_float16_equals_the_c_backend():
    """Many sources on few nodes: their atomic adds into float16 meet; each sum is rounded
    once, in some order (the C backend's, sequential, may differ by a rounding per add)."""
    out = {}
    for backend in ("c", "cuda"):
        grid = Grid(shape=(20, 18, 17), extent=(19.0, 17.0, 16.0))
        u = TimeFunction(name="u", grid=grid, space_order=2, storage="float16",
                         storage_scale=1.0)
        rng = np.random.default_rng(2)
        pts = rng.integers(3, 12, size=(64, 3)).astype(float) + 0.25
        pts[32:] = pts[:32]                                  # every node twice
        src = SparseTimeFunction(name="src", grid=grid, npoint=64, nt=6, coordinates=pts)
        src.data[:] = rng.uniform(0.5, 2.0, size=src.data.shape)
        op = Operator([Eq(u.forward, u)] + src.inject(field=u.forward, expr=src),
                      name=f"HalfInject_{backend}", backend=backend)
        op.apply(time_M=4)
        out[backend] = u
    assert _close(out["c"], out["cuda"]) <= 4 * ULP["float16"]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("fmt", FORMATS)
def test_gpu_blow_up_is_counted_as_for_float32(fmt):
    """A field that overflows its 16-bit format to Inf is reported by the NaN/Inf count with
    the C backend's count; finite data gives no warning."""
    texts = {}
    for backend in ("c", "cuda"):
        grid = Grid(shape=(40, 30), extent=(39.0, 29.0))
        u = TimeFunction(name="u", grid=grid, space_order=2, storage=fmt, storage_scale=1.0)
        u.data[0, 10:20, 5:9] = 1.0
        op = Operator([Eq(u.forward, 1.0e4 * u + u.laplace)], name=f"HalfBlow_{fmt}_{backend}",
                      backend=backend)
        with pytest.warns(NumericalWarning) as record:
            op.apply(time_M=9, dt=0.1)
        texts[backend] = str(record[0].message).replace(f"_{backend}`", "`")
        assert np.count_nonzero(np.isinf(_values(u))) > 0
        u.data[:] = 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumericalWarning)
            Operator([Eq(u.forward, u + 0.01 * u.laplace)], name=f"HalfCalm_{fmt}_{backend}",
                     backend=backend).apply(time_M=2, dt=0.1)
    assert texts["c"] == texts["cuda"]


@pytest.mark.gpu
@needs_gpu
def test_gpu_arrays_convert_into_16_bit_fields():
    """``f.data = <CuPy float32 array>`` rounds into a float16 field and a bfloat16 field on
    the GPU; a float16 field's device view is float16 and holds the host's values."""
    cupy = pytest.importorskip("cupy")
    import ml_dtypes
    grid = Grid(shape=(9, 10, 11))
    values = np.random.default_rng(4).uniform(-3, 3, grid.shape).astype(np.float32)
    for fmt, host in (("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)):
        f = Function(name=f"f_{fmt}", grid=grid, space_order=4, storage=fmt)
        f.data = cupy.asarray(values)
        assert np.array_equal(np.asarray(f.data), values.astype(host))
        assert np.all(np.asarray(f.data_with_halo)[0] == 0)
    h = Function(name="h", grid=grid, space_order=4, storage=np.float16)
    h.data[:] = values
    view = cupy.asarray(h.device_data)
    assert view.dtype == cupy.float16 and view.shape == grid.shape
    assert np.array_equal(cupy.asnumpy(view), values.astype(np.float16))

"""The CUDA backend: generated sources compile with nvcc (everywhere nvcc is), and on a GPU
the results equal the C backend's within round-off; error paths, flags and auto-selection."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zlib

import numpy as np
import pytest
import sympy

import backends
import backends.cuda as cuda_backend
import jitcache
from stencilgen import (Constant, Eq, Function, Grid, Operator, SparseFunction,
                        SparseTimeFunction, StencilgenError, TimeFunction, configuration, solve)

HAVE_NVCC = shutil.which("nvcc") is not None or bool(
    os.environ.get("CUDA_HOME") and os.path.exists(os.path.join(os.environ["CUDA_HOME"], "bin",
                                                                "nvcc")))
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc (the CUDA toolkit) is not installed")


def _gpu_missing():
    """Why GPU tests cannot run here (None when they can)."""
    if not HAVE_NVCC:
        return "nvcc (the CUDA toolkit) is not installed"
    found, what = cuda_backend.probe_gpu()
    return None if found else f"no NVIDIA GPU is visible ({what})"


GPU_MISSING = _gpu_missing()
needs_gpu = pytest.mark.skipif(GPU_MISSING is not None, reason=str(GPU_MISSING))

SHAPES = {1: (37,), 2: (23, 19), 3: (14, 11, 13)}
TOL = {np.float32: 2e-5, np.float64: 1e-12}
DTYPES = [np.float32, np.float64]


def _grid(dim, dtype):
    shape = SHAPES[dim]
    return Grid(shape=shape, extent=tuple(float(n - 1) for n in shape), dtype=dtype)


def _rand(f, rng, lo=-1.0, hi=1.0):
    f.data[:] = rng.uniform(lo, hi, size=f.data.shape)
    return f


# -- the programs: each builder makes its functions with random data from ``rng`` and returns
#    (equations, apply arguments, the functions whose values the run produces) ---------------

def _laplace(dim, so):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=so), rng)
        out = Function(name="out", grid=grid, space_order=so)
        return [Eq(out, u.laplace)], {}, [out]
    return build


def _axis_derivatives(dtype, rng):
    grid = _grid(3, dtype)
    u = _rand(Function(name="u", grid=grid, space_order=4), rng)
    outs = [Function(name=n, grid=grid, space_order=4) for n in ("fx", "fy", "fz")]
    return [Eq(outs[0], u.dx), Eq(outs[1], u.dy), Eq(outs[2], u.dz)], {}, outs


def _cross(dim):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=4), rng)
        out = Function(name="out", grid=grid, space_order=4)
        expr = u.dx.dy if dim == 2 else u.dx.dy + u.dy.dz + u.dx.dz
        return [Eq(out, expr)], {}, [out]
    return build


def _staggered(dtype, rng):
    grid = _grid(3, dtype)
    x, y, z = grid.dimensions
    u = _rand(Function(name="u", grid=grid, space_order=8), rng)
    outs = [Function(name=n, grid=grid, space_order=8) for n in ("dxp", "dym", "dzp")]
    return [Eq(outs[0], u.dx(x0=x + x.spacing / 2)), Eq(outs[1], u.dy(x0=y - y.spacing / 2)),
            Eq(outs[2], u.dz(x0=z + z.spacing / 2))], {}, outs


def _temporary(dtype, rng):
    """div(b grad u) at space order 8: the inner product needs a temporary."""
    grid = _grid(2, dtype)
    u = _rand(Function(name="u", grid=grid, space_order=8), rng)
    b = _rand(Function(name="b", grid=grid, space_order=8), rng, 0.5, 2.0)
    out = Function(name="out", grid=grid, space_order=8)
    expr = sum((b * getattr(u, n)(x0=d + d.spacing / 2)).__getattribute__(n)(x0=d - d.spacing / 2)
               for d, n in zip(grid.dimensions, ("dx", "dy")))
    return [Eq(out, expr)], {}, [out]


def _invariant(dtype, rng):
    """A costly time-invariant factor (sqrt, sin of a Function) is hoisted before the loop."""
    grid = _grid(3, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
    u.data[0] = rng.uniform(-1, 1, grid.shape)
    u.data[1] = rng.uniform(-1, 1, grid.shape)
    eq = Eq(u.forward, 2 * u - u.backward +
            grid.time_dim.spacing ** 2 * sympy.sin(m) / sympy.sqrt(m) * u.laplace)
    return [eq], {"time_m": 1, "time_M": 4, "dt": 0.1}, [u]


def _coupled(dtype, rng):
    grid = _grid(2, dtype)
    x, y = grid.dimensions
    p, vx, vy = (TimeFunction(name=n, grid=grid, time_order=1, space_order=4)
                 for n in ("p", "vx", "vy"))
    b = _rand(Function(name="b", grid=grid, space_order=4), rng, 0.5, 1.5)
    k = _rand(Function(name="k", grid=grid, space_order=4), rng, 0.5, 1.5)
    for f in (p, vx, vy):
        f.data[0] = rng.uniform(-1, 1, grid.shape)
    dt = grid.time_dim.spacing
    eqs = [Eq(vx.forward, vx - dt * b * p.dx(x0=x + x.spacing / 2)),
           Eq(vy.forward, vy - dt * b * p.dy(x0=y + y.spacing / 2)),
           Eq(p.forward, p - dt * k * (vx.forward.dx(x0=x - x.spacing / 2)
                                       + vy.forward.dy(x0=y - y.spacing / 2)))]
    return eqs, {"time_m": 0, "time_M": 3, "dt": 0.1}, [p, vx, vy]


def _damped(dtype, rng):
    grid = _grid(3, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    m = _rand(Function(name="m", grid=grid, space_order=8), rng, 0.3, 1.2)
    eta = _rand(Function(name="eta", grid=grid, space_order=8), rng, 0.0, 5.0)
    u.data[0] = rng.uniform(-1, 1, grid.shape)
    u.data[1] = rng.uniform(-1, 1, grid.shape)
    pde = m * u.dt2 - u.laplace + eta * u.dt
    return [Eq(u.forward, solve(pde, u.forward))], {"time_m": 1, "time_M": 3, "dt": 0.15}, [u]


def _shot(dim):
    """An acoustic step with a source injected and receivers interpolated every step."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
        m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
        nt = 7
        lo, ext = np.array(grid.origin), np.array(grid.extent)
        src = SparseTimeFunction(name="src", grid=grid, npoint=3, nt=nt,
                                 coordinates=lo + rng.uniform(0.2, 0.8, (3, dim)) * ext)
        src.data[:] = rng.uniform(-1, 1, src.data.shape)
        rec = SparseTimeFunction(name="rec", grid=grid, npoint=9, nt=nt,
                                 coordinates=lo + rng.uniform(0, 1, (9, dim)) * ext)
        dt = grid.time_dim.spacing
        c = Constant(name="scale", value=0.5)
        eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
        eqs += src.inject(field=u.forward, expr=c * src * dt ** 2 / m)
        eqs += rec.interpolate(expr=u)
        return eqs, {"time_m": 1, "time_M": nt - 2, "dt": 0.2}, [u, rec]
    return build


def _sparse_only(dtype, rng):
    """Injection then interpolation, no time loop: many points share nodes (atomics)."""
    grid = _grid(3, dtype)
    f = _rand(Function(name="f", grid=grid), rng)
    g = Function(name="g", grid=grid)
    lo, ext = np.array(grid.origin), np.array(grid.extent)
    pts = lo + rng.uniform(0.4, 0.6, (200, 3)) * ext
    s = SparseFunction(name="s", grid=grid, npoint=200, coordinates=pts)
    s.data[:] = rng.uniform(-1, 1, 200)
    r = SparseFunction(name="r", grid=grid, npoint=200, coordinates=pts)
    return s.inject(field=g, expr=s) + r.interpolate(expr=f + 1), {}, [g, r]


def _chained(dtype, rng):
    grid = _grid(2, dtype)
    q = TimeFunction(name="q", grid=grid, time_order=1, space_order=2)
    v = Function(name="v", grid=grid, space_order=2)
    w = Function(name="w", grid=grid, space_order=2)
    q.data[0] = rng.uniform(-1, 1, grid.shape)
    eqs = [Eq(v, q.dx), Eq(w, v.dy + q), Eq(q.forward, q + grid.time_dim.spacing * w.dx)]
    return eqs, {"time_m": 0, "time_M": 3, "dt": 0.1}, [q, v, w]


PROGRAMS = {
    "laplace1d_so2": _laplace(1, 2), "laplace2d_so4": _laplace(2, 4),
    "laplace3d_so8": _laplace(3, 8), "laplace1d_so12": _laplace(1, 12),
    "laplace2d_so16": _laplace(2, 16), "laplace3d_so16": _laplace(3, 16),
    "dxdydz3d": _axis_derivatives, "cross2d": _cross(2), "cross3d": _cross(3),
    "staggered3d": _staggered, "temporary2d": _temporary, "invariant3d": _invariant,
    "coupled2d": _coupled, "damped3d": _damped, "shot2d": _shot(2), "shot3d": _shot(3),
    "sparse3d": _sparse_only, "chained2d": _chained,
}
CASES = [pytest.param(name, dtype, id=f"{name}-{np.dtype(dtype).name}")
         for name in PROGRAMS for dtype in DTYPES]


def _make(name, dtype, backend):
    rng = np.random.default_rng(zlib.crc32(f"{name}{np.dtype(dtype).name}".encode()))
    eqs, kwargs, outs = PROGRAMS[name](dtype, rng)
    return Operator(eqs, name=name, backend=backend), kwargs, outs


# -- everywhere nvcc is: the source of every program is generated and compiled -------------------

@needs_nvcc
@pytest.mark.parametrize("name, dtype", CASES)
def test_source_compiles(name, dtype):
    op, _, _ = _make(name, dtype, "cuda")
    prog, src = op.program, op.ccode
    assert src.count("__global__ void") == len(prog.kernels)
    assert src.count("<int><<<") == src.count("<long><<<") == len(prog.kernels)
    injections = sum(1 for k in prog.kernels if getattr(k, "kind", None) == "inject")
    assert src.count("atomicAdd(") == injections
    assert ("for (long time = time_m" in src) == prog.has_time_loop
    # the time loop only launches: no transfer inside it
    if prog.has_time_loop:
        loop = src[src.index("for (long time = time_m"):src.index("cudaDeviceSynchronize(), ")]
        assert "cudaMemcpy" not in loop and "cudaMalloc" not in loop
    if name == "invariant3d":
        assert prog.before, "the invariant factor should be computed before the time loop"
    if name == "temporary2d":
        assert any(a.temporary for a in prog.arrays)
    real = "double" if dtype == np.float64 else "float"
    if dtype == np.float32:
        assert "double *__restrict__ out" not in src and not re.search(r"\bsin\(|\bsqrt\(", src)
    assert f"extern \"C\" int {name}({real} *__restrict__" in src
    assert op.cfunction is not None          # nvcc through jitcache, then loaded
    assert op.source_path.suffix == ".cu"


@needs_nvcc
def test_every_cuda_call_is_checked():
    """Each CUDA runtime call of the entry point goes through SG_CHECK or sg_release."""
    op, _, _ = _make("shot2d", np.float32, "cuda")
    src = op.ccode
    body = src[src.index('extern "C" int shot2d('):]
    calls = [ln.strip() for ln in body.splitlines() if re.search(r"\bcuda[A-Z]\w*\(", ln)]
    assert calls
    for ln in calls:
        assert ln.startswith(("SG_CHECK(", "SG_CHECK_AS(", "sg_release(", "if (d_")), ln
        if ln.startswith("if (d_"):
            assert "sg_release(cudaFree(" in ln, ln
    # memory is estimated and compared with what is free before anything is allocated
    assert body.index("cudaMemGetInfo") < body.index("cudaMalloc")
    assert "not enough GPU memory" in body
    # every allocation is released at the one exit
    cleanup = body[body.index("sg_cleanup:"):]
    for a in op.program.arrays:
        assert f"cudaFree(d_{a.name}_vec)" in cleanup
        if a.sparse:
            assert f"cudaFree(d_{a.name}_coords)" in cleanup
    # only what the kernels write is copied back, and temporaries never
    written = {n for k in op.program.kernels for n in k.writes}
    for a in op.program.arrays:
        back = f"cudaMemcpy({a.name}_vec, d_{a.name}_vec" in body
        assert back == (a.name in written and not a.temporary), a.name


@needs_nvcc
def test_a_cuda_failure_becomes_a_stencilgen_error(tmp_path):
    """With no GPU visible the first CUDA call fails; apply raises with the call and the text."""
    script = tmp_path / "nogpu.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from stencilgen import Eq, Function, Grid, Operator, StencilgenError
        grid = Grid(shape=(8, 8))
        u = Function(name="u", grid=grid)
        v = Function(name="v", grid=grid)
        u.data[:] = 1.0
        op = Operator([Eq(v, u.laplace + 1)], name="nogpu", backend="cuda")
        try:
            op.apply()
        except StencilgenError as exc:
            print("ERROR:", exc)
        print("UNCHANGED:", bool(np.all(v.data == 0)))
    """))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", STENCILGEN_CACHE_DIR=configuration["cache-dir"],
               PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                          timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    out = done.stdout
    assert done.returncode == 0, done.stderr
    m = re.search(r"ERROR: Operator `nogpu` failed: CUDA call (\w+)\(.*\) failed: (.+) "
                  r"\((cudaError\w+)\)", out)
    assert m, out
    assert m.group(1) == "cudaMemGetInfo" and m.group(2)
    assert "UNCHANGED: True" in out


@needs_nvcc
def test_debug_nvtx_and_fast_math_flags(monkeypatch):
    op, _, _ = _make("shot2d", np.float32, "cuda")
    plain = op._toolchain()
    assert not {"-G", "-lineinfo", "--use_fast_math"} & set(plain.cflags)
    assert "sg_checked" not in op.ccode and "nvtx" not in op.ccode
    arch = [f for f in plain.cflags if f.startswith("-arch=")]
    assert arch == [f"-arch={jitcache.toolchains._default_arch(plain.cc)}"]
    assert re.fullmatch(r"-arch=sm_\d+", arch[0])

    monkeypatch.setitem(configuration._values, "debug", True)
    monkeypatch.setitem(configuration._values, "nvtx", True)
    monkeypatch.setitem(configuration._values, "fast-math", True)
    op, _, _ = _make("shot2d", np.float32, "cuda")
    tc = op._toolchain()
    assert {"-G", "-lineinfo", "--use_fast_math"} <= set(tc.cflags)
    src = op.ccode
    # every array access of every kernel is bounds-checked, and launches are synchronised
    for i, a in enumerate(op.program.arrays):
        assert f"{a.name}_hi, {i}, __LINE__)]" in src
    assert src.count("sg_out_of_bounds(\"") == len(op.program.kernels)
    assert src.count("cudaDeviceSynchronize(), \"cudaDeviceSynchronize() "
                                          "after kernel") == len(op.program.kernels)
    assert "#include <nvtx3/nvToolsExt.h>" in src
    for k in op.program.kernels:
        assert f'nvtxRangePushA("{k.name}");' in src
    assert op.cfunction is not None            # the debug + NVTX + fast-math build compiles


def test_fast_math_setting_parses():
    assert configuration["fast-math"] in (True, False)
    with pytest.raises(Exception, match="fast-math"):
        configuration["fast-math"] = "maybe"


def test_nvcc_arch_argument():
    if not HAVE_NVCC:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    assert "-arch=sm_90" in jitcache.nvcc(arch="9.0").cflags
    assert "-arch=sm_80" in jitcache.nvcc(arch="sm_80").cflags


# -- backend="auto" ----------------------------------------------------------------------------

@pytest.mark.parametrize("gpu_found, nvcc_found", [(True, True), (False, True), (True, False)])
def test_auto_selection_says_why(monkeypatch, capsys, gpu_found, nvcc_found):
    what = "NVIDIA H200 (sm_90)" if gpu_found else "cuInit failed: no CUDA-capable device"
    monkeypatch.setattr(cuda_backend, "probe_gpu", lambda: (gpu_found, what))
    if not nvcc_found:
        monkeypatch.setattr(cuda_backend.shutil, "which", lambda name: None)
        monkeypatch.delenv("CUDA_HOME", raising=False)
    elif not HAVE_NVCC:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    usable, why = cuda_backend.CudaBackend.usable()
    cls, reason = backends.choose_auto()
    assert usable == (gpu_found and nvcc_found)
    assert cls.name == ("cuda" if usable else "c")
    if usable:
        assert "NVIDIA H200 (sm_90)" in why and "nvcc" in why
    elif not nvcc_found:
        assert "nvcc" in why and "not on PATH" in why
    else:
        assert "no NVIDIA GPU is usable" in why and what in why
    grid = Grid(shape=(6,))
    u = Function(name="u", grid=grid)
    op = Operator([Eq(u, u + 1)], backend="auto")
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "Backend `auto`" in ln]
    assert len(lines) == 1 and why in lines[0] and f"`{cls.name}`" in lines[0]
    assert op._backend_cls is cls


# -- on a GPU -------------------------------------------------------------------------------------

OBSERVED = {}


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    if OBSERVED:
        print("\nCUDA vs C backend, max relative difference (program, dtype, observed, tol):")
        for (name, dt), (diff, tol) in sorted(OBSERVED.items()):
            print(f"  {name:16s} {dt:8s} {diff:.2e}  (tol {tol:.0e})")


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name, dtype", CASES)
def test_cuda_equals_c(name, dtype):
    op_c, kwargs, outs_c = _make(name, dtype, "c")
    op_g, _, outs_g = _make(name, dtype, "cuda")
    op_c.apply(**kwargs)
    summary = op_g.apply(**kwargs)
    worst = 0.0
    for fc, fg in zip(outs_c, outs_g):
        ref = np.asarray(fc.data_with_halo, dtype=np.float64)
        got = np.asarray(fg.data_with_halo, dtype=np.float64)
        assert np.all(np.isfinite(got)), f"{name}: {fg.name} has non-finite values"
        scale = np.abs(ref).max()
        assert scale > 0, f"{name}: {fc.name} is all zero, the comparison would be empty"
        worst = max(worst, float(np.abs(got - ref).max() / scale))
    OBSERVED[(name, np.dtype(dtype).name)] = (worst, TOL[dtype])
    assert worst <= TOL[dtype], f"{name}: CUDA differs from C by {worst:.2e} (relative)"
    assert all(s.time > 0 for s in summary.sections.values()), summary.sections


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", ["shot3d", "temporary2d", "coupled2d"])
def test_wide_index_kernels_equal_c(name):
    """The 64-bit index instantiation (taken for arrays of more than 2**30 elements) is forced
    with -DSTENCILGEN_WIDE_INDEX and must agree with the C backend like the 32-bit one."""
    op_c, kwargs, outs_c = _make(name, np.float32, "c")
    rng = np.random.default_rng(zlib.crc32(f"{name}float32".encode()))
    eqs, _, outs_g = PROGRAMS[name](np.float32, rng)
    op_g = Operator(eqs, name=name, backend="cuda", cflags="-O3 -DSTENCILGEN_WIDE_INDEX")
    op_c.apply(**kwargs)
    op_g.apply(**kwargs)
    for fc, fg in zip(outs_c, outs_g):
        ref = np.asarray(fc.data_with_halo, dtype=np.float64)
        diff = np.abs(np.asarray(fg.data_with_halo, dtype=np.float64) - ref).max()
        assert diff <= TOL[np.float32] * np.abs(ref).max(), (name, fg.name, diff)


@pytest.mark.gpu
@needs_gpu
def test_arch_is_the_gpus():
    found = re.search(r"sm_\d+", cuda_backend.probe_gpu()[1]).group(0)
    assert f"-arch={found}" in cuda_backend.CudaBackend.toolchain(None).cflags


@pytest.mark.gpu
@needs_gpu
def test_out_of_memory_is_reported_before_allocating():
    cupy = pytest.importorskip("cupy")
    grid = Grid(shape=(64, 256, 256), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    op = Operator([Eq(u.forward, u + u.backward + u.laplace)], name="oom", backend="cuda")
    op.cfunction  # noqa: B018 - build before the memory is taken
    free = cupy.cuda.runtime.memGetInfo()[0]
    hold = cupy.empty(free - 32 * 2 ** 20, dtype=np.uint8)
    try:
        u.data[:] = 1.0
        with pytest.raises(StencilgenError, match=r"not enough GPU memory: the operator's arrays "
                           r"need (\d+\.\d) MiB on the GPU but only (\d+\.\d) MiB") as info:
            op.apply(time_M=1, dt=0.1)
    finally:
        del hold
        cupy.get_default_memory_pool().free_all_blocks()
    need = float(re.search(r"need (\d+\.\d) MiB", str(info.value)).group(1))
    assert abs(need - u.data_with_halo.nbytes / 2 ** 20) < 1.0
    assert np.all(u.data == 1)                             # nothing ran, nothing copied back
    op.apply(time_M=1, dt=0.1)                             # and after freeing, it runs
    assert u.data[2].max() > 2.5


_SUBPROCESS = textwrap.dedent("""
    import sys, time, json
    import numpy as np
    from stencilgen import Eq, Grid, Operator, TimeFunction, StencilgenError
    grid = Grid(shape=(128, 128, 128), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    u.data[:] = np.random.default_rng(0).uniform(-1, 1, u.data.shape)
    op = Operator([Eq(u.forward, 2*u - u.backward + 0.01*u.laplace)], name="sub", backend="cuda")
    if sys.argv[1] == "oob":
        args, keep = op.arguments(time_M=2)
        args["x_M"] += 40                                   # reach past the allocation
        timers = np.zeros(1)
        args["timers"] = timers.ctypes.data
        status = op.cfunction(*[args[p.name] for p in op.program.parameters()])
        print("STATUS", status, "ERROR", op._error_text(status))
        op.apply(time_M=2)
        print("AFTER", "OK" if np.isfinite(u.data).all() else "BAD")
        sys.exit()
    op.cfunction
    t0 = time.perf_counter()
    s = op.apply(time_M=20)
    wall = time.perf_counter() - t0
    print("RESULT", json.dumps({"kernel": s.globals.time, "wall": wall,
                                "sum": float(np.abs(u.data).sum())}))
""")


def _run_sub(tmp_path, mode, **env):
    script = tmp_path / "sub.py"
    script.write_text(_SUBPROCESS)
    full = dict(os.environ, STENCILGEN_CACHE_DIR=configuration["cache-dir"],
                PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]), **env)
    done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                          env=full, timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("blocking", ["0", "1"])
def test_event_timings_with_and_without_launch_blocking(tmp_path, blocking):
    import json
    out = _run_sub(tmp_path, "time", CUDA_LAUNCH_BLOCKING=blocking)
    res = json.loads(out.split("RESULT", 1)[1])
    assert 0 < res["kernel"] <= res["wall"], res
    assert np.isfinite(res["sum"])


@pytest.mark.gpu
@needs_gpu
def test_debug_build_catches_out_of_bounds_access(tmp_path):
    """A bounds violation stops the run with a message naming the array and the kernel."""
    out = _run_sub(tmp_path, "oob", STENCILGEN_DEBUG="1")
    assert re.search(r"STATUS 3 ERROR out-of-bounds access u\[-?\d+\] in kernel sub_section0 "
                     r"\(line \d+ of the generated source; valid offsets .* are -?\d+\.\.\d+\)",
                     out), out
    assert "AFTER OK" in out                      # the CUDA context is still usable


@needs_nvcc
def test_c_flag_setting_does_not_reach_nvcc(monkeypatch):
    """STENCILGEN_CFLAGS is for C compilers (-march=native would make nvcc fail); an
    Operator's own cflags= do replace nvcc's -O3."""
    monkeypatch.setitem(configuration._values, "cflags", ("-O1", "-march=native"))
    op, _, _ = _make("shot2d", np.float32, "cuda")
    assert "-march=native" not in op._toolchain().cflags and "-O3" in op._toolchain().cflags
    op, _, _ = _make("shot2d", np.float32, "c")
    assert {"-O1", "-march=native"} <= set(op._toolchain().cflags)

"""The CUDA backend: generated sources compile with nvcc (everywhere nvcc is), and on a GPU
the results equal the C backend's within round-off; error paths, flags and auto-selection."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import backends
import jitcache
import programs
from programs import PROGRAMS, TOL
from stencilgen import (Eq, Function, Grid, NumericalWarning, Operator, StencilgenError,
                        TimeFunction, clear_cache, configuration, platform)

HAVE_NVCC = shutil.which("nvcc") is not None or bool(
    os.environ.get("CUDA_HOME") and os.path.exists(os.path.join(os.environ["CUDA_HOME"], "bin",
                                                                "nvcc")))
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc (the CUDA toolkit) is not installed")


def _gpu_missing():
    """Why GPU tests cannot run here (None when they can)."""
    if not HAVE_NVCC:
        return "nvcc (the CUDA toolkit) is not installed"
    found, what, _ = platform.probe_gpu()
    return None if found else f"no NVIDIA GPU is visible ({what})"


GPU_MISSING = _gpu_missing()
needs_gpu = pytest.mark.skipif(GPU_MISSING is not None, reason=str(GPU_MISSING))

DTYPES = list(programs.DTYPES.values())
CASES = [pytest.param(name, dtype, id=f"{name}-{np.dtype(dtype).name}")
         for name in PROGRAMS for dtype in DTYPES]


def _make(name, dtype, backend, **options):
    prog = programs.build(name, dtype)
    return Operator(prog.eqs, name=name, backend=backend, **options), prog.kwargs, prog.outputs


def _prebuild(*backends):
    """Compile every program for ``backends`` in parallel processes (nvcc takes about a second
    a program); the tests then fetch their builds from the cache."""
    programs.prebuild([(name, dtype, b, name) for name in PROGRAMS for dtype in DTYPES
                       for b in backends])


@pytest.fixture(scope="module")
def cuda_builds():
    _prebuild("cuda")


@pytest.fixture(scope="module")
def cuda_and_c_builds():
    _prebuild("cuda", "c")


# -- everywhere nvcc is: the source of every program is generated and compiled -------------------

@needs_nvcc
@pytest.mark.parametrize("name, dtype", CASES)
def test_source_compiles(name, dtype, cuda_builds):
    op, _, _ = _make(name, dtype, "cuda")
    prog, src = op.program, op.ccode
    # one kernel per section (sparse sections of a step may share one: ``cuda_sparse``), and
    # the NaN/Inf count's
    shared = sum(g.count("+") for g in re.findall(r"/\* (section[\w +]+): one launch", src))
    # a staged nest that may run two time steps a pass: its pass's kernel, launched (one
    # instance a tile and index type) in the loop of passes, which launches the others again
    passes = [k.steps.kernel for k in prog.kernels if getattr(k, "steps", None)]
    assert src.count("__global__ void") == len(prog.kernels) - shared + 1 + len(passes)
    if passes:
        start, end = "/* the loop of passes (cuda_steps) */", "/* end of the loop of passes */"
        looped = src[src.index(start):src.index(end)]
        assert looped.count("_steps<int, ") == looped.count("_steps<long, ") == \
            len(passes[0].fusion.tiles)
        src = src[:src.index(start)] + src[src.index(end):]
    # every kernel has its one-point-per-thread instances; those that may compute two points
    # per thread have those instances too
    # (a fused or staged nest: one instance a tile and index type, ``cuda_fused``)
    fused = [k for k in prog.kernels if k.fusion is not None]
    plain = len(prog.kernels) - len(fused) - shared
    assert src.count("<int, 1>, sg_grid") == src.count("<long, 1>, sg_grid") == plain
    assert src.count("<int, 2>, sg_grid") == src.count("<long, 2>, sg_grid") <= len(prog.kernels)
    # every kernel is launched early, and its threads wait for the kernel before it before
    # they touch memory (only the NaN/Inf count launches the usual way)
    entry = src[src.index('extern "C" int'):]
    assert entry.count("sg_early(") == 2 * plain + sum(2 * len(k.fusion.tiles) for k in fused) \
        + src.count("<int, 2>, sg_grid") + src.count("<long, 2>, sg_grid")
    assert re.findall(r"(\w+)<<<", entry) == ["sg_nonfinite"] * len(re.findall(r"\w+<<<", entry))
    for kernel, first in re.findall(r"__global__ void[^{;]*?\n(\w+)\([^{;]*?\)\n\{\n\s*(.*)",
                                    src):
        assert first == "SG_GRID_WAIT();" or kernel.startswith("sg_"), kernel
    injections = sum(1 for k in prog.kernels if getattr(k, "kind", None) == "inject")
    assert src.count("atomicAdd(") == injections + 1     # and the NaN/Inf count's
    # the host time loop: up from time_m, or down from time_M for a .backward operator
    start = "time_M" if prog.time_step < 0 else "time_m"
    assert (f"for (long time = {start}" in src) == prog.has_time_loop
    # the time loop only launches: no transfer inside it
    if prog.has_time_loop:
        loop = src[src.index(f"for (long time = {start}"):src.index("cudaDeviceSynchronize(), ")]
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
        assert ln.startswith(("SG_CHECK(", "SG_CHECK_AS(", "sg_release(", "if (d_",
                              "if (sg_d_")), ln
        if ln.startswith(("if (d_", "if (sg_d_")):
            assert "sg_release(cudaFree(" in ln, ln
    # the entry point allocates and copies only the sparse coordinates (fields are the
    # caller's device copies: stencilgen/data/places.py), and frees them at the one exit
    cleanup = body[body.index("sg_cleanup:"):]
    for a in op.program.arrays:
        assert f"cudaMalloc((void **)&d_{a.name}_vec" not in body
        assert f"cudaMemcpy2D({a.name}_vec" not in body
        if a.sparse:
            assert f"cudaFree(d_{a.name}_coords)" in cleanup
    assert "cudaMemcpyDeviceToHost" in body   # the NaN/Inf counts only
    assert body.count("cudaMemcpyDeviceToHost") == 1


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
    m = re.search(r"ERROR: Operator `nogpu` failed: the CUDA runtime: CUDA call (\w+)\(.*\) "
                  r"failed: (.+) \((cudaError\w+)\)", out)
    assert m, out
    assert m.group(1) == "cudaGetDevice" and m.group(2)
    assert "UNCHANGED: True" in out


@needs_nvcc
def test_debug_nvtx_and_fast_math_flags(monkeypatch):
    op, _, _ = _make("shot2d", np.float32, "cuda")
    plain = op._toolchain()
    assert not {"-G", "-lineinfo", "--use_fast_math"} & set(plain.cflags)
    assert "sg_checked" not in op.ccode and "nvtx" not in op.ccode
    arch = [f for f in plain.cflags if f.startswith("-arch=")]
    # the visible GPU's arch where nvcc can build for it, else jitcache's default
    default = jitcache.toolchains._default_arch(plain.cc)
    assert arch == [f"-arch={platform.nvcc_arch(plain.cc) or default}"]
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


def test_gpu_probe_says_what_it_found():
    """The one GPU probe: found or not, the GPU's name or why not, and its compute capability."""
    found, what, cc = platform.probe_gpu()
    assert isinstance(what, str) and what
    if found:
        assert isinstance(cc, int) and cc >= 30 and f"(sm_{cc})" in what
    else:
        assert cc is None


def _fake_nvcc(bin_dir, listed):
    """An nvcc on PATH that lists the architectures ``listed`` and a version, nothing more."""
    archs = "\\n".join(f"compute_{a}" for a in listed)
    path = bin_dir / "nvcc"
    path.write_text("#!/bin/sh\ncase \"$1\" in\n"
                    f"  --list-gpu-arch) printf '{archs}\\n'; exit 0;;\n"
                    "  --version) echo 'Cuda compilation tools, release 12.4'; exit 0;;\n"
                    "esac\nexit 1\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize("listed, gpu, arch", [
    ((75, 80, 90), 90, "sm_90"),     # the GPU's, nvcc builds for it
    ((75, 80), 90, "sm_75"),         # nvcc too old for the GPU: the oldest it has (PTX is JIT-ed)
    ((), 86, "sm_86"),               # nvcc cannot say: the GPU's
    ((60, 70, 75), None, "sm_70"),   # no GPU: the oldest >= sm_70
    ((75, 80, 90), None, "sm_75"),   # (CUDA 13 has no sm_70)
])
def test_platform_picks_the_nvcc_arch(tmp_path, monkeypatch, listed, gpu, arch):
    """The platform passes the probed GPU's arch to jitcache when nvcc lists it; jitcache's own
    default is the oldest arch >= sm_70 nvcc lists, whatever GPU nvidia-smi reports."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = _fake_nvcc(bin_dir, listed)
    smi = bin_dir / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "8.6"\n')
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(platform, "probe_gpu",
                        lambda: (gpu is not None, f"GPU (sm_{gpu})" if gpu else "none", gpu))
    for key in ("debug", "fast-math", "nvtx"):
        monkeypatch.setitem(configuration._values, key, False)
    default = next((a for a in listed if a >= 70), 70)
    assert f"-arch=sm_{default}" in jitcache.nvcc().cflags
    tc = platform.toolchain("cuda")
    assert tc.cc == fake and [f for f in tc.cflags if f.startswith("-arch=")] == [f"-arch={arch}"]


# -- backend="auto" ----------------------------------------------------------------------------

@pytest.mark.parametrize("gpu_found, nvcc_found", [(True, True), (False, True), (True, False)])
def test_auto_selection_says_why(monkeypatch, capsys, gpu_found, nvcc_found):
    what = "NVIDIA H200 (sm_90)" if gpu_found else "cuInit failed: no CUDA-capable device"
    monkeypatch.setattr(platform, "probe_gpu",
                        lambda: (gpu_found, what, 90 if gpu_found else None))
    if not nvcc_found:
        monkeypatch.setattr(shutil, "which", lambda name: None)
        monkeypatch.delenv("CUDA_HOME", raising=False)
    elif not HAVE_NVCC:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    usable, why = platform.usable("cuda")
    chosen, reason = platform.choose_auto()
    assert usable == (gpu_found and nvcc_found)
    assert chosen == ("cuda" if usable else "c") and reason == why
    if usable:
        assert "NVIDIA H200 (sm_90)" in why and "nvcc" in why
    elif not nvcc_found:
        assert "nvcc" in why and "not on PATH" in why
    else:
        assert "no NVIDIA GPU is usable" in why and what in why
    grid = Grid(shape=(6,))
    u = Function(name="u", grid=grid)
    monkeypatch.setattr(platform, "_SAID", set())
    op = Operator([Eq(u, u + 1)], backend="auto")
    Operator([Eq(u, u + 2)], backend="auto")   # said once a process, not once an Operator
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "Backend `auto`" in ln]
    assert len(lines) == 1 and f"Backend `auto` chose `{chosen}`: {why}" in lines[0]
    assert op._target == platform.Target(chosen, backends.get_backend(chosen), why)
    assert op._target.emitter.name == chosen


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
def test_cuda_equals_c(name, dtype, cuda_and_c_builds):
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


def _assert_float32_equal(name, op_c, op_g, kwargs, outs_c, outs_g):
    """Run both Operators; the GPU's outputs must be the C backend's to float32 round-off."""
    op_c.apply(**kwargs)
    op_g.apply(**kwargs)
    for fc, fg in zip(outs_c, outs_g):
        ref = np.asarray(fc.data_with_halo, dtype=np.float64)
        diff = np.abs(np.asarray(fg.data_with_halo, dtype=np.float64) - ref).max()
        assert diff <= TOL[np.float32] * np.abs(ref).max(), (name, fg.name, diff)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", ["shot3d", "temporary2d", "coupled2d"])
def test_wide_index_kernels_equal_c(name):
    """The 64-bit index instantiation (taken for arrays of more than 2**30 elements) is forced
    with -DSTENCILGEN_WIDE_INDEX and must agree with the C backend like the 32-bit one."""
    op_c, kwargs, outs_c = _make(name, np.float32, "c")
    op_g, _, outs_g = _make(name, np.float32, "cuda", cflags="-O3 -DSTENCILGEN_WIDE_INDEX")
    _assert_float32_equal(name, op_c, op_g, kwargs, outs_c, outs_g)


@pytest.mark.gpu
@needs_gpu
def test_arch_is_the_gpus():
    gpu, what, cc = platform.probe_gpu()
    found = re.search(r"sm_\d+", what).group(0)
    assert gpu and found == f"sm_{cc}"
    assert f"-arch={found}" in platform.toolchain("cuda", None).cflags


def test_out_of_memory_names_the_bytes_and_the_ways_out():
    """A 1400^3 model on one GPU (an H200: 139.8 GiB): the message gives the whole
    footprint, the largest arrays, how many GPUs would hold it, and 16-bit storage."""
    import types
    from backends.common.device_layout import DeviceLayout
    from stencilgen.data.places import out_of_memory
    time_fn = DeviceLayout.of((3, 1408, 1408, 1408), 4, 4)
    medium = DeviceLayout.of((1408, 1408, 1408), 4, 4)
    bound = [(types.SimpleNamespace(name=n), time_fn) for n in ("P", "M")]
    bound += [(types.SimpleNamespace(name=n), medium) for n in ("V", "b", "epsilon", "delta",
                                                                "theta", "phi", "r0")]
    whole = sum(lay.length * lay.itemsize for _, lay in bound)
    total = int(139.8 * 2 ** 30)
    text = out_of_memory(bound, whole, total - 2 ** 29, total)
    gpus = -(-whole // int(0.9 * total))
    assert f"need {whole / 2 ** 30:.2f} GiB on the GPU" in text
    each = time_fn.length * 4 / 2 ** 30
    assert f"largest P {each:.2f} GiB, M {each:.2f} GiB, V " in text
    assert f"over {gpus} GPUs or more" in text and f"mpirun -n {gpus}" in text
    assert "16 bits" in text and "Nothing was allocated" in text


@pytest.mark.gpu
@needs_gpu
def test_out_of_memory_is_reported_before_allocating():
    cupy = pytest.importorskip("cupy")
    grid = Grid(shape=(64, 256, 256), extent=(63.0, 255.0, 255.0), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    op = Operator([Eq(u.forward, u + u.backward + u.laplace)], name="oom", backend="cuda")
    op.cfunction  # noqa: B018 - build before the memory is taken
    clear_cache()   # earlier tests' dropped fields: freed now, not by the check's own sweep
    free = cupy.cuda.runtime.memGetInfo()[0]
    hold = cupy.empty(free - 32 * 2 ** 20, dtype=np.uint8)
    try:
        u.data[:] = 1.0
        with pytest.raises(StencilgenError, match=r"not enough GPU memory: the operator's arrays "
                           r"need (\d+\.\d) MiB on the GPU .* but only (\d+\.\d) MiB") as info:
            op.apply(time_m=0, time_M=1, dt=0.1)
    finally:
        del hold
        cupy.get_default_memory_pool().free_all_blocks()
    need = float(re.search(r"need (\d+\.\d) MiB", str(info.value)).group(1))
    # the device copy's rows are padded to 128 bytes (backends/device_layout.py)
    width = u.data_with_halo.shape[-1]
    assert abs(need - u.data_with_halo.nbytes / width * (-(-width // 32) * 32) / 2 ** 20) < 1.0
    assert np.all(u.data == 1)                             # nothing ran, nothing copied back
    op.apply(time_m=0, time_M=1, dt=0.1)                   # and after freeing, it runs
    assert u.data[2].max() > 2.5


_SUBPROCESS = textwrap.dedent("""
    import sys, time, json
    import numpy as np
    from stencilgen import Eq, Grid, Operator, TimeFunction, StencilgenError
    grid = Grid(shape=(128, 128, 128), extent=(127.0, 127.0, 127.0), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
    u.data[:] = np.random.default_rng(0).uniform(-1, 1, u.data.shape)
    op = Operator([Eq(u.forward, 2*u - u.backward + 0.01*u.laplace)], name="sub", backend="cuda")
    if sys.argv[1] == "oob":
        args, keep = op._arguments(time_m=0, time_M=2)
        args["x_M"] += 40                                   # reach past the allocation
        timers = np.zeros(1)
        args["timers"] = timers.ctypes.data
        args["checks"] = None                               # no NaN/Inf count
        args["tuning"] = None                               # default launch shapes
        status = op.cfunction(*[args[p.name] for p in op.program.parameters()])
        print("STATUS", status, "ERROR", op._error_text(status))
        op.apply(time_m=0, time_M=2)
        print("AFTER", "OK" if np.isfinite(u.data).all() else "BAD")
        sys.exit()
    op.cfunction
    t0 = time.perf_counter()
    s = op.apply(time_m=0, time_M=20)
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


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_count_on_the_gpu(dtype):
    """The NaN/Inf count runs on the GPU and gives the C backend's count and warning."""
    counts = {}
    for backend in ("c", "cuda"):
        grid = Grid(shape=(40, 30), extent=(39.0, 29.0), dtype=dtype)
        u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2)
        u.data[0, 10, 10] = np.nan
        u.data[0, 30, 5] = np.inf
        op = Operator([Eq(u.forward, u + 0.1 * u.laplace)], backend=backend)
        with pytest.warns(NumericalWarning) as record:
            op.apply(time_M=2, dt=0.1)
        counts[backend] = str(record[0].message)
        assert np.count_nonzero(~np.isfinite(u.data[1])) > 0
        u.data[:] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumericalWarning)
            op.apply(time_M=2, dt=0.1)          # finite data: no warning
    assert counts["c"] == counts["cuda"]


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("name", ["laplace3d_so8", "temporary2d", "shot3d"])
def test_launches_in_chunks_equal_c(name, monkeypatch):
    """A nest larger than one grid can cover is launched in chunks (each thread one point):
    with the grid limits shrunk to a few blocks every nest takes several chunks, and the
    result must still be the C backend's."""
    monkeypatch.setattr("backends.cuda.kernel_text.GRID_LIMIT", ("3L", "2L", "2L"))
    op_c, kwargs, outs_c = _make(name, np.float32, "c")
    op_g, _, outs_g = _make(name, np.float32, "cuda")
    assert "sg_b1 += 2L*" in op_g.ccode or "sg_b0 += 3L*" in op_g.ccode
    _assert_float32_equal(name, op_c, op_g, kwargs, outs_c, outs_g)

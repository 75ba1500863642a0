"""The OpenACC backend against the C backend, and the OpenACC toolchains' command lines.

Every program below is built twice from the same random data, with ``backend="c"`` and with
``backend="openacc"``, and the results are compared: in CI (no GPU, no offload compiler) the
OpenACC build runs on the host; on the GPU machine the ``gpu`` test runs the same programs on
the device. Tolerances, relative to the largest |C value|: float64 1e-12, float32 2e-5 per
time step (round-off of a few dozen terms, device math functions and atomics differ in the
last bits). The nvc++ path is checked through the command lines it builds with a fake nvc++.
"""
from __future__ import annotations

import logging
import os
import stat
import zlib
from pathlib import Path

import numpy as np
import pytest
import sympy

import jitcache
from jitcache import toolchains
from stencilgen import (CompilationError, CompilerNotFoundError, Constant, Eq, Function, Grid,
                        Operator, SparseFunction, SparseTimeFunction, TimeFunction,
                        configuration, solve)

SHAPES = {1: (41,), 2: (23, 19), 3: (17, 15, 13)}
EXTENTS = {1: (1.3,), 2: (1.3, 0.7), 3: (1.3, 0.7, 2.1)}
TOL = {np.float64: 1e-12, np.float32: 2e-5}


# -- the programs: builder(grid dtype, rng) -> (equations, outputs, apply arguments, steps) ------

def _grid(dim, dtype):
    return Grid(shape=SHAPES[dim], extent=EXTENTS[dim], dtype=dtype)


def _rand(f, rng, lo=-1.0, hi=1.0):
    f.data[:] = rng.uniform(lo, hi, size=f.data.shape)
    return f


def laplace(dim, so):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=so), rng)
        out = Function(name="out", grid=grid, space_order=so)
        return [Eq(out, u.laplace)], [out], {}, 1
    return build


def axis_derivatives(dtype, rng):
    grid = _grid(3, dtype)
    u = _rand(Function(name="u", grid=grid, space_order=4), rng)
    outs = [Function(name=n, grid=grid, space_order=4) for n in ("fx", "fy", "fz", "fzz")]
    return [Eq(outs[0], u.dx), Eq(outs[1], u.dy), Eq(outs[2], u.dz),
            Eq(outs[3], u.dz2)], outs, {}, 1


def cross_derivatives(dtype, rng):
    grid = _grid(3, dtype)
    u = _rand(Function(name="u", grid=grid, space_order=4), rng)
    outs = [Function(name=n, grid=grid, space_order=4) for n in ("fxy", "fyz")]
    return [Eq(outs[0], u.dx.dy), Eq(outs[1], u.dy.dz)], outs, {}, 1


def staggered(dtype, rng):
    grid = _grid(3, dtype)
    x, y, z = grid.dimensions
    u = _rand(Function(name="u", grid=grid, space_order=8), rng)
    outs = [Function(name=n, grid=grid, space_order=8) for n in ("dxp", "dym", "dzp")]
    return [Eq(outs[0], u.dx(x0=x + x.spacing / 2)), Eq(outs[1], u.dy(x0=y - y.spacing / 2)),
            Eq(outs[2], u.dz(x0=z + z.spacing / 2))], outs, {}, 1


def expression_derivative(dim):
    """div(b grad u) with staggered pairs at space order 8: the inner product is a temporary."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = _rand(Function(name="u", grid=grid, space_order=8), rng)
        b = _rand(Function(name="b", grid=grid, space_order=8), rng, 0.5, 2.0)
        out = Function(name="out", grid=grid, space_order=8)
        expr = 0
        for d, name in zip(grid.dimensions, ("dx", "dy", "dz")):
            expr += getattr(b * getattr(u, name)(x0=d + d.spacing / 2), name)(x0=d - d.spacing / 2)
        return [Eq(out, expr)], [out], {}, 1
    return build


def hoisted_invariant(dtype, rng):
    """sin(theta) and sqrt(1 + eps) are time invariant: hoisted into arrays before the loop."""
    grid = _grid(3, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    u.data[:] = rng.uniform(-1, 1, size=u.data.shape)
    m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
    th = _rand(Function(name="th", grid=grid, space_order=4), rng, -3, 3)
    eps = _rand(Function(name="eps", grid=grid, space_order=4), rng, 0.0, 0.3)
    pde = m * u.dt2 - sympy.sqrt(1 + 2 * eps) * u.laplace - sympy.sin(th) * u.dx
    dt = 0.1 * min(grid.spacing)
    return [Eq(u.forward, solve(pde, u.forward))], [u], dict(time_M=4, dt=dt), 4


def coupled(dtype, rng):
    """Velocity-pressure, 2D, staggered: two TimeFunctions updated from each other."""
    grid = _grid(2, dtype)
    x, y = grid.dimensions
    p, vx, vy = (TimeFunction(name=n, grid=grid, time_order=1, space_order=4)
                 for n in ("p", "vx", "vy"))
    for f in (p, vx, vy):
        f.data[0] = rng.uniform(-1, 1, size=grid.shape)
    b = _rand(Function(name="b", grid=grid, space_order=4), rng, 0.5, 1.5)
    k = _rand(Function(name="k", grid=grid, space_order=4), rng, 0.5, 1.5)
    dt = 0.1 * min(grid.spacing)
    eqs = [Eq(vx.forward, vx - dt * b * p.dx(x0=x + x.spacing / 2)),
           Eq(vy.forward, vy - dt * b * p.dy(x0=y + y.spacing / 2)),
           Eq(p.forward, p - dt * k * (vx.forward.dx(x0=x - x.spacing / 2)
                                       + vy.forward.dy(x0=y - y.spacing / 2)))]
    return eqs, [p, vx, vy], dict(time_M=3, dt=dt), 4


def damped_acoustic(dim):
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=8)
        u.data[:] = rng.uniform(-1, 1, size=u.data.shape)
        m = _rand(Function(name="m", grid=grid, space_order=8), rng, 0.3, 1.2)
        eta = _rand(Function(name="eta", grid=grid, space_order=8), rng, 0.0, 5.0)
        dt = 0.2 * min(grid.spacing)
        pde = m * u.dt2 - u.laplace + eta * u.dt
        return [Eq(u.forward, solve(pde, u.forward))], [u], dict(time_m=1, time_M=4, dt=dt), 4
    return build


def acoustic_with_sources(dim):
    """A source injected and a receiver sampled every step; a Constant scales the source."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
        m = _rand(Function(name="m", grid=grid, space_order=4), rng, 0.5, 1.5)
        nt, lo, ext = 8, np.array(grid.origin), np.array(grid.extent)
        pts = lo + rng.random((5, dim)) * ext
        src = SparseTimeFunction(name="src", grid=grid, npoint=5, nt=nt, coordinates=pts)
        src.data[:] = rng.uniform(-1, 1, size=src.data.shape)
        rec = SparseTimeFunction(name="rec", grid=grid, npoint=7, nt=nt,
                                 coordinates=lo + rng.random((7, dim)) * ext)
        a = Constant(name="a", value=0.7)
        dt = 0.2 * min(grid.spacing)
        eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]
        eqs += src.inject(field=u.forward, expr=a * src * dt ** 2 / m)
        eqs += rec.interpolate(expr=u)
        return eqs, [u, rec], dict(time_M=nt - 2, dt=dt), nt
    return build


def sparse_only(dim):
    """Injection then interpolation with no time loop (many points share cells: atomics)."""
    def build(dtype, rng):
        grid = _grid(dim, dtype)
        f = Function(name="f", grid=grid)
        lo, ext = np.array(grid.origin), np.array(grid.extent)
        pts = lo + rng.random((60, dim)) * ext * 0.3          # crowded in a corner
        s = SparseFunction(name="s", grid=grid, npoint=60, coordinates=pts)
        s.data[:] = rng.uniform(-1, 1, size=60)
        g = _rand(Function(name="g", grid=grid), rng)
        r = SparseFunction(name="r", grid=grid, npoint=9, coordinates=lo + rng.random((9, dim)) * ext)
        return s.inject(field=f, expr=s) + r.interpolate(expr=g * g), [f, r], {}, 1
    return build


def saved_wavefield(dtype, rng):
    """A TimeFunction saving every step (direct time index, no modulo)."""
    grid = _grid(2, dtype)
    u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2, save=6)
    u.data[0] = rng.uniform(-1, 1, size=grid.shape)
    dt = 0.1 * min(grid.spacing)
    return [Eq(u.forward, u + dt * u.laplace)], [u], dict(dt=dt), 5


PROGRAMS = {
    "laplace-1d-so2": laplace(1, 2), "laplace-2d-so4": laplace(2, 4),
    "laplace-3d-so8": laplace(3, 8), "laplace-3d-so12": laplace(3, 12),
    "laplace-3d-so16": laplace(3, 16),
    "dx-dy-dz": axis_derivatives, "cross": cross_derivatives, "staggered": staggered,
    "temporary-2d": expression_derivative(2), "temporary-3d": expression_derivative(3),
    "hoisted-invariant": hoisted_invariant, "coupled-2d": coupled,
    "damped-acoustic-3d": damped_acoustic(3), "damped-acoustic-1d": damped_acoustic(1),
    "sources-3d": acoustic_with_sources(3), "sources-2d": acoustic_with_sources(2),
    "sparse-1d": sparse_only(1), "sparse-3d": sparse_only(3), "saved-2d": saved_wavefield,
}
DTYPES = {"f32": np.float32, "f64": np.float64}


def run_program(name, dtype, backend):
    """Build program ``name`` on fresh seeded data, run it with ``backend``; (outputs, op, steps)."""
    rng = np.random.default_rng(zlib.crc32(f"{name}-{np.dtype(dtype).name}".encode()))
    eqs, outs, kwargs, steps = PROGRAMS[name](dtype, rng)
    op = Operator(eqs, name=f"acc_{name.replace('-', '_')}", backend=backend)
    op.apply(**kwargs)
    return [np.asarray(f.data, dtype=np.float64).copy() for f in outs], op, steps


def compare(name, dtype):
    """Max relative difference (to the largest |C value|) of OpenACC vs C, and its tolerance."""
    ref, _, steps = run_program(name, dtype, "c")
    got, op, _ = run_program(name, dtype, "openacc")
    worst = 0.0
    for r, g in zip(ref, got):
        assert np.all(np.isfinite(g)), f"{name}: non-finite values from the OpenACC build"
        scale = np.abs(r).max()
        assert scale > 0, f"{name}: degenerate program (all zeros)"
        worst = max(worst, np.abs(g - r).max() / scale)
    return worst, TOL[dtype] * max(1, steps), op


def _build_one(job):
    name, dtype, backend, cache_dir = job
    configuration["cache-dir"] = cache_dir
    eqs, *_ = PROGRAMS[name](dtype, np.random.default_rng(0))
    op = Operator(eqs, name=f"acc_{name.replace('-', '_')}", backend=backend)
    return jitcache.build(op.ccode, op._toolchain(), op.name, cache_dir=cache_dir).seconds


def prebuild(processes=None):
    """Compile every program for C and OpenACC in parallel processes (offload builds are slow);
    later Operators fetch them from the cache. Returns the seconds spent compiling, summed."""
    import multiprocessing
    jobs = [(n, d, b, configuration["cache-dir"]) for n in PROGRAMS for d in DTYPES.values()
            for b in ("c", "openacc")]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        return sum(pool.map(_build_one, jobs))


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("name", PROGRAMS)
def test_openacc_matches_c(name, dtype):
    diff, tol, op = compare(name, dtype)
    assert diff <= tol, (f"{name} ({np.dtype(dtype).name}): OpenACC differs from C by "
                         f"{diff:.3e} (relative), more than {tol:.1e}")
    assert "#pragma acc data" in op.ccode and "#pragma acc parallel loop" in op.ccode


@pytest.mark.gpu
def test_openacc_runs_on_the_gpu():
    """On the GPU machine: the build offloads, the runtime says the regions ran on the device,
    and every program matches the C backend."""
    tc = jitcache.openacc(cc=configuration["openacc-cc"])
    if "host" in tc.name or toolchains.visible_gpu_cc() is None:
        pytest.skip(f"no GPU or no offloading OpenACC compiler ({tc.name})")
    prebuild()
    failures = []
    for name in PROGRAMS:
        for dtype in DTYPES.values():
            diff, tol, op = compare(name, dtype)
            assert op._build.library.stencilgen_acc_device() == 1, f"{name} ran on the host"
            if diff > tol:
                failures.append(f"{name} {np.dtype(dtype).name}: {diff:.2e} > {tol:.0e}")
    assert not failures, "; ".join(failures)


# -- the generated source ---------------------------------------------------------------------

def _source(name="sources-3d", dtype=np.float32):
    rng = np.random.default_rng(0)
    eqs, *_ = PROGRAMS[name](dtype, rng)
    return Operator(eqs, name="src_check", backend="openacc").ccode


def test_source_has_data_region_present_and_atomics():
    code = _source()
    data = next(line for line in code.splitlines() if "#pragma acc data" in line)
    # read-only arrays (m, src, coordinates) copied in only; u and rec copied both ways
    assert "copyin(" in data and "m_vec[0:m_len]" in data.split("copy(")[0]
    assert "copy(u_vec[0:u_len], rec_vec[0:rec_len])" in data
    assert "src_coords[0:src_np*3]" in data
    loops = [line for line in code.splitlines() if "acc parallel loop" in line]
    assert any("collapse(3) gang vector present(" in line for line in loops)
    assert all("present(" in line for line in loops)
    assert "#pragma acc atomic update" in code and "#pragma acc loop seq" in code
    assert code.count("#pragma acc wait") == len(loops)
    assert "omp_get_wtime" not in code and "stencilgen_wtime()" in code
    assert 'extern "C"' in code and "stencilgen_acc_device(void)" in code
    # the device is chosen before the data region (host builds must not run on a GPU)
    assert code.index("stencilgen_acc_select();\n  /* arrays") < code.index("#pragma acc data")


def test_temporaries_only_copied_in():
    code = _source("hoisted-invariant", np.float64)
    data = next(line for line in code.splitlines() if "#pragma acc data" in line)
    copyin, copy = data.split(" copy(")
    assert "inv0_vec[0:inv0_len]" in copyin and "inv" not in copy
    assert "sin(" in code and "sinf(" not in code


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_log_names_compiler_and_where_it_runs(tmp_path, monkeypatch):
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    eqs, *_ = laplace(2, 2)(np.float32, np.random.default_rng(1))
    handler = _Lines()
    logging.getLogger("stencilgen").addHandler(handler)
    try:
        op = Operator(eqs, name="acc_log", backend="openacc")
        op.apply()
    finally:
        logging.getLogger("stencilgen").removeHandler(handler)
    text = "\n".join(handler.lines)
    tc = op._toolchain()
    assert f"with `{tc.name}`" in text and tc.name.startswith(("GCC (OpenACC", "NVC"))
    expected = "on the GPU" if op._build.library.stencilgen_acc_device() else "on the HOST"
    assert f"Operator `acc_log` runs its OpenACC compute regions {expected}" in text
    assert op.source_path.suffix == tc.source_suffix


def test_cached_and_backdoor(tmp_path, monkeypatch):
    """A second Operator fetches the build; an edited source is used with the backdoor."""
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    rng = np.random.default_rng(2)
    build = laplace(1, 2)
    eqs, (out,), *_ = build(np.float64, rng)
    op = Operator(eqs, name="acc_cache", backend="openacc")
    op.apply()
    first = out.data.copy()
    again = Operator(eqs, name="acc_cache", backend="openacc")
    again.apply()
    assert not again._build.compiled and again.source_path == op.source_path
    np.testing.assert_array_equal(out.data, first)
    src = op.source_path
    src.write_text(src.read_text().replace("return 0;\n}", "out_vec[out_o] = 42.0;\n  return 0;\n}"))
    monkeypatch.setitem(configuration._values, "jit-backdoor", True)
    edited = Operator(eqs, name="acc_cache", backend="openacc")
    edited.apply()
    assert edited._build.backdoor and out.data[0] == 42.0


def test_build_failure_names_source_and_log(tmp_path, monkeypatch):
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    eqs, *_ = laplace(1, 2)(np.float64, np.random.default_rng(3))
    op = Operator(eqs, name="acc_fail", backend="openacc", cflags="-O2 -fno-such-flag-xyz")
    with pytest.raises(CompilationError) as info:
        op.apply()
    msg = str(info.value)
    assert "acc_fail.c" in msg and "-fno-such-flag-xyz" in msg and "-fopenacc" in msg
    assert info.value.source_path.endswith("acc_fail.c")


# -- toolchains: GCC offload detection, nvc++ command lines, the forcing setting -------------

def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


FAKE_GCC = """\
case "$1" in
  --version) echo "gcc (Fake) 12.2.0"; exit 0;;
  -print-prog-name=accel/nvptx-none/mkoffload) echo "{mkoffload}"; exit 0;;
esac
# an offload compile must name an isa that today's ptxas accepts
case " $* " in *" -foffload=nvptx-none "*) case "$*" in *-misa=sm_80*) ;; *) exit 1;; esac;; esac
# a compile: create the file after -o
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done
exit {status}
"""


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """An empty directory first on PATH for fake compilers (cached probes are forgotten)."""
    d = tmp_path / "bin"
    d.mkdir()
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    toolchains._gcc_offloads.cache_clear()
    toolchains.visible_gpu_cc.cache_clear()
    yield d
    toolchains._gcc_offloads.cache_clear()
    toolchains.visible_gpu_cc.cache_clear()


def test_gcc_offload_detected(fake_bin):
    mk = _script(fake_bin / "mkoffload", "exit 0\n")
    cc = _script(fake_bin / "gcc-offload", FAKE_GCC.format(mkoffload=mk, status=0))
    assert jitcache.gcc_offloads(cc)
    tc = jitcache.openacc(cc=cc)
    assert tc.name == "GCC (OpenACC, offload to nvptx-none)" and tc.source_suffix == ".c"
    assert tc.cflags == ("-O3", "-march=native", "-std=gnu11", "-fopenacc",
                         "-foffload=nvptx-none", "-foffload-options=-misa=sm_80",
                         "-foffload-options=-lm")
    cmd = tc.command("k.c", "libk.so")
    assert cmd[0] == cc and "-shared" in cmd and "-fPIC" in cmd and cmd[-1] == "-lm"
    # the user's cflags replace -O3 -march=native; their own -foffload wins
    assert jitcache.openacc("-O2 -foffload=disable", cc=cc).name == "GCC (OpenACC, host)"
    assert jitcache.openacc("-O1", cc=cc).cflags[:2] == ("-O1", "-std=gnu11")


def test_gcc_without_offload_compiler_runs_on_host(fake_bin):
    cc = _script(fake_bin / "gcc-plain", FAKE_GCC.format(
        mkoffload="accel/nvptx-none/mkoffload", status=0))      # gcc echoes the name: absent
    assert not jitcache.gcc_offloads(cc)
    tc = jitcache.openacc(cc=cc)
    assert tc.name == "GCC (OpenACC, host)" and "-foffload=disable" in tc.cflags
    assert "-DSTENCILGEN_ACC_HOST" in tc.cflags      # selects the host device at run time
    with pytest.raises(CompilerNotFoundError, match="offload compiler"):
        jitcache.gcc_openacc(cc=cc, offload=True)


def test_gcc_broken_offload_compiler_runs_on_host(fake_bin):
    """mkoffload present but the probe compile fails: not offloading."""
    mk = _script(fake_bin / "mkoffload", "exit 0\n")
    cc = _script(fake_bin / "gcc-broken", FAKE_GCC.format(mkoffload=mk, status=1))
    assert not jitcache.gcc_offloads(cc)
    assert jitcache.openacc(cc=cc).name == "GCC (OpenACC, host)"


def test_default_gcc_prefers_an_offloading_one(fake_bin):
    """Without a forced compiler, a gcc-N that offloads beats a plain gcc earlier on PATH."""
    mk = _script(fake_bin / "mkoffload", "exit 0\n")
    _script(fake_bin / "gcc", FAKE_GCC.format(mkoffload="none", status=0))
    good = _script(fake_bin / "gcc-12", FAKE_GCC.format(mkoffload=mk, status=0))
    for v in (14, 13, 11, 10):   # hide real versioned gccs that may be installed
        _script(fake_bin / f"gcc-{v}", FAKE_GCC.format(mkoffload="none", status=0))
    tc = jitcache.gcc_openacc()
    assert tc.cc == good and "offload to nvptx-none" in tc.name


NVCXX_VERSION = "\nnvc++ {v} 64-bit target on x86-64 Linux -tp znver3 \nNVIDIA Compilers and Tools\n"


def _fake_nvcxx(d, version="24.5-1", smi="9.0"):
    _script(d / "nvidia-smi", f'echo "{smi}"\n')
    return _script(d / "nvc++", f'printf "{NVCXX_VERSION.format(v=version)}"\n'
                   'while [ $# -gt 0 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done\n')


def test_nvcxx_command_line(fake_bin):
    cc = _fake_nvcxx(fake_bin)
    tc = jitcache.openacc()                          # nvc++ on PATH wins over gcc
    assert tc.cc == cc and tc.name == "NVC++ (OpenACC, cc90)" and tc.source_suffix == ".cpp"
    assert tc.cflags == ("-O3", "-acc", "-gpu=cc90")
    cmd = tc.command("k.cpp", "libk.so")
    assert cmd[:4] == [cc, "-O3", "-acc", "-gpu=cc90"]
    assert cmd[4:6] == ["-shared", "-fPIC"] and cmd[cmd.index("-o") + 1] == "libk.so"
    assert tc.version() == "nvc++ 24.5-1 64-bit target on x86-64 Linux -tp znver3"
    assert toolchains.nvhpc_version(tc.version_text()) == (24, 5)
    debug = jitcache.openacc(debug=True)
    assert "-Minfo=accel" in debug.cflags and cache_key_differs(tc, debug)
    assert jitcache.nvhpc(cflags="-O2 -gpu=cc80,managed").cflags == ("-O2", "-gpu=cc80,managed",
                                                                    "-acc")


def cache_key_differs(a, b):
    return jitcache.cache_key("x", a) != jitcache.cache_key("x", b)


def test_nvcxx_arch_and_versions(fake_bin):
    _fake_nvcxx(fake_bin, smi="8.0")
    assert jitcache.nvhpc().cflags[-1] == "-gpu=cc80"
    assert jitcache.nvhpc(gpu="sm_70").name == "NVC++ (OpenACC, cc70)"
    assert toolchains.nvhpc_version("nvc 23.11-0 64-bit target") == (23, 11)
    assert toolchains.nvhpc_version("pgc++ 19.10-0 LLVM 64-bit") == (19, 10)
    assert toolchains.nvhpc_version("gcc (Debian 12.2.0) 12.2.0") is None


def test_nvcxx_without_gpu_targets_all(fake_bin):
    _fake_nvcxx(fake_bin, smi="")
    assert jitcache.nvhpc().name == "NVC++ (OpenACC, ccall)"


def test_old_pgi_rejected(fake_bin, tmp_path):
    d = tmp_path / "pgi"
    d.mkdir()
    cc = _script(d / "pgc++", 'printf "\\npgc++ 19.10-0 LLVM 64-bit target\\n"\n')
    with pytest.raises(CompilerNotFoundError, match="20.7 or newer"):
        jitcache.openacc(cc=cc)


def test_forcing_setting(fake_bin, monkeypatch):
    """openacc-cc / STENCILGEN_OPENACC_CC picks the compiler, even when nvc++ is installed."""
    from backends.openacc import OpenACCBackend
    _fake_nvcxx(fake_bin)
    assert OpenACCBackend.toolchain(None).name.startswith("NVC++")
    monkeypatch.setitem(configuration._values, "openacc-cc", "gcc")
    forced = OpenACCBackend.toolchain(None)
    assert forced.name.startswith("GCC (OpenACC") and os.path.basename(forced.cc) == "gcc"
    monkeypatch.setitem(configuration._values, "openacc-cc", "no-such-compiler-xyz")
    with pytest.raises(CompilerNotFoundError, match="STENCILGEN_OPENACC_CC"):
        OpenACCBackend.toolchain(None)
    ok, why = OpenACCBackend.usable()
    assert not ok and "no-such-compiler-xyz" in why
    monkeypatch.setenv("STENCILGEN_OPENACC_CC", "nvc++")
    from stencilgen.configuration import Configuration
    assert Configuration()["openacc-cc"] == "nvc++"


def test_usable_says_where_it_runs():
    from backends.openacc import OpenACCBackend
    ok, why = OpenACCBackend.usable()
    assert ok and ("host" in why or "GPU" in why)

"""The OpenACC backend against the C backend, and the OpenACC toolchains' command lines.

Every program of programs.py (the test programs shared with test_cuda.py) is built twice from
the same random data, with ``backend="c"`` and with ``backend="openacc"``, and the results are
compared: in CI (no GPU, no offload compiler) the OpenACC build runs on the host; on the GPU
machine the ``gpu`` test runs the same programs on the device. Tolerances, relative to the
largest |C value|: float64 1e-12, float32 2e-5 per time step (round-off of a few dozen terms,
device math functions and atomics differ in the last bits). The nvc++ path is checked through
the command lines it builds with a fake nvc++.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

import jitcache
import programs
from jitcache import toolchains
from programs import PROGRAMS, TOL, laplace
from backends import EmitOptions
from backends.openacc import OpenACCBackend
from stencilgen import (CompilationError, CompilerNotFoundError, Eq, Grid, NumericalWarning,
                        Operator, TimeFunction, configuration, platform)

DTYPES = programs.DTYPES


def _op_name(name):
    return f"acc_{name}"


def run_program(name, dtype, backend):
    """Build program ``name`` on fresh seeded data, run it with ``backend``; (outputs, op, steps)."""
    prog = programs.build(name, dtype)
    op = Operator(prog.eqs, name=_op_name(name), backend=backend)
    op.apply(**prog.kwargs)
    return [np.asarray(f.data, dtype=np.float64).copy() for f in prog.outputs], op, prog.steps


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


def prebuild(processes=None):
    """Compile every program for C and OpenACC in parallel processes (offload builds are slow);
    later Operators fetch them from the cache. Returns the seconds spent compiling, summed."""
    return programs.prebuild([(n, d, b, _op_name(n)) for n in PROGRAMS for d in DTYPES.values()
                              for b in ("c", "openacc")], processes)


@pytest.fixture(scope="module")
def builds():
    prebuild()


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("name", PROGRAMS)
def test_openacc_matches_c(name, dtype, builds):
    diff, tol, op = compare(name, dtype)
    assert diff <= tol, (f"{name} ({np.dtype(dtype).name}): OpenACC differs from C by "
                         f"{diff:.3e} (relative), more than {tol:.1e}")
    assert "#pragma acc data" in op.ccode and "#pragma acc parallel loop" in op.ccode


@pytest.mark.gpu
def test_openacc_runs_on_the_gpu():
    """On the GPU machine: the build offloads, the runtime says the regions ran on the device,
    and every program matches the C backend."""
    tc = platform.toolchain("openacc")
    if "host" in tc.name or not platform.probe_gpu()[0]:
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


@pytest.mark.gpu
def test_nan_count_in_the_data_region_matches_c():
    """The NaN/Inf count runs inside the data region (on the GPU where the build offloads)
    and gives the C backend's warning."""
    messages = {}
    for backend in ("c", "openacc"):
        grid = Grid(shape=(40, 30), extent=(39.0, 29.0))
        u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2)
        u.data[0, 10, 10] = np.nan
        op = Operator([Eq(u.forward, u + 0.1 * u.laplace)], backend=backend)
        with pytest.warns(NumericalWarning) as record:
            op.apply(time_M=2, dt=0.1)
        messages[backend] = str(record[0].message)
    assert messages["c"] == messages["openacc"]


# -- the generated source ---------------------------------------------------------------------

def _source(name="shot3d", dtype=np.float32):
    rng = np.random.default_rng(0)
    eqs = PROGRAMS[name](dtype, rng).eqs
    return Operator(eqs, name="src_check", backend="openacc").ccode


def test_source_has_data_region_present_and_atomics():
    code = _source()
    data = next(line for line in code.splitlines() if "#pragma acc data" in line)
    # read-only arrays (m, src, coordinates) copied in only; u and rec copied both ways
    assert "copyin(" in data and "m_vec[0:m_len]" in data.split("copy(")[0]
    assert "copy(u_vec[0:u_len], rec_vec[0:rec_len])" in data
    assert "src_coords[0:src_np*3]" in data
    loops = [line for line in code.splitlines()
             if "acc parallel loop" in line and "reduction(" not in line]
    # the NaN/Inf count of each written array runs on the device too
    counts = [line for line in code.splitlines() if "reduction(+:sg_n)" in line]
    assert len(counts) == 2 and all("present(" in line for line in counts)
    assert any("collapse(3) gang vector present(" in line for line in loops)
    assert all("present(" in line for line in loops)
    assert "#pragma acc atomic update" in code and "#pragma acc loop seq" in code
    assert code.count("#pragma acc wait") == len(loops)
    assert "omp_get_wtime" not in code and "stencilgen_wtime()" in code
    assert "vector_length(" not in code
    assert 'extern "C"' in code and "stencilgen_acc_device(void)" in code
    # the device is chosen before the data region (host builds must not run on a GPU)
    assert code.index("stencilgen_acc_select();\n  /* arrays") < code.index("#pragma acc data")


def test_vector_length_is_an_emit_option():
    """EmitOptions(vector_length=N) puts vector_length(N) on every loop nest's parallel loop."""
    rng = np.random.default_rng(0)
    op = Operator(PROGRAMS["shot3d"](np.float32, rng).eqs, name="vl_check", backend="openacc")
    code = OpenACCBackend(op.program, EmitOptions(vector_length=128)).emit()
    nests = [line for line in code.splitlines() if "collapse(" in line]
    assert nests and all("gang vector vector_length(128) present(" in line for line in nests)
    assert code.replace(" vector_length(128)", "") == op.ccode


def test_temporaries_only_copied_in():
    code = _source("invariant3d", np.float64)
    data = next(line for line in code.splitlines() if "#pragma acc data" in line)
    copyin, copy = data.split(" copy(")
    assert "inv0_vec[0:inv0_len]" in copyin and "inv" not in copy
    assert "sin(" in code and "sinf(" not in code


def test_log_names_compiler_and_where_it_runs(tmp_path, monkeypatch, stencilgen_log):
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    eqs = laplace(2, 2)(np.float32, np.random.default_rng(1)).eqs
    op = Operator(eqs, name="acc_log", backend="openacc")
    op.apply()
    text = "\n".join(stencilgen_log.lines)
    tc = op._toolchain()
    assert f"with `{tc.name}`" in text and tc.name.startswith(("GCC (OpenACC", "NVC"))
    expected = "on the GPU" if op._build.library.stencilgen_acc_device() else "on the HOST"
    assert f"Operator `acc_log` runs its OpenACC compute regions {expected}" in text
    assert op.source_path.suffix == tc.source_suffix


def test_cached_and_backdoor(tmp_path, monkeypatch):
    """A second Operator fetches the build; an edited source is used with the backdoor."""
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    rng = np.random.default_rng(2)
    prog = laplace(1, 2)(np.float64, rng)
    eqs, (out,) = prog.eqs, prog.outputs
    op = Operator(eqs, name="acc_cache", backend="openacc")
    op.apply()
    first = out.data.copy()
    again = Operator(eqs, name="acc_cache", backend="openacc")
    again.apply()
    assert not again._build.compiled and again.source_path == op.source_path
    np.testing.assert_array_equal(out.data, first)
    src = op.source_path
    head, _, tail = src.read_text().rpartition("return 0;\n}")   # the entry point's end
    src.write_text(head + "out_vec[out_o] = 42.0;\n  return 0;\n}" + tail)
    monkeypatch.setitem(configuration._values, "jit-backdoor", True)
    edited = Operator(eqs, name="acc_cache", backend="openacc")
    edited.apply()
    assert edited._build.backdoor and out.data[0] == 42.0


def test_build_failure_names_source_and_log(tmp_path, monkeypatch):
    monkeypatch.setitem(configuration._values, "cache-dir", str(tmp_path))
    eqs = laplace(1, 2)(np.float64, np.random.default_rng(3)).eqs
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
    yield d
    toolchains._gcc_offloads.cache_clear()


def _gpu(monkeypatch, cc):
    """The platform's GPU probe reports a GPU of compute capability ``cc`` (None: no GPU);
    the settings that shape the OpenACC toolchain are at their defaults."""
    monkeypatch.setattr(platform, "probe_gpu",
                        lambda: (True, f"GPU (sm_{cc})", cc) if cc else (False, "no GPU", None))
    for key, value in (("openacc-cc", None), ("debug", False), ("cflags", None)):
        monkeypatch.setitem(configuration._values, key, value)


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


def test_nvcxx_command_line(fake_bin, monkeypatch):
    cc = _fake_nvcxx(fake_bin)
    _gpu(monkeypatch, 90)
    tc = platform.toolchain("openacc")               # nvc++ on PATH wins over gcc
    assert tc == jitcache.openacc(gpu="cc90")        # for the GPU the platform probed
    assert tc.cc == cc and tc.name == "NVC++ (OpenACC, cc90)" and tc.source_suffix == ".cpp"
    assert tc.cflags == ("-O3", "-acc", "-gpu=cc90")
    cmd = tc.command("k.cpp", "libk.so")
    assert cmd[:4] == [cc, "-O3", "-acc", "-gpu=cc90"]
    assert cmd[4:6] == ["-shared", "-fPIC"] and cmd[cmd.index("-o") + 1] == "libk.so"
    assert tc.version() == "nvc++ 24.5-1 64-bit target on x86-64 Linux -tp znver3"
    assert toolchains.nvhpc_version(tc.version_text()) == (24, 5)
    debug = jitcache.openacc(debug=True, gpu="cc90")
    assert "-Minfo=accel" in debug.cflags and cache_key_differs(tc, debug)
    monkeypatch.setitem(configuration._values, "debug", True)
    assert platform.toolchain("openacc") == debug
    assert jitcache.nvhpc(cflags="-O2 -gpu=cc80,managed").cflags == ("-O2", "-gpu=cc80,managed",
                                                                    "-acc")


def cache_key_differs(a, b):
    return jitcache.cache_key("x", a) != jitcache.cache_key("x", b)


def test_nvcxx_arch_and_versions(fake_bin, monkeypatch):
    _fake_nvcxx(fake_bin, smi="9.0")
    _gpu(monkeypatch, 80)                            # the platform's probe, not nvidia-smi
    assert platform.toolchain("openacc").cflags[-1] == "-gpu=cc80"
    assert jitcache.nvhpc(gpu="8.0").cflags[-1] == "-gpu=cc80"
    assert jitcache.nvhpc(gpu="sm_70").name == "NVC++ (OpenACC, cc70)"
    assert toolchains.nvhpc_version("nvc 23.11-0 64-bit target") == (23, 11)
    assert toolchains.nvhpc_version("pgc++ 19.10-0 LLVM 64-bit") == (19, 10)
    assert toolchains.nvhpc_version("gcc (Debian 12.2.0) 12.2.0") is None


def test_nvcxx_without_gpu_targets_all(fake_bin, monkeypatch):
    _fake_nvcxx(fake_bin, smi="9.0")
    assert jitcache.nvhpc().name == "NVC++ (OpenACC, ccall)"    # jitcache probes no GPU
    _gpu(monkeypatch, None)
    assert platform.toolchain("openacc").name == "NVC++ (OpenACC, ccall)"


def test_old_pgi_rejected(fake_bin, tmp_path):
    d = tmp_path / "pgi"
    d.mkdir()
    cc = _script(d / "pgc++", 'printf "\\npgc++ 19.10-0 LLVM 64-bit target\\n"\n')
    with pytest.raises(CompilerNotFoundError, match="20.7 or newer"):
        jitcache.openacc(cc=cc)


def test_forcing_setting(fake_bin, monkeypatch):
    """openacc-cc / STENCILGEN_OPENACC_CC picks the compiler, even when nvc++ is installed."""
    _fake_nvcxx(fake_bin)
    assert platform.toolchain("openacc", None).name.startswith("NVC++")
    monkeypatch.setitem(configuration._values, "openacc-cc", "gcc")
    forced = platform.toolchain("openacc", None)
    assert forced.name.startswith("GCC (OpenACC") and os.path.basename(forced.cc) == "gcc"
    monkeypatch.setitem(configuration._values, "openacc-cc", "no-such-compiler-xyz")
    with pytest.raises(CompilerNotFoundError, match="STENCILGEN_OPENACC_CC"):
        platform.toolchain("openacc", None)
    ok, why = platform.usable("openacc")
    assert not ok and "no-such-compiler-xyz" in why
    monkeypatch.setenv("STENCILGEN_OPENACC_CC", "nvc++")
    from stencilgen.configuration import Configuration
    assert Configuration()["openacc-cc"] == "nvc++"


def test_c_flag_setting_reaches_gcc_but_not_nvcxx(fake_bin, monkeypatch):
    """STENCILGEN_CFLAGS holds gcc flags (-march=native): a GCC OpenACC build takes them,
    nvc++ keeps its own defaults; an Operator's cflags= reach either."""
    monkeypatch.setitem(configuration._values, "cflags", ("-O1", "-march=native"))
    monkeypatch.setitem(configuration._values, "openacc-cc", "gcc")
    assert {"-O1", "-march=native"} <= set(platform.toolchain("openacc", None).cflags)
    _fake_nvcxx(fake_bin)
    monkeypatch.setitem(configuration._values, "openacc-cc", None)
    nv = platform.toolchain("openacc", None)
    assert nv.name.startswith("NVC++") and "-march=native" not in nv.cflags
    assert "-O1" in platform.toolchain("openacc", ["-O1"]).cflags


def test_usable_says_where_it_runs():
    ok, why = platform.usable("openacc")
    assert ok and ("host" in why or "GPU" in why)

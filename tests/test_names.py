"""User names against C/C++/CUDA keywords, library and API names, and the names the compiler
generates: a Constant, a Function or an Operator may be called ``int``, ``NULL``, ``floor``,
``time``, ``x_M``, ``u_vec`` or ``sg_status``, and the program still compiles and gives NumPy's
numbers, on the C backend, on OpenACC (run on the host here) and with CUDA (compiled with nvcc;
run and checked too where a GPU is visible).

Every case is a small time-stepping program on a float64 2D grid whose result NumPy computes
independently, so a user name that silently reads a generated variable (the loop counter
``x``, the spacing ``h_x``, the time slot ``t0``, a sparse weight ``w``) gives a wrong number.
To stay fast, each case first builds one Operator holding all its names at once; only when that
one fails is every name built alone, to say which names fail and how. Builds run in this
process (see ``_run``). On CUDA without a GPU the
all-names source is built by jitcache as ``apply`` would; the one-name sources go through nvcc's
front end and device compiler (``--ptx``: the whole source is parsed as CUDA C++), which is
several times faster than a full build. Everything is built at -O0: names are resolved by
the compilers' front ends, and optimisation would triple the build time.

The registry's promise on the C source is checked too: a safe user name (``u``, ``m``, ``vel``)
appears as it is, and a reserved one (``backends.common.reserved.is_reserved``) as ``usr_<name>``.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
import sympy

from backends.common.reserved import RESERVED, RESERVED_PREFIXES, is_reserved
from stencilgen import (CompilationError, Constant, Eq, Function, Grid, Operator,
                        SparseTimeFunction, TimeFunction, platform)

# -- the names ---------------------------------------------------------------------------------

C_KEYWORDS = ["int", "for", "restrict", "double", "float", "long", "const", "return", "if",
              "while", "static", "register", "auto", "signed", "void", "char"]
CXX_CUDA = ["class", "new", "delete", "template", "this", "namespace", "threadIdx", "blockIdx",
            "dim3", "atomicAdd"]
# library functions and macros (``sin``: the programs call it; ``linux``/``unix``: gcc defines
# them as 1; ``entry``: sympy's C printer renames it to ``entry_``)
LIBRARY = ["NULL", "M_PI", "free", "malloc", "main", "floor", "sqrt", "sinf", "sin", "printf",
           "omp_get_wtime", "acc_on_device", "size_t", "errno", "assert", "INFINITY", "linux",
           "unix", "entry"]
# names the backends generate (the programs below have a TimeFunction ``u`` on a 2D grid, a
# sparse function ``src`` and one section, ``section0``, in the default Operator ``Kernel``)
GENERATED = ["time", "t", "t0", "t1", "x", "y", "x_M", "x_m", "x_size", "y_M", "time_m",
             "time_M", "h_x", "h_y", "dt", "timers", "c0", "r0", "inv0", "w", "acc", "p", "o_x",
             "pos_x", "f_x", "i_x", "u_vec", "u_h0", "u_s0", "u_st", "u_o", "u_len", "u_count",
             "u_origin", "d_u_vec", "start_section0", "sg_status", "stencilgen_error", "Kernel",
             "section0", "Kernel_section0"]
NAMES = C_KEYWORDS + CXX_CUDA + LIBRARY + GENERATED
# the names the sparse kernels declare or read (c_x: a corner; x: a corner's node)
SPARSE_NAMES = ["w", "acc", "p", "pos_x", "f_x", "i_x", "o_x", "c_x", "x", "floor", "time",
                "src_np", "src_coords"]
# Operator names: also two that ctypes' CDLL answers as attributes instead of symbols
OPERATOR_NAMES = NAMES + ["_handle", "_name"]
# an nvcc build per name is slow: the names whose CUDA (C++) meaning differs from C's, and a few
CUDA_OPERATOR_NAMES = ["int", "for"] + CXX_CUDA + ["NULL", "free", "main", "printf", "size_t",
                                                  "time", "sg_status", "stencilgen_error"]

BACKENDS = ["c", "openacc", "cuda"]

# -- the programs ------------------------------------------------------------------------------

SHAPE, EXTENT = (7, 6), (1.2, 0.5)          # spacings 0.2 and 0.1
DT, STEPS = 0.01, 3
POINTS = np.array([[0.33, 0.17], [0.71, 0.26], [1.05, 0.43]])   # off the nodes, apart
TOL = 1e-11
CFLAGS = "-O0"


def _value(name):
    """The value of a Constant called ``name``: in [0.3, 0.8), unlike any generated value (the
    spacings 0.2 and 0.1, dt, the origin 0, the small integers of indices and bounds)."""
    return 0.3 + (zlib.crc32(name.encode()) % 4096) / 8192


@dataclass
class Case:
    """A program: its equations, ``apply`` arguments, Operator name, and (label, result getter,
    NumPy's result) for each output."""

    eqs: list
    kwargs: dict
    outputs: list
    name: str = "Kernel"


def _setup(tag):
    grid = Grid(shape=SHAPE, extent=EXTENT, dtype=np.float64)
    rng = np.random.default_rng(zlib.crc32(tag.encode()))
    u = TimeFunction(name="u", grid=grid, time_order=1, space_order=2)
    u.data[0] = rng.uniform(-1, 1, SHAPE)
    return grid, rng, u, grid.time_dim.spacing


def _dxdy(u):
    """``u.dx + u.dy`` on centred stencils, written out (the mean of the two staggered
    differences): at space order 2 Devito's ``.dx``, and so stencilgen's, is the forward one."""
    return sum((u.diff(d, x0=d + d.spacing / 2) + u.diff(d, x0=d - d.spacing / 2)) / 2
               for d in u.grid.dimensions)


def _stencil(grid, v):
    """NumPy's ``v.dx + v.dy`` at space order 2 (zero outside the grid)."""
    hx, hy = grid.spacing
    p = np.pad(v, 1)
    return (p[2:, 1:-1] - p[:-2, 1:-1]) / (2 * hx) + (p[1:-1, 2:] - p[1:-1, :-2]) / (2 * hy)


def _march(grid, u0, extra):
    """NumPy's u after STEPS steps of ``u + dt*(_dxdy(u) + extra(u))``."""
    v = u0.copy()
    for _ in range(STEPS):
        v = v + DT * (_stencil(grid, v) + extra(v))
    return v


def _result(u):
    return lambda: u.data[STEPS % 2]


def constant_case(names):
    """Constants read inside the time loop's nest (``sin(c*u)``) and through a hoisted scalar
    (``c*m``)."""
    grid, rng, u, dt = _setup("constant")
    m = Function(name="m", grid=grid, space_order=2)
    m.data[:] = rng.uniform(0.5, 1.5, SHAPE)
    cs = [Constant(name=n, value=_value(n), dtype=np.float64) for n in names]
    rhs = u + dt * (_dxdy(u) + sum(sympy.sin(c * u) + c * m for c in cs))
    mv, vals = np.array(m.data, float), [_value(n) for n in names]
    want = _march(grid, np.array(u.data[0], float),
                  lambda v: sum(np.sin(c * v) + c * mv for c in vals))
    return Case([Eq(u.forward, rhs)], dict(time_M=STEPS - 1, dt=DT), [("u", _result(u), want)])


def function_case(names):
    """Functions of random data read inside the time loop's nest."""
    grid, rng, u, dt = _setup("function")
    fs = [Function(name=n, grid=grid, space_order=2) for n in names]
    for f in fs:
        f.data[:] = rng.uniform(-1, 1, SHAPE)
    total = sum(np.array(f.data, float) for f in fs)
    want = _march(grid, np.array(u.data[0], float), lambda v: total * v)
    rhs = u + dt * (_dxdy(u) + sum(f * u for f in fs))
    return Case([Eq(u.forward, rhs)], dict(time_M=STEPS - 1, dt=DT), [("u", _result(u), want)])


def _corners(grid):
    """(point, node, multilinear weight) of each point's four surrounding nodes."""
    out = []
    for p, c in enumerate(POINTS):
        pos = (c - np.array(grid.origin)) / np.array(grid.spacing)
        i = np.floor(pos).astype(int)
        f = pos - i
        for cx in (0, 1):
            for cy in (0, 1):
                w = (f[0] if cx else 1 - f[0]) * (f[1] if cy else 1 - f[1])
                out.append((p, (i[0] + cx, i[1] + cy), w))
    return out


def _sparse_case(names, kind):
    """Per name: a source injected with ``src*value`` and a receiver interpolating
    ``u*value``, where value is a Constant or a Function called by the name."""
    grid, rng, u, dt = _setup("sparse")
    src = SparseTimeFunction(name="src", grid=grid, npoint=len(POINTS), nt=STEPS,
                             coordinates=POINTS)
    src.data[:] = rng.uniform(-1, 1, (STEPS, len(POINTS)))
    values, at = [], []
    for n in names:
        if kind == "constant":
            values.append(Constant(name=n, value=_value(n), dtype=np.float64))
            at.append(lambda node, v=_value(n): v)
        else:
            f = Function(name=n, grid=grid, space_order=2)
            f.data[:] = rng.uniform(0.5, 1.5, SHAPE)
            values.append(f)
            at.append(lambda node, d=np.array(f.data, float): d[node])
    recs = [SparseTimeFunction(name=f"rec{k}", grid=grid, npoint=len(POINTS), nt=STEPS,
                               coordinates=POINTS) for k in range(len(names))]
    eqs = [Eq(u.forward, u + dt * _dxdy(u))]
    for v in values:
        eqs += src.inject(field=u.forward, expr=src * v)
    for rec, v in zip(recs, values):
        eqs += rec.interpolate(expr=u * v)
    # NumPy: receivers read u before the step, sources add to the stepped u
    corners, s = _corners(grid), np.array(src.data, float)
    v = np.array(u.data[0], float)
    traces = [np.zeros((STEPS, len(POINTS))) for _ in names]
    for n in range(STEPS):
        for trace, val in zip(traces, at):
            for p, node, w in corners:
                trace[n, p] += w * v[node] * val(node)
        new = v + DT * _stencil(grid, v)
        for val in at:
            for p, node, w in corners:
                new[node] += w * s[n, p] * val(node)
        v = new
    outputs = [("u", _result(u), v)]
    outputs += [(f"the receiver of {n!r}", lambda r=r: r.data, t)
                for n, r, t in zip(names, recs, traces)]
    return Case(eqs, dict(time_M=STEPS - 1, dt=DT), outputs)


def sparse_constant_case(names):
    return _sparse_case(names, "constant")


def sparse_function_case(names):
    return _sparse_case(names, "function")


def operator_case(names):
    """One Operator named by the one name."""
    (name,) = names
    grid, rng, u, dt = _setup("operator")
    m = Function(name="m", grid=grid, space_order=2)
    m.data[:] = rng.uniform(-1, 1, SHAPE)
    mv = np.array(m.data, float)
    want = _march(grid, np.array(u.data[0], float), lambda v: mv * v)
    return Case([Eq(u.forward, u + dt * (_dxdy(u) + m * u))], dict(time_M=STEPS - 1, dt=DT),
                [("u", _result(u), want)], name=name)


CASES = {"constant": constant_case, "function": function_case,
         "sparse_constant": sparse_constant_case, "sparse_function": sparse_function_case,
         "operator": operator_case}
CASE_NAMES = {"constant": NAMES, "function": NAMES, "sparse_constant": SPARSE_NAMES,
              "sparse_function": SPARSE_NAMES, "operator": OPERATOR_NAMES}
# innocuous names: the programs and their NumPy references are right (these pass today)
CONTROL_NAMES = {"constant": ("cval0", "cval1"), "function": ("fval0", "fval1"),
                 "sparse_constant": ("cval0", "cval1"), "sparse_function": ("fval0", "fval1"),
                 "operator": ("Kop",)}

# -- where each backend can run ----------------------------------------------------------------

HAVE_NVCC = shutil.which("nvcc") is not None or bool(
    os.environ.get("CUDA_HOME") and os.path.exists(os.path.join(os.environ["CUDA_HOME"], "bin",
                                                                "nvcc")))


@functools.lru_cache(maxsize=None)
def _missing(backend):
    """Why ``backend`` cannot be tested here (None when it can)."""
    if backend == "cuda" and not HAVE_NVCC:
        return "nvcc (the CUDA toolkit) is not installed"
    if backend == "openacc":
        usable, why = platform.usable("openacc")
        return None if usable else f"no OpenACC compiler: {why}"
    return None


@functools.lru_cache(maxsize=None)
def _gpu():
    """Whether CUDA programs can run here (else they are only compiled)."""
    return HAVE_NVCC and platform.probe_gpu()[0]


def _require(backend):
    why = _missing(backend)
    if why:
        pytest.skip(why)


# -- building and checking --------------------------------------------------------------------

def _errors(log, lines=4):
    """The first error lines of a compiler log."""
    errs = [ln.strip() for ln in log.splitlines() if "error" in ln.lower()]
    return " | ".join(errs[:lines]) or log.strip()[-500:]


def _nvcc_front_end(source):
    """Compile a CUDA source to PTX with the CUDA backend's nvcc flags; None or nvcc's errors."""
    tc = platform.toolchain("cuda", CFLAGS)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "names.cu")
        with open(path, "w") as fh:
            fh.write(source)
        done = subprocess.run([tc.cc, *tc.cflags, "--ptx", path, "-o",
                               os.path.join(tmp, "names.ptx")], capture_output=True, text=True)
    return None if done.returncode == 0 else _errors(done.stdout + done.stderr)


def _job(case, backend, names, quick=False):
    """Build ``case`` for ``names`` on ``backend``, run it and compare with NumPy: None when
    right, else a sentence starting with how it failed. CUDA without a GPU: compile only, with
    ``quick`` through nvcc's front end, else the full build."""
    try:
        c = CASES[case](list(names))
        op = Operator(c.eqs, name=c.name, backend=backend, cflags=CFLAGS)
        if backend == "cuda" and not _gpu():
            if not quick:
                op.cfunction          # the full build, as apply makes it
                return None
            err = _nvcc_front_end(op.ccode)
            return None if err is None else f"does not compile (nvcc --ptx): {err}"
        op.apply(**c.kwargs)
        bad = []
        for label, got, want in c.outputs:
            g = np.asarray(got(), dtype=float)
            if g.shape != want.shape or not np.allclose(g, want, rtol=TOL, atol=TOL):
                diff = np.abs(g - want).max() if g.shape == want.shape else g.shape
                bad.append(f"{label} differs from NumPy's by up to {diff:.3g}")
        return "wrong numbers: " + "; ".join(bad) if bad else None
    except CompilationError as exc:
        return f"does not compile: {_errors(exc.log)}"
    except Exception as exc:          # noqa: BLE001 - the test reports whatever went wrong
        return f"fails: {type(exc).__name__}: {str(exc)[:600]}"


def _run(jobs):
    """``_job`` for each job, in this process: forking after OpenMP has run (earlier tests in
    the same pytest process) deadlocks in libgomp, so no worker processes."""
    return [_job(*job) for job in jobs]


def _names(case, backend):
    return CUDA_OPERATOR_NAMES if (case, backend) == ("operator", "cuda") else CASE_NAMES[case]


@functools.lru_cache(maxsize=None)
def _batch(case, backend):
    """How the Operator holding all of the case's names fails (None: it does not)."""
    _gpu()                            # probed once, before forking
    return _run([(case, backend, tuple(_names(case, backend)))])[0]


@functools.lru_cache(maxsize=None)
def _outcomes(case, backend) -> dict:
    """name -> how its program fails (None: it does not)."""
    names = _names(case, backend)
    if case != "operator" and _batch(case, backend) is None:
        return dict.fromkeys(names)
    _gpu()
    return dict(zip(names, _run([(case, backend, (n,), True) for n in names])))


@functools.lru_cache(maxsize=None)
def _controls():
    _gpu()
    jobs = [(case, b, CONTROL_NAMES[case], True) for case in CASES for b in BACKENDS
            if _missing(b) is None]
    return dict(zip([(case, b) for case, b, _, _ in jobs], _run(jobs)))


def _check(case, backend, name, what):
    _require(backend)
    problem = _outcomes(case, backend)[name]
    assert problem is None, f"{what} {name!r} on {backend}: {problem}"


# -- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_programs_are_right_with_innocuous_names(backend, case):
    """The harness itself: every program gives NumPy's numbers (or compiles, on CUDA without a
    GPU) when no name is special."""
    _require(backend)
    assert _controls()[(case, backend)] is None, _controls()[(case, backend)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_name(backend, name):
    _check("constant", backend, name, "a Constant named")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_function_name(backend, name):
    _check("function", backend, name, "a Function named")


@pytest.mark.parametrize("name", SPARSE_NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sparse_constant_name(backend, name):
    _check("sparse_constant", backend, name, "injecting and interpolating with a Constant named")


@pytest.mark.parametrize("name", SPARSE_NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_sparse_function_name(backend, name):
    _check("sparse_function", backend, name, "injecting and interpolating with a Function named")


@pytest.mark.parametrize("name", OPERATOR_NAMES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_operator_name(backend, name):
    if not name.isidentifier():
        pytest.skip(f"{name!r} is not an identifier, which Operator names must be")
    if backend == "cuda" and name not in CUDA_OPERATOR_NAMES:
        pytest.skip("one nvcc build per Operator name: only CUDA_OPERATOR_NAMES are built")
    _check("operator", backend, name, "an Operator named")


@pytest.mark.parametrize("case", ["constant", "function", "sparse_constant", "sparse_function"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_all_names_in_one_operator(backend, case):
    """Every name of the case at once (names may also collide with each other's derived names)."""
    _require(backend)
    problem = _batch(case, backend)
    assert problem is None, f"{case} with all {len(_names(case, backend))} names: {problem}"


def _source(case, name):
    """The C source of ``case`` for the one name (generated, not compiled)."""
    c = CASES[case]([name])
    return Operator(c.eqs, name=c.name, backend="c").ccode


@pytest.mark.parametrize("name", [n for n in NAMES if is_reserved(n)])
@pytest.mark.parametrize("case", ["constant", "function"])
def test_reserved_user_names_become_usr_names_in_the_c_source(case, name):
    src = _source(case, name)
    assert re.search(rf"\busr_{re.escape(name)}\b", src), \
        f"a {case} named {name!r} should appear as usr_{name} in the C source"


def test_safe_user_names_are_kept_in_the_c_source():
    grid, _, u, dt = _setup("safe")
    m = Function(name="m", grid=grid, space_order=2)
    vel = Function(name="vel", grid=grid, space_order=2)
    alpha = Constant(name="alpha", value=0.5, dtype=np.float64)
    src = Operator([Eq(u.forward, u + dt * (vel * m * u.dx + alpha))], backend="c").ccode
    for n in ("u", "m", "vel", "alpha"):
        assert re.search(rf"\b{n}\b", src), f"{n} should appear as it is"
    assert "usr_" not in src


def _file_scope_names(src):
    """Macros and file-scope declarations of a generated source (its helpers, not its entry)."""
    names = set(re.findall(r"^\s*#\s*(?:define|ifdef|ifndef)\s+(\w+)", src, re.M))
    text = re.sub(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\])*\"", " ", src, flags=re.S)
    depth = 0
    for line in text.splitlines():
        if depth == 0 and line and not line[0].isspace() and not line.startswith("#"):
            # the declared name: the last identifier before "(", "[", "=", ";" or "{"
            m = re.match(r"([^([=;{]*?)\b([A-Za-z_]\w*)\s*(?:\(|\[|=|;|\{|$)", line)
            if m and m.group(2) not in {"static", "extern", "void", "int", "char", "long"}:
                names.add(m.group(2))
        depth += line.count("{") - line.count("}")
    return names


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("debug", [False, True], ids=["release", "debug"])
def test_helpers_of_the_generated_code_are_reserved(backend, debug, restore_settings):
    """What a generated source defines for itself (macros, helper functions, file-scope
    variables) is a reserved word or has a reserved prefix, so no user name can meet it."""
    restore_settings["debug"] = debug
    restore_settings["nvtx"] = debug
    c = sparse_constant_case(["cval"])
    op = Operator(c.eqs, name="Kop", backend=backend)
    found = {n for n in _file_scope_names(op.ccode)
             if n != "Kop" and not n.startswith("Kop_")}
    # the C backend defines nothing but its entry point; the others have helpers
    assert found or backend == "c", "found no helper at all: the scan is broken"
    assert {n for n in found if not is_reserved(n)} == set()


# -- the reserved words themselves -------------------------------------------------------------

def test_reserved_words():
    assert RESERVED_PREFIXES == ("sg_", "stencilgen_", "__")
    assert all(isinstance(w, str) and w.isidentifier() for w in RESERVED)
    # sympy's C printer appends "_" to these: a user name among them must never reach it
    from sympy.printing.c import C99CodePrinter
    assert set(C99CodePrinter().reserved_words) <= RESERVED
    for name in C_KEYWORDS + CXX_CUDA + LIBRARY:
        assert is_reserved(name), name
    for name in ("sinl", "floorf", "M_PIl", "CLOCK_MONOTONIC", "true", "bool", "nullptr",
                 "omp_get_thread_num", "acc_device_host", "cudaMalloc", "__syncthreads",
                 "HUGE_VAL", "EOF", "offsetof", "clock_gettime", "timespec", "ptrdiff_t",
                 "memcpy", "exit", "abort", "calloc", "realloc", "snprintf", "SG_CHECK"):
        assert is_reserved(name), name
    # the prefixes and C's and C++'s reserved spellings
    for name in ("sg_anything", "stencilgen_anything", "__x", "_Bool", "_X1", "a__b", "x__"):
        assert is_reserved(name), name
    # dimension, loop and generated names are taken names, not reserved words
    for name in ("time", "x", "y", "z", "t", "u", "m", "vel", "w", "p", "acc", "t0", "x_M",
                 "h_x", "dt", "timers", "Kernel", "section0", "usr_int", "_x", "a_b"):
        assert not is_reserved(name), name

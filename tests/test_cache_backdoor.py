"""Operators and the jit-cache: fetch instead of rebuild, flags in the key, the JIT backdoor."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from jitcache import EditedSourceWarning
from stencilgen import (BackdoorError, CompilationError, Eq, Grid, Operator, TimeFunction,
                        configuration)

@pytest.fixture(autouse=True)
def cache_dir(tmp_path, restore_settings):
    """Each test gets its own cache; the settings it changes are restored afterwards."""
    configuration["cache-dir"] = str(tmp_path)
    configuration["jit-backdoor"] = False
    configuration["cflags"] = None
    configuration["log-level"] = "INFO"
    configuration["time-tiling"] = 0   # one loop: the edits below rewrite its one store
    return tmp_path


@pytest.fixture
def log(stencilgen_log):
    return stencilgen_log


def make_op(name="Heat", **kwargs):
    """A fresh grid, field and Operator each call: one explicit diffusion step on random data."""
    grid = Grid(shape=(13, 11), extent=(12.0, 10.0))
    u = TimeFunction(name="u", grid=grid, space_order=4)
    u.data[0] = np.random.default_rng(7).standard_normal(grid.shape)
    op = Operator([Eq(u.forward, u + 0.1 * u.laplace)], name=name, **kwargs)
    return op, u


def step(op, u):
    """Apply one time step; returns (summary, the new field)."""
    summary = op.apply(time_M=0)
    return summary, u.data[1].copy()


def built(lines, name, path, backdoor=False):
    extra = re.escape(" (JIT backdoor: edited source)") if backdoor else ""
    pattern = (rf"Operator `{name}` jit-compiled `{re.escape(str(path))}` in \d+\.\d+ s "
               rf"with `GCC`{extra}$")
    return [line for line in lines if re.fullmatch(pattern, line)]


def fetched(lines, name, path):
    return [line for line in lines
            if line == f"Operator `{name}` fetched `{path}` from jit-cache"]


def scale_store(source: str, array: str, factor: str) -> str:
    """Rewrite the one store ``array[...] = EXPR;`` of a generated source as ``= factor*(EXPR);``
    (the store may go through a row pointer of the array, ``sg_array_r0[...]``)."""
    out, hits = [], 0
    for line in source.splitlines(keepends=True):
        body = line.lstrip()
        name = re.match(rf"({re.escape(array)}|sg_{re.escape(array)}_r\d+)\[", body)
        if name:
            depth = 0
            for end in range(len(name[1]), len(body)):  # the bracket closing the index
                depth += {"[": 1, "]": -1}.get(body[end], 0)
                if depth == 0:
                    break
            m = re.fullmatch(r"\s*=(?!=)\s*(?P<expr>.*?);\s*", body[end + 1:], re.S)
            if m:
                indent = line[:len(line) - len(body)]
                newline = line[len(line.rstrip("\r\n")):]
                line = f"{indent}{body[:end + 1]} = {factor}*({m['expr']});{newline}"
                hits += 1
        out.append(line)
    assert hits == 1, f"expected one store to {array}[...], found {hits} in:\n{source}"
    return "".join(out)


def test_scale_store_helper():
    src = "  {\n    u[(t1)*u_st + (x)*u_s0 + y] = a[x]*2.0F + u[(t0)*u_st + x];\n  }\n"
    assert scale_store(src, "u", "2") == \
        "  {\n    u[(t1)*u_st + (x)*u_s0 + y] = 2*(a[x]*2.0F + u[(t0)*u_st + x]);\n  }\n"
    with pytest.raises(AssertionError):
        scale_store("v[x] = 1;\n", "u", "2")


# -- fetching and keys --------------------------------------------------------------------------

def test_identical_operator_is_fetched_not_compiled(cache_dir, log):
    op1, u1 = make_op()
    s1, r1 = step(op1, u1)
    path = op1.source_path
    assert s1.compiled is True
    assert Path(path).parent.parent == cache_dir
    assert len(built(log.take(), "Heat", path)) == 1
    libs = {p: p.stat().st_mtime_ns for p in Path(path).parent.glob("*.so")}
    assert len(libs) == 1

    op2, u2 = make_op()                 # built from scratch: new grid, field and operator
    assert op2.ccode == op1.ccode
    s2, r2 = step(op2, u2)
    assert s2.compiled is False
    lines = log.take()
    assert len(fetched(lines, "Heat", path)) == 1 and not any("jit-compiled" in x for x in lines)
    assert op2.source_path == path
    np.testing.assert_array_equal(r2, r1)
    assert {p: p.stat().st_mtime_ns for p in Path(path).parent.glob("*.so")} == libs
    # a second apply of the same Operator neither builds nor fetches again
    s3, _ = step(op2, u2)
    assert s3.compiled is False and log.take() == []


def test_changing_a_compiler_flag_builds(log):
    op1, u1 = make_op()
    s1, r1 = step(op1, u1)
    assert s1.compiled
    op2, u2 = make_op(cflags=["-O2"])
    s2, r2 = step(op2, u2)
    assert s2.compiled is True
    assert op2.source_path != op1.source_path
    assert op2.source_path.parent != op1.source_path.parent
    assert op2._build.library_path != op1._build.library_path
    lines = log.take()
    assert built(lines, "Heat", op1.source_path) and built(lines, "Heat", op2.source_path)
    np.testing.assert_allclose(r2, r1, rtol=1e-5, atol=1e-6)
    # the same flags given through the configuration (a string) hit the same entry
    configuration["cflags"] = "-O2"
    op3, u3 = make_op()
    s3, _ = step(op3, u3)
    assert s3.compiled is False and op3.source_path == op2.source_path
    assert fetched(log.take(), "Heat", op2.source_path)


def test_empty_cflags_mean_the_default_flags(monkeypatch):
    """``STENCILGEN_CFLAGS=`` (set, empty) keeps -O3 -march=native, as unset does."""
    import jitcache
    from stencilgen.configuration import Configuration
    monkeypatch.setenv("STENCILGEN_CFLAGS", "  ")
    assert Configuration()["cflags"] is None
    configuration["cflags"] = ""
    assert configuration["cflags"] is None
    assert "-O3" in jitcache.gcc(configuration["cflags"]).cflags


def test_cflags_setting_as_list():
    configuration["cflags"] = ["-O2"]
    assert configuration["cflags"] == ["-O2"]
    op, u = make_op()
    step(op, u)


# -- the JIT backdoor ---------------------------------------------------------------------------

def test_backdoor_edit_is_used_kept_and_never_overwritten(log):
    op1, u1 = make_op()
    s1, ref = step(op1, u1)
    assert s1.compiled
    path = Path(op1.source_path)
    generated = path.read_bytes()
    assert generated == op1.ccode.encode()
    edited = scale_store(generated.decode(), "u", "2").encode()
    path.write_bytes(edited)
    log.take()

    # backdoor on: a new identical Operator compiles the edited file and runs it
    configuration["jit-backdoor"] = True
    op2, u2 = make_op()
    s2, doubled = step(op2, u2)
    assert s2.compiled is True
    assert len(built(log.take(), "Heat", path, backdoor=True)) == 1
    np.testing.assert_allclose(doubled, 2 * ref, rtol=1e-6, atol=1e-6)
    assert not np.allclose(doubled, ref)
    assert path.read_bytes() == edited

    # again: the edited build is fetched, not recompiled
    op3, u3 = make_op()
    s3, again = step(op3, u3)
    assert s3.compiled is False
    assert fetched(log.take(), "Heat", path)
    np.testing.assert_array_equal(again, doubled)

    # a broken edit: a clear error naming the file with the compiler's log; the edit is kept
    broken = edited.replace(b"= 2*(", b"= 2*((", 1)
    assert broken != edited
    path.write_bytes(broken)
    op4, u4 = make_op()
    with pytest.raises(BackdoorError) as exc:
        step(op4, u4)
    err = exc.value
    assert isinstance(err, CompilationError) and isinstance(err, stencilgen.CompilationError)
    message = str(err)
    assert str(path) in message and "error" in message
    assert err.log and err.log in message and err.source_path == str(path)
    assert path.read_bytes() == broken

    # backdoor off: the generated (undoubled) code runs and the user's file is left alone;
    # the log names the file whose code runs, the private copy of the generated source
    configuration["jit-backdoor"] = False
    op5, u5 = make_op()
    log.take()
    with pytest.warns(EditedSourceWarning) as caught:
        s5, plain = step(op5, u5)
    assert s5.compiled is False
    np.testing.assert_array_equal(plain, ref)
    assert path.read_bytes() == broken
    copy = path.parent / ".Heat.generated.c"
    assert any(f"fetched `{copy}`" in line for line in log.take())
    assert copy.read_text() == op5.ccode
    assert caught[0].filename == __file__   # the warning points at the user's line

    # ... even when the generated library is gone and has to be rebuilt
    for lib in path.parent.glob("*.so"):
        lib.unlink()
    op6, u6 = make_op()
    log.take()
    with pytest.warns(EditedSourceWarning):
        s6, rebuilt = step(op6, u6)
    assert s6.compiled is True
    # the log names the file compiled: the private copy of the generated source, not the edit
    lines = log.take()
    assert len(built(lines, "Heat", path.parent / ".Heat.generated.c")) == 1, lines
    assert not built(lines, "Heat", path)
    np.testing.assert_allclose(rebuilt, ref, rtol=1e-6, atol=1e-6)
    assert path.read_bytes() == broken


def test_backdoor_with_missing_source_names_the_file(cache_dir):
    op1, u1 = make_op()
    step(op1, u1)
    path = Path(op1.source_path)
    path.unlink()
    configuration["jit-backdoor"] = True
    op2, u2 = make_op()
    with pytest.raises(BackdoorError, match=re.escape(str(path))) as exc:
        step(op2, u2)
    assert "does not exist" in str(exc.value)
    # a name never built at all: same error, naming the file it looked for
    op3, u3 = make_op(name="Never")
    with pytest.raises(BackdoorError, match=r"Never-[0-9a-f]{16}/Never\.c") as exc:
        step(op3, u3)
    assert str(cache_dir) in str(exc.value)
    # backdoor off: the generated source is written again and the cached library used
    configuration["jit-backdoor"] = False
    op4, u4 = make_op()
    s4, _ = step(op4, u4)
    assert s4.compiled is False and path.read_bytes() == op4.ccode.encode()


def test_backdoor_edit_that_hides_the_entry_point(cache_dir):
    """An edit keeping the entry point's text but not its symbol (static, or renamed by a
    macro) is our BackdoorError naming the symbol and the file, not ctypes' AttributeError."""
    op1, u1 = make_op("Hide")
    step(op1, u1)
    path = Path(op1.source_path)
    generated = path.read_text()
    configuration["jit-backdoor"] = True
    for edit in (f"static int {op1.program.entry}(", f"#define Hide Hidden\nint Hide("):
        path.write_text(generated.replace(f"int {op1.program.entry}(", edit, 1))
        op2, u2 = make_op("Hide")
        with pytest.raises(BackdoorError) as exc:
            step(op2, u2)
        message = str(exc.value)
        assert f"entry point `{op1.program.entry}`" in message and str(path) in message
        assert exc.value.source_path == str(path)


def test_debug_c_builds_report_what_gcc_vectorised(log):
    """STENCILGEN_DEBUG=1 adds gcc's -fopt-info-vec and the Operator logs what gcc said: the
    innermost (omp simd) loops of the nest are vectorised."""
    configuration["debug"] = True
    op, u = make_op("Vec", backend="c")
    if "clang" in op._toolchain().version().lower():
        pytest.skip("the vectorisation report is gcc's")
    assert "-fopt-info-vec" in op._toolchain().cflags
    step(op, u)
    said = "\n".join(log.take())
    assert "the compiler said:" in said and "loop vectorized" in said

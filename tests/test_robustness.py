"""No silent wrong answers (issue 11, items 7, 9 and 10): one Operator applied from several
threads at once, JIT-backdoor edits that change the entry point's parameters, and runs that
blow up to NaN/Inf."""
from __future__ import annotations

import re
import threading
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from stencilgen import (BackdoorError, Eq, Function, Grid, Operator, TimeFunction,
                        configuration)


@pytest.fixture(autouse=True)
def settings(tmp_path, restore_settings):
    """Each test gets its own cache; the settings it changes are restored afterwards."""
    configuration["cache-dir"] = str(tmp_path)
    configuration["jit-backdoor"] = False
    configuration["log-level"] = "INFO"
    return restore_settings


# -- item 7: one Operator, several threads ------------------------------------------------------

def flux_op(shape, name="Flux"):
    """u.forward = u + 0.05 d/dx(b du/dx): the nested staggered derivative makes a temporary."""
    grid = Grid(shape=shape, extent=tuple(float(n - 1) for n in shape))
    x = grid.dimensions[0]
    h = x.spacing
    u = TimeFunction(name="u", grid=grid, space_order=4)
    b = Function(name="b", grid=grid, space_order=4)
    b.data[:] = 1.0 + np.random.default_rng(1).random(shape)
    op = Operator([Eq(u.forward, u + 0.05 * (b * u.dx(x0=x + h / 2)).dx(x0=x - h / 2))],
                  name=name, backend="c")
    return op, grid


def test_concurrent_applies_with_temporaries_match_sequential_runs():
    op, grid = flux_op((96, 96))
    rng = np.random.default_rng(3)
    inits = [rng.standard_normal(grid.shape).astype(np.float32),
             100 * rng.standard_normal(grid.shape).astype(np.float32)]
    fields = [TimeFunction(name=f"u{i}", grid=grid, space_order=4) for i in (1, 2)]
    steps = 20
    expected = []
    for f, init in zip(fields, inits):              # sequential references
        f.data[:] = 0
        f.data[0] = init
        op.apply(u=f, time_M=steps - 1)
        expected.append(f.data[steps % 2].copy())
    start, errors = threading.Barrier(2), []

    def run(i):
        f = fields[i]
        start.wait()
        for _ in range(40):
            f.data[:] = 0
            f.data[0] = inits[i]
            op.apply(u=f, time_M=steps - 1)
            if not np.array_equal(f.data[steps % 2], expected[i]):
                errors.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [], f"{len(errors)} of 80 concurrent applies differ from the sequential run"


def test_single_thread_applies_reuse_temporaries():
    """The temporary (here 1 MiB) is allocated by the first apply only."""
    op, grid = flux_op((512, 512), name="Reuse")
    op.apply(time_M=1)
    tracemalloc.start()
    try:
        op.apply(time_M=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 512 * 512 * 4 / 4, f"a second apply allocated {peak} bytes"


# -- item 9: backdoor edits of the entry point's parameters -------------------------------------

def small_op(name):
    grid = Grid(shape=(12, 10), extent=(11., 9.))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.random.default_rng(5).standard_normal(grid.shape)
    return Operator([Eq(u.forward, u + 0.1 * u.dx)], name=name, backend="c"), u


def declaration(source, name):
    """(start, end) of the parameter list of ``int name(...)`` followed by its body."""
    m = re.search(rf"\bint {name}\((?P<params>[^)]*)\)\s*\{{", source)
    assert m, f"no definition of {name} in:\n{source}"
    return m.start("params"), m.end("params")


def edit_params(source, name, old, new, body=""):
    """Replace ``old`` by ``new`` in ``name``'s parameter list; ``body`` opens the body."""
    lo, hi = declaration(source, name)
    params = source[lo:hi]
    assert params.count(old) == 1, f"{old!r} not once in {params!r}"
    rest = source[hi:]
    brace = rest.index("{") + 1
    return source[:lo] + params.replace(old, new) + rest[:brace] + body + rest[brace:]


EDITS = {
    # swapped bounds: the loop would run from x_M down to x_m, i.e. not at all
    "moved": (("const long x_m, const long x_M", "const long x_M, const long x_m"), "",
              r"parameter \d+ `const long x_M` moved to position \d+"),
    "removed": ((", const float h_x", ""), "\n  const float h_x = 1.0F;",
                r"parameter \d+ `const float h_x` removed"),
    "added": (("double *restrict timers", "double *restrict timers, const long extra"), "",
              r"parameter \d+ `const long extra` added"),
    "retyped": (("const long x_M", "const int x_M"), "",
                r"parameter \d+ `const long x_M` retyped to `const int x_M`"),
    "renamed": (("const float h_x", "const float hx"), "\n  const float h_x = hx;",
                r"parameter \d+ `const float h_x` renamed to `hx`"),
}


@pytest.mark.parametrize("change", sorted(EDITS))
def test_backdoor_edit_of_the_parameters_is_refused(change):
    (old, new), body, expect = EDITS[change]
    name = f"Sig{change.capitalize()}"
    op, u = small_op(name)
    op.apply(time_M=0)
    path = Path(op.source_path)
    edited = edit_params(path.read_text(), name, old, new, body)
    path.write_text(edited)
    configuration["jit-backdoor"] = True
    op2, u2 = small_op(name)
    with pytest.raises(BackdoorError) as exc:
        op2.apply(time_M=0)
    message = " ".join(str(exc.value).split())
    assert str(path) in message and f"`{name}`" in message
    assert re.search(expect, message), message
    assert "Restore the declaration" in message and "STENCILGEN_JIT_BACKDOOR" in message
    assert exc.value.source_path == str(path)
    assert path.read_text() == edited                 # the user's edit is left as it is


def test_backdoor_edit_of_the_body_and_layout_runs():
    """Whitespace, line breaks and qualifiers (restrict, const) of the declaration may change,
    and the body may change: the edit runs."""
    op, u = small_op("SigBody")
    op.apply(time_M=0)
    ref = u.data[1].copy()
    path = Path(op.source_path)
    text = path.read_text()
    lo, hi = declaration(text, "SigBody")
    params = text[lo:hi].replace(", ", ",\n    ").replace("*restrict ", "* ")
    params = params.replace("const long x_m", "long  x_m")
    body = text[hi:].replace("return 0;", "u_vec[0] += 0.0F;\n  return 0;", 1)
    path.write_text(text[:lo] + params + body)
    configuration["jit-backdoor"] = True
    op2, u2 = small_op("SigBody")
    summary = op2.apply(time_M=0)
    assert summary.compiled is True
    np.testing.assert_array_equal(u2.data[1], ref)


def test_signature_changes_are_named_by_position_and_name():
    from jitcache.signature import changes, parameters
    gen = ('/* K(int z) */ int K(float *restrict a, const long n, const float h, double *t)\n'
           '{ puts("K(x"); return 0; }')
    want = parameters(gen, "K")
    assert [(p[0], p[1]) for p in want] == [("float*", "a"), ("long", "n"), ("float", "h"),
                                           ("double*", "t")]

    def diff(params):
        return changes(want, parameters(f'extern "C" int K({params}) {{ }}', "K"))

    assert diff("float* __restrict__ a, long  n,\n const float h, double *t") == []
    assert diff("float *a, const long m, const float h, double *t") == \
        ["parameter 2 `const long n` renamed to `m`"]
    assert diff("float *a, const float h, double *t") == ["parameter 2 `const long n` removed"]
    assert diff("float *a, const int n, const float h, double *t") == \
        ["parameter 2 `const long n` retyped to `const int n`"]
    assert diff("float *a, const long n, const float h, double *t, int k") == \
        ["parameter 5 `int k` added"]
    assert parameters("int K(int a);", "K") is None       # a prototype is not the definition


# -- item 10: runs that blow up ----------------------------------------------------------------

def heat_op(name="Heat", **kwargs):
    """u.forward = u + dt * m * laplace(u) on unit spacing: stable for dt * m <= 0.25."""
    grid = Grid(shape=(24, 20), extent=(23., 19.))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.random.default_rng(9).standard_normal(grid.shape)
    m = Function(name="m", grid=grid)
    m.data[:] = 1.0
    dt = grid.time_dim.spacing
    return Operator([Eq(u.forward, u + dt * m * u.laplace)], name=name, backend="c",
                    **kwargs), u, m


def numerical_warning():
    return stencilgen.errors.NumericalWarning


def test_blowup_warns_naming_the_field_and_the_time_range(stencilgen_log):
    op, u, m = heat_op()
    with pytest.warns(numerical_warning()) as caught:
        op.apply(time_M=99, dt=2.0)                 # 8x the stability limit
    assert not np.isfinite(u.data[100 % 2]).all()
    text = " ".join(str(caught[0].message).split())
    assert re.search(r"after time steps 0\.\.99 with dt=2\.0, u \(\d+ values in "
                     r"u\.data\[0\] \(the last state\)\) holds NaN or Inf", text), text
    assert "stability limit" in text and "check_finite=False" in text
    assert "STENCILGEN_CHECK_FINITE=0" in text
    assert text in stencilgen_log.take()                # a log WARNING too
    assert issubclass(numerical_warning(), Warning)
    assert stencilgen.NumericalWarning is numerical_warning()


def test_nan_input_warns_naming_the_field_as_passed():
    op, u, m = heat_op(name="HeatNan")
    v = TimeFunction(name="v", grid=u.grid, space_order=2)
    v.data[0] = 1.0
    m.data[3, 4] = np.nan
    with pytest.warns(numerical_warning(), match=r"u=v \(\d+ values in v\.data\[1\]"):
        op.apply(time_M=2, dt=0.1, u=v)


def test_a_stable_run_does_not_warn():
    op, u, m = heat_op(name="HeatOk")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op.apply(time_M=99, dt=0.2)
    assert np.isfinite(u.data).all()


def test_blowup_check_can_be_turned_off(monkeypatch):
    op, u, m = heat_op(name="HeatOff", check_finite=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op.apply(time_M=99, dt=2.0)
        configuration["check-finite"] = False
        op2, u2, _ = heat_op(name="HeatOff")
        op2.apply(time_M=99, dt=2.0)
    assert not np.isfinite(u.data).all() and not np.isfinite(u2.data).all()
    # the Operator's option wins over the setting
    op3, u3, _ = heat_op(name="HeatOff", check_finite=True)
    with pytest.warns(numerical_warning()):
        op3.apply(time_M=99, dt=2.0)
    monkeypatch.setenv("STENCILGEN_CHECK_FINITE", "0")
    assert type(configuration)()["check-finite"] is False
    monkeypatch.delenv("STENCILGEN_CHECK_FINITE")
    assert type(configuration)()["check-finite"] is True
    with pytest.raises(stencilgen.InvalidArgument, match="check_finite"):
        heat_op(name="HeatOff", check_finite="no")


def test_blowup_of_a_field_without_time_axis():
    grid = Grid(shape=(6, 5))
    f, g = Function(name="f", grid=grid), Function(name="g", grid=grid)
    f.data[:] = 1.0
    g.data[:] = 1.0
    g.data[2, 2] = 0.0
    op = Operator([Eq(f, f / g)], name="Divide", backend="c")
    with pytest.warns(numerical_warning(), match=r"after the run, f \(1 values\) holds NaN"):
        op.apply()


def test_last_written_slots():
    """The check reads the slot each written field's last step wrote: (time_M + 1) % 2 of a
    buffered field, time_M + 1 of a saved one; a field without time axis whole."""
    from stencilgen.runtime.operator import last_written
    grid = Grid(shape=(6, 5))
    u = TimeFunction(name="u", grid=grid, time_order=2)
    v = TimeFunction(name="v", grid=grid, save=8)
    f = Function(name="f", grid=grid)
    op = Operator([Eq(u.forward, u + 1), Eq(v.forward, v + 1), Eq(f, 2 * f)], backend="c")
    assert last_written(op.program, (1, 5)) == {"u": ((5 + 1) % 3,), "v": (6,), "f": None}


def test_huge_finite_values_do_not_warn():
    """The check's fast sum may overflow on finite data; it then counts, and finds none."""
    grid = Grid(shape=(64, 64))
    f = Function(name="f", grid=grid)
    f.data[:] = 3e38                                    # near float32's largest
    op = Operator([Eq(f, f * 1)], name="Huge", backend="c")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        op.apply()
    with np.errstate(over="ignore"):
        assert np.isinf(np.add.reduce(f.data_with_halo, axis=None))
    f.data[5, 5] = np.inf
    with pytest.warns(numerical_warning(), match=r"f \(1 values\)"):
        op.apply()


def test_a_warning_shows_once_on_the_console_and_stays_in_the_log(capsys, stencilgen_log):
    """The log's console handler leaves out what the user also gets as a Python warning
    (printed twice before); other handlers keep it."""
    grid = Grid(shape=(8, 8))
    u = TimeFunction(name="u", grid=grid)
    op = Operator([Eq(u.forward, u + 1)], name="OnceWarned")
    capsys.readouterr()
    with stencilgen.switchconfig(ignore_unknowns=1), \
            pytest.warns(UserWarning, match="ignored unknown argument") as caught:
        op.apply(time_M=1, not_an_argument=3)
    assert caught[0].filename == __file__
    text = str(caught[0].message)
    assert text not in capsys.readouterr().out
    assert text in stencilgen_log.take()
    op_nan, v, _ = heat_op()
    capsys.readouterr()
    with pytest.warns(numerical_warning()) as caught:
        op_nan.apply(time_M=99, dt=2.0)
    assert caught[0].filename == __file__
    assert str(caught[0].message) not in capsys.readouterr().out

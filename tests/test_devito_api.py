"""Devito's calling conventions and helpers as stencilgen reads them: ``op(...)``,
``apply(time=N)``, Operator's language/platform/opt/subs keywords, Devito's log levels and
exception names, ``norm``, ``initialize_function`` and the math functions."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest

import stencilgen
from stencilgen import (Eq, Function, Grid, InvalidArgument, Operator, TimeFunction,
                        configuration, cos, exp, gaussian_smooth, initialize_function, norm,
                        sin, sqrt)
from stencilgen.exceptions import (CompilationError, DevitoError, ExecutionError,
                                   InvalidOperator)
from devito_reference import assert_matches_devito


def _heat(name="Heat", **options):
    grid = Grid(shape=(11, 9), extent=(1.0, 0.8))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.random.default_rng(5).standard_normal(grid.shape)
    return Operator([Eq(u.forward, u + 0.05 * u.laplace)], name=name, **options), u, grid


def test_an_operator_is_callable_and_time_is_time_M():
    op, u, _ = _heat("CallHeat", backend="c")
    start = u.data[0].copy()
    op.apply(time_M=3, dt=0.01)
    ref = u.data[:].copy()
    u.data[:] = 0
    u.data[0] = start
    op(time=3, dt=0.01)
    assert np.array_equal(u.data[:], ref)
    with pytest.raises(InvalidArgument, match="time= and time_M= both"):
        op.apply(time=3, time_M=3, dt=0.01)


@pytest.mark.parametrize("language", ["C", "openmp", "OpenMP"])
def test_languages_of_the_cpu_give_the_c_backend(language):
    op, _, _ = _heat("LangHeat", language=language)
    assert op._target.name == "c"


@pytest.mark.parametrize("options, match", [
    ({"language": "hip"}, "language='hip' is not supported"),
    ({"language": "openmp", "backend": "cuda"}, "disagree"),
    ({"platform": "amdgpuX"}, "platform='amdgpuX' is not supported"),
    ({"opt": 3}, "opt must be a mode"),
])
def test_unsupported_operator_options_are_our_errors(options, match):
    with pytest.raises(InvalidOperator, match=match):
        _heat("BadHeat", **options)


def test_accepted_options_change_nothing(caplog):
    plain, u, grid = _heat("PlainHeat", backend="c")
    plain.apply(time_M=2, dt=0.01)
    ref = u.data[:].copy()
    for options in ({"opt": "advanced"}, {"opt": ("advanced", {"blockinner": True})},
                    {"platform": "cpu64"}, {"subs": grid.spacing_map}):
        op, u2, _ = _heat("OptHeat", backend="c", **options)
        op.apply(time_M=2, dt=0.01)
        assert np.array_equal(u2.data[:], ref), options


def test_subs_gives_the_spacing_that_operator_uses():
    """Devito's ``Operator(..., subs={x.spacing: h})`` (its derivative tests check convergence
    so): the derivatives use h, even where the grid's spacing differs; the grid's own
    spacing elsewhere; other keys and non-numbers are refused."""
    grid = Grid(shape=(11, 9), extent=(1.0, 0.8), dtype=np.float64)
    x, y = grid.dimensions
    u = Function(name="u", grid=grid, space_order=2)
    xs = np.linspace(0.0, 1.0, 11)
    u.data[:] = (xs ** 2)[:, None] + np.zeros(9)[None, :]
    for h, expected in ((0.05, 2 * (0.1 / 0.05) ** 2), (0.1, 2.0)):
        f = Function(name="f", grid=grid, space_order=2)
        Operator(Eq(f, u.dx2 + u.dy2), subs={x.spacing: h}, backend="c").apply()
        np.testing.assert_allclose(f.data[1:-1, 1:-1], expected, rtol=1e-10)
    f = Function(name="f", grid=grid, space_order=2)
    Operator(Eq(f, u.dx2), subs=grid.spacing_map, backend="c").apply()
    np.testing.assert_allclose(f.data[1:-1, 1:-1], 2.0, rtol=1e-10)
    with pytest.raises(InvalidOperator, match="only the grid's spacings"):
        Operator([Eq(f, u.dx2)], subs={grid.time_dim.spacing: 0.5}, backend="c")
    with pytest.raises(InvalidOperator, match="a spacing is a positive number"):
        Operator([Eq(f, u.dx2)], subs={x.spacing: -1.0}, backend="c")


@pytest.mark.parametrize("level", ["ERROR", "CRITICAL", "error"])
def test_devito_log_levels(level):
    before = configuration["log-level"]
    try:
        configuration["log-level"] = level
        assert stencilgen.logger.logger.level == getattr(logging, level.upper())
    finally:
        configuration["log-level"] = before


def test_exception_names():
    assert issubclass(InvalidOperator, DevitoError) and issubclass(ExecutionError, DevitoError)
    assert issubclass(stencilgen.exceptions.InvalidArgument, ValueError)
    assert CompilationError is stencilgen.CompilationError


def test_norm_is_numpys_in_float64():
    grid = Grid(shape=(7, 6))
    u = TimeFunction(name="u", grid=grid, space_order=4)
    u.data[:] = np.random.default_rng(2).standard_normal(u.data.shape)
    u.data_with_halo[0, 0, 0] = 1e6        # the halo does not count
    ref = np.sqrt((u.data[:].astype(np.float64) ** 2).sum())
    assert norm(u) == np.float32(ref) and norm(u).dtype == np.float32
    assert np.isclose(norm(u, order=1), np.abs(u.data[:].astype(np.float64)).sum(), rtol=1e-6)
    with pytest.raises(InvalidArgument, match="order"):
        norm(u, order=0)


@pytest.mark.parametrize("mode, numpy_mode", [("constant", "edge"), ("reflect", "symmetric")])
def test_initialize_function_pads_data_and_halo(mode, numpy_mode):
    grid = Grid(shape=(9, 7))
    f = Function(name="f", grid=grid, space_order=4)
    g = Function(name="g", grid=grid, space_order=4)
    data = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    initialize_function([f, g], [data, 2 * data], ((2, 2), 2), mode=mode)
    inner = np.pad(data, ((2, 2), (2, 2)), mode=numpy_mode)
    assert np.array_equal(f.data, inner) and np.array_equal(g.data, 2 * inner)
    assert np.array_equal(f.data_with_halo, np.pad(inner, 4, mode="edge"))
    with pytest.raises(InvalidArgument, match="not .*'s domain"):
        initialize_function(f, data, 1)
    with pytest.raises(InvalidArgument, match="mapper"):
        initialize_function(f, data, 2, mapper={})


def test_math_functions_in_equations():
    grid = Grid(shape=(8, 7))
    a, b = (Function(name=n, grid=grid) for n in ("a", "b"))
    a.data[:] = np.random.default_rng(4).uniform(0.1, 1.0, grid.shape)
    Operator([Eq(b, sin(a) + cos(a) * exp(a) - sqrt(a))], backend="c").apply()
    x = a.data.astype(np.float64)
    assert np.allclose(b.data, np.sin(x) + np.cos(x) * np.exp(x) - np.sqrt(x), rtol=1e-5)


def test_more_math_functions_match_numpy():
    grid = Grid(shape=(8, 7))
    a, b = (Function(name=n, grid=grid) for n in ("a", "b"))
    a.data[:] = np.random.default_rng(4).uniform(0.1, 0.9, grid.shape)
    sg = stencilgen
    e = (sg.Abs(a - 0.5) + sg.Min(a, 0.4) + sg.Max(a, 0.6) + sg.sign(a - 0.5) + sg.floor(3 * a)
         + sg.ceiling(3 * a) + sg.log(a) + sg.tan(a) + sg.tanh(a) + sg.sinh(a) + sg.cosh(a)
         + sg.asin(a) + sg.acos(a) + sg.atan(a) + sg.atan2(a, 0.3))
    Operator([Eq(b, e)], backend="c").apply()
    x = a.data.astype(np.float64)
    ref = (np.abs(x - 0.5) + np.minimum(x, 0.4) + np.maximum(x, 0.6) + np.sign(x - 0.5)
           + np.floor(3 * x) + np.ceil(3 * x) + np.log(x) + np.tan(x) + np.tanh(x) + np.sinh(x)
           + np.cosh(x) + np.arcsin(x) + np.arccos(x) + np.arctan(x) + np.arctan2(x, 0.3))
    assert np.abs(b.data - ref).max() < 1e-5 * np.abs(ref).max()


@pytest.mark.parametrize("name, words", [
    ("ModuloDimension", "SteppingDimension"),
    ("Buffer", "time_order="),
    ("Cpu64AdvOmpOperator", "Operator(eqs"),
])
def test_devito_names_we_lack_say_what_to_write(name, words):
    from stencilgen.devito_names import UnsupportedFeature
    with pytest.raises(UnsupportedFeature, match=f"Devito's {name}: .*{re.escape(words)}"):
        exec(f"from stencilgen import {name}", {})
    with pytest.raises(ImportError):
        getattr(stencilgen, name)
    assert not hasattr(stencilgen, "no_such_name")


def test_set_log_level():
    before = configuration["log-level"]
    try:
        stencilgen.set_log_level("ERROR")
        assert configuration["log-level"] == "ERROR"
    finally:
        configuration["log-level"] = before


def test_evaluate_is_a_property_that_may_be_called():
    """Devito's ``u.dx.evaluate`` and ``Eq(...).evaluate`` are properties; stencilgen's
    ``.evaluate()`` of earlier releases gives the same expression."""
    from stencilgen import Eq, Grid, TimeFunction
    from stencilgen.symbolic.derivatives import evaluate
    from stencilgen.symbolic.differentiable import plain
    grid = Grid(shape=(6,))
    u = TimeFunction(name="u", grid=grid, space_order=2)
    assert plain(u.dxl.evaluate) == plain(u.dxl.evaluate()) == evaluate(u.dxl)
    eq = Eq(u.forward, u + u.dx2)
    assert plain(eq.evaluate.rhs) == plain(eq.evaluate().rhs) == plain(u + evaluate(u.dx2))
    with pytest.raises(TypeError, match="takes no arguments"):
        u.dx.evaluate(1)


def test_devitos_module_paths_import():
    """``from devito.finite_differences.operators import div`` and friends, with stencilgen's
    name: the same objects as the top-level ones."""
    from stencilgen.builtins import gaussian_smooth as gs, initialize_function as init
    from stencilgen.finite_differences import Derivative, first_derivative, left
    from stencilgen.finite_differences.operators import curl, diag, div, grad, laplace
    from stencilgen.symbolics import INT, retrieve_functions
    assert (div, grad, curl, laplace, diag) == (stencilgen.div, stencilgen.grad,
                                                stencilgen.curl, stencilgen.laplace,
                                                stencilgen.diag)
    assert Derivative is stencilgen.Derivative and left is stencilgen.left
    assert first_derivative is stencilgen.first_derivative
    assert gs is stencilgen.gaussian_smooth and init is initialize_function
    assert INT(2.7) == 2 and INT(-2.7) == -2 and callable(retrieve_functions)


#: Devito's subpackages stencilgen mirrors, and a module of each
MIRRORED = ("finite_differences", "finite_differences.operators",
            "finite_differences.derivative", "finite_differences.tools",
            "finite_differences.finite_difference", "finite_differences.differentiable",
            "symbolics", "symbolics.search", "builtins", "builtins.arithmetic",
            "builtins.initializers")


@pytest.mark.parametrize("name", MIRRORED)
def test_devitos_subpackages_are_real_packages(name):
    """``importlib.util.find_spec`` finds each (a package's submodules too: it has a path)."""
    import importlib.util
    spec = importlib.util.find_spec(f"stencilgen.{name}")
    assert spec is not None and spec.origin and Path(spec.origin).is_file()
    if "." not in name:
        assert spec.submodule_search_locations


def test_devito_imported_through_an_aliasing_loader():
    """A program that makes ``devito`` a name for stencilgen with a meta-path finder (each
    ``devito.X`` the module ``stencilgen.X``, found by its spec) imports Devito's paths."""
    import importlib
    import importlib.abc
    import importlib.util
    import sys

    class Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name != "devito" and not name.startswith("devito."):
                return None
            real = importlib.util.find_spec("stencilgen" + name[len("devito"):])
            if real is None:
                return None
            return importlib.util.spec_from_loader(
                name, self, is_package=real.submodule_search_locations is not None)

        def create_module(self, spec):
            return importlib.import_module("stencilgen" + spec.name[len("devito"):])

        def exec_module(self, module):
            pass

    finder = Alias()
    saved = {k: v for k, v in sys.modules.items() if k == "devito" or k.startswith("devito.")}
    for k in saved:
        del sys.modules[k]
    sys.meta_path.insert(0, finder)
    try:
        ops = importlib.import_module("devito.finite_differences.operators")
        assert ops.div is stencilgen.div
        assert importlib.import_module("devito.builtins.initializers").gaussian_smooth is \
            stencilgen.gaussian_smooth
        assert importlib.import_module("devito.symbolics").INT is \
            importlib.import_module("stencilgen.symbolics").INT
        assert importlib.import_module("devito").Grid is stencilgen.Grid
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "devito" or k.startswith("devito.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_int_casts_toward_zero_in_compiled_code_and_functions_are_retrieved():
    from stencilgen.symbolics import INT, retrieve_functions
    grid = Grid(shape=(7,))
    x, = grid.dimensions
    f = Function(name="f", grid=grid)
    u = TimeFunction(name="u", grid=grid)
    Operator(Eq(f, INT(x / 2) - INT(-x / 3)), backend="c").apply()
    np.testing.assert_array_equal(f.data, [i // 2 + i // 3 for i in range(7)])
    eq = Eq(u.forward, u + f)
    found = retrieve_functions(eq)
    assert found[0] == u.forward and set(found) == {u.forward, u, f}
    assert retrieve_functions([eq, eq], mode="unique") == {u.forward, u, f}


def test_gaussian_smooth_as_devitos():
    """A constant field stays constant (mirrored edges, normalised kernel); a spike becomes
    the outer product of the normalised Gaussian weights (2*round(4*sigma) + 1 points per
    axis); per-axis sigmas; the same as scipy.ndimage.gaussian_filter(mode='reflect')."""
    grid = Grid(shape=(21, 25))
    f = Function(name="f", grid=grid)
    f.data[:] = 3.0
    assert gaussian_smooth(f, sigma=2) is f
    np.testing.assert_allclose(f.data, 3.0, rtol=1e-6)
    f.data[:] = 0.0
    f.data[10, 12] = 1.0
    gaussian_smooth(f, sigma=(1.0, 1.5))
    weights = []
    for s in (1.0, 1.5):
        w = int(4 * s + 0.5)
        k = np.exp(-0.5 * (np.arange(-w, w + 1) / s) ** 2)
        weights.append(k / k.sum())
    expected = np.zeros((21, 25))
    expected[6:15, 6:19] = np.outer(*weights)
    np.testing.assert_allclose(f.data, expected, atol=1e-7)
    # Devito 4.8.23's gaussian_smooth of random values (tests/data, made with it)
    ref = np.load(Path(__file__).parent / "data" / "gaussian_smooth_devito.npz")
    for key, sigma in (("sigma2", 2), ("sigma1_15", (1.0, 1.5))):
        f.data[:] = ref["values"]
        gaussian_smooth(f, sigma=sigma)
        np.testing.assert_allclose(f.data, ref[key], rtol=0, atol=1e-6)


def test_function_initializer():
    """Devito's ``initializer=``: a callable given the values with their halo, an array of
    the domain's shape copied in."""
    grid = Grid(shape=(4, 5))
    f = Function(name="f", grid=grid, space_order=2, initializer=lambda a: a.fill(3.0))
    assert f.data_with_halo.shape == (8, 9) and np.all(f.data_with_halo == 3.0)
    values = np.arange(20.0).reshape(4, 5)
    g = Function(name="g", grid=grid, initializer=values)
    np.testing.assert_array_equal(g.data, values)
    u = TimeFunction(name="u", grid=grid, initializer=lambda a: a.fill(1.0))
    assert np.all(u.data == 1.0)
    with pytest.raises(InvalidArgument, match="initializer of shape"):
        Function(name="h", grid=grid, initializer=np.zeros(3))


def test_switchconfig_as_a_context_and_a_decorator():
    before = configuration["log-level"], configuration["backend"]
    with stencilgen.switchconfig(log_level="DEBUG", language="openmp"):
        assert configuration["log-level"] == "DEBUG" and configuration["backend"] == "c"
    assert (configuration["log-level"], configuration["backend"]) == before

    @stencilgen.switchconfig(log_level="WARNING")
    def inside():
        raise RuntimeError(configuration["log-level"])
    with pytest.raises(RuntimeError, match="WARNING"):
        inside()
    assert configuration["log-level"] == before[0]
    with pytest.raises(stencilgen.ConfigurationError, match="not a setting stencilgen has"):
        stencilgen.switchconfig(no_such_key=True)


#: Devito 4.8.23's configuration keys and the defaults reading them gives there (objects
#: such as its platform and compiler read as their registry names)
DEVITO_DEFAULTS = {"safe-math": False, "opt": "advanced", "opt-options": {}, "language": "C",
                   "platform": "cpu64", "compiler": "custom", "mpi": False, "log-level": "INFO",
                   "autotuning": "off", "profiling": "basic", "first-touch": False,
                   "ignore-unknowns": False, "autopadding": False, "autopadding-mode": None,
                   "deviceid": -1, "develop-mode": False, "jit-backdoor": False,
                   "topology": None}
#: those that name a setting of ours, with one value each and what it becomes here
MAPPED = {"safe-math": (True, "fast-math", False), "language": ("openmp", "backend", "c"),
          "compiler": ("gcc", "cc", "gcc"), "mpi": ("overlap2", "mpi", "overlap"),
          "log-level": ("PERF", "log-level", "PERF"),
          "autotuning": (("aggressive", "runtime"), "autotuning", "on"),
          "jit-backdoor": (1, "jit-backdoor", True)}


@pytest.mark.parametrize("key", sorted(DEVITO_DEFAULTS))
def test_every_devito_configuration_key_is_taken(key, recwarn):
    """Each of Devito's keys, read, set and given to switchconfig: mapped to ours where one
    exists, else kept for reads with a warning that it has no effect; nothing raises, and
    everything is put back after the block."""
    ours = {k: configuration[k] for k in configuration.keys()}
    if key in MAPPED:
        value, mine, expected = MAPPED[key]
        with stencilgen.switchconfig(**{key.replace("-", "_"): value}):
            assert configuration[mine] == expected
        assert not [w for w in recwarn if "has no effect" in str(w.message)]
    else:
        value = {"opt": "noop", "opt-options": {"blocklevels": 2}, "platform": "nvidiaX",
                 "topology": ("*", 1), "deviceid": 1, "profiling": "advanced",
                 "autopadding-mode": "cpu-only"}.get(key, True)
        with stencilgen.switchconfig(**{key.replace("-", "_"): value}):
            assert configuration[key] == value
        if key != "ignore-unknowns":   # apply() reads that one
            assert [w for w in recwarn if f"configuration[{key!r}]" in str(w.message)
                    and "has no effect" in str(w.message)]
    assert {k: configuration[k] for k in configuration.keys()} == ours
    if key in ("safe-math", "opt", "opt-options", "first-touch", "ignore-unknowns",
               "autopadding", "autopadding-mode", "deviceid", "develop-mode", "profiling",
               "topology", "compiler"):
        assert configuration[key] == DEVITO_DEFAULTS[key]


def test_configuration_items_take_devito_keys_too(recwarn):
    configuration["opt"] = "noop"
    try:
        assert configuration["opt"] == "noop" and "opt" in configuration
        assert any("has no effect" in str(w.message) for w in recwarn)
    finally:
        configuration._restore("opt", "advanced")
    before = configuration["backend"]
    configuration["language"] = "openmp"
    try:
        assert configuration["backend"] == "c" and configuration["language"] == "openmp"
    finally:
        configuration["backend"] = before
    with pytest.raises(stencilgen.ConfigurationError, match="language='fortran'"):
        configuration["language"] = "fortran"


def test_ignore_unknowns_lets_apply_skip_unknown_arguments():
    """Unknown apply() arguments are an error, as in Devito, unless ignore-unknowns is set:
    then a warning names them and the run is the run without them."""
    op, u, _ = _heat("Unknowns", backend="c")
    start = np.array(u.data[0])
    op.apply(time_M=3)
    plain = np.array(u.data)
    u.data[:] = 0
    u.data[0] = start
    with pytest.raises(InvalidArgument, match="unknown argument.*ignore-unknowns"):
        op.apply(time_M=3, not_an_argument=1)
    with stencilgen.switchconfig(ignore_unknowns=1):
        with pytest.warns(UserWarning, match="ignored unknown argument.*not_an_argument"):
            op.apply(time_M=3, not_an_argument=1)
    np.testing.assert_array_equal(u.data, plain)


def test_unknown_operator_keywords_warn_and_run():
    """Devito's Operator takes any keyword (examples/seismic/tti passes its solver's options
    through): each is named in a warning, and the Operator computes what it would without."""
    op, u, _ = _heat("Known", backend="c")
    start = np.array(u.data[0])
    op.apply(time_M=3)
    plain = np.array(u.data)
    with pytest.warns(UserWarning, match=r"ignored unknown argument\(s\) kernel='OT2', save=True"):
        other, v, _ = _heat("Unknown", backend="c", save=True, kernel="OT2")
    v.data[:] = 0
    v.data[0] = start
    other.apply(time_M=3)
    np.testing.assert_array_equal(v.data, plain)


def test_sides_print_as_devito_prints_them():
    """Programs build file names and keys from ``str(left)``: Devito's text."""
    from stencilgen import centered, left, right
    assert (str(left), str(right), str(centered)) == ("left[-1]", "right[1]", "centered[0]")
    assert left == "left" and {left: 1}[left] == 1


def test_the_stepping_dimensions_bounds_stand_for_the_time_loops():
    """Devito's ``t_M=`` / ``t_m=`` (the stepping dimension's name) are ``time_M`` /
    ``time_m``; giving both spellings is refused."""
    op, u, _ = _heat("Aliases")
    start = np.array(u.data[0])
    op.apply(t_M=4)
    by_alias = np.array(u.data)
    u.data[:] = 0
    u.data[0] = start
    op.apply(time_M=4)
    np.testing.assert_array_equal(u.data, by_alias)
    with pytest.raises(InvalidArgument, match="t_M= and time_M= both given"):
        op.apply(t_M=2, time_M=2)


def test_smooth_averages_as_devitos():
    """tests/reference/smooth_program.py under Devito 4.8.23 (stored) and stencilgen: the
    moving average at space orders 1 and 4 along the default axis, x, and x and y (the halo's
    own values read), and of a Constant: float32 round-off apart."""
    assert_matches_devito("smooth_program")


def test_vector_calculus_methods_as_devitos():
    """tests/reference/vector_calculus_program.py under Devito 4.8.23 (stored) and
    stencilgen: ``v.div()`` is the scalar divergence (not the entries' own), ``v.grad()`` a
    tensor, ``v.curl()`` and ``v.laplacian()`` vectors: float32 round-off apart."""
    assert_matches_devito("vector_calculus_program")

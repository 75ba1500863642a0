"""Bad input gets one of stencilgen's own errors, with a message that says what to do."""
import numpy as np
import pytest
import sympy

from stencilgen import (CompilerNotFoundError, Derivative, Eq, Function, Grid, HaloError,
                        InvalidArgument, InvalidEquation, Operator, TimeFunction, configuration,
                        solve)


@pytest.fixture
def grid():
    return Grid(shape=(8, 9))


@pytest.mark.parametrize("so", [3, -1, -2, 34, 2.0, "4"])
def test_bad_space_order(grid, so):
    with pytest.raises(InvalidArgument, match="space_order"):
        Function(name="f", grid=grid, space_order=so)


@pytest.mark.parametrize("to", [-1, 3])
def test_bad_time_order(grid, to):
    with pytest.raises(InvalidArgument, match="time_order"):
        TimeFunction(name="u", grid=grid, time_order=to)


def test_bad_grid():
    with pytest.raises(InvalidArgument, match="dimensions"):
        Grid(shape=(4, 4, 4, 4))
    with pytest.raises(InvalidArgument, match="extent"):
        Grid(shape=(4, 4), extent=(1.0,))
    with pytest.raises(InvalidArgument, match="dtype"):
        Grid(shape=(4, 4), dtype=np.int32)


def test_data_of_wrong_shape_or_dtype(grid):
    f = Function(name="f", grid=grid)
    with pytest.raises(InvalidArgument, match=r"shape \(3, 3\).*\(8, 9\)"):
        f.data = np.ones((3, 3))
    with pytest.raises(InvalidArgument, match="dtype complex"):
        f.data = np.ones((8, 9), dtype=complex)
    with pytest.raises(InvalidArgument, match="dtype"):
        Function(name="g", grid=grid, dtype=np.longdouble)
    f.data = np.arange(72.0).reshape(8, 9)   # a correct assignment still works
    assert f.data[7, 8] == 71.0


def test_unknown_apply_keyword(grid):
    f = Function(name="f", grid=grid)
    g = Function(name="g", grid=grid)
    op = Operator([Eq(g, f + 1)])
    with pytest.raises(InvalidArgument, match="unknown argument.*bogus.*accepts"):
        op.apply(bogus=3)


def test_override_of_wrong_shape(grid):
    f = Function(name="f", grid=grid)
    g = Function(name="g", grid=grid)
    other = Function(name="h", grid=Grid(shape=(5, 5)))
    op = Operator([Eq(g, f + 1)])
    with pytest.raises(InvalidArgument, match="does not match"):
        op.apply(f=other)


def test_mixing_grids():
    a = Function(name="a", grid=Grid(shape=(5, 5)))
    b = Function(name="b", grid=Grid(shape=(6, 6)))
    with pytest.raises(InvalidEquation, match="different Grids"):
        Operator([Eq(a, b + 1)])
    with pytest.raises(InvalidEquation, match="different Grids"):
        (a * b).dx


def test_solve_without_unique_solution(grid):
    u = TimeFunction(name="u", grid=grid, time_order=2)
    with pytest.raises(InvalidEquation, match="does not appear"):
        solve(u.laplace, u.forward)
    with pytest.raises(InvalidEquation, match="not linear"):
        solve(u.forward ** 2 - u, u.forward)
    with pytest.raises(InvalidEquation, match="unknown must be"):
        solve(u.dt, 3)


def test_stencil_wider_than_halo(grid):
    x, _ = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2)
    g = Function(name="g", grid=grid, space_order=2)
    with pytest.raises(HaloError, match="halo is 2 points wide.*space_order to at least 4"):
        Operator([Eq(g, Derivative(f, (x, 2), fd_order=6))])
    with pytest.raises(HaloError, match="wider than the halo"):
        Operator([Eq(g, f.subs(x, x + 3 * x.spacing))])


def test_bad_derivative_arguments(grid):
    x, _ = grid.dimensions
    f = Function(name="f", grid=grid, space_order=4)
    with pytest.raises(InvalidArgument, match="fd_order=0"):
        Derivative(f, x, fd_order=0)
    with pytest.raises(InvalidArgument, match="fd_order=1 is not supported"):
        Derivative(f, (x, 2), fd_order=1)
    with pytest.raises(InvalidArgument, match="node or midpoint"):
        f.dx(x0=x + x.spacing / 3)
    u1 = TimeFunction(name="u1", grid=grid, time_order=1)
    with pytest.raises(InvalidArgument, match="time_order=2"):
        u1.dt2


def test_lhs_must_be_a_function(grid):
    f = Function(name="f", grid=grid)
    x, _ = grid.dimensions
    with pytest.raises(InvalidEquation, match="left-hand side"):
        Operator([Eq(f + 1, f)])
    with pytest.raises(InvalidEquation, match="shifted"):
        Operator([Eq(f.subs(x, x + x.spacing), f)])


def test_missing_time_bounds_and_dt(grid):
    u = TimeFunction(name="u", grid=grid, time_order=2)
    op = Operator([Eq(u.forward, solve(u.dt2 - u.laplace, u.forward))])
    with pytest.raises(InvalidArgument, match="missing time bounds.*time_M"):
        op.apply(dt=0.1)
    with pytest.raises(InvalidArgument, match="equations use dt"):
        op.apply(time_M=3)
    with pytest.raises(InvalidArgument, match="time_m=5, time_M=3"):
        op.apply(time_m=5, time_M=3, dt=0.1)


def test_saved_function_too_short(grid):
    u = TimeFunction(name="u", grid=grid, time_order=1, save=5)
    op = Operator([Eq(u.forward, u + 1)])
    with pytest.raises(InvalidArgument, match="saves 5 time steps.*time_M <= 3"):
        op.apply(time_M=4)
    op.apply()                       # default time_M = 3 fits
    assert np.all(u.data[4] == 4.0)


def test_unknown_symbol(grid):
    import sympy
    f = Function(name="f", grid=grid)
    with pytest.raises(InvalidEquation, match="Constant"):
        Operator([Eq(f, f + sympy.Symbol("alpha"))])


def test_no_c_compiler(grid, monkeypatch):
    f = Function(name="f", grid=grid)
    op = Operator([Eq(f, f + 1)])
    configuration["cc"] = "/nonexistent/bin/gcc"
    try:
        with pytest.raises(CompilerNotFoundError, match="gcc"):
            op.apply()
    finally:
        configuration["cc"] = None


def test_bad_configuration():
    from stencilgen import ConfigurationError
    with pytest.raises(ConfigurationError, match="backend"):
        configuration["backend"] = "fortran"
    with pytest.raises(ConfigurationError, match="unknown setting"):
        configuration["colour"] = 1
    with pytest.raises(InvalidArgument, match="unknown backend"):
        Operator([Eq(Function(name="q", grid=Grid((4,))), 1)], backend="fortran")


def test_sympy_derivative_is_rejected():
    import sympy
    grid = Grid(shape=(5,))
    x, = grid.dimensions
    u = Function(name="u", grid=grid, space_order=2)
    v = Function(name="v", grid=grid, space_order=2)
    with pytest.raises(InvalidEquation, match=r"sympy derivative.*u\.diff\(x\)"):
        Operator([Eq(v, sympy.Derivative(u, x))])


_FOREIGN = {
    "indexed": (lambda f, x: sympy.IndexedBase("A")[x, 1], "A\\[x, 1\\] is a sympy Indexed"),
    "undefined": (lambda f, x: sympy.Function("q")(x), "q\\(x\\) is an undefined sympy function"),
    "system": (lambda f, x: sympy.Function("system")(x) * f, "system\\(x\\) is an undefined"),
    "exit": (lambda f, x: sympy.Function("exit")(f), "exit\\(f\\(x, y\\)\\) is an undefined"),
    "imaginary": (lambda f, x: sympy.I * f, "right-hand side is complex and g holds real"),
    "complex": (lambda f, x: (1 + 2j) * f, "right-hand side is complex and g holds real"),
    "zoo": (lambda f, x: sympy.zoo + f, "zoo is not a finite number"),
    "nan": (lambda f, x: sympy.nan * f, "nan is not a finite number"),
    "oo": (lambda f, x: sympy.oo, "oo is not a finite number"),
    "-oo": (lambda f, x: f - sympy.oo, "oo is not a finite number"),
    "inf": (lambda f, x: sympy.Float("inf") * f, "oo is not a finite number"),
    "integral": (lambda f, x: sympy.Integral(f, x), "Integral.*not something stencilgen"),
    "sum": (lambda f, x: sympy.Sum(x, (x, 0, 3)), "Sum.*not something stencilgen"),
    "piecewise": (lambda f, x: sympy.Piecewise((f, f > 0), (0, True)), "is a Piecewise"),
    "matrix": (lambda f, x: sympy.Matrix([1, 2]), "ImmutableDenseMatrix"),
    "condition": (lambda f, x: sympy.true, "is a condition"),
    "delta": (lambda f, x: sympy.DiracDelta(f), "DiracDelta.*no counterpart"),
}


@pytest.mark.parametrize("case", sorted(_FOREIGN))
def test_terms_the_compiler_does_not_know_are_refused_before_generation(grid, case):
    """Foreign sympy objects never reach the printer or gcc: InvalidEquation names them."""
    x, _ = grid.dimensions
    f, g = Function(name="f", grid=grid), Function(name="g", grid=grid)
    build, message = _FOREIGN[case]
    with pytest.raises(InvalidEquation, match=message):
        Operator(Eq(g, build(f, x)), backend="c")


def test_foreign_terms_in_conditions_are_refused_too(grid):
    from stencilgen import ConditionalDimension, Gt
    x, y = grid.dimensions
    f, g = Function(name="f", grid=grid), Function(name="g", grid=grid)
    c = ConditionalDimension(name="c", parent=y, condition=Gt(sympy.Function("w")(x), 0))
    with pytest.raises(InvalidEquation, match="w\\(x\\) is an undefined sympy function"):
        Operator(Eq(g, f, implicit_dims=c), backend="c")


def test_names_of_c_functions_are_only_names(grid):
    """A Function called system and a Constant called exit are renamed in the source; the
    numbers are the user's, and apply(exit=...) still means the Constant."""
    from stencilgen import Constant
    s, m = Function(name="system", grid=grid), Function(name="main", grid=grid)
    e = Constant(name="exit", value=2.0)
    s.data[:] = 3.0
    op = Operator(Eq(m, s * e + sympy.pi), backend="c")
    op.apply()
    assert np.allclose(m.data, 6.0 + np.pi)
    op.apply(exit=5.0)
    assert np.allclose(m.data, 15.0 + np.pi)


def test_a_function_and_a_constant_of_one_name_are_refused(grid):
    """apply(c=...) could mean only one of them: refused as two Functions of one name are."""
    from stencilgen import Constant
    f, c = Function(name="c", grid=grid), Function(name="g", grid=grid)
    k = Constant(name="c", value=1.0)
    with pytest.raises(InvalidEquation, match="two different functions are both named 'c'"):
        Operator(Eq(c, f + k), backend="c")
    with pytest.raises(InvalidEquation, match="two different functions are both named 'f'"):
        Operator(Eq(c, Function(name="f", grid=grid) + Function(name="f", grid=grid)),
                 backend="c")

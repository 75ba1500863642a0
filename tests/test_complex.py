"""Complex fields (Devito's ``dtype=np.complex64``): arithmetic with ``I`` and complex
Constants, math functions of complex arguments, ``Real``/``Imag``/``Conj``, derivatives,
sparse injection and interpolation, the on-the-fly Fourier transform of a wavefield (Inc of
``exp(-I*omega*t*dt)*u``), checked against NumPy on C, OpenACC, the emulated CUDA source and
a GPU; and the refusals of what has no complex meaning."""
import warnings

import numpy as np
import pytest
import sympy

from backend_cases import backends, run, target
from stencilgen import (Abs, Conj, Constant, Eq, Function, Grid, Imag, Inc, InvalidArgument,
                        InvalidEquation, Min, NumericalWarning, Operator, Real, SparseFunction, SparseTimeFunction,
                        TimeFunction, exp, mmax, norm, sin, solve, sqrt)

COMPLEX = [np.complex64, np.complex128]
#: float32 grids: the arithmetic of a complex64 value is float32's (a complex128 function
#: on a float32 grid still takes the spacings and literals in float32)
TOL = {np.complex64: 2e-6, np.complex128: 2e-6}


@pytest.mark.parametrize("case", backends())
@pytest.mark.parametrize("dtype", COMPLEX)
def test_complex_expression_with_a_complex_constant(case, dtype, tmp_path):
    """Devito's test_operator.py::test_complex: x + I*y + exp(I + h_x)*c, c given at apply."""
    grid = Grid(shape=(5, 5))
    x, y = grid.dimensions
    c = Constant(name="c", dtype=dtype)
    u = Function(name="u", grid=grid, dtype=dtype)
    op = Operator(Eq(u, x + sympy.I * y + exp(sympy.I + x.spacing) * c), backend=target(case))
    run(op, case, tmp_path, c=1.0 + 2.0j)
    dx = grid.spacing[0]
    xx, yy = np.meshgrid(np.arange(5.0), np.arange(5.0), indexing="ij")
    want = xx + 1j * yy + np.exp(1j + dx) * (1.0 + 2.0j)
    assert u.data.dtype == dtype
    assert np.abs(u.data - want).max() <= TOL[dtype] * np.abs(want).max()


@pytest.mark.parametrize("case", backends())
@pytest.mark.parametrize("dtype", COMPLEX)
def test_parts_conjugate_and_math_of_complex_values(case, dtype, tmp_path):
    grid = Grid(shape=(6, 7))
    z = Function(name="z", grid=grid, dtype=dtype)
    w = Function(name="w", grid=grid, dtype=dtype)
    r = Function(name="r", grid=grid)
    rng = np.random.default_rng(3)
    values = (rng.uniform(-1, 1, grid.shape) + 1j * rng.uniform(-1, 1, grid.shape))
    z.data[:] = values
    # the same complex subexpression twice: a complex local (CSE) of the complex type
    eqs = [Eq(w, Conj(z) * exp(z) + sqrt(z) * sin(z) - 2 * exp(z) / (z + 3)),
           Eq(r, 2 * Real(z) + Imag(z) * Abs(z))]
    op = Operator(eqs, backend=target(case))
    run(op, case, tmp_path)
    v = values.astype(dtype)
    want_w = np.conj(v) * np.exp(v) + np.sqrt(v) * np.sin(v) - 2 * np.exp(v) / (v + 3)
    want_r = 2 * v.real + v.imag * np.abs(v)
    assert np.abs(w.data - want_w).max() <= 5e-6 * np.abs(want_w).max()
    assert np.abs(r.data - want_r).max() <= 5e-6 * np.abs(want_r).max()


@pytest.mark.parametrize("dtype", COMPLEX)
def test_float32_code_stays_float32(dtype):
    """complex64 values are pairs of floats with C99's float functions; only complex128
    values (and their functions) are double."""
    grid = Grid(shape=(5, 5))
    z = Function(name="z", grid=grid, dtype=dtype)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    omega = 2 * np.pi * 0.01
    op = Operator([Eq(u.forward, u.laplace),
                   Inc(z, exp(-1j * omega * grid.time_dim * grid.time_dim.spacing) * u)],
                  backend="c")
    code = op.ccode
    single = dtype == np.complex64
    assert ("sg_cfloat *restrict z_vec" in code) == single
    assert ("sg_cdouble *restrict z_vec" in code) != single
    assert "cexpf(" in code and "typedef float _Complex sg_cfloat;" in code
    body = code[code.index("int Kernel("):]
    assert ("double" in body.replace("const double start_section", "")
            .replace("double *restrict timers", "")) != single


@pytest.mark.parametrize("case", backends())
@pytest.mark.parametrize("dtype", COMPLEX)
def test_time_derivative_of_a_complex_function(case, dtype, tmp_path):
    """Devito's test_dtypes.py::test_complex_time_deriv."""
    grid = Grid(shape=(5, 5))
    x, y = grid.dimensions
    t = grid.time_dim
    f = TimeFunction(name="f", grid=grid, space_order=2, dtype=dtype)
    g = Function(name="g", grid=grid, dtype=dtype)
    eqs = [Eq(f.forward, t * x * x.spacing * (1.0 + 0.0j) + t * y * y.spacing * (0.0 + 1.0j)),
           Eq(g, f.dt)]
    op = Operator(eqs, backend=target(case))
    run(op, case, tmp_path, time=10, dt=1.0)
    dx, dy = grid.spacing
    xx, yy = np.meshgrid(np.arange(5.0), np.arange(5.0), indexing="ij")
    want = xx * dx + yy * dy * 1j
    assert np.abs(g.data - want).max() <= 1e-5


@pytest.mark.parametrize("case", backends())
@pytest.mark.parametrize("dtype", COMPLEX)
def test_injection_of_complex_and_real_samples(case, dtype, tmp_path):
    """Devito's test_complex_reduction: 8 steps of a complex sample at a node add 8 times
    its value; a real sample adds to the real part."""
    grid = Grid((11, 11))
    for sample, want in ((1 + 2j, 8 + 16j), (1.0, 8.0)):
        u = TimeFunction(name="u", grid=grid, space_order=2, time_order=1, dtype=dtype)
        s = SparseTimeFunction(name="s", grid=grid, npoint=1, nt=10,
                               dtype=dtype if isinstance(sample, complex) else np.float32)
        s.data[:] = sample
        s.coordinates.data[:] = [0.5, 0.5]
        op = Operator([Eq(u.forward, u)] + s.inject(u.forward, expr=s), backend=target(case))
        run(op, case, tmp_path, time_M=7)
        assert np.isclose(u.data[0, 5, 5], want)
        assert np.abs(u.data[0]).sum() == pytest.approx(abs(want))


def test_a_complex_value_into_a_real_function_is_refused():
    grid = Grid((11, 11))
    u = TimeFunction(name="u", grid=grid)
    s = SparseTimeFunction(name="s", grid=grid, npoint=1, nt=10, dtype=np.complex64)
    with pytest.raises(InvalidEquation, match="Real"):
        Operator([Eq(u.forward, u)] + s.inject(u.forward, expr=s))
    z = Function(name="z", grid=grid, dtype=np.complex64)
    with pytest.raises(InvalidEquation, match="complex"):
        Operator(Eq(u.forward, z + 1))
    with pytest.raises(InvalidEquation, match="complex"):
        Operator(Eq(u.forward, u * sympy.I))


@pytest.mark.parametrize("case", backends())
@pytest.mark.parametrize("dtype", COMPLEX)
def test_interpolation_of_a_complex_field(case, dtype, tmp_path):
    """Devito's TestComplex: at a node the sample is the field's value; Real(fc) into a
    real sparse function its real part; between nodes the bilinear mix."""
    grid = Grid((11, 11, 11))
    sc = SparseFunction(name="sc", grid=grid, npoint=2, dtype=dtype)
    sc.coordinates.data[:] = [[0.5, 0.5, 0.5], [0.33, 0.61, 0.47]]
    scre = SparseFunction(name="sce", grid=grid, npoint=2, coordinates=sc.coordinates.data)
    fc = Function(name="fc", grid=grid, dtype=dtype)
    rng = np.random.RandomState(0)
    fc.data[:] = rng.randn(*grid.shape) + 1j * rng.randn(*grid.shape)
    op = Operator(sc.interpolate(expr=fc) + scre.interpolate(expr=Real(fc)),
                  backend=target(case))
    run(op, case, tmp_path)
    v = np.array(fc.data)
    assert np.isclose(sc.data[0], v[5, 5, 5])
    assert np.isclose(scre.data[0], v[5, 5, 5].real)
    pos = np.array([3.3, 6.1, 4.7])
    cell, frac = np.floor(pos).astype(int), pos - np.floor(pos)
    want = 0
    for corner in np.ndindex(2, 2, 2):
        w = np.prod([f if k else 1 - f for k, f in zip(corner, frac)])
        want += w * v[tuple(cell + corner)]
    assert abs(sc.data[1] - want) <= 1e-5 * abs(want)


@pytest.mark.parametrize("case", backends())
def test_on_the_fly_fourier_mode_is_the_dft_of_the_wavefield(case, tmp_path):
    """The Fourier-mode tutorial's sum, Inc(freq_mode, exp(-I*omega*time*dt)*u), equals the
    DFT at omega of the wavefield saved at every step."""
    grid = Grid(shape=(41, 41), extent=(400.0, 400.0))
    m = Function(name="m", grid=grid)
    m.data[:] = 1 / 1.5 ** 2
    nt = 120
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4, save=nt + 2)
    fm = Function(name="fm", grid=grid, space_order=0, dtype=np.complex64)
    omega = 2 * np.pi * 0.012
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt + 2)
    src.coordinates.data[:] = [200.0, 200.0]
    t = np.arange(nt + 2) * 1.0
    arg = (np.pi * 0.012 * (t - 60)) ** 2
    src.data[:, 0] = (1 - 2 * arg) * np.exp(-arg)
    time = grid.time_dim
    eqs = [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))] + \
        src.inject(field=u.forward, expr=src / m) + \
        [Inc(fm, exp(-1j * omega * time * time.spacing) * u)]
    op = Operator(eqs, backend=target(case))
    run(op, case, tmp_path, dt=1.0, time_M=nt)
    saved = np.array(u.data[:nt + 1], dtype=np.float64)
    want = np.tensordot(np.exp(-1j * omega * np.arange(nt + 1)), saved, axes=1)
    assert np.abs(want).max() > 1.0
    assert np.abs(fm.data - want).max() <= 2e-5 * np.abs(want).max()
    assert norm(fm) == pytest.approx(np.linalg.norm(want), rel=1e-5)
    assert isinstance(norm(fm), np.float32)


def test_complex_data_and_helpers():
    grid = Grid(shape=(4, 4))
    z = Function(name="z", grid=grid, dtype=np.complex128)
    z.data[:] = 1 + 2j
    assert norm(z) == pytest.approx(4 * np.sqrt(5))
    with pytest.raises(InvalidArgument, match="no order"):
        mmax(z)
    u = Function(name="u", grid=grid)
    with pytest.raises(InvalidArgument, match="complex64"):
        u.data = np.full((4, 4), 1j)
    with pytest.raises(InvalidArgument, match="complex"):
        Grid(shape=(4, 4), dtype=np.complex64)
    k = Constant(name="k", value=1.0)
    with pytest.raises(InvalidArgument, match="complex"):
        Operator(Eq(u, k * u), backend="c").apply(k=1 + 1j)


def test_what_has_no_complex_meaning_is_refused():
    grid = Grid(shape=(4, 4))
    z = Function(name="z", grid=grid, dtype=np.complex64)
    w = Function(name="w", grid=grid, dtype=np.complex64)
    with pytest.raises(InvalidEquation, match="real ones only"):
        Operator(Eq(w, Min(z, 1)))
    with pytest.raises(InvalidEquation, match="real ones only"):
        Operator(Eq(w, sympy.floor(z)))


@pytest.mark.parametrize("case", backends(emulated=False))
def test_nonfinite_parts_are_counted(case):
    """A NaN in an imaginary part is counted as one in a real value is."""
    grid = Grid(shape=(6, 6))
    z = TimeFunction(name="z", grid=grid, dtype=np.complex64)
    z.data[0, 2, 3] = complex(1.0, np.nan)
    z.data[0, 4, 1] = complex(np.inf, 0.0)
    op = Operator(Eq(z.forward, z * sympy.I), backend=target(case))
    with pytest.warns(NumericalWarning, match="2 "):
        op.apply(time_M=0)
    z.data[:] = 1j
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumericalWarning)
        op.apply(time_M=0)
    assert np.all(z.data[1] == -1)


@pytest.mark.parametrize("case", backends())
def test_several_fourier_modes_on_a_frequency_dimension(case, tmp_path):
    """The Fourier tutorial's second part: the modes on a Dimension f beyond the grid's
    (freq_modes on (f, x, y), the frequencies a Function of f), each the DFT of the saved
    wavefield at its frequency; other frequencies given at apply."""
    from stencilgen import Dimension
    grid = Grid(shape=(21, 21), extent=(200.0, 200.0))
    m = Function(name="m", grid=grid)
    m.data[:] = 1 / 1.5 ** 2
    nt = 60
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4, save=nt + 2)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt + 2)
    src.coordinates.data[:] = [100.0, 100.0]
    src.data[:, 0] = np.sin(0.2 * np.arange(nt + 2))
    nfreq = 4
    f = Dimension(name="f")
    frequencies = Function(name="frequencies", dimensions=(f,), shape=(nfreq,))
    frequencies.data[:] = np.linspace(0.005, 0.015, num=nfreq)
    modes = Function(name="freq_modes", grid=grid, space_order=0, dtype=np.complex64,
                     dimensions=(f, *grid.dimensions), shape=(nfreq, *grid.shape))
    assert modes.shape == (nfreq, 21, 21) and modes.dimensions == (f, *grid.dimensions)
    time = grid.time_dim
    basis = exp(-1j * 2 * np.pi * frequencies * time * time.spacing)
    op = Operator([Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))] +
                  src.inject(field=u.forward, expr=src / m) + [Inc(modes, basis * u)],
                  backend=target(case))
    others = Function(name="others", dimensions=(f,), shape=(nfreq,))
    others.data[:] = [0.02, 0.004, 0.011, 0.0]
    for given in (frequencies, others):
        modes.data[:] = 0
        u.data[:] = 0
        run(op, case, tmp_path, dt=1.0, time_M=nt, **({} if given is frequencies
                                                       else {"frequencies": others}))
        saved = np.array(u.data[:nt + 1], dtype=np.float64)
        for k, fk in enumerate(given.data):
            want = np.tensordot(np.exp(-2j * np.pi * fk * np.arange(nt + 1)), saved, axes=1)
            assert np.abs(modes.data[k] - want).max() <= 2e-5 * np.abs(want).max(), k


def test_what_a_frequency_dimension_cannot_do():
    from stencilgen import Dimension
    grid = Grid(shape=(5, 5))
    f, g = Dimension(name="f"), Dimension(name="g")
    modes = Function(name="modes", grid=grid, dimensions=(f, *grid.dimensions), shape=(3, 5, 5))
    total = Function(name="total", grid=grid)
    with pytest.raises(InvalidEquation, match="write Inc to sum over f"):
        Operator(Eq(total, modes))
    modes.data[:] = np.arange(75.0).reshape(3, 5, 5)
    Operator(Inc(total, modes), backend="c").apply()   # a sum over f
    assert np.array_equal(total.data, modes.data.sum(axis=0))
    two = Function(name="two", grid=grid, dimensions=(f, g, *grid.dimensions),
                   shape=(3, 2, 5, 5))
    with pytest.raises(InvalidEquation, match="takes one"):
        Operator(Eq(two, 1))


@pytest.mark.parametrize("case", backends())
def test_parts_of_real_values_and_in_conditions(case, tmp_path):
    """Real/Imag/Conj of a real value are the value, 0 and the value; a condition may
    compare a part of a complex value."""
    from stencilgen import ConditionalDimension, Gt
    grid = Grid(shape=(6, 5))
    x, y = grid.dimensions
    f = Function(name="f", grid=grid)
    g = Function(name="g", grid=grid)
    z = Function(name="z", grid=grid, dtype=np.complex64)
    f.data[:] = np.arange(30.0).reshape(6, 5) - 10
    z.data[:] = f.data - 1j * f.data
    positive = ConditionalDimension(name="positive", parent=y, condition=Gt(Imag(z), 0))
    op = Operator([Eq(g, Real(f) + 2 * Imag(f) + Conj(f) * 3),
                   Eq(f, -1.0, implicit_dims=positive)], backend=target(case))
    values = np.array(f.data)
    run(op, case, tmp_path)
    assert np.array_equal(g.data, 4 * values)
    assert np.array_equal(f.data, np.where(values < 0, -1.0, values))


@pytest.mark.gpu
@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_a_complex_field_on_the_gpu_is_seen_by_other_libraries(library):
    """After a CUDA apply the complex field's GPU copy is a complex64 view for PyTorch and
    CuPy (DLPack and the CUDA array interface), values and writes shared."""
    from test_interop import _gpu_library
    lib = _gpu_library(library)
    grid = Grid(shape=(8, 6))
    z = Function(name="z", grid=grid, dtype=np.complex64)
    z.data[:] = np.arange(48).reshape(8, 6) * (1 + 1j)
    Operator(Eq(z, z * sympy.I), backend="cuda").apply()
    view = lib.from_dlpack(z.device_data)
    values = view.cpu().numpy() if library == "torch" else lib.asnumpy(view)
    assert values.dtype == np.complex64
    np.testing.assert_array_equal(values, np.arange(48).reshape(8, 6) * (1 + 1j) * 1j)
    view[0, 0] = 5 - 2j
    assert z.data[0, 0] == 5 - 2j

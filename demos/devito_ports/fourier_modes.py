"""The on-the-fly discrete Fourier transform of Devito's seismic tutorial 17 (Fourier modes),
on a smaller layered model: a complex64 Function summed during the propagation,
``Inc(freq_mode, exp(-1j*omega*time*dt)*u)``, beside the wave, its source and receivers; then
five frequencies at once, the modes one Function on a frequency Dimension ``f``
(``dimensions=(f, x, y)``) and the frequencies a Function of ``f``. Also Devito's complex
operator tests: a complex Constant given at apply, complex injection, and interpolation of a
complex field and of its real part."""
import numpy as np
import sympy

from demos.devito_ports.framework import api
from demos.devito_ports.wavelets import ricker

(Constant, Dimension, Eq, Function, Grid, Inc, Operator, Real, SparseFunction,
 SparseTimeFunction, TimeFunction, exp, norm, solve) = (
    api.Constant, api.Dimension, api.Eq, api.Function, api.Grid, api.Inc, api.Operator,
    api.Real, api.SparseFunction, api.SparseTimeFunction, api.TimeFunction, api.exp, api.norm,
    api.solve)

SPACING = 10.0   # m


def model(grid, nbl=20, nlayers=4):
    """Squared slowness of ``nlayers`` flat layers from 1.5 to 3.0 km/s, and a damping growing
    quadratically into the ``nbl`` points at the sides and bottom."""
    nx, nz = grid.shape
    vp = np.empty((nx, nz), dtype=np.float32)
    for k, v in enumerate(np.linspace(1.5, 3.0, nlayers)):
        vp[:, k * nz // nlayers:] = v
    m = Function(name="m", grid=grid, space_order=2)
    m.data[:] = 1 / vp ** 2
    ramp = np.maximum(0, nbl - np.arange(nx)) / nbl
    depth = np.maximum(0, np.arange(nz) - (nz - 1 - nbl)) / nbl
    damp = Function(name="damp", grid=grid, space_order=2)
    damp.data[:] = 0.1 * np.maximum((ramp + ramp[::-1])[:, None], depth[None, :]) ** 2
    return m, damp


def fourier(shape=(81, 81), nt=301, dt=1.0, f0=0.010):
    """The tutorial's modelling with the 10 Hz mode, then the five modes from 5 to 15 Hz."""
    grid = Grid(shape=shape, extent=tuple(SPACING * (n - 1) for n in shape))
    m, damp = model(grid)
    time = grid.time_dim
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [[SPACING * (shape[0] - 1) / 2, 20.0]]
    src.data[:, 0] = ricker(nt, dt, f0)
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=shape[0], nt=nt)
    rec.coordinates.data[:, 0] = np.linspace(0, SPACING * (shape[0] - 1), shape[0])
    rec.coordinates.data[:, 1] = 30.0
    out = {}
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=2)
    stencil = Eq(u.forward, solve(m * u.dt2 - u.laplace + damp * u.dt, u.forward))
    terms = [stencil] + src.inject(field=u.forward, expr=src * dt ** 2 / m) + \
        rec.interpolate(expr=u.forward)
    mode = Function(name="freq_mode", grid=grid, space_order=0, dtype=np.complex64)
    omega = 2 * np.pi * 0.01
    Operator(terms + [Inc(mode, exp(-1j * omega * time * time.spacing) * u)]).apply(
        dt=dt, time_M=nt - 2)
    out.update(mode=np.array(mode.data), u=np.array(u.data), rec=np.array(rec.data),
               norm=np.array([norm(mode)]))
    # five frequencies on a Dimension of their own, as the tutorial's second part
    u.data[:] = 0
    nfreq = 5
    f = Dimension(name='f')
    frequencies = Function(name='frequencies', dimensions=(f,), shape=(nfreq,),
                           dtype=np.float32)
    frequencies.data[:] = np.linspace(0.005, 0.015, num=nfreq)
    freq_modes = Function(name='freq_modes', grid=grid, space_order=0, dtype=np.complex64,
                          dimensions=(f, *grid.dimensions), shape=(nfreq, *grid.shape))
    omega = 2 * np.pi * frequencies
    basis = exp(-1j * omega * time * time.spacing)
    Operator(terms + [Inc(freq_modes, basis * u)]).apply(dt=dt, time_M=nt - 2)
    out["modes"], out["modes_norm"] = np.array(freq_modes.data), np.array([norm(freq_modes)])
    return out


def operator_tests():
    """Devito's test_operator.py::test_complex, test_dtypes.py::test_complex_reduction and
    test_interpolation.py::TestComplex, one dtype each."""
    out = {}
    for dtype in (np.complex64, np.complex128):
        grid = Grid(shape=(5, 5))
        x, y = grid.dimensions
        c = Constant(name="c", dtype=dtype)
        u = Function(name="u", grid=grid, dtype=dtype)
        Operator(Eq(u, x + sympy.I * y + exp(sympy.I + x.spacing) * c)).apply(c=1.0 + 2.0j)
        out[f"constant_{np.dtype(dtype).name}"] = np.array(u.data)
    grid = Grid((11, 11))
    u = TimeFunction(name="u", grid=grid, space_order=2, time_order=1, dtype=np.complex64)
    s = SparseTimeFunction(name="s", grid=grid, npoint=3, nt=10, dtype=np.complex64)
    s.data[:] = (1 + 2j) * np.arange(1, 4)
    s.coordinates.data[:] = [[0.5, 0.5], [0.23, 0.71], [0.9, 0.15]]
    Operator([Eq(u.forward, u)] + s.inject(u.forward, expr=s)).apply(time_M=7)
    out["inject"] = np.array(u.data)
    grid = Grid((11, 11, 11))
    sc = SparseFunction(name="sc", grid=grid, npoint=3, dtype=np.complex64)
    sc.coordinates.data[:] = [[0.5, 0.5, 0.5], [0.33, 0.61, 0.47], [0.05, 0.95, 0.5]]
    scre = SparseFunction(name="sce", grid=grid, npoint=3, coordinates=sc.coordinates.data)
    fc = Function(name="fc", grid=grid, dtype=np.complex64)
    rng = np.random.RandomState(0)
    fc.data[:] = rng.randn(*grid.shape) + 1j * rng.randn(*grid.shape)
    Operator(sc.interpolate(expr=fc) + scre.interpolate(expr=Real(fc))).apply()
    out["interpolate"], out["interpolate_real"] = np.array(sc.data), np.array(scre.data)
    return out


def run():
    return {**fourier(), **operator_tests()}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).max()))

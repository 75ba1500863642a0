"""Darcy flow (Devito's CFD tutorial 09): ``-div(a*grad(u)) = f`` on the unit square with a
two-valued random permeability ``a`` (4 or 12), written with staggered differences,
``Eq(-div(a*grad(u, shift=.5), shift=-.5), f1)``, solved for ``u`` and iterated in
pseudo-time by ``Eq(u.forward, stencil)``; zero-gradient rows then ``u = 0`` rows on the
edges (the later rows win, as in the tutorial); ``a`` set by ``initialize_function``. As in
the tutorial, one Operator solves for several permeabilities in turn, each apply starting
from where the last one stopped."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Function, Grid, Operator, TimeFunction, div, grad, initialize_function, solve = (
    api.Eq, api.Function, api.Grid, api.Operator, api.TimeFunction, api.div, api.grad,
    api.initialize_function, api.solve)


def permeability(s, seed, length=0.15):
    """A random field smoothed over ``length`` (a Gaussian filter of white noise, made
    periodic by the FFT), 12 where it is positive and 4 elsewhere."""
    noise = np.random.default_rng(seed).standard_normal((s, s))
    k = np.fft.fftfreq(s) * s
    filt = np.exp(-0.5 * (2 * np.pi * length) ** 2 * (k[:, None] ** 2 + k[None, :] ** 2))
    field = np.fft.ifft2(np.fft.fft2(noise) * filt).real
    return np.where(field >= 0, 12.0, 4.0)


def run(s=20, sweeps=150, samples=(3, 11)):
    grid = Grid(shape=(s, s), extent=(1.0, 1.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    a = Function(name="a", grid=grid, space_order=2)
    f1 = Function(name="f1", grid=grid, space_order=2)
    stencil = solve(Eq(-div(a * grad(u, shift=.5), shift=-.5), f1), u)
    bc = [Eq(u[t + 1, 0, y], u[t + 1, 1, y]), Eq(u[t + 1, s - 1, y], u[t + 1, s - 2, y]),
          Eq(u[t + 1, x, 0], u[t + 1, x, 1]), Eq(u[t + 1, x, s - 1], u[t + 1, x, s - 2])]
    bc += [Eq(u[t + 1, x, 0], 0.), Eq(u[t + 1, x, s - 1], 0.),
           Eq(u[t + 1, 0, y], 0.), Eq(u[t + 1, s - 1, y], 0.)]
    op = Operator([Eq(u.forward, stencil)] + bc)
    f1.data[:] = 1.0
    out = {}
    for seed in samples:
        initialize_function(a, permeability(s, seed), 0)
        op(time=sweeps)
        out[f"u{seed}"] = np.array(u.data[0])
        out[f"a{seed}"] = np.array(a.data)
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.linalg.norm(value)))

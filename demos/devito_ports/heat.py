"""2D diffusion (Devito's CFD tutorial 03): ``Eq(u.dt, a*u.laplace, subdomain=grid.interior)``
with a Constant ``a`` given at apply time, solved for ``u.forward``, the edges held at 1 by
boundary rows. Four squares diffuse over two applies (the second starts from the first's
buffers); then the same Operator runs on another TimeFunction, ``op(u=u2, ...)``, holding a
Gaussian on the background, whose spreading is known: variance s0**2 + 2*a*t per axis."""
import numpy as np

from demos.devito_ports.framework import api

Constant, Eq, Grid, Operator, TimeFunction, solve = (
    api.Constant, api.Eq, api.Grid, api.Operator, api.TimeFunction, api.solve)

#: the Gaussian's width at the start and its centre
S0, CENTRE = 0.12, (1.0, 1.0)


def gaussian(nx, ny, spread):
    """1 + s0**2/s**2 exp(-r**2 / (2 s**2)) on the grid, with s**2 = s0**2 + spread."""
    x, y = np.meshgrid(np.linspace(0, 2, nx), np.linspace(0, 2, ny), indexing="ij")
    s2 = S0 ** 2 + spread
    r2 = (x - CENTRE[0]) ** 2 + (y - CENTRE[1]) ** 2
    return 1.0 + S0 ** 2 / s2 * np.exp(-r2 / (2 * s2))


def run(nx=41, ny=41, nt=10, nu=0.5, sigma=0.25):
    dx, dy = 2.0 / (nx - 1), 2.0 / (ny - 1)
    dt = sigma * dx * dy / nu
    grid = Grid(shape=(nx, ny), extent=(2.0, 2.0))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = 1.0
    w = nx // 8
    for value, (i, j) in zip((2, 3, 4, 5), ((1, 1), (3, 1), (1, 3), (3, 3))):
        u.data[0, i * nx // 4:i * nx // 4 + w, j * ny // 4:j * ny // 4 + w] = value
    a = Constant(name="a")
    stencil = solve(Eq(u.dt, a * u.laplace, subdomain=grid.interior), u.forward)
    bc = [Eq(u[t + 1, 0, y], 1.0), Eq(u[t + 1, nx - 1, y], 1.0),
          Eq(u[t + 1, x, ny - 1], 1.0), Eq(u[t + 1, x, 0], 1.0)]
    op = Operator([Eq(u.forward, stencil)] + bc)
    op(time=nt, dt=dt, a=nu)
    op(time=nt, dt=dt, a=nu)
    u2 = TimeFunction(name="u2", grid=grid, space_order=2)
    u2.data[0] = gaussian(nx, ny, 0.0)
    # each apply runs steps 0..2*nt from slot 0: the second continues from step 2*nt
    op(u=u2, time=2 * nt, dt=dt, a=nu)
    op(u=u2, time=2 * nt, dt=dt, a=nu)
    return {"u": np.array(u.data), "u2": np.array(u2.data), "dt": np.array(dt)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))

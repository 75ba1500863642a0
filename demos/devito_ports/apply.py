"""Devito's userapi tutorial on ``Operator.apply``: one Operator run with its default time
bounds (from ``save=``), with a window of x, y and time, on a TimeFunction saving more or
fewer steps than the one it was built with, and a buffered one that needs ``time_M``; then
a diffusion whose saved field is swapped for a longer one."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Grid, Operator, TimeFunction, solve = (api.Eq, api.Grid, api.Operator, api.TimeFunction,
                                           api.solve)


def tutorial():
    """The tutorial's cells: every apply's result."""
    grid = Grid(shape=(4, 4))
    u = TimeFunction(name="u", grid=grid, save=3)
    op = Operator(Eq(u.forward, u + 1))
    op.apply()                            # time_M = save - 2 = 1
    out = {"u": np.array(u.data)}
    u.data[:] = 0.0
    op.apply(x_m=2, y_m=2, time_M=0)
    out["u_window"] = np.array(u.data)
    u2 = TimeFunction(name="u", grid=grid, save=5)
    op.apply(u=u2)                        # time_M from u2: 3
    out["u2"] = np.array(u2.data)
    u3 = TimeFunction(name="u", grid=grid, save=2)
    op.apply(u=u3)                        # one step
    out["u3"] = np.array(u3.data)
    v = TimeFunction(name="v", grid=grid)
    Operator(Eq(v.forward, v + 1)).apply(time_M=4)
    out["v"] = np.array(v.data)
    return out


def diffusion(nx=12, ny=10, nu=0.5):
    """A saved diffusion built for 4 steps, applied to one saving 9 with a Gaussian at the
    start (Devito 4.8.23 mixes up the halo of an override with a wider one, space_order=4
    here: tests/test_apply_overrides.py checks stencilgen's against NumPy instead)."""
    grid = Grid(shape=(nx, ny), extent=(1.1, 0.9))
    u = TimeFunction(name="u", grid=grid, space_order=2, save=4)
    dt = 0.2 * 0.1 ** 2 / nu
    op = Operator(Eq(u.forward, solve(u.dt - nu * u.laplace, u.forward)))
    long = TimeFunction(name="w", grid=grid, space_order=2, save=9)
    x, y = np.meshgrid(np.linspace(0, 1.1, nx), np.linspace(0, 0.9, ny), indexing="ij")
    long.data[0] = np.exp(-((x - 0.5) ** 2 + (y - 0.4) ** 2) / 0.05)
    op.apply(u=long, dt=dt)
    return {"w": np.array(long.data)}


def run():
    return {**tutorial(), **diffusion()}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))

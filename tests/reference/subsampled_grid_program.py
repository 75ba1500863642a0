"""Grids built on ConditionalDimensions, as Devito 4.8 computes them: a TimeFunction on a
grid of every second point of another's saving that one's values there (Devito's
test_spacial_subsampling), and derivatives of a function alone on such a grid, its loops over
the parents (bounds given at apply or Devito's defaults) and its spacing the coarse grid's
(test_subsampled_fd), with values that differ from point to point.

``python tests/reference/subsampled_grid_program.py`` under Devito 4.8.23 writes
``subsampled_grid_program.npz`` beside this file; tests/test_devito_data.py runs it under
stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def _coarse(api, grid, factor=2, **kw):
    dims = tuple(api.ConditionalDimension(d.name + "sub", parent=d, factor=factor)
                 for d in grid.dimensions)
    shape = tuple((n - 1) // factor + 1 for n in grid.shape)
    return api.Grid(shape, dimensions=dims, time_dimension=grid.time_dim, **kw)


def run(api) -> dict:
    """The fields each case writes, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    nt = 7
    grid = api.Grid(shape=(11, 10))
    u = api.TimeFunction(name="u", grid=grid, save=nt)
    u.data[0] = np.arange(110, dtype=np.float32).reshape(11, 10) / 9
    grid2 = _coarse(api, grid)
    u2 = api.TimeFunction(name="u2", grid=grid2, save=nt)
    api.Operator([api.Eq(u.forward, u + 1.), api.Eq(u2, u)], name="Save", **extra).apply(
        time_M=nt - 2)
    out["u"] = np.array(u.data)
    out["every second point"] = np.array(u2.data)

    grid = api.Grid(shape=(11, 11))
    grid2 = _coarse(api, grid)
    values = (np.arange(36, dtype=np.float32).reshape(6, 6) % 7) ** 2 / 5
    u2 = api.TimeFunction(name="u2", grid=grid2, space_order=2, time_order=1)
    u2.data[0] = values
    op = api.Operator([api.Eq(u2.forward, u2.dx + u2.dy)], name="Coarse", **extra)
    op.apply(time_M=0, x_M=11, y_M=11)
    out["dx + dy, x_M=11"] = np.array(u2.data[1])
    u2.data[1] = 0
    op.apply(time_M=0)
    out["dx + dy, defaults"] = np.array(u2.data[1])
    u2.data[1] = 0
    op.apply(time_M=0, x_m=2, x_M=7, y_M=5)
    out["dx + dy, a part"] = np.array(u2.data[1])

    grid = api.Grid(shape=(13, 9), extent=(3., 2.))
    grid3 = _coarse(api, grid, factor=3, extent=(3., 2.))
    v = api.TimeFunction(name="v", grid=grid3, space_order=2, time_order=1)
    v.data[0] = np.cos(np.arange(15, dtype=np.float32).reshape(5, 3))
    api.Operator([api.Eq(v.forward, v + 0.1 * v.laplace)], name="Laplace", **extra).apply(
        time_M=2)
    out["laplace, factor 3"] = np.array(v.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

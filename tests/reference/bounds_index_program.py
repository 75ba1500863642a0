"""Indices written with the bounds set at apply, as Devito 4.8 computes them: Devito's
test_standalone_thickness (``Eq(f[ix.symbolic_max], 1)`` on a function of a left
SubDimension, its thickness overridden at apply too), and on a grid ``x.symbolic_max`` on
both sides of an equation and a right SubDimension's ``symbolic_min``, at an ``x_M`` given.

``PYTHONPATH=/tmp/devito-site python tests/reference/bounds_index_program.py`` runs it under
Devito 4.8.23 and writes ``bounds_index_program.npz`` beside this file;
tests/test_subdimensions.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """The fields each case writes, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    x = api.Dimension("x")
    ix = api.SubDimension.left("ix", x, 2)
    f = api.Function(name="f", dimensions=(ix,), shape=(5,), dtype=np.int32)
    op = api.Operator(api.Eq(f[ix.symbolic_max], 1), name="Thick", **extra)
    op(x_m=0)
    out["f[ix.symbolic_max]"] = np.array(f.data)
    f.data[:] = 0
    op(x_m=0, x_ltkn0=4)
    out["f[ix.symbolic_max], x_ltkn0=4"] = np.array(f.data)
    f.data[:] = 0
    op(x_m=1)
    out["f[ix.symbolic_max], x_m=1"] = np.array(f.data)

    grid = api.Grid(shape=(6, 5))
    xg, yg = grid.dimensions
    u = api.Function(name="u", grid=grid)
    v = api.Function(name="v", grid=grid)
    v.data[:] = np.arange(30, dtype=np.float32).reshape(6, 5) / 3
    xr = api.SubDimension.right("xr", xg, 2)
    api.Operator([api.Eq(u[xg.symbolic_max, yg], v[xg.symbolic_max, yg]
                         + v[xg.symbolic_max - 1, yg]),
                  api.Eq(u[xr.symbolic_min, yg], -v[xr.symbolic_min, yg])],
                 name="Bounds", **extra).apply(x_M=4)
    out["u at x_M and xr.symbolic_min"] = np.array(u.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

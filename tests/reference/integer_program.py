"""Integer fields and Constants as Devito 4.8 computes them: an int32 function updated from a
float expression (stored truncated, as C converts), int32 counts on subdomains and a
SubDomainSet, an int32 TimeFunction stepped by ``solve``, an int8 mask and an int32 Constant
in a float update, an int16 function read by a derivative.

``PYTHONPATH=/tmp/devito-site python tests/reference/integer_program.py`` runs it under
Devito 4.8.23 and writes ``integer_program.npz`` beside this file; tests/test_devito_data.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """The fields each case writes, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    grid = api.Grid(shape=(6, 5), extent=(1.0, 0.8))
    x, y = grid.dimensions
    f = api.Function(name="f", grid=grid, dtype=np.int32)
    h = api.Function(name="h", grid=grid, dtype=np.int32)
    f.data[:] = np.arange(30, dtype=np.int32).reshape(6, 5) - 11
    api.Operator(api.Eq(h, f / 3 + 1), name="Third", **extra).apply()
    out["f/3 + 1"] = np.array(h.data)
    api.Operator(api.Eq(h, 2.7 * f - 0.5), name="Scaled", **extra).apply()
    out["2.7*f - 0.5"] = np.array(h.data)
    api.Operator(api.Eq(f, f + 7), name="Plus", **extra).apply()
    out["f + 7"] = np.array(f.data)

    sub = api.Function(name="count", grid=grid, dtype=np.int32)
    api.Operator([api.Eq(sub, sub + 1, subdomain=grid.interior),
                  api.Eq(sub, sub + 2)], name="Count", **extra).apply()
    out["counts"] = np.array(sub.data)

    t = api.TimeFunction(name="t", grid=grid, dtype=np.int32)
    api.Operator(api.Eq(t.forward, api.solve(api.Eq(t.dt, 1), t.forward),
                        subdomain=grid.interior), name="Steps", **extra).apply(
        time_m=0, time_M=9, dt=1)
    out["steps"] = np.array(t.data[0])

    mask = api.Function(name="mask", grid=grid, dtype=np.int8)
    mask.data[2:5, 1:4] = 1
    c = api.Constant(name="c", dtype=np.int32, value=3)
    u = api.TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.linspace(0, 1, 30).reshape(6, 5)
    api.Operator(api.Eq(u.forward, u + 1e-3 * mask * c * u.laplace), name="Masked",
                 **extra).apply(time_M=4, dt=0.1)
    out["masked"] = np.array(u.data[1])

    s = api.Function(name="s", grid=grid, space_order=2, dtype=np.int16)
    s.data[:] = (np.arange(30).reshape(6, 5) ** 2) % 17
    g = api.Function(name="g", grid=grid, space_order=2)
    api.Operator(api.Eq(g, s.dx + s.dy2), name="Derivs", **extra).apply()
    out["derivatives of int16"] = np.array(g.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

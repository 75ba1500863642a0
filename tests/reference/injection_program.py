"""Injections that Devito 4.8 and stencilgen must add alike: an expression into a staggered
field (evaluated where the field's values sit, a node function averaged onto them), a
staggered function in the expression of a node field, and points exactly on nodes in float32
(all of the value on the node: the position 0.5/0.1 rounds to 5, not below); a point within
half a cell of the edge of a staggered field writes into its halo, and an interpolation
reads it there.

``PYTHONPATH=/tmp/devito-site python tests/reference/injection_program.py`` runs it under
Devito 4.8.23 and writes ``injection_program.npz`` beside this file; tests/test_sparse.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np

#: points: on a node, between nodes, and near the domain's edges
POINTS = [(0.5, 0.5, 0.5), (0.53, 0.47, 0.61), (0.05, 0.95, 0.3), (0.0, 1.0, 0.7)]


def run(api) -> dict:
    """The fields each injection writes, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(11, 11, 11), extent=(1.0, 1.0, 1.0), dtype=np.float32)
    x, y, z = grid.dimensions
    rng = np.random.default_rng(4)
    b = api.Function(name="b", grid=grid)
    b.data[:] = 1 + rng.random(grid.shape).astype(np.float32)
    b.data[5, 5, 5] = 2
    s = api.Function(name="s", grid=grid, staggered=y)
    s.data[:] = 1 + rng.random(grid.shape).astype(np.float32)
    p = api.SparseFunction(name="p", grid=grid, npoint=len(POINTS))
    p.coordinates.data[:] = np.array(POINTS, dtype=np.float32)
    p.data[:] = np.arange(1, len(POINTS) + 1, dtype=np.float32)
    out = {}
    for name, stagger in (("ax", x), ("az", z), ("axy", (x, y))):
        a = api.Function(name=name, grid=grid, staggered=stagger)
        api.Operator(p.inject(a, expr=b * p), name=f"Inject_{name}", **extra).apply()
        out[name] = np.array(a.data)
        out[f"{name} with halo"] = np.array(a.data_with_halo)
    q = api.Function(name="q", grid=grid)
    api.Operator(p.inject(q, expr=s * p), name="InjectNodes", **extra).apply()
    out["q"] = np.array(q.data)
    n = api.Function(name="n", grid=grid)
    api.Operator(p.inject(n, expr=p), name="InjectPlain", **extra).apply()
    out["n"] = np.array(n.data)
    # an interpolation from a staggered function whose halo holds values: a point within
    # half a cell of the edge reads it
    s.data_with_halo[:] = 1 + rng.random(s.data_with_halo.shape).astype(np.float32)
    r = api.SparseFunction(name="r", grid=grid, npoint=len(POINTS))
    r.coordinates.data[:] = np.array(POINTS, dtype=np.float32)
    api.Operator(r.interpolate(s), name="InterpolateStaggered", **extra).apply()
    out["interpolated"] = np.array(r.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

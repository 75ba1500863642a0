"""A sparse function with a Dimension before its points, as Devito 4.8 computes it: its
test_interpolate_custom and test_interpolate_indexed (``SparseFunction(dimensions=(scale,
dim), shape=(3, npoint))``, each row interpolating ``a * p.indices[0]``, on a unit box in 2D
and 3D), and an injection of ``p * (1 + p.indices[0])`` summing the rows.

``PYTHONPATH=/tmp/devito-site python tests/reference/sparse_rows_program.py`` runs it under
Devito 4.8.23 and writes ``sparse_rows_program.npz`` beside this file; tests/test_sparse.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def _points(api, grid, ranges, npoint):
    scale = api.Dimension(name="scale")
    dim = api.Dimension(name="dim")
    p = api.SparseFunction(name="points", grid=grid, dimensions=(scale, dim),
                           shape=(3, npoint), npoint=npoint)
    for i, r in enumerate(ranges):
        p.coordinates.data[:, i] = np.linspace(r[0], r[1], npoint)
    return p


def run(api) -> dict:
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    for shape, ranges in (((11, 11), ((.05, .9), (.01, .8))),
                          ((11, 11, 11), ((.05, .9), (.01, .8), (0.07, 0.84)))):
        grid = api.Grid(shape=shape, extent=(1.,) * len(shape))
        a = api.Function(name="a", grid=grid)
        xs = np.linspace(0, 1, shape[0]).reshape((-1,) + (1,) * (len(shape) - 1))
        a.data[:] = xs + 0.25 * np.linspace(0, 1, shape[1]).reshape(1, -1, *(1,) * (len(shape) - 2))
        p = _points(api, grid, ranges, 20)
        p.data[:] = 1.
        api.Operator(p.interpolate(a * p.indices[0]), name="Rows", **extra)(a=a)
        out[f"{len(shape)}D interpolate a*scale"] = np.array(p.data)
        p.data[:] = 1.
        api.Operator(p.interpolate(a[grid.dimensions] * p.indices[0]), name="RowsIdx",
                     **extra)(a=a)
        out[f"{len(shape)}D interpolate indexed"] = np.array(p.data)
        b = api.Function(name="b", grid=grid)
        p.data[:] = np.arange(60, dtype=np.float32).reshape(3, 20) / 10
        api.Operator(p.inject(field=b, expr=p * (1 + p.indices[0])), name="RowsIn",
                     **extra)()
        out[f"{len(shape)}D inject p*(1+scale)"] = np.array(b.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

"""Devito's vector calculus as methods of a VectorFunction: ``v.div()`` (the scalar
divergence), ``v.grad()`` (a tensor), ``v.curl()`` and ``v.laplacian()``, each written into a
node function from random data on a 3D grid at space order 4.

``PYTHONPATH=/tmp/devito-site python tests/reference/vector_calculus_program.py`` runs it
under Devito 4.8.23 and writes ``vector_calculus_program.npz`` beside this file;
tests/test_devito_api.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """Each expression's values, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(8, 7, 9), extent=(1.0, 1.2, 0.9), dtype=np.float32)
    v = api.VectorFunction(name="v", grid=grid, space_order=4)
    rng = np.random.default_rng(3)
    for e in v:
        e.data[:] = rng.random(grid.shape)
    cases = {"div": v.div(), "grad_01": v.grad()[0, 1], "grad_20": v.grad()[2, 0],
             "curl_0": v.curl()[0], "curl_2": v.curl()[2], "laplacian_1": v.laplacian()[1]}
    out = {}
    for i, (name, expr) in enumerate(cases.items()):
        g = api.Function(name="g", grid=grid, space_order=4)
        api.Operator(api.Eq(g, expr), name=f"Vec{i}", **extra).apply()
        out[name] = np.array(g.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

"""Devito's ``smooth`` (a simple moving average along an axis, read into the halo) on
functions of space orders 1 and 4, along the default axis, one axis and two, and of a
Constant; the halo filled with values of its own.

``PYTHONPATH=/tmp/devito-site python tests/reference/smooth_program.py`` runs it under Devito
4.8.23 and writes ``smooth_program.npz`` beside this file; tests/test_devito_api.py runs it
under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """Each smoothed field's values, with ``api`` (the devito or stencilgen module)."""
    grid = api.Grid(shape=(9, 7), extent=(1.0, 1.0), dtype=np.float32)
    x, y = grid.dimensions
    rng = np.random.default_rng(6)
    out = {}
    for so in (1, 4):
        g = api.Function(name=f"g{so}", grid=grid, space_order=so)
        g.data_with_halo[:] = rng.random(g.data_with_halo.shape)
        for key, axis in (("default", None), ("x", x), ("xy", [x, y])):
            f = api.Function(name=f"f{so}{key}", grid=grid, space_order=so)
            if axis is None:
                api.smooth(f, g)
            else:
                api.smooth(f, g, axis=axis)
            out[f"so{so}_{key}"] = np.array(f.data)
    c = api.Constant(name="c", value=2.5)
    f = api.Function(name="fc", grid=grid)
    api.smooth(f, c)
    out["constant"] = np.array(f.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

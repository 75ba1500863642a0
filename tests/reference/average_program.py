"""Devito's ``avg_mode`` (a node function averaged onto staggered points: the mean, the
harmonic mean, the safe harmonic mean that takes the inverse of a value below 1e-12 as zero),
onto points staggered along x, y and both, from values with zeros and a negative one.

``PYTHONPATH=/tmp/devito-site python tests/reference/average_program.py`` runs it under Devito
4.8.23 and writes ``average_program.npz`` beside this file; tests/test_staggered.py runs it
under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """Each staggered field's values, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(9, 8), extent=(1.0, 1.0), dtype=np.float32)
    x, y = grid.dimensions
    rng = np.random.default_rng(2)
    out = {}
    for mode in ("arithmetic", "harmonic", "safe_harmonic"):
        b = api.Function(name="b", grid=grid, space_order=2, avg_mode=mode)
        # positive values, the halo's too (a harmonic mean of a zero is Devito's fast-math
        # NaN); zeros and a negative value where the safe mean takes their inverse as zero
        b.data_with_halo[:] = rng.uniform(0.5, 3.0, b.data_with_halo.shape)
        if mode == "safe_harmonic":
            b.data[2, 3] = b.data[5, 5] = b.data[8, 7] = 0
            b.data[7, 1] = -1.5
        for key, stagger in (("x", x), ("y", y), ("xy", (x, y))):
            a = api.Function(name="a", grid=grid, space_order=2, staggered=stagger)
            api.Operator(api.Eq(a, b), name=f"Avg_{mode}_{key}", **extra).apply()
            out[f"{mode}_{key}"] = np.array(a.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

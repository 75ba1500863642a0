"""Functions staggered backwards (``staggered=-x``: values half a spacing behind the nodes),
as Devito 4.8 takes them: derivatives and values of such a function written into functions
on the nodes, staggered ahead or behind, and a node function's derivative written into one
staggered behind, over an 11x10 grid from random data in the domain and the halos; and
Devito's test_fd_space_staggered (a polynomial sampled behind, ahead of or on the nodes,
differentiated exactly), at space orders 2, 4 and 8; an interpolation from such a function.

``PYTHONPATH=/tmp/devito-site python tests/reference/backward_staggered_program.py`` runs
it under Devito 4.8.23 and writes ``backward_staggered_program.npz`` beside this file;
tests/test_staggered.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def run(api) -> dict:
    """Each case's values, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    for so in (2, 4, 8):
        grid = api.Grid(shape=(11, 10), extent=(1.0, 0.9), dtype=np.float32)
        x, y = grid.dimensions
        rng = np.random.default_rng(so)
        f = api.Function(name="f", grid=grid, space_order=so, staggered=-x)
        p = api.Function(name="p", grid=grid, space_order=so)
        for fn in (f, p):
            fn.data_with_halo[:] = rng.random(fn.data_with_halo.shape).astype(np.float32)
        cases = {
            "node: f.dx": (api.NODE, f.dx),
            "node: f": (api.NODE, f),
            # at space order 2 Devito's f.dx2 at the nodes is zero (two points for a second
            # derivative), stencilgen's an InvalidArgument; Devito's two-point f.dy there
            # leans forward (its averaged f loses the staggering), stencilgen's back as
            # Devito's own f.dy.evaluate
            **({"node: f.dy": (api.NODE, f.dy), "node: f.dx2": (api.NODE, f.dx2),
                "node: f.laplace": (api.NODE, f.laplace)} if so > 2 else {}),
            "x: f.dx": (x, f.dx),
            "-x: p.dx": (-x, p.dx),
            "-x: f.dx": (-x, f.dx),
            "-x: p": (-x, p),
        }
        for i, (name, (where, expr)) in enumerate(cases.items()):
            g = api.Function(name="g", grid=grid, space_order=so, staggered=where)
            api.Operator(api.Eq(g, expr), name=f"Case{so}_{i}", **extra).apply()
            out[f"so {so} {name}"] = np.array(g.data)
        for where in ("left", "right", "centered"):
            out[f"so {so} polynomial {where}"] = polynomial(api, so, extra, where)
    out.update(sparse(api, extra))
    return out


def sparse(api, extra) -> dict:
    """A function staggered behind along x interpolated at points on a node, between nodes
    and near the edges (Devito's injection into such a function puts the values half a cell
    ahead, where a function staggered ahead sits: stencilgen's is the interpolation's adjoint,
    tested in tests/test_staggered.py)."""
    grid = api.Grid(shape=(11, 10), extent=(1.0, 0.9), dtype=np.float32)
    x, _ = grid.dimensions
    points = np.array([(0.5, 0.5), (0.53, 0.47), (0.02, 0.85), (0.97, 0.1)], dtype=np.float32)
    f = api.Function(name="f", grid=grid, space_order=2, staggered=-x)
    f.data[:] = np.arange(110, dtype=np.float32).reshape(11, 10) / 110
    rec = api.SparseFunction(name="rec", grid=grid, npoint=len(points))
    rec.coordinates.data[:] = points
    api.Operator(rec.interpolate(f), name="InterpBack", **extra).apply()
    return {"interpolated": np.array(rec.data)}


def polynomial(api, so, extra, where) -> np.ndarray:
    """Devito's test_fd_space_staggered: a polynomial of degree so - 2 sampled half a spacing
    behind the nodes of [-1, 1] ("left"), ahead ("right") or on them ("centered"), its first
    derivative on the nodes, or half a spacing ahead for "centered"."""
    nx = 101
    xx = np.linspace(-1, 1, nx)
    dx = xx[1] - xx[0]
    grid = api.Grid(shape=(nx,), dtype=np.float32)
    x = grid.dimensions[0]
    side, off, dside = {"left": (-x, -.5, api.NODE), "right": (x, .5, api.NODE),
                        "centered": (api.NODE, 0., x)}[where]
    u = api.Function(name="u", grid=grid, space_order=so, staggered=side)
    du = api.Function(name="du", grid=grid, space_order=so, staggered=dside)
    u.data[:] = sum((xx + off * dx) ** i for i in range(so - 1)).astype(np.float32)
    api.Operator(api.Eq(du, u.dx), subs={x.spacing: dx}, name=f"Poly{so}{where}",
                 **extra).apply()
    return np.array(du.data)


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

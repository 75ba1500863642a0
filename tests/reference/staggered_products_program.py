"""Derivatives of products and sums of functions that sit at different places, as Devito 4.8
evaluates them where the equation's left-hand side sits: each case is written into a function
on the nodes (given staggered=NODE or not), staggered along x or along y (or both) over an 11x10 grid at space order 2 or 4
from random data in the domain and the halos. Devito's rule: a product is gathered where its
highest-priority factor sits (a TimeFunction before a Function, a node function before a
staggered one), the other factors averaged there, unless the left-hand side and that factor
were given no staggering (then every factor is read at its own index); a sum is split by how
its terms are staggered. Its tests test_param_stagg_inner, test_param_stagg_add and
test_deriv_stagg_plain are among the cases.

``PYTHONPATH=/tmp/devito-site python tests/reference/staggered_products_program.py`` runs it
under Devito 4.8.23 and writes ``staggered_products_program.npz`` beside this file;
tests/test_staggered.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def fields(api, grid, so):
    """The operands: p, c on the nodes, f staggered along x, ft a TimeFunction staggered along
    x, fy along y, txy a TimeFunction staggered along both, txx one on the nodes."""
    x, y = grid.dimensions
    out = dict(
        p=api.Function(name="p", grid=grid, space_order=so),
        c=api.Function(name="c", grid=grid, space_order=so),
        f=api.Function(name="f", grid=grid, space_order=so, staggered=x),
        fy=api.TimeFunction(name="fy", grid=grid, space_order=so, staggered=y),
        ft=api.TimeFunction(name="ft", grid=grid, space_order=so, staggered=x),
        txy=api.TimeFunction(name="txy", grid=grid, space_order=so, staggered=(x, y)),
        txx=api.TimeFunction(name="txx", grid=grid, space_order=so, staggered=api.NODE),
        n2=api.Function(name="n2", grid=grid, space_order=so, staggered=api.NODE),
    )
    return out


def cases(F):
    """name -> (where the left-hand side sits: "plain" (on the nodes, no staggered= given),
    "node" (staggered=NODE), "x", "y" or "xy"; the expression)."""
    p, c, f, fy, ft, txy, txx, n2 = (F[k] for k in ("p", "c", "f", "fy", "ft", "txy", "txx",
                                                   "n2"))
    out = {}
    for lhs in ("plain", "node", "x", "y"):
        out[f"{lhs}: (p*f).dx"] = (lhs, (p * f).dx)
        out[f"{lhs}: (p*f).dy"] = (lhs, (p * f).dy)
        out[f"{lhs}: (p*ft).dx"] = (lhs, (p * ft).dx)
        out[f"{lhs}: (p*ft).dy"] = (lhs, (p * ft).dy)
        out[f"{lhs}: (f + p).dx"] = (lhs, (f + p).dx)
        out[f"{lhs}: (c*p*f).dx"] = (lhs, (c * p * f).dx)
    out["xy: (p*fy).dx (test_param_stagg_inner)"] = ("xy", (p * fy).dx)
    out["x: (c*txy).dy (test_param_stagg_add)"] = ("x", (c * txy).dy)
    out["x: (c*txx).dy (test_param_stagg_add)"] = ("x", (c * txx).dy)
    out["x: (c*txx + p*txy).dy (test_param_stagg_add)"] = ("x", (c * txx + p * txy).dy)
    out["node: n2.laplace (test_deriv_stagg_plain)"] = ("node", n2.laplace)
    return out


def run(api) -> dict:
    """Each case's values, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    out = {}
    for so in (2, 4):
        grid = api.Grid(shape=(11, 10), extent=(1.0, 0.9), dtype=np.float32)
        x, y = grid.dimensions
        rng = np.random.default_rng(so)
        F = fields(api, grid, so)
        for fn in F.values():
            fn.data_with_halo[:] = rng.random(fn.data_with_halo.shape).astype(np.float32)
        places = {"plain": None, "node": api.NODE, "x": x, "y": y, "xy": (x, y)}
        for i, (name, (lhs, expr)) in enumerate(cases(F).items()):
            g = api.TimeFunction(name="g", grid=grid, space_order=so, staggered=places[lhs])
            api.Operator(api.Eq(g, expr), name=f"Case{so}_{i}", **extra).apply(time_M=0)
            out[f"so {so} {name}"] = np.array(g.data[0])
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

"""A Devito 4.8 program that runs unchanged under Devito and stencilgen: user SubDomains in
both of Devito's styles (``Grid(subdomains=)`` and ``MySubDomain(grid=grid)``) with left,
right and middle spans, a Grid on dimensions x and z whose spacings are Constants that
disagree with its extent (Devito uses the Constants' values), a 1D coefficient Function
without a grid, and receivers interpolating the field.

``PYTHONPATH=/tmp/devito-site python tests/reference/subdomain_program.py`` runs it under
Devito 4.8.23 and writes ``subdomain_program.npz`` beside this file; tests/test_subdomains.py
runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np

NX, NZ, NT, DT = 24, 20, 12, 2e-4


def _subdomains(api):
    class Slab(api.SubDomain):
        name = "slab"

        def define(self, dimensions):
            x, z = dimensions
            return {x: ("middle", 2, 3), z: ("middle", 1, 4)}

    class Top(api.SubDomain):
        name = "top"

        def define(self, dimensions):
            x, z = dimensions
            return {x: x, z: ("left", 3)}

    class Corner(api.SubDomain):
        name = "corner"

        def define(self, dimensions):
            x, z = dimensions
            return {x: ("right", 4), z: ("right", 5)}

    return Slab, Top, Corner


def run(api):
    """The program on framework ``api`` (the devito or stencilgen module): its results."""
    Slab, Top, Corner = _subdomains(api)
    x = api.SpaceDimension(name="x", spacing=api.Constant(name="h_x", value=0.05))
    z = api.SpaceDimension(name="z", spacing=api.Constant(name="h_z", value=0.04))
    grid = api.Grid(shape=(NX, NZ), extent=(1.0, 1.0), dimensions=(x, z), subdomains=(Slab(),))
    top, corner = Top(grid=grid), Corner(grid=grid)
    c = api.Function(name="c", shape=(NX,), dimensions=(x,))
    c.data[:] = np.linspace(0.5, 1.5, NX)
    u = api.TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = np.random.default_rng(7).uniform(-1.0, 1.0, (2, NX, NZ))
    rec = api.SparseTimeFunction(name="rec", grid=grid, npoint=3, nt=NT)
    rec.coordinates.data[:] = [[0.1, 0.2], [0.37, 0.5], [0.66, 0.13]]
    eqs = [api.Eq(u.forward, u + DT * c * u.laplace, subdomain=grid.subdomains["slab"]),
           api.Eq(u.forward, 0.5 * u + 0.01 * u.dx, subdomain=top),
           api.Eq(u.forward, 1.0, subdomain=corner)]
    api.Operator(eqs + rec.interpolate(expr=u))(time=NT - 1, dt=DT)
    return {"u": np.array(u.data), "rec": np.array(rec.data)}


def space_order_one(api):
    """``f.dx`` of a space_order 1 Function (Devito: the two-point forward difference)."""
    grid = api.Grid(shape=(9, 7), extent=(2.0, 1.5))
    f = api.Function(name="f", grid=grid, space_order=1)
    g = api.Function(name="g", grid=grid, space_order=1)
    f.data[:] = np.random.default_rng(3).uniform(-1.0, 1.0, grid.shape)
    api.Operator([api.Eq(g, f.dx)])()
    return {"so1_dx": np.array(g.data), "so1_halo": np.array(f.data_with_halo.shape)}


if __name__ == "__main__":
    devito = importlib.import_module("devito")
    out = {**run(devito), **space_order_one(devito)}
    np.savez(Path(__file__).with_suffix(".npz"), **out)
    print({k: float(np.abs(v).max()) for k, v in out.items()})

"""Devito programs' small semantics, as its tests and tutorials write them: a SparseFunction
given ``nt`` (no time axis) injected at a node and into a cell-centred field; a derivative
with ``Operator(subs={x.spacing: h})``; odd ``fd_order``s (``u.dx(fd_order=1)`` of the DSL
tutorial, 3 and 5); the DRP tutorial's weights holding the spacing; ``gaussian_smooth`` of a
Function built with ``initializer=``; apply's ``t_M=`` and a Constant passed for a Constant;
Devito's module paths (``finite_differences.operators``); derivatives at the function's own
space order that need its whole halo (``dxl``, ``dxr``, their ``.T``, a shifted ``x0``)."""
import importlib

import numpy as np

from demos.devito_ports.framework import api

Constant, Eq, Function, Grid, Operator, SparseFunction, TimeFunction = (
    api.Constant, api.Eq, api.Function, api.Grid, api.Operator, api.SparseFunction,
    api.TimeFunction)


def inject():
    out = {}
    grid = Grid(shape=(11, 11, 11), extent=(10.0, 10.0, 10.0))
    for label, staggered in (("node", None), ("cell", grid.dimensions)):
        kw = dict(staggered=staggered) if staggered is not None else {}
        a = Function(name="a", grid=grid, **kw)
        b = Function(name="b", grid=grid, **kw)
        b.data[:] = 2.0
        p = SparseFunction(name="p", grid=grid, npoint=1, nt=10)
        p.coordinates.data[:] = [[5.0, 5.0, 5.0]]
        p.data[:] = 1.0
        Operator(p.inject(a, expr=b * p))()
        out[f"inject_{label}"] = np.array(a.data)
    return out


def derivatives():
    out = {}
    grid = Grid(shape=(41,), extent=(2.0,))
    x, = grid.dimensions
    u = Function(name="u", grid=grid, space_order=6)
    u.data[:] = np.sin(np.linspace(0.0, 2.0, 41))
    spellings = {"dx1": u.dx(fd_order=1), "dx3": u.dx(fd_order=3), "dx5": u.dx(fd_order=5),
                 "dx2_3": u.dx2(fd_order=3), "dxr3": u.dxr(fd_order=3),
                 "dx2_drp": u.dx2(weights=[w / x.spacing ** 2 for w in
                                           (-1 / 12, 4 / 3, -5 / 2, 4 / 3, -1 / 12)])}
    for key, expr in spellings.items():
        f = Function(name="f", grid=grid, space_order=6)
        Operator(Eq(f, expr))()
        out[key] = np.array(f.data)
    f = Function(name="f", grid=grid, space_order=6)
    Operator(Eq(f, u.dx2), subs={x.spacing: 0.025})()
    out["subs"] = np.array(f.data)
    ops = importlib.import_module(f"{api.__name__}.finite_differences.operators")
    g = Function(name="g", grid=grid, space_order=6)
    Operator(Eq(g, ops.div(ops.grad(u))))()
    # the interior only: within the outer stencil's reach of an edge a nested derivative
    # differs (stencilgen's inner one is a temporary, zero outside the domain; Devito
    # composes the stencils over the function's zero halo): docs/devito.md, "Different"
    out["div_grad"] = np.array(g.data)[3:-3]
    return out


def halo():
    """Devito's halo is space_order wide: one-sided and shifted derivatives at the function's
    own order read all of it (here it holds values, as a padded model's would)."""
    grid = Grid(shape=(10, 10), extent=(1.0, 1.0))
    x, y = grid.dimensions
    u = Function(name="u", grid=grid, space_order=8)
    xs = np.linspace(-8 / 9, 17 / 9, 26)
    u.data_with_halo[:] = np.outer(np.sin(3 * xs), np.cos(2 * xs))
    out = {"halo_shape": np.array(u.data_with_halo.shape + u.halo[0] + u.halo[1],
                                    dtype=np.float32)}
    spellings = {"dxl": u.dxl, "dxr": u.dxr, "dxl_T": u.dxl.T, "dyr_T": u.dyr.T,
                 "dx_shifted": u.dx(fd_order=8, x0=x + x.spacing / 2),
                 "dy_shifted": u.dy(fd_order=8, x0=y - y.spacing / 2)}
    for key, expr in spellings.items():
        f = Function(name="f", grid=grid, space_order=8)
        Operator(Eq(f, expr))()
        out[key] = np.array(f.data)
    return out


def helpers():
    grid = Grid(shape=(21, 25))
    rng = np.random.default_rng(3)
    values = rng.standard_normal((21, 25)).astype(np.float32)
    # an array initializer fills the values with their halo (space order 1: one point)
    f = Function(name="f", grid=grid, space_order=1, initializer=np.pad(values, 1))
    out = {"initializer": np.array(f.data)}
    api.gaussian_smooth(f, sigma=2)
    out["smooth"] = np.array(f.data)
    c, other = Constant(name="c", value=1.0), Constant(name="other", value=3.5)
    u = TimeFunction(name="u", grid=grid)
    Operator(Eq(u.forward, u + c))(t_M=3, c=other)
    out["t_M_constant"] = np.array(u.data)
    return out


def run():
    return {**inject(), **derivatives(), **halo(), **helpers()}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))

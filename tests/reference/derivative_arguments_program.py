"""Derivative arguments that Devito 4.8 and stencilgen must take alike, each derivative
written into a node function over a 12x12 grid at space order 4 from random data: cross
derivatives with an order per dimension, a side, an x0; of a function staggered along x (the
cross derivative taken where the equation's left-hand side sits, every dimension of it);
rotated derivatives of a node function; the nested form ``f.dx.dy`` (its inner derivative
where the function's values sit); zero orders (at an x0: interpolations), ``deriv_order=``,
the calculus methods (``p.laplacian()``, ``p.div()``), shifts given per dimension, and an x0
along a dimension the derivative does not take (the operand interpolated there).

``PYTHONPATH=/tmp/devito-site python tests/reference/derivative_arguments_program.py`` runs
it under Devito 4.8.23 and writes ``derivative_arguments_program.npz`` beside this file;
tests/test_devito_derivatives.py runs it under stencilgen and compares.
"""
import importlib
from pathlib import Path

import numpy as np


def cases(api, p, f, x, y):
    """name -> the expression, built with ``api``'s objects."""
    h = x.spacing
    return {
        "p.dxdy": p.dxdy,
        "p.dxdy(fd_order={x: 2, y: 2})": p.dxdy(fd_order={x: 2, y: 2}),
        "p.dxdy(fd_order={x: 4, y: 2})": p.dxdy(fd_order={x: 4, y: 2}),
        "p.dxdy(side=left)": p.dxdy(side=api.left),
        "p.dxdy(side=right)": p.dxdy(side=api.right),
        "p.dxdy(x0={x: x + h/2})": p.dxdy(x0={x: x + h / 2}),
        "Derivative(p, x, y, side=right)": api.Derivative(p, x, y, side=api.right),
        "p.dx2dy": p.dx2dy,
        "p.dx45": p.dx45,
        "p.dy45": p.dy45,
        "f.dxdy": f.dxdy,
        "f.dxdy(fd_order={x: 2, y: 2})": f.dxdy(fd_order={x: 2, y: 2}),
        "f.dx.dy": f.dx.dy,
        "f.dx": f.dx,
        "f.dy": f.dy,
        "Derivative(p, (x, 0))": api.Derivative(p, (x, 0)),
        "Derivative(p, x, deriv_order=2)": api.Derivative(p, x, deriv_order=2),
        "Derivative(p, x, y, deriv_order=(2, 1))": api.Derivative(p, x, y, deriv_order=(2, 1)),
        "p.laplacian()": p.laplacian(),
        "p.laplacian(order=2)": p.laplacian(order=2),
        "p.div()": p.div(),
        "div(p, shift=(0.5, -0.5))": api.div(p, shift=(0.5, -0.5)),
        "grad(p, shift=(0.5, -0.5))[1]": api.grad(p, shift=(0.5, -0.5))[1],
        "Derivative(p, (x, 0), x0={x: x+h/2})": api.Derivative(p, (x, 0), x0={x: x + h / 2}),
        "Derivative(p, (x, 1), (y, 0), x0={y: y+h/2})":
            api.Derivative(p, (x, 1), (y, 0), x0={y: y + y.spacing / 2}),
        "Derivative(p, (x, 2), (y, 0))(x0={y: y+h/2})":
            api.Derivative(p, (x, 2), (y, 0))(x0={y: y + y.spacing / 2}),
        "p.dx(x0={y: y+h/2})": p.dx(x0={y: y + y.spacing / 2}),
        "p.dx(x0={y: y+h})": p.dx(x0={y: y + y.spacing}),
        "p.dx2(x0={y: y+h/2})": p.dx2(x0={y: y + y.spacing / 2}),
        "p.dxdy(x0={y: y+h/2})": p.dxdy(x0={y: y + y.spacing / 2}),
        "f.dy(x0={x: x})": f.dy(x0={x: x}),
    }


def run(api) -> dict:
    """Each case's values, with ``api`` (the devito or stencilgen module)."""
    extra = {"backend": "c"} if api.__name__ == "stencilgen" else {}
    grid = api.Grid(shape=(12, 12), extent=(1.1, 1.1), dtype=np.float32)
    x, y = grid.dimensions
    rng = np.random.default_rng(1)
    p = api.Function(name="p", grid=grid, space_order=4)
    f = api.Function(name="f", grid=grid, space_order=4, staggered=x)
    p.data[:] = rng.random(grid.shape)
    f.data[:] = rng.random(grid.shape)
    out = {}
    for i, (name, expr) in enumerate(cases(api, p, f, x, y).items()):
        g = api.Function(name="g", grid=grid, space_order=4)
        api.Operator(api.Eq(g, expr), name=f"Case{i}", **extra).apply()
        out[name] = np.array(g.data)
    return out


if __name__ == "__main__":
    np.savez(Path(__file__).with_suffix(".npz"), **run(importlib.import_module("devito")))

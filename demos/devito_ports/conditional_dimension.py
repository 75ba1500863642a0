"""Devito's ConditionalDimension tutorial (examples/userapi/05_conditional_dimension): an
equation under a condition (``implicit_dims``), a Function on ``(x, ci)`` written where the
condition holds, a Function on a subsampled Dimension alone (``dimensions=(ci,)`` with a
factor), and a Function on ``(c_even, y)`` written under ``relation=Or`` and And edge
conditions. (The tutorial's ``relation='strict'`` is newer than Devito 4.8.23, which fails
on it: tests/test_conditional.py checks it against the tutorial's own asserts.)"""
import numpy as np
from sympy import And, Or

from demos.devito_ports.framework import api

(CondEq, ConditionalDimension, Dimension, Eq, Function, Grid, Lt, Ne, Operator, Gt) = (
    api.CondEq, api.ConditionalDimension, api.Dimension, api.Eq, api.Function, api.Grid,
    api.Lt, api.Ne, api.Operator, api.Gt)


def conditions(grid):
    """op1 to op4: a condition in an equation, then on a function's dimension."""
    out = {}
    x, y = grid.dimensions
    f = Function(name='f', grid=grid)
    f.data[:] = np.eye(10)
    ci = ConditionalDimension(name='ci', parent=y, condition=Gt(f, 0))
    Operator(Eq(f, f + 1)).apply()
    out["op1"] = np.array(f.data)
    f.data[:] = np.eye(10)
    Operator(Eq(f, f + 1, implicit_dims=ci)).apply()
    out["op2"] = np.array(f.data)
    f.data[:] = np.eye(10)
    g = Function(name='g', grid=grid)
    g.data[:] = np.eye(10)
    ci = ConditionalDimension(name='ci', parent=y, condition=And(Ne(g, 0), Lt(y, 5)))
    Operator(Eq(f, f + g, implicit_dims=ci)).apply()
    out["op3"] = np.array(f.data)
    h = Function(name='h', shape=grid.shape, dimensions=(x, ci))
    Operator(Eq(h, h + g)).apply()
    out["op4"] = np.array(h.data)
    return out


def subsampled():
    """op5: every fourth value of g into f, a Function on the subsampled dimension alone."""
    size, factor = 16, 4
    i = Dimension(name='i')
    ci = ConditionalDimension(name='ci', parent=i, factor=factor)
    g = Function(name='g', shape=(size,), dimensions=(i,))
    g.data[:, ] = list(range(size))
    f = Function(name='f', shape=(int(size / factor),), dimensions=(ci,))
    Operator([Eq(f, g)]).apply()
    return {"op5": np.array(f.data)}


def relations(grid):
    """The even rows of f: under an Or with the last row, an And with the one before."""
    out = {}
    x, y = grid.dimensions
    c_even = ConditionalDimension(name='ceven', parent=x, factor=2, relation=Or)
    c_edge = ConditionalDimension(name='cedge', parent=x, condition=CondEq(x, x.symbolic_max),
                                  relation=Or)
    c_edge_a = ConditionalDimension(name='cedge', parent=x,
                                    condition=CondEq(x, x.symbolic_max - 1))
    f = Function(name="f", grid=grid, dimensions=(c_even, y), shape=(5, 10), space_order=0)
    for key, edge in (("or", c_edge), ("and", c_edge_a)):
        f.data.fill(0)
        Operator(Eq(f, 1, implicit_dims=edge))()
        out[key] = np.array(f.data)
    return out


def run():
    grid = Grid(shape=(10, 10))
    return {**conditions(grid), **subsampled(), **relations(grid)}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(value.sum()))

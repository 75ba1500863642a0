"""Devito's userapi tutorial 07, functions on subdomains (its first part): a Function on a
SubDomain set on its own points, added into a grid Function over that subdomain, two
functions on different subdomains combined over their intersection, a grid Function copied
into one on a subdomain; and a diffusion stepped on a TimeFunction that lives on a subdomain
(its own halo beyond it)."""
import numpy as np

from demos.devito_ports.framework import api

Eq, Function, Grid, Operator, SubDomain, TimeFunction = (
    api.Eq, api.Function, api.Grid, api.Operator, api.SubDomain, api.TimeFunction)


class Middle(SubDomain):
    name = "middle"

    def define(self, dimensions):
        return {d: ("middle", 2, 2) for d in dimensions}


class Left(SubDomain):
    name = "left"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("left", 6), y: y}


class Intersection(SubDomain):
    name = "intersection"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("middle", 2, 5), y: ("middle", 2, 2)}


def run():
    grid = Grid(shape=(11, 11), extent=(10., 10.))
    middle = Middle(grid=grid)
    f = Function(name="f", grid=middle)
    g = Function(name="g", grid=grid)
    Operator([Eq(f, 1), Eq(g, 1, subdomain=middle)]).apply()
    out = {"f1": np.array(f.data), "g1": np.array(g.data)}
    Operator(Eq(g, g + f)).apply()
    out["g2"] = np.array(g.data)
    left, inter = Left(grid=grid), Intersection(grid=grid)
    h = Function(name="h", grid=left)
    h.data[:] = 1
    Operator([Eq(g, g + h, subdomain=inter), Eq(f, f + h, subdomain=inter)]).apply()
    out["g3"], out["f3"] = np.array(g.data), np.array(f.data)
    Operator(Eq(f, g)).apply()
    out["f4"] = np.array(f.data)
    u = TimeFunction(name="u", grid=middle, space_order=2)
    u.data[0] = np.arange(49).reshape(7, 7) / 10.0
    Operator(Eq(u.forward, u + 0.1 * u.laplace)).apply(time_M=5)
    out["u"] = np.array(u.data)
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).sum()))

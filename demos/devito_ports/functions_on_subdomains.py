"""Devito's userapi tutorial 07, functions on subdomains (its first part): a Function on a
SubDomain set on its own points, added into a grid Function over that subdomain, two
functions on different subdomains combined over their intersection, a grid Function copied
into one on a subdomain; and a diffusion stepped on a TimeFunction that lives on a subdomain
(its own halo beyond it); interpolation from and injection into functions on subdomains,
at points inside and across their edges; snapshots of an acoustic wave saved into a
TimeFunction on a subdomain beside ones saved on the grid (the tutorial's second part,
smaller)."""
import numpy as np

from demos.devito_ports.framework import api

(ConditionalDimension, Eq, Function, Grid, Operator, SparseFunction, SparseTimeFunction,
 SubDomain, TimeFunction, solve) = (
    api.ConditionalDimension, api.Eq, api.Function, api.Grid, api.Operator,
    api.SparseFunction, api.SparseTimeFunction, api.SubDomain, api.TimeFunction, api.solve)


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
    out.update(sparse(grid, middle, left))
    u = TimeFunction(name="u", grid=middle, space_order=2)
    u.data[0] = np.arange(49).reshape(7, 7) / 10.0
    Operator(Eq(u.forward, u + 0.1 * u.laplace)).apply(time_M=5)
    out["u"] = np.array(u.data)
    out.update(snapshots())
    return out


class Snapshot(SubDomain):
    name = "snapshot"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("middle", 5, 5), y: ("middle", 12, 4)}


def snapshots(nt=120):
    """A wave from a source near the top, snapshots every 10 steps on the snapshot region
    and on the whole grid."""
    grid = Grid(shape=(41, 41), extent=(400., 400.))
    snap = Snapshot(grid=grid)
    m = Function(name="m", grid=grid)
    m.data[:] = 1 / 1.5 ** 2
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=10)
    usave = TimeFunction(name="usave", grid=snap, time_order=0, space_order=2, save=12,
                         time_dim=t_sub)
    usg = TimeFunction(name="usg", grid=grid, time_order=0, space_order=2, save=12,
                       time_dim=t_sub)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.coordinates.data[:] = [200., 100.]
    src.data[:, 0] = np.exp(-((np.arange(nt) - 20) / 6.0) ** 2)
    pde = m * u.dt2 - u.laplace
    Operator([Eq(u.forward, solve(pde, u.forward)), Eq(usave, u, subdomain=snap),
              Eq(usg, u)] + src.inject(field=u.forward, expr=src)).apply(time_M=nt - 2,
                                                                          dt=1.0)
    return {"usave": np.array(usave.data), "usave_grid": np.array(usg.data)}


def sparse(grid, middle, left):
    """Interpolation from f (on the middle) and f + g, injection into h (on the left) and
    into f, at points inside, on and across the subdomains' edges."""
    f, h = Function(name="f2", grid=middle), Function(name="h2", grid=left)
    g = Function(name="g2", grid=grid)
    f.data[:] = np.arange(7)[:, None] + 10 * np.arange(7)[None, :]
    g.data[:] = np.arange(121).reshape(11, 11) / 3
    h.data[:] = 1
    s = SparseFunction(name="srcrec", grid=grid, npoint=5)
    s.coordinates.data[:] = [[3., 3.], [4.5, 6.25], [2.2, 7.9], [1.5, 5.0], [8.6, 1.2]]
    out = {}
    Operator(s.interpolate(expr=f)).apply()
    out["interp_f"] = np.array(s.data)
    Operator(s.interpolate(expr=f + g)).apply()
    out["interp_fg"] = np.array(s.data)
    Operator(s.inject(field=h, expr=1)).apply()
    out["inject_h"] = np.array(h.data)
    Operator(s.inject(field=f, expr=s)).apply()
    out["inject_f"] = np.array(f.data)
    return out


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).sum()))

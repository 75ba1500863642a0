"""Devito's regions, increments and sparse variants, as its tests and docstrings use them
(tests/test_dimension.py, test_subdomains.py, test_interpolation.py, the SubDomainSet and
Border docstrings): a SubDomainSet of two boxes, Borders of every kind in 2D and 3D,
SubDimensions setting boundary strips, Inc summing over time steps and into a function of
fewer dimensions, an interpolation that adds to its samples, the u_t/p_t time shifts,
injection into two fields, precomputed interpolation weights, and ConditionalDimensions of a
subdomain's own dimensions (test_subdomains.py's TestSubDomain_w_condition)."""
import numpy as np

from demos.devito_ports.framework import api

(Border, ConditionalDimension, Eq, Function, Grid, Inc, Lt, Operator,
 PrecomputedSparseFunction, SparseFunction, SparseTimeFunction, SubDimension, SubDomain,
 SubDomainSet, TimeFunction, cos) = (
    api.Border, api.ConditionalDimension, api.Eq, api.Function, api.Grid, api.Inc, api.Lt,
    api.Operator, api.PrecomputedSparseFunction, api.SparseFunction, api.SparseTimeFunction,
    api.SubDimension, api.SubDomain, api.SubDomainSet, api.TimeFunction, api.cos)


def subdomain_set():
    """The SubDomainSet docstring's two boxes on a 10x10 grid, f + 1 on each; then an
    equation indexed by the set's dimensions (``eq.subs({x: xi, y: yi})``)."""
    class MySubdomains(SubDomainSet):
        name = "mydomains"
    n = 10
    bounds = (np.array([1, n // 2 + 1], dtype=np.int32),
              np.array([n // 2 + 1, 1], dtype=np.int32), 1, 1)
    sets = MySubdomains(N=2, bounds=bounds)
    grid = Grid(extent=(n, n), shape=(n, n), subdomains=(sets,))
    f = Function(name="f", grid=grid)
    Operator(Eq(f, f + 1, subdomain=grid.subdomains["mydomains"])).apply()
    # the same boxes through the set's MultiSubDimensions
    g = Function(name="g", grid=grid)
    g.data[:] = np.arange(n * n).reshape(n, n)
    x, y = grid.dimensions
    xi, yi = sets.dimensions
    Operator(Eq(g, g * 2 + f).subs({x: xi, y: yi})).apply()
    return {"set": np.array(f.data), "set_dimensions": np.array(g.data)}


def borders():
    """g + 1 on Borders of each corner treatment, inset, side choice and thickness form."""
    out = {}
    for shape in ((9, 8), (7, 8, 6)):
        grid = Grid(shape=shape)
        dims = grid.dimensions
        cases = [{}, {"corners": "overlap"}, {"corners": "nocorners"}, {"inset": 1},
                 {"dims": {dims[0]: "left", dims[-1]: dims[-1]}},
                 {"dims": {dims[0]: "left"}, "corners": "nocorners"},
                 {"dims": {dims[-1]: "right"}, "inset": 1},
                 {"border": tuple((1, 2) for _ in shape)}]
        for k, kw in enumerate(cases):
            border = kw.pop("border", 2)
            g = Function(name="g", grid=grid)
            Operator(Eq(g, g + 1, subdomain=Border(grid, border, name=f"b{k}", **kw))).apply()
            out[f"border{len(shape)}_{k}"] = np.array(g.data)
    return out


def strips():
    """test_dimension's test_bcs: a centre of ones and strips counting outward from it."""
    grid = Grid(shape=(20, 20))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", save=None, grid=grid, space_order=0, time_order=1)
    xleft = SubDimension.left(name="xleft", parent=x, thickness=4)
    xi = SubDimension.middle(name="xi", parent=x, thickness_left=4, thickness_right=4)
    xright = SubDimension.right(name="xright", parent=x, thickness=4)
    yi = SubDimension.middle(name="yi", parent=y, thickness_left=4, thickness_right=4)
    Operator([Eq(u[t + 1, xi, yi], 1),
              Eq(u[t + 1, xleft, yi], u[t + 1, xleft + 1, yi] + 1),
              Eq(u[t + 1, xright, yi], u[t + 1, xright - 1, yi] + 1)]).apply(time_m=1,
                                                                            time_M=1)
    return {"strips": np.array(u.data)}


def sums():
    """A cosine transform of a diffusing field summed over 20 steps, and a sum over y."""
    grid = Grid(shape=(12, 10))
    x, y = grid.dimensions
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[0] = np.outer(np.hanning(12), np.hanning(10)) + 0.1
    f = Function(name="f", grid=grid)
    time = grid.time_dim
    Operator([Inc(f, u * cos(3.0 * time * time.spacing)),
              Eq(u.forward, u + time.spacing * u.laplace)]).apply(time_m=0, time_M=19,
                                                                  dt=1e-3)
    g = Function(name="g", grid=grid)
    g.data[:] = np.arange(120).reshape(12, 10) / 7.0
    along = Function(name="along", dimensions=(x,), shape=(12,))
    Operator(Inc(along, g * g)).apply()
    return {"fourier": np.array(f.data), "along": np.array(along.data)}


def sparse_variants():
    """interpolate(increment=True), u_t/p_t shifts, inject into two fields, precomputed
    weights (r=4) on a 21x21 grid."""
    grid = Grid(shape=(21, 21))
    x, y = grid.dimensions
    t, time = grid.stepping_dim, grid.time_dim
    coords = np.stack([np.linspace(.05, .9, 7), np.linspace(.3, .8, 7)], axis=1)
    a = TimeFunction(name="a", grid=grid, space_order=2, save=4)
    xs = np.linspace(0, 1, 21)
    a.data[:] = (np.arange(4)[:, None, None] + np.sin(3 * xs)[None, :, None]
                 * np.cos(2 * xs)[None, None, :])
    p = SparseTimeFunction(name="p", grid=grid, npoint=7, nt=4, coordinates=coords)
    p.data[:] = 1.0
    Operator(p.interpolate(a, increment=True)).apply(time_M=3)
    out = {"increment": np.array(p.data)}
    q = SparseTimeFunction(name="q", grid=grid, npoint=7, nt=4, coordinates=coords)
    Operator(q.interpolate(a, u_t=time + 1, p_t=time + 1)).apply(time_M=2)
    out["shifted"] = np.array(q.data)
    b = TimeFunction(name="b", grid=grid, space_order=2)
    c = TimeFunction(name="c", grid=grid, space_order=2)
    s = SparseTimeFunction(name="s", grid=grid, npoint=7, nt=4, coordinates=coords)
    s.data[:] = np.arange(28).reshape(4, 7)
    # (Devito 4.8.23 takes p_t= with one expression only)
    Operator(s.inject((b.forward, c.forward), (s, 2 * s))
             + s.inject(b.forward, s, p_t=time + 1)).apply(time_M=1)
    out["b"], out["c"] = np.array(b.data), np.array(c.data)
    m = Function(name="m", grid=grid, space_order=4)
    m.data[:] = np.sin(3 * xs)[:, None] * np.cos(2 * xs)[None, :]
    h = np.array(grid.spacing)
    cells = np.floor(coords / h).astype(np.int32)
    coeffs = np.zeros((7, 2, 4))
    coeffs[:, :, 1] = ((cells + 1) * h - coords) / h
    coeffs[:, :, 2] = (coords - cells * h) / h
    pre = PrecomputedSparseFunction(name="pre", grid=grid, r=4, npoint=7, gridpoints=cells,
                                    interpolation_coeffs=coeffs)
    Operator(pre.interpolate(m)).apply()
    lin = SparseFunction(name="lin", grid=grid, npoint=7, coordinates=coords)
    Operator(lin.interpolate(m)).apply()
    out["precomputed"], out["linear"] = np.array(pre.data), np.array(lin.data)
    return out


def conditions_on_subdomains():
    """test_subdomains.py's TestSubDomain_w_condition: f + 10 on a subdomain where a
    ConditionalDimension of the subdomain's own dimension (``mid.dimensions``) holds, its
    condition reading a function there."""
    out = {}
    cases = {"v0": lambda x: {x: ('middle', 2, 4)},
             "v1": lambda x, y: {x: x, y: ('middle', 2, 4)},
             "v2": lambda x, y: {x: ('middle', 2, 4), y: ('middle', 2, 4)}}
    for key, spans in cases.items():
        class Middle(SubDomain):
            name = 'middle'

            def define(self, dimensions):
                return spans(*dimensions)
        shape = (10,) if key == "v0" else (10, 10)
        my_grid = Grid(shape=shape)
        mid = Middle(grid=my_grid)
        sdf = Function(name='sdf', grid=my_grid)
        if key == "v0":
            sdf.data[5:] = 1
        else:
            sdf.data[:, 5:] = 1
            sdf.data[2:6, 3:5] = 1
        inner = mid.dimensions
        ci = ConditionalDimension(name='ci', condition=Lt(sdf[inner], 1), parent=inner[-1])
        f = Function(name='f', grid=my_grid)
        Operator(Eq(f, f + 10, implicit_dims=ci, subdomain=mid)).apply()
        out[f"condition_{key}"] = np.array(f.data)
    return out


def run():
    return {**subdomain_set(), **borders(), **strips(), **sums(), **sparse_variants(),
            **conditions_on_subdomains()}


if __name__ == "__main__":
    for key, value in run().items():
        print(key, value.shape, float(np.abs(value).sum()))

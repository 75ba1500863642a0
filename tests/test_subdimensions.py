"""Devito's SubDimensions (tests/test_dimension.py TestSubDimension, its expectations):
left, right and middle parts of a grid dimension indexing an equation, SubDomain.dimensions;
on C, OpenACC where it builds, and the CUDA source emulated."""
from __future__ import annotations

import numpy as np
import pytest

import stencilgen

from stencilgen import (Eq, Function, Grid, InvalidArgument, InvalidEquation, Operator, SubDimension,
                        SubDomain, TimeFunction)
from backend_cases import backends, run, target
from devito_reference import assert_matches_devito






@pytest.mark.parametrize("backend", backends())
def test_subdim_middle(backend, tmp_path):
    grid = Grid(shape=(4, 4, 4))
    x = grid.dimensions[0]
    u = TimeFunction(name="u", grid=grid)
    xi = SubDimension.middle(name="xi", parent=x, thickness_left=1, thickness_right=1)
    assert xi.is_middle and not xi.is_left and not xi.is_right
    eqs = [Eq(u.forward, u + 1)]
    eqs = [Eq(e.lhs.subs(x, xi), e.rhs.subs(x, xi)) for e in eqs]
    u.data[:] = 1.0
    run(Operator(eqs, backend=target(backend), name=f"Middle{backend}"), backend, tmp_path,
         time_m=0, time_M=1)
    assert np.all(u.data[1, 0] == 1) and np.all(u.data[1, -1] == 1)
    assert np.all(u.data[1, 1:3] == 2)


@pytest.mark.parametrize("backend", backends())
def test_bcs(backend, tmp_path):
    """A centre set to one and left and right strips counting outward from it (Devito's)."""
    grid = Grid(shape=(20, 20))
    x, y = grid.dimensions
    t = grid.stepping_dim
    thickness = 4
    u = TimeFunction(name="u", save=None, grid=grid, space_order=0, time_order=1)
    xleft = SubDimension.left(name="xleft", parent=x, thickness=thickness)
    xi = SubDimension.middle(name="xi", parent=x, thickness_left=thickness,
                             thickness_right=thickness)
    xright = SubDimension.right(name="xright", parent=x, thickness=thickness)
    assert xright.is_right and not xright.is_middle and xleft.is_left
    yi = SubDimension.middle(name="yi", parent=y, thickness_left=thickness,
                             thickness_right=thickness)
    t_in_centre = Eq(u[t + 1, xi, yi], 1)
    leftbc = Eq(u[t + 1, xleft, yi], u[t + 1, xleft + 1, yi] + 1)
    rightbc = Eq(u[t + 1, xright, yi], u[t + 1, xright - 1, yi] + 1)
    run(Operator([t_in_centre, leftbc, rightbc], backend=target(backend), name=f"Bcs{backend}"),
         backend, tmp_path, time_m=1, time_M=1)
    assert np.all(u.data[0, :, 0:thickness] == 0.)
    assert np.all(u.data[0, :, -thickness:] == 0.)
    assert all(np.all(u.data[0, i, thickness:-thickness] == (thickness + 1 - i))
               for i in range(thickness))
    assert all(np.all(u.data[0, -i, thickness:-thickness] == (thickness + 2 - i))
               for i in range(1, thickness + 1))
    assert np.all(u.data[0, thickness:-thickness, thickness:-thickness] == 1.)


def test_subdomain_dimensions_are_devitos_and_index_equations():
    class Strip(SubDomain):
        name = "strip"

        def define(self, dimensions):
            x, y = dimensions
            return {x: x, y: ("right", 2)}

    class Box(SubDomain):
        name = "box"

        def define(self, dimensions):
            x, y = dimensions
            return {x: ("middle", 2, 3), y: ("left", 4)}
    grid = Grid(shape=(10, 10))
    x, y = grid.dimensions
    strip, box = Strip(grid=grid), Box(grid=grid)
    assert strip.dimensions[0] is x and strip.dimensions[1].name == "iy"
    ix, iy = box.dimensions
    assert (ix.name, ix.thickness, iy.thickness, iy.parent) == ("ix", (2, 3), (4, None), y)
    u = TimeFunction(name="u", grid=grid)
    Operator(Eq(u[grid.stepping_dim + 1, ix, iy], 7)).apply(time_m=0, time_M=0)
    want = np.zeros((10, 10))
    want[2:7, 0:4] = 7
    assert np.array_equal(u.data[1], want)


def test_subdimension_misuse_is_named():
    grid = Grid(shape=(6, 6))
    x, y = grid.dimensions
    u = TimeFunction(name="u", grid=grid)
    with pytest.raises(InvalidArgument, match="non-negative integer"):
        SubDimension.left(name="xl", parent=x, thickness=-1)
    xl = SubDimension.left(name="xl", parent=x, thickness=2)
    xr = SubDimension.right(name="xr", parent=x, thickness=2)
    with pytest.raises(InvalidEquation, match="two SubDimensions of x"):
        Operator(Eq(u[grid.stepping_dim + 1, xl, y], u[grid.stepping_dim, xr, y]))
    with pytest.raises(InvalidArgument, match="also has subdomain 'interior' cutting x"):
        Operator(Eq(u[grid.stepping_dim + 1, xl, y], 1, subdomain=grid.interior))


@pytest.mark.parametrize("backend", backends())
def test_border_boxes_run_box_by_box(backend, tmp_path):
    """A Border (8 boxes) and two equations on it: each box runs both before the next, as
    Devito's; the edges count 1 + 2 (the second reads the first's result), the inside 0."""
    from stencilgen import Border, Function
    grid = Grid(shape=(9, 8))
    f, g = Function(name="f", grid=grid), Function(name="g", grid=grid)
    border = Border(grid, 2)
    assert border.n_domains == 8
    run(Operator([Eq(f, f + 1, subdomain=border), Eq(g, g + 2 * f, subdomain=border)],
                 backend=target(backend), name=f"Border{backend}"), backend, tmp_path)
    edge = np.ones((9, 8), dtype=bool)
    edge[2:-2, 2:-2] = False
    assert np.array_equal(f.data, edge * 1.0) and np.array_equal(g.data, edge * 2.0)


def test_subdomain_set_input_is_checked():
    from stencilgen import Border, SubDomainSet
    with pytest.raises(InvalidArgument, match=r"bounds must be \(xm, xM, ym, yM, ...\)"):
        Grid(shape=(6, 6), subdomains=(SubDomainSet(N=2, bounds=(1, 1)),))
    with pytest.raises(InvalidArgument, match="has 3 values for 2 boxes"):
        SubDomainSet(N=2, bounds=([1, 2, 3], 1, 1, 1), grid=Grid(shape=(6, 6)))
    with pytest.raises(InvalidArgument, match="corners="):
        Border(Grid(shape=(6, 6)), 1, corners="round")


def test_thickness_overrides_at_apply_use_devitos_names():
    """Devito names a parent's SubDimension thicknesses by order of appearance (xi: x_ltkn0
    and x_rtkn0, xleft: x_ltkn1, xright: x_rtkn2); apply(x_ltkn0=2) runs the left strip two
    points thick (the Operator built again for it, once), as Devito 4.8.23 does."""
    grid = Grid(shape=(20, 20))
    x, y = grid.dimensions
    t = grid.stepping_dim
    u = TimeFunction(name="u", grid=grid, space_order=0)
    xleft = SubDimension.left(name="xleft", parent=x, thickness=4)
    xi = SubDimension.middle(name="xi", parent=x, thickness_left=4, thickness_right=3)
    xright = SubDimension.right(name="xright", parent=x, thickness=2)
    yi = SubDimension.middle(name="yi", parent=y, thickness_left=1, thickness_right=1)
    op = Operator([Eq(u[t + 1, xi, yi], 1), Eq(u[t + 1, xleft, yi], u[t + 1, xleft + 1, yi] + 1),
                   Eq(u[t + 1, xright, yi], u[t + 1, xright - 1, yi] + 1)])
    assert sorted(op._thickness) == ["x_ltkn0", "x_ltkn1", "x_rtkn0", "x_rtkn2", "y_ltkn0",
                                     "y_rtkn0"]
    strip = Operator(Eq(u[t + 1, xleft, y], 1), name="Strip")
    for thickness in (2, 4, 2):
        u.data[:] = 0
        strip.apply(time_M=0, x_ltkn0=thickness)
        assert np.array_equal(u.data[1, :, 0], np.arange(20) < thickness)
    assert len(strip._variants) == 1
    with pytest.raises(InvalidArgument, match="x_ltkn0=-1; give a non-negative integer"):
        strip.apply(time_M=0, x_ltkn0=-1)


# -- functions on subdomains (Devito's userapi tutorial 07) ------------------------------

class _Middle(SubDomain):
    name = "middle"

    def define(self, dimensions):
        return {d: ("middle", 2, 2) for d in dimensions}


class _Left(SubDomain):
    name = "left"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("left", 6), y: y}


@pytest.mark.parametrize("backend", backends())
def test_sparse_operations_on_functions_on_subdomains(backend, tmp_path):
    """Interpolation from f + g (f on the middle, g on the grid) at points inside and across
    the middle's edge, and injection into f, give the C backend's numbers (which the
    functions_on_subdomains port checks against Devito's)."""
    from stencilgen import Function, SparseFunction
    results = []
    for case in ("c", backend):
        grid = Grid(shape=(11, 11), extent=(10., 10.))
        middle = _Middle(grid=grid)
        f, g = Function(name="f", grid=middle), Function(name="g", grid=grid)
        f.data[:] = np.arange(49).reshape(7, 7)
        g.data[:] = np.arange(121).reshape(11, 11) / 3
        s = SparseFunction(name="s", grid=grid, npoint=3,
                           coordinates=[(3., 3.), (1.5, 5.0), (8.6, 1.2)])
        run(Operator(s.interpolate(f + g), backend=target(case), name=f"SubInt{case}"),
            case, tmp_path)
        run(Operator(s.inject(f, s), backend=target(case), name=f"SubInj{case}"), case,
            tmp_path)
        results.append((np.array(s.data), np.array(f.data_with_halo)))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert float(np.abs(results[0][0]).min()) > 0


@pytest.mark.parametrize("backend", backends())
def test_functions_on_subdomains(backend, tmp_path):
    """A Function on a SubDomain holds its points only (7x7 of 11x11); equations touching it
    run there; a TimeFunction on it steps a diffusion with its own halo beyond it (zero), as
    NumPy computes it."""
    from stencilgen import Function
    grid = Grid(shape=(11, 11), extent=(10., 10.))
    middle = _Middle(grid=grid)
    f, g = Function(name="f", grid=middle), Function(name="g", grid=grid)
    assert f.shape == (7, 7) and f.data_with_halo.shape == (9, 9)
    run(Operator([Eq(f, 1), Eq(g, g + 2 * f)], backend=target(backend),
                 name=f"OnSub{backend}"), backend, tmp_path)
    want = np.zeros((11, 11))
    want[2:9, 2:9] = 2
    assert np.all(f.data == 1) and np.array_equal(g.data, want)
    u = TimeFunction(name="u", grid=middle, space_order=2)
    start = np.arange(49).reshape(7, 7) / 10.0
    u.data[0] = start
    run(Operator(Eq(u.forward, u + 0.1 * u.laplace), backend=target(backend),
                 name=f"DiffSub{backend}"), backend, tmp_path, time_m=0, time_M=4)
    v = start
    for _ in range(5):
        p = np.pad(v, 1)
        v = v + 0.1 * (p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2] - 4 * v)
    np.testing.assert_allclose(u.data[1], v, rtol=1e-5)


def test_functions_on_subdomains_say_what_is_wrong():
    from stencilgen import Function, SparseFunction
    grid = Grid(shape=(11, 11), extent=(10., 10.))
    middle, left = _Middle(grid=grid), _Left(grid=grid)
    f, h = Function(name="f", grid=middle), Function(name="h", grid=left)
    g = Function(name="g", grid=grid)
    with pytest.raises(InvalidEquation, match="touches functions on the subdomains left, "
                                              "middle; give subdomain="):
        Operator(Eq(g, f + h))
    with pytest.raises(InvalidEquation, match="reaches outside SubDomain 'middle'"):
        Operator(Eq(g, f, subdomain=grid.interior))
    s = SparseFunction(name="s", grid=grid, npoint=1, coordinates=[(5.0, 5.0)])
    with pytest.raises(InvalidEquation, match="functions on the subdomains left, middle"):
        Operator(s.interpolate(f + h))
    bare = Function(name="bare", grid=middle, space_order=0)
    with pytest.raises(stencilgen.HaloError, match="space_order of at least 1"):
        Operator(s.interpolate(bare))
    with pytest.raises(InvalidArgument, match="belongs to no Grid yet"):
        Function(name="z", grid=_Middle())


# -- computed indices: the free-surface mirror (Devito's userapi 04) -------------------------

@pytest.mark.parametrize("case", backends())
def test_a_computed_index_reads_the_mirrored_point(case, tmp_path):
    """g = f at INT(Abs(x - 5*h_x)), f written by the equation before (its nest finishes
    first: a computed index is some other point); on a staggered function Devito's rule,
    the dimension moved back by the staggering inside: v at INT(Abs(x - 3*h_x/2)) is
    v[|x - 2|]."""
    from stencilgen import Abs
    from stencilgen.symbolics import INT
    grid = Grid(shape=(12,))
    x, = grid.dimensions
    h = x.spacing
    f = Function(name="f", grid=grid, space_order=2)
    g = Function(name="g", grid=grid, space_order=2)
    v = Function(name="v", grid=grid, space_order=2, staggered=x)
    w = Function(name="w", grid=grid, space_order=2)
    v.data[:] = np.arange(12) ** 2
    eqs = [Eq(f, 3 * x + 1), Eq(g, f.subs({x: INT(Abs(x - 5 * h))}) * 2),
           Eq(w, v.subs({x + h / 2: INT(Abs(x - 3 * h / 2))}))]
    op = Operator(eqs, backend=target(case))
    run(op, case, tmp_path)
    i = np.arange(12)
    mirror = np.abs(i - 5)
    assert np.array_equal(g.data, 2 * (3 * mirror + 1))
    assert np.array_equal(w.data, np.abs(i - 2) ** 2)


@pytest.mark.parametrize("case", backends())
def test_a_set_of_no_boxes_runs_nothing(case, tmp_path):
    """Devito's test_subdomains test_3D and test_sequential_implicit: a SubDomainSet of N=0
    boxes (bounds of empty tuples); its equations run nowhere, the others as usual."""
    from stencilgen import SubDomainSet

    class Dummy(SubDomainSet):
        name = "dummy"
    grid = Grid(shape=(6, 5, 4))
    dummy = Dummy(N=0, bounds=[(), (), (), (), (), ()], grid=grid)
    assert dummy.shape == ()
    f = TimeFunction(name="f", grid=grid)
    g = TimeFunction(name="g", grid=grid)
    f.data[:] = 1
    op = Operator([Eq(f.forward, f.dx + 1, subdomain=dummy), Eq(g.forward, g + 2)],
                  backend=target(case))
    run(op, case, tmp_path, time_M=1)
    assert np.all(f.data == 1) and np.all(g.data[0] == 4)
    alone = Operator(Eq(f.forward, f + 5, subdomain=dummy), backend=target(case))
    run(alone, case, tmp_path, time_M=1)
    assert np.all(f.data == 1)


@pytest.mark.parametrize("case", backends())
def test_the_dimensions_of_a_set_run_an_equation_on_its_boxes(case, tmp_path):
    """Devito's MultiSubDimensions: eq.subs({x: ix, y: iy}) with a SubDomainSet's
    dimensions gives what subdomain= the set gives; two sets in one equation are refused."""
    from stencilgen import SubDomainSet

    class Boxes(SubDomainSet):
        name = "boxes"

    class Other(SubDomainSet):
        name = "other"
    grid = Grid(shape=(10, 9))
    x, y = grid.dimensions
    boxes = Boxes(N=2, bounds=(np.array([1, 5]), np.array([6, 1]), 2, 3), grid=grid)
    f, g = Function(name="f", grid=grid), Function(name="g", grid=grid)
    h = Function(name="h", grid=grid)
    h.data[:] = np.arange(90.0).reshape(10, 9)
    ix, iy = boxes.dimensions
    assert ix.parent is x and iy.parent is y
    run(Operator(Eq(f, 2 * h + 1).subs({x: ix, y: iy}), backend=target(case)), case, tmp_path)
    run(Operator(Eq(g, 2 * h + 1, subdomain=boxes), backend=target(case)), case, tmp_path)
    assert np.array_equal(f.data, g.data) and f.data.sum() > 0
    other = Other(N=1, bounds=(1, 1, 1, 1), grid=grid)
    ox, _ = other.dimensions
    with pytest.raises(InvalidEquation, match="one SubDomainSet"):
        Operator(Eq(f, h).subs({x: ix, y: iy}).subs({ix: ox}))


def test_indices_at_the_bounds_give_devitos_numbers():
    """tests/reference/bounds_index_program.py: ``f[ix.symbolic_max]`` (a left
    SubDimension's last point, ``x_m + x_ltkn0 - 1``, moved by ``x_m=`` and ``x_ltkn0=`` at
    apply), ``u[x.symbolic_max, y]`` read and written, a right SubDimension's
    ``symbolic_min``, as Devito 4.8.23 computes them (its test_standalone_thickness)."""
    assert_matches_devito("bounds_index_program", tol=0, same_zeros=True)


def test_an_index_at_the_bounds_outside_the_domain_is_refused_at_apply():
    from stencilgen import Dimension, SubDimension
    x = Dimension("x")
    ix = SubDimension.left("ix", x, 2)
    f = Function(name="f", dimensions=(ix,), shape=(5,), dtype=np.int32)
    op = Operator(Eq(f[ix.symbolic_max], 1), backend="c")
    with pytest.raises(InvalidArgument, match="fixed index .* at x = 8, outside 0..4"):
        op(x_m=0, x_ltkn0=9)
    assert not f.data.any()
    assert (ix.symbolic_min, str(ix.symbolic_max)) == (x.symbolic_min, "x_m + x_ltkn - 1")
    with pytest.raises(InvalidArgument, match="must be an integer grid point"):
        f[x.symbolic_max / 2]   # not a whole number of points from the bounds

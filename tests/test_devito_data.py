"""Devito programs that stopped at the import: integer fields, Data as Devito's (ring-buffer
time indices, custom halos, masks, broadcasting, transposed views), and the objects around an
Operator that programs read (``grid.distributor``, ``summary.timings``, ``f.size``,
``Eq.xreplace``, ``opt=`` tuples, an ndarray for a Function at apply, unknown keywords).

Numbers are Devito 4.8.23's (tests/reference/integer_program.py, stored) or the expectations
of Devito's own tests (test_data.py, test_subdomains.py), ported.
"""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import (Constant, Eq, Function, Grid, Operator, SparseTimeFunction, SubDomain,
                        SubDomainSet, TimeFunction, solve)
from stencilgen.errors import InvalidArgument
from devito_reference import assert_matches_devito


# -- integer fields ------------------------------------------------------------------------

def test_integer_fields_give_devitos_numbers():
    """tests/reference/integer_program.py under Devito 4.8.23 (stored) and stencilgen: int32
    stores of float expressions truncated as C does (computed in float64 as Devito prints
    them: (1.0/3.0)*f + 1 of f = -9 is -1), counts, a stepped int32 TimeFunction, an int8
    mask and an int32 Constant in a float update, derivatives of an int16 function."""
    assert_matches_devito("integer_program")


def test_snapshots_at_a_run_time_shift_give_devitos_numbers():
    """tests/reference/snapshot_shift_program.py: ``usave.subs(t_sub, t_sub - save_shift)``
    with an int32 Constant given at apply, read in an update (two shifts) and written, as
    Devito 4.8.23 computes them (its test_conddim_w_shifting and test_save_w_shifting)."""
    assert_matches_devito("snapshot_shift_program", tol=0, same_zeros=True)


def test_grids_of_conditional_dimensions_give_devitos_numbers():
    """tests/reference/subsampled_grid_program.py: a TimeFunction on a Grid of every second
    point saving another's values there, and derivatives of functions alone on such grids
    (factors 2 and 3, bounds given at apply and Devito's defaults), as Devito 4.8.23 computes
    them (its test_spacial_subsampling and test_subsampled_fd)."""
    assert_matches_devito("subsampled_grid_program")


def test_integer_dtypes_are_kept():
    grid = Grid(shape=(4, 4))
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32):
        assert Function(name="f", grid=grid, dtype=dt).data.dtype == dt
    assert TimeFunction(name="u", grid=grid, dtype=np.int32).data.dtype == np.int32
    c = Constant(name="c", dtype=np.int8, value=3)
    assert c.data == 3 and c.dtype == np.int8
    with pytest.raises(InvalidArgument, match="integer type"):
        Function(name="g", grid=grid, dtype=np.longdouble)


class _Middle0(SubDomain):
    name = "d0"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("middle", 1, 6), y: ("middle", 1, 1)}


class _Middle1(SubDomain):
    name = "d1"

    def define(self, dimensions):
        x, y = dimensions
        return {x: ("middle", 6, 1), y: ("middle", 1, 1)}


def test_multiple_middle_counts_into_int32():
    """Devito's test_subdomains.py::test_multiple_middle."""
    grid = Grid(shape=(10, 10))
    s0, s1 = _Middle0(grid=grid), _Middle1(grid=grid)
    f = Function(name="f", grid=grid, dtype=np.int32)
    Operator([Eq(f, f + 1, subdomain=s0), Eq(f, f + 2, subdomain=s1)], backend="c")()
    expected = np.zeros((10, 10), dtype=np.int32)
    expected[1:4, 1:9] = 1
    expected[6:9, 1:9] = 2
    assert np.array_equal(f.data, expected)


def test_iterate_ndomains_counts_steps_into_int32():
    """Devito's test_subdomains.py::test_iterate_NDomains: an int32 TimeFunction stepped by
    solve(f.dt = 1) on ten boxes of a SubDomainSet."""
    n = 10

    class Inner(SubDomainSet):
        name = "inner"

    xm = np.arange(n, dtype=np.int32)
    ym = np.array([j // 2 for j in range(n)], dtype=np.int32)
    bounds = (xm, n - 1 - xm, ym, ym)
    grid = Grid(extent=(10, 10), shape=(10, 10))
    inner = Inner(N=n, bounds=bounds, grid=grid)
    f = TimeFunction(name="f", grid=grid, dtype=np.int32)
    op = Operator(Eq(f.forward, solve(Eq(f.dt, 1), f.forward), subdomain=inner), backend="c")
    op(time_m=0, time_M=9, dt=1)
    expected = np.zeros((10, 10), dtype=np.int32)
    for j in range(n):
        expected[j, ym[j]:n - ym[j]] = 10
    assert np.array_equal(f.data[0], expected)


# -- Data ----------------------------------------------------------------------------------

def test_ring_buffer_time_indices_wrap():
    """Devito's test_data.py::test_logic_indexing: a ring buffer's integer time indices wrap
    modulo its slots (reads and writes); a saved function's do not."""
    grid = Grid(shape=(4, 4, 4))
    v = TimeFunction(name="v_mod", grid=grid)
    v.data[0] = 1.
    v.data[1] = 2.
    assert np.all(v.data[2] == v.data[0]) and np.all(v.data[4] == v.data[0])
    assert np.all(v.data[3] == v.data[1]) and np.all(v.data[-1] == v.data[1])
    assert np.all(v.data[-2] == v.data[0])
    v.data[3] = 5.
    assert np.all(v.data[1] == 5.) and np.all(v.data_with_halo[3, 1:-1, 1:-1, 1:-1] == 5.)
    saved = TimeFunction(name="v", grid=grid, save=5)
    with pytest.raises(IndexError):
        saved.data[5]
    with pytest.raises(IndexError):
        Function(name="u", grid=grid).data[5]


def test_indexing_as_devitos_data():
    """Devito's test_data.py basic, advanced, negative-step, negative-start, halo and sparse
    indexing, broadcasting and arithmetic."""
    grid = Grid(shape=(16, 16, 16))
    u = Function(name="yu3D", grid=grid, space_order=0)
    u.data[0, 1, 1] = 1.
    assert u.data[0, 0, 0] == 0. and u.data[0, -15, -15] == 1.
    u.data[6, 0, 0] = 1.
    assert u.data[-10, :, :].sum() == 1.
    u.data[5, :, 5] = 5.
    assert u.data[-11, :, -11].shape == (16,) and np.all(u.data[-11, :, -11] == 5.)
    u.data[4:5, :, 4:5] = np.full((1, 16, 1), 4., dtype=np.float32)
    assert np.all(u.data[4, :, 4] == 4.)
    u.data[:] = 1
    assert np.all(u.data % 2 == 1.) and np.all(np.full(u.shape, 2.) - u.data == 1.)
    u.data[9, :, :] += 1.
    assert np.all(u.data[9] == 2.) and np.all(u.data[8] == 1.)

    t = TimeFunction(name="yu4D", grid=Grid(shape=(4, 4, 4)), space_order=0, time_order=1)
    t.data[1, 1:-1, 1:-1, 1:-1] = 6.
    assert np.all(t.data[0] == 0.) and np.all(t.data[1, :, :, -1] == 0.)
    assert np.all(t.data[1, 1:-1, 1:-1, 1:-1] == 6.)

    i = TimeFunction(name="ui", grid=Grid(shape=(6, 6, 6)), dtype=np.int32)
    dat = np.array([1, 2, 3, 4, 5, 6])
    i.data[0, :, 0, 0] = dat
    assert np.array_equal(i.data[0, 3::-1, 0, 0], dat[3::-1])
    assert np.array_equal(i.data[0, 5:1:-1, 0, 0], dat[5:1:-1])

    f = Function(name="f", grid=Grid(shape=(13,)))
    f.data[slice(-4, None, 1)] = np.array([1, 2, 3, 4])
    assert np.array_equal(f.data[9:], [1, 2, 3, 4])

    h = Function(name="h", grid=grid, space_order=2)
    assert h.data_with_halo.shape == h.shape_with_halo == (20, 20, 20)
    h.data_with_halo[0, 0, 0] = 1.
    h.data[0, 0, 0] = 2.
    assert h.data_with_halo[0, 0, 0] == 1. and h.data_with_halo[2, 2, 2] == 2.

    b = Function(name="b", grid=Grid(shape=(4, 4, 4)))
    b.data[:] = np.ones((4, 4), dtype=np.float32)
    assert np.all(b.data == 1.)
    b.data[:] = np.zeros((4, 1, 4), dtype=np.float32)
    assert np.all(b.data == 0.)
    with pytest.raises(ValueError):
        b.data[:] = np.zeros((4, 4, 4, 4), dtype=np.float32)

    sf = SparseTimeFunction(name="sf", grid=Grid(shape=(4, 4)), npoint=1, nt=10)
    sf.data[1:-1, 0] = np.arange(8)
    assert np.all(sf.data[1:-1, 0] == np.arange(8))


def test_slices_of_transposed_views():
    """Devito's test_data.py::test_slice_after_transpose."""
    f = Function(name="f", grid=Grid(shape=(4, 6)))
    f.data[:] = np.arange(24).reshape((4, 6))
    ref = np.array(f.data)
    assert np.array_equal(f.data.T[::2, ::2], ref.T[::2, ::2])
    assert np.array_equal(f.data[::2, ::2].T, ref[::2, ::2].T)
    assert np.array_equal(f.data.swapaxes(0, 1)[::2, ::2], ref.swapaxes(0, 1)[::2, ::2])
    g = Function(name="g3", grid=Grid(shape=(2, 4, 6)))
    g.data[:] = np.arange(48).reshape((2, 4, 6))
    ref3 = np.array(g.data)
    assert np.array_equal(g.data.transpose((1, 0, 2))[::2, ::1, ::3],
                          ref3.transpose((1, 0, 2))[::2, ::1, ::3])
    mask = g.data > 20
    assert np.array_equal(g.data[mask], ref3[ref3 > 20])
    g.data[mask] = -1
    assert np.array_equal(np.array(g.data), np.where(ref3 > 20, -1, ref3))


def test_custom_halos():
    """Devito's test_data.py::test_w_halo_custom and space_order=(order, left, right): the
    halo's points before and after the domain per dimension; derivatives of the order.
    ``(order, (left, right))`` (one pair for every dimension, which Devito 4.8.23 refuses
    with "Invalid `space_order`") is the same halo as ``(order, left, right)``."""
    grid = Grid(shape=(4, 4))
    pair = Function(name="u", grid=grid, space_order=(8, (4, 3)))
    flat = Function(name="v", grid=grid, space_order=(8, 4, 3))
    assert pair.halo == flat.halo == ((4, 3), (4, 3)) and pair.space_order == 8
    with pytest.raises(InvalidArgument, match="one pair per dimension"):
        Function(name="w", grid=grid, space_order=(8, ((4, 3),)))
    u = TimeFunction(name="u", grid=grid, space_order=(8, ((4, 3), (1, 1))))
    assert u.halo == ((0, 0), (4, 3), (1, 1)) and u.space_order == 8
    assert u.data_with_halo.shape == u.shape_with_halo == (2, 11, 6)
    f = Function(name="f", grid=grid, space_order=(2, 1, 3))
    assert f.halo == ((1, 3), (1, 3)) and f.size == 64
    f.data_with_halo[:] = 7.
    f.data[:] = np.arange(16).reshape(4, 4)
    assert f.data_with_halo[0, 0] == 7. and f.data_with_halo[1, 1] == 0.
    assert f.data_with_halo[-4, -4] == 15. and f.data_with_halo[-3, -3] == 7.
    g = Function(name="g", grid=grid, space_order=2)
    Operator(Eq(g, f.dx), backend="c").apply()   # forward difference: x + 1 in the halo
    want = np.diff(np.vstack([np.arange(16).reshape(4, 4), np.full((1, 4), 7.)]), axis=0) * 3
    assert np.allclose(g.data, want)


# -- around an Operator --------------------------------------------------------------------

def test_the_objects_programs_read():
    grid = Grid(shape=(4, 5))
    assert grid.distributor.is_parallel is False and grid.distributor.nprocs == 1
    f = Function(name="f", grid=grid, space_order=2)
    assert f.size == 8 * 9 and f.shape_with_halo == (8, 9)
    eq = Eq(f, f + 1).xreplace({f: 2 * f})
    assert eq.lhs == 2 * f and eq.rhs == 2 * f + 1
    u = TimeFunction(name="u", grid=grid)
    op = Operator(Eq(u.forward, u + 1), opt=("buffering", "fuse"), backend="c")
    summary = op.apply(time_M=2)
    keys = list(summary.timings)
    assert keys and keys[0].name == summary.sections[keys[0].name].name and keys[0].rank is None
    assert summary.timings[keys[0]] == summary.sections[keys[0].name].time
    Operator(Eq(u.forward, u + 1), opt=("advanced", {"par-tile": True}), backend="c")
    from stencilgen.finite_differences.operators import div, grad   # noqa: F401


def test_an_ndarray_for_a_function_at_apply_is_taken_with_its_halo():
    """As Devito: an array of data_with_halo's shape stands in for the function (its values
    go back where the run writes it); a domain-shaped one only where there is no halo."""
    grid = Grid(shape=(6, 5))
    for so in (0, 2):
        u = TimeFunction(name="un", grid=grid, space_order=so)
        dm = Function(name="dm", grid=grid, space_order=so)
        op = Operator(Eq(u.forward, u + dm), backend="c")
        a = np.arange(np.prod(dm.shape_with_halo), dtype=np.float32).reshape(dm.shape_with_halo)
        op.apply(time_M=0, dm=a)
        assert np.array_equal(u.data[1], a[so:so + 6, so:so + 5]) and np.all(dm.data == 0)
        if so:
            with pytest.raises(InvalidArgument, match=r"data_with_halo's shape \(10, 9\)"):
                op.apply(time_M=0, dm=np.zeros((6, 5), dtype=np.float32))
    g = Function(name="g", grid=grid, space_order=1)
    out = np.zeros(g.shape_with_halo, dtype=np.float32)
    Operator(Eq(g, 3.), backend="c").apply(g=out)
    assert np.all(out[1:-1, 1:-1] == 3.) and np.all(g.data == 0)


def test_unknown_keywords_are_ignored_aloud():
    """Devito ignores them (its own test_derivatives passes time_order1=1): the program runs,
    and a warning names each."""
    grid = Grid(shape=(4, 4))
    with pytest.warns(UserWarning, match=r"ignored unknown argument\(s\) time_order1=1"):
        u = TimeFunction(name="u", grid=grid, time_order1=1)
    assert u.time_order == 1


# -- ConditionalDimension forms (Devito's test_dimension.py::TestConditionalDimension) ------

def _snapshots(factor, save=4, shape=(4, 4)):
    from stencilgen import ConditionalDimension
    grid = Grid(shape=shape)
    cd = ConditionalDimension(name="cd", parent=grid.time_dim, factor=factor)
    u = TimeFunction(name="u", grid=grid, time_order=0)
    usave = TimeFunction(name="usave", grid=grid, time_dim=cd, save=save)
    return grid, cd, u, usave


def test_symbolic_factor_and_its_override():
    """test_symbolic_factor, test_symbolic_factor_override(_legacy): a Constant factor set
    at apply by its name, an int one by ``cd.symbolic_factor.name``; the snapshots past
    ``save`` are left unwritten (Devito clips), the time loop runs on."""
    fact = Constant(name="fact", dtype=np.int32, value=4)
    _, cd, u, usave = _snapshots(fact)
    op = Operator([Eq(u, u + 1), Eq(usave, u)], backend="c")
    op.apply(time=7)
    assert np.all(usave.data[0] == 1) and np.all(usave.data[1] == 5)
    u.data[:] = 0.
    op.apply(time=7, fact=2)
    assert [usave.data[i, 0, 0] for i in range(4)] == [1, 3, 5, 7]
    _, cd, u, usave = _snapshots(4)
    assert cd.symbolic_factor.name == "cdf" and cd.symbolic_factor.data == 4
    op = Operator([Eq(usave, u), Eq(u.forward, u + 1)], backend="c")
    op.apply()
    assert all(np.all(usave.data[i] == i * 4) for i in range(4))
    op.apply(time_M=31, **{cd.symbolic_factor.name: 8})
    assert all(np.all(usave.data[i] == 16 + i * 8) for i in range(4))
    assert np.all(u.data[0] == 48)   # 32 more steps: the loop ran past the snapshots


def test_a_snapshot_function_of_another_factor_bound_at_apply():
    """test_overrides_newfact, test_auto_override_factor: the factor follows the snapshot
    function bound."""
    from stencilgen import ConditionalDimension
    nt, grid = 19, Grid(shape=(11, 11))
    u = TimeFunction(name="u", grid=grid)
    t1 = ConditionalDimension("t_sub1", parent=grid.time_dim, factor=4)
    t2 = ConditionalDimension("t_sub2", parent=grid.time_dim, factor=5)
    u1 = TimeFunction(name="usave1", grid=grid, save=(nt + 3) // 4, time_dim=t1)
    u2 = TimeFunction(name="usave2", grid=grid, save=(nt + 4) // 5, time_dim=t2)
    op = Operator([Eq(u.forward, u + 1.), Eq(u1, u)], backend="c")
    op.apply(u=u, usave1=u1, time_M=nt - 2)
    u.data.fill(0)
    op.apply(u=u, usave1=u2, time_M=nt - 2)
    for uk, fk in ((u1, 4), (u2, 5)):
        assert all(np.allclose(uk.data[i], i * fk) for i in range((nt + fk - 1) // fk))


def test_a_conditional_dimension_as_a_value():
    """test_as_expr, test_no_index: ``t_sub`` in an expression is time / factor, and the
    equation runs at the steps it keeps."""
    from stencilgen import ConditionalDimension
    nt, grid = 19, Grid(shape=(11, 11))
    u = TimeFunction(name="u", grid=grid)
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=4)
    usave = TimeFunction(name="usave", grid=grid, save=(nt + 3) // 4, time_dim=t_sub)
    Operator([Eq(u.forward, u + 1.), Eq(usave, t_sub * u)], backend="c").apply(t=nt - 2)
    assert all(np.allclose(usave.data[i], i * 4 * i) for i in range((nt + 3) // 4))
    u2 = TimeFunction(name="u2", grid=grid)
    v = Function(name="v", grid=grid)
    Operator([Eq(u2.forward, u2 + 1), Eq(v, v + u2 * u2 * t_sub)], backend="c").apply(
        t_M=nt - 2)
    assert np.allclose(v.data, 1600)   # 16*1 + 64*2 + 144*3 + 256*4


def test_sums_over_snapshots_and_one_snapshot():
    """test_cond_notime: ``sum(usave, dims=t_sub)`` equals an Inc over the snapshots;
    ``save=1`` holds one."""
    from stencilgen import ConditionalDimension, Inc, norm, sum as dsum
    grid = Grid(shape=(10, 10))
    tu = ConditionalDimension(name="timeu", parent=grid.time_dim, factor=5)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = np.random.default_rng(2).random(u.data.shape)
    usaved = TimeFunction(name="usaved", grid=grid, space_order=2, time_dim=tu, save=3)
    Operator([Eq(usaved, u)], backend="c")(time_m=1, time_M=9, dt=1)
    g = Function(name="g", grid=grid)
    Operator([Inc(g, usaved)], backend="c")(time_m=1, time_M=9, dt=1)
    assert norm(g, order=1) == pytest.approx(norm(dsum(usaved, dims=tu), order=1), rel=1e-6)
    one = TimeFunction(name="one", grid=grid, save=1)
    assert one.data.shape == (1, 10, 10)


def test_injection_under_a_condition_on_time():
    """test_sparse_time_function: ``src.inject(..., implicit_dims=cd)`` with cd true at
    steps 1..10; ``time`` as a value in the injected expression."""
    from sympy import And
    from stencilgen import ConditionalDimension, Ge, Le
    nt, shape = 20, (21, 21, 21)
    grid = Grid(shape=shape, extent=(20., 20., 20.))
    time = grid.time_dim
    p = TimeFunction(name="p", grid=grid, time_order=2, space_order=4, save=nt)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=nt)
    src.data[:] = 1.
    src.coordinates.data[:] = [[10., 10., 10.]]
    cd = ConditionalDimension(name="cd", parent=time, condition=And(Ge(time, 1), Le(time, 10)))
    Operator(src.inject(field=p.forward, expr=src * time, implicit_dims=cd),
             backend="c").apply(time_m=1, time_M=nt - 2, dt=1.0)
    assert np.all(p.data[0] == 0)
    for i in range(1, 12):
        assert p.data[i].sum() == i - 1 and p.data[i, 10, 10, 10] == i - 1
    assert np.all(p.data[12:] == 0)


# -- functions and dimensions without a grid, sparse and border forms ----------------------

def test_grid_free_and_sparse_forms():
    """Devito 4.8.23's numbers: a SubDimension.middle of a bare Dimension; precomputed
    gridpoints given as whole floats; two sparse functions sharing one coordinates object;
    a Border of widths mixing ints and pairs."""
    from stencilgen import Border, Dimension, PrecomputedSparseFunction, SparseFunction, \
        SubDimension
    d = Dimension(name="d")
    sd = SubDimension.middle(name="sd", parent=d, thickness_left=1, thickness_right=1)
    f = Function(name="f", shape=(8,), dimensions=(d,))
    Operator(Eq(f.subs(d, sd), 1), backend="c").apply()
    assert f.data.tolist() == [0, 1, 1, 1, 1, 1, 1, 0]
    g = Grid(shape=(6, 6), extent=(5., 5.))
    h = Function(name="h", grid=g)
    h.data[:] = np.arange(36).reshape(6, 6)
    s = PrecomputedSparseFunction(name="s", grid=g, npoint=2, r=2,
                                  gridpoints=np.array([[1.0, 2.0], [3.0, 1.0]]),
                                  interpolation_coeffs=np.full((2, 2, 2), 0.5))
    Operator(s.interpolate(h), backend="c").apply()
    assert s.data.tolist() == [11.5, 22.5]
    with pytest.raises(InvalidArgument, match="whole numbers"):
        PrecomputedSparseFunction(name="s2", grid=g, npoint=1, r=2, gridpoints=[[1.5, 2.]],
                                  interpolation_coeffs=np.full((1, 2, 2), 0.5))
    a = SparseFunction(name="a", grid=g, npoint=2, coordinates=[(1., 1.), (2.5, 3.)])
    b = SparseFunction(name="b", grid=g, npoint=2, coordinates=a.coordinates)
    Operator(b.interpolate(h), backend="c").apply()
    assert b.data.tolist() == [7.0, 18.0] and b.coordinates is a.coordinates
    k = Function(name="k", grid=g)
    Operator(Eq(k, k + 1, subdomain=Border(g, (1, (2, 1)))), backend="c").apply()
    want = np.ones((6, 6))
    want[1:-1, 2:-1] = 0
    assert np.array_equal(k.data, want)


def test_a_data_reference_is_the_functions_values():
    """``devito.data.allocators.DataReference(array)``: the Function's values, halo
    included, are the array itself; Operators write into it."""
    from stencilgen import ALLOC_ALIGNED
    from stencilgen.data.allocators import DataReference
    grid = Grid(shape=(4, 5))
    a = np.zeros((8, 9), dtype=np.float32)
    f = Function(name="f", grid=grid, space_order=2, allocator=DataReference(a))
    Operator(Eq(f, 1.), backend="c").apply()
    assert np.all(a[2:6, 2:7] == 1) and a.sum() == 20
    f.data[0, 0] = 5.
    assert a[2, 2] == 5.
    assert Function(name="g", grid=grid, allocator=ALLOC_ALIGNED).data.shape == (4, 5)
    with pytest.raises(InvalidArgument, match=r"shape \(8, 9\) \(the halo"):
        Function(name="h", grid=grid, space_order=2,
                 allocator=DataReference(np.zeros((4, 5), dtype=np.float32))).data


def test_interpolating_snapshots_runs_at_their_steps():
    """Devito 4.8.23: interpolating a snapshot function (every 2 steps) fills the samples of
    the steps it keeps: [1, 0, 2, 0, 3]."""
    from stencilgen import ConditionalDimension
    grid = Grid(shape=(5, 5), extent=(4., 4.))
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=2)
    usave = TimeFunction(name="usave", grid=grid, time_order=0, save=3, time_dim=t_sub)
    usave.data[:] = np.arange(3)[:, None, None] + 1
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=5, coordinates=[(1.5, 2.)])
    Operator(rec.interpolate(expr=usave), backend="c").apply(time_M=4)
    assert rec.data[:, 0].tolist() == [1.0, 0.0, 2.0, 0.0, 3.0]


def test_snapshots_between_bounds_count_from_the_first_kept_step():
    """test_factor_and_condition: a factor and a condition ``10 <= time <= 100`` index the
    snapshots from step 10 (Devito's ``(time - 10) / factor``)."""
    from sympy import And
    from stencilgen import ConditionalDimension, Ge, Le
    grid = Grid(shape=(10, 10))
    time = grid.time_dim
    tu = ConditionalDimension(name="timeu", parent=time, factor=5,
                              condition=And(Ge(time, 10), Le(time, 100)))
    rec = SparseTimeFunction(name="rec", grid=grid, npoint=1, nt=200)
    u = TimeFunction(name="u", grid=grid, space_order=2)
    usaved = TimeFunction(name="usaved", grid=grid, space_order=2, time_dim=tu, save=19)
    op = Operator([Eq(u.forward, u + 1), Eq(usaved, u)] + rec.interpolate(u), backend="c")
    op(time_m=1, time_M=199, usaved=usaved, rec=rec)
    for t in range(19):
        assert np.all(usaved.data[t] == t * 5 + 10 - 1)


def test_conditions_without_a_parent_or_of_a_constant():
    """test_grouping_v2 (the parent taken from the condition) and test_constant_as_condition
    (an int8 Constant as the condition of an equation on a bare Dimension)."""
    from stencilgen import ConditionalDimension, Dimension
    grid = Grid(shape=(10, 10))
    cond = ConditionalDimension(name="cond", condition=grid.time_dim < 5)
    assert cond.parent == grid.time_dim
    u = TimeFunction(name="u", grid=grid)
    Operator([Eq(u.forward, u + 1., implicit_dims=cond)], backend="c").apply(time_M=9)
    assert np.all(u.data[1] == 5) and np.all(u.data[0] == 4)   # steps 0..4 ran
    for value in (0, 1):
        x = Dimension("x")
        c = Constant(name="c", dtype=np.int8, value=value)
        cd = ConditionalDimension(name="cd", parent=x, condition=c)
        f = Function(name="f", dimensions=(x,), shape=(11,), dtype=np.int32)
        Operator(Eq(f, 1, implicit_dims=cd), backend="c").apply()
        assert np.all(f.data == value)


def _on(backend) -> dict:
    """Integer stores, clipped and offset snapshots, a ConditionalDimension as a value, an
    injection under a condition on time and a DataReference, built for ``backend``."""
    from sympy import And
    from stencilgen import ConditionalDimension, Ge, Le
    from stencilgen.data.allocators import DataReference
    out = {}
    grid = Grid(shape=(6, 5), extent=(5., 4.))
    f, h = (Function(name=n, grid=grid, dtype=np.int32) for n in ("f", "h"))
    f.data[:] = np.arange(30).reshape(6, 5) - 11
    Operator([Eq(h, f / 3 + 1), Eq(f, f + 7, subdomain=grid.interior)], backend=backend,
             name="Ints").apply()
    out["ints"], out["plus"] = np.array(h.data), np.array(f.data)
    time = grid.time_dim
    tu = ConditionalDimension(name="tu", parent=time, factor=3,
                              condition=And(Ge(time, 4), Le(time, 30)))
    u = TimeFunction(name="u", grid=grid)
    usave = TimeFunction(name="usave", grid=grid, time_dim=tu, save=5)
    src = SparseTimeFunction(name="src", grid=grid, npoint=1, nt=40, coordinates=[(2.5, 1.)])
    src.data[:] = 1.
    cd = ConditionalDimension(name="cd", parent=time, condition=And(Ge(time, 2), Le(time, 6)))
    a = np.zeros((8, 7), dtype=np.float32)
    g = TimeFunction(name="g", grid=grid, allocator=DataReference(
        np.zeros((2, 8, 7), dtype=np.float32)))
    r = Function(name="r", grid=grid, allocator=DataReference(a))
    eqs = [Eq(u.forward, u + 1), Eq(usave, tu * u), Eq(r, r + u, implicit_dims=cd),
           Eq(g.forward, g + 1)]
    eqs += src.inject(field=u.forward, expr=src * time, implicit_dims=cd)
    Operator(eqs, backend=backend, name="Snaps").apply(time_M=38)
    out["usave"], out["u"], out["r"] = np.array(usave.data), np.array(u.data), a.copy()
    out["g"] = np.array(g.data)
    return out


@pytest.mark.gpu
def test_the_forms_on_the_gpu_equal_c():
    from test_cuda import needs_gpu
    if needs_gpu.args[0]:
        pytest.skip(needs_gpu.kwargs["reason"])
    c, gpu = _on("c"), _on("cuda")
    for key, value in c.items():
        assert gpu[key].dtype == value.dtype and np.array_equal(gpu[key], value), key


def test_snapshots_shifted_by_a_constant_and_conditions_reading_other_functions():
    """test_shifted (``usave.subs(t_sub, t_sub - t_sub_shift)``, the shift given at apply)
    and test_from_cond_to_param (a condition's functions are the Operator's)."""
    from stencilgen import ConditionalDimension, Lt
    nt, grid = 19, Grid(shape=(11, 11))
    u = TimeFunction(name="u", grid=grid)
    t_sub = ConditionalDimension("t_sub", parent=grid.time_dim, factor=4)
    usave = TimeFunction(name="usave", grid=grid, save=2, time_dim=t_sub)
    shift = Constant(name="t_sub_shift", dtype=np.int32)
    op = Operator([Eq(u.forward, u + 1.), Eq(usave.subs(t_sub, t_sub - shift), u)],
                  backend="c")
    op.apply(time_m=10, time_M=nt - 2, t_sub_shift=3)
    assert np.allclose(u.data[0], 8)
    assert all(np.allclose(usave.data[i], 2 + i * 4) for i in range(2))
    x, y = grid.dimensions
    g, h = Function(name="g", grid=grid), Function(name="h", grid=grid)
    g.data[:, :5] = 3.
    ci = ConditionalDimension(name="ci", parent=y, condition=Lt(g, 2 + h))
    f = Function(name="f", shape=grid.shape, dimensions=(x, ci))
    Operator(Eq(f, 5), backend="c").apply()
    assert np.all(f.data[:, 5:] == 5) and np.all(f.data[:, :5] == 0)


def test_func_rebuilds_a_function_under_another_name():
    """Devito's ``u.func(name="v")`` (test_dimension's test_blocking_w_guard builds ``v`` so):
    a function built as ``u`` was, its values its own."""
    grid = Grid(shape=(8, 8, 8))
    x, _, _ = grid.dimensions
    u = TimeFunction(name="u", grid=grid, space_order=2)
    u.data[:] = 1.
    v = u.func(name="v")
    assert v.name == "v" and v.is_TimeFunction and v.space_order == 2 and v.time_order == 1
    assert v.grid is grid and np.all(v.data == 0)
    s = Function(name="s", grid=grid, staggered=x, space_order=(4, 1, 3))
    t = s.func(name="t", dtype=np.float64)
    assert tuple(t.staggered) == (1, 0, 0) and t.halo == s.halo and t.dtype == np.float64

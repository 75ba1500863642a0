"""Devito's reductions (``devito.builtins``: ``sum(f, dims=)``, ``sumall``, ``inner``, ``mmax``,
``mmin``) against the numbers and shapes Devito 4.8.23 gives for the same functions."""
from __future__ import annotations

import numpy as np
import pytest

import stencilgen
from stencilgen import Function, Grid, InvalidArgument, SparseFunction, TimeFunction


def _grid():
    return Grid(shape=(4, 5, 6))


def test_sum_over_some_dimensions_keeps_the_others():
    """Devito: fsum on (y, z) of shape (5, 6); usum (saved) on (time, x, z), (3, 4, 6); vsum
    (a ring buffer of ones, summed over x and z) on (t, y), (2, 5), each value 24."""
    g = _grid()
    x, y, z = g.dimensions
    f = Function(name="f", grid=g)
    f.data[:] = np.arange(120).reshape(4, 5, 6)
    s = stencilgen.sum(f, dims=(x,))
    assert s.name == "fsum" and s.dimensions == (y, z) and s.data.shape == (5, 6)
    assert np.array_equal(s.data, f.data.sum(0))
    u = TimeFunction(name="u", grid=g, save=3)
    u.data[:] = np.random.default_rng(0).random((3, 4, 5, 6))
    su = stencilgen.sum(u, dims=y)
    assert su.name == "usum" and su.data.shape == (3, 4, 6)
    assert su.dimensions[1:] == (x, z) and su.dimensions[0] == g.time_dim
    np.testing.assert_allclose(su.data, u.data.sum(2), rtol=1e-6)
    v = TimeFunction(name="v", grid=g)
    v.data[:] = 1
    sv = stencilgen.sum(v, dims=(x, z))
    assert sv.data.shape == (2, 5) and np.all(sv.data == 24.0)
    assert sv.dimensions == (g.stepping_dim, y)


def test_whole_reductions_are_devitos():
    f = Function(name="f", grid=_grid())
    f.data[:] = np.arange(120).reshape(4, 5, 6)
    assert stencilgen.sumall(f) == 7140.0 and isinstance(stencilgen.sumall(f), np.float32)
    assert stencilgen.sum(f) == 7140.0
    assert stencilgen.mmax(f) == 119.0 and stencilgen.mmin(f) == 0.0
    assert stencilgen.inner(f, f) == 568820.0


def test_pythons_sum_still_works_and_bad_input_is_named():
    assert stencilgen.sum([1, 2, 3]) == 6 and stencilgen.sum([[1], [2]], []) == [1, 2]
    g = _grid()
    f = Function(name="f", grid=g)
    other = Grid(shape=(3, 3)).dimensions[0]
    with pytest.raises(InvalidArgument, match="has no dimension"):
        stencilgen.sum(f, dims=(Grid(shape=(3, 3), dimensions=(
            stencilgen.SpaceDimension("w"), other)).dimensions[0],))
    with pytest.raises(InvalidArgument, match="a sparse function's values"):
        stencilgen.sum(SparseFunction(name="s", grid=g, npoint=2))
    with pytest.raises(InvalidArgument, match="two functions of one shape"):
        stencilgen.inner(f, Function(name="h", grid=Grid(shape=(2, 2))))

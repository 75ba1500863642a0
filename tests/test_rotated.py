"""Rotated staggered finite differences (RSFD): ``u.dx45``, ``div45``, ``grad45`` and
``curl45`` as Devito 4.8.23 computes them, taken where the equation's left-hand side sits."""
from __future__ import annotations

import numpy as np
import pytest

import stencilgen
from stencilgen import (CELL, Eq, Function, Grid, InvalidArgument, InvalidEquation, Operator,
                        VectorFunction, curl45, div, div45, grad45)
from stencilgen.symbolic.differentiable import evaluate
from devito_reference import assert_matches_devito


def test_rotated_derivatives_give_devitos_numbers():
    """tests/reference/rotated_program.py: dx45/dy45/dz45 of functions on the nodes, at cell
    centres and staggered along x alone (Devito's taps, its exactness test's mixed case
    included), taken at nodes and cell centres, div45 of vectors and of a non-symmetric
    tensor, grad45, curl45, so 2 and 4, 2D and 3D, halos of random values; and 8 steps of
    a rotated-staggered elastic scheme: within float32 round-off of Devito's."""
    assert_matches_devito("rotated_program", tol=1e-6)


def test_a_rotated_derivative_waits_for_its_point():
    """``u.dx45`` is unevaluated until an equation takes it at its left-hand side's place: on
    the nodes the diagonals' centred differences, at cell centres their half-cell ones."""
    grid = Grid(shape=(6, 6))
    x, y = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2)
    g = Function(name="g", grid=grid, space_order=2, staggered=CELL)
    r = f.dx45
    assert "method='RSFD'" in str(r)
    node = evaluate(r)
    assert node.has(f.func(x + x.spacing, y + y.spacing))
    cell = Eq(g, r).evaluate.rhs
    assert cell.has(f.func(x + x.spacing, y + y.spacing)) and cell.has(f.func(x, y))
    assert not cell.has(f.func(x - x.spacing, y - y.spacing))


def test_rotated_derivatives_refuse_what_devito_refuses():
    grid = Grid(shape=(6, 6))
    x, y = grid.dimensions
    f = Function(name="f", grid=grid, space_order=2)
    half = Function(name="h", grid=grid, space_order=2, staggered=x)
    with pytest.raises(InvalidEquation, match="at a node or at a cell centre"):
        Operator(Eq(half, f.dx45), backend="c")
    with pytest.raises(InvalidArgument, match="shift= and side= do not apply"):
        div45(VectorFunction(name="v", grid=grid, space_order=2), shift=0.5)
    with pytest.raises(InvalidArgument, match="laplace: method='RSFD' is not supported"):
        stencilgen.laplace(f, method="RSFD")
    assert callable(grad45) and callable(curl45)
    assert div(f, method="RSFD") == div45(f)

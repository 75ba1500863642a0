"""Nested derivatives at the domain's edges: by default the inner derivative is evaluated
wherever the outer stencil reaches, past the edges too, from the halos (Devito's expansion);
``Operator(..., nested="domain")`` takes it as zero beyond the domain instead.

Checked against Devito 4.8.23's stored numbers (tests/reference/nested_program.py), against
NumPy compositions of the two forms, and by the adjoint identity both forms keep.
"""
from __future__ import annotations

import numpy as np
import pytest

from stencilgen import Eq, Function, Grid, Operator, div, grad
from stencilgen.errors import HaloError, InvalidArgument
from devito_reference import assert_matches_devito

#: the staggered first derivative of order 4 (x0 = x + h/2 from nodes x-1..x+2)
STAGGERED4 = np.array([1 / 24, -9 / 8, 9 / 8, -1 / 24])


def test_nested_derivatives_give_devitos_numbers():
    """tests/reference/nested_program.py under Devito 4.8.23 (stored) and stencilgen: six
    nests over random data in the domain and the halos, and a variable-density acoustic run
    whose waves cross the edges for 240 steps. The tolerance is the run's: Devito's own
    DEVITO_OPT=noop and default results are 5.3e-6 of the maximum apart (ours 1.7e-6 from
    the default; the static nests 3e-7)."""
    assert_matches_devito("nested_program", tol=1e-5)


def _line(n=12, so=4):
    grid = Grid(shape=(n,), extent=(n - 1.0,), dtype=np.float64)
    rng = np.random.default_rng(3)
    u, b = (Function(name=s, grid=grid, space_order=so) for s in "ub")
    u.data_with_halo[:] = rng.random(n + 2 * so)
    b.data_with_halo[:] = 1 + rng.random(n + 2 * so)
    return grid, u, b


def _numpy_nest(u_halo, b_halo, so, n, zero_outside: bool):
    """``(b * u.dx(x0=x+h/2)).dx(x0=x-h/2)`` at the n domain points from the arrays with
    their halos (h = 1): the inner derivative at the staggered points i+1/2 the outer one
    reads (i - 2 .. i + 1 for the domain's i), times b at the node before (Devito's reading
    of the product: b is not averaged there); with ``zero_outside``
    the inner value is zero where i+1/2 lies outside the domain's cells i = 0..n-1 (the
    temporary's zero halo)."""
    def at(i):   # index of domain point i in the halo'd arrays
        return i + so

    out = np.zeros(n)
    for i in range(n):
        for w, j in zip(STAGGERED4, range(i - 2, i + 2)):   # outer: x0 = i - 1/2
            if zero_outside and not 0 <= j < n:
                continue
            inner = sum(c * u_halo[at(j + k)] for c, k in zip(STAGGERED4, range(-1, 3)))
            out[i] += w * b_halo[at(j)] * inner
    return out


@pytest.mark.parametrize("nested", ["extended", "domain"])
def test_each_form_is_its_numpy_composition(nested):
    """The default reads the halos where the outer stencil reaches past the edges; "domain"
    takes the inner derivative as zero there; the two differ at the edges only."""
    grid, u, b = _line()
    (x,) = grid.dimensions
    h = x.spacing
    g = Function(name="g", grid=grid, space_order=4)
    Operator(Eq(g, (b * u.dx(x0=x + h / 2)).dx(x0=x - h / 2)), backend="c",
             nested=nested).apply()
    want = _numpy_nest(np.array(u.data_with_halo), np.array(b.data_with_halo), 4, 12,
                       nested == "domain")
    assert np.abs(g.data - want).max() < 1e-12 * np.abs(want).max()
    other = _numpy_nest(np.array(u.data_with_halo), np.array(b.data_with_halo), 4, 12,
                        nested != "domain")
    edges = [0, 1, -1]   # the outer stencil reads staggered points i - 3/2 .. i + 3/2
    assert np.abs(want[edges] - other[edges]).min() > 1e-3
    assert np.array_equal(want[2:-1], other[2:-1])


@pytest.mark.parametrize("nested", ["extended", "domain"])
def test_both_forms_are_self_adjoint(nested):
    """<A u, v> = <u, A v> for A = div(b grad(.)) with the fields zero beyond the domain
    (their halos): the default's inner derivative past the edges is then the derivative of
    the zero-extended field, so its operator is -G^T B G too, with G reaching one more cell."""
    grid = Grid(shape=(13, 11), extent=(1.2, 1.0), dtype=np.float64)
    rng = np.random.default_rng(5)
    b = Function(name="b", grid=grid, space_order=4)
    b.data_with_halo[:] = 1 + rng.random(b.data_with_halo.shape)
    fields = []
    for name in "uv":
        f = Function(name=name, grid=grid, space_order=4)
        f.data[:] = rng.random(grid.shape)
        g = Function(name=f"A{name}", grid=grid, space_order=4)
        Operator(Eq(g, div(b * grad(f, shift=.5), shift=-.5)), backend="c",
                 nested=nested).apply()
        fields.append((f, g))
    (u, au), (v, av) = fields
    lhs, rhs = np.vdot(au.data, v.data), np.vdot(u.data, av.data)
    assert abs(lhs - rhs) < 1e-12 * abs(lhs)


def test_a_halo_too_narrow_for_the_reach_says_what_to_do():
    """At space order 1 ``u.dx.dx`` reaches two points past the edge (Devito shrinks the
    loop and leaves points unwritten, with a warning): our error names the reach, the halo
    and both ways out; the "domain" form runs."""
    grid, u, _ = _line(so=1)
    g = Function(name="g", grid=grid, space_order=1)
    with pytest.raises(HaloError, match=r"read 2 points past .* halo is 1 points.*"
                                        r"space_order to at least 2.*nested='domain'"):
        Operator(Eq(g, u.dx.dx), backend="c")
    Operator(Eq(g, u.dx.dx), backend="c", nested="domain").apply()
    d = np.diff(np.array(u.data))
    assert np.allclose(g.data[:-2], np.diff(d))


def test_the_setting_is_checked():
    grid, u, _ = _line()
    with pytest.raises(InvalidArgument, match="nested must be one of 'extended', 'domain'"):
        Operator(Eq(u, u.dx.dx), nested="halo")


def test_temporaries_of_one_level_share_one_nest():
    """Fluxes read each along its own axis are widened alike where the halos allow it, so
    they still share one nest (the gradients they share computed once)."""
    grid = Grid(shape=(10, 9, 8), extent=(1., 1., 1.), dtype=np.float32)
    u, b, g = (Function(name=s, grid=grid, space_order=4) for s in ("u", "b", "g"))
    op = Operator(Eq(g, div(b * grad(u, shift=.5), shift=-.5)), backend="c")
    fluxes = [k for k in op.program.kernels if all(op.program.array(w).temporary
                                                   for w in k.writes)]
    assert len(fluxes) == 1 and len(fluxes[0].writes) == 3
    assert fluxes[0].extent == ((2, 1),) * 3

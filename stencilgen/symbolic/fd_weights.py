"""Exact finite-difference weights: Fornberg's recursion and Devito-style stencil offsets.

Everything here is a pure function on exact rationals (sympy.Rational), so the weights that
reach the generated code carry no rounding error until the code generator prints them.
"""
from __future__ import annotations

import functools
import numbers
from fractions import Fraction

import sympy

from ..errors import InvalidArgument

__all__ = ["fornberg_weights", "stencil_offsets", "derivative_weights", "centred_weights",
           "side_weights", "custom_offsets"]


def _as_rational(value, what):
    """Convert int / Fraction / sympy number / float (0.5 -> 1/2) to sympy.Rational, or raise ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a rational number, got the bool {value!r}")
    if isinstance(value, Fraction):
        return sympy.Rational(value.numerator, value.denominator)
    try:
        if isinstance(value, numbers.Real) and not isinstance(value, (numbers.Rational, sympy.Basic)):
            result = sympy.nsimplify(float(value), rational=True)  # 0.5 -> 1/2, 0.1 -> 1/10
        else:
            result = sympy.sympify(value)
    except (sympy.SympifyError, TypeError, ValueError):
        raise ValueError(f"{what} must be a rational number, got {value!r}") from None
    if not getattr(result, "is_Rational", False):
        raise ValueError(f"{what} must be a rational number, got {value!r}")
    return sympy.Rational(result)


def _as_int(value, what, minimum):
    """Convert an integral value (int, sympy.Integer, 2.0) to int >= minimum, or raise ValueError."""
    r = _as_rational(value, what)
    if not r.is_Integer:
        raise ValueError(f"{what} must be an integer, got {value!r}")
    r = int(r)
    if r < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value!r}")
    return r


def fornberg_weights(points, x0, deriv_order):
    """Weights w_i with sum_i w_i f(points[i]) ~ f^(m)(x0), exact rationals (Fornberg 1988 recursion).

    The result is the unique set of weights that is exact for polynomials of degree < len(points).
    """
    m = _as_int(deriv_order, "deriv_order", 0)
    x = [_as_rational(p, "each point") for p in points]
    z = _as_rational(x0, "x0")
    n = len(x)
    if n <= m:
        raise ValueError(f"need more than deriv_order={m} points for a derivative of order {m}, "
                         f"got {n} points")
    if len(set(x)) != n:
        raise ValueError(f"the points must be distinct, got {x}")

    # c[i][k]: weight of point i for the k-th derivative, using the points seen so far.
    c = [[sympy.Integer(0)] * (m + 1) for _ in range(n)]
    c[0][0] = sympy.Integer(1)
    c1 = sympy.Integer(1)
    c4 = x[0] - z
    for i in range(1, n):
        mn = min(i, m)
        c2 = sympy.Integer(1)
        c5, c4 = c4, x[i] - z
        for j in range(i):
            c3 = x[i] - x[j]
            c2 *= c3
            if j == i - 1:
                for k in range(mn, 0, -1):
                    c[i][k] = c1 * (k * c[i - 1][k - 1] - c5 * c[i - 1][k]) / c2
                c[i][0] = -c1 * c5 * c[i - 1][0] / c2
            for k in range(mn, 0, -1):
                c[j][k] = (c4 * c[j][k] - k * c[j][k - 1]) / c3
            c[j][0] = c4 * c[j][0] / c3
        c1 = c2
    return [row[m] for row in c]


def _as_shift(shift):
    """shift as a Rational that is an integer or a half-integer (a node or a midpoint)."""
    try:
        s = _as_rational(shift, "shift")
    except ValueError:
        s = None
    if s is None or (2 * s).q != 1:
        raise ValueError(f"shift={shift!r}: x0 must be a node or a midpoint "
                         f"(an integer or half-integer shift)")
    return s


def _as_fd_order(fd_order, odd: bool = False):
    """fd_order as a positive even int (any positive int with ``odd``), or raise ValueError."""
    try:
        p = _as_int(fd_order, "fd_order", 1 if odd else 2)
    except ValueError:
        p = None
    if p is None or (p % 2 and not odd):
        kind = "positive" if odd else "positive even"
        raise ValueError(f"fd_order must be a {kind} integer, got {fd_order!r}")
    return p


def stencil_offsets(deriv_order, fd_order, shift=0):
    """Sample offsets (in grid spacings, relative to the node x) for an approximation of the
    deriv_order-th derivative at x + shift*h with formal accuracy fd_order.

    The offsets form the symmetric set of grid nodes around x + shift*h that Devito uses.
    """
    d = _as_int(deriv_order, "deriv_order", 0)
    p = _as_fd_order(fd_order)
    s = _as_shift(shift)
    if s.is_Integer:
        if d == 0:
            return [s]
        m = (p + d - 1) // 2 if d % 2 else (p + d - 2) // 2
        return [s + i for i in range(-m, m + 1)]
    # Half-integer shift: the 2M nodes nearest to the midpoint s.
    if d == 0:
        m = p // 2
    else:
        m = (p + d - 1) // 2 if d % 2 else (p + d) // 2
    lo = s - sympy.Rational(1, 2) - (m - 1)
    return [lo + i for i in range(2 * m)]


@functools.lru_cache(maxsize=None)
def _derivative_weights(d, p, s):
    """Cached worker of derivative_weights on normalised (int, int, Rational) arguments."""
    offsets = stencil_offsets(d, p, s)
    return tuple(offsets), tuple(fornberg_weights(offsets, s, d))


def derivative_weights(deriv_order, fd_order, shift=0):
    """(offsets, weights) for the derivative at x + shift*h in units of h (divide by h**deriv_order).

    Cached; both are tuples of sympy.Rational. Arguments are normalised first, so 0.5 and
    Rational(1, 2) share one cache entry.
    """
    d = _as_int(deriv_order, "deriv_order", 0)
    p = _as_fd_order(fd_order)
    return _derivative_weights(d, p, _as_shift(shift))


def _centred_set(p, s):
    """The nodes Devito samples for accuracy p at x + s*h: those within p/2 of it (p + 1
    around a node and p around a midpoint for an even p, the other way round for an odd one),
    the two nodes ahead from the node for p = 1 (a first time derivative)."""
    lo, hi = sympy.ceiling(s - sympy.Rational(p, 2)), sympy.floor(s + sympy.Rational(p, 2))
    if lo == hi:
        hi += 1
    return [lo + i for i in range(int(hi - lo) + 1)]


@functools.lru_cache(maxsize=None)
def centred_weights(deriv_order, fd_order, shift=0):
    """(offsets, weights) on Devito's node set for every derivative order: p + 1 nodes (p at a
    midpoint) whatever the order, so ``dx3`` at space order 4 is the five-point stencil."""
    d = _as_int(deriv_order, "deriv_order", 0)
    p = _as_fd_order(fd_order, odd=True)
    s = _as_shift(shift)
    offsets = _centred_set(p, s)
    if len(offsets) <= d:
        need = d if s.is_Integer else d + 1
        raise InvalidArgument(f"a derivative of order {d} at fd_order {p} would sample only "
                              f"{len(offsets)} points (Devito gives zero there); give "
                              f"fd_order >= {need + need % 2} (and a space_order as high)")
    return tuple(offsets), tuple(fornberg_weights(offsets, s, d))


@functools.lru_cache(maxsize=None)
def side_weights(fd_order, shift, step):
    """(offsets, weights) of a first derivative at x + shift*h whose centred node set is moved
    ``step`` nodes (-1 left, +1 right, 0 centred), as Devito's one-sided derivatives are."""
    p = _as_fd_order(fd_order, odd=True)
    s = _as_shift(shift)
    offsets = [o + step for o in _centred_set(p, s)]
    return tuple(offsets), tuple(fornberg_weights(offsets, s, 1))


def custom_offsets(count, shift=0):
    """The ``count`` nodes that user-given weights apply to, in increasing order: centred on
    the node x + shift*h (count odd) or on the midpoint (count even); ValueError otherwise."""
    s = _as_shift(shift)
    if count < 1 or (count % 2 == 1) != bool(s.is_Integer):
        where = "a node" if s.is_Integer else "a midpoint"
        want = "an odd" if s.is_Integer else "an even"
        raise ValueError(f"{count} weights cannot be centred on {where}; give {want} number "
                         "of weights, listed from the leftmost node to the rightmost")
    lo = s - (count - 1) * sympy.Rational(1, 2)
    return [lo + i for i in range(count)]

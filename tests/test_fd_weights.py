"""Tests for stencilgen.symbolic.fd_weights against published coefficient tables and independent checks.

The tables below are typed from the literature (Fornberg 1988, Math. Comp. 51, Tables 1-2, and the
standard central / staggered-grid coefficient tables). Every table row is first checked on its own
(moment conditions in exact arithmetic, a closed form, a high-precision linear solve), so a typo in
a table fails a test instead of being silently matched by the code.
"""
from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
import sympy
from sympy import Rational as R

from stencilgen.symbolic.fd_weights import derivative_weights, fornberg_weights, stencil_offsets

HALF = R(1, 2)
ORDERS = (2, 4, 6, 8, 10, 12, 14, 16)


# --- Helpers that complete a published half-row by (anti)symmetry --------------------------------

def _centred_odd(left):
    """Odd derivative on -M..M: outer-to-inner left half, 0 at the centre, mirrored with sign flip."""
    return list(left) + [R(0)] + [-w for w in reversed(left)]


def _centred_even(left, centre):
    """Even derivative on -M..M: left half, centre weight, mirrored."""
    return list(left) + [centre] + list(reversed(left))


def _staggered_odd(left):
    """Odd derivative at a midpoint: left half, mirrored with sign flip."""
    return list(left) + [-w for w in reversed(left)]


def _staggered_even(left):
    """Even derivative at a midpoint: left half, mirrored."""
    return list(left) + list(reversed(left))


# --- Published tables --------------------------------------------------------------------------

# First derivative, centred, offsets -M..M (Fornberg 1988 Table 1).
FIRST_CENTRED = {
    2: [R(-1, 2), R(0), R(1, 2)],
    4: [R(1, 12), R(-2, 3), R(0), R(2, 3), R(-1, 12)],
    6: [R(-1, 60), R(3, 20), R(-3, 4), R(0), R(3, 4), R(-3, 20), R(1, 60)],
    8: [R(1, 280), R(-4, 105), R(1, 5), R(-4, 5), R(0), R(4, 5), R(-1, 5), R(4, 105), R(-1, 280)],
    10: _centred_odd([R(-1, 1260), R(5, 504), R(-5, 84), R(5, 21), R(-5, 6)]),
    12: _centred_odd([R(1, 5544), R(-1, 385), R(1, 56), R(-5, 63), R(15, 56), R(-6, 7)]),
    14: _centred_odd([R(-1, 24024), R(7, 10296), R(-7, 1320), R(7, 264), R(-7, 72), R(7, 24),
                      R(-7, 8)]),
    16: _centred_odd([R(1, 102960), R(-8, 45045), R(2, 1287), R(-56, 6435), R(7, 198),
                      R(-56, 495), R(14, 45), R(-8, 9)]),
}

# Second derivative, centred, offsets -M..M (Fornberg 1988 Table 1).
SECOND_CENTRED = {
    2: [R(1), R(-2), R(1)],
    4: [R(-1, 12), R(4, 3), R(-5, 2), R(4, 3), R(-1, 12)],
    6: _centred_even([R(1, 90), R(-3, 20), R(3, 2)], R(-49, 18)),
    8: _centred_even([R(-1, 560), R(8, 315), R(-1, 5), R(8, 5)], R(-205, 72)),
    10: _centred_even([R(1, 3150), R(-5, 1008), R(5, 126), R(-5, 21), R(5, 3)], R(-5269, 1800)),
    12: _centred_even([R(-1, 16632), R(2, 1925), R(-1, 112), R(10, 189), R(-15, 56), R(12, 7)],
                      R(-5369, 1800)),
    14: _centred_even([R(1, 84084), R(-7, 30888), R(7, 3300), R(-7, 528), R(7, 108), R(-7, 24),
                       R(7, 4)], R(-266681, 88200)),
    16: _centred_even([R(-1, 411840), R(16, 315315), R(-2, 3861), R(112, 32175), R(-7, 396),
                       R(112, 1485), R(-14, 45), R(16, 9)], R(-1077749, 352800)),
}

# First derivative half-way between nodes (Fornberg 1988 Table 2; staggered-grid coefficients),
# points at +-1/2, +-3/2, ... relative to the evaluation point, listed outer-left to outer-right.
FIRST_STAGGERED = {
    2: [R(-1), R(1)],
    4: [R(1, 24), R(-9, 8), R(9, 8), R(-1, 24)],
    6: [R(-3, 640), R(25, 384), R(-75, 64), R(75, 64), R(-25, 384), R(3, 640)],
    8: [R(5, 7168), R(-49, 5120), R(245, 3072), R(-1225, 1024),
        R(1225, 1024), R(-245, 3072), R(49, 5120), R(-5, 7168)],
    10: _staggered_odd([R(-35, 294912), R(405, 229376), R(-567, 40960), R(735, 8192),
                        R(-19845, 16384)]),
    12: _staggered_odd([R(63, 2883584), R(-847, 2359296), R(5445, 1835008), R(-22869, 1310720),
                        R(12705, 131072), R(-160083, 131072)]),
    14: _staggered_odd([R(-231, 54525952), R(3549, 46137344), R(-13013, 18874368),
                        R(61347, 14680064), R(-429429, 20971520), R(429429, 4194304),
                        R(-1288287, 1048576)]),
    16: _staggered_odd([R(143, 167772160), R(-7425, 436207616), R(61425, 369098752),
                        R(-325325, 301989888), R(1254825, 234881024), R(-3864861, 167772160),
                        R(3578575, 33554432), R(-41409225, 33554432)]),
}

# Second derivative half-way between nodes, points at -3/2, -1/2, 1/2, 3/2 (and +-5/2).
SECOND_STAGGERED = {
    2: [R(1, 2), R(-1, 2), R(-1, 2), R(1, 2)],
    4: _staggered_even([R(-5, 48), R(13, 16), R(-17, 24)]),
}


def _moment(weights, points, k):
    return sum((w * p**k for w, p in zip(weights, points)), R(0))


def _check_moments(weights, points, m):
    """Exact moment conditions sum_i w_i p_i^k = k! [k == m] for k < len(points)."""
    for k in range(len(points)):
        expected = sympy.factorial(m) if k == m else 0
        assert _moment(weights, points, k) == expected, (k, weights)


def _centred_points(n):
    m = (n - 1) // 2
    return [R(i) for i in range(-m, m + 1)]


def _staggered_points(n):
    return [R(2 * i - n + 1, 2) for i in range(n)]


# --- The tables are self-consistent (catches typos in the tables, not in the code) ---------------

@pytest.mark.parametrize("order", ORDERS)
def test_first_centred_table_row_is_consistent(order):
    row = FIRST_CENTRED[order]
    pts = _centred_points(len(row))
    assert len(row) == order + 1
    assert sum(row) == 0
    assert _moment(row, pts, 1) == 1
    _check_moments(row, pts, 1)
    # Closed form: w_k = (-1)^(k+1) (M!)^2 / (k (M-k)! (M+k)!) for k = 1..M.
    M = order // 2
    f = sympy.factorial
    for k in range(1, M + 1):
        assert row[M + k] == R((-1) ** (k + 1) * f(M) ** 2, k * f(M - k) * f(M + k))


@pytest.mark.parametrize("order", ORDERS)
def test_second_centred_table_row_is_consistent(order):
    row = SECOND_CENTRED[order]
    pts = _centred_points(len(row))
    assert len(row) == order + 1
    assert sum(row) == 0
    assert _moment(row, pts, 1) == 0
    assert _moment(row, pts, 2) == 2
    _check_moments(row, pts, 2)
    # Closed form: w_k = 2 (-1)^(k+1) (M!)^2 / (k^2 (M-k)! (M+k)!), (centre follows from sum = 0).
    M = order // 2
    f = sympy.factorial
    for k in range(1, M + 1):
        assert row[M + k] == R(2 * (-1) ** (k + 1) * f(M) ** 2, k**2 * f(M - k) * f(M + k))


@pytest.mark.parametrize("order", ORDERS)
def test_first_staggered_table_row_is_consistent(order):
    row = FIRST_STAGGERED[order]
    pts = _staggered_points(len(row))
    assert len(row) == order
    assert sum(row) == 0
    assert _moment(row, pts, 1) == 1
    _check_moments(row, pts, 1)
    # Closed form: c_k = (-1)^(k+1) ((2M-1)!!)^2 / (4^(M-1) (M+k-1)! (M-k)! (2k-1)^2).
    M = order // 2
    f = sympy.factorial
    for k in range(1, M + 1):
        expected = R((-1) ** (k + 1) * sympy.factorial2(2 * M - 1) ** 2,
                     4 ** (M - 1) * f(M + k - 1) * f(M - k) * (2 * k - 1) ** 2)
        assert row[M - 1 + k] == expected


@pytest.mark.parametrize("order", ORDERS)
def test_first_staggered_table_against_high_precision_solve(order):
    """Solve the Vandermonde system in 50-digit floating point, independently of both table and code."""
    row = FIRST_STAGGERED[order]
    with mpmath.workdps(50):
        pts = [mpmath.mpf(2 * i - order + 1) / 2 for i in range(order)]
        A = mpmath.matrix([[p**k for p in pts] for k in range(order)])
        b = mpmath.matrix([1 if k == 1 else 0 for k in range(order)])
        sol = mpmath.lu_solve(A, b)
        for w, s in zip(row, sol):
            assert abs(mpmath.mpf(w.p) / w.q - s) < mpmath.mpf(10) ** -12 * max(1, abs(s))


@pytest.mark.parametrize("order", (2, 4))
def test_second_staggered_table_row_is_consistent(order):
    row = SECOND_STAGGERED[order]
    pts = _staggered_points(len(row))
    assert sum(row) == 0
    assert _moment(row, pts, 2) == 2
    _check_moments(row, pts, 2)


# --- The code reproduces the tables --------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
def test_first_derivative_centred(order):
    offsets, weights = derivative_weights(1, order)
    M = order // 2
    assert list(offsets) == list(range(-M, M + 1))
    assert list(weights) == FIRST_CENTRED[order]
    assert all(isinstance(w, sympy.Rational) for w in weights)


@pytest.mark.parametrize("order", ORDERS)
def test_second_derivative_centred(order):
    offsets, weights = derivative_weights(2, order)
    M = order // 2
    assert list(offsets) == list(range(-M, M + 1))
    assert list(weights) == SECOND_CENTRED[order]


@pytest.mark.parametrize("order", ORDERS)
def test_first_derivative_staggered(order):
    offsets, weights = derivative_weights(1, order, HALF)
    M = order // 2
    assert list(offsets) == list(range(-M + 1, M + 1))
    assert list(weights) == FIRST_STAGGERED[order]


@pytest.mark.parametrize("order", ORDERS)
def test_first_derivative_staggered_minus_half_is_same_row(order):
    offsets, weights = derivative_weights(1, order, -HALF)
    M = order // 2
    assert list(offsets) == list(range(-M, M))
    assert list(weights) == FIRST_STAGGERED[order]


@pytest.mark.parametrize("order", (2, 4))
def test_second_derivative_staggered_table(order):
    offsets, weights = derivative_weights(2, order, HALF)
    assert list(weights) == SECOND_STAGGERED[order]
    assert [o - HALF for o in offsets] == _staggered_points(len(weights))


@pytest.mark.parametrize("order", ORDERS)
def test_second_derivative_staggered_moments(order):
    offsets, weights = derivative_weights(2, order, HALF)
    assert len(offsets) == order + 2
    _check_moments(weights, [o - HALF for o in offsets], 2)
    assert list(weights) == list(reversed(weights))  # symmetric about the midpoint


def test_midpoint_interpolation():
    # Standard 4-point midpoint interpolation: (-1, 9, 9, -1)/16.
    offsets, weights = derivative_weights(0, 4, HALF)
    assert list(offsets) == [-1, 0, 1, 2]
    assert list(weights) == [R(-1, 16), R(9, 16), R(9, 16), R(-1, 16)]
    assert derivative_weights(0, 8, 0) == ((R(0),), (R(1),))


# --- Polynomial exactness --------------------------------------------------------------------------

@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shift", (0, HALF))
@pytest.mark.parametrize("deriv", (1, 2))
def test_polynomials_of_degree_up_to_order_are_exact(order, shift, deriv):
    x = sympy.Symbol("x")
    f = sum(R((-1) ** k * (k + 1), k + 2) * x**k for k in range(order + 1))
    fpoly = sympy.Poly(f, x)
    dpoly = fpoly.diff((x, deriv))
    x0, h = R(3, 7), R(1, 5)
    offsets, weights = derivative_weights(deriv, order, shift)
    approx = sum(w * fpoly.eval(x0 + o * h) for o, w in zip(offsets, weights)) / h**deriv
    assert approx == dpoly.eval(x0 + shift * h)


# --- stencil_offsets ------------------------------------------------------------------------------

@pytest.mark.parametrize("args, first, last", [
    ((1, 8, 0), -4, 4),
    ((2, 8, 0), -4, 4),
    ((1, 8, HALF), -3, 4),
    ((1, 8, -HALF), -4, 3),
    ((1, 8, 0.5), -3, 4),
    ((2, 4, HALF), -2, 3),     # M = (4 + 2) // 2 = 3: six points
    ((2, 2, HALF), -1, 2),
    ((1, 4, 1), -1, 3),
    ((1, 2, -1), -2, 0),
    ((3, 2, 0), -2, 2),        # M = (2 + 3 - 1) // 2 = 2
    ((4, 2, 0), -2, 2),        # M = (2 + 4 - 2) // 2 = 2
    ((0, 4, HALF), -1, 2),
    ((1, 4, R(3, 2)), 0, 3),
])
def test_stencil_offsets_shapes(args, first, last):
    offs = stencil_offsets(*args)
    assert offs == [R(i) for i in range(first, last + 1)]
    assert all(isinstance(o, sympy.Rational) for o in offs)


def test_stencil_offsets_node_interpolation_is_the_node():
    assert stencil_offsets(0, 4, 2) == [2]


# --- Errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fd_order", (3, 0, -2, 2.5))
def test_bad_fd_order(fd_order):
    with pytest.raises(ValueError, match="fd_order must be a positive even integer"):
        stencil_offsets(1, fd_order)
    with pytest.raises(ValueError, match="fd_order must be a positive even integer"):
        derivative_weights(1, fd_order)


@pytest.mark.parametrize("shift", (R(1, 3), 0.25, sympy.pi, "a"))
def test_bad_shift(shift):
    with pytest.raises(ValueError, match="node or a midpoint"):
        stencil_offsets(1, 2, shift)


def test_bad_shift_message_names_node_or_midpoint():
    with pytest.raises(ValueError, match="node or a midpoint"):
        derivative_weights(1, 4, R(1, 3))


def test_too_few_points():
    with pytest.raises(ValueError, match="points"):
        fornberg_weights([0, 1], 0, 2)


def test_points_not_distinct():
    with pytest.raises(ValueError, match="distinct"):
        fornberg_weights([0, 1, 1], 0, 1)


def test_negative_deriv_order():
    with pytest.raises(ValueError, match="deriv_order"):
        fornberg_weights([0, 1], 0, -1)
    with pytest.raises(ValueError, match="deriv_order"):
        stencil_offsets(-1, 2)


# --- fornberg_weights on its own --------------------------------------------------------------------

def test_fornberg_accepts_ints_fractions_and_floats():
    expected = [R(-1, 2), R(0), R(1, 2)]
    assert fornberg_weights([-1, 0, 1], 0, 1) == expected
    assert fornberg_weights([Fraction(-1), Fraction(0), Fraction(1)], Fraction(0), 1) == expected
    assert fornberg_weights([-1.0, 0.0, 1.0], 0.0, 1) == expected
    assert fornberg_weights([R(-1), R(0), R(1)], R(0), 1) == expected


def test_fornberg_one_sided_and_nonuniform():
    # One-sided second-order first derivative: (-3, 4, -1)/2 (Fornberg 1988 Table 3).
    assert fornberg_weights([0, 1, 2], 0, 1) == [R(-3, 2), R(2), R(-1, 2)]
    # Non-uniform points, evaluation point off the points: check moments exactly.
    pts = [R(-1, 3), R(1, 4), R(1), R(5, 2)]
    w = fornberg_weights(pts, R(1, 7), 1)
    _check_moments(w, [p - R(1, 7) for p in pts], 1)


def test_fornberg_interpolation_weights():
    # Lagrange interpolation at the midpoint of two points.
    assert fornberg_weights([0, 1], HALF, 0) == [HALF, HALF]
    assert fornberg_weights([3], 3, 0) == [1]


# --- Caching ------------------------------------------------------------------------------------

def test_derivative_weights_cache_normalises_arguments():
    a = derivative_weights(1, 6, 0.5)
    b = derivative_weights(1, 6, R(1, 2))
    c = derivative_weights(sympy.Integer(1), 6.0, Fraction(1, 2))
    assert a is b is c
    assert isinstance(a, tuple) and isinstance(a[0], tuple) and isinstance(a[1], tuple)

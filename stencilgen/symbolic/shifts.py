"""One derivative written out as weighted shifts of its operand (exact Fornberg weights).

A derivative here is anything with ``dim``, ``deriv_order``, ``fd_order`` and ``shift`` (the
lazy Derivative of differentiable.py); this module needs no more of it, so that module can
import this one.
"""
from __future__ import annotations

import sympy

from .dimensions import stepping_dimension, time_dimension
from .fd_sides import side_step
from .fd_weights import centred_weights, custom_offsets, side_weights


def shift(expr, dim, steps):
    """``expr`` moved by ``steps`` grid spacings along ``dim`` (every index along it)."""
    if steps == 0:
        return expr
    dims = (stepping_dimension(), time_dimension()) if dim.is_Time else (dim,)
    return expr.xreplace({d: d + steps * d.spacing for d in dims})


_DIFFERENCE = (sympy.Integer(-1), sympy.Integer(1))


def weights_of(d, place=(0, False)):
    """(offsets, weights) of derivative ``d``: the sample points in spacings, exact weights.

    As Devito 4.8, a first derivative of fd_order 1 or 2 is the two-point difference: forward
    from a node x0 (``f.dx`` at space_order 2, ``u.dt``), across a midpoint x0. A side
    (``u.dxl``) moves the centred nodes one back or ahead, user weights sit on the nodes
    centred on x0, and a transposed derivative (``u.dx.T``) reads its offsets mirrored.
    ``place`` is where the operand's values sit (``differentiable.location``): offsets count
    from there; with no x0 the derivative is centred there, and its two-point stencil leans
    back, not ahead, for a function given staggered= (Devito's rule).
    """
    loc, leans_back = place
    mid = sympy.sympify((d.shift if getattr(d, "explicit_x0", True) else loc) - loc)
    side, custom = getattr(d, "side", None), getattr(d, "weights", ())
    if custom:
        offsets, weights = tuple(custom_offsets(len(custom), mid)), tuple(custom)
    elif side is not None and d.fd_order == 1:
        offsets, weights = _two_points(mid, side_step(side), leans_back), _DIFFERENCE
    elif side is not None:
        offsets, weights = side_weights(d.fd_order, mid, side_step(side))
    elif d.deriv_order == 1 and d.fd_order <= 2:
        offsets, weights = _two_points(mid, 0, leans_back), _DIFFERENCE
    else:
        offsets, weights = centred_weights(d.deriv_order, d.fd_order, mid)
    if getattr(d, "transposed", False):
        offsets = tuple(-o for o in offsets)
    return tuple(offsets), tuple(weights)


def _two_points(mid, step: int, leans_back: bool) -> tuple:
    """Devito's two nodes for a first-order first derivative moved ``step`` nodes by a side:
    the nodes around ``mid``, or if it is one, it and the next (the previous when leaning back)."""
    lo = sympy.ceiling(mid - sympy.Rational(1, 2)) + step
    hi = sympy.floor(mid + sympy.Rational(1, 2)) + step
    if lo == hi:
        return (lo - 1, hi) if leans_back else (lo, hi + 1)
    return lo, hi


def expand(d, inner, place=(0, False)):
    """The weighted-shift sum for derivative ``d`` applied to the (already expanded) ``inner``,
    whose values sit at ``place`` (see ``weights_of``). User weights that are all numbers are
    per unit spacing and divided by h**order; weights holding symbols (``w / x.spacing**2``)
    are the coefficients themselves, as Devito takes them."""
    offsets, weights = weights_of(d, place)
    total = sympy.Add(*[w * shift(inner, d.dim, o) for o, w in zip(offsets, weights) if w != 0])
    custom = getattr(d, "weights", ())
    if custom and not all(sympy.sympify(w).is_Number for w in custom):
        return total
    return total / d.dim.spacing ** d.deriv_order

"""Lazy derivatives and their expansion into weighted shifts, as the compiler imports them.

``Derivative(expr, (x, n), fd_order=k, x0=x + s*h_x)`` is the n-th derivative of ``expr``
along x at x + s*h (s integer or half-integer), to accuracy k. The node and ``evaluate`` live
in differentiable.py (the shorthands build it); one derivative's expansion in shifts.py.
"""
from __future__ import annotations

from .differentiable import Derivative, evaluate
from ..errors import InvalidArgument
from .fd_sides import centered, left, right
from .shifts import expand, shift, weights_of

__all__ = ["Derivative", "evaluate", "expand", "shift", "weights_of", "first_derivative",
           "left", "right", "centered"]


def first_derivative(expr, dim=None, fd_order=None, side=centered, x0=None, weights=None,
                     **kwargs):
    """The first derivative of ``expr`` along ``dim``, as Devito's ``first_derivative``:
    ``side`` centred by default (the symmetric stencil even at fd_order 2), left or right."""
    if kwargs:
        raise InvalidArgument(f"first_derivative: unexpected argument(s) {', '.join(kwargs)}; "
                              "it takes expr, dim, fd_order, side, x0 and weights")
    if dim is None:
        raise InvalidArgument("first_derivative: give the dimension, e.g. "
                              "first_derivative(u, dim=x, fd_order=4)")
    if weights is not None:
        side = None
    return Derivative(expr, dim, fd_order=fd_order, side=side, x0=x0, weights=weights)

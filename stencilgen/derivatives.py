"""Lazy derivatives and their expansion into weighted shifts, as the compiler imports them.

``Derivative(expr, (x, n), fd_order=k, x0=x + s*h_x)`` is the n-th derivative of ``expr``
along x at x + s*h (s integer or half-integer), to accuracy k. The node and ``evaluate`` live
in differentiable.py (the shorthands build it); one derivative's expansion in shifts.py.
"""
from __future__ import annotations

from .differentiable import Derivative, evaluate
from .shifts import expand, shift, weights_of

__all__ = ["Derivative", "evaluate", "expand", "shift", "weights_of"]

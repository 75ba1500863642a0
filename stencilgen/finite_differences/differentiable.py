"""Devito's ``devito.finite_differences.differentiable``: what derivatives apply to."""
from ..symbolic.differentiable import Differentiable

__all__ = ["Differentiable"]

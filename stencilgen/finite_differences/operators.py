"""Devito's ``devito.finite_differences.operators``: the vector calculus operators."""
from ..symbolic.calculus import curl, diag, div, grad, laplace

__all__ = ["curl", "diag", "div", "grad", "laplace"]

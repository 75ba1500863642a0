"""Devito's ``devito.finite_differences.operators``: the vector calculus operators."""
from ..symbolic.calculus import curl, curl45, diag, div, div45, grad, grad45, laplace

__all__ = ["curl", "curl45", "diag", "div", "div45", "grad", "grad45", "laplace"]

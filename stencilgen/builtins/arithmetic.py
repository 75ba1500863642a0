"""Devito's ``devito.builtins.arithmetic``: reductions of functions' values."""
from ..symbolic.builtins import inner, mmax, mmin, norm, sum, sumall

__all__ = ["inner", "mmax", "mmin", "norm", "sum", "sumall"]

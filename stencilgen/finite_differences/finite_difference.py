"""Devito's ``devito.finite_differences.finite_difference``: derivatives as functions."""
from ..symbolic.derivatives import first_derivative

__all__ = ["first_derivative"]

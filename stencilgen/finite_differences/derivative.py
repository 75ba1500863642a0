"""Devito's ``devito.finite_differences.derivative``: the Derivative object."""
from ..symbolic.derivatives import Derivative

__all__ = ["Derivative"]

"""Devito's ``devito.finite_differences.tools``: the sides of one-sided derivatives."""
from ..symbolic.fd_sides import centered, left, right

__all__ = ["centered", "left", "right"]

"""Devito's ``devito.builtins.initializers``: functions' values set from arrays and smoothed."""
from ..symbolic.builtins import gaussian_smooth, initialize_function, smooth

__all__ = ["gaussian_smooth", "initialize_function", "smooth"]

"""Devito's ``devito.builtins`` path: reductions and initialisers of functions' values,
defined in ``stencilgen.symbolic.builtins``."""
from ..symbolic.builtins import (gaussian_smooth, initialize_function, inner, mmax, mmin, norm,
                                 smooth, sum, sumall)
from . import arithmetic, initializers  # noqa: F401

__all__ = ["gaussian_smooth", "initialize_function", "inner", "mmax", "mmin", "norm", "smooth",
           "sum", "sumall"]

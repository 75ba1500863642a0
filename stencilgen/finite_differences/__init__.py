"""Devito's ``devito.finite_differences`` path (``from devito.finite_differences import
Derivative, left``): the names it holds here, defined in ``stencilgen.symbolic``."""
from ..symbolic.calculus import curl, curl45, diag, div, div45, grad, grad45, laplace
from ..symbolic.derivatives import Derivative, first_derivative
from ..symbolic.differentiable import Differentiable
from ..symbolic.fd_sides import centered, left, right
from . import derivative, differentiable, finite_difference, operators, tools  # noqa: F401

__all__ = ["Derivative", "Differentiable", "centered", "curl", "curl45", "diag", "div", "div45",
           "first_derivative", "grad", "grad45", "laplace", "left", "right"]

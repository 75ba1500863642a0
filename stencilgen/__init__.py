"""stencilgen: finite-difference PDEs written in sympy, compiled to fast loop programs."""
from sympy import cos, exp, sin, sqrt

from .builtins import initialize_function, norm
from .configuration import configuration
from .derivatives import Derivative
from .dimensions import Dimension, SpaceDimension, SteppingDimension, TimeDimension
from .equations import Eq, solve
from .errors import (BackdoorError, CompilationError, CompilerNotFoundError, ConfigurationError,
                     ExecutionError, HaloError, InvalidArgument, InvalidEquation,
                     InvalidOperator, NumericalWarning, StencilgenError)
from .functions import Constant, Function, TimeFunction
from .grid import Grid
from .operator import Operator
from .sparse import SparseFunction, SparseTimeFunction

__version__ = "0.1.0"

__all__ = [
    "BackdoorError", "CompilationError", "CompilerNotFoundError", "ConfigurationError",
    "Constant", "Derivative", "Dimension", "Eq", "ExecutionError", "Function", "Grid",
    "HaloError", "InvalidArgument", "InvalidEquation", "InvalidOperator", "NumericalWarning",
    "Operator", "SpaceDimension", "SparseFunction", "SparseTimeFunction", "StencilgenError",
    "SteppingDimension", "TimeDimension", "TimeFunction", "configuration", "cos", "exp",
    "initialize_function", "norm", "sin", "solve", "sqrt",
]

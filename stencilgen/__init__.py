"""stencilgen: finite-difference PDEs written in sympy, compiled to fast loop programs."""
from sympy import (Abs, And, Ge, Gt, Le, Lt, Max, Min, Ne, Not, Or, acos, asin, atan, atan2,
                   ceiling, cos, cosh, exp, floor, log, sign, sin, sinh, sqrt, tan, tanh)

from . import devito_names
from .symbolic.builtins import (gaussian_smooth, initialize_function, inner, mmax, mmin, norm,
                                smooth, sum, sumall)
from .symbolic.calculus import curl, curl45, diag, div, div45, grad, grad45, laplace
from .configuration import configuration, switchconfig
from .symbolic.derivatives import Derivative, first_derivative
from .symbolic.conditions import CondEq, CondNe
from .symbolic.dimensions import (BatchDimension, ConditionalDimension, Dimension,
                                  MultiSubDimension, SpaceDimension, SteppingDimension,
                                  SubDimension, TimeDimension)
from .symbolic.equations import Eq, Inc, solve
from .symbolic.expressions import Conj, Imag, Real
from .errors import (BackdoorError, CompilationError, CompilerNotFoundError, ConfigurationError,
                     ExecutionError, HaloError, InvalidArgument, InvalidEquation,
                     InvalidOperator, NumericalWarning, StencilgenError,
                     UnsupportedDerivative)
from .symbolic.fd_sides import centered, left, right
from .symbolic.functions import Constant, Function, TimeFunction
from .symbolic.grid import Grid
from .data.allocators import ALLOC_ALIGNED, ALLOC_GUARD
from .errors import ApplyInterrupted
from .data.memory import clear_cache
from .runtime.operator import Operator
from .symbolic.sparse import (PrecomputedSparseFunction, PrecomputedSparseTimeFunction,
                              SparseFunction, SparseTimeFunction)
from .symbolic.staggering import CELL, NODE
from .symbolic.tensors import (Tensor, TensorFunction, TensorTimeFunction, Vector, VectorFunction,
                               VectorTimeFunction)
from .symbolic.subdomains import Border, SubDomain, SubDomainSet

__version__ = "0.1.0"


#: modules that sat at the top of the package before it was grouped by concern: the
#: name still gives the module (``from stencilgen import mpi``, ``stencilgen.grid``)
_MOVED = {
    "names": "ir.names", "dimensions": "symbolic.dimensions", "fd_sides": "symbolic.fd_sides",
    "fd_weights": "symbolic.fd_weights", "shifts": "symbolic.shifts",
    "differentiable": "symbolic.differentiable", "derivatives": "symbolic.derivatives",
    "calculus": "symbolic.calculus", "tensors": "symbolic.tensors",
    "staggering": "symbolic.staggering", "relocation": "symbolic.relocation",
    "equations": "symbolic.equations", "subdomains": "symbolic.subdomains",
    "indexing": "symbolic.indexing",
    "conditions": "symbolic.conditions", "functions": "symbolic.functions",
    "grid": "symbolic.grid", "sparse": "symbolic.sparse", "memory": "data.memory",
    "storage": "data.storage", "interop": "data.interop", "places": "data.places",
    "precision": "data.precision", "distributed_data": "data.distributed_data",
    "mpi": "distributed.mpi", "decomposition": "distributed.decomposition",
    "halo_exchange": "distributed.halo_exchange", "device_halos": "distributed.device_halos",
    "operator": "runtime.operator",
    "operator_options": "runtime.operator_options", "arguments": "runtime.arguments",
    "autotune": "runtime.autotune", "longrun": "runtime.longrun",
    "profiling": "runtime.profiling", "finite": "runtime.finite", "survey": "seismic.survey",
    "checkpointing": "seismic.checkpointing"
}


def __getattr__(name):
    """A module that moved into a subpackage, by its old name; a Devito name stencilgen lacks
    is an error saying what to write instead."""
    if name in _MOVED:
        import importlib
        return importlib.import_module(f"{__name__}.{_MOVED[name]}")
    raise devito_names.unsupported(__name__, name)


def set_log_level(level):
    """Devito's ``set_log_level``: the ``log-level`` setting."""
    configuration["log-level"] = level

__all__ = [
    "Abs", "Max", "Min", "acos", "asin", "atan", "atan2", "ceiling", "cosh", "floor", "log",
    "sign", "sinh", "tan", "tanh", "And", "Ge", "Gt", "Le", "Lt", "Ne", "Not", "Or",
    "BatchDimension", "CondEq", "CondNe", "ConditionalDimension",
    "BackdoorError", "CompilationError", "CompilerNotFoundError", "ConfigurationError",
    "Constant", "Derivative", "Dimension", "Eq", "Inc", "ExecutionError", "Function", "Grid",
    "HaloError", "InvalidArgument", "InvalidEquation", "InvalidOperator", "NumericalWarning",
    "Operator", "PrecomputedSparseFunction", "PrecomputedSparseTimeFunction", "SpaceDimension", "SparseFunction", "SparseTimeFunction", "StencilgenError",
    "SteppingDimension", "SubDimension", "MultiSubDimension", "SubDomain", "SubDomainSet", "Border", "TimeDimension", "TimeFunction",
    "configuration", "cos",
    "exp",
    "UnsupportedDerivative", "centered", "first_derivative", "initialize_function", "left",
    "norm", "right", "set_log_level", "sin", "solve", "sqrt", "sum", "sumall", "inner", "mmax",
    "mmin", "Real", "Imag", "Conj",
    "CELL", "NODE", "Tensor", "TensorFunction", "TensorTimeFunction", "Vector", "VectorFunction",
    "VectorTimeFunction", "curl", "curl45", "diag", "div", "div45", "grad", "grad45", "laplace",
]
__all__ += ["ApplyInterrupted", "clear_cache", "gaussian_smooth", "smooth", "switchconfig",
            "ALLOC_ALIGNED", "ALLOC_GUARD"]


# Devito's module paths programs import from (``from devito.finite_differences.operators
# import div``), real packages under stencilgen's name
from . import builtins, finite_differences, symbolics  # noqa: E402,F401

"""The exceptions under the names Devito programs import (``from devito.exceptions import
InvalidArgument`` ports as ``from stencilgen.exceptions import InvalidArgument``)."""
from __future__ import annotations

from .errors import (CompilationError, ExecutionError, InvalidArgument, InvalidOperator,
                     StencilgenError)

#: Devito's base class: every error stencilgen raises for bad input derives from it
DevitoError = StencilgenError

__all__ = ["CompilationError", "DevitoError", "ExecutionError", "InvalidArgument",
           "InvalidOperator", "StencilgenError"]

"""stencilgen's exception classes: each message says what was wrong and what to do."""
from __future__ import annotations

from jitcache.errors import (  # noqa: F401 - re-exported: build errors reach users from here too
    BackdoorError, CompilationError, CompilerNotFoundError, JitCacheError)


class StencilgenError(Exception):
    """Base class of the errors raised for bad input to the DSL or the compiler."""


class ConfigurationError(StencilgenError, ValueError):
    """A setting (environment variable or ``configuration[...]``) has a bad key or value."""


class InvalidArgument(StencilgenError, ValueError):
    """A constructor or ``apply`` received a value of the wrong kind, shape or range."""


class InvalidEquation(StencilgenError, ValueError):
    """An equation cannot be lowered: mixed grids, bad left-hand side, unsolvable ``solve``."""


class InvalidOperator(StencilgenError, ValueError):
    """``Operator(...)`` got options that cannot make an Operator (an unknown language)."""


class ExecutionError(StencilgenError, RuntimeError):
    """The generated code reported a failure while running (``apply``)."""


class HaloError(StencilgenError, ValueError):
    """A stencil reads further from a point than the function's halo reaches."""


class NumericalWarning(RuntimeWarning):
    """A run wrote NaN or Inf into a field: it blew up (dt too large) or read non-finite input."""


class UnsupportedDerivative(StencilgenError, AttributeError):
    """A derivative shorthand (``u.dx5``, ``u.dz`` on a 2D grid) this expression cannot offer;
    an AttributeError too, so ``hasattr`` stays False as for any missing attribute."""

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


class ApplyInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped ``apply`` between two time steps; a KeyboardInterrupt, so code
    that stops on Ctrl-C stops here too. ``steps_done`` steps ran and ``last_step`` (None: no
    step) was the last: the fields hold what ``apply(time_M=last_step)`` would have left (the
    newest values in the slots ``slots`` names, e.g. ``{"u": (1,)}``), ``summary`` the
    performance of the steps done."""

    def __init__(self, message, *, steps_done=0, last_step=None, time_m=None, time_M=None,
                 slots=None, summary=None):
        super().__init__(message)
        self.steps_done, self.last_step = steps_done, last_step
        self.time_m, self.time_M = time_m, time_M
        self.slots, self.summary = slots or {}, summary


class HaloError(StencilgenError, ValueError):
    """A stencil reads further from a point than the function's halo reaches."""


class NumericalWarning(RuntimeWarning):
    """A run wrote NaN or Inf into a field: it blew up (dt too large) or read non-finite input."""


class UnsupportedDerivative(StencilgenError, AttributeError):
    """A derivative shorthand (``u.dx5``, ``u.dz`` on a 2D grid) this expression cannot offer;
    an AttributeError too, so ``hasattr`` stays False as for any missing attribute."""

"""Devito names stencilgen does not offer, and what to write instead: ``from stencilgen
import VectorTimeFunction`` (or ``stencilgen.VectorTimeFunction``) raises
``UnsupportedFeature`` saying so, not Python's bare "cannot import name"."""
from __future__ import annotations

from .errors import StencilgenError


class UnsupportedFeature(StencilgenError, ImportError):
    """A Devito name that stencilgen does not support (yet); the message says what to write."""


_OPERATORS = "use Operator(eqs, backend='c' | 'openacc' | 'cuda') for every target"
_CHECKPOINT = ("checkpointing (pyrevolve) is not supported; save the forward wavefield with "
               "TimeFunction(save=nt)")
_DIMENSIONS = ("this kind of Dimension is not supported: use the Grid's dimensions, "
               "SpaceDimension, TimeDimension, SteppingDimension or ConditionalDimension")

ADVICE = {
    "Buffer": "Buffer is not supported: pass time_order= (or save=) to TimeFunction",
    "assign": "assign is not supported: set f.data with NumPy, or run an Operator of Eq(f, ...)",
    "switchenv": "switchenv is not supported: set stencilgen.configuration[...] directly",
    "info": "Devito's logging helpers are not provided: use the logging module",
    "warning": "Devito's logging helpers are not provided: use the logging module",
    "error": "Devito's logging helpers are not provided: use the logging module",
    "CheckpointOperator": _CHECKPOINT, "DevitoCheckpoint": _CHECKPOINT, "Revolver": _CHECKPOINT,
    "MPI": "take it from mpi4py (from mpi4py import MPI); a Grid splits over MPI ranks with "
           "Grid(..., comm=MPI.COMM_WORLD) or STENCILGEN_MPI=1 (docs/mpi.md)",
    "CustomTopology": "give the ranks per dimension as Grid(..., topology=(2, '*', 1)) ('*': "
                      "chosen)",
    "MatrixSparseTimeFunction": "use SparseTimeFunction (multilinear interpolation)",
    "Coefficient": "use derivative weights: u.dx(weights=...)",
    "Substitutions": "use derivative weights: u.dx(weights=...)",
}
for _n in ("CustomDimension", "DefaultDimension", "ModuloDimension", "IncrDimension",
           "BlockDimension", "StencilDimension", "VirtualDimension"):
    ADVICE[_n] = _DIMENSIONS
for _n in ("Cpu64", "Intel64", "Arm", "Power", "Device"):
    ADVICE[_n] = _OPERATORS


def unsupported(module: str, name: str) -> Exception:
    """The error for ``module.name``: ours for a Devito name, else the plain AttributeError."""
    advice = ADVICE.get(name)
    if advice is None and name.endswith("Operator") and name[:1].isupper():
        advice = _OPERATORS
    if advice is None:
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    return UnsupportedFeature(f"stencilgen does not provide Devito's {name}: {advice}")

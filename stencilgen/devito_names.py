"""Devito names stencilgen does not offer, and what to write instead: ``from stencilgen
import VectorTimeFunction`` (or ``stencilgen.VectorTimeFunction``) raises
``UnsupportedFeature`` saying so, not Python's bare "cannot import name"."""
from __future__ import annotations

from .errors import StencilgenError


class UnsupportedFeature(StencilgenError, ImportError):
    """A Devito name that stencilgen does not support (yet); the message says what to write."""


_VECTOR = ("vector and tensor functions are not supported yet: use one Function or "
           "TimeFunction per component (vx, vy, vz) and their staggered derivatives, "
           "e.g. vx.dx(x0=x + x.spacing/2)")
_CALCULUS = ("the vector calculus operators are not supported yet: write the sums of "
             "derivatives (u.dx + u.dy, u.laplace) or their staggered forms with x0=")
_SUBDOMAINS = ("subdomains are not supported yet: run the Operator on index bounds "
               "(op.apply(x_m=..., x_M=...)) or multiply the update by a mask Function")
_REDUCTIONS = "compute it with NumPy on f.data (norm(f) is provided)"
_OPERATORS = "use Operator(eqs, backend='c' | 'openacc' | 'cuda') for every target"
_CHECKPOINT = ("checkpointing (pyrevolve) is not supported; save the forward wavefield with "
               "TimeFunction(save=nt)")
_DIMENSIONS = ("this kind of Dimension is not supported: use the Grid's dimensions, "
               "SpaceDimension, TimeDimension, SteppingDimension or ConditionalDimension")

ADVICE = {
    "VectorFunction": _VECTOR, "VectorTimeFunction": _VECTOR, "TensorFunction": _VECTOR,
    "TensorTimeFunction": _VECTOR, "diag": _VECTOR, "NODE": _VECTOR, "CELL": _VECTOR,
    "grad": _CALCULUS, "div": _CALCULUS, "curl": _CALCULUS, "grad45": _CALCULUS,
    "div45": _CALCULUS, "curl45": _CALCULUS,
    "SubDomain": _SUBDOMAINS, "SubDomainSet": _SUBDOMAINS, "SubDimension": _SUBDOMAINS,
    "MultiSubDimension": _SUBDOMAINS, "Border": _SUBDOMAINS,
    "Inc": "Inc is not supported: write Eq(u, u + expr)",
    "Buffer": "Buffer is not supported: pass time_order= (or save=) to TimeFunction",
    "mmax": _REDUCTIONS, "mmin": _REDUCTIONS, "sumall": _REDUCTIONS, "sum": _REDUCTIONS,
    "inner": _REDUCTIONS, "smooth": _REDUCTIONS, "gaussian_smooth": _REDUCTIONS,
    "assign": "assign is not supported: set f.data with NumPy, or run an Operator of Eq(f, ...)",
    "switchconfig": "switchconfig is not supported: set stencilgen.configuration[...] directly",
    "switchenv": "switchenv is not supported: set stencilgen.configuration[...] directly",
    "info": "Devito's logging helpers are not provided: use the logging module",
    "warning": "Devito's logging helpers are not provided: use the logging module",
    "error": "Devito's logging helpers are not provided: use the logging module",
    "CheckpointOperator": _CHECKPOINT, "DevitoCheckpoint": _CHECKPOINT, "Revolver": _CHECKPOINT,
    "MPI": "MPI is not supported yet: one process runs one grid (on one GPU or all CPU cores)",
    "CustomTopology": "MPI is not supported yet: one process runs one grid",
    "PrecomputedSparseFunction": "use SparseFunction (multilinear interpolation)",
    "PrecomputedSparseTimeFunction": "use SparseTimeFunction (multilinear interpolation)",
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

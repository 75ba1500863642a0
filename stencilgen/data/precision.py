"""16-bit storage: which format a field is stored in, its range scale, and the numpy type of
its values.

A field may be stored in float16 (IEEE binary16: 11 significant bits, |x| up to 65504, normal
down to 6.1e-5) or bfloat16 (8 significant bits, float32's range) while the arithmetic runs in
float32: loads widen, stores round to nearest. float16 values are kept inside its range by a
scale per field, a power of two (so scaling itself never rounds): ``u.data`` holds
``u / u.storage_scale``. The lowering folds the scales into the coefficients (``ir/scaling``).
"""
from __future__ import annotations

import math

import numpy as np
import sympy

from .. import logger as log
from ..errors import InvalidArgument
from ..ir.nodes import STORAGE_FORMATS, Rounded
from ..ir.optimize import Literal, Local

#: the stored value a wavefield's largest injected increment maps to: float16's largest value
#: is 65504 = 2**16, so a wave a few hundred increments strong still fits, and values 1e-6 of
#: the peak stay above float16's smallest normal number (6.1e-5)
INCREMENT_TARGET = 2.0 ** 6


def storage_format(storage, dtype, owner: str) -> tuple[object, str | None]:
    """(arithmetic dtype, 16-bit format or None) of a field declared with ``dtype`` and
    ``storage``; ``dtype=np.float16`` alone (Devito's spelling) stores float16 and computes
    in float32."""
    if storage is None and dtype is not None and _name(dtype) in STORAGE_FORMATS:
        return np.float32, _name(dtype)
    if storage is None:
        return dtype, None
    fmt = _name(storage)
    if fmt in ("float32", "float64") and (dtype is None or np.dtype(dtype) == np.dtype(fmt)):
        return np.dtype(fmt).type, None
    if fmt not in STORAGE_FORMATS:
        raise InvalidArgument(f"{owner}: storage={storage!r} is not supported; use "
                              "numpy.float16, 'float16' or 'bfloat16' (or leave it out: stored "
                              "as dtype)")
    if dtype is not None and np.dtype(dtype) != np.float32:
        raise InvalidArgument(f"{owner}: {fmt} storage computes in float32, but dtype="
                              f"{np.dtype(dtype).name} was given; leave dtype out or give "
                              "numpy.float32")
    return np.float32, fmt


def _name(dtype) -> str | None:
    if isinstance(dtype, str):
        return dtype.lower()
    try:
        return np.dtype(dtype).name
    except TypeError:
        return None


def host_dtype(fmt: str | None, dtype) -> np.dtype:
    """The numpy type of the stored values: ``dtype``, numpy.float16, or bfloat16 from
    ml_dtypes (an optional extra: ``pip install 'stencilgen[bfloat16]'``)."""
    if fmt is None:
        return np.dtype(dtype)
    if fmt == "float16":
        return np.dtype(np.float16)
    try:
        import ml_dtypes
    except ImportError:
        raise InvalidArgument("bfloat16 storage shows its values as ml_dtypes.bfloat16 arrays, "
                              "and ml_dtypes is not installed: pip install "
                              "'stencilgen[bfloat16]' (or ml_dtypes), or store as float16") \
            from None
    return np.dtype(ml_dtypes.bfloat16)


def check_scale(scale, fmt: str | None, owner: str) -> float | None:
    """``storage_scale`` as a power of two (None: chosen at the first apply for a field in
    time, 1 for others). A value that is not a power of two is refused: scaling by anything
    else would round every value once more."""
    if scale is None or scale == "auto":
        return None
    try:
        value = float(scale)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InvalidArgument(f"{owner}: storage_scale={scale!r} must be a positive power of two "
                              "(e.g. 2**-10) or 'auto'")
    mantissa, _ = math.frexp(value)
    if mantissa != 0.5:
        raise InvalidArgument(f"{owner}: storage_scale={scale!r} is not a power of two; give "
                              f"{2.0 ** round(math.log2(value))!r} (scaling by a power of two "
                              "never rounds)")
    if fmt is None and value != 1.0:
        raise InvalidArgument(f"{owner}: storage_scale applies to 16-bit storage; give "
                              "storage=numpy.float16 too, or leave storage_scale out")
    return value


def scale_for(increment: float) -> float:
    """The power of two that maps a wavefield's largest injected increment per step near
    ``INCREMENT_TARGET`` (1.0 where it is zero or not finite)."""
    if not (math.isfinite(increment) and increment > 0):
        return 1.0
    return 2.0 ** math.ceil(math.log2(increment / INCREMENT_TARGET))


def _bound(e, ranges: dict, values: dict) -> tuple[float, float]:
    """(lower, upper) bounds of |e| from each array's range of |values| and the scalars'."""
    if isinstance(e, sympy.Indexed):
        return ranges[e.base.name]
    if e.is_Number or isinstance(e, Literal):
        v = abs(float(getattr(e, "value", e)))
        return v, v
    if isinstance(e, sympy.Symbol):
        v = abs(float(values.get(e.name, 1.0)))
        return v, v
    parts = [_bound(a, ranges, values) for a in e.args]
    if isinstance(e, sympy.Add):
        return 0.0, sum(hi for _, hi in parts)
    if isinstance(e, sympy.Mul):
        return math.prod(lo for lo, _ in parts), math.prod(hi for _, hi in parts)
    if isinstance(e, sympy.Pow) and e.exp.is_Number:
        (lo, hi), n = parts[0], float(e.exp)
        if n >= 0:
            return lo ** n, hi ** n
        return (hi ** n if hi > 0 else math.inf), (lo ** n if lo > 0 else math.inf)
    if len(parts) == 1 and isinstance(e, (Local, Rounded)):
        return parts[0]
    return 0.0, math.inf


def _magnitudes(values) -> tuple[float, float]:
    """(smallest nonzero, largest) |value| of an array, as float64."""
    a = np.abs(np.asarray(values, dtype=np.float64))
    nonzero = a[a > 0]
    return (float(nonzero.min()) if nonzero.size else 0.0), float(a.max(initial=0.0))


def largest_increment(prog, targets: set, functions: dict, values: dict) -> float:
    """A bound of what the program's injections add to arrays ``targets`` at one point in one
    step, in the field's own units (scales taken as 1)."""
    values = dict(values)
    for a in prog.prologue:   # scalars the compiler hoisted out of the loops (dt**2, ...)
        values[a.lhs.name] = _bound(a.rhs, {}, values)[1]
    found = 0.0
    for k in prog.kernels:
        if not (k.is_sparse and k.kind == "inject" and k.target.base.name in targets):
            continue
        names = {a.base.name for a in k.expr.atoms(sympy.Indexed)}
        ranges = {n: _magnitudes(functions[n].data) for n in names}
        found = max(found, _bound(k.expr, ranges, values)[1])
    return found


def _holds_data(rec) -> bool:
    """Whether a field holds values (an apply's fresh device copy of zeros does not count)."""
    st = rec._storage
    if st is None:
        return False
    if st.copy is not None and st.newer == "device":
        return True
    return st.nbytes > 0 and bool(np.any(st._host))


def choose_scale(name: str, members: list, increment) -> float:
    """The run-time scale ``name`` of 16-bit fields ``members`` (FieldData): the one they were
    given, else a power of two for the largest injected increment (``increment()``), which
    then stays theirs; fields holding data already keep 1 (their values are stored as such)."""
    given = {m.scale for m in members if m.scale is not None}
    if len(given) > 1:
        listed = ", ".join(f"{m.name}: {m.scale!r}" for m in members if m.scale is not None)
        raise InvalidArgument(f"fields updated together share one storage scale, but {listed} "
                              "were given; give them the same storage_scale")
    if given:
        value = given.pop()
    elif any(_holds_data(m) for m in members):
        value = 1.0
    else:
        inc = increment()
        value = scale_for(inc)
        log.info(f"{', '.join(m.name for m in members)}: stored in units of 2**"
                 f"{int(math.log2(value))} (largest injected increment {inc:.3g} per step)")
    for m in members:
        m.scale = value
    return value

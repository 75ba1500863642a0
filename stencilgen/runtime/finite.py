"""The check for blow-ups after apply: the entry point counts NaN/Inf in the last state of
each field it wrote (on the GPU for GPU backends), and a warning names the fields."""
from __future__ import annotations


import numpy as np
import sympy

from ..errors import NumericalWarning
from ..user_warnings import warn_user


def _slot(arr, index, step, modulo, time):
    """The time slot of ``arr`` that ``index`` (a written access's time index) is at ``step``;
    None where there is no time axis or it cannot be told (then all of ``arr`` is checked)."""
    if arr.time_size is None or step is None or index is None:
        return None
    if index in modulo:
        return (step + modulo[index].shift) % modulo[index].modulo
    value = sympy.sympify(index).subs(time, step)
    # a direct index: apply checked it lies within the bound function's time axis
    return int(value) if value.is_Integer else None


def last_written(program, span) -> dict:
    """The user arrays ``program`` writes (by C name) with the time slots its last step (of
    ``span`` = (time_m, time_M)) wrote, or None for the whole array (no time axis)."""
    step = None if span is None else span[0] if getattr(program, "time_step", 1) < 0 else span[1]
    modulo = {ti.symbol: ti for ti in program.time_indices}
    out: dict = {}
    for k in program.kernels:
        for name, offsets in k.writes.items():
            arr = program.array(name)
            if arr.temporary:
                continue
            slots = out.setdefault(name, set())
            slots |= {_slot(arr, o[0] if o else None, step, modulo, program.time) for o in offsets}
    return {n: None if None in s else tuple(sorted(s)) for n, s in out.items()}


def check_ranges(program, span, fields) -> np.ndarray:
    """(start, length, count) per checked array: the elements of its last written slots (a
    range from the first to the last), counted by the entry point into the third place."""
    written = last_written(program, span)
    out = np.zeros((len(program.checks), 3), dtype=np.int64)
    for i, name in enumerate(program.checks):
        shape = fields[name].field.storage.shape   # the host array is not needed (GPU runs)
        slots = written.get(name)
        if slots is None:
            out[i, :2] = 0, int(np.prod(shape))
        else:
            per = int(np.prod(shape[1:]))
            out[i, :2] = min(slots) * per, (max(slots) - min(slots) + 1) * per
    return out


def report(op_name, program, counts, fields, span, dt):
    """Warn (NumericalWarning at the user's line and a log WARNING) where a field the run
    wrote holds NaN/Inf."""
    bad = {name: int(n) for name, n in zip(program.checks, counts) if n}
    if not bad:
        return
    text = _blowup_message(op_name, program, bad, fields, last_written(program, span), span, dt)
    warn_user(text, NumericalWarning)


def _blowup_message(op_name, prog, bad, fields, written, span, dt) -> str:
    names = []
    for name, count in bad.items():
        f, user, slots = fields[name], prog.array(name).user, written[name]
        shown = user if f.name == user else f"{user}={f.name}"
        where = "" if slots is None else \
            " in " + ", ".join(f"{f.name}.data[{s}]" for s in slots) + " (the last state)"
        names.append(f"{shown} ({count} values{where})")
    when = f"time steps {span[0]}..{span[1]}" + (f" with dt={dt}" if dt is not None else "") \
        if span else "the run"
    verb = "holds" if len(names) == 1 else "hold"
    return (f"Operator `{op_name}`: after {when}, {', '.join(names)} {verb} NaN or Inf: the run "
            "blew up or read non-finite input. Check that dt is below the scheme's stability "
            "limit and that every input holds finite values (np.isfinite(f.data).all()); "
            "Operator(..., check_finite=False) or STENCILGEN_CHECK_FINITE=0 turns this check off.")

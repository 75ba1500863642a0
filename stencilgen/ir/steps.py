"""Two time steps a pass (GPUs): temporal blocking of a staged nest (issue 51).

A nest that steps one time-buffered field (``u[t+1] = f(u[t] at neighbours, u[t-1], ...)``)
becomes a pass that computes steps ``t+1`` and ``t+2`` at once, streaming along its outermost
dimension (AN5D, EBISU): the first step is a producer of ``u[t+1]`` over the tile and the halo
the second step's stencil reads (a cross: the reads lie on the axes), kept in a shared ring of
planes; the second step reads it there. Each value of ``u[t]`` is loaded once a block for two
steps, so the bytes a step nearly halve, at the price of the halo the first step computes.

The pass writes ``u[t+1]`` and ``u[t+2]`` while other blocks still read ``u[t-1]`` and
``u[t]`` around their tiles, so it needs one buffer more than the field's slots: the backend
keeps the levels in a table of buffers (the slots and one more), put back into the field's
slots at the end of a run. Sources injected into ``u[t+1]`` run after the pass (the sparse
kernels of step ``t``); the second step is then computed again on the box the injection and
the stencil reach, from the injected values, by the one-step nest: the results are those of
one step at a time. The pass decides and records; the backend prints and runs it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import sympy

from .nodes import ArrayParam, Assign, Kernel, Program


@dataclass(frozen=True)
class Steps:
    """How a nest runs two steps a pass: the field it steps, its slots' levels and the pass."""

    field: str                            # the time-buffered array stepped
    levels: tuple                         # (slot symbol, its level: time offset -1, 0, +1)
    buffers: int                          # buffers a run keeps: the field's slots and one more
    kernel: Kernel                        # the pass (a fused nest writing levels +1 and +2)
    reach: tuple[tuple[int, int], ...]    # per dimension, the offsets the nest reads the
                                          # field's level 0 at: the margin of the box the
                                          # second step is computed again on around a source

    def level(self, slot) -> int:
        """The level (time offset) of ring slot symbol ``slot``."""
        return dict(self.levels)[slot]

    def has(self, slot) -> bool:
        return slot in dict(self.levels)


def _levels(prog: Program, written) -> dict:
    """Slot symbol -> level of the time indices, from the slot written (level +1)."""
    ring = {ti.symbol: ti for ti in prog.time_indices}
    w = ring[written]
    return {s: 1 - ((w.shift - ti.shift) % ti.modulo) for s, ti in ring.items()}


def _refusal(prog: Program, k, others) -> tuple | str:
    """(field, written slot, levels) of nest ``k`` if two of its steps may run a pass, else
    why not."""
    if prog.time_step != 1:
        return "its time loop runs backward"
    if any(d.exact for d in prog.dims):
        return "it spans a batch's copies"
    timed = [n for n in k.writes if prog.array(n).time_size is not None]
    if len(timed) != 1 or len(k.writes) != 1:
        return f"it writes {', '.join(sorted(k.writes))} (two steps a pass step one field)"
    field = timed[0]
    a = prog.array(field)
    if not a.modulo or a.sparse:
        return f"{a.user} keeps every step (two steps a pass step a buffered field)"
    slots = {o[0] for o in k.writes[field]}
    if len(slots) != 1 or any(any(o[1:]) for o in k.writes[field]):
        return f"it writes {a.user} at several places"
    written = slots.pop()
    if written not in {ti.symbol for ti in prog.time_indices}:
        return f"it writes {a.user} at a time index the loop does not step"
    levels = _levels(prog, written)
    if levels[written] != 1:
        return f"it writes {a.user} at a step other than the next"
    for name, offs in k.reads.items():
        arr = prog.array(name)
        if arr.time_size is None:
            if any(name in o.writes for o in others):
                return f"another kernel of the time loop writes {arr.user}, which it reads"
            continue
        if name != field:
            return f"it reads {arr.user}, a second time-varying field"
        if any(o[0] not in levels or levels[o[0]] > 0 for o in offs):
            return f"it reads {a.user} at the step it writes"
    before = prog.steps[:prog.steps.index(k)] if k in prog.steps else ()
    for o in others:
        if not o.is_sparse:
            return f"another nest, {o.name}, runs in the time loop"
        if o in before and any(s[0] == written for t in (o.reads, o.writes)
                               for s in t.get(field, ())):
            # the pass runs a step's sparse kernels after both its levels are computed
            return f"{o.name} touches {a.user} at the step computed before the nest runs"
        for name, offs in o.writes.items():
            arr = prog.array(name)
            if arr.sparse:
                continue
            if name != field or any(s[0] != written for s in offs):
                return f"{o.name} writes {arr.user} at another step than the one computed"
        if prog.array(o.sparse).support:
            return f"{o.name}'s points carry their own interpolation support"
    return field, written, levels


def _retime(expr, field: str, levels: dict, shift: int, time, temp):
    """``expr`` with each access to ``field``'s slots at its level plus ``shift`` from
    ``time`` (a direct index), those at level 1 from ``temp`` (on chip) where given."""
    subs = {}
    for acc in expr.atoms(sympy.Indexed):
        if acc.base.name != field:
            continue
        level = levels[acc.indices[0]] + shift
        subs[acc] = temp.base[acc.indices[1:]] if temp is not None and level == 1 \
            else acc.base[(time + level,) + tuple(acc.indices[1:])]
    return expr.xreplace(subs)


def _offsets(offs, field, levels, shift, time, temp_name):
    """The summary ``offs`` of ``field``'s reads, retimed as ``_retime``: (array, offsets)."""
    out: dict = {}
    for o in offs:
        level = levels[o[0]] + shift
        if temp_name is not None and level == 1:
            out.setdefault(temp_name, set()).add(tuple(o[1:]))
        else:
            out.setdefault(field, set()).add((time + level,) + tuple(o[1:]))
    return out


def plan(prog: Program, k, others, limits, fuse) -> Steps | str:
    """The two-step pass of grid nest ``k`` (``fuse``: ``ir/fusion._fuse``, with ``limits``
    and its tiles for passes), or why there is none."""
    found = _refusal(prog, k, others)
    if isinstance(found, str):
        return found
    field, written, levels = found
    u, time = prog.array(field), prog.time
    zero = (0,) * len(k.dims)
    v = ArrayParam(name=f"sg_next_{k.name}", user=k.name, dtype=u.dtype, ndim=len(k.dims),
                   temporary=True, halo=zero, store=u.store)
    point = tuple(k.dims)

    def statements(shift, temp):
        out = []
        for a in k.body:
            rhs = _retime(a.rhs, field, levels, shift, time, temp)
            if a.is_local:
                out.append(replace(a, rhs=rhs))
            elif shift == 0:
                out.append(Assign(v.base[point], rhs))
            else:
                out.append(Assign(u.base[(time + 2,) + point], rhs, a.dtype))
        return tuple(out)

    def reads(shift, temp_name):
        out: dict = {}
        for name, offs in k.reads.items():
            if name == field:
                for n, o in _offsets(offs, field, levels, shift, time, temp_name).items():
                    out.setdefault(n, set()).update(o)
            else:
                out[name] = set(offs)
        return out

    first = replace(k, name=f"{k.name}_first", body=statements(0, None), reads=reads(0, None),
                    writes={v.name: {zero}}, split=None, section=None, fusion=None)
    keep = Assign(u.base[(time + 1,) + point], v.base[point])
    second = replace(k, name=f"{k.name}_steps", body=(keep,) + statements(1, v),
                     reads=reads(1, v.name),
                     writes={field: {(time + 1,) + zero, (time + 2,) + zero}}, split=None,
                     fusion=None)
    tiles = replace(limits, tiles=limits.step_tiles or limits.tiles)
    fused = fuse(replace(prog, arrays=prog.arrays + (v,)), first, second, tiles)
    if isinstance(fused, str):
        return fused
    reach = tuple((min(o[j + 1] for o in k.reads[field] if levels[o[0]] == 0),
                   max(o[j + 1] for o in k.reads[field] if levels[o[0]] == 0))
                  for j in range(len(k.dims)))
    buffers = u.time_size + 1
    return Steps(field, tuple(levels.items()), buffers, replace(fused, split=k.split), reach)


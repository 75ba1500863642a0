"""Nests split at run time where arrays they read are zero on a box (``Function.zero_box``:
a sponge's damping, zero inside its layer).

Inside the box a nest runs a second body without the terms those arrays zero: their reads
replaced by 0, the locals that makes constant propagated, the locals no longer read dropped
(the acoustic nest then reads u at three levels and m, not the damping). Its own body runs
elsewhere. The box's bounds are run-time arguments (one pair per array and dimension, bound
from the Function at apply, empty where none is given), so one build serves any box; the
region where every read stays in the box is the box shrunk by the reads' offsets. Each
backend prints the two bodies its way (``Kernel.split``): C splits each row, GPUs branch per
point. Both bodies compute the same values where the arrays are zero, so a backend that
prints the nest's own body alone is right too.
"""
from __future__ import annotations

from dataclasses import replace

import sympy

from .. import logger as log
from .nodes import Assign, Kernel, Program, ZeroBox, ZeroSplit


def split_zero_boxes(prog: Program, names, enabled: bool = True) -> Program:
    """``prog`` with its time-loop nests that read zero-box arrays split (``Kernel.split``)
    and the boxes they read (``Program.zero_boxes``); each decision logged with its reason."""
    zero = {a.name for a in prog.arrays if a.zero}
    written = {n for k in prog.kernels for n in k.writes}
    for name in sorted(zero & written):
        log.debug(f"Operator `{prog.name}`: {name} has a zero box but is written: no split")
    zero -= written
    if not zero:
        return prog
    if not enabled:
        log.debug(f"Operator `{prog.name}`: run-time split off (STENCILGEN_ZERO_SPLIT=0)")
        return prog
    boxes = {}
    for n in sorted(zero):
        axes = prog.array(n).axes or tuple(range(len(prog.dims)))
        boxes[n] = ZeroBox(n, axes, tuple(names.fresh(f"{n}_zlo{i}") for i in axes),
                           tuple(names.fresh(f"{n}_zhi{i}") for i in axes))
    used, steps = set(), []
    for k in prog.steps:
        if not isinstance(k, Kernel) or not zero & set(k.reads):
            steps.append(k)
            continue
        split, why = _split(k, prog, boxes)
        if split is None:
            log.debug(f"Operator `{prog.name}`: {k.name} not split at run time: {why}")
            steps.append(k)
            continue
        log.debug(f"Operator `{prog.name}`: {k.name} split at run time where "
                  f"{', '.join(split.arrays)} {'is' if len(split.arrays) == 1 else 'are'} "
                  f"zero ({len(k.body)} statements, {len(split.body)} inside)")
        used.update(split.arrays)
        steps.append(replace(k, split=split))
    return replace(prog, steps=tuple(steps),
                   zero_boxes=tuple(boxes[n] for n in sorted(used)))


def _split(k: Kernel, prog: Program, boxes: dict) -> tuple[ZeroSplit | None, str]:
    """The split of nest ``k``, or None and why not."""
    if k.sequential:
        return None, f"it runs in order ({k.sequential})"
    if k.fixed and any(f is not None for f in k.fixed):
        return None, "it runs at fixed indices (a boundary nest)"
    if k.directions and any(d < 0 for d in k.directions):
        return None, "it sweeps down in place"
    if tuple(k.dims) != prog.loop_symbols:
        return None, "it does not span every dimension of the grid"
    reads = [a for st in k.body for a in st.rhs.atoms(sympy.Indexed) if a.base.name in boxes]
    lows, highs = {}, {}
    for acc in reads:
        offsets = [sympy.expand(i - d) for i, d in zip(acc.indices[-len(k.dims):], k.dims)]
        if not all(o.is_Integer for o in offsets):
            return None, f"it reads {acc.base.name} at {acc} (not at constant offsets)"
        name = acc.base.name
        lows[name] = [min(a, int(o)) for a, o in zip(lows.get(name, offsets), offsets)]
        highs[name] = [max(a, int(o)) for a, o in zip(highs.get(name, offsets), offsets)]
    if not reads:
        return None, "its reads of the zero-box arrays were folded into locals or invariants"
    body, why = _without(k.body, set(lows))
    if body is None:
        return None, why
    arrays = tuple(sorted(lows))
    # a point x reads a[x + o]: every read inside a's box [lo, hi] means lo - min(o) <= x and
    # x <= hi - max(o)
    def terms(bound, ends, sign):
        return tuple(tuple((getattr(boxes[n], bound)[boxes[n].axes.index(i)],
                            sign * ends[n][i]) for n in arrays if i in boxes[n].axes)
                     for i in range(len(k.dims)))
    lower, upper = terms("lower", lows, -1), terms("upper", highs, -1)
    return ZeroSplit(body, arrays, lower, upper), ""


def _without(body, arrays: set) -> tuple[tuple | None, str]:
    """``body`` with every read of ``arrays`` replaced by 0, constant locals propagated and
    dead locals dropped; None and why where that divides by zero."""
    known, out = {}, []
    for st in body:
        zeros = {a: sympy.S.Zero for a in st.rhs.atoms(sympy.Indexed) if a.base.name in arrays}
        rhs = st.rhs.xreplace({**zeros, **known}) if zeros or known else st.rhs
        if rhs.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return None, f"where they are zero, {st.lhs} = {st.rhs} divides by zero"
        if st.is_local and rhs.is_Number:
            known[st.lhs] = rhs
            continue
        out.append(Assign(st.lhs, rhs, st.dtype))
    live, kept = set(), []
    for st in reversed(out):
        if st.is_local and st.lhs not in live:
            continue
        live |= st.rhs.free_symbols
        kept.append(st)
    return tuple(reversed(kept)), ""

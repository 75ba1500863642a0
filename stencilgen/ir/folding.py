"""Folding a pointwise accumulation into the nest that produces its operand.

An imaging condition or a model gradient (``grad = grad - u * v.dt2``) reads the adjoint's
newest state, which the time step's sparse injections modify after its stencil nest has
computed it: the accumulation runs as a nest of its own after them, reading the states again.
Where it is linear in the states the injections write, it moves before them, into the
stencil nest (the scheduler fuses it there: the new state is still in registers), and each
such injection also adds its value, times the accumulation's coefficient of that state, into
the accumulator. The sums are the unfolded ones up to the order of the additions.
"""
from __future__ import annotations

from dataclasses import replace

import sympy

from .accesses import space_offsets
from .nodes import Stencils


def _pointwise(eq, dims) -> bool:
    """Whether ``eq`` reads every array at the point it writes."""
    return all(not any(space_offsets(a, dims)) for a in eq.rhs.atoms(sympy.Indexed))


def _candidate(eq, arrays, dims) -> bool:
    """An accumulation into an array without a time axis, every read at its own point, that
    runs everywhere at every step."""
    if eq.sparse_kind or not eq.time_dependent or eq.when is not None or \
            eq.guard is not None or eq.extent or eq.fixed or eq.anchors or \
            eq.reduces and not eq.outer_sum(len(dims)):
        return False
    target = arrays[eq.lhs.base.name]
    return target.time_size is None and not target.temporary and _pointwise(eq, dims) and \
        eq.rhs.has(eq.lhs)


def _folded(eq, block, arrays):
    """``eq`` moved before the sparse equations ``block`` and the injections compensating
    it, or None where it cannot move: an injection writes what it reads other than as a
    linear term, or something there reads or writes its accumulator."""
    name = eq.lhs.base.name
    read = {a.base.name for a in eq.rhs.atoms(sympy.Indexed)}
    extra = []
    for s in block:
        touched = {a.base.name for a in s.rhs.atoms(sympy.Indexed)} | {s.lhs.base.name}
        if name in touched:
            return None
        if s.sparse_kind != "inject" or s.lhs.base.name not in read:
            continue
        if s.stagger or arrays[s.lhs.base.name].store:
            return None   # another place's weights, or a 16-bit store between: not the same sum
        # other time slots of the injected array are other slots (one symbol a slot: ring
        # offsets that alias share it), not changed by the injection
        target, state = s.lhs, sympy.Dummy("state")
        coeff = sympy.diff(eq.rhs.xreplace({target: state}), state)   # not sympy's Indexed diff
        if coeff.has(state):
            return None   # not linear in the injected state
        if coeff == 0:
            continue      # it reads other slots of the array only
        extra.append(replace(s, lhs=eq.lhs, rhs=coeff * s.rhs))
    return extra


def fold_accumulations(st: Stencils) -> Stencils:
    """Each pointwise accumulation after sparse injections into the states it reads moved
    before them (next to the nest producing those states), the injections compensated."""
    arrays = {a.name: a for a in st.arrays}
    dims = st.loop_symbols
    eqs = list(st.eqs)
    j = 0
    while j < len(eqs):
        eq = eqs[j]
        i = j
        while i > 0 and eqs[i - 1].sparse_kind:
            i -= 1
        extra = _folded(eq, eqs[i:j], arrays) if i < j and _candidate(eq, arrays, dims) \
            else None
        if extra is not None:   # [] where it reads nothing the injections write
            eqs = eqs[:i] + [eq] + eqs[i:j] + extra + eqs[j + 1:]
            j += len(extra)
        j += 1
    return replace(st, eqs=tuple(eqs))

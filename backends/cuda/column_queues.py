"""CUDA printing of the register queues of a fused nest's staged inputs (``Staged.queued``).

A staged input's reads along the streamed dimension all lie on the thread's own column (reads
lie on the axes), so the thread keeps that column's planes in registers, ``sg_q_<ring>_<j>``
the plane ``sg_p + reach[0] + j`` at iteration ``sg_p``: those reads cost no shared load and no
ring addressing. The shared ring then holds two planes: the one read across the tile
(the producer's own, slot 0) and the next, stored beside it (slot 1) by the owners of its
points (the thread's value from its queue) and by the band loads (the points around the tile
no thread owns, loaded an iteration ahead). Each iteration shifts the queue a plane (register
moves: the plane loop stays rolled, its code small) and loads the column's next plane, used
from the next iteration on.
"""
from __future__ import annotations

from .kernel_text import indent as _indent
from .ring_names import column as _column, ring as _ring


def register(ring: str, j: int) -> str:
    """The queue register of ``ring``'s column holding the plane ``reach[0] + j`` from the
    iteration's."""
    return f"sg_q_{ring}_{j}"


def declarations(fk, group) -> list[str]:
    """The queue registers of ``group``'s staged inputs (widened values: a 16-bit column is
    widened once, when it enters the queue)."""
    return [f"{fk.vt} " + ", ".join(f"{register(_ring(s), j)} = {fk.zero}"
                                    for j in range(s.queue)) + ";" for s in group]


def fill(fk, group) -> list[str]:
    """Before the plane loop (iteration ``sg_pa``): the queue one shift short (register ``j``
    holds plane ``sg_pa + reach[0] + j - 1``, the column's next value the plane after), the
    ring's slot 0 holding plane ``sg_pa`` (the owners' values and the band's), and the band's
    values of plane ``sg_pa + 1``, stored at the first iteration."""
    names = [d.name for d in fk.inner]
    out = declarations(fk, group)
    lead = group[0]
    for i in range(lead.queue):
        out += ["{", f"  const sg_int sg_X = sg_pa + {lead.reach[0] + i};"]
        for s in group:
            ring = _ring(s)
            own = [f"sg_own_{ring}{c}" for c in range(fk.q)]
            out += [f"  const {fk._elem(s.name)} {own[c]} = "
                    f"{fk._column_value(s, c, 'sg_X', fk._raw(s, 'sg_X', fk._shift(names, c)))};"
                    for c in range(fk.q)]
            widened = fk._parts([fk.base.widened(s.name, v) for v in own])
            if i == -s.reach[0]:   # plane sg_pa: the ring's slot 0
                out.append(f"  if (sg_kind != 3) {fk._put(ring, f'{ring}_c', widened)}")
            out.append(f"  {register(ring, i + 1)} = {widened};" if i < s.queue - 1
                       else "  " + fk._column_set(s, own))
        out.append("}")
    for ahead in (0, 1):
        band = []
        for s in group:
            ring = _ring(s)
            value = f"{fk._x_test(s, 'sg_X')} ? {fk._raw(s, 'sg_X', fk._gnames())} : " \
                    f"{fk._zero(s.name)}"
            band.append(f"{ring}[sg_e] = {fk.base.widened(s.name, f'({value})')};" if not ahead
                        else f"{ring}_v[sg_k] = {value};")
        out += ["{", f"  const sg_int sg_X = sg_pa + {ahead};"] + \
            fk._band_each(lead, band, "  ") + ["}"]
    return out


def stage(fk, group) -> list[str]:
    """Iteration ``sg_p``'s part for ``group``: each queue shifted a plane (its last register
    the value loaded an iteration ago, widened), the column's next plane loaded, the owners'
    values of plane ``sg_p + 1`` and the band's (loaded an iteration ago) stored into the
    ring's slot 1, the band's values of plane ``sg_p + 2`` loaded."""
    lead = group[0]
    out = [f"const sg_int sg_X = sg_p + {lead.reach[0] + lead.queue};",
           "const sg_int sg_Xb = sg_p + 2;"]
    band = []
    for i, s in enumerate(group):
        ring, n = _ring(s), s.queue
        out += [" ".join(f"{register(ring, j)} = {register(ring, j + 1)};" for j in range(n - 1))
                + f" {register(ring, n - 1)} = {fk._column_now(s)};"]
        loads = [fk._column_value(s, c, "sg_X", f"sg_gb{i}[{_column(s)}_go + {c}]")
                 for c in range(fk.q)]
        out += [fk._plane(s, i, "sg_X"), fk._column_set(s, loads)]
        slot = fk.ctx.slot((s.ring, "st", s.halo), 1, ring)
        own = register(ring, 1 - s.reach[0])   # plane sg_p + 1 of the column
        out += [f"{fk.real} *const sg_pl{i} = {fk.ctx.at(ring, slot, '0')};",
                f"if (sg_kind != 3) {fk._put(f'sg_pl{i}', f'{ring}_c', own)}",
                f"const auto *const sg_hb{i} = &{fk._raw(s, 'sg_Xb', ['0'] * fk.m)};"]
        band += [f"sg_pl{i}[sg_e] = {fk.base.widened(s.name, f'{ring}_v[sg_k]')};",
                 f"{ring}_v[sg_k] = {fk._x_test(s, 'sg_Xb')} ? sg_hb{i}[{ring}_go[sg_k]] : "
                 f"{fk._zero(s.name)};"]
    return ["{"] + _indent(out + fk._band_each(lead, band)) + ["}"]

"""Printing a nest split at run time (``Kernel.split``, ``ir/zero_split``): the region where
its split body holds, and the two ways of running it.

CPUs split each row of the innermost dimension into three loops, its own body before and
after the region and the split body in it: the bounds partition the row, no loop branches,
each stays a SIMD loop. GPUs test each point (a thread computes one): the branch diverges
only in the warps that straddle the region's edge.
"""
from __future__ import annotations

import cgen as c


def _term(param: str, offset: int) -> str:
    return f"{param} + {offset}" if offset > 0 else f"{param} - {-offset}" if offset else param


def _fold(terms, pick: str) -> str | None:
    if not terms:
        return None   # no box bounds the dimension
    out = _term(*terms[0])
    for t in terms[1:]:
        out = f"{pick}({out}, {_term(*t)})"
    return out


def region(k) -> list[tuple[str, str]]:
    """Per dimension of ``k``, C text of the first and last index of its split region (the
    boxes of every array it reads, shrunk by the reads' offsets, intersected), or (None,
    None) where no box bounds it."""
    s = k.split
    return [(_fold(lo, "sg_maxl"), _fold(hi, "sg_minl")) for lo, hi in zip(s.lower, s.upper)]


def params(k) -> list[str]:
    """The box parameters the region of ``k`` reads."""
    s = k.split
    return sorted({p for terms in s.lower + s.upper for p, _ in terms})


def inside(k, names) -> str:
    """C test that the point (``names``: its index per dimension, C text; the outer ones
    alone test its row) lies in the region."""
    return " && ".join(f"{n} >= {lo} && {n} <= {hi}" for n, (lo, hi) in zip(names, region(k))
                       if lo is not None) or "1"


def rows(k, idx: str, z: str, zs: str, ze: str, own, split, pragmas) -> list:
    """Loops over ``z`` from ``zs`` to ``ze`` (C text): ``own`` outside the region, ``split``
    in it (``pragmas`` before each loop); the outer loops' indices are in scope."""
    lo, hi = region(k)[-1]
    lo, hi = (zs, ze) if lo is None else (lo, hi)
    first = f"sg_maxl({zs}, sg_minl({lo}, {ze} + 1))"
    outer = inside(k, [d.name for d in k.dims[:-1]])
    if outer != "1":
        first = f"({outer}) ? {first} : {ze} + 1"

    def loop(start, stop, body):
        return c.Module(pragmas + [c.For(f"{idx} {z} = {start}", f"{z} <= {stop}",
                                         f"{z} += 1", body)])
    return [c.Initializer(c.Value(f"const {idx}", "sg_za"), first),
            c.Initializer(c.Value(f"const {idx}", "sg_zb"),
                          f"sg_maxl(sg_za - 1, sg_minl({hi}, {ze}))"),
            c.Comment("the row before the zero box, in it, after it"),
            loop(zs, "sg_za - 1", own), loop("sg_za", "sg_zb", split), loop("sg_zb + 1", ze, own)]

"""Paired 16-bit loads on CUDA: a thread computes two consecutive points along the innermost
(contiguous) dimension and reads its 16-bit arrays as aligned ``__half2`` / ``__nv_bfloat162``
pairs, each widened once to a ``float2`` and shared by both points and all statements.

The pair of a thread starts at an even index ``sg_z`` (from the first domain point, which the
device layout puts on a 128-byte boundary, so every pair is 4-byte aligned). A read at
``z + k`` is, for point j, element ``sg_z + j + k``: component ``(j + k) % 2`` of the pair at
the even offset below it. Pairs reach at most two elements beyond what the stencil reads;
16-bit device rows keep that much free on each side (``device_layout.PAIR_PAD``). A 16-bit
result is stored as one pair when both points lie in the nest, else the one inside alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import cgen as c
import sympy

from ..common.cprinter import ctype

#: format -> (pair type, widening of a pair to float2, rounding of two floats to a pair)
PAIRS = {"float16": ("__half2", "__half22float2({})", "__floats2half2_rn({}, {})"),
         "bfloat16": ("__nv_bfloat162", "__bfloat1622float2({})",
                      "__floats2bfloat162_rn({}, {})")}
START = "sg_z"                    # the thread's first point along the innermost dimension
INSIDE = ("sg_in0", "sg_in1")     # whether each of its two points lies in the nest


@dataclass(frozen=True)
class Plan:
    """What a paired kernel reads and stores in pairs."""

    dim: sympy.Symbol        # the innermost loop counter
    reads: tuple             # the body's Indexed reads of 16-bit pitched arrays at dim + k
    stores: tuple            # positions in the body of the statements stored as pairs


def _offset(acc, dim):
    """``k`` of an access whose innermost index is ``dim + k`` and whose other indices do not
    name ``dim``; else None."""
    if any(dim in i.free_symbols for i in acc.indices[:-1]):
        return None
    k = sympy.expand(acc.indices[-1] - dim)
    return int(k) if k.is_Integer else None


def _eligible(be, k) -> bool:
    """Whether the kind of nest ``k`` may run paired (else the scalar kernel)."""
    n = len(getattr(k, "dims", ()))
    return be.pair_loads and not (
        k.is_sparse or k.sequential or k.guard is not None or be.options.debug or not n
        or k.fixed_at(n - 1) is not None or k.dims[-1] != be.program.dims[-1].symbol
        or be.slots(k).rereads)


def plan(be, k) -> Plan | None:
    """The pairs of grid nest ``k`` of backend ``be``; None where it runs one point a thread:
    no 16-bit pitched array, a 16-bit store off the point, or a nest ``_eligible`` refuses."""
    if not _eligible(be, k):
        return None
    dim, reads, stores = k.dims[-1], set(), []

    def paired(name):
        return name in be.stored and be.pitched(be.program.array(name))
    for i, a in enumerate(k.body):
        if not a.is_local and paired(a.lhs.base.name):
            if _offset(a.lhs, dim) != 0:
                return None
            stores.append(i)
        reads |= {acc for acc in a.rhs.atoms(sympy.Indexed)
                  if paired(acc.base.name) and _offset(acc, dim) is not None}
    if not (reads or stores):
        return None
    return Plan(dim, tuple(sorted(reads, key=sympy.default_sort_key)), tuple(stores))


def _loads(be, p: Plan):
    """The pair loads (declarations) and, per point, each paired read -> its component."""
    start = sympy.Symbol(START, integer=True)
    names, decls, points = {}, [], ({}, {})
    for acc in p.reads:
        k = _offset(acc, p.dim)
        for j in (0, 1):
            even = (j + k) - (j + k) % 2
            at = acc.base[tuple(acc.indices[:-1]) + (start + even,)]
            if at not in names:
                names[at] = f"sg_h{len(names)}"
                pair, widen, _ = PAIRS[be.stored[acc.base.name]]
                text = f"*(const {pair} *)&{be.printer.target(at)}"
                decls.append(c.Initializer(c.Value("const float2", names[at]),
                                           widen.format(text)))
            points[j][acc] = sympy.Symbol(f"{names[at]}.{'xy'[(j + k) % 2]}")
    return decls, points


def _point(be, k, p: Plan, j: int, reads: dict):
    """The statements at point ``j`` of the pair: locals, values of the paired stores, other
    stores (where the point lies in the nest). An outside point is moved onto the other one,
    so that its scalar reads stay where the nest reads."""
    out, used = [], set()
    for i, a in enumerate(k.body):
        rhs = a.rhs.xreplace(reads)
        used |= rhs.free_symbols | (set() if a.is_local or i in p.stores else a.lhs.free_symbols)
        rhs = be.expr(rhs)
        if a.is_local:
            out.append(c.Initializer(c.Value(f"const {ctype(a.dtype)}", a.lhs.name), rhs))
        elif i in p.stores:
            out.append(c.Assign(f"sg_v{i}_{j}", rhs))
        else:
            name = a.lhs.base.name
            out.append(c.If(INSIDE[j], c.Assign(be.printer.target(a.lhs),
                                                 be.printer.rounded(name, rhs))))
    if p.dim in used:
        here, moved = (START, f"{START} + 1") if j == 0 else (f"{START} + 1", START)
        out.insert(0, c.Initializer(c.Value("const sg_int", p.dim.name),
                                    f"{INSIDE[j]} ? {here} : {moved}"))
    return c.Block(out)


def _stores(be, k, p: Plan):
    """The paired results: one pair store where both points lie in the nest, else one."""
    if not p.stores:
        return []
    both, out = " && ".join(INSIDE), []
    for i in p.stores:
        lhs = k.body[i].lhs
        name = lhs.base.name
        pair, _, rounds = PAIRS[be.stored[name]]
        target = be.printer.target(lhs)
        one = be.printer.rounded(name, f"{INSIDE[0]} ? sg_v{i}_0 : sg_v{i}_1")
        out.append(c.If(both, c.Assign(f"*({pair} *)&{target}",
                                       rounds.format(f"sg_v{i}_0", f"sg_v{i}_1")),
                        c.Assign(target, one)))
    z = c.Initializer(c.Value("const sg_int", p.dim.name), f"{INSIDE[0]} ? {START} : {START} + 1")
    return [c.Block([z] + out)]


def body(be, k, p: Plan) -> list:
    """The statements of a thread of the paired kernel, after ``sg_z`` is declared."""
    start, stop = be.bounds(k, len(k.dims) - 1)
    loads, points = _loads(be, p)
    real = ctype(be.program.dtype)
    out = [c.Comment(f"two points along {p.dim.name} from the even {START}: 16-bit reads "
                     "in aligned pairs, widened once"),
           c.Initializer(c.Value("const bool", INSIDE[0]), f"{START} >= {start}"),
           c.Initializer(c.Value("const bool", INSIDE[1]), f"{START} + 1 <= {stop}")]
    out += loads
    out += [c.Value(real, f"sg_v{i}_{j}") for i in p.stores for j in (0, 1)]
    out += [_point(be, k, p, j, points[j]) for j in (0, 1)]
    return out + _stores(be, k, p)


def first(start: str, thread: str) -> str:
    """C text of a thread's ``sg_z``: ``start`` rounded down to even, two points a thread."""
    return f"(({start}) & ~(sg_int)1) + 2*(sg_base0 + {thread})"


def pair_count(points: str) -> str:
    """C text of the threads a row of ``points`` points needs (its start may be odd)."""
    return f"({points}) > 0 ? ({points} + 2)/2 : 0"

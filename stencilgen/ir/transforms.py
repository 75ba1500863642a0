"""Passes over indexed equations and loop nests: invariant arrays, temporaries' halos,
the per-kernel optimisations, and the flop and byte counts the performance report uses."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import sympy

from . import dtypes
from ..errors import HaloError
from .names import NameRegistry
from .nodes import ArrayParam, Assign, IndexedEq, Program, Stencils, element_size, real_type
from .accesses import access_map, shift_accesses
from .optimize import (InvariantHoister, Local, ScalarHoister, count_bytes, count_flops, cse,
                       simplify_stencil, _varies)


def _arrays_read(expr) -> set:
    return {a.base.name for a in expr.atoms(sympy.Indexed)}


def _recompute_cost(expr) -> int:
    """Instructions to recompute ``expr`` on a GPU, roughly: a correctly rounded division or
    square root is ~8, a sin/cos/exp with its range reduction ~60 (why an H200 kernel that
    recomputed four angles ran slower than one reading them from arrays), the rest one each."""
    calls = divisions = 0
    for n in sympy.preorder_traversal(expr):
        if isinstance(n, sympy.Pow) and (n.exp.is_negative or not n.exp.is_Integer):
            divisions += 1 + (not n.exp.is_Integer and n.exp != sympy.Rational(1, 2)
                              and n.exp != sympy.Rational(-1, 2))
        elif isinstance(n, sympy.Function) and not isinstance(n, Local):
            calls += 1
    return count_flops(expr) + 7 * divisions + 59 * calls


def _worth_storing(clusters: dict, marks: dict, rewritten: list, flops_per_byte: float) -> dict:
    """The clusters whose array is cheaper than recomputing them in the loop, on a target
    that does ``flops_per_byte`` operations in the time it reads a byte.

    Clusters computed from the same arrays go together (``sin(phi)`` and ``cos(phi)``): they
    are recomputed when the equations using them (taken as one nest) read fewer arrays for
    them than the arrays they replace, by enough bytes to outweigh the arithmetic. Recomputing
    one group can make another's inputs free, so the choice repeats until nothing changes."""
    own = {m.name for m in marks.values()}
    reads = [_arrays_read(r) - own for r in rewritten]
    groups: dict = {}
    for canon in clusters:
        groups.setdefault(frozenset(_arrays_read(canon)), []).append(canon)
    stored, changed = dict(groups), True
    while changed:
        changed = False
        for need, members in list(stored.items()):
            users = [i for i, r in enumerate(rewritten) if any(r.has(marks[m]) for m in members)]
            read = set().union(*(reads[i] for i in users))
            saved = flops_per_byte * 4 * (len(members) - len(need - read))
            if users and saved > sum(_recompute_cost(m) for m in members):
                for i in users:
                    reads[i] |= need
                del stored[need]
                changed = True
    return {canon: clusters[canon] for members in stored.values() for canon in members}


class _InLoop:
    """Stands for an array in ``InvariantHoister.rewrite``: the cluster itself at the shift
    asked for, recomputed in the loop."""

    def __init__(self, canon, dims):
        self.canon, self.dims = canon, tuple(dims)

    def __getitem__(self, index):
        shift = tuple(i - d for i, d in zip(index, self.dims))
        return Local(shift_accesses(self.canon, self.dims, shift))


def _unmark(expr, marks, table, dims):
    """``expr`` with each cluster placeholder replaced by ``table``'s stand-in (its array, or
    the cluster recomputed), at the same shift."""
    back = {m.name: table[canon] for canon, m in marks.items()}
    subs = {a: back[a.base.name][a.indices] for a in expr.atoms(sympy.Indexed)
            if a.base.name in back}
    return expr.xreplace(subs) if subs else expr


def _common_store(expr, arrays) -> str | None:
    """The 16-bit format of a sine or cosine of arrays stored in it (values in [-1, 1]:
    rounded like its argument); other invariants keep the arithmetic's type. Rounding two
    derived values on their own breaks identities a scheme relies on: SA-TTI's V**2/b and
    b/V**2 in float16 took its record 45x further from float32 (0.18 against 0.0039)."""
    if not isinstance(expr, (sympy.sin, sympy.cos)):
        return None
    found = {a.store for a in arrays if a.name in _arrays_read(expr)}
    return found.pop() if len(found) == 1 else None


def hoist_invariants(st: Stencils, names: NameRegistry, flops_per_byte: float = 0) -> Stencils:
    """Costly time-invariant subexpressions of the time loop -> arrays computed before it.

    ``flops_per_byte``: the target's arithmetic per byte of memory traffic; where it is
    nonzero (GPUs), the subexpressions cheaper to recompute than to read stay in the loop."""
    steps = [e for e in st.eqs if e.time_dependent and not e.sparse_kind]
    varying = {e.lhs.base.name for e in st.eqs if e.time_dependent}
    invariant = {a.name for a in st.arrays
                 if a.time_size is None and a.name not in varying and not a.sparse}
    # the symbols indexing made: real Constants are real, the time step and spacings positive
    scalars = {(sympy.Symbol(s.name) if dtypes.is_complex(s.dtype) else
                sympy.Symbol(s.name, real=True)) if s.role[0] == "constant"
               else sympy.Symbol(s.name, real=True, positive=True) for s in st.scalars}
    dims = st.loop_symbols
    hoister = InvariantHoister(dims, invariant, {a.name: a.halo for a in st.arrays}, scalars)
    hoister.scan([e.rhs for e in steps], [e.beyond(len(dims)) for e in steps])
    clusters = hoister.feasible()
    if not clusters:
        return st
    # one rewrite with a placeholder per cluster; each then becomes its array or itself
    marks = {canon: sympy.IndexedBase(f"sg_cluster{i}") for i, canon in enumerate(clusters)}
    marked = [hoister.rewrite(e.rhs, marks) for e in steps]
    stored = _worth_storing(clusters, marks, marked, flops_per_byte) if flops_per_byte \
        else clusters
    table = {canon: _InLoop(canon, dims) for canon in clusters if canon not in stored}
    arrays, new_eqs = [], []
    for canon, rng in stored.items():
        name = names.counted("inv")
        dtype = dtypes.value_type(canon, dtypes.program_types(st.arrays, st.scalars),
                                  real_type(st.dtype))
        arr = ArrayParam(name=name, user=name, dtype=dtype, ndim=len(dims), temporary=True,
                         halo=tuple(max(lo, hi) for lo, hi in rng),
                         store=_common_store(canon, st.arrays))
        arrays.append(arr)
        table[canon] = arr.base
        new_eqs.append(IndexedEq(arr.base[dims], canon, False, extent=rng))
    final = {e: _unmark(r, marks, table, dims) for e, r in zip(steps, marked)}
    eqs = tuple(replace(e, rhs=final[e]) if e in final else e for e in st.eqs)
    return replace(st, eqs=eqs + tuple(new_eqs), arrays=st.arrays + tuple(arrays))


def widen_temporaries(st: Stencils) -> Stencils:
    """Devito's nested derivatives: each temporary of an inner derivative computed over every
    point its readers reach, past the domain's edges too (from the halos of what it reads),
    so the outer stencil sees the inner derivative there, not zeros.

    Level by level from the outermost (a temporary read by a widened one widens further),
    the temporaries of one level share the widest range where what they read allows it:
    equations of one range share a nest (SA-TTI's fluxes, each read along its own axis,
    would otherwise take three nests and compute their common gradients three times)."""
    dims = st.loop_symbols
    temps = {a.name for a in st.arrays if a.temporary}
    writer = {e.lhs.base.name: i for i, e in enumerate(st.eqs)
              if e.lhs.base.name in temps and not e.sparse_kind}
    reads = [{} if e.sparse_kind else access_map([e.rhs], dims) for e in st.eqs]
    level = {}
    for i in reversed(range(len(st.eqs))):   # readers follow the temporaries they read
        own = level.get(st.eqs[i].lhs.base.name, 0) if not st.eqs[i].sparse_kind else 0
        for arr in reads[i]:
            if arr in writer:
                level[arr] = max(level.get(arr, 1), own + 1)
    eqs = list(st.eqs)
    for depth in sorted(set(level.values())):
        names = [t for t in level if level[t] == depth]
        need = {t: [[0, 0] for _ in dims] for t in names}
        for i, e in enumerate(eqs):
            beyond = e.beyond(len(dims))
            for arr in set(reads[i]) & set(names):
                for off in reads[i][arr]:
                    for r, o, (lo, hi) in zip(need[arr], off[-len(dims):], beyond):
                        r[0], r[1] = max(r[0], lo - o), max(r[1], hi + o)
        shared = [[max(need[t][j][k] for t in names) for k in (0, 1)] for j in range(len(dims))]
        if not all(_fits(st, eqs[writer[t]], reads[writer[t]], shared) for t in names):
            shared = None
        for t in names:
            rng = shared or need[t]
            e = eqs[writer[t]]
            _fits(st, e, reads[writer[t]], rng, strict=True)
            if any(lo or hi for lo, hi in rng):
                eqs[writer[t]] = replace(e, extent=tuple(tuple(r) for r in rng))
    return replace(st, eqs=tuple(eqs))


def _fits(st: Stencils, e, reads: dict, rng, strict: bool = False) -> bool:
    """Whether equation ``e``, computed over the domain widened by ``rng``, reads the user
    arrays inside their halos; ``strict``: a HaloError saying what to do where not (Devito
    leaves the points it cannot compute unwritten, with a warning)."""
    arrays = {a.name: a for a in st.arrays}
    for arr, offsets in reads.items():
        a = arrays[arr]
        if a.temporary:
            continue
        for off in offsets:
            for d, o, (lo, hi), h in zip(st.dims, off[-len(st.dims):], rng, a.halo):
                past = max(lo - o, hi + o)
                if past <= h:
                    continue
                if not strict:
                    return False
                raise HaloError(
                    f"{a.user} is read {past} points past the domain's edge along {d.user}, but "
                    f"its halo is {h} points: a nested derivative evaluates its inner "
                    f"derivative wherever the outer stencil reaches, past the edges too (as "
                    f"Devito does). Raise {a.user}'s space_order to at least {past + past % 2}, "
                    f"or pass Operator(..., nested='domain') to take the inner derivative as "
                    f"zero beyond the domain")
    return True


def size_temporaries(st: Stencils) -> Stencils:
    """Each array's reach, the farthest offset its readers reach per dimension (from the
    points they compute, a widened range included); a temporary's halo is its reach."""
    dims = st.loop_symbols
    reach = {a.name: list(a.halo if a.temporary and a.halo else (0,) * len(dims))
             for a in st.arrays if not a.sparse}
    for e in st.eqs:
        if e.sparse_kind:
            continue
        beyond = e.beyond(len(dims))
        for name, offsets in access_map([e.lhs, e.rhs], dims).items():
            for off in offsets if name in reach else ():
                space = off[-len(dims):]
                reach[name] = [max(r, lo - o, hi + o) for r, o, (lo, hi)
                               in zip(reach[name], space, beyond)]
    arrays = tuple(a if a.sparse else
                   replace(a, reach=tuple(reach[a.name]),
                           halo=tuple(reach[a.name]) if a.temporary else a.halo)
                   for a in st.arrays)
    return replace(st, arrays=arrays)


def _optimize_kernel(k, hoister: ScalarHoister, names: NameRegistry, real):
    """Store forwarding, expansion and factorisation, scalar hoisting, CSE; typed locals."""
    if k.is_sparse:
        return replace(k, expr=hoister(simplify_stencil(k.expr)))
    forward, rhss = {}, []
    for a in k.body:
        rhs = simplify_stencil(a.rhs.xreplace(forward))
        forward[a.lhs] = rhs
        rhss.append(hoister(rhs))
    temps, reduced = cse(rhss, names, hoister.types, real)
    body, moving = [], set(hoister.loop_symbols)
    for sym, value, dtype in temps:
        if not _varies(value, moving):
            hoister.prologue.append((sym, value, dtype))
        else:
            moving.add(sym)
            body.append(Assign(sym, value, dtype))
    stores = [a.lhs for a in k.body]
    if any(r.has(*stores[:j]) for j, r in enumerate(reduced) if j):
        # a later statement reads what an earlier one stores at this point: every right-hand
        # side, written in the values the point had before, is computed before any store
        values = [dtypes.typed_symbol(names.counted("r"), r, hoister.types, real)
                  for r in reduced]
        body += [Assign(v, r, dtype) for (v, dtype), r in zip(values, reduced)]
        reduced = [v for v, _ in values]
    body += [Assign(lhs, r) for lhs, r in zip(stores, reduced)]
    return replace(k, body=tuple(body))


def optimize_kernels(prog: Program, names: NameRegistry) -> Program:
    """Every kernel optimised; scalar-only subexpressions shared in one prologue."""
    loops = set(prog.loop_symbols) | {prog.time, prog.point}
    loops |= {s.symbol for s in prog.subsamplings if s.symbol is not None}
    real = real_type(prog.dtype)
    hoister = ScalarHoister(loops | {ti.symbol for ti in prog.time_indices}, names,
                            dtypes.program_types(prog.arrays, prog.scalars), real)
    # a nest storing integers computes in float64, as Devito prints it: (1.0/3.0)*f + 1 of
    # f = -9 is -1.9999999999999996, stored -1 (float32's 1/3 rounds up: -2)
    def kernel_real(k):
        ints = not k.is_sparse and any(np.dtype(prog.array(n).dtype).kind in "iu"
                                       for n in k.writes)
        return np.float64 if ints else real

    before = tuple(_optimize_kernel(k, hoister, names, kernel_real(k)) for k in prog.before)
    steps = tuple(_optimize_kernel(k, hoister, names, kernel_real(k)) for k in prog.steps)
    after = tuple(_optimize_kernel(k, hoister, names, kernel_real(k)) for k in prog.after)
    prologue = tuple(Assign(s, v, dtype) for s, v, dtype in hoister.prologue)
    return replace(prog, before=before, steps=steps, after=after, prologue=prologue)


def _sparse_access_map(exprs, dims, sparse_names):
    """Like ``access_map`` but sparse arrays keep their (time, point) indices as they are."""
    out: dict = {}
    grid_exprs = []
    for e in exprs:
        for a in e.atoms(sympy.Indexed) | ({e} if isinstance(e, sympy.Indexed) else set()):
            if a.base.name in sparse_names:
                out.setdefault(a.base.name, set()).add(tuple(a.indices[:-1]))
            else:
                grid_exprs.append(a)
    for name, offs in access_map(grid_exprs, dims).items():
        out.setdefault(name, set()).update(offs)
    return out


def _count_kernel(k, arrays):
    """A kernel with what it reads and writes, and its flops and compulsory bytes per point."""
    dims = k.dims
    if k.is_sparse:
        sparse = {a.name for a in arrays if a.sparse}
        reads = _sparse_access_map([k.expr], dims, sparse)
        writes = _sparse_access_map([k.target], dims, sparse)
        sizes = {a.name: (element_size(a), 0 if a.sparse else len(dims)) for a in arrays}
        corners = 2 ** len(dims)
        per_corner = count_flops(k.expr) + len(dims) + 1   # the weight product and the sum
        return replace(k, reads=reads, writes=writes, flops=corners * per_corner,
                       bytes=corners * count_bytes(reads, writes, sizes))
    guard = [k.guard] if k.guard is not None else []
    reads = access_map([a.rhs for a in k.body] + guard, dims)
    writes = access_map([a.lhs for a in k.body if not a.is_local], dims)
    sizes = {a.name: (element_size(a), len(dims)) for a in arrays}
    return replace(k, reads=reads, writes=writes, flops=sum(count_flops(a.rhs) for a in k.body),
                   bytes=count_bytes(reads, writes, sizes))


def count_kernels(prog: Program) -> Program:
    """Access summaries and per-point flops and bytes of every kernel."""
    return replace(prog, before=tuple(_count_kernel(k, prog.arrays) for k in prog.before),
                   steps=tuple(_count_kernel(k, prog.arrays) for k in prog.steps),
                   after=tuple(_count_kernel(k, prog.arrays) for k in prog.after))

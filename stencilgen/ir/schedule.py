"""Scheduling: which equations run before/inside the time loop, and which share a loop nest.

Two equations share a nest unless one reads, at a neighbouring point, an array the other
writes (flow or anti dependence): then the first must finish the whole grid before the
second starts.
"""
from __future__ import annotations

from dataclasses import replace

import sympy

from .names import NameRegistry
from .accesses import access_map
from .nodes import Assign, Kernel, Program, SparseKernel, SparseLocals, Stencils


def classify(st: Stencils) -> Stencils:
    """Equations that read what a time-dependent one writes become time-dependent too."""
    if not st.has_time_loop:
        return st
    flags = [e.time_dependent for e in st.eqs]
    changed = True
    while changed:
        changed = False
        varying = {e.lhs.base.name for e, f in zip(st.eqs, flags) if f}
        for i, e in enumerate(st.eqs):
            read = {a.base.name for r in reads(e) for a in r.atoms(sympy.Indexed)}
            if not flags[i] and read & varying:
                flags[i] = changed = True
    return replace(st, eqs=tuple(replace(e, time_dependent=f) for e, f in zip(st.eqs, flags)))


def reads(eq) -> list:
    """The expressions ``eq`` reads: its right-hand side and the condition at each point."""
    return [eq.rhs] if eq.guard is None else [eq.rhs, eq.guard]


def _space(offset, ndim):
    return offset[-ndim:]


def _conflict(group, eq, dims) -> bool:
    ndim = len(dims)
    written = access_map([g.lhs for g in group], dims)
    read = access_map([r for g in group for r in reads(g)], dims)
    new_reads = access_map(reads(eq), dims)
    new_write = access_map([eq.lhs], dims)
    for name, offs in new_reads.items():
        for w in written.get(name, ()):
            for o in offs:
                if o[:-ndim] == w[:-ndim] and any(_space(o, ndim)):
                    return True
    for name, offs in new_write.items():
        for w in offs:
            for r in read.get(name, ()):
                if r[:-ndim] == w[:-ndim] and any(_space(r, ndim)):
                    return True
    return False


def _depends(group, eq, dims) -> bool:
    """Whether ``eq`` touches (at any offset) an array slot that ``group`` writes, or writes
    one that ``group`` touches."""
    ndim = len(dims)

    def slots(table):
        return {(name, o[:-ndim]) for name, offs in table.items() for o in offs}
    g_writes = slots(access_map([g.lhs for g in group], dims))
    g_all = g_writes | slots(access_map([r for g in group for r in reads(g)], dims))
    e_writes = slots(access_map([eq.lhs], dims))
    e_all = e_writes | slots(access_map(reads(eq), dims))
    return bool(e_all & g_writes) or bool(e_writes & g_all)


def _self_reads(eq, dims) -> list:
    """The space offsets at which ``eq`` reads the array slot it writes, but at its point
    (and along a dimension it runs at one index, away from that index: not a point it
    writes)."""
    name = eq.lhs.base.name
    slot = access_map([eq.lhs], dims)[name].pop()[:-len(dims)]
    fixed = [i for i, f in enumerate(eq.fixed) if f is not None]
    return [o[-len(dims):] for o in access_map(reads(eq), dims).get(name, ())
            if o[:-len(dims)] == slot and any(o[-len(dims):])
            and not any(o[-len(dims):][i] for i in fixed)]


def sweep(eq, dims) -> tuple[int, ...]:
    """The direction along each dimension (+1 up, -1 down) of an in-place nest, as Devito
    chooses it: down where every in-place read is ahead along that dimension (so it reads
    the value already updated), else up."""
    offsets = _self_reads(eq, dims)
    return tuple(-1 if any(o[i] > 0 for o in offsets) and not any(o[i] < 0 for o in offsets)
                 else 1 for i in range(len(dims)))


def in_place(eq, dims) -> str | None:
    """Why ``eq`` must sweep its points in order, or None: it reads the array slot it writes
    at a neighbouring point (an in-place stencil such as ``Eq(f, f + f.laplace)``)."""
    name = eq.lhs.base.name
    if eq.reduces and not eq.outer_sum(len(dims)):
        summed = ", ".join(str(dims[i]) for i in eq.reduces)
        return (f"{name} is a sum over {summed} (an Inc into a function of fewer "
                f"dimensions), so its nest runs in order (where the sum is over the inner "
                f"loops, the outer ones in parallel)")
    offsets = sorted(_self_reads(eq, dims)) if _conflict([eq], eq, dims) else []
    if not offsets:
        return None
    order = ", ".join(f"{d} {'down' if s < 0 else 'up'}" for d, s in zip(dims, sweep(eq, dims)))
    return (f"{name} is read at offsets {', '.join(map(str, offsets))} of the points it "
            f"writes (an in-place stencil), so its nest runs sequentially ({order}), as Devito "
            "computes it; write the result into another Function to run in parallel")


def fuse(eqs, dims) -> list[list]:
    """Equations grouped into loop nests.

    Each equation joins the last nest it depends on unless it reads that nest's results at
    a neighbouring point (or the nest reads, at a neighbour, what it writes), in which case
    it goes to the nest after; equations without dependences join the first nest. So
    independent temporaries share one nest and their consumers the next. An in-place
    equation gets a nest of its own, which it shares with nothing.
    """
    groups: list[list] = []
    alone: set = set()
    for e in eqs:
        last = max((i for i, g in enumerate(groups) if _depends(g, e, dims)), default=-1)
        target = max(last, 0)
        for i in range(target, len(groups) + 1):
            if i == len(groups):
                if in_place(e, dims):
                    alone.add(i)
                groups.append([e])
                break
            g = groups[i]
            if (i not in alone and g[0].extent == e.extent and g[0].fixed == e.fixed
                    and g[0].anchors == e.anchors
                    and (g[0].when, g[0].guard) == (e.when, e.guard)
                    and not _conflict(g, e, dims)
                    and not in_place(e, dims) and _sums_agree(g, e, dims)):
                g.append(e)
                break
    return groups


def _sums_agree(g, e, dims) -> bool:
    """Whether ``e`` may join nest ``g`` given their sums over outer loops: one count of
    summed loops in a nest, and nothing in it reads what a sum writes but that sum (it would
    read a partial sum)."""
    group, n = list(g) + [e], len(dims)
    if len({x.outer_sum(n) for x in group} - {0}) > 1:
        return False
    summed = {x.lhs.base.name for x in group if x.outer_sum(n)}
    return not any(({a.base.name for a in x.rhs.atoms(sympy.Indexed)} -
                    ({x.lhs.base.name} if x.outer_sum(n) else set())) & summed for x in group)


def _runs(eqs) -> list:
    """Sparse operations keep their place; the runs of equations between them are fused."""
    runs, run = [], []
    for e in eqs:
        if e.sparse_kind:
            runs += [run, e]
            run = []
        else:
            run.append(e)
    return runs + [run]


def _kernels(eqs, dims, stage, point, counter) -> list:
    out = []
    for item in _runs(eqs):
        if not isinstance(item, list):
            out.append(SparseKernel(name=f"section{next(counter)}", kind=item.sparse_kind,
                                    sparse=item.sparse, point=point, dims=dims,
                                    target=item.lhs, expr=item.rhs, stage=stage,
                                    stagger=item.stagger, increment=item.increment,
                                    region=item.region, when=item.when))
            continue
        for group in fuse(item, dims):
            why = in_place(group[0], dims) if len(group) == 1 else None
            out.append(Kernel(name=f"section{next(counter)}", dims=dims,
                              body=tuple(Assign(e.lhs, e.rhs) for e in group),
                              extent=group[0].extent, fixed=group[0].fixed, stage=stage,
                              anchors=group[0].anchors,
                              sequential=why, when=group[0].when, guard=group[0].guard,
                              directions=sweep(group[0], dims) if why else (),
                              reduces=_inner_sum(group[0], dims),
                              outer=max(e.outer_sum(len(dims)) for e in group)))
    return out


def _inner_sum(eq, dims) -> int:
    """How many innermost loops an Inc into fewer dimensions sums over, where they are all
    it sums over (the outer ones then write distinct points: a CPU runs them in parallel);
    0 otherwise."""
    k = len(eq.reduces)
    return k if eq.reduces and set(eq.reduces) == set(range(len(dims) - k, len(dims))) \
        and k < len(dims) else 0


def sparse_locals(dims, names: NameRegistry) -> SparseLocals:
    """The locals of the sparse loops, named per dimension."""
    return SparseLocals(position=tuple(names.fresh(f"pos_{d.name}") for d in dims),
                        cell=tuple(names.fresh(f"i_{d.name}") for d in dims),
                        fraction=tuple(names.fresh(f"f_{d.name}") for d in dims),
                        corner=tuple(names.fresh(f"c_{d.name}") for d in dims),
                        weight=names.fresh("w"), total=names.fresh("acc"))


def schedule(st: Stencils, name: str, names: NameRegistry) -> Program:
    """Loop nests before and inside the time loop, in equation order."""
    dims, counter = st.loop_symbols, iter(range(10 ** 6))
    before = _kernels([e for e in st.eqs if not e.time_dependent], dims, "before", st.point,
                      counter)
    steps = _kernels([e for e in st.eqs if e.time_dependent], dims, "time", st.point, counter)
    has_sparse = any(e.sparse_kind for e in st.eqs)
    return Program(name=name, entry=names.cname("operator"), dtype=st.dtype, dims=st.dims,
                   time=st.time, point=st.point, arrays=st.arrays, scalars=st.scalars,
                   prologue=(), before=tuple(before), steps=tuple(steps), after=(),
                   time_indices=st.time_indices, has_time_loop=st.has_time_loop,
                   time_step=st.time_step, subsamplings=st.subsamplings,
                   sparse_locals=sparse_locals(st.dims, names) if has_sparse else None)

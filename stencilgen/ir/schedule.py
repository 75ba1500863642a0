"""Scheduling: which equations run before/inside the time loop, and which share a loop nest.

Two equations share a nest unless one reads, at a neighbouring point, an array the other
writes (flow or anti dependence): then the first must finish the whole grid before the
second starts.
"""
from __future__ import annotations

import sympy

from .accesses import access_map
from .nodes import POINT, Assign, Kernel, SparseKernel
from .optimize import (ScalarHoister, count_bytes, count_flops, cse, itemsize, simplify_stencil,
                       _varies)


def classify(eqs, has_time) -> None:
    """Mark equations that must run every time step (they touch time-varying data)."""
    if not has_time:
        return
    changed = True
    while changed:
        changed = False
        varying = {e.lhs.base.name for e in eqs if e.time_dependent}
        for e in eqs:
            if e.time_dependent:
                continue
            names = {a.base.name for a in e.rhs.atoms(type(e.lhs))}
            if names & varying:
                e.time_dependent = True
                changed = True


def _space(offset, ndim):
    return offset[-ndim:]


def _conflict(group, eq, dims) -> bool:
    ndim = len(dims)
    written = access_map([g.lhs for g in group], dims)
    read = access_map([g.rhs for g in group], dims)
    new_reads = access_map([eq.rhs], dims)
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
    g_all = g_writes | slots(access_map([g.rhs for g in group], dims))
    e_writes = slots(access_map([eq.lhs], dims))
    e_all = e_writes | slots(access_map([eq.rhs], dims))
    return bool(e_all & g_writes) or bool(e_writes & g_all)


def fuse(eqs, dims) -> list[list]:
    """Equations grouped into loop nests.

    Each equation joins the last nest it depends on unless it reads that nest's results at
    a neighbouring point (or the nest reads, at a neighbour, what it writes), in which case
    it goes to the nest after; equations without dependences join the first nest. So
    independent temporaries share one nest and their consumers the next.
    """
    groups: list[list] = []
    for e in eqs:
        last = max((i for i, g in enumerate(groups) if _depends(g, e, dims)), default=-1)
        target = max(last, 0)
        for i in range(target, len(groups) + 1):
            if i == len(groups):
                groups.append([e])
                break
            g = groups[i]
            if g[0].extent == e.extent and not _conflict(g, e, dims):
                g.append(e)
                break
    return groups


def build_kernel(name, group, dims, stage, names, hoister: ScalarHoister, arrays) -> Kernel:
    """A Kernel from fused equations: forwarding, factorisation, hoisting, CSE, counts."""
    forward = {}
    rhss = []
    for e in group:
        rhs = simplify_stencil(e.rhs.xreplace(forward))
        forward[e.lhs] = rhs
        rhss.append(hoister(rhs))
    temps, reduced = cse(rhss, names)
    body = []
    moving = set(hoister.loop_symbols)
    for sym, value in temps:
        if not _varies(value, moving):
            hoister.prologue.append((sym, value))
        else:
            moving.add(sym)
            body.append(Assign(sym, value))
    body += [Assign(e.lhs, r) for e, r in zip(group, reduced)]
    reads = access_map([a.rhs for a in body], dims)
    writes = access_map([e.lhs for e in group], dims)
    sizes = {a.name: (itemsize(a.dtype), len(dims)) for a in arrays}
    return Kernel(name=name, dims=tuple(dims), body=body, extent=group[0].extent,
                  reads=reads, writes=writes,
                  flops=sum(count_flops(a.rhs) for a in body),
                  bytes=count_bytes(reads, writes, sizes), stage=stage)


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


def build_sparse_kernel(name, eq, dims, stage, hoister: ScalarHoister, arrays) -> SparseKernel:
    """A SparseKernel from an injection or interpolation equation."""
    sparse_names = {a.name for a in arrays if a.sparse}
    rhs = hoister(simplify_stencil(eq.rhs))
    reads = _sparse_access_map([rhs], dims, sparse_names)
    writes = _sparse_access_map([eq.lhs], dims, sparse_names)
    corners = 2 ** len(dims)
    sizes = {a.name: (itemsize(a.dtype), 0 if a.sparse else len(dims)) for a in arrays}
    per_corner = count_flops(rhs) + len(dims) + 1   # the weight product and the accumulation
    return SparseKernel(name=name, kind=eq.sparse_kind, sparse=eq.sparse, point=POINT,
                        dims=tuple(dims), target=eq.lhs, expr=rhs, flops=corners * per_corner,
                        bytes=corners * count_bytes(reads, writes, sizes), stage=stage,
                        reads=reads, writes=writes)

"""Split grids (MPI): which halos the ranks exchange, and before which kernel.

A kernel reading an array at a neighbour point along a split dimension needs, near its
block's edge, values that the next rank computed. Before each such kernel the halo of the
slot it reads is filled from the neighbours in the directions its reads reach (faces, and
edges or corners only where one read is off-centre along two split dimensions at once).
Arrays the program never writes are exchanged once, when an apply starts (``before=None``);
hoisted invariants computed over a widened range fill their own halos and need none.
"""
from __future__ import annotations

from dataclasses import replace

from ..errors import InvalidOperator
from .nodes import Exchange, Program


def _direction(offsets, split) -> tuple[int, ...]:
    return tuple((o > 0) - (o < 0) if s else 0 for o, s in zip(offsets, split))


def _reach(prog: Program, split) -> tuple[dict, dict]:
    """array -> time index -> kernel name -> directions its reads reach into; and array ->
    the farthest its reads reach along each split dimension (the halo points exchanged)."""
    n, out, width = len(prog.dims), {}, {}
    for k in prog.kernels:
        if k.is_sparse:   # a sparse point reads only the corners its rank owns
            continue
        for name, accesses in k.reads.items():
            for acc in accesses:
                time = acc[0] if len(acc) > n else None
                for offsets in _extremes(acc[-n:], k.widened):
                    d = _direction(offsets, split)
                    if not any(d):
                        continue
                    out.setdefault(name, {}).setdefault(time, {}).setdefault(k.name, set()).add(d)
                    w = width.get(name, (0,) * n)
                    width[name] = tuple(max(a, abs(o)) if s else 0
                                        for a, o, s in zip(w, offsets, split))
    return out, width


def _extremes(offsets, widened) -> list[tuple[int, ...]]:
    """The offsets a read at ``offsets`` reaches from the corners of a nest widened by
    ``widened`` ((lo, hi) per dimension; the point itself where not widened)."""
    out = [()]
    for o, (lo, hi) in zip(offsets, widened):
        ends = {o - max(lo, 0), o + max(hi, 0)}
        out = [prev + (e,) for prev in out for e in sorted(ends)]
    return out


def _self_filled(prog: Program, name: str, split) -> bool:
    """Whether every writer of ``name`` computes it before the time loop over a range
    widened as far as any kernel reads it (a hoisted invariant): its halo is its own."""
    writers = [k for k in prog.kernels if name in k.writes]
    if not writers or any(k not in prog.before or k.is_sparse for k in writers):
        return False
    n = len(prog.dims)
    need = [(0, 0)] * n
    for k in prog.kernels:
        for acc in k.reads.get(name, ()):
            need = [(max(lo, -o), max(hi, o)) for (lo, hi), o in zip(need, acc[-n:])]
    return all(all(w[0] >= lo and w[1] >= hi for w, (lo, hi), s in zip(k.widened, need, split)
                   if s) for k in writers)


def _check(prog: Program, split) -> None:
    for a in prog.arrays:
        if any(f and s for f, s in zip(a.factors, split)):
            raise InvalidOperator(
                f"Operator `{prog.name}`: {a.user} is on a ConditionalDimension with a factor "
                "of a dimension split over MPI ranks; such a function cannot be split: run "
                "without MPI, or subsample time instead")
    for k in prog.kernels:
        if getattr(k, "sequential", None):
            raise InvalidOperator(
                f"Operator `{prog.name}`: {k.name} must run point after point ({k.sequential}); "
                "such a nest cannot be split over MPI ranks; write the update into another "
                "field (e.g. u.forward) or run without MPI")


def plan(prog: Program, split: tuple[bool, ...] | None, names) -> Program:
    """``prog`` for a grid split along the dimensions ``split`` marks (None: not split): each
    dimension's first-index parameter, the grid arrays marked split, the exchanges."""
    if split is None:
        return prog
    _check(prog, split)
    dims = tuple(replace(d, first=names.fresh(f"{d.user}_first")) for d in prog.dims)
    arrays = tuple(replace(a, split=not (a.sparse or a.axes)) for a in prog.arrays)
    written = {name for k in prog.kernels for name in k.writes}
    reach, width = _reach(prog, split)
    at_start, hooks = [], {}
    for name, by_time in sorted(reach.items(), key=lambda kv: kv[0]):
        arr = next(a for a in arrays if a.name == name)
        if arr.axes:
            raise InvalidOperator(
                f"Operator `{prog.name}`: {arr.user} spans only some dimensions of the grid "
                "and is read at neighbour points along a split one; build it on the grid")
        if name not in written:
            dirs = set().union(*(ds for per in by_time.values() for ds in per.values()))
            at_start.append((name, None, tuple(sorted(dirs)), width[name]))
            continue
        if _self_filled(prog, name, split):
            continue
        for time, per_kernel in by_time.items():
            for kname, dirs in per_kernel.items():
                hooks.setdefault(kname, []).append((name, time, tuple(sorted(dirs)),
                                                    width[name]))
    exchanges = [Exchange(0, None, tuple(at_start))] if at_start else []
    for k in prog.kernels:
        if k.name in hooks:
            exchanges.append(Exchange(len(exchanges), k.name, tuple(hooks[k.name])))
    return replace(prog, dims=dims, arrays=arrays, split=tuple(split),
                   exchanges=tuple(exchanges), exchange=names.fresh("exchange"),
                   regions=names.fresh("regions"))

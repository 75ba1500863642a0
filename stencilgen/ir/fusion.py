"""Fusion of a nest that only computes temporaries into the nest that reads them (GPUs).

Two time-step nests where the first writes temporaries that only the second reads, each at
bounded offsets (SA-TTI's fluxes: the x-fluxes along x, the y-fluxes along y...), become one
nest that streams along the outermost dimension (2.5D, Micikevicius 2009): a thread block owns
a tile of the inner dimensions and walks the outer one. The producer runs ``lag`` planes ahead
of the consumer, on the tile and on the halo its shared temporaries are read over (each along
one inner dimension). A temporary the consumer reads only along the streamed dimension stays in
a private ring of the thread's own column (a queue along it); one read across the tile lives in
a shared ring of planes. The producer's stencil inputs are staged: a shared ring of the planes
their reads span (and one more) over the tile and the halo the reads reach (reads must lie on
the axes). Everything lives in shared memory, so a thread's registers do not grow with the
stencil's reach and the plane loop need not be unrolled.

The pass decides and records; the CUDA backend prints. Where the pattern does not hold or the
tile does not fit the target's limits, the nests stay apart and the log says why.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import sympy

from .. import logger as log
from . import steps
from .nodes import ArrayParam, Assign, Kernel, Program, element_size, real_type
from .optimize import Literal, Local, count_bytes


@dataclass(frozen=True)
class OnChip:
    """A temporary of a fused nest kept on chip: in a ``queue`` of the thread's own column
    (read at no inner offset: a private ring, a slot a tile thread) or in a ``shared`` ring of
    planes over the tile."""

    name: str
    place: str                            # "queue" or "shared"
    reach: tuple[int, int]                # streamed offsets the consumer reads, lowest, highest
    halo: tuple[tuple[int, int], ...]     # per inner dimension: points computed before, after
    depth: int                            # planes kept (a shared ring: one more than read)
    store: str | None = None              # the 16-bit format unfused values were stored in:
                                          # on chip they are rounded to it the same way


@dataclass(frozen=True)
class Staged:
    """One time slot of an array the producer reads at neighbours: a shared ring of the planes
    over ``reach`` along the streamed dimension and one more, each over the tile and ``halo``
    (each value read from global memory once a block). ``queued``: the reads along the
    streamed dimension (all at the thread's own column: reads lie on the axes) come from a
    register queue of the column, and the ring holds the plane read across (offset 0) and the
    one stored beside it."""

    name: str
    slot: sympy.Expr | None               # the time index of the slot (None: no time axis)
    reach: tuple[int, int]                # streamed offsets the producer reads (0 included)
    halo: tuple[tuple[int, int], ...]     # per inner dimension, before and after the tile
    reads: tuple[tuple[int, int], ...]    # per inner dimension, the lowest and highest offset
                                          # read: a plane holds the values of the points the
                                          # producer's reads reach, zeros elsewhere
    queued: bool = False

    @property
    def depth(self) -> int:
        """Planes the producer's reads span."""
        return self.reach[1] - self.reach[0] + 1

    @property
    def ring(self) -> int:
        """Planes in the shared ring: those the reads span (queued: the one read across) and
        the one stored beside them."""
        return 2 if self.queued else self.depth + 1

    @property
    def queue(self) -> int:
        """Registers of the column's queue: the planes the reads span and, where none reads
        ahead, the next one (an iteration stores the plane after its own into the ring)."""
        return max(self.reach[1], 1) - self.reach[0] + 1 if self.queued else 0


@dataclass(frozen=True)
class HaloPart:
    """The producer statements computing ``temps`` alone, run on the halo around the tile."""

    temps: tuple[str, ...]
    halo: tuple[tuple[int, int], ...]
    body: tuple[Assign, ...]


@dataclass(frozen=True)
class Fusion:
    """How a fused nest runs: its producer, the lag, what lives where, the tiles that fit."""

    producer: Kernel
    lag: int                              # planes the producer runs ahead of the consumer
    onchip: tuple[OnChip, ...]
    staged: tuple[Staged, ...]
    parts: tuple[HaloPart, ...]
    bands: tuple[tuple[int, int], tuple[int, int]]   # the halo rows and (3D) columns the
                                          # producer runs on beyond the tile (producer_bands)
    tiles: tuple[tuple[int, ...], ...]    # candidate tiles of the inner dimensions (innermost
                                          # last) that fit, the default first
    shared: tuple[int, ...]               # shared-memory bytes a block, per tile
    recompute: tuple[float, ...]          # producer statements run a point, per tile (1: none
                                          # recomputed)
    pair: int = 1                         # points a thread along the innermost (``_pairable``)
    threads: tuple[int, ...] = ()         # threads a block, per tile (``producer_threads``)
    interleave: bool = False              # rings of one geometry interleaved in pairs
                                          # (``Limits.interleave``, the printer's ``interleaved``)


@dataclass(frozen=True)
class Limits:
    """What a target's fused nests may use (the backend's figures): shared memory a block in
    bytes, producer points a plane (a block's threads), and per number of inner dimensions
    the candidate tiles (innermost last), the most favoured first."""

    shared_bytes: int
    tiles: dict
    points: int = 1024    # threads a block
    pair: int = 1         # points a thread may compute along the innermost of a 3D nest
    warp: int = 1         # the halo columns' threads are rounded up to a multiple of it
    step_tiles: dict | None = None   # the tiles of two-step passes (``ir/steps``; None: tiles)
    # rings of one geometry interleaved two by two, a pair of each at a time (3D nests computing
    # two points a thread): a 128-bit shared load reads both members' pairs
    interleave: bool = False
    # shared memory an SM holds (0: unknown). A paired block whose rings leave no room for a
    # second block on its SM runs a point a thread instead: twice the warps in the one block
    # (``_fuse``, ``_blocks_fit``)
    sm_shared_bytes: int = 0
    block_reserve: int = 0   # shared bytes the hardware keeps a block besides its own
    # a staged nest's inputs (``_stage``, and its two-step pass) read along the streamed
    # dimension from a register queue of the thread's column (``Staged.queued``): rings of two
    # planes, no ring addressing for those reads. A fusion of temporaries keeps its rings
    # (SA-TTI's fused kernel already holds 128 registers a thread)
    queue: bool = False


def _span(offsets) -> tuple[int, int]:
    return min(offsets), max(offsets)


#: what a pair of points may compute: sums, products, powers and these functions (the
#: printer's pair type has them); anything else (conditions, 16-bit rounding...) runs singly
_PAIR_FUNCTIONS = (sympy.sin, sympy.cos, sympy.tan, sympy.exp, sympy.log, sympy.Abs)


def _pairable(prog: Program, k1, k2, limits: Limits) -> int:
    """Points a thread computes along the innermost: ``limits.pair`` in 3D float32 nests whose
    statements use only what the pair type has, else 1. A pair reads its neighbours as aligned
    pairs of values (an odd offset: the middle of two), so the halos along the innermost grow
    (``_pair_halo``)."""
    if limits.pair < 2 or len(k2.dims) != 3 or np.dtype(prog.dtype) != np.float32:
        return 1
    if any(t[-1] % limits.pair for t in limits.tiles.get(2, ())):
        return 1
    if any(prog.array(t).store for t in k1.writes):
        return 1   # temporaries rounded to a 16-bit format: the rounding is a point's
    for a in k1.body + k2.body:
        if a.is_local and np.dtype(a.dtype) != np.float32:
            return 1
        for node in sympy.preorder_traversal(a.rhs):
            if isinstance(node, (sympy.Indexed, sympy.IndexedBase, sympy.Idx, Local, Literal)) \
                    or node.is_Atom or isinstance(node, (sympy.Add, sympy.Mul, sympy.Pow,
                                                         sympy.Tuple) + _PAIR_FUNCTIONS):
                continue
            return 1
    return limits.pair


def _pair_halo(around: tuple[int, int], reads: tuple[int, int]) -> tuple[int, int]:
    """The halo along the innermost that pairs (first point at an even column, from
    ``-around[0]`` to past the tile by ``around[1]``) reading at offsets ``reads`` touch: a
    read at an even offset is one pair, at an odd one the two pairs around it; rounded up to
    even, so every pair in the ring is aligned."""
    lo = around[0] - reads[0] + (reads[0] % 2)
    hi = around[1] + reads[1] + (reads[1] % 2)
    return max(0, lo + lo % 2), max(0, hi + hi % 2)


def _slice(body, temps) -> tuple[Assign, ...]:
    """The statements of ``body`` that compute the stores to ``temps``: the stores and the
    locals they use, in order."""
    local = {a.lhs: a for a in body if a.is_local}
    stores = [a for a in body if not a.is_local and a.lhs.base.name in temps]
    need, todo = set(), [s.rhs for s in stores]
    while todo:
        for sym in todo.pop().free_symbols & set(local) - need:
            need.add(sym)
            todo.append(local[sym].rhs)
    return tuple(a for a in body if (a.is_local and a.lhs in need) or a in stores)


def _refusal(prog: Program, k1, k2, others) -> str | None:
    """Why producer ``k1`` and consumer ``k2`` cannot fuse, or None."""
    for k in (k1, k2):
        if k.is_sparse or k.sequential:
            return f"{k.name} is {'a sparse loop' if k.is_sparse else 'sequential'}"
        if k.outer:
            return f"{k.name} sums over its outer loops"
        if k.when is not None or k.guard is not None:
            return f"{k.name} runs under a condition"
        # a producer may be widened (its temporaries past the domain's edges, Devito's
        # nested derivatives): the fused kernel computes them there too
        if any(f is not None for f in k.fixed) or any(k.anchors or ()) or \
                (k is k2 and any(lo or hi for lo, hi in k.widened)) or \
                any(lo < 0 or hi < 0 for lo, hi in k.widened):
            return f"{k.name} does not run over the whole domain"
    if k1.dims != k2.dims:
        return "the nests loop over different dimensions"
    temps = set(k1.writes)
    if temps & set(k1.reads):
        return f"{k1.name} reads a temporary it writes"
    arrays = {a.name: a for a in prog.arrays}
    if not temps or any(not arrays[t].temporary or arrays[t].time_size is not None
                        for t in temps):
        return f"{k1.name} writes arrays other than temporaries"
    if not temps <= set(k2.reads) or temps & set(k2.writes):
        return f"{k2.name} does not only read every temporary of {k1.name}"
    if any(t in k.reads or t in k.writes for k in others for t in temps):
        return f"another nest reads a temporary of {k1.name}"
    for name in set(k1.reads) & set(k2.writes):
        slots_read = {o[0] for o in k1.reads[name]} if arrays[name].time_size else {None}
        written = {o[0] for o in k2.writes[name]} if arrays[name].time_size else {None}
        # a ring's slot symbols are distinct slots, a saved field's ``time + c`` distinct
        # steps: others (no time axis, a subsampled index) may be the same element
        kinds = {_slot_kind(s, prog.time) for s in slots_read | written}
        if slots_read & written or None in kinds or len(kinds) > 1:
            return f"{k2.name} writes {name}, which {k1.name} reads"
    return None


def _slot_kind(index, time) -> str | None:
    """"step" for a time index ``time + c`` (a saved field's), "slot" for a ring's slot
    symbol, else None."""
    if index is None:
        return None
    if sympy.expand(index - time).is_Integer:
        return "step"
    return "slot" if index.is_Symbol else None


def _onchip(k1, k2, arrays, pair: int = 1) -> tuple[tuple[OnChip, ...], int]:
    """Where each temporary lives, and the lag: the farthest streamed offset read ahead. With
    pairs, a shared temporary read along the innermost holds the columns the tile's pairs
    touch (``_pair_halo``), all computed by the producer."""
    ndim = len(k2.dims)
    found = []
    for t in sorted(k1.writes):
        offs = k2.reads[t]
        reach = _span([o[0] for o in offs])
        halo = tuple((max(0, -min(o[j] for o in offs)), max(0, max(o[j] for o in offs)))
                     for j in range(1, ndim))
        if pair > 1 and any(halo[-1]):
            reads = _span([o[-1] for o in offs])
            halo = halo[:-1] + (_pair_halo((0, 0), reads),)
        place = "queue" if all(h == (0, 0) for h in halo) else "shared"
        found.append((t, place, reach, halo))
    lag = max(0, max(r[1] for _, _, r, _ in found))
    # the consumer runs lag + 1 planes behind the producer (one barrier a plane): a queue
    # spans the planes it reads; a shared ring one plane more, the one being produced
    return tuple(OnChip(t, p, r, h, lag - r[0] + (1 if p == "queue" else 2), arrays[t].store)
                 for t, p, r, h in found), lag


def _staged(k1, onchip, arrays, pair: int = 1, queue: bool = False) -> tuple[Staged, ...] | str:
    """The producer's inputs read at neighbours, with the halo its computation needs: the
    widest halo of a shared temporary plus the reads' own offsets (with pairs, along the
    innermost, the columns the pairs touch: ``_pair_halo``)."""
    ndim = len(k1.dims)
    around = [(max((t.halo[j][0] for t in onchip), default=0),
               max((t.halo[j][1] for t in onchip), default=0)) for j in range(ndim - 1)]
    out = []
    for name in sorted(k1.reads):
        a = arrays[name]
        offs = k1.reads[name]
        lead = 1 if a.time_size is not None else 0
        by_slot: dict = {}
        for o in offs:
            by_slot.setdefault(o[0] if lead else None, []).append(o[lead:])
        for slot, space in sorted(by_slot.items(), key=lambda kv: str(kv[0])):
            if all(not any(s) for s in space):
                continue   # read at the point only: from global memory
            if a.sparse or a.axes or a.ndim != ndim:
                return f"{k1.name} reads {a.user} at neighbours but it is not a grid array"
            if any(s[0] and any(s[1:]) for s in space):
                return f"{k1.name} reads {a.user} off the axes (along {k1.dims[0]} and an " \
                       f"inner dimension at once)"
            halo = tuple((around[j][0] + max(0, -min(s[j + 1] for s in space)),
                          around[j][1] + max(0, max(s[j + 1] for s in space)))
                         for j in range(ndim - 1))
            reads = tuple(_span([s[j + 1] for s in space]) for j in range(ndim - 1))
            if pair > 1:
                halo = halo[:-1] + (_pair_halo(around[-1], reads[-1]),)
            out.append(Staged(name, slot, _span([0] + [s[0] for s in space]), halo, reads,
                              queue))
    return tuple(out)


def shared_bytes(tile, onchip, staged, itemsize: int) -> int:
    """Shared memory a block of ``tile`` uses: the staged inputs' rings (the planes their
    reads span and one more), the shared temporaries' rings and the private queues (a slot a
    tile point)."""
    def plane(halo):
        n = 1
        for size, (lo, hi) in zip(tile, halo):
            n *= size + lo + hi
        return n
    total = sum(s.ring * plane(s.halo) for s in staged)
    total += sum(t.depth * plane(t.halo) for t in onchip if t.place == "shared")
    total += sum(t.depth * plane(((0, 0),) * len(tile)) for t in onchip if t.place == "queue")
    return total * itemsize


def _parts(k1, onchip) -> tuple[HaloPart, ...]:
    groups: dict = {}
    for t in onchip:
        if t.place == "shared":
            groups.setdefault(t.halo, []).append(t.name)
    return tuple(HaloPart(tuple(ts), halo, _slice(k1.body, set(ts)))
                 for halo, ts in sorted(groups.items()))


def producer_bands(parts, m: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The halo the producer runs on beyond the tile: (before, after) rows along the first
    inner dimension (the parts read across it), and (before, after) columns along the
    innermost in 3D (those read across that), the widest part's each."""
    def widest(halos):
        return max((h[0] for h in halos), default=0), max((h[1] for h in halos), default=0)
    # a part read across both (a two-step pass's next level, ``_on_axes``) runs on both
    return widest([p.halo[0] for p in parts]), widest([p.halo[1] for p in parts if m == 2])


def producer_threads(tile, bands, pair: int = 1, warp: int = 1) -> int:
    """Threads the producer runs on a plane with halo ``bands`` (``producer_bands``): one a
    point, in 3D one a ``pair`` of points along the innermost (the bands then hold whole
    pairs): the tile with its halo rows, whole, then the halo columns of the tile's rows,
    rounded up to a multiple of ``warp``."""
    (l0, h0), (l1, h1) = bands
    if len(tile) == 1:
        return tile[0] + l0 + h0
    columns = tile[0] * (l1 + h1) // pair
    return (tile[0] + l0 + h0) * (tile[1] // pair) + -(-columns // warp) * warp


def _recompute(tile, k1, parts) -> float:
    """Producer statements run a tile point, the halo parts included (1.0: none repeated)."""
    area = 1
    for size in tile:
        area *= size
    extra = 0
    for p in parts:   # the bands beside the tile along each dimension (a cross: no corners)
        for j, (lo, hi) in enumerate(p.halo):
            extra += (lo + hi) * area // tile[j] * len(p.body)
    return 1 + extra / (area * max(len(k1.body), 1))


def _on_axes(k2, temps) -> bool:
    """Whether ``k2`` reads each of ``temps`` along one inner dimension at a time (a star:
    the producer then runs on a cross around the tile, no corners)."""
    return all(sum(1 for q in o[1:] if q) <= 1 for t in temps for o in k2.reads[t])


def _blocks_fit(shared: int, blocks: int, limits: Limits) -> bool:
    """Whether ``blocks`` blocks of ``shared`` bytes fit an SM's shared memory (unknown: yes)."""
    if not limits.sm_shared_bytes:
        return True
    return blocks * (shared + limits.block_reserve) <= limits.sm_shared_bytes


def _layout(prog: Program, k1, k2, limits: Limits, pair: int):
    """(onchip, lag, staged, parts, bands, [(tile, shared bytes)...]) of ``k1`` fused into
    ``k2`` at ``pair`` points a thread, the tiles that fit a block first, or why none can.

    ``_fuse`` tries a pair first; where the favoured tile's rings keep its SM to one block,
    a point a thread, if that tile's threads still fit a block: the fused SA-TTI kernel is
    bound by latency at one block an SM, and on an H200 the 27 warps of a point a thread ran
    it 7.6 % faster than the 14 of pairs, while the variable-density program, two paired
    blocks an SM, lost 17 % at a point a thread (docs/performance.md, issue 63)."""
    inner = len(k2.dims) - 1
    arrays = {a.name: a for a in prog.arrays}
    onchip, lag = _onchip(k1, k2, arrays, pair)
    staged = _staged(k1, onchip, arrays, pair, limits.queue)
    if isinstance(staged, str):
        return staged
    parts = _parts(k1, onchip)
    across = [p for p in parts if sum(1 for h in p.halo if any(h)) > 1
              and not _on_axes(k2, p.temps)]
    if across:
        return f"{', '.join(across[0].temps)} would be read across two inner dimensions"
    bands = producer_bands(parts, inner)
    size = np.dtype(real_type(prog.dtype)).itemsize   # rings hold values widened
    fit = [(t, shared_bytes(t, onchip, staged, size)) for t in limits.tiles[inner]]
    def threads(tile):
        return producer_threads(tile, bands, pair, limits.warp)
    fit = [(t, b) for t, b in fit if threads(t) <= limits.points]
    if not fit:
        fewest = min(threads(t) for t in limits.tiles[inner])
        return f"its producer would run on {fewest} threads a plane for the smallest tile, " \
               f"more than the {limits.points} a block may have"
    fit = [(t, b) for t, b in fit if b <= limits.shared_bytes]
    if not fit:
        smallest = min(shared_bytes(t, onchip, staged, size) for t in limits.tiles[inner])
        return f"its shared memory, {smallest} bytes a block for the smallest tile, exceeds " \
               f"the {limits.shared_bytes} a block may use"
    return onchip, lag, staged, parts, bands, fit


def _fuse(prog: Program, k1, k2, limits: Limits):
    """The fused kernel of ``k1`` into ``k2``, or the reason it cannot be."""
    inner = len(k2.dims) - 1
    if not limits.tiles.get(inner):
        return f"no tiles for {inner + 1}-dimensional nests"
    arrays = {a.name: a for a in prog.arrays}
    if any(np.dtype(arrays[n].dtype).kind == "c" for n in k1.writes):
        return "its producer computes complex values (the rings hold real ones)"
    pair = _pairable(prog, k1, k2, limits)
    plan = _layout(prog, k1, k2, limits, pair)
    if pair > 1 and not isinstance(plan, str) and not _blocks_fit(plan[-1][0][1], 2, limits):
        single = _layout(prog, k1, k2, limits, 1)
        if not isinstance(single, str) and single[-1][0][0] == plan[-1][0][0]:
            plan, pair = single, 1   # the favoured tile still fits a block
    if isinstance(plan, str):
        return plan
    onchip, lag, staged, parts, bands, fit = plan
    def threads(tile):
        return producer_threads(tile, bands, pair, limits.warp)
    reads = {n: set(o) for n, o in k1.reads.items()}
    for n, o in k2.reads.items():
        if n not in k1.writes:
            reads.setdefault(n, set()).update(o)
    sizes = {a.name: (element_size(a), len(k2.dims)) for a in prog.arrays}
    fusion = Fusion(k1, lag, onchip, staged, parts, bands, tuple(t for t, _ in fit),
                    tuple(b for _, b in fit), tuple(_recompute(t, k1, parts) for t, _ in fit),
                    pair, tuple(threads(t) for t, _ in fit),
                    interleave=limits.interleave and pair == 2)
    # a fused nest runs its own body everywhere (no run-time split; a staged nest keeps its
    # split for its loads alone: ``_stage``)
    return replace(k2, fusion=fusion, reads=reads, writes=dict(k2.writes), split=None,
                   flops=k1.flops + k2.flops, bytes=count_bytes(reads, k2.writes, sizes))


_WHERE = {"queue": "a private queue", "shared": "a shared ring"}


def _staging(prog: Program, k) -> tuple[Program, Kernel, Kernel] | str:
    """Grid nest ``k`` as a producer and a consumer for staging, or why not: the producer
    computes each value ``k`` stores into a temporary of its own, read at the point, from
    its inputs; the consumer stores them. Fused, the inputs ``k`` reads at neighbours come
    from shared rings of planes, each value loaded (and widened from 16 bits) once a block,
    not once a stencil tap (issue 51). The program returned holds the temporaries."""
    if len(k.dims) != 3:
        return f"a {len(k.dims)}D nest (staging streams a 3D one along its outermost loop)"
    if any(d.exact for d in prog.dims):
        return "it spans a batch's copies (its stencils reach along no loop to stream)"
    lead = {n: 1 if prog.array(n).time_size is not None else 0 for n in k.reads}
    if not any(any(o[lead[n]:]) for n, offs in k.reads.items() for o in offs):
        return "it reads nothing at neighbours"
    temps, produce, consume = [], {}, []
    zero = (0,) * len(k.dims)
    for a in k.body:
        if a.is_local:
            continue
        target = prog.array(a.lhs.base.name)
        t = ArrayParam(name=f"sg_staged{len(temps)}_{k.name}", user=k.name, dtype=target.dtype,
                       ndim=len(k.dims), temporary=True, halo=zero)
        ref = t.base[tuple(k.dims)]
        temps.append(t)
        produce[a] = Assign(ref, a.rhs)
        consume.append(Assign(a.lhs, ref))
    names = [t.name for t in temps]
    producer = replace(k, name=f"{k.name}_staged", body=tuple(produce.get(a, a) for a in k.body),
                       reads=dict(k.reads), writes={n: {zero} for n in names}, split=None,
                       section=None)
    consumer = replace(k, body=tuple(consume), reads={n: {zero} for n in names},
                       writes=dict(k.writes), flops=0, split=None)
    return replace(prog, arrays=prog.arrays + tuple(temps)), producer, consumer


def _stage(prog: Program, k, others, limits: Limits):
    """``k`` fused with its own staging producer (``_staging``), or why not."""
    split = _staging(prog, k)
    if isinstance(split, str):
        return split
    prog2, k1, k2 = split
    fused = _refusal(prog2, k1, k2, others) or _fuse(prog2, k1, k2, limits)
    # the nest's run-time split kept: the fused printer skips the reads of its zero arrays
    # inside their boxes (one body everywhere, the loads predicated off)
    return fused if isinstance(fused, str) else replace(fused, split=k.split)


def _two_steps(prog: Program, k, staged, limits: Limits):
    """Staged nest ``staged`` (of ``k``) with its two-step pass (``ir/steps``), logged."""
    others = [o for o in prog.steps if o is not k]
    found = steps.plan(prog, k, others, limits, _fuse)
    if isinstance(found, str):
        log.info(f"Operator `{prog.name}`: {k.name} runs one time step a pass: {found}")
        return staged
    f = found.kernel.fusion
    log.info(f"Operator `{prog.name}`: {k.name} may run two time steps a pass (tiles "
             f"{', '.join('x'.join(map(str, t)) for t in f.tiles)}, the first step run "
             f"{f.recompute[0]:.2f}x a point on the first)")
    return replace(staged, steps=found)


def fuse(prog: Program, limits: Limits | None, split: bool = False,
         stage: bool = False, two_steps: bool = False) -> Program:
    """Each time-step nest that only computes temporaries, fused into the nest after it that
    reads them (``limits``: the target's; None: the target fuses nothing); with ``stage``,
    each nest left reading arrays at neighbours fused with its own staging producer
    (``_staging``); with ``two_steps``, each staged nest stepping one buffered field planned
    to run two time steps a pass too (``ir/steps``)."""
    if limits is None:
        return prog
    stage = stage and not split
    steps, out, fused_temps, i, changed = list(prog.steps), [], set(), 0, False
    while i < len(steps):
        k1 = steps[i]
        k2 = steps[i + 1] if i + 1 < len(steps) else None
        if k2 is None or k1.is_sparse or not k1.writes or not all(
                prog.array(t).temporary for t in k1.writes):
            out.append(k1)
            i += 1
            continue
        others = [k for k in prog.kernels if k is not k1 and k is not k2]
        why = "the grid is split over MPI ranks" if split else _refusal(prog, k1, k2, others)
        fused = why or _fuse(prog, k1, k2, replace(limits, queue=False))
        if isinstance(fused, str):
            log.info(f"Operator `{prog.name}`: {k1.name} and {k2.name} stay apart: {fused}")
            out.append(k1)
            i += 1
            continue
        f = fused.fusion
        places = ", ".join(f"{t.name} in {_WHERE[t.place]}" for t in f.onchip)
        log.info(f"Operator `{prog.name}`: {k1.name} fused into {k2.name}, streaming along "
                 f"{k2.dims[0]} {f.lag} planes ahead ({places}; staged in shared rings: "
                 f"{', '.join(s.name for s in f.staged) or 'none'}; tiles "
                 f"{', '.join('x'.join(map(str, t)) for t in f.tiles)}, producer run "
                 f"{f.recompute[0]:.2f}x a point on the first"
                 + (f", {f.pair} points a thread along {k2.dims[-1]}" if f.pair > 1 else "")
                 + ")")
        fused_temps |= set(k1.writes)
        out.append(fused)
        i += 2
    if stage:   # the nests left alone, each fused with its own staging producer
        for j, k in enumerate(out):
            if k.fusion is not None or k.is_sparse:
                continue
            staged = _stage(prog, k, [o for o in prog.kernels if o is not k], limits)
            if isinstance(staged, str):
                log.info(f"Operator `{prog.name}`: {k.name} is not staged: {staged}")
                continue
            log.info(f"Operator `{prog.name}`: {k.name} staged, streaming along {k.dims[0]} "
                     f"(in shared rings: {', '.join(s.name for s in staged.fusion.staged)}; "
                     f"tiles {', '.join('x'.join(map(str, t)) for t in staged.fusion.tiles)})")
            out[j] = _two_steps(prog, k, staged, limits) if two_steps else staged
            changed = True
    if not fused_temps and not changed:
        return prog
    arrays = tuple(a for a in prog.arrays if a.name not in fused_temps)
    return replace(prog, steps=tuple(out), arrays=arrays)

"""Time-skewed (wave-front) tiles for the C backend: blocks of the outer space dimensions and
several time steps computed together while the block's data stay in cache.

The time loop runs in batches of ``depth`` steps. The outermost dimension (a 2D grid) or the
two outer ones (3D; never the contiguous one) are cut into tiles; in a batch a tile runs
every step before the tiles after it start. Along a tiled dimension x, at step t, a nest k
of tile b covers

    [x_m + b W - S (t - t0) + e_k,  x_m + (b + 1) W - 1 - S (t - t0) + e_k]

(t0 the batch's first step; the first tile starts at the nest's first plane, the last ends at
its last): the tiles' boundaries move back S planes a step, so what a point reads beyond its
tile's upper edge its tile computed the step before, and what it reads below the lower edge
the tiles before it computed and have not yet overwritten. With two tiled dimensions, tile
(b, c) needs (b - 1, c), (b, c - 1) and (b - 1, c - 1) only: the tiles of a wave-front
b + c = w run on the OpenMP threads at once, each tile's nests serial inside (one thread, a
SIMD innermost loop), the whole tiled loop timed as the first nest's section. With one, the
tiles run in order, each nest shared by the threads. S, the skew (per
dimension), is the sum of the nests' reach along it (the farthest offset each reads an
array the time loop writes), and at least twice the farthest read of an array without time
slots the loop writes (the tile before overwrites it at the next step); e_k, the sum of the
reaches of the nests after k, keeps a nest ahead of those that read its output in the same
step.

Sources and receivers run inside the tiles at the step they belong to: each node of a point's
cell is handled by the tile whose region held it when the values there were computed (an
injection into what nest j writes at this step: nest j's region now; an interpolation of what
it wrote s steps ago: its region then), the first tile reaching down to minus infinity and
the last up to plus infinity, so every node is visited once. An interpolation's sample is a
sum of the tiles' parts, added atomically into its row, zeroed at the batch's start (the sum
equals the untiled one to round-off). ``plan`` says when a program is tiled, or why not.

With ``time-tiling`` auto (the default) the entry point also holds the untiled loop: the
autotuner keeps a tile only where it beat that loop in the same trials (``autotune.tune``),
and a run without a tuned choice takes ``default_rule``'s, made at run time from the
thread count and the run's sizes.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import cgen as c
import numpy as np
import sympy

from . import blocking
from ..common.cprinter import moved, tuned_choice


#: the tile sizes offered to the autotuner per number of tileable dimensions, (widths...,
#: steps), after the untiled loop (which is always offered first, ``CBackend.launch_shapes``):
#: a choice of one width tiles x alone, the threads sharing each nest of a tile in strips
#: (``blocking.strips``; 16 cores, 48 steps: the variable-density program level with the
#: untiled loop within that host's noise, the acoustic 0.6-0.9x of it; 2 cores 1.3x and 1.05x
#: at 160^3, docs/performance-log.md), of two x and y, a thread a tile of a wave-front
#: (2 cores: 1.6x Devito, 16 cores: 0.24-0.57x)
CHOICES = {2: ((16, 8), (32, 8), (64, 4), (64, 8), (32, 16), (16, 16, 8), (32, 32, 8),
               (32, 32, 16), (48, 48, 16)),
           1: ((16, 8), (32, 8), (32, 16), (64, 16))}
#: the tiles of x alone a run too short to tune tries beside the untiled loop, one apply each
#: (``CBackend.probes``), per number of tileable dimensions: 64 planes, 4 steps. On 16 cores
#: (Xeon, 40 steps, ratios to Devito 4.8.23 in the same run, issue 62) the variable-density
#: program ran 1.04x and 0.97x with them at 160^3 and 256^3 against 0.93x and 0.90x untiled,
#: the acoustic 0.82x and 0.81x against 1.04x: neither wins everywhere, the runs decide
PROBED = {2: (64, 4), 1: None}
#: the tiles a run without tuned ones takes where ``default_rule`` says they pay, per number
#: of tileable dimensions (an index of ``CHOICES``; None: never, the untiled loop): 32 x 32
#: points and 16 steps ran fastest of those tried on 2 cores (AMD EPYC, 160^3 and 256^3, so 8;
#: on a 2-core Xeon within 3 % of the best of 32 x 8, 48 x 16 and 16 x 8, issue 62)
DEFAULT = {2: CHOICES[2].index((32, 32, 16)), 1: None}
#: the share of the threads' time a batch's wave-fronts keep busy (the tiles of a batch over
#: the threads times the wave-fronts, each as many rounds as its tiles need) from which a run
#: without tuned choices takes the default wave-front tiles, in percent. Measured: 160^3 and
#: 256^3 with 32 x 32 x 16 tiles keep 2 threads 88-91 % busy, and the tiles ran 1.06-1.65x
#: the untiled loop (2-core Xeon, issue 62: the acoustic 1.06x at 160^3, 1.21x at 256^3, the
#: variable-density program 1.57x and 1.65x, SA-TTI 1.23x at 160^3); on 16 threads 24 % and
#: 33 %, and they ran 0.29-0.45x it (16-core Xeon, docs/performance.md). Between, the gain a
#: tile's cache buys must pay for the idle threads: 80 % leaves a margin.
BUSY_PERCENT = 80
#: the tile widths each tiled dimension must hold for the default wave-front tiles: on a
#: narrower grid the untiled loop's planes fit in cache and the edge tiles the grid cuts are
#: most of a batch (2-core Xeon, 40 steps, tiled against untiled: the acoustic 0.83-0.93x at
#: 48^3 and 64^3, 1.09x at 96^3; SA-TTI 0.88x at 64^3, 1.05x at 96^3; the variable-density
#: program 1.0-1.1x at 48^3 and 64^3, 1.44x at 96^3)
MIN_WIDTHS = 3


@dataclass(frozen=True)
class Tiling:
    """How one program's time loop is tiled."""

    choices: tuple              # (widths per tiled dimension, outermost first..., steps a
                                # batch): the sizes it may run, picked at run time
    default: int | None         # the choice run where the tuning argument gives none (and,
                                # with ``untiled``, ``default_rule`` says tiles pay); None:
                                # untiled unless tuned
    skews: tuple                # per tiled dimension, S: points the boundaries move a step
    ahead: dict                 # nest name -> e_k per tiled dimension
    homes: dict                 # sparse kernel name -> (nest name, step lag): whose region
                                # holds its nodes, and how many steps back that region was
    untiled: int = 0            # choices of the tuning argument before the tiles that run
                                # the untiled loop (``CBackend.launch_shapes``); 0: a fixed
                                # size, always tiled

    @property
    def dims(self) -> int:
        """Tiled dimensions."""
        return len(self.skews)

    @property
    def parallel(self) -> bool:
        """Whether the tiles of a wave-front run on the threads (two tiled dimensions)."""
        return self.dims == 2

    @property
    def deepest(self) -> int:
        return max(ch[-1] for ch in self.choices)

    def describe(self, choice) -> str:
        tiles = f"{' x '.join(map(str, choice[:-1]))} points, {choice[-1]} steps"
        if self.dims == 2 and len(choice) == 2:
            return f"{tiles}, x alone, the threads sharing each nest"
        return tiles

    def untuned_text(self) -> str:
        """What a run without a tuned choice takes (``default_rule``), in words."""
        if self.default is None:
            return "none"
        tile = self.choices[self.default]
        if len(tile) == 2:
            return f"{self.describe(tile)} where the run has {tile[-1]} steps, else none"
        return f"{self.describe(tile)} where a batch's wave-fronts keep the threads " \
               f"{BUSY_PERCENT} % busy, else none"

    def variant(self, d: int) -> "Tiling":
        """The tiling of the choices that tile ``d`` dimensions (the outermost ``d``)."""
        return replace(self, choices=tuple(ch for ch in self.choices if len(ch) == d + 1),
                       skews=self.skews[:d], default=0,
                       ahead={k: v[:d] for k, v in self.ahead.items()})


def timed_nest(prog):
    """The nest whose section times the whole tiled loop, and whose tuning argument picks the
    tile sizes: the step's first grid nest."""
    return next(k for k in prog.steps if not k.is_sparse)


def _grid_nests(prog):
    """(the time loop's grid nests, array -> (nest name, time shift of its store)), or why
    the loop cannot be tiled."""
    written = {}
    nests = []
    for k in prog.steps:
        if k.is_sparse:
            continue
        if k.sequential:
            return f"{k.name} runs in order ({k.sequential})"
        if k.outer:
            return (f"{k.name} sums over its outer loops (an Inc into a function "
                    f"without them), which run in order")
        if tuple(k.dims) != prog.loop_symbols or any(f is not None for f in k.fixed or ()):
            return f"{k.name} does not run over every dimension of the grid"
        if k.fusion is not None:
            return f"{k.name} has a nest fused into it"
        for st in k.body:
            if not st.is_local:
                shift = _shift(prog, st.lhs)
                if shift is False:
                    return f"{k.name} writes {st.lhs} at a time index it cannot place"
                written[st.lhs.base.name] = (k.name, shift)
        nests.append(k)
    if not nests:
        return "no grid nest in the time loop (sparse operations alone)"
    return nests, written


def _reaches(prog, nests, written, tiled):
    """(nest name -> the farthest offset it reads the loop's arrays at, per tiled
    dimension; the farthest read of an array without time slots the loop writes), or why
    not (a non-constant offset)."""
    single = [0] * tiled
    reach = {}
    for k in nests:
        far = [0] * tiled
        for st in k.body:
            for acc in st.rhs.atoms(sympy.Indexed):
                if acc.base.name not in written:
                    continue
                for i in range(tiled):
                    x = prog.dims[i].symbol
                    off = sympy.expand(acc.indices[_xpos(prog, acc) + i] - x)
                    if not off.is_Integer:
                        return f"{k.name} reads {acc} at a non-constant offset along {x}"
                    far[i] = max(far[i], abs(int(off)))
                    if written[acc.base.name][1] is None:
                        single[i] = max(single[i], abs(int(off)))
        reach[k.name] = far
    return reach, single


def _sparse_homes(prog, written):
    """Sparse nest name -> the grid nest its points are handled beside (``_home``), or why
    one cannot be."""
    homes = {}
    for k in prog.steps:
        if not k.is_sparse:
            continue
        if k.kind == "interpolate":
            sample = prog.array(k.target.base.name)
            if sample.store or np.dtype(sample.dtype).kind == "c":
                return f"{k.name} samples into {sample.user}, stored as " \
                       f"{sample.store or 'complex'} (its parts added atomically)"
        home, why = _home(prog, k, written)
        if home is None:
            return f"{k.name}: {why}"
        homes[k.name] = home
    return homes


def plan(backend) -> tuple[Tiling | None, str]:
    """The tiling of ``backend``'s program (of the sizes its options ask for, the
    ``time-tiling`` setting), or None and why it is not tiled."""
    chosen = backend.options.time_tiles
    if chosen is None:
        return None, ""
    prog = backend.program
    if not prog.has_time_loop or not prog.steps:
        return None, "no time loop"
    if prog.split:
        return None, "the grid is split over MPI ranks"
    tiled = min(2, len(prog.dims) - 1)
    if not tiled:
        return None, "a 1D grid (its one dimension is the contiguous one)"
    found = _grid_nests(prog)
    if isinstance(found, str):
        return None, found
    nests, written = found
    found = _reaches(prog, nests, written, tiled)
    if isinstance(found, str):
        return None, found
    reach, single = found
    skews = tuple(max(sum(r[i] for r in reach.values()), 2 * single[i], 1)
                  for i in range(tiled))
    ahead, after = {}, [0] * tiled
    for k in reversed(nests):
        ahead[k.name] = tuple(after)
        after = [a + r for a, r in zip(after, reach[k.name])]
    homes = _sparse_homes(prog, written)
    if isinstance(homes, str):
        return None, homes
    if chosen == "auto":
        # the untiled loop first: as many choices as its cache blocks (the tuning entry of
        # the first nest picks its block there; the other nests' their own)
        untiled = len(blocking.BLOCKS) if any(backend.blocked(k) for k in nests) else 1
        return Tiling(CHOICES[tiled], DEFAULT[tiled], skews, ahead, homes, untiled), ""
    *widths, depth = chosen
    widths = tuple(widths) * tiled if len(widths) == 1 else tuple(widths)
    if len(widths) == 2 and widths[1] == 0:   # "W,0,T": x alone
        widths, skews = widths[:1], skews[:1]
        ahead = {k: v[:1] for k, v in ahead.items()}
    elif len(widths) != tiled or 0 in widths:
        return None, f"{len(widths)} tile widths given for {tiled} tiled dimensions"
    return Tiling((widths + (depth,),), 0, skews, ahead, homes), ""


def _xpos(prog, acc) -> int:
    """The position of the x index among ``acc``'s indices (after a time index)."""
    return len(acc.indices) - len(prog.dims)


def _shift(prog, acc):
    """The time shift of access ``acc`` (index = time + shift), None without a time index,
    False where it is neither."""
    if len(acc.indices) == len(prog.dims):
        return None
    idx = acc.indices[0]
    for ti in prog.time_indices:
        if idx == ti.symbol:
            return ti.shift
    off = sympy.expand(idx - prog.time)
    return int(off) if off.is_Integer else False


def _home(prog, k, written):
    """(nest, lag) of sparse kernel ``k``: the nest whose region holds its nodes and how many
    steps before this one it computed the values there; None and why where it has none."""
    grid = [a for a in sympy.sympify(k.expr).atoms(sympy.Indexed)
            if not prog.array(a.base.name).sparse and a.base.name in written]
    if k.kind == "inject":
        grid.append(k.target)
    homes = set()
    for acc in grid:
        nest, wshift = written.get(acc.base.name, (None, None))
        if nest is None:
            return None, f"it injects into {acc.base.name}, which no nest of the step writes"
        rshift = _shift(prog, acc)
        if rshift is False or (rshift is None) != (wshift is None):
            return None, f"it reads {acc} at a time index it cannot place"
        lag = 0 if rshift is None else (wshift - rshift) * prog.time_step
        homes.add((nest, lag))
    if len(homes) > 1:
        return None, "its nodes' values come from several nests or steps"
    if not homes:
        return ("", 0), ""   # reads no array the loop writes: any one tile may run it
    nest, lag = homes.pop()
    if k.kind == "inject" and lag != 0:
        return None, "it injects into values another step computes"
    return (nest, lag), ""


def _boundary(backend, t: Tiling, nest, i: int, b: str, steps_back: int) -> str:
    """C text of the raw lower boundary of tile ``b`` along tiled dimension ``i`` for
    ``nest``, ``steps_back`` steps before the current one: x_m + b W - S (t - t0) + e."""
    x = backend.program.dims[i]
    sh = f"sg_sh{i} - {t.skews[i] * steps_back}" if steps_back else f"sg_sh{i}"
    return f"{x.lower} + ({b})*sg_tw{i} - ({sh}) + {t.ahead[nest.name][i]}"


def region(backend, t: Tiling, nest, i: int) -> tuple[str, str]:
    """C text of the first and last point along tiled dimension ``i`` that ``nest``
    computes in the current tile at the current step: its points (a widened nest's too) cut
    at the tile's boundaries."""
    x = backend.program.dims[i]
    (first, lo), (last, hi) = nest.span(i)
    start, stop = moved(getattr(x, first), lo), moved(getattr(x, last), hi)
    b = f"sg_b{i}"
    return (f"({b} == 0 ? {start} : sg_maxl({start}, {_boundary(backend, t, nest, i, b, 0)}))",
            f"({b} == sg_n{i} - 1 ? {stop} : "
            f"sg_minl({stop}, {_boundary(backend, t, nest, i, b + ' + 1', 0)} - 1))")


def nodes(backend, t: Tiling, nest, steps_back: int, names) -> str:
    """C test that a node (``names``: its index per dimension) lies in the current tile's
    share of ``nest``'s points ``steps_back`` steps ago: along each tiled dimension the
    domain's points as the nest's region cut them, those below the domain in the first tile,
    those above in the last."""
    tests = []
    for i in range(t.dims):
        x, b = backend.program.dims[i], f"sg_b{i}"

        def clamp(edge, i=i, x=x):
            return f"sg_minl(sg_maxl({_boundary(backend, t, nest, i, edge, steps_back)}, " \
                   f"{x.lower}), {x.upper} + 1)"
        tests.append(f"({b} == 0 || {names[i]} >= {clamp(b)}) && "
                     f"({b} == sg_n{i} - 1 || {names[i]} < {clamp(b + ' + 1')})")
    return " && ".join(tests)


def _step_body(backend, t: Tiling) -> list:
    """One step of the current tile: its nests over their regions, its share of the sparse
    operations."""
    prog = backend.program
    nests = {k.name: k for k in prog.steps if not k.is_sparse}
    body = []
    for k in prog.steps:
        if k.is_sparse:
            nest, lag = t.homes[k.name]
            backend.tile_nodes = (lambda names, n=nests.get(nest), lag=lag:
                                  nodes(backend, t, n, lag, names)) if nest else None
            try:
                code = backend.when(k, backend.sparse_loop(k))
            finally:
                backend.tile_nodes = None
            first = " && ".join(f"sg_b{i} == 0" for i in range(t.dims))
            body.append(code if nest else c.If(first, code))
            continue
        ranges = {i: region(backend, t, k, i) for i in range(t.dims)}
        backend.tile_ranges = ranges
        try:
            code = backend.when(k, nest_code(backend, k))
        finally:
            backend.tile_ranges = None
        body.append(c.If(" && ".join(f"{a} <= {b}" for a, b in ranges.values()), code))
    return body


def time_loop(backend, t: Tiling) -> c.Block:
    """The time loop in batches of tiles (``backend`` a CBackend): a loop per number of
    tiled dimensions among ``t``'s choices (they come grouped by it), the tuning argument's
    choice picking one and its sizes; with ``t.untiled``, the untiled loop first (its
    choices those of its first nest's cache block), and where nothing is tuned
    ``default_rule`` picks."""
    prog = backend.program
    first = timed_nest(prog)
    count = t.untiled + len(t.choices)
    head = []
    default = str(t.default or 0)
    if t.untiled:
        head, default = default_rule(backend, t), "sg_tdef"
    pick = tuned_choice(prog.tuning, first.section.timer, count, default)
    branches, start = [], t.untiled
    for d in dict.fromkeys(len(ch) - 1 for ch in t.choices):
        v = t.variant(d)
        assert t.choices[start - t.untiled:start - t.untiled + len(v.choices)] == v.choices, \
            "choices not grouped"
        start += len(v.choices)
        first_index = start - len(v.choices)
        branches.append((f"sg_tc < {start}", _batches(backend, v, f"sg_tc - {first_index}")))
    chain = c.Block(branches[-1][1])
    for test, body in reversed(branches[:-1]):
        chain = c.If(test, c.Block(body), chain)
    fixed = "" if t.untiled else f" ({t.describe(t.choices[0])})"
    tiled = backend.timed(first, c.Block([
        c.Comment(f"time tiles (backends/c/time_tiling.py), the sizes the tuning argument picks"
                  f"{fixed}, the tiles' boundaries moving {', '.join(map(str, t.skews))} a "
                  f"step; the whole tiled loop is timed as this section"), chain]))
    if not t.untiled:
        return c.Block([c.Initializer(c.Value("const long", "sg_tc"), pick), tiled])
    untiled = backend.time_loop(backend.sections(prog.steps, prog.time.name))
    return c.Block(head + [
        c.Initializer(c.Value("const long", "sg_tc"), pick),
        c.Comment(f"choices below {t.untiled}: the untiled loop, the first nest's cache block "
                  f"that choice"),
        c.If(f"sg_tc < {t.untiled}", c.Block([untiled]), tiled)])


def tiles_across(extent: int, skew: int, width: int, depth: int) -> int:
    """Tiles of ``width`` points along a dimension of ``extent`` points in a batch of
    ``depth`` steps whose boundaries move ``skew`` a step (as ``_batches`` counts them)."""
    return (extent - 1 + skew * (depth - 1)) // width + 1


def wavefront_rounds(n0: int, n1: int, threads: int) -> int:
    """Rounds of ``threads`` tiles the wave-fronts of a batch of n0 x n1 tiles take: each
    wave-front b0 + b1 = w as many as its tiles need."""
    return sum(-(-(min(w, n0 - 1) - max(0, w - n1 + 1) + 1) // threads)
               for w in range(n0 + n1 - 1))


def untuned(t: Tiling, extents, steps: int, threads: int):
    """The tiles (an index of ``t.choices``) a run of ``steps`` steps over ``extents`` points
    per dimension on ``threads`` threads takes without a tuned choice, None for the untiled
    loop: ``default_rule``'s choice (the generated C makes it at run time; this is its
    double, for tests and reports)."""
    if t.default is None:
        return None
    *widths, depth = t.choices[t.default]
    if steps < depth:
        return None
    if len(widths) == 1:
        return t.default
    if any(e < MIN_WIDTHS * w for e, w in zip(extents, widths)):
        return None
    n = [tiles_across(e, s, w, depth) for e, s, w in zip(extents, t.skews, widths)]
    busy = 100 * n[0] * n[1] >= BUSY_PERCENT * threads * wavefront_rounds(n[0], n[1], threads)
    return t.default if busy else None


def default_rule(backend, t: Tiling) -> list:
    """C statements setting sg_tdef, the choice of a run without a tuned one: the default
    wave-front tiles (``DEFAULT``) where the run has a batch of their steps, each tiled
    dimension holds ``MIN_WIDTHS`` tile widths and a batch's wave-fronts keep the threads at
    least ``BUSY_PERCENT`` busy (counted at the run's sizes and thread count), else the
    untiled loop with its first nest's default cache block."""
    prog = backend.program
    plain = backend.untiled_choice()
    tile = t.choices[t.default] if t.default is not None else None
    if tile is None:
        return [c.Initializer(c.Value("const long", "sg_tdef"), str(plain))]
    tm, tM = prog.time_bounds
    *widths, depth = tile
    if len(widths) == 1:   # x alone: the threads share each nest; a batch of steps suffices
        test = f"{tM} - {tm} + 1 >= {depth}"
        return [c.Initializer(c.Value("const long", "sg_tdef"),
                              f"{test} ? {t.untiled + t.default} : {plain}")]
    dims = list(zip(prog.dims, t.skews, widths))
    counts = [c.Initializer(c.Value("const long", f"sg_dn{i}"),
                            f"(({d.upper}) - ({d.lower}) + {s}*{depth - 1}) / {w} + 1")
              for i, (d, s, w) in enumerate(dims)]
    wide = " && ".join(f"({d.upper}) - ({d.lower}) + 1 >= {MIN_WIDTHS * w}" for d, _, w in dims)
    rounds = c.For("long sg_w = 0", "sg_w < sg_dn0 + sg_dn1 - 1", "sg_w += 1",
                   c.Statement("sg_rounds += (sg_minl(sg_w, sg_dn0 - 1) - "
                               "sg_maxl(0, sg_w - sg_dn1 + 1) + sg_p) / sg_p"))
    return [
        c.Value("long", "sg_tdef"),
        c.Block([
            c.Comment(f"no tuned choice: {t.describe(tile)} where a batch's wave-fronts keep "
                      f"the threads {BUSY_PERCENT} % busy, else untiled "
                      f"(time_tiling.default_rule)"),
            c.Initializer(c.Value("const long", "sg_p"), "omp_get_max_threads()"),
            *counts,
            c.Initializer(c.Value("long", "sg_rounds"), "0"),
            rounds,
            c.Statement(f"sg_tdef = {tM} - {tm} + 1 >= {depth} && {wide} && 100*sg_dn0*sg_dn1 "
                        f">= {BUSY_PERCENT}*sg_p*sg_rounds ? {t.untiled + t.default} : {plain}")])]


def _batches(backend, t: Tiling, index: str) -> list:
    """The batches of steps of the choices of ``t`` (all tiling ``t.dims`` dimensions), the
    one run being number ``index`` (C text) of them."""
    prog = backend.program
    tm, tM = prog.time_bounds
    time, down = prog.time.name, prog.time_step < 0
    backend.in_tile = t.parallel   # nests serial inside a tile that a thread runs
    try:
        body = _step_body(backend, t)
    finally:
        backend.in_tile = False
    elapsed = f"sg_t0 - {time}" if down else f"{time} - sg_t0"
    shifts = [c.Initializer(c.Value("const long", f"sg_sh{i}"), f"{s}*({elapsed})")
              for i, s in enumerate(t.skews)]
    steps = c.For(f"long {time} = sg_t0", f"{time} {'>=' if down else '<='} sg_t1",
                  f"{time} {'-' if down else '+'}= 1",
                  c.Block(shifts + backend.time_slots() + body))
    if t.parallel:
        tiles = c.Block([
            c.Comment("the tiles of one wave-front b0 + b1 = w at once"),
            c.For("long sg_w = 0", "sg_w < sg_n0 + sg_n1 - 1", "sg_w += 1", c.Module([
                c.Pragma("omp parallel for schedule(dynamic, 1)"),
                c.For("long sg_b0 = sg_maxl(0, sg_w - sg_n1 + 1)",
                      "sg_b0 <= sg_minl(sg_w, sg_n0 - 1)", "sg_b0 += 1",
                      c.Block([c.Initializer(c.Value("const long", "sg_b1"), "sg_w - sg_b0"),
                               steps]))]))])
    else:
        tiles = c.For("long sg_b0 = 0", "sg_b0 < sg_n0", "sg_b0 += 1", c.Block([steps]))
    ctl, count = prog.control, "sg_t0 - sg_t1 + 1" if down else "sg_t1 - sg_t0 + 1"
    counts = [c.Initializer(c.Value("const long", f"sg_n{i}"),
                            f"(({d.upper}) - ({d.lower}) + {s}*({count} - 1)) / sg_tw{i} + 1")
              for i, (d, s) in enumerate(zip(prog.dims, t.skews))]
    batch = [
        c.Initializer(c.Value("const long", "sg_t1"),
                      f"sg_maxl(sg_t0 - sg_td + 1, {tm})" if down else
                      f"sg_minl(sg_t0 + sg_td - 1, {tM})"),
        c.Comment("tiles: enough that the last starts inside at the batch's last step"),
        *counts,
        *zero_samples(backend),
        tiles,
        c.Line(f"if ({ctl}) {{ {ctl}[1] += {count}; if ({ctl}[0]) break; }}"),
    ]
    start, stop = (tM, tm) if down else (tm, tM)
    table = ", ".join("{" + ", ".join(f"{v}L" for v in ch) + "}" for ch in t.choices)
    sizes = [c.Line(f"static const long sg_tiles[{len(t.choices)}][{t.dims + 1}] = "
                    f"{{{table}}};"),
             c.Initializer(c.Value("const long", "sg_tk"), index)]
    sizes += [c.Initializer(c.Value("const long", f"sg_tw{i}"), f"sg_tiles[sg_tk][{i}]")
              for i in range(t.dims)]
    sizes.append(c.Initializer(c.Value("const long", "sg_td"), f"sg_tiles[sg_tk][{t.dims}]"))
    loop = c.For(f"long sg_t0 = {start}", f"sg_t0 {'>=' if down else '<='} {stop}",
                 f"sg_t0 {'-' if down else '+'}= sg_td", c.Block(batch))
    return sizes + [loop]


def nest_code(backend, k):
    """Nest ``k`` over the current x range, cache-blocked where the backend blocks it."""
    return blocking.nest(backend, k) if backend.blocked(k) else backend.loop_nest(k)


def zero_samples(backend) -> list:
    """The rows of this batch's steps of each interpolation's samples set to zero: the tiles
    add their parts into them."""
    out = []
    prog = backend.program
    for k in prog.steps:
        if not (k.is_sparse and k.kind == "interpolate") or k.increment:
            continue
        arr = prog.array(k.target.base.name)
        lay = arr.layout
        row = backend.printer.target(k.target)
        p = k.point.name
        time = prog.time.name
        lo, hi = ("sg_t1", "sg_t0") if prog.time_step < 0 else ("sg_t0", "sg_t1")
        out.append(c.For(f"long {time} = {lo}", f"{time} <= {hi}", f"{time} += 1",
                         c.For(f"{backend.index} {p} = 0", f"{p} < {lay.npoint}", f"{p} += 1",
                               c.Statement(f"{row} = 0"))))
    return out

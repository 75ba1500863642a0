"""The performance summary ``Operator.apply`` returns: per section and globally."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import sympy


@dataclass(frozen=True)
class PerfKey:
    """A key of ``PerformanceSummary.timings`` (Devito's): a section's name and rank."""

    name: str
    rank: int | None


@dataclass(frozen=True)
class PerfEntry:
    """Figures of one section (or of the whole run): time in seconds and derived rates."""

    name: str
    time: float
    flops: float        # total floating-point operations executed
    points: float       # total grid-point updates
    traffic: float      # compulsory bytes moved

    @property
    def gflopss(self) -> float:
        return self.flops / self.time / 1e9 if self.time > 0 else 0.0

    @property
    def gpointss(self) -> float:
        return self.points / self.time / 1e9 if self.time > 0 else 0.0

    @property
    def oi(self) -> float:
        """Operational intensity: flops per compulsory byte."""
        return self.flops / self.traffic if self.traffic else 0.0

    def line(self) -> str:
        return f"[OI={self.oi:.2f}, {self.gflopss:.2f} GFlops/s, {self.gpointss:.2f} GPts/s]"


@dataclass
class PerformanceSummary:
    """What ``apply`` returns: section entries, the global figures with and without setup."""

    name: str
    sections: dict
    globals: PerfEntry            # kernel time only
    globals_with_setup: PerfEntry  # wall time of apply, argument processing included
    compiled: bool                # whether this apply ran the compiler
    timesteps: int
    ranks: tuple = ()             # split grid (MPI): each rank's RankTimes; the figures
                                  # above are global, timed by the slowest rank

    def __getitem__(self, key):
        return self.sections[key]

    @property
    def timings(self) -> dict:
        """Devito's ``summary.timings``: (section name, rank) -> seconds, the rank None on
        one process."""
        return {PerfKey(entry.name, None): entry.time for entry in self.entries()}

    def entries(self) -> list:
        """The section entries, each once (sections timed together share one)."""
        return list({id(e): e for e in self.sections.values()}.values())

    @property
    def gflopss(self) -> float:
        return self.globals.gflopss

    @property
    def gpointss(self) -> float:
        return self.globals.gpointss

    @property
    def oi(self) -> float:
        return self.globals.oi

    @property
    def time(self) -> float:
        return self.globals.time

    def __str__(self) -> str:
        """The summary a user reads (``print(summary)``): the report the log prints."""
        return "\n".join(self.report())

    def report(self) -> list[str]:
        lines = [f"Operator `{self.name}` ran in {self.globals.time:.2f} s",
                 f"Global performance: {self.globals.line()}",
                 f"Global performance with setup: [{self.globals_with_setup.time:.2f} s, "
                 f"{self.globals_with_setup.gflopss:.2f} GFlops/s, "
                 f"{self.globals_with_setup.gpointss:.2f} GPts/s]",
                 "Local performance:"]
        lines += [f"  * {s.name} ran in {s.time:.2f} s {s.line()}" for s in self.entries()]
        if self.ranks:
            lines.append(self.balance())
        return lines

    def balance(self) -> str:
        """The ranks' times: the load balance of a split grid, and its halos' cost."""
        t = [r.compute for r in self.ranks]
        spread = (max(t) - min(t)) / max(t) if max(t) > 0 else 0.0
        each = ", ".join(f"{x:.3f}" for x in t) if len(t) <= 8 else f"{min(t):.3f}..{max(t):.3f}"
        slowest = max(self.ranks, key=lambda r: r.step)
        return (f"MPI ranks: {len(t)}, kernel time per rank [{each}] s, slowest/fastest "
                f"{spread:.1%} apart; slowest rank: run {slowest.step:.3f} s = compute "
                f"{slowest.compute:.3f} s + wait {slowest.wait:.3f} s, halo exchange "
                f"{slowest.exchange:.3f} s (exchange calls {slowest.calls:.3f} s); {self.placement()}")

    def placement(self) -> str:
        """Where each rank ran and how its halos moved: ``ranks on [0: host/GPU 0
        (0000:18:00.0) via nccl, 1: ...]``, or for more than 8 ranks how many distinct
        devices they used. Two ranks on one GPU time-slice it: such figures are not
        scaling figures."""
        if len(self.ranks) <= 8:
            each = ", ".join(f"{i}: {r.device} via {r.transport}"
                             for i, r in enumerate(self.ranks))
            return f"ranks on [{each}]"
        devices = len({r.device for r in self.ranks})
        transports = "/".join(sorted({r.transport for r in self.ranks}))
        return f"ranks on {devices} distinct devices via {transports}"


@lru_cache(maxsize=256)
def _test(when):
    """``when`` (a kernel's test of the time step) as a NumPy function of its symbols."""
    symbols = sorted(when.free_symbols, key=lambda s: s.name)
    return symbols, sympy.lambdify(symbols, when, modules=[{"Remainder": np.mod}, "numpy"])


def _steps_run(k, prog, args, steps) -> int:
    """How many of the run's time steps kernel ``k`` ran at (all, but where it has a test)."""
    if k.when is None:
        return steps
    symbols, test = _test(k.when)
    time = np.arange(args[prog.time_bounds[0]], args[prog.time_bounds[1]] + 1) \
        if prog.has_time_loop else np.zeros(1, dtype=np.int64)
    snapshot = {s.symbol: s for s in prog.subsamplings if s.symbol is not None}
    values = [time if s == prog.time else
              (time - snapshot[s].start) // args[snapshot[s].factor] if s in snapshot
              else args[s.name] for s in symbols]
    return int(np.count_nonzero(np.broadcast_to(test(*values), (steps,))))


def summarize(prog, args, timers, wall, compiled, ranks=(), together=None) -> PerformanceSummary:
    """The summary of one run of ``prog`` with arguments ``args`` and section ``timers``
    (on a split grid, the slowest rank's; ``ranks``: each rank's ``RankTimes``).
    ``together``: kernel name -> the kernel whose timer also measured it (run in one launch
    or one tiled loop): their sections share one entry, named after all of them."""
    steps = (args[prog.time_bounds[1]] - args[prog.time_bounds[0]] + 1) if prog.has_time_loop else 1
    extent = [args[d.upper] - args[d.lower] + 1 for d in prog.dims]
    sections = {}
    for k in prog.kernels:
        if k.is_sparse:
            pts = args[prog.array(k.sparse).layout.npoint]
        else:
            pts = 1
            for depth, d in enumerate(prog.dims):
                (first, lo), (last, hi) = k.span(depth)
                n = args[getattr(d, last)] + hi - args[getattr(d, first)] - lo + 1
                pts *= 1 if k.fixed_at(depth) is not None else max(n, 0)
        pts *= _steps_run(k, prog, args, steps if k.stage == "time" else 1)
        sections[k.name] = PerfEntry(k.name, float(timers[k.section.timer]),
                                     float(pts * k.flops), float(pts), float(pts * k.bytes))
    domain = 1
    for n in extent:
        domain *= n
    flops = sum(s.flops for s in sections.values())
    traffic = sum(s.traffic for s in sections.values())
    groups = {}
    for name, lead in (together or {}).items():
        groups.setdefault(lead, [lead]).append(name)
    for names in groups.values():
        parts = [sections[n] for n in names]
        if any(p.time for p in parts[1:]):   # they ran apart (C time tiles' untiled loop)
            continue
        merged = PerfEntry("+".join(names), parts[0].time, sum(p.flops for p in parts),
                           sum(p.points for p in parts), sum(p.traffic for p in parts))
        sections.update({n: merged for n in names})
    # a split run: the slowest rank's whole run, halos and waiting included
    time = max(r.step for r in ranks) if ranks else float(timers.sum())
    glob = PerfEntry("global", time, flops, float(domain * steps), traffic)
    setup = PerfEntry("global+setup", wall, flops, float(domain * steps), traffic)
    return PerformanceSummary(prog.name, sections, glob, setup, compiled, steps, tuple(ranks))

"""The C backend's side of the autotuner: the launch shapes it offers (loop blocks, time tiles
and the untiled loop), their defaults and trial steps, the probes that time blocked rows
against plain ones, the tuned entry's loop. A part of ``CBackend``, mixed into it."""
from __future__ import annotations

from . import blocking, fusion, time_tiling
from ..common.device_layout import DeviceLayout


class Tuning:
    """``CBackend``'s launch shapes, defaults and probes."""

    def device_layout(self, a, shape, itemsize, halo) -> DeviceLayout:
        """The layout of array ``a``'s copy where the entry point reads it: the host's."""
        return DeviceLayout.of(shape, itemsize, None)

    def blocked(self, k) -> bool:
        return (self.cache_blocking and not (k.is_sparse or k.sequential) and len(k.dims) == 3
                and not k.fixed and not k.outer and not self.in_tile)

    def launch_shapes(self) -> dict:
        """Section timer -> descriptions of the shapes the generated code can run that section
        with (chosen by the tuning argument): here the cache blocks of the 3D nests (a fused
        producer runs in its reader's), and with time tiles offered (``time-tiling`` auto)
        the first nest's entry picks the untiled loop (its first ``Tiling.untiled`` choices:
        the first nest's cache block there) or the tiles' sizes."""
        fused, t = self.fused(), self.tiling()
        always = set(self.program.steps) if t is not None and not t.untiled else set()
        shapes = {k.section.timer: tuple(blocking.describe(b) for b in blocking.BLOCKS)
                  for k in self.program.kernels
                  if self.blocked(k) and k not in fused and k not in always}
        if t is not None and t.untiled:
            timer = time_tiling.timed_nest(self.program).section.timer
            own = shapes.get(timer, ())
            untiled = tuple(f"no time tiles, {own[i]}" if i < len(own) else "no time tiles"
                            for i in range(t.untiled))
            shapes[timer] = untiled + tuple(f"time tiles {t.describe(ch)}" for ch in t.choices)
        return shapes

    @property
    def trial_steps(self) -> int:
        """Steps an autotuning trial needs at least: a whole batch of the deepest time tiles."""
        t = self.tiling()
        return t.deepest if t is not None else 0

    def default_shapes(self) -> dict:
        """Section timer -> the shape each offered section runs with when none is tuned (the
        section choosing time tiles: its untiled choice, the reference a tile must beat in
        the autotuner's trials; an untuned run takes ``time_tiling.default_rule``'s)."""
        consumers, t = set(self.fused().values()), self.tiling()
        timer = time_tiling.timed_nest(self.program).section.timer \
            if t is not None and t.untiled else None
        return {k.section.timer: self.untiled_choice() if k.section.timer == timer else
                fusion.FUSED_DEFAULT if k in consumers
                else blocking.default_choice(self.nest_body(k)[0])
                for k in self.program.kernels if k.section.timer in self.launch_shapes()}

    def untiled_choice(self) -> int:
        """The choice of the section choosing time tiles that runs the untiled loop with its
        first nest's default cache block (0 where that nest is not blocked on its own)."""
        first = time_tiling.timed_nest(self.program)   # never a fused reader: the first
        if not self.blocked(first) or first in self.fused():
            return 0
        return blocking.default_choice(self.nest_body(first)[0])

    def probes(self, args, threads: int) -> list:
        """The few choices a run too short to tune tries, one an apply (``autotune``'s
        probes), where time tiles are offered: what ``time_tiling.untuned`` takes, the untiled
        loop (its default block, and that block without jammed rows) and the tiles of x
        alone (``time_tiling.PROBED``), those of no more steps than the run (``args``, on
        ``threads`` threads); each as the tuning argument."""
        t = self.tiling()
        if t is None or not t.untiled:
            return []
        prog = self.program
        lo, hi = prog.time_bounds
        steps = int(args[hi] - args[lo] + 1)
        extents = [int(args[d.upper] - args[d.lower] + 1) for d in prog.dims]
        rule = time_tiling.untuned(t, extents[:t.dims], steps, threads)
        alone = time_tiling.PROBED.get(t.dims)
        # the untiled loop with its default block, and the same block with no rows jammed
        # (where jamming loses on a machine, its second apply finds out)
        untiled = self.untiled_choice()
        picks = [None if rule is None else t.untiled + rule, untiled, blocking.unjammed(untiled),
                 None if alone not in t.choices else t.untiled + t.choices.index(alone)]
        timer = time_tiling.timed_nest(prog).section.timer
        defaults, out = self.default_shapes(), []
        for pick in dict.fromkeys(p for p in picks if p is not None):
            if pick >= t.untiled and t.choices[pick - t.untiled][-1] > steps:
                continue   # fewer steps than a batch
            choice = [0] * max(len(prog.kernels), 1)
            for section, d in {**defaults, timer: pick}.items():
                choice[section] = d
            out.append(choice)
        return out

    def tuned_loop(self):
        """For the autotuner (``autotune.tune``'s ``loop``): (the section choosing time tiles,
        how many of its choices run the untiled loop, the sections of the loop's nests),
        where time tiles are offered; else None."""
        t = self.tiling()
        if t is None or not t.untiled:
            return None
        return (time_tiling.timed_nest(self.program).section.timer, t.untiled,
                tuple(sorted({k.section.timer for k in self.program.steps})))

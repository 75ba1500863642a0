"""What apply costs around the kernels, and the time loop's speed: before/after figures for
changes to apply (the Ctrl-C flag, progress, the memory sweep of issue 15).

    python benchmarks/apply_overhead.py [--root DIR] [--short 3000] [--long 128 200] [--rounds 5]

Prints, for the stencilgen found under --root (default: this checkout):
  short apply: the median wall time of one ``op.apply(time_M=1)`` on a 16x16 grid (nearly all
               of it argument binding and the call) over --short applies, in microseconds;
  tiny steps:  the median wall time per step of 20000 steps on that 16x16 grid over --rounds
               runs (what a per-step cost would show first), in microseconds;
  long apply:  so 8 acoustic kernel on a --long N^3 grid for T steps, best and median GPts/s
               of the kernel timers over --rounds runs;
  allocation:  the median time to build, fill and drop a TimeFunction of 50 MiB (the memory
               sweep runs there).
Run it alternately on two checkouts (e.g. ``git archive`` of the base into /tmp) to compare.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _imports(root):
    sys.path.insert(0, str(Path(root).resolve()))
    import stencilgen
    stencilgen.configuration["cache-dir"] = tempfile.mkdtemp(prefix="sg-bench-")
    stencilgen.configuration["log-level"] = "WARNING"
    stencilgen.configuration["autotuning"] = "off"
    return stencilgen


def _tiny(sg):
    grid = sg.Grid(shape=(16, 16))
    u = sg.TimeFunction(name="u", grid=grid, space_order=2)
    op = sg.Operator([sg.Eq(u.forward, u + 0.1 * grid.spacing[0]**2 * u.laplace)], backend="c")
    op.apply(time_M=1)
    return op


def _median_wall(fn, count):
    times = []
    for _ in range(count):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def short_apply(sg, count):
    op = _tiny(sg)
    return _median_wall(lambda: op.apply(time_M=1), count) * 1e6


def tiny_steps(sg, rounds, steps=20000):
    op = _tiny(sg)
    return _median_wall(lambda: op.apply(time_M=steps), rounds) / steps * 1e6


def long_apply(sg, n, steps, rounds):
    grid = sg.Grid(shape=(n, n, n), extent=(1000.0,) * 3)
    u = sg.TimeFunction(name="u", grid=grid, space_order=8, time_order=2)
    m = sg.Function(name="m", grid=grid, space_order=8)
    m.data[:] = 1 / 1.5**2
    u.data[1, n // 2, n // 2, n // 2] = 1.0
    eq = sg.Eq(u.forward, sg.solve(m * u.dt2 - u.laplace, u.forward))
    op = sg.Operator([eq], backend="c")
    op.apply(time_M=2, dt=0.5)
    rates = [op.apply(time_M=steps - 1, dt=0.5).gpointss for _ in range(rounds)]
    return max(rates), statistics.median(rates)


def allocation(sg, count):
    grid = sg.Grid(shape=(160, 160, 170))   # 3 slots of float32: 50 MiB
    times = []
    for i in range(count):
        start = time.perf_counter()
        u = sg.TimeFunction(name=f"u{i}", grid=grid, time_order=2)
        u.data[:] = 1.0
        del u
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument("--short", type=int, default=3000)
    parser.add_argument("--long", type=int, nargs=2, default=(128, 200), metavar=("N", "T"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--allocations", type=int, default=12)
    args = parser.parse_args(argv)
    sg = _imports(args.root)
    print(f"root {args.root}")
    print(f"short apply: median {short_apply(sg, args.short):.1f} us over {args.short}")
    print(f"tiny steps: median {tiny_steps(sg, args.rounds):.3f} us per step over "
          f"{args.rounds}")
    best, median = long_apply(sg, *args.long, args.rounds)
    print(f"long apply {args.long[0]}^3 x {args.long[1]}: best {best:.3f}, median "
          f"{median:.3f} GPts/s over {args.rounds}")
    print(f"allocation 50 MiB: median {allocation(sg, args.allocations):.1f} ms "
          f"over {args.allocations}")


if __name__ == "__main__":
    main()

"""The acoustic propagator with its sponge, its nest split at run time where the damping is
zero (``Function.zero_box``, ``ir/zero_split``) against the same nest unsplit
(``STENCILGEN_ZERO_SPLIT=0``), in one run, alternately.

    python benchmarks/zero_split.py --backend c -d 160 160 160 --nbl 20 -nt 40
    python benchmarks/zero_split.py --backend cuda -d 512 512 512 --nbl 40 -nt 200

Each way is applied once to warm up, then ``--repeat`` times in turn; the figure is the median
of its kernels' time (the performance summary), in GPts/s of the padded grid, with the
difference of the fields (they agree to round-off: the split body drops terms that are 0).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen import switchconfig  # noqa: E402
from stencilgen.seismic.model import Model  # noqa: E402
from stencilgen.seismic.propagators import acoustic_operator  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="c")
    p.add_argument("-d", "--shape", type=int, nargs="+", default=[160, 160, 160])
    p.add_argument("--nbl", type=int, default=20)
    p.add_argument("-so", "--space-order", type=int, default=8)
    p.add_argument("-nt", type=int, default=40)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    model = Model(vp=np.full(tuple(args.shape), 2.0, dtype=np.float32), spacing=10.0,
                  nbl=args.nbl, space_order=args.space_order, dtype=np.float32)
    dt = float(model.critical_dt)
    ways = {}
    for name, split in (("split", True), ("unsplit", False)):
        with switchconfig(zero_split=split):
            op, u = acoustic_operator(model, backend=args.backend, name=f"ZeroSplit{split}")
        ways[name] = (op, u, [])
        assert any(k.split is not None for k in op.program.steps) == split

    def run(op, u):
        u.data[:] = 0
        u.data[(slice(None),) + tuple(n // 2 for n in u.grid.shape)] = 1.0
        return op.apply(time_m=1, time_M=args.nt, dt=dt)
    for op, u, _ in ways.values():
        run(op, u)   # builds, first touch, device copies
    for _ in range(args.repeat):
        for op, u, times in ways.values():
            times.append(run(op, u).globals.time)
    points = int(np.prod(model.grid.shape)) * args.nt
    (a, ua, _), (b, ub, _) = ways.values()
    off = float(np.abs(np.array(ua.data) - np.array(ub.data)).max()
                / np.abs(np.array(ub.data)).max())
    inner = int(np.prod(args.shape)) / int(np.prod(model.grid.shape))
    print(f"# acoustic so {args.space_order}, {model.grid.shape} points ({args.nbl} of sponge "
          f"each side: {100 * inner:.0f} % inside the zero box), {args.nt} steps, float32, "
          f"backend {args.backend}")
    print("| nest | s | GPts/s |")
    print("|---|---:|---:|")
    rates = {}
    for name, (_, _, times) in ways.items():
        t = statistics.median(times)
        rates[name] = points / t / 1e9
        print(f"| {name} | {t:.4f} | {rates[name]:.2f} |")
    print(f"split / unsplit: {rates['split'] / rates['unsplit']:.3f}x; fields apart by "
          f"{off:.1e} of their largest value")
    return 0


if __name__ == "__main__":
    sys.exit(main())

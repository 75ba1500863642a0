"""Fused CUDA nests against the two nests they replace: GPts/s of each fusible program, same
process, each tuned first (launch shapes remembered), then timed on a second run.

    python benchmarks/fusion_speed.py --nt 200
    python benchmarks/fusion_speed.py --programs tti3d --shape3 412 423 476

Programs as in benchmarks/fusion_check.py (SA-TTI in 3D and 2D on a smooth random medium, the
variable-density acoustic with staggered fluxes), on grids of benchmark size. Prints one row a
program: GPts/s two nests, fused, and the ratio.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_check import _bump, sa_tti, variable_density  # noqa: E402
from stencilgen import configuration  # noqa: E402


def rate(make, shape, fused: bool, nt: int) -> tuple[float, str]:
    """GPts/s of the program's second run (the first tunes), and whether anything fused."""
    previous = configuration["fusion"]
    # not the autotuner's choice, at build and at apply: under "auto" a fused Operator runs
    # its twin with the nests apart where its tuning found them faster
    configuration["fusion"] = "on" if fused else "off"
    try:
        op, fields, dt = make(shape, "cuda")
        bump = _bump(fields[0].grid)
        kwargs = dict(time_m=1, time_M=nt, dt=dt)
        for tuned in (True, False):
            for f in fields:
                f.data[:] = 0
            fields[0].data[0] = bump
            fields[0].data[1] = bump
            summary = op.apply(autotune=tuned, **kwargs)
    finally:
        configuration["fusion"] = previous
    kinds = "fused" if any(k.fusion is not None for k in op.program.steps) else "two nests"
    return summary.gpointss, kinds


PROGRAMS = {"tti3d": sa_tti, "tti2d": sa_tti, "vd3d": variable_density}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nt", type=int, default=200)
    p.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    p.add_argument("--shape3", type=int, nargs=3, default=(412, 423, 476))
    p.add_argument("--shape2", type=int, nargs=2, default=(4096, 4096))
    args = p.parse_args(argv)
    print(f"| program | grid | two nests GPts/s | fused GPts/s | fused / two nests |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in args.programs:
        shape = tuple(args.shape2 if name.endswith("2d") else args.shape3)
        two, k2 = rate(PROGRAMS[name], shape, False, args.nt)
        one, k1 = rate(PROGRAMS[name], shape, True, args.nt)
        if k1 != "fused" or k2 != "two nests":
            print(f"| {name} | {'x'.join(map(str, shape))} | ran {k2} and {k1}: no comparison "
                  f"| | |")
            continue
        print(f"| {name} | {'x'.join(map(str, shape))} | {two:.2f} | {one:.2f} | "
              f"{one / two:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

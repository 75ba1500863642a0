"""Weak and strong scaling of the SA-TTI dummy benchmark over MPI ranks (one GPU each on the
CUDA backend), with the step time split into compute, halo exchange and wait.

    python benchmarks/mpi_scaling.py --ranks 1 2 --weak 412 423 476 --strong 824 423 476 \\
        --nt 200 --modes basic overlap

Each run is ``mpirun -n N python demos/dummy_benchmark/run.py -d ... -nt ...`` (no mpirun for
one rank) with STENCILGEN_MPI set to the mode. Weak scaling grows the grid with the ranks: the
block ``--weak`` times the topology the decomposition picks for N blocks of it, so each rank
owns one ``--weak`` block; strong scaling splits ``--strong`` over N. Printed: one table row
per run (GPts/s from the demo's global figure, timed by the slowest rank; efficiency or
speed-up against one rank; max |P|, which must agree with one rank's; the slowest rank's
compute, exchange and wait seconds), as Markdown for docs/performance.md.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stencilgen.distributed.decomposition import topology  # noqa: E402

DEMO = ROOT / "demos" / "dummy_benchmark" / "run.py"
GLOBAL = re.compile(r"Global performance: \[OI=[\d.]+, ([\d.]+) GFlops/s, ([\d.]+) GPts/s\]")
PEAK = re.compile(r"max \|P\| = ([\d.e+-]+)")
RANKS = re.compile(r"compute ([\d.]+) s \+ wait ([\d.]+) s, halo exchange ([\d.]+) s")
TOPOLOGY = re.compile(r"topology (\([\d, ]+\))")


def command(args, ranks: int, shape) -> list[str]:
    run = [sys.executable, str(DEMO), "-d", *map(str, shape), "-nt", str(args.nt),
           "--backend", args.backend]
    if ranks == 1:
        return run
    return shlex.split(args.mpirun) + ["-n", str(ranks)] + run


def measure(args, ranks: int, shape, mode: str) -> dict:
    """One run's figures (the demo's output parsed)."""
    # one rank too runs split (a communicator of one), timed as the others: the whole run
    env = dict(os.environ, STENCILGEN_MPI=mode if ranks > 1 else "basic")
    cmd = command(args, ranks, shape)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    text = done.stdout + done.stderr
    if done.returncode != 0 or not GLOBAL.search(text):
        raise SystemExit(f"failed: {' '.join(cmd)}\n{text[-3000:]}")
    out = {"gpts": float(GLOBAL.search(text).group(2)), "peak": PEAK.search(text).group(1),
           "topology": "-", "compute": None, "exchange": None, "wait": None}
    if TOPOLOGY.search(text):
        out["topology"] = TOPOLOGY.search(text).group(1)
    if RANKS.search(text):
        out.update(zip(("compute", "wait", "exchange"),
                       (float(v) for v in RANKS.search(text).groups())))
    return out


def weak_shape(block, ranks: int) -> tuple[int, ...]:
    """The grid of ``ranks`` blocks of ``block`` points, arranged as the decomposition
    would split it."""
    return tuple(b * t for b, t in zip(block, topology(tuple(block), ranks)))


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(args) -> list[str]:
    rows = ["| scaling | ranks | grid | topology | mode | GPts/s | vs 1 rank | max \\|P\\| | "
            "compute s | exchange s | wait s |", "| --- | ---: | --- | --- | --- | ---: | ---: | "
            "--- | ---: | ---: | ---: |"]
    for kind, base in (("weak", args.weak), ("strong", args.strong)):
        if not base:
            continue
        one = None
        for ranks in args.ranks:
            shape = weak_shape(base, ranks) if kind == "weak" else tuple(base)
            for mode in (args.modes if ranks > 1 else ["-"]):
                r = measure(args, ranks, shape, mode)
                one = r if ranks == 1 else one
                ratio = "-" if one is None else (
                    f"{r['gpts'] / (ranks * one['gpts']):.1%}" if kind == "weak"
                    else f"{r['gpts'] / one['gpts']:.2f}x")
                rows.append(f"| {kind} | {ranks} | {'x'.join(map(str, shape))} | "
                            f"{r['topology']} | {mode} | {r['gpts']:.2f} | {ratio} | {r['peak']} | "
                            f"{_seconds(r['compute'])} | {_seconds(r['exchange'])} | "
                            f"{_seconds(r['wait'])} |")
                print(rows[-1], flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    p.add_argument("--weak", type=int, nargs="*", default=[412, 423, 476],
                   help="points of each rank's block (weak scaling); none: skip")
    p.add_argument("--strong", type=int, nargs="*", default=[824, 423, 476],
                   help="the grid split over the ranks (strong scaling); none: skip")
    p.add_argument("--nt", type=int, default=200)
    p.add_argument("--modes", nargs="+", default=["basic", "overlap"],
                   choices=["basic", "overlap"])
    p.add_argument("--backend", default="cuda")
    p.add_argument("--mpirun", default="mpirun", help="the launcher and its flags")
    p.add_argument("--timeout", type=int, default=900)
    args = p.parse_args(argv)
    print("\n".join(table(args)))


if __name__ == "__main__":
    main()

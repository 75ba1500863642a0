"""Weak and strong scaling of the SA-TTI dummy benchmark over MPI ranks (one GPU each on the
CUDA backend), with the step time split into compute, halo exchange and wait.

    python benchmarks/mpi_scaling.py --ranks 1 2 --weak 412 423 476 --strong 824 423 476 \\
        --nt 200 --modes basic overlap

Each run is ``mpirun -n N python demos/dummy_benchmark/run.py -d ... -nt ...`` (no mpirun for
one rank) with STENCILGEN_MPI set to the mode (``--storage float16``: the demo's 16-bit
fields). Weak scaling grows the grid with the ranks: the block ``--weak`` times the topology
the decomposition picks for N blocks of it, so each rank owns one ``--weak`` block; strong
scaling splits ``--strong`` over N. Printed: the GPUs of the host, then one table row per
run (the halo transport; GPts/s from the demo's global figure, timed by the slowest rank;
efficiency or speed-up against one rank; max |P|, which must agree with one rank's; the
slowest rank's compute, exchange and wait seconds and its host's exchange calls), as
Markdown for docs/performance.md. A run whose report line says two ranks shared a GPU, or
that the ranks moved halos differently, stops the table (those are not scaling figures).

    python benchmarks/mpi_scaling.py --chart docs/img/mpi_scaling.png \
        --from float32=benchmarks/records/mpi_scaling_float32.md

draws the chart of recorded tables instead of running anything.
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
RANKS = re.compile(r"compute ([\d.]+) s \+ wait ([\d.]+) s, halo exchange ([\d.]+) s "
                   r"\(exchange calls ([\d.]+) s\)")
TOPOLOGY = re.compile(r"topology (\([\d, ]+\))")
PLACED = re.compile(r"ranks on \[(.*)\]")
PLACED_MANY = re.compile(r"ranks on (\d+) distinct devices via (\S+)")
RANK_ON = re.compile(r"(\d+): (.*) via (\S+)")


def placement(text: str, ranks: int, gpus: bool) -> str:
    """The halo transport of a run whose report line (``ranks on [...]``) says where each
    rank ran; refuses (SystemExit) a run where two ranks shared a GPU or the ranks' halos
    moved differently: its figures would not be scaling figures."""
    many, listed = PLACED_MANY.search(text), PLACED.search(text)
    if ranks == 1 and not (many or listed):
        return "-"
    if many:
        devices, transports = int(many.group(1)), many.group(2).split("/")
    elif listed:
        items = [RANK_ON.fullmatch(item.strip())
                 for item in re.split(r", (?=\d+: )", listed.group(1))]
        if None in items or len(items) != ranks:
            raise SystemExit(f"refused: cannot read where the {ranks} ranks ran from "
                             f"'{listed.group(0)}'")
        devices = len({m.group(2) for m in items})
        transports = sorted({m.group(3) for m in items})
    else:
        raise SystemExit(f"refused: the run's report says nowhere where its {ranks} ranks ran")
    if gpus and devices < ranks:
        raise SystemExit(f"refused: {ranks} ranks ran on {devices} GPUs, so some shared one "
                         f"and time-sliced it ({(listed or many).group(0)}); give each rank a "
                         f"GPU of its own (as many GPUs as ranks, one launch per host)")
    if len(transports) > 1:
        raise SystemExit(f"refused: the ranks' halos moved by different transports "
                         f"({', '.join(transports)}): {(listed or many).group(0)}")
    return transports[0]


def command(args, ranks: int, shape) -> list[str]:
    run = [sys.executable, str(DEMO), "-d", *map(str, shape), "-nt", str(args.nt),
           "--backend", args.backend] + (["--storage", args.storage] if args.storage else [])
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
           "topology": "-", "compute": None, "exchange": None, "wait": None, "calls": None,
           "transport": placement(text, ranks, args.backend == "cuda")}
    if TOPOLOGY.search(text):
        out["topology"] = TOPOLOGY.search(text).group(1)
    if RANKS.search(text):
        out.update(zip(("compute", "wait", "exchange", "calls"),
                       (float(v) for v in RANKS.search(text).groups())))
    return out


def weak_shape(block, ranks: int) -> tuple[int, ...]:
    """The grid of ``ranks`` blocks of ``block`` points, arranged as the decomposition
    would split it."""
    return tuple(b * t for b, t in zip(block, topology(tuple(block), ranks)))


def _seconds(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(args) -> list[str]:
    rows = ["| scaling | ranks | grid | topology | mode | halos | GPts/s | vs 1 rank | "
            "max \\|P\\| | compute s | exchange s | wait s | calls s |",
            "| --- | ---: | --- | --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
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
                            f"{r['topology']} | {mode} | {r['transport']} | {r['gpts']:.2f} | "
                            f"{ratio} | {r['peak']} | "
                            f"{_seconds(r['compute'])} | {_seconds(r['exchange'])} | "
                            f"{_seconds(r['wait'])} | {_seconds(r['calls'])} |")
                print(rows[-1], flush=True)
    return rows


ROW = re.compile(r"^\| (weak|strong) \| (\d+) \| [^|]+\| [^|]+\| (\S+) \| [^|]+\| [\d.]+ \| "
                 r"([\d.]+)(%|x) \|", re.M)


def series(tables: dict) -> dict:
    """{"weak"/"strong": {label: [(ranks, efficiency % or speed-up)]}} from tables of rows
    as ``table`` prints them ({label: text}); a mode's line starts at the one-rank row."""
    out = {"weak": {}, "strong": {}}
    for label, text in tables.items():
        rows = ROW.findall(text)
        for kind, ranks, mode, value, _ in rows:
            if mode == "-":
                continue
            one = next(v for k, r, m, v, _ in rows if k == kind and m == "-")
            name = f"{label}, {mode}" if label else mode
            line = out[kind].setdefault(name, [(1, float(one))])
            line.append((int(ranks), float(value)))
    return out


def chart(args) -> None:
    """Draw ``--chart`` from the tables in ``--from`` (label=FILE, rows as printed)."""
    from benchmarks import charts
    tables = {}
    for item in args.tables:
        label, _, path = item.rpartition("=")
        tables[label] = Path(path).read_text()
    drawn = charts.mpi_scaling_chart(args.chart, series(tables), args.title)
    print(f"Wrote {args.chart}: " + "; ".join(f"{k} {label} {pairs}"
                                               for k, lines in drawn.items()
                                               for label, pairs in lines.items()))


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
    p.add_argument("--storage", default=None, choices=["float16", "bfloat16"],
                   help="P, M and the medium stored in 16 bits (the demo's --storage)")
    p.add_argument("--mpirun", default="mpirun", help="the launcher and its flags")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--chart", metavar="FILE.png",
                   help="draw the scaling chart of the tables --from names (no run)")
    p.add_argument("--from", dest="tables", nargs="+", default=[], metavar="LABEL=FILE",
                   help="with --chart: tables as this script prints them, each labelled")
    p.add_argument("--title", default="SA-TTI over MPI ranks", help="the chart's title")
    args = p.parse_args(argv)
    if args.chart:
        if not args.tables:
            p.error("--chart draws the tables given by --from LABEL=FILE ...")
        return chart(args)
    if args.backend == "cuda":
        print(f"GPUs: {gpu_models()}", flush=True)
    print("\n".join(table(args)))


def gpu_models() -> str:
    """The GPUs nvidia-smi lists on this host (what the table was measured on)."""
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=60).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "unknown (no nvidia-smi)"
    names = [n.strip() for n in names if n.strip()]
    return ", ".join(f"{names.count(n)} x {n}" for n in dict.fromkeys(names)) or "none"


if __name__ == "__main__":
    main()

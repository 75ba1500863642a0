"""Shots per minute of a survey against the number of GPU workers, and whether the records
agree.

    python benchmarks/survey_scaling.py --gpus 1 2 4 --nshots 32 -d 401 401 301 -nt 1000

Each run is ``python demos/survey/run.py --nshots ... --backend cuda --gpus N --out
DIR/records_N`` (a worker per GPU, the survey's own local Dask cluster), with a fresh records
folder (a rerun would skip the shots on disk), after a one-shot survey that leaves the build
and its tuning in the cache (``--no-warm``: none; the first run then pays them). Printed, as Markdown for docs/performance.md:
per N, the shots per minute over the whole survey (workers' start and first builds in it),
counted from the first shot's end, and counted from the end of the N-th shot (none of the
workers' first shots counted: the first-end figure counts the other workers' first shots,
which ran mostly before it, and so overstates the rate), the speed-ups against the first N,
and the
largest difference of any record from the first run's (relative to that record's largest
value; the shots are the same programs on the same GPUs model, so 0 is expected).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demos" / "survey" / "run.py"
RAN = re.compile(r"Ran (\d+) shots \((\d+) already on disk, (\d+) failed\) in ([\d.]+) s: "
                 r"([\d.]+) shots/min(?:, ([\d.]+) shots/min after the first shot's end "
                 r"\(([\d.]+) s\))?(?:, ([\d.]+) after the first \d+ \(([\d.]+) s\))?")


def survey(args, gpus: int, out: Path, nshots: int | None = None) -> dict:
    """One survey's figures (the demo's last line parsed)."""
    nshots = nshots or args.nshots
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, str(DEMO), "--nshots", str(nshots), "--backend", "cuda",
           "--gpus", str(gpus), "-d", *map(str, args.shape), "-nt", str(args.nt),
           "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    text = done.stdout + done.stderr
    found = RAN.search(text)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{text[-3000:]}")
    shots, _, failed, seconds, whole, steady, first, settled, _ = found.groups()
    if int(failed) or int(shots) != nshots:
        raise SystemExit(f"{gpus} GPUs: {shots} shots ran, {failed} failed\n{text[-3000:]}")
    return {"seconds": float(seconds), "whole": float(whole),
            "steady": float(steady) if steady else None, "first": float(first or 0),
            "settled": float(settled) if settled else float(steady) if steady else None}


def difference(a: Path, b: Path) -> float:
    """The largest difference between the records in ``a`` and ``b``, each relative to its
    record's largest value in ``a``."""
    worst = 0.0
    for path in sorted(a.glob("shot_*.npz")):
        with np.load(path) as x, np.load(b / path.name) as y:
            ra, rb = x["record"], y["record"]
            scale = float(np.abs(ra).max()) or 1.0
            worst = max(worst, float(np.abs(ra - rb).max()) / scale)
    return worst


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--nshots", type=int, default=32)
    p.add_argument("-d", "--shape", type=int, nargs="+", default=[401, 401, 301])
    p.add_argument("-nt", "--nt", type=int, default=1000)
    p.add_argument("--dir", default="survey_scaling", help="where the records go")
    p.add_argument("--timeout", type=int, default=1800)
    p.add_argument("--no-warm", dest="warm", action="store_false",
                   help="no one-shot survey first (the first run then builds the Operator)")
    args = p.parse_args(argv)
    rows = ["| GPU workers | shots | seconds | shots/min | vs first | first shot's end s | "
            "shots/min after it | vs first | after every worker's first | vs first | "
            "records vs first |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    if args.warm:   # the build and its tuning into the cache, so no run below pays them
        survey(args, 1, Path(args.dir) / "warm", nshots=1)
    base, first_out = None, None
    for n in args.gpus:
        out = Path(args.dir) / f"records_{n}"
        r = survey(args, n, out)
        base = base or r
        first_out = first_out or out
        steady = "-" if r["steady"] is None else f"{r['steady']:.1f}"
        ratio = "-" if r["steady"] is None or base["steady"] is None else \
            f"{r['steady'] / base['steady']:.2f}x"
        settled = "-" if r["settled"] is None else f"{r['settled']:.1f}"
        vs = "-" if r["settled"] is None or base["settled"] is None else \
            f"{r['settled'] / base['settled']:.2f}x"
        rows.append(f"| {n} | {args.nshots} | {r['seconds']:.1f} | {r['whole']:.1f} | "
                    f"{r['whole'] / base['whole']:.2f}x | {r['first']:.1f} | {steady} | "
                    f"{ratio} | {settled} | {vs} | {difference(first_out, out):.1e} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()

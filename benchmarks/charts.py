"""Performance charts: a roofline (operational intensity against GFlops/s, the measured
bandwidth and the datasheet compute ceiling) and GPts/s against grid size and space order.

    python benchmarks/charts.py --backend c cuda --out docs/img      # the charts of the docs

runs ``roofline.py`` and ``scaling.py`` for each backend on this machine and writes
``roofline.png`` and ``scaling.png`` into ``--out``. Each chart function returns the points
it drew, read back from the figure, so that tests can hold them against the printed figures.
matplotlib is an optional extra (``pip install 'stencilgen[plot]'``).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HINT = ("the charts need matplotlib, an optional extra: pip install 'stencilgen[plot]' "
        "(or pip install matplotlib)")
FIGSIZE, DPI = (8.0, 5.5), 100     # pixels: 800 x 550
SIZE_FIGSIZE = (12.0, 4.8)          # two panels: 1200 x 480

#: fp32 datasheet peaks (GFlop/s, no tensor cores) by a word of the GPU's name
GPU_PEAKS = {"H200": 66900.0, "H100": 66900.0, "A100": 19500.0}


def pyplot():
    """matplotlib's pyplot on the Agg backend, or SystemExit with how to install it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(f"No chart: {HINT}") from None
    return plt


def cpu_peak() -> tuple[float, str]:
    """(GFlop/s, how it was found) of this CPU in fp32: cores x max clock x 32 flops a cycle
    (two 8-lane FMA units: AVX2), an estimate from lscpu, not a datasheet."""
    cores, mhz = os.cpu_count() or 1, None
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        found = re.search(r"CPU max MHz:\s*([\d.]+)", text) or \
            re.search(r"CPU MHz:\s*([\d.]+)", text)
        mhz = float(found.group(1)) if found else None
    except (OSError, subprocess.SubprocessError):
        pass
    mhz = mhz or 2500.0
    return cores * mhz * 1e-3 * 32, f"{cores} cores x {mhz / 1000:.2f} GHz x 32 flop/cycle"


def gpu_peak(name: str) -> tuple[float, str] | None:
    for word, peak in GPU_PEAKS.items():
        if word in name:
            return peak, f"{word} fp32 datasheet"
    return None


def roofline_chart(path, points, roofs, title="Roofline") -> list[tuple]:
    """Log-log chart of ``points`` [(label, backend, oi, gflops)] under each backend's
    ``roofs`` {backend: (GB/s, peak GFlop/s, peak note)}; returns [(label, backend, oi,
    gflops)] as drawn."""
    plt = pyplot()
    import numpy as np
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    ois = [p[2] for p in points] or [1.0]
    x = np.logspace(np.log10(min(ois) / 4), np.log10(max(ois) * 8), 200)
    colours = {b: f"C{i}" for i, b in enumerate(roofs)}
    for backend, (bw, peak, note) in roofs.items():
        ax.plot(x, np.minimum(bw * x, peak), "-", color=colours[backend],
                label=f"{backend}: {bw:.0f} GB/s, {peak / 1000:.1f} TFlop/s ({note})")
    drawn = []
    for label, backend, oi, gflops in points:
        dot = ax.scatter([oi], [gflops], color=colours[backend], zorder=3, s=28)
        ax.annotate(label, (oi, gflops), textcoords="offset points", xytext=(5, 4),
                    fontsize=7)
        (xo, yo), = dot.get_offsets()
        drawn.append((label, backend, float(xo), float(yo)))
    ax.set(xscale="log", yscale="log", xlabel="operational intensity (flop/byte)",
           ylabel="GFlop/s", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return drawn


def scaling_chart(path, by_size, by_order, title="GPts/s", fixed: str = "a fixed grid") -> dict:
    """Two panels: GPts/s against grid points ({backend: [(points, gpts)]}) and against space
    order ({backend: [(order, gpts)]}); returns the same dicts as drawn."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=SIZE_FIGSIZE, dpi=DPI)
    drawn = {}
    for ax, data, key, xlabel in ((axes[0], by_size, "size", "grid points"),
                                  (axes[1], by_order, "order", "space order")):
        drawn[key] = _lines(ax, data)
        ax.set(xlabel=xlabel, ylabel="GPts/s", xscale="log" if key == "size" else "linear")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())   # crowded labels on log axes
    _finish(plt, fig, axes, path, (f"{title}: acoustic, space order 8",
                                   f"{title}: acoustic, {fixed}"))
    return drawn


def _lines(ax, data: dict) -> dict:
    """One line a label of ``data`` ({label: [(x, y)]}); the points as drawn."""
    drawn = {}
    for label, pairs in data.items():
        line, = ax.plot([p[0] for p in pairs], [p[1] for p in pairs], "o-", label=label)
        drawn[label] = list(zip(map(float, line.get_xdata()), map(float, line.get_ydata())))
    return drawn


def _finish(plt, fig, axes, path, titles):
    """Grids, legends and ``titles`` on the panels; the figure written to ``path``."""
    for ax, title in zip(axes, titles):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def mpi_scaling_chart(path, series: dict, title="SA-TTI over MPI ranks") -> dict:
    """Two panels: weak-scaling efficiency (%) and strong-scaling speed-up against ranks,
    ``series`` {"weak"/"strong": {label: [(ranks, value)]}} (efficiency in %, speed-up as a
    factor), with the ideal lines; returns the same as drawn."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=SIZE_FIGSIZE, dpi=DPI)
    drawn = {}
    for ax, key, ylabel in ((axes[0], "weak", "weak-scaling efficiency, %"),
                            (axes[1], "strong", "speed-up over one GPU")):
        ranks = sorted({r for pairs in series.get(key, {}).values() for r, _ in pairs})
        if ranks:
            ideal = [100.0] * len(ranks) if key == "weak" else [float(r) for r in ranks]
            ax.plot(ranks, ideal, "--", color="grey", label="ideal")
        drawn[key] = _lines(ax, series.get(key, {}))
        ax.set(xlabel="MPI ranks (one GPU each)", ylabel=ylabel, xticks=ranks)
    _finish(plt, fig, axes, path, (f"{title}: weak scaling", f"{title}: strong scaling"))
    return drawn


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", nargs="+", default=["c"])
    p.add_argument("--out", default="docs/img")
    p.add_argument("--quick", action="store_true", help="small grids (seconds, for a check)")
    args = p.parse_args(argv)
    pyplot()   # say at once if matplotlib is missing
    here = Path(__file__).resolve().parent
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    quick = ["--tti", "32", "32", "32", "--acoustic", "96", "96", "96", "--nt", "4"]
    sizes = ["--sizes", "24", "32", "--space-orders", "4", "8", "--nt", "4"]
    for script, extra, name in (("roofline.py", quick, "roofline.png"),
                                ("scaling.py", sizes, "scaling.png")):
        cmd = [sys.executable, str(here / script), "--backend", *args.backend,
               "--plot", str(out / name)] + (extra if args.quick else [])
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

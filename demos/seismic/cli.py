"""Command-line pieces the demos share: checked number types and the common flags."""
from __future__ import annotations

import argparse
import math
import os

import numpy as np

BACKENDS = ("auto", "c", "openacc", "cuda")
DTYPES = {"float32": np.float32, "float64": np.float64}


def _integer(text: str, ok, message: str) -> int:
    """An argparse integer that satisfies ``ok``; otherwise ``message`` (formatted with it)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(message.format(value))
    return value


def grid_points(text: str) -> int:
    return _integer(text, lambda v: v >= 2, "{} grid points: each dimension needs at least 2")


def positive(text: str) -> int:
    return _integer(text, lambda v: v >= 1, "{} must be at least 1")


def nonnegative(text: str) -> int:
    return _integer(text, lambda v: v >= 0, "{} must be at least 0")


def space_order(text: str) -> int:
    return _integer(text, lambda v: 2 <= v <= 32 and v % 2 == 0,
                    "{}: use an even number from 2 to 32")


def _real(text: str, ok, message: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(message.format(value))
    return value


def frequency(text: str) -> float:
    return _real(text, lambda v: v > 0, "{} must be a positive frequency in kHz")


def percentile(text: str) -> float:
    return _real(text, lambda v: 0 < v <= 100, "{}: give a percentile in (0, 100]")


def add_common(p: argparse.ArgumentParser, shape, nt_help: str, nt_default=None,
               so_help: str = "space order, even, 2..32; default 8") -> None:
    """-d/--shape, -nt/-tn, -so, --backend, --dtype."""
    p.add_argument("-d", "--shape", dest="shape", nargs="+", type=grid_points,
                   default=list(shape), metavar="N",
                   help="grid points per dimension (x, [y,] z): 3 values (3D) or 2 (2D); "
                        f"default {' '.join(map(str, shape))}")
    p.add_argument("-nt", "-tn", "--nt", dest="nt", type=positive, default=nt_default,
                   help=nt_help)
    p.add_argument("-so", "--space-order", dest="space_order", type=space_order, default=8,
                   help=so_help)
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="code generator (default: STENCILGEN_BACKEND, else auto: CUDA when a "
                        "GPU and nvcc are present, else C)")
    p.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                   help="floating-point type of the fields; default float32")


def add_shot_flags(p: argparse.ArgumentParser, nbl: int, f0: float) -> None:
    """--nbl, --f0, --outdir, --no-plot: the sponge, the wavelet and the pictures."""
    p.add_argument("--nbl", type=nonnegative, default=nbl,
                   help=f"absorbing layer width in grid points per side; default {nbl}")
    p.add_argument("--f0", type=frequency, default=f0,
                   help=f"peak frequency of the Ricker wavelet in kHz; default {f0:g}")
    p.add_argument("--outdir", default=".", help="directory for the PNGs; default .")
    p.add_argument("--no-plot", dest="plot", action="store_false", help="no pictures")


def check_dims(p: argparse.ArgumentParser, args, allowed=(2, 3)) -> None:
    if len(args.shape) not in allowed:
        want = " or ".join(f"{n} values ({n}D)" for n in allowed)
        p.error(f"argument -d/--shape: expected {want}, got {len(args.shape)}: "
                f"{' '.join(map(str, args.shape))}")


def perf_logging() -> None:
    """Select log level PERF (the performance report) unless STENCILGEN_LOGGING is set."""
    import stencilgen
    if "STENCILGEN_LOGGING" not in os.environ:
        stencilgen.configuration["log-level"] = "PERF"

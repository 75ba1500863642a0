"""Command-line pieces the demos share: checked number types and the common flags."""
from __future__ import annotations

import argparse
import math
import os
import sys

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
    """-d/--shape, -nt/-tn, -so, --backend, --dtype, --broken-mpirun."""
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
    add_mpi(p)


STORAGES = ("float32", "float16", "bfloat16")


def add_storage(p: argparse.ArgumentParser, what: str) -> None:
    """--storage and --compensated: the fields (``what``) stored in 16 bits, float32 arithmetic."""
    p.add_argument("--storage", choices=STORAGES, default="float32",
                   help=f"what {what} are stored as; float16 and bfloat16 halve the bytes per "
                        "point, the arithmetic stays float32 (loads widen, stores round); "
                        "default float32")
    p.add_argument("--compensated", action="store_true",
                   help="compensated stepping: the wavefields keep what their 16-bit stores "
                        "round off in a companion field of the same format (more bytes, less "
                        "error); needs --storage float16 or bfloat16")


def check_storage(p: argparse.ArgumentParser, args) -> None:
    """--compensated needs 16-bit storage, and 16-bit storage computes in float32."""
    if args.compensated and args.storage == "float32":
        p.error("argument --compensated: keeps what 16-bit stores round off; give --storage "
                "float16 or --storage bfloat16 too")
    if args.storage != "float32" and getattr(args, "dtype", "float32") != "float32":
        p.error(f"argument --storage: {args.storage} storage computes in float32; leave "
                f"--dtype {args.dtype} out")


def storage(args):
    """The ``storage=`` argument of the fields: None for float32, else the format's name."""
    return None if args.storage == "float32" else args.storage


def storage_label(args) -> str:
    """``storage float16 (compensated), float32 arithmetic``, or the dtype's name."""
    if args.storage == "float32":
        return getattr(args, "dtype", "float32")
    extra = " (compensated)" if args.compensated else ""
    return f"storage {args.storage}{extra}, float32 arithmetic"


def gpu_memory_line(grid) -> str | None:
    """``GPU memory per rank (GiB in use, fields' copies in it, of the GPU's): ...``, each
    rank's (None where no CUDA run happened)."""
    from stencilgen.data.places import gpu_memory
    mine = gpu_memory()
    ranks = [mine] if grid.decomposition is None else grid.decomposition.comm.allgather(mine)
    if any(r is None for r in ranks):
        return None
    gib = 2 ** 30
    each = ", ".join(f"{used / gib:.1f} ({fields / gib:.1f}) of {total / gib:.1f}"
                     for fields, used, total in ranks)
    return f"GPU memory per rank (GiB in use (fields' copies) of the GPU's): {each}"


def traffic_line(args, summary, field) -> str:
    """``Storage float16, compensated (P stored in units of 2**-2): 14.1 bytes per grid
    point...``: the storage the run used, the wavefield's scale, the summary's byte count."""
    from stencilgen.seismic.propagators import bytes_per_point
    name = args.storage if args.storage != "float32" else getattr(args, "dtype", "float32")
    comp = ", compensated" if args.compensated else ""
    scale = field.storage_scale
    scaled = f" ({field.name} stored in units of 2**{int(math.log2(scale))})" if scale != 1 \
        else ""
    return (f"Storage {name}{comp}{scaled}: {bytes_per_point(summary):.1f} bytes per grid "
            "point per time step (compulsory traffic, as the performance summary counts)")


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


def _truth(text: str) -> bool:
    low = str(text).strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text}: give True or False")


def add_mpi(p: argparse.ArgumentParser) -> None:
    """--broken-mpirun: the workshop's flag for machines whose MPI launcher is broken."""
    p.add_argument("--broken-mpirun", type=_truth, default=False, metavar="{True,False}",
                   help="True: do not initialise MPI, run as one process (for machines whose "
                        "mpirun is broken); False (default): under mpirun -n N (or with "
                        "STENCILGEN_MPI=1) the grid is split over the N ranks")


#: what launchers set in each rank's environment: the number of ranks
_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")


def mpi_setup(args) -> int:
    """Split the grids over the ranks when launched by mpirun -n N (N > 1) or asked by
    STENCILGEN_MPI, unless --broken-mpirun True; ranks other than 0 print nothing. Returns
    this rank's number (0 without MPI)."""
    from stencilgen import configuration
    if getattr(args, "broken_mpirun", False):
        configuration["mpi"] = "off"
        return 0
    if configuration["mpi"] == "off":
        launched = max((int(os.environ.get(k, "1") or 1) for k in _LAUNCHED), default=1)
        if launched <= 1:
            return 0
        configuration["mpi"] = "basic"
    from stencilgen.distributed.mpi import import_mpi
    rank = import_mpi().COMM_WORLD.Get_rank()
    if rank:
        sys.stdout = open(os.devnull, "w")
        configuration["log-level"] = "WARNING"
    return rank


def print_mpi(grid) -> None:
    """``MPI: 2 ranks, topology (1, 1, 2), rank 0 owns 412x423x238 points`` where split."""
    from stencilgen.distributed.mpi import mode
    dist = grid.decomposition
    if dist is not None:
        print(f"MPI: {dist.size} ranks ({mode()} halo exchange), topology {dist.dims}, "
              f"rank 0 owns {'x'.join(map(str, dist.local_shape))} points")

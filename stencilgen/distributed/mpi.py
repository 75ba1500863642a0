"""MPI for split grids: mpi4py imported only when a run asks for it, a rank's error ending
the whole job (not a hang), and fields and receivers gathered for plotting."""
from __future__ import annotations

import os
import sys
import time
import traceback

import numpy as np

from ..configuration import configuration
from ..errors import InvalidArgument

_aborting = {"installed": False}
ABORT_GRACE = 1.0   # seconds a failing rank waits, its error printed, before ending the job
# the launchers' names of a process's rank on its host
_LOCAL_RANK = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID")


def import_mpi():
    """mpi4py's MPI module, or our error saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise InvalidArgument(
            "MPI runs need mpi4py and an MPI library: pip install 'stencilgen[mpi]' (mpi4py, "
            "for a system MPI) or 'stencilgen[mpi-wheel]' (mpi4py and the mpich wheel)") from None
    return MPI


def default_comm():
    """The communicator a Grid built without ``comm=`` splits over: MPI.COMM_WORLD where the
    ``mpi`` setting (STENCILGEN_MPI) is on, else None."""
    if configuration["mpi"] == "off":
        return None
    return import_mpi().COMM_WORLD


def local_rank() -> int | None:
    """This process's rank among the MPI ranks on its host, where it runs as one rank of
    several (mpi4py imported and MPI initialised); else None. Read from the launcher's
    environment (Open MPI, MPICH/Hydra, Slurm), else the rank in COMM_WORLD (right on one
    host): no collective call, which a rank reaching this alone would hang in."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is None or not MPI.Is_initialized() or MPI.Is_finalized() or \
            MPI.COMM_WORLD.Get_size() < 2:
        return None
    for name in _LOCAL_RANK:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return MPI.COMM_WORLD.Get_rank()


def mode() -> str:
    """How split runs exchange halos: "basic" or "overlap" (the ``mpi`` setting; "basic"
    when a Grid was given ``comm=`` with the setting off)."""
    return "overlap" if configuration["mpi"] == "overlap" else "basic"


def _abort_hook():
    def hook(kind, value, tb):
        text = "".join(traceback.format_exception(kind, value, tb))
        MPI = import_mpi()
        rank = MPI.COMM_WORLD.Get_rank()
        sys.stderr.write(f"[rank {rank}] {text}")
        sys.stderr.write(f"[rank {rank}] ending the MPI job: this rank failed\n")
        sys.stderr.flush()
        # the launcher forwards a rank's output through a pipe it reads in its own time, and
        # MPI_Abort kills the rank's proxy with it: without a pause the message can be lost
        time.sleep(ABORT_GRACE)
        MPI.COMM_WORLD.Abort(1)   # ends every rank, this one included
    return hook


def abort_on_error() -> None:
    """An exception no one catches on one rank ends every rank (MPI_Abort) after printing it,
    instead of leaving the others waiting for its messages."""
    if not _aborting["installed"]:
        _aborting["installed"] = True
        sys.excepthook = _abort_hook()


def gather(function, root: int | None = 0):
    """The whole of ``function.data`` (every time slot, the global grid) on rank ``root`` as
    one numpy array, None on the other ranks (``root=None``: on every rank); a copy of the
    data itself where the grid is not split."""
    dist = function.grid.decomposition
    if dist is None:
        return np.array(function.data)
    local = np.asarray(function.data.local)
    if root is None:
        parts = dist.comm.allgather((dist.owned, local))
    else:
        parts = dist.comm.gather((dist.owned, local), root=root)
        if dist.comm.Get_rank() != root:
            return None
    time = local.shape[:local.ndim - len(dist.shape)]
    out = np.zeros(time + dist.shape, dtype=local.dtype)
    for owned, block in parts:
        out[(Ellipsis,) + tuple(slice(lo, hi + 1) for lo, hi in owned)] = block
    return out


def allreduce_max(value: float, grid) -> float:
    """The largest of ``value`` over the ranks ``grid`` is split over (``value`` itself where
    it is not split): for figures such as max |u| that every rank prints alike."""
    dist = grid.decomposition
    if dist is None:
        return value
    return dist.comm.allreduce(value, op=import_mpi().MAX)

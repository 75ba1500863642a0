"""How a shot keeps its forward wavefield for the gradient, chosen before it runs from the
memory where its arrays live: every step ("memory"), every k-th step ("snapshots": the sum
over time sampled, k times each kept step), or nothing ("checkpoints": the states recomputed
from binomial checkpoints, the gradient the same as from memory to round-off).

A model whose kept wavefield would not fit on the GPU then runs recomputing forward steps
instead of stopping at an out-of-memory error, and says so first.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from stencilgen import logger as log
from stencilgen import platform
from stencilgen.data import places, precision
from stencilgen.errors import ExecutionError, InvalidArgument

from .checkpointing import cost

MODES = ("memory", "snapshots", "checkpoints")
#: the part of the free memory a shot plans with: the rest is left to the runtime's own
#: allocations (the CUDA context, launch buffers) and to the caller's tensors
MARGIN = 0.9


def field_bytes(f, slots: int | None = None) -> int:
    """Bytes of ``f``'s values with halos (``slots`` time slots instead of its own), in the
    format it stores: counted from its shape, nothing allocated."""
    shape = f.field.shape_with_halo
    if slots is not None:
        shape = (slots,) + shape[1:]
    return int(np.prod(shape)) * _itemsize(f.field.store, f.field.dtype)


def _itemsize(fmt, dtype) -> int:
    return 2 if fmt else np.dtype(dtype).itemsize   # the 16-bit formats, else the dtype


def step_bytes(u, storage=None) -> int:
    """Bytes of one time slot of ``u``'s space (halos included) stored as ``storage`` (None:
    in u's dtype): one kept step of a TimeFunction u, or of one on the grid of Function u."""
    _, fmt = precision.storage_format(storage, u.field.dtype, "keep")
    space = u.field.shape_with_halo[-len(u.field.halo):]
    return int(np.prod(space)) * _itemsize(fmt, u.field.dtype)


def free_memory(backend=None) -> tuple[int, int, str]:
    """(free, total, where) bytes where an Operator built for ``backend`` keeps its arrays
    while it runs: the GPU's for CUDA, else the host's (OpenACC's device copies included,
    which each apply checks again)."""
    target = platform.select(backend)
    if target.emitter.residency == "cuda":
        try:
            free, total = places.cuda_place(platform.toolchain(target.name)).meminfo()
            return free, total, "the GPU"
        except ExecutionError:   # no GPU here (an emulated CUDA build runs on the host)
            pass
    return (*host_meminfo(), "the host")


def host_meminfo() -> tuple[int, int]:
    """(available, total) bytes of host memory."""
    page = os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


def size(n: int) -> str:
    """Bytes in MiB, or GiB from 1 GiB up."""
    return f"{n / 2 ** 20:.1f} MiB" if n < 2 ** 30 else f"{n / 2 ** 30:.2f} GiB"


@dataclass(frozen=True)
class Keeping:
    """What a shot keeps of ``nt`` forward steps, and what it costs."""

    mode: str                     # one of MODES
    nt: int
    step_bytes: int               # one kept step
    state_bytes: int              # one checkpoint: every time slot of the state fields
    factor: int = 1               # snapshots: every factor-th step is kept
    checkpoints: int | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held for the gradient: the kept steps or the checkpoints."""
        if self.mode == "checkpoints":
            return self.checkpoints * self.state_bytes
        return ((self.nt - 1) // self.factor + 1) * self.step_bytes

    @property
    def forward_steps(self) -> int:
        """Forward steps of one gradient (nt where nothing is recomputed)."""
        if self.mode == "checkpoints":
            return cost(self.nt, self.checkpoints) + 1
        return self.nt

    def describe(self) -> str:
        if self.mode == "memory":
            return f"every step kept ({size(self.nbytes)})"
        if self.mode == "snapshots":
            return f"kept one step in {self.factor} ({size(self.nbytes)})"
        return (f"recomputed from {self.checkpoints} binomial checkpoints "
                f"({size(self.nbytes)}; {self.forward_steps} forward steps a gradient, "
                f"{self.forward_steps / self.nt:.2f} times the {self.nt} of the run)")


def plan(who: str, nt: int, step: int, state: int, others: int, backend=None,
         checkpoints=None, snapshots=None, memory=None) -> Keeping:
    """The Keeping of a shot of ``nt`` steps whose kept step takes ``step`` bytes, whose
    checkpoint ``state`` and whose other fields ``others``.

    ``checkpoints`` (int) or ``snapshots`` (int k) choose; neither: every step where it fits
    in ``memory`` bytes (default: MARGIN of the free memory where the arrays live, less
    ``others``), else as many checkpoints as fit there, said in a warning."""
    if checkpoints is not None and snapshots is not None:
        raise InvalidArgument(f"{who}: give checkpoints= or snapshots=, not both")
    for name, value in (("checkpoints", checkpoints), ("snapshots", snapshots),
                        ("memory", memory)):
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, (int, np.integer)) or value < 1):
            raise InvalidArgument(f"{who}: {name}={value!r}; give a positive integer")
    if memory is None:
        free, total, where = free_memory(backend)
        room = int(MARGIN * free) - others
        told = f"{where} has {size(free)} free of {size(total)}, {size(others)} of it " \
               f"for the shot's other fields"
    else:
        room, told = int(memory), f"memory={size(int(memory))} is given"
    if snapshots is not None:
        keeping = Keeping("snapshots", nt, step, state, factor=int(snapshots))
    elif checkpoints is not None:
        keeping = Keeping("checkpoints", nt, step, state, checkpoints=min(int(checkpoints), nt))
    else:
        keeping = Keeping("memory", nt, step, state)
        if keeping.nbytes > room:
            most = room // state
            if most < 1:
                raise InvalidArgument(
                    f"{who}: not even one checkpoint of the wavefield ({size(state)}) fits: "
                    f"{told}; free memory or use a smaller model")
            keeping = Keeping("checkpoints", nt, step, state, checkpoints=min(int(most), nt))
            log.warning(f"{who}: keeping all {nt} steps would take {size(nt * step)}, more "
                        f"than fits ({told}): the forward states are "
                        f"{keeping.describe()}")
            return keeping
    if keeping.nbytes > room:
        raise InvalidArgument(
            f"{who}: the wavefield {keeping.describe()} does not fit ({told}); "
            + ("keep fewer snapshots (a larger snapshots=)" if keeping.mode == "snapshots"
               else "use fewer checkpoints")
            + " or leave checkpoints= and snapshots= out to fit what there is")
    log.info(f"{who}: the forward wavefield is {keeping.describe()}")
    return keeping

"""What a backend is told besides the Program: the settings that change the printed source."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EmitOptions:
    """Printing choices handed to a backend's constructor (stencilgen's platform fills them
    from the settings), so that backends read no settings themselves."""

    debug: bool = False               # CUDA: device-side bounds checks, synchronised launches
    nvtx: bool = False                # CUDA: NVTX ranges named by section
    vector_length: int | None = None  # OpenACC: of each parallel loop (None: the compiler's)
    flush_denormals: bool = True      # C: every OpenMP thread flushes denormal floats to zero
    time_tiles: tuple | None = None   # C: (x planes, steps) of time-skewed tiles, None: none
    zero_split: str = "auto"          # CUDA: "auto", the split nests' split a tuned choice;
                                      # "on", always split

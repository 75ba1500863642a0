"""How generated CUDA code launches its kernels: early (a programmatic dependent launch), each
kernel's threads first waiting for the writes of the kernel before it (``sg_early`` and
``SG_GRID_WAIT`` of the backend's prelude)."""
from __future__ import annotations

#: the first statement of every generated kernel: a kernel launched early waits here, before
#: it reads or writes memory, for the kernels before it on its stream
GRID_WAIT = "SG_GRID_WAIT();"


def early(kernel: str, call: str, grid: str = "sg_grid", block: str = "sg_block",
          shared: str = "0", stream: str | None = None) -> str:
    """The C statement launching ``kernel`` (its text with template arguments) with ``call``'s
    arguments, early: it may start while the kernel before it on ``stream`` (None: the
    default) finishes."""
    return f"sg_early({kernel}, {grid}, {block}, {shared}, {stream or 0}, {call});"

"""The layout of a grid array's copy on the GPU: the host's rows (the innermost dimension,
halo included) at a pitch, each moved so that its first interior point starts a 128-byte
segment. On the host the halo shifts every row off that boundary, and a warp reading a row
then touches five 32-byte sectors instead of four (Nsight Compute: 25% more L1 traffic than
DRAM traffic in the copy kernel).

Host and device differ only in where rows start: element k of host row r (``r*width + k``)
is element ``front + r*pitch + k`` on the device, the pitch the width rounded up to 128 bytes
and the front chosen once so that ``front + halo`` is a multiple of it. Every named stride of
the host layout is a whole number of rows, so its device value is ``stride / width * pitch``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEGMENT = 128   # bytes: the L2 cache line; a row's interior starts on one


@dataclass(frozen=True)
class Pitched:
    """The C names of one array's device layout (all ``long`` values of the entry point)."""

    name: str

    @property
    def width(self) -> str:        # elements of a host row
        return f"sg_{self.name}_w"

    @property
    def front(self) -> str:        # elements before the first row
        return f"sg_{self.name}_f"

    @property
    def pitch(self) -> str:        # elements from one device row to the next
        return f"sg_{self.name}_p"

    @property
    def rows(self) -> str:
        return f"sg_{self.name}_rows"

    @property
    def length(self) -> str:       # elements of the device allocation
        return f"sg_{self.name}_dlen"

    def stride(self, host: str) -> str:
        """The device value of the host stride called ``host``."""
        return f"sg_d_{host}"

    def offset(self, host_offset: str) -> str:
        """Where a host offset that starts a row lies on the device."""
        return f"{self.front} + ({host_offset})/{self.width}*{self.pitch}"


def declarations(a, size_last: str, index_expr) -> list[str]:
    """The device layout of grid array ``a`` as C declarations (after the host layout's)."""
    p, lay = Pitched(a.name), a.layout
    per = SEGMENT // np.dtype(a.dtype).itemsize
    halo = lay.halo[-1]
    lines = [f"const long {p.width} = 2*{halo} + {size_last};",
             f"const long {p.front} = ({per} - {halo} % {per}) % {per};",
             f"const long {p.pitch} = ({p.width} + {per - 1})/{per}*{per};",
             f"const long {p.rows} = {lay.count[0]}/{p.width};",
             f"const long {p.length} = {p.front} + {p.rows}*{p.pitch};"]
    lines += [f"const long {p.stride(n)} = {n}/{p.width}*{p.pitch};"
              for n, _ in lay.strides if n]
    return lines


def origin(a) -> str:
    """The device address of the array's first domain point, from its allocation."""
    p, lay = Pitched(a.name), a.layout
    return f"{lay.device} + {p.offset(f'{lay.origin[0]} - {lay.halo[-1]}')} + {lay.halo[-1]}"


def copy(a, to_device: bool, real: str) -> str:
    """The checked cudaMemcpy2D of the array's rows between host and device."""
    p, lay = Pitched(a.name), a.layout
    host = (lay.vec, f"{p.width}*sizeof({real})")
    dev = (f"{lay.device} + {p.front}", f"{p.pitch}*sizeof({real})")
    (dst, dpitch), (src, spitch) = (dev, host) if to_device else (host, dev)
    kind = "cudaMemcpyHostToDevice" if to_device else "cudaMemcpyDeviceToHost"
    return (f"SG_CHECK(cudaMemcpy2D({dst}, {dpitch}, {src}, {spitch}, "
            f"{p.width}*sizeof({real}), {p.rows}, {kind}));")

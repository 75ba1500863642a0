"""The layout of a grid array's copy on the GPU: the host's rows (the innermost dimension,
halo included) at a pitch, each moved so that its first interior point starts a 128-byte
segment. On the host the halo shifts every row off that boundary, and a warp reading a row
then touches five 32-byte sectors instead of four (Nsight Compute: 25% more L1 traffic than
DRAM traffic in the copy kernel).

Host and device differ only in where rows start: element k of host row r (``r*width + k``)
is element ``front + r*pitch + k`` on the device, the pitch the width rounded up to 128 bytes
and the front chosen once so that ``front + halo`` is a multiple of it. Every named stride of
the host layout is a whole number of rows, so its device value is ``stride / width * pitch``.

Rows of 16-bit elements keep ``PAIR_PAD`` more elements before the first row and after every
row: CUDA kernels read them in aligned pairs (``cuda_pairs``), which reach up to two elements
beyond what the stencil reads, and those must stay inside the allocation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEGMENT = 128   # bytes: the L2 cache line; a row's interior starts on one
PAIR_PAD = 2    # elements a row of 16-bit values keeps free on each side for paired reads


def pad(itemsize: int) -> int:
    """Elements kept free before and after each row of elements of ``itemsize`` bytes."""
    return PAIR_PAD if itemsize == 2 else 0


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
    size = 2 if a.store else np.dtype(a.dtype).itemsize   # a 16-bit format, or the dtype's
    per, free = SEGMENT // size, pad(size)
    halo = lay.halo[-1]
    more = f" + {free}" if free else ""
    lines = [f"const long {p.width} = 2*{halo} + {size_last};",
             f"const long {p.front} = ({per} - ({halo}{more}) % {per}) % {per}{more};",
             f"const long {p.pitch} = ({p.width}{more} + {per - 1})/{per}*{per};",
             f"const long {p.rows} = {lay.count[0]}/{p.width};",
             f"const long {p.length} = {p.front} + {p.rows}*{p.pitch};"]
    lines += [f"const long {p.stride(n)} = {n}/{p.width}*{p.pitch};"
              for n, _ in lay.strides if n]
    return lines


def origin(a, inner_first: str | None = None) -> str:
    """Offset of the array's first domain point from the start of its device allocation
    (``inner_first``: the C name of the global index the innermost dimension of a split
    array counts from, which the host origin subtracts and the row arithmetic must not)."""
    p, halo = Pitched(a.name), a.layout.halo[-1]
    if inner_first is None:
        return f"{p.offset(f'{a.layout.origin[0]} - {halo}')} + {halo}"
    return f"{p.offset(f'{a.layout.origin[0]} - {halo} + {inner_first}')} + {halo} - {inner_first}"



@dataclass(frozen=True)
class DeviceLayout:
    """Where the elements of an array of host shape ``shape`` lie in its device allocation:
    rows of ``width`` elements, ``pitch`` apart, the first ``front`` elements in; an unpitched
    layout is the host's (``pitch == width``, ``front == 0``). The numbers the entry point
    computes from the same halo, size and type (``declarations``)."""

    shape: tuple[int, ...]
    itemsize: int
    front: int = 0
    pitch: int = 0

    @classmethod
    def of(cls, shape, itemsize: int, halo_last: int | None) -> "DeviceLayout":
        """The pitched layout of a grid array (``halo_last``: its innermost halo), or the
        host's (None)."""
        shape = tuple(int(n) for n in shape)
        if halo_last is None or not shape:
            return cls(shape, itemsize, 0, shape[-1] if shape else 1)
        per, free = SEGMENT // itemsize, pad(itemsize)
        pitch = -(-(shape[-1] + free) // per) * per
        return cls(shape, itemsize, (per - (halo_last + free) % per) % per + free, pitch)

    @property
    def width(self) -> int:
        return self.shape[-1] if self.shape else 1

    @property
    def rows(self) -> int:
        return int(np.prod(self.shape[:-1], dtype=np.int64)) if self.shape else 1

    @property
    def length(self) -> int:
        """Elements of the allocation."""
        return self.front + self.rows * self.pitch

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides of the host shape on the device."""
        out, step = [], self.pitch
        for n in reversed(self.shape[:-1]):
            out.append(step)
            step *= n
        return tuple(reversed(out)) + (1,)

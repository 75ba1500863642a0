"""Devito's ``devito.data.allocators``: how a Function gets the memory of its values.

stencilgen allocates every field itself, aligned (``ALLOC_ALIGNED``, Devito's default, and
the others are accepted as that); ``DataReference(array)`` makes a Function's values an
existing array, halo included, written in place by the Operators that write the Function.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument


class Allocator:
    """An allocator by name: stencilgen's own aligned allocation, whatever the name."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


ALLOC_ALIGNED = Allocator("ALLOC_ALIGNED")
ALLOC_GUARD = Allocator("ALLOC_GUARD")
ALLOC_NUMA_ANY = Allocator("ALLOC_NUMA_ANY")
ALLOC_NUMA_LOCAL = Allocator("ALLOC_NUMA_LOCAL")
default_allocator = ALLOC_ALIGNED


class DataReference(Allocator):
    """Devito's ``DataReference(array)``: the Function's values, halo included, are
    ``array`` itself (of the Function's ``shape_with_halo`` and dtype, C-contiguous)."""

    def __init__(self, array):
        super().__init__("DataReference")
        if not isinstance(array, np.ndarray):
            raise InvalidArgument(f"DataReference: give a numpy array, got "
                                  f"{type(array).__name__}")
        self.array = array

    def adopt(self, owner: str, shape: tuple, dtype) -> np.ndarray:
        """The array, checked against the values it stands for."""
        a = self.array
        if a.shape != tuple(shape) or a.dtype != np.dtype(dtype) or \
                not a.flags.c_contiguous or not a.flags.writeable:
            raise InvalidArgument(
                f"{owner}: DataReference of a {a.dtype} array of shape {a.shape}"
                f"{'' if a.flags.c_contiguous else ', not C-contiguous'}"
                f"{'' if a.flags.writeable else ', read-only'}; the values need a writable "
                f"C-contiguous {np.dtype(dtype).name} array of shape {tuple(shape)} (the halo "
                f"included: data_with_halo's)")
        return a


def check_allocator(owner: str, allocator):
    """``allocator`` if it is one of this module's (None: the default)."""
    if allocator is None or isinstance(allocator, Allocator):
        return allocator
    raise InvalidArgument(f"{owner}: allocator={allocator!r}; give one of "
                          f"stencilgen.data.allocators (ALLOC_ALIGNED, DataReference(array))")

"""``.data`` of a field on a split grid: this rank's block, indexed in global terms.

As Devito's distributed data: ``u.data[0, 10:20, :]`` reads or writes the points of that
global slice that this rank owns (an empty array where it owns none); a value assigned is
the global selection's, each rank taking its part. numpy functions see the local block
(``np.max(u.data)`` is this rank's maximum; ``stencilgen.distributed.mpi.allreduce_max`` or
``stencilgen.distributed.mpi.gather`` give global figures). ``.local`` is the block in local indices.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument
from .storage import HostArray


def _axis(index, start: int, n: int, size: int):
    """A global index or slice along one axis -> (local key, where its elements start in
    the global selection, how many there are here; None for an integer index)."""
    if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
        i = int(index) + (size if index < 0 else 0)
        if not 0 <= i < size:
            raise IndexError(f"index {int(index)} is out of bounds for an axis of {size} points")
        local = i - start
        return (local if 0 <= local < n else slice(0, 0)), 0, None
    if not isinstance(index, slice):
        raise InvalidArgument(
            f"indexing data on a split grid takes integers and slices (global indices), got "
            f"{index!r}; use .data.local for this rank's block in local indices")
    begin, stop, step = index.indices(size)
    first = begin
    if step < 0:
        raise InvalidArgument("indexing data on a split grid takes slices of positive step; "
                              "use .data.local for this rank's block in local indices")
    if first < start:   # the first element of the selection inside this block
        first += -(-(start - first) // step) * step
    stop = min(stop, start + n)
    count = max(0, -(-(stop - first) // step))
    skipped = (first - begin) // step
    if count == 0:
        return slice(0, 0), 0, 0
    return slice(first - start, first - start + (count - 1) * step + 1, step), skipped, count


class DistributedArray(HostArray):
    """This rank's block of a field's domain; keys are global indices (module docstring)."""

    _blocks: tuple = ()   # per axis: (global first index of the block, global size)

    def __array_finalize__(self, obj):
        super().__array_finalize__(obj)
        self._blocks = ()

    @classmethod
    def of(cls, local: HostArray, blocks) -> "DistributedArray":
        out = local.view(cls)
        out._storage, out._blocks = local._storage, tuple(blocks)
        return out

    @property
    def local(self) -> HostArray:
        """The block in local indices (a watched view, as ``.data`` of an unsplit field)."""
        out = self.view(HostArray)
        out._storage = self._storage
        return out

    @property
    def shape_global(self) -> tuple[int, ...]:
        return tuple(size for _, size in self._blocks)

    def _local_key(self, key):
        """(key into the block, per axis: (offset, count) in the global selection, or None
        for an axis an integer removes)."""
        key = key if isinstance(key, tuple) else (key,)
        if any(k is Ellipsis for k in key):
            at = next(i for i, k in enumerate(key) if k is Ellipsis)
            key = key[:at] + (slice(None),) * (len(self._blocks) - len(key) + 1) + key[at + 1:]
        if len(key) > len(self._blocks):
            raise IndexError(f"too many indices: {len(key)} for data of "
                             f"{len(self._blocks)} dimensions")
        key = key + (slice(None),) * (len(self._blocks) - len(key))
        parts = [_axis(k, start, n, size)
                 for k, (start, size), n in zip(key, self._blocks, self.shape)]
        return tuple(p[0] for p in parts), [None if p[2] is None else (p[1], p[2])
                                              for p in parts]

    def __getitem__(self, key):
        if not self._blocks:
            return super().__getitem__(key)
        local, _ = self._local_key(key)
        return self.local[local]

    def __setitem__(self, key, value):
        if not self._blocks:
            return super().__setitem__(key, value)
        local, kept = self._local_key(key)
        value = value if isinstance(value, np.ndarray) else np.asarray(value)
        if value.ndim:
            value = self._part(value, kept)
        self.local[local] = value

    def _part(self, value, kept):
        """The part of ``value`` (given for the whole global selection) that lands here."""
        axes = [k for k in kept if k is not None]
        if value.ndim > len(axes):
            raise InvalidArgument(f"data of shape {value.shape} does not fit a selection of "
                                  f"{len(axes)} dimensions")
        # broadcasting: the value's axes are the selection's trailing ones; length 1 repeats
        mine = axes[len(axes) - value.ndim:]
        return value[tuple(slice(None) if n == 1 else slice(offset, offset + count)
                           for n, (offset, count) in zip(value.shape, mine))]

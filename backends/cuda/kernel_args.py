"""What the CUDA kernels take: their array, pointer, stride and bound arguments (device
copies in ``device_layout``'s pitched rows, a slot pointer a time slot), the refusals, the
atomic adds of sparse nests. A part of ``CudaBackend``, mixed into it."""
from __future__ import annotations

from contextlib import contextmanager

import cgen as c
import numpy as np

from . import step_passes
from ..common import device_layout, split, zero_box
from ..common.cprinter import ctype, is_complex
from ..common.device_layout import DeviceLayout
from .kernel_text import (
    KernelArg, direct_index, field_layout, index_factor, slot_pointer, statements, symbols_in,
    touched_arrays)


class KernelArgs:
    """What the kernels take: ``CudaBackend``'s arguments of kernels, their refusals, atomics."""

    def pitched(self, a) -> bool:
        """Whether ``a``'s device copy has pitched rows (``device_layout``): grid arrays,
        except those spanning fewer dimensions than the loops (``a.axes``) or with sizes of
        their own along some (``a.factors``: on a subsampling ConditionalDimension; ``a.offsets``:
        on a SubDomain) or a leading axis beyond the grid's (``a.extra``)."""
        return not (a.sparse or a.axes or a.factors or a.offsets or a.extra)

    def device_layout(self, a, shape, itemsize, halo) -> DeviceLayout:
        """The layout of the device copy the entry point expects for array ``a`` whose host
        shape is ``shape`` (halo widths ``halo``), in elements of its stored size (that of a
        16-bit format where it has one, whatever ``itemsize`` the host array has)."""
        size = 2 if a.store else itemsize
        return field_layout(shape, size, halo[-1] if self.pitched(a) and halo else None)

    def _device_stride(self, a, name) -> str:
        return device_layout.Pitched(a.name).stride(name) if self.pitched(a) else name

    def _array_args(self, a, const, slots=None) -> list[KernelArg]:
        lay, real = a.layout, self.ctypes[a.name]
        strides = [KernelArg(n, "const sg_int", self._device_stride(a, n)) for n, _ in lay.strides if n]
        if slots:
            # one pointer per time slot, computed on the host; the time stride is not needed
            step = self._device_stride(a, lay.strides[0][0])
            out = [KernelArg(slot_pointer(a.name, s), f"{'' if w else 'const '}{real} *__restrict__",
                        self._level(a, s) or f"{a.name} + {index_factor(s)}*{step}")
                   for s, w in slots.items()]
            return out + (self._points_args(a) if a.sparse else strides[1:])
        out = [KernelArg(a.name, f"{const}{real} *__restrict__", a.name)]
        out += self._points_args(a) if a.sparse else strides
        if self.options.debug:
            out += [KernelArg(f"sg_{a.name}_{b}", "const sg_int", f"sg_{a.name}_{b}")
                    for b in ("lo", "hi")]
        return out

    def _level(self, a, slot) -> str | None:
        """Where the loop of passes prints: the level table's buffer of ``a``'s ``slot``
        (``cuda_steps``), else None."""
        k = self.stepped
        if not self._leveled or a.name != k.steps.field:
            return None
        s = k.steps
        return step_passes.level(k, s.level(slot) if s.has(slot) else direct_index(slot)[1],
                                self.program.time.name)

    @contextmanager
    def leveled(self):
        """Launch arguments printed through the level table (``_level``)."""
        self._leveled = True
        try:
            yield
        finally:
            self._leveled = False

    @staticmethod
    def _points_args(a) -> list[KernelArg]:
        """A sparse function's point count and (device) coordinates."""
        lay = a.layout
        return [KernelArg(lay.npoint, "const sg_int", lay.npoint),
                KernelArg(lay.coords, "const double *__restrict__", lay.device_coords)]

    def kernel_args(self, k) -> list[KernelArg]:
        """The values kernel ``k`` reads, in the program's order of declaration."""
        prog = self.program
        touched = touched_arrays(k)
        exprs = [k.expr, k.target] if k.is_sparse else \
            [e for a in statements(k) for e in (a.lhs, a.rhs)]
        exprs += [k.guard] if k.guard is not None else []
        views = self.slot_views(k)
        free = {s.name for e in exprs for s in symbols_in(e, views)}
        out = []
        for a in prog.arrays:
            if a.name in touched:
                out += self._array_args(a, "" if a.name in k.writes else "const ",
                                        views.get(a.name))
        for d in prog.dims:
            out += [KernelArg(n, "const sg_int", n) for n in (d.lower, d.upper)]
        out += self._split_args(k)
        if k.split is not None:
            out += [KernelArg(n, "const sg_int", n) for n in zero_box.params(k)]
        scalars = {d.origin for d in prog.dims} | {d.spacing for d in prog.dims} \
            if k.is_sparse else set()
        out += [KernelArg(s.name, f"const {ctype(s.dtype)}", s.name) for s in prog.scalars
                if s.name in free or s.name in scalars]
        out += [KernelArg(a.lhs.name, f"const {ctype(a.dtype)}", a.lhs.name) for a in prog.prologue
                if a.lhs.name in free]
        out += [KernelArg(ti.symbol.name, "const sg_int", ti.symbol.name) for ti in prog.time_indices
                if ti.symbol.name in free]
        out += [KernelArg(s.symbol.name, "const sg_int", s.symbol.name) for s in prog.subsamplings
                if s.symbol is not None and s.symbol.name in free]
        out += [KernelArg(s.factor, "const sg_int", s.factor) for s in prog.subsamplings
                if s.factor in free]
        if prog.time.name in free:
            out.append(KernelArg(prog.time.name, "const sg_int", prog.time.name))
        if not (k.is_sparse or k.sequential):
            out += [KernelArg(f"sg_base{i}", "const sg_int", f"sg_b{i}") for i in range(len(k.dims))]
        return out

    def _split_args(self, k) -> list[KernelArg]:
        """On a split grid: the region a grid nest runs over (``split.clip``), or the block a
        sparse kernel adds or gathers in (``split.owned``)."""
        prog = self.program
        if not prog.split:
            return []
        if k.is_sparse:
            names = [n for d in prog.dims for n in (d.first, d.size)]
        else:
            names = [n for d in prog.dims for n in split.clip(prog, d.symbol)]
        return [KernelArg(n, "const long", n) for n in names]

    def refusal(self):
        """A CPU backend's refusals, and an injection into an integer field of a width CUDA
        has no atomicAdd for (it has them for 32-bit ones)."""
        base = super().refusal()
        if base:
            return base
        narrow = [k.target.base.name for k in self.program.kernels if k.is_sparse
                  and k.kind == "inject" and np.dtype(self.program.array(
                      k.target.base.name).dtype).name in ("int8", "int16", "int64", "uint8",
                                                          "uint16")]
        if narrow:
            return (f"injecting into {narrow[0]}, an integer field of a width CUDA has no "
                    f"atomic add for; give it dtype=numpy.int32 (or a float type), or use the "
                    f"C backend")
        return None

    def atomic_add(self, target, value, fmt=None, dtype=None):
        """``target += value`` against other points adding there (a 16-bit ``fmt``: the sum
        rounded once, ``format_prelude``; a complex ``dtype``: part by part)."""
        if dtype is not None and is_complex(dtype):
            return self.complex_atomic_add(target, value, dtype)
        if fmt:
            return [c.Statement(f"sg_atomic_add(&{target}, (float)({value}))")]
        return [c.Statement(f"atomicAdd(&{target}, ({ctype(dtype or self.program.dtype)})"
                            f"({value}))")]

    def sparse_pragmas(self, kernel):
        return []

"""Row pointers of the C backend's grid nests: each array row a nest reads or writes is one
pointer set before the innermost loop, so that the loop indexes it by ``z`` plus a constant.

Written as flat offsets from the array's origin, every access of a so 8 star stencil is a
64-bit expression of x, y and the slot; gcc keeps one pointer per access and, with 20-30
of them, spills most to the stack and reloads them in the vector loop. From one pointer per
(array, slot, row) the neighbours are ``row[z + k]`` and ``row[k*stride + z]``, whose
products are loop-invariant.
"""
from __future__ import annotations

import cgen as c
import sympy


class RowPointers:
    """Collects the rows of one nest while its body is printed (``CPrinter.rows``), then
    declares them."""

    def __init__(self, inner: sympy.Symbol, ctypes: dict, written: set):
        self.inner = inner          # the innermost loop's counter
        self.ctypes = ctypes        # array name -> C element type
        self.written = written      # arrays the nest stores to
        self.rows: dict = {}        # (array, row indices) -> (pointer name, C offset text)

    def access(self, printer, expr) -> str | None:
        """``expr`` read through its row's pointer, or None where it is not a row access (its
        innermost index is not the loop's, or an outer index depends on it)."""
        name, indices = expr.base.name, expr.indices
        *outer, last = indices
        strides = printer.strides[name]
        if not last.has(self.inner) or any(i.has(self.inner) for i in outer) \
                or strides[-1] != "1":
            return None
        shifts, rows = zip(*(i.as_coeff_Add() for i in outer)) if outer else ((), ())
        key = (name, tuple(rows))
        if key not in self.rows:
            pointer = f"sg_{name}_r{sum(k[0] == name for k in self.rows)}"
            moved = [(r, st) for r, st in zip(rows, strides) if r != 0]
            self.rows[key] = (pointer, printer.offset(*zip(*moved)) if moved else "0")
        terms = [f"{'-' if s < 0 else ''}{'' if abs(s) == 1 else f'{abs(int(s))}*'}{st}"
                 for s, st in zip(shifts, strides) if s]
        terms.append(printer._print(last))
        return printer.access(self.rows[key][0], " + ".join(terms).replace("+ -", "- "))

    def declarations(self) -> list:
        """One pointer per row: read-only rows are ``const restrict`` (no store of the nest
        reaches them); rows of an array the nest writes are plain pointers."""
        out = []
        for (name, _), (pointer, offset) in self.rows.items():
            qual = f"{self.ctypes[name]} *" if name in self.written \
                else f"const {self.ctypes[name]} *restrict "
            out.append(c.Initializer(c.Value(qual.rstrip(), pointer),
                                     name if offset == "0" else f"{name} + {offset}"))
        return out

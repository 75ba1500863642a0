"""Where a function's values sit in the grid cell (Devito's ``staggered=``): on the nodes
(``NODE``), at the cell centres (``CELL``), or half a spacing ahead along some dimensions
(``staggered=x``, ``staggered=(x, y)``) or behind (``staggered=-x``)."""
from __future__ import annotations

import sympy

from ..errors import InvalidArgument

HALF = sympy.Rational(1, 2)


class Stagger:
    """NODE or CELL: a staggering named by where it puts the values, not by dimensions."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


NODE = Stagger("node")
CELL = Stagger("cell")


class Staggering(tuple):
    """Devito's ``f.staggered``: per dimension of the function 1 where its values sit half a
    spacing ahead, -1 where behind, else 0; () for a function given no staggered=. Indexed
    by position or by dimension (``f.staggered[x]``); all-zero and empty ones are equal, as
    Devito's."""

    def __new__(cls, values, dimensions):
        obj = super().__new__(cls, tuple(values))
        obj.dimensions = tuple(dimensions)
        return obj

    def __getitem__(self, key):
        if key in getattr(self, "dimensions", ()):
            key = self.dimensions.index(key)
        return super().__getitem__(key)

    @property
    def on_node(self) -> bool:
        return all(v == 0 for v in self)

    def __eq__(self, other):
        if isinstance(other, Staggering) and self.on_node and other.on_node:
            return True
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self == other

    __hash__ = tuple.__hash__

    def moved(self) -> tuple:
        """The dimensions it moves the values along."""
        return tuple(d for d, v in zip(self.dimensions, self) if v)


def staggered_dims(grid, staggered, owner: str) -> tuple[tuple, tuple]:
    """The grid dimensions along which ``staggered`` moves the values half a spacing, and
    those of them it moves back (``-x``)."""
    if isinstance(staggered, Staggering):   # another function's f.staggered
        if staggered.on_node:
            return (), ()
        moved = [(d, v) for d, v in zip(staggered.dimensions, staggered)
                 if v and d in grid.dimensions]
        return tuple(d for d, _ in moved), tuple(d for d, v in moved if v < 0)
    if staggered is None or staggered is NODE:
        return (), ()
    if staggered is CELL:
        return tuple(grid.dimensions), ()
    items = staggered if isinstance(staggered, (tuple, list)) else (staggered,)
    dims, back = [], []
    for d in items:
        neg = -d if isinstance(d, sympy.Expr) and (-d) in grid.dimensions else None
        if d not in grid.dimensions and neg is None:
            names = ", ".join(str(g) for g in grid.dimensions)
            raise InvalidArgument(
                f"{owner}: staggered={staggered!r} is not NODE, CELL or dimensions of the grid "
                f"({names}); e.g. staggered=x, staggered=(x, y), or staggered=-x (half a "
                f"spacing behind)")
        dims.append(neg if neg is not None else d)
        if neg is not None:
            back.append(neg)
    return tuple(d for d in grid.dimensions if d in dims), \
        tuple(d for d in grid.dimensions if d in back)


def natural_index(d, rec):
    """The argument along ``d`` of a function of record ``rec`` (``x + h_x/2``, ``x - h_x/2``
    or ``x``)."""
    return d + rec.stagger(d) * d.spacing

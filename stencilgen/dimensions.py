"""Dimensions: the sympy symbols that index grids (x, y, z, time) and their spacings."""
from __future__ import annotations

import sympy

from .errors import InvalidArgument


class Dimension(sympy.Symbol):
    """An iteration dimension; ``x.spacing`` is the symbol of its grid spacing (``h_x``)."""

    is_Space = False
    is_Time = False
    is_Stepping = False

    def _sympystr(self, printer):
        # sympy's printer has a method for its physics "Dimension"; print as a symbol.
        return self.name

    _ccode = _sympystr

    @property
    def spacing(self) -> sympy.Symbol:
        return sympy.Symbol(f"h_{self.name}", real=True, positive=True)

    @property
    def root(self) -> "Dimension":
        """The dimension an index of this one counts along (``time`` for the stepping ``t``)."""
        return self


class SpaceDimension(Dimension):
    """A spatial dimension of a Grid (x, y, z or a name of the user's); ``spacing=`` a
    Constant (Devito's ``SpaceDimension('z', spacing=Constant(name='h_z', value=...))``)
    makes the derivatives along it use that Constant's run-time value."""

    is_Space = True

    def __new__(cls, name, spacing=None, **assumptions):
        assumptions.setdefault("integer", True)
        if spacing is None:
            return super().__new__(cls, name, **assumptions)
        if not isinstance(spacing, sympy.Symbol):
            raise InvalidArgument(f"SpaceDimension {name!r}: spacing must be a Constant (e.g. "
                                  f"Constant(name='h_{name}', value=0.1)), got {spacing!r}")
        obj = sympy.Symbol.__xnew__(cls, name, **assumptions)   # uncached: its own spacing
        obj._spacing = spacing
        return obj

    def _hashable_content(self):
        own = getattr(self, "_spacing", None)
        return super()._hashable_content() + ((own,) if own is not None else ())

    def __getnewargs_ex__(self):
        return (self.name,), {"spacing": getattr(self, "_spacing", None), **self.assumptions0}

    @property
    def spacing(self) -> sympy.Symbol:
        own = getattr(self, "_spacing", None)
        return own if own is not None else super().spacing


class TimeDimension(Dimension):
    """The physical time dimension; its spacing is the time step ``dt``."""

    is_Time = True

    @property
    def spacing(self) -> sympy.Symbol:
        return sympy.Symbol("dt", real=True, positive=True)


class SteppingDimension(TimeDimension):
    """Time index of buffered TimeFunctions: slots are addressed modulo the buffer size."""

    is_Stepping = True

    @property
    def root(self) -> Dimension:
        return time_dimension()


def time_dimension() -> TimeDimension:
    return TimeDimension("time", integer=True)


def stepping_dimension() -> SteppingDimension:
    return SteppingDimension("t", integer=True)


def space_dimension(name: str) -> SpaceDimension:
    return SpaceDimension(name, integer=True)

"""Dimensions: the sympy symbols that index grids (x, y, z, time) and their spacings."""
from __future__ import annotations

import sympy


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
    """A spatial dimension of a Grid (x, y or z)."""

    is_Space = True


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

"""Dimensions: the sympy symbols that index grids (x, y, z, time) and their spacings."""
from __future__ import annotations

import numbers

import sympy

from ..errors import InvalidArgument


class Dimension(sympy.Symbol):
    """An iteration dimension; ``x.spacing`` is the symbol of its grid spacing (``h_x``)."""

    is_Space = False
    is_Batch = False
    is_Sub = False
    is_MultiSub = False
    is_Time = False
    is_Stepping = False
    is_Conditional = False

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

    @property
    def symbolic_min(self) -> sympy.Symbol:
        """The first index an Operator computes along this dimension (apply's ``x_m``)."""
        return bound_symbol(self, False)

    @property
    def symbolic_max(self) -> sympy.Symbol:
        """The last index an Operator computes along this dimension (apply's ``x_M``)."""
        return bound_symbol(self, True)


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


class BatchDimension(SpaceDimension):
    """A grid dimension of independent copies of one problem (the shots of a batch): one
    kernel launch covers every copy, functions have no halo along it (nothing reaches
    across copies) and nothing may be differentiated along it."""

    is_Batch = True



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


class _PartOf(Dimension):
    """A dimension over part of its ``parent``'s points: its spacing and root are the
    parent's."""

    @property
    def spacing(self) -> sympy.Symbol:
        return self.parent.spacing

    @property
    def root(self) -> Dimension:
        return self.parent.root


class Thickness(sympy.Function):
    """The thickness of SubDimension ``sub`` on one side (0: left, 1: right), in its bounds
    (``ix.symbolic_max`` is ``x_m + Thickness(ix, 0) - 1``): a number once the Operator is
    built, so that an override at apply (``x_ltkn0=4``) moves an index written with it."""

    nargs = 2
    is_integer = True

    @property
    def value(self) -> int:
        sub, side = self.args
        return int(sub.thickness[int(side)])

    def _sympystr(self, printer):
        sub, side = self.args
        return f"{sub.parent.name}_{'lr'[int(side)]}tkn"


def bound_symbol(dim, upper: bool) -> sympy.Symbol:
    """``x_m`` (``upper``: ``x_M``), the first (last) index an Operator computes along the
    root of ``dim``."""
    return sympy.Symbol(f"{dim.root.name}_{'M' if upper else 'm'}", integer=True)


class SubDimension(_PartOf):
    """Devito's SubDimension of a grid dimension ``parent``: its first ``thickness`` points
    (``SubDimension.left``), its last (``right``), or all but ``thickness_left`` and
    ``thickness_right`` at its ends (``middle``). An equation indexed by it (``u[t + 1,
    xleft, y]``, or ``eq.subs(x, xi)``) runs on that part of ``parent`` only; the thickness
    is fixed when the Operator is built."""

    is_Sub = True

    def __new__(cls, name, parent, thickness=(None, None), local=None):
        # a grid's space dimension, or a bare Dimension of functions built without a grid
        if not isinstance(parent, Dimension) or parent.is_Batch or parent.is_Time or \
                parent.is_Sub or parent.is_Conditional or parent.is_MultiSub:
            raise InvalidArgument(f"SubDimension {name!r}: parent must be a space dimension "
                                  f"(of a Grid, or a Dimension of functions without one), got "
                                  f"{parent!r}")
        left, right = thickness
        for value in (v for v in (left, right) if v is not None):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise InvalidArgument(f"SubDimension {name!r}: thickness {value!r}; give a "
                                      f"non-negative integer")
        if left is None and right is None:
            raise InvalidArgument(f"SubDimension {name!r}: give a thickness (use "
                                  f"SubDimension.left, .right or .middle)")
        obj = sympy.Symbol.__xnew__(cls, name, integer=True)
        obj.parent, obj._thickness = parent, (left, right)
        return obj

    def __getnewargs__(self):
        return (self.name, self.parent, self._thickness)

    def _hashable_content(self):
        # another thickness is another SubDimension (an Operator rebuilt for x_ltkn0=...)
        return super()._hashable_content() + (self.parent, self._thickness)

    @classmethod
    def left(cls, name, parent, thickness, local=True):
        return cls(name, parent, (int(thickness), None))

    @classmethod
    def right(cls, name, parent, thickness, local=True):
        return cls(name, parent, (None, int(thickness)))

    @classmethod
    def middle(cls, name, parent, thickness_left, thickness_right, local=False):
        return cls(name, parent, (int(thickness_left), int(thickness_right)))

    @property
    def thickness(self) -> tuple:
        """(left, right) points: a left SubDimension's right is None, a right one's left."""
        return self._thickness

    @property
    def is_left(self) -> bool:
        return self._thickness[1] is None

    @property
    def is_right(self) -> bool:
        return self._thickness[0] is None

    @property
    def is_middle(self) -> bool:
        return None not in self._thickness

    @property
    def symbolic_min(self):
        """The first index of this part (Devito's): ``x_m`` for a left one, ``x_M - r + 1``
        for a right one, ``x_m + l`` for a middle one, the thicknesses as ``Thickness``."""
        if self.is_right:
            return bound_symbol(self, True) - Thickness(self, 1) + 1
        lo = bound_symbol(self, False)
        return lo + Thickness(self, 0) if self.is_middle else lo

    @property
    def symbolic_max(self):
        """The last index of this part: ``x_m + l - 1`` for a left one, ``x_M`` for a right
        one, ``x_M - r`` for a middle one."""
        if self.is_left:
            return bound_symbol(self, False) + Thickness(self, 0) - 1
        hi = bound_symbol(self, True)
        return hi - Thickness(self, 1) if self.is_middle else hi

    @property
    def span(self) -> tuple:
        """The part of the parent as a SubDomain maps a dimension (``subdomains``)."""
        left, right = self._thickness
        return ("left", left) if right is None else ("right", right) if left is None else \
            ("middle", left, right)


class MultiSubDimension(_PartOf):
    """Devito's MultiSubDimension: dimension ``parent`` of a SubDomainSet's boxes
    (``SubDomainSet.dimensions``); an equation indexed by them (``eq.subs({x: ix, y: iy})``)
    runs on each box of the set, as one with ``subdomain=`` the set."""

    is_MultiSub = True

    def __new__(cls, name, parent, subdomain):
        obj = sympy.Symbol.__xnew__(cls, name, integer=True)
        obj.parent, obj.subdomain = parent, subdomain
        return obj

    def __getnewargs__(self):
        return (self.name, self.parent, self.subdomain)

    def _hashable_content(self):
        # the same name on another set's boxes is another dimension
        return super()._hashable_content() + (self.parent, id(self.subdomain))


class ConditionalDimension(Dimension):
    """Devito's ConditionalDimension: the points of ``parent`` where an equation runs, every
    ``factor``-th one (``time % factor == 0``) and/or where ``condition`` holds.

    A TimeFunction built with ``time_dim=`` one of ``time`` with a factor holds a snapshot
    every ``factor`` steps (index ``time / factor``); ``Eq(..., implicit_dims=c)`` runs an
    equation only where ``c`` holds. The factor is an argument of the generated code."""

    is_Conditional = True

    def __new__(cls, name, parent=None, factor=None, condition=None, indirect=False,
                relation=sympy.And, **unknown):
        owner = f"ConditionalDimension {name!r}"
        if parent is None and isinstance(condition, sympy.Basic):
            # Devito's ConditionalDimension(name, condition=time < 5): the one dimension
            # the condition names is the parent
            named = {d for d in condition.free_symbols if isinstance(d, Dimension)
                     and not getattr(d, "is_Conditional", False)}
            parent = named.pop() if len(named) == 1 else None
        _check_conditional(owner, name, parent, condition, indirect, relation, unknown)
        obj = sympy.Symbol.__xnew__(cls, name, integer=True)
        obj._parent = parent
        obj._factor = _check_factor(owner, factor)
        if factor is None and condition is None:
            raise InvalidArgument(f"{owner}: give factor= (run every factor-th step) or "
                                  "condition= (run where it holds), or both")
        obj._condition = condition
        obj._relation = relation
        return obj

    def _hashable_content(self):
        # two ConditionalDimensions of one name but other parents or factors differ
        return super()._hashable_content() + (self._parent, self._factor, self._condition,
                                              self._relation)

    def __getnewargs_ex__(self):
        return ((self.name, self._parent, self._factor, self._condition, False,
                 self._relation), {})

    @property
    def parent(self) -> Dimension:
        return self._parent

    @property
    def factor(self):
        """The subsampling factor (an int, or a Constant read at apply), or None."""
        return self._factor

    @property
    def symbolic_factor(self):
        """Devito's: the factor as a symbol apply may override by name: the Constant given,
        or for an int one ``<name>f`` (``op.apply(**{cd.symbolic_factor.name: 8})``)."""
        if self._factor is None or not isinstance(self._factor, numbers.Integral):
            return self._factor
        return FactorSymbol(f"{self.name}f", self._factor)

    @property
    def condition(self):
        return self._condition

    @property
    def relation(self):
        """How this dimension's condition combines with the others' of an equation (And, Or;
        "strict": the strict dimensions' conditions alone decide)."""
        return self._relation

    @property
    def indirect(self) -> bool:
        return False

    @property
    def is_Time(self) -> bool:
        return self._parent.is_Time

    @property
    def root(self) -> Dimension:
        return self._parent.root

    @property
    def spacing(self):
        """``factor`` steps of the parent (its spacing where there is no factor)."""
        return self._parent.spacing * (1 if self._factor is None else self._factor)


class FactorSymbol(sympy.Symbol):
    """The symbol of an int subsampling factor (Devito's ``SubsamplingFactor``): its name,
    and its value as ``data``; apply takes another value by the name."""

    is_Constant = True

    def __new__(cls, name, value):
        obj = sympy.Symbol.__new__(cls, name, integer=True, positive=True)
        obj.data = obj.value = int(value)
        return obj

    def __getnewargs_ex__(self):
        return ((self.name, self.value), {})


def _check_conditional(owner, name, parent, condition, indirect, relation, unknown):
    """InvalidArgument for what ``ConditionalDimension`` cannot take."""
    if unknown:
        raise InvalidArgument(f"{owner}: unknown argument(s) {', '.join(sorted(unknown))} (it "
                              "takes name, parent, factor, condition and relation)")
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgument(f"ConditionalDimension: name must be a valid identifier, got "
                              f"{name!r}")
    if not isinstance(parent, Dimension) or isinstance(parent, ConditionalDimension):
        raise InvalidArgument(f"{owner}: parent must be a grid dimension (grid.time_dim or one "
                              f"of grid.dimensions), got {parent!r}")
    if condition is not None and not isinstance(condition, sympy.logic.boolalg.Boolean):
        raise InvalidArgument(
            f"{owner}: condition must be a relation such as Gt(f, 0), Lt(x, 5), CondEq(x, 3) "
            f"or their And/Or, got {type(condition).__name__} {condition!r}"
            + ("; stencilgen's Eq is an equation: write CondEq(a, b) for a == b"
               if type(condition).__name__ == "Eq" else ""))
    if indirect:
        raise InvalidArgument(f"{owner}: indirect=True (indexing arrays by the condition's "
                              "values) is not supported; index with the grid's dimensions")
    if relation not in (sympy.And, sympy.Or, "strict"):
        raise InvalidArgument(f"{owner}: relation must be sympy.And, sympy.Or or 'strict' "
                              f"(its condition alone decides), got {relation!r}")


def _check_factor(owner, factor):
    """``factor`` as a positive int, or a Constant (its value is checked at apply), or None."""
    # a Constant (functions.py builds on this module): a symbol that carries its value
    if factor is None or (isinstance(factor, sympy.Symbol) and hasattr(factor, "value")):
        return factor
    if isinstance(factor, sympy.Integer):
        factor = int(factor)
    if isinstance(factor, numbers.Integral) and not isinstance(factor, bool) and factor > 0:
        return int(factor)
    raise InvalidArgument(f"{owner}: factor must be a positive integer (the number of steps "
                          f"between two runs, e.g. factor=4), got {factor!r}")


def time_dimension() -> TimeDimension:
    return TimeDimension("time", integer=True)


def stepping_dimension() -> SteppingDimension:
    return SteppingDimension("t", integer=True)


def space_dimension(name: str) -> SpaceDimension:
    return SpaceDimension(name, integer=True)

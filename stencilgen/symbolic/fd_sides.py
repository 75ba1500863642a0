"""Side markers of one-sided and centred first derivatives: ``left``, ``right``, ``centered``.

``first_derivative(u, dim=x, side=left, fd_order=4)`` and ``Derivative(u, x, side=right)``
take them (or the strings 'left', 'right', 'centered'), with the meanings Devito gives them.
"""
from __future__ import annotations

__all__ = ["Side", "left", "right", "centered", "side_name"]


class Side:
    """Where a first derivative's stencil leans: one node back (left), ahead (right) or none."""

    def __init__(self, name: str, step: int):
        self.name = name
        self.step = step

    def __repr__(self) -> str:
        # Devito's text (``left[-1]``): programs build file names and keys from it
        return f"{self.name}[{self.step}]"

    def __eq__(self, other):
        return (other.name if isinstance(other, Side) else other) == self.name

    def __hash__(self):
        return hash(self.name)


left = Side("left", -1)
right = Side("right", 1)
centered = Side("centered", 0)

_SIDES = {s.name: s for s in (left, right, centered)}


def side_name(side) -> str | None:
    """The name of a side given as a marker or a string (None stays None); ValueError otherwise."""
    if side is None:
        return None
    name = side.name if isinstance(side, Side) else side
    if name not in _SIDES:
        raise ValueError(f"side={side!r} is not a side; use left, right or centered "
                         "(from stencilgen.symbolic.fd_sides) or None for the default stencil")
    return name


def side_step(name: str | None) -> int:
    """How many nodes a side moves the centred stencil: -1 left, +1 right, 0 otherwise."""
    return _SIDES[name].step if name else 0

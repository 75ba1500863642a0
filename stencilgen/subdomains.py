"""Devito's built-in subdomains of a Grid: ``grid.interior`` (the domain less one point on
every side) and ``grid.subdomains['domain']``. ``Eq(..., subdomain=grid.interior)`` runs its
equation on that region only. User-defined ``SubDomain`` classes are not supported yet."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SubDomainRegion:
    """A named part of ``grid``'s domain: ``thickness`` points left out per dimension (left,
    right)."""

    name: str
    grid: object
    thickness: tuple

    def __repr__(self) -> str:
        return f"SubDomain {self.name!r}"


def builtin(grid) -> dict:
    """``grid``'s subdomains by name, as Devito names them."""
    n = len(grid.shape)
    return {"domain": SubDomainRegion("domain", grid, ((0, 0),) * n),
            "interior": SubDomainRegion("interior", grid, ((1, 1),) * n)}

"""Devito's ``devito.symbolics`` path: the expression helpers programs import from it."""
from ..symbolic.expressions import INT, retrieve_functions
from . import search  # noqa: F401

__all__ = ["INT", "retrieve_functions"]

"""Devito's ``devito.symbolics.search``: finding the functions an expression reads."""
from ..symbolic.expressions import retrieve_functions

__all__ = ["retrieve_functions"]

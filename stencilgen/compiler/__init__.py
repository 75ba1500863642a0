"""Equations to a Program: the lowering's three stages turn a user's equations into indexed
stencils (``placement``: checked and placed on the loops; ``expansion``: derivatives
expanded; ``indexer``: C names given, accesses indexed, parameters bound), and
``pipeline.compile_program`` runs the logged list of passes over them (the IR and its passes
are ``stencilgen.ir``)."""
from .pipeline import compile_program

__all__ = ["compile_program"]

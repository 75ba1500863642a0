"""Equations to a Program: ``lowering`` turns a user's equations into indexed stencils,
``pipeline.compile_program`` runs the logged list of passes over them (the IR and its
passes are ``stencilgen.ir``)."""
from .pipeline import compile_program

__all__ = ["compile_program"]

"""The compiler: equations in, a Program out, as one ordered list of passes.

Each pass is a function from plain data to new plain data; the only state they share is the
Operator's name registry, the one owner of identifiers. At ``STENCILGEN_LOGGING=DEBUG`` the
result of every pass is logged.
"""
from __future__ import annotations

from backends.common.reserved import is_reserved

from .. import logger as log
from ..configuration import configuration
from ..ir import halos, layout as lay
from ..ir.dtypes import complex_calls
from ..ir.folding import fold_accumulations
from ..ir.fusion import fuse
from ..ir.pretty import show
from ..ir.schedule import classify, schedule
from ..ir.transforms import (count_kernels, hoist_invariants, optimize_kernels, size_temporaries,
                             widen_temporaries)
from ..ir.scaling import fold_scales
from ..ir.zero_split import split_zero_boxes
from .placement import check_equations
from .expansion import compensate, compensation_stores, expand_derivatives
from .indexer import index_equations, register_names
from ..ir.names import NameRegistry


def _logged(step: str, name: str, ir):
    if log.logger.isEnabledFor(log.DEBUG):   # printing the IR costs as much as a pass
        log.debug(f"Operator `{name}` after {step}:\n{show(ir)}")
    return ir


def compile_program(expressions, name: str, narrow_index: bool, flops_per_byte: float = 0,
                    fusion=None, nested: str = "extended", fold: bool = True,
                    zero_split: bool = True):
    """The Program of ``expressions`` and the Bindings of its parameters to user objects.

    The target's choices: ``narrow_index``, also instantiate 32-bit index arithmetic;
    ``flops_per_byte``, its arithmetic per byte of memory traffic (0: store every costly
    invariant in an array; else only those cheaper to read than to recompute); ``fusion``,
    the ``ir/fusion.Limits`` of its fused nests (None: it fuses none). The user's:
    ``nested``, where an inner derivative of a nested one is evaluated ("extended": wherever
    the outer stencil reaches, past the domain's edges too, as Devito; "domain": on the
    domain, zero beyond). ``fold``: pointwise accumulations folded into the nest producing
    their operand (``ir/folding``; False: each where it was written). ``zero_split``: nests
    reading zero-box arrays split at run time (``ir/zero_split``; the target's choice).
    """
    eqs, grid = check_equations(expressions)
    names = register_names(eqs, grid, name, NameRegistry(is_reserved))
    eqs = expand_derivatives(compensate(eqs, names), grid, names)
    eqs = _logged("derivative expansion", name, compensation_stores(eqs))
    stencils, bindings = index_equations(eqs, grid, names)
    stencils = _logged("indexing", name, stencils)
    if nested == "extended":
        stencils = _logged("temporary widening", name, widen_temporaries(stencils))
    stencils = _logged("complex calls", name, complex_calls(stencils))
    stencils = _logged("scale folding", name, fold_scales(stencils))
    stencils = _logged("classification", name, classify(stencils))
    if fold:
        stencils = _logged("accumulation folding", name, fold_accumulations(stencils))
    stencils = _logged("invariant hoisting", name, hoist_invariants(stencils, names, flops_per_byte))
    stencils = _logged("temporary sizing", name, size_temporaries(stencils))
    program = _logged("scheduling", name, schedule(stencils, name, names))
    for k in program.kernels:
        if k.sequential:
            log.info(f"Operator `{name}`: {k.name}: {k.sequential}")
    program = _logged("kernel optimisation", name, optimize_kernels(program, names))
    program = _logged("counting", name, count_kernels(program))
    program = _logged("run-time split", name,
                      split_zero_boxes(program, names, zero_split))
    split = grid.decomposition.decomposed if grid.decomposition is not None else None
    program = _logged("fusion", name, fuse(program, fusion, any(split or ()),
                                           configuration["staging"],
                                           configuration["time-steps"]))
    program = _logged("halo exchanges", name, halos.plan(program, split, names))
    program = _logged("layout", name, lay.layout(program, names))
    program = _logged("index types", name, lay.index_types(program, narrow_index))
    program = _logged("sections", name, lay.sections(program, names))
    return program, bindings

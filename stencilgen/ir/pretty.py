"""Readable text of the IR, for the DEBUG log after each pass (as Halide's lower() logs)."""
from __future__ import annotations

from .nodes import Program, Stencils


def _eq(e) -> str:
    stage = "time" if e.time_dependent else "once"
    kind = f" {e.sparse_kind} at {e.sparse}" if e.sparse_kind else ""
    extent = f" widened {e.extent}" if e.extent else ""
    extent += f" from {e.anchors}" if any(e.anchors) else ""
    return f"  [{stage}{kind}{extent}{_conditions(e)}] {e.lhs} = {e.rhs}"


def _conditions(node) -> str:
    """The test of the time step and the test at each point of an equation or kernel."""
    when = f" when {node.when}" if node.when is not None else ""
    return when + (f" where {node.guard}" if node.guard is not None else "")


def _kernel(k) -> list[str]:
    timer = f" timer {k.section.timer}" if k.section else ""
    head = f"  {k.name} ({k.stage}{timer}; {k.flops} flops, {k.bytes} bytes per point)"
    if k.is_sparse:
        return [head, f"    {k.kind} over {k.sparse}[{k.point}]: {k.target} <- {k.expr}"]
    loops = ", ".join(f"{d} {first}{lo:+d}..{last}{hi:+d}"
                      for d, ((first, lo), (last, hi)) in
                      zip(k.dims, (k.span(i) for i in range(len(k.dims)))))
    lines = [head, f"    for {loops}{_conditions(k)}:"]
    for a in k.body:
        lines.append(f"      {'local ' if a.is_local else ''}{a.lhs} = {a.rhs}")
    return lines


def _array(a) -> str:
    kind = "temporary" if a.temporary else "sparse" if a.sparse else "array"
    slots = f", {a.time_size} time slots{' (modulo)' if a.modulo else ''}" if a.time_size else ""
    halo = f", halo {a.halo}" if a.halo else ""
    lay = ""
    if a.layout is not None:
        strides = ", ".join(f"{n or 1}={v}" for n, v in a.layout.strides)
        lay = f"; {a.layout.vec}[{a.layout.origin[0]} + ...], strides {strides}"
    return f"  {kind} {a.name} ({a.user}, {a.dtype.__name__}{slots}{halo}){lay}"


def show(ir) -> str:
    """Equations, ``Stencils`` or a ``Program`` as indented text."""
    if isinstance(ir, (list, tuple)):
        return "\n".join(f"  {e}" for e in ir)
    lines = [_array(a) for a in ir.arrays]
    lines += [f"  scalar {s.name} {s.role}" for s in ir.scalars]
    if isinstance(ir, Stencils):
        return "\n".join(lines + [_eq(e) for e in ir.eqs])
    assert isinstance(ir, Program)
    lines.insert(0, f"  entry {ir.entry}, index types {ir.index_types}")
    lines += [f"  prologue {a.lhs} = {a.rhs}" for a in ir.prologue]
    for k in ir.kernels:
        lines += _kernel(k)
    return "\n".join(lines)

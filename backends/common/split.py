"""C for a grid split over MPI ranks (``Program.split``).

Loop nests run over this rank's block: every nest is cut to ``sg_lo<d>..sg_hi<d>`` (the
block, widened as the nest is). Before a nest that reads a neighbour's values the entry point
calls the caller's ``exchange(hook, time)``, which sends and receives the halos; with
``exchange(-1 - hook, time)`` it waits for them. Between the two the nest runs over region 0
of the block (the interior, whose reads stay inside it), after the wait over regions 1.. (the
shell along the split dimensions): the caller fills ``regions`` so that basic mode (the whole
block in region 0, exchanges that finish before they return) and overlap mode run the same
code. A failed exchange ends the time loop; the entry point then returns EXCHANGE_FAILED.
"""
from __future__ import annotations

import cgen as c

EXCHANGE_FAILED = -3
FAILED = "sg_xfail"



def helpers(qualifiers: str = "static inline") -> str:
    """The C functions clipped bounds call (``qualifiers``: a CUDA build's make them callable
    in kernels too)."""
    return "\n".join(f"{qualifiers} long sg_{name}l(const long a, const long b) "
                     f"{{ return a {op} b ? a : b; }}"
                     for name, op in (("max", ">"), ("min", "<")))


def region_count(prog) -> int:
    """The interior and two slabs per split dimension."""
    return 1 + 2 * sum(prog.split)


def clip(prog, symbol) -> tuple[str, str]:
    """The names of the first and last point of the region a nest runs over along ``symbol``."""
    i = next(i for i, d in enumerate(prog.dims) if d.symbol == symbol)
    return f"sg_lo{i}", f"sg_hi{i}"


def owned(prog, symbol) -> tuple[str, str]:
    """C text of the first and last global index of this rank's block along ``symbol``."""
    d = next(d for d in prog.dims if d.symbol == symbol)
    return d.first, f"{d.first} + {d.size} - 1"


def start(prog) -> list:
    """The failure flag and the block as the region of every nest without an exchange."""
    if not prog.split:
        return []
    return [c.Initializer(c.Value("int", FAILED), "0")] + [
        c.Initializer(c.Value("const long", name), value) for i, d in enumerate(prog.dims)
        for name, value in zip((f"sg_lo{i}", f"sg_hi{i}"), owned(prog, d.symbol))]


def _region(prog, r: str, code):
    """``code`` over region ``r`` (C text of its index)."""
    n = len(prog.dims)
    decls = [c.Initializer(c.Value("const long", f"sg_{end}{i}"),
                           f"{prog.regions}[2*({r}*{n} + {i}) + {k}]")
             for i in range(n) for k, end in enumerate(("lo", "hi"))]
    return c.Block(decls + [code])


def nest(prog, kernel, time: str, code, shell=None) -> list:
    """``code`` (the nest of ``kernel``) with the exchanges it needs around it, at time step
    ``time``: posted, the interior computed, waited for, the shell computed. ``shell``: a
    backend's own (before, code, after) for the shell's regions (``code`` run for each,
    ``before`` and ``after`` around them all), else ``code`` for each."""
    hooks = [e for e in prog.exchanges if e.before == kernel.name]
    if not hooks:
        return [code]

    def calls(hook_of):
        out = [c.Statement(f"if (!{FAILED}) {FAILED} = {prog.exchange}({hook_of(e)}, {time})")
               for e in hooks]
        return out + ([c.Line(f"if ({FAILED}) break;")] if time == prog.time.name else [])
    begin, end = calls(lambda e: e.hook), calls(lambda e: -1 - e.hook)
    if kernel.is_sparse or any(kernel.widened[i] != (0, 0) for i in range(len(kernel.dims))) \
            or any(f is not None for f in kernel.fixed or ()):
        return begin + end + [code]   # regions are for plain nests over the block
    before, each, after = shell if shell is not None else ([], code, [])
    regions = c.For("long sg_region = 1", f"sg_region < {region_count(prog)}", "sg_region += 1",
                    _region(prog, "sg_region", each))
    return begin + [_region(prog, "0", code)] + end + [c.Block(before + [regions] + after)]


def status(prog) -> str:
    """The entry point's return statement."""
    return f"return {FAILED} ? {EXCHANGE_FAILED} : 0" if prog.split else "return 0"

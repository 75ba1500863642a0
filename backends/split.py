"""C for a grid split over MPI ranks: loop nests cut to the rank's block, and the calls
that fill halos from the neighbours (the caller's ``exchange`` function, ``Program.exchanges``)
before the kernels that read them. A failed exchange ends the time loop; the entry point then
returns EXCHANGE_FAILED."""
from __future__ import annotations

import cgen as c

EXCHANGE_FAILED = -3
FAILED = "sg_xfail"

HELPERS = r"""static inline long sg_maxl(const long a, const long b) { return a > b ? a : b; }
static inline long sg_minl(const long a, const long b) { return a < b ? a : b; }"""


def owned(prog, symbol) -> tuple[str, str]:
    """C text of the first and last global index of this rank's block along ``symbol``."""
    d = next(d for d in prog.dims if d.symbol == symbol)
    return d.first, f"{d.first} + {d.size} - 1"


def start(prog) -> list:
    return [c.Initializer(c.Value("int", FAILED), "0")] if prog.split else []


def exchange_before(prog, kernel, time: str) -> list:
    """The calls that fill the halos ``kernel`` reads, at time step ``time``."""
    hooks = [e for e in prog.exchanges if e.before == kernel.name]
    out = [c.Statement(f"if (!{FAILED}) {FAILED} = {prog.exchange}({e.hook}, {time})")
           for e in hooks]
    if out and time == prog.time.name:
        out.append(c.Line(f"if ({FAILED}) break;"))
    return out


def status(prog) -> str:
    """The entry point's return statement."""
    return f"return {FAILED} ? {EXCHANGE_FAILED} : 0" if prog.split else "return 0"

"""Devito's ``Operator`` keywords, as stencilgen reads them: ``language`` picks the backend,
``platform`` and ``opt`` are accepted and logged (stencilgen compiles for the machine it runs
on, with its own optimisations), ``subs`` gives the grid's spacings the values to use."""
from __future__ import annotations

import numpy as np

from .. import logger as log
from ..configuration import LANGUAGES
from ..errors import InvalidOperator

#: platforms no backend of stencilgen compiles for
FOREIGN_PLATFORMS = ("amdgpu", "intelgpu")

#: where an inner derivative of a nested one is evaluated: wherever the outer stencil reaches,
#: past the domain's edges too, from the halos (Devito's expansion); or on the domain only,
#: zero beyond (the operator then reads no halo but the innermost functions')
NESTED = ("extended", "domain")


def backend_of(name: str, backend, language, platform):
    """The backend to use: ``backend``, else the one ``language`` names (None: the setting)."""
    if isinstance(platform, str) and platform.lower().startswith(FOREIGN_PLATFORMS):
        raise InvalidOperator(f"Operator `{name}`: platform={platform!r} is not supported: "
                              "stencilgen compiles for CPUs (C/OpenMP) and NVIDIA GPUs (CUDA, "
                              "OpenACC); leave platform out, or pass language='openmp' or 'cuda'")
    if platform is not None:
        log.info(f"Operator `{name}`: platform={platform!r} needs no setting here: stencilgen "
                 "compiles for the CPU it runs on (-march=native) and the GPU it sees")
    if language is None:
        return backend
    chosen = LANGUAGES.get(str(language).lower()) if isinstance(language, str) else None
    if chosen is None:
        raise InvalidOperator(f"Operator `{name}`: language={language!r} is not supported; use "
                              f"one of {', '.join(repr(k) for k in ('C', 'openmp', 'openacc', 'cuda'))}"
                              " (or backend='c', 'openacc', 'cuda')")
    if backend is not None and backend != chosen:
        raise InvalidOperator(f"Operator `{name}`: backend={backend!r} and language={language!r} "
                              "disagree; pass one of them")
    if str(language).lower() == "c":
        log.info(f"Operator `{name}`: language='C' runs the C backend, which is OpenMP-parallel "
                 "(OMP_NUM_THREADS=1 runs it on one thread)")
    return chosen


def check_opt(name: str, opt) -> None:
    """``opt`` (a mode, a tuple of modes or passes such as ``('buffering', 'fuse')``, either
    followed by a dict of options) is logged: stencilgen's pipeline has no modes."""
    if opt is None:
        return
    items = list(opt) if isinstance(opt, (tuple, list)) else [opt]
    if items and isinstance(items[-1], dict):
        items.pop()
    if not items or not all(isinstance(i, str) for i in items):
        raise InvalidOperator(f"Operator `{name}`: opt must be a mode such as 'advanced', "
                              f"passes such as ('buffering', 'fuse'), either followed by a "
                              f"dict of options, got {opt!r}")
    log.info(f"Operator `{name}`: opt={opt!r} has no effect: stencilgen always runs its own "
             "optimisations (invariants, CSE, factorisation, cache blocks; autotune=True for "
             "the block sizes)")


def spacing_subs(name: str, subs, grid) -> dict:
    """Devito's ``subs``: the grid's spacing symbols mapped to the values this Operator uses
    for them (``{x.spacing: 0.01}``, even where the grid's spacing differs, as Devito's
    derivative tests do): axis -> value. Anything else is refused."""
    if not subs:
        return {}
    if not isinstance(subs, dict):
        raise InvalidOperator(f"Operator `{name}`: subs must be a dict such as "
                              f"grid.spacing_map, got {type(subs).__name__}")
    axes = {d.spacing: i for i, d in enumerate(grid.dimensions)} if grid is not None else {}
    out = {}
    for key, value in subs.items():
        if key not in axes:
            raise InvalidOperator(f"Operator `{name}`: subs={{{key}: ...}} is not supported: "
                                  "only the grid's spacings (grid.spacing_map) may be given")
        try:
            out[axes[key]] = float(value)
        except (TypeError, ValueError):
            raise InvalidOperator(f"Operator `{name}`: subs gives {key}={value!r}; give a "
                                  "number") from None
        if not np.isfinite(out[axes[key]]) or out[axes[key]] <= 0:
            raise InvalidOperator(f"Operator `{name}`: subs gives {key}={value!r}; a spacing "
                                  "is a positive number")
    return out
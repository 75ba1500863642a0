"""Code emitters: each turns a backend-neutral Program into source text for one toolchain.

Backends are imported on first use, so a missing optional module or compiler of one backend
never stops another from loading. They only print: which backend, compiler and GPU to use, and
the settings (as :class:`EmitOptions`), come from stencilgen's platform layer.
"""
from __future__ import annotations

import importlib
import importlib.util

from .common.options import EmitOptions

__all__ = ["EmitOptions", "available_backends", "get_backend"]

# name -> (module, class)
_REGISTRY = {
    "c": ("backends.c.backend", "CBackend"),
    "cuda": ("backends.cuda.backend", "CudaBackend"),
    "openacc": ("backends.openacc", "OpenACCBackend"),
}


def available_backends() -> list[str]:
    """The names whose emitter module exists in this build."""
    return sorted(n for n, (mod, _) in _REGISTRY.items() if importlib.util.find_spec(mod))


def get_backend(name: str):
    """The backend class registered under ``name``."""
    if name not in _REGISTRY or name not in available_backends():
        raise ValueError(f"unknown backend {name!r}; available: {', '.join(available_backends())}")
    module, cls = _REGISTRY[name]
    return getattr(importlib.import_module(module), cls)

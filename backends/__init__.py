"""Code emitters: each turns a backend-neutral Program into source text for one toolchain.

Backends are imported on first use, so a missing optional module or compiler of one backend
never stops another from loading.
"""
from __future__ import annotations

import importlib
import importlib.util

# name -> (module, class)
_REGISTRY = {
    "c": ("backends.c", "CBackend"),
    "cuda": ("backends.cuda", "CudaBackend"),
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


def choose_auto():
    """The backend ``auto`` means here, and why: CUDA when it can run (GPU and nvcc), else C."""
    if "cuda" in available_backends():
        cuda = get_backend("cuda")
        usable, why = cuda.usable()
        if usable:
            return cuda, f"`cuda`: {why}"
        return get_backend("c"), f"`c`: {why}"
    return get_backend("c"), "`c`: the C/OpenMP backend is the one this build provides"

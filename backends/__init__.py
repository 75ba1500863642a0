"""Code emitters: each turns a backend-neutral Program into source text for one toolchain."""
from __future__ import annotations

from .c import CBackend

BACKENDS = {"c": CBackend}


def get_backend(name: str):
    """The backend class registered under ``name``."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; available: {', '.join(sorted(BACKENDS))}") \
            from None

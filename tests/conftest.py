"""Shared pytest configuration for stencilgen's tests."""
from __future__ import annotations

import pytest

import stencilgen


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """Build every operator of the test session into a fresh cache directory.

    The tests never read or write the user's jit-cache (``~/.cache/stencilgen`` or
    ``$STENCILGEN_CACHE_DIR``); the previous setting is restored afterwards.
    """
    previous = stencilgen.configuration["cache-dir"]
    stencilgen.configuration["cache-dir"] = str(tmp_path_factory.mktemp("stencilgen-cache"))
    try:
        yield stencilgen.configuration["cache-dir"]
    finally:
        stencilgen.configuration["cache-dir"] = previous

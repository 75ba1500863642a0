"""Shared pytest configuration for stencilgen's tests."""
from __future__ import annotations

import logging

import pytest

import stencilgen
from stencilgen.runtime import longrun

# the tests run their threads beside each other (pytest-xdist): the busy-machine advice of
# the first OpenMP apply (longrun.check_load) would be said in whichever test came first;
# tests/test_long_runs.py checks it on its own
longrun._load_said = True


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


class LogLines(logging.Handler):
    """Collects the messages of the `stencilgen` logger (which has its own handler and does
    not propagate, so caplog does not see it)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def take(self) -> list[str]:
        """The messages so far, forgetting them."""
        lines, self.lines = self.lines, []
        return lines


@pytest.fixture
def stencilgen_log():
    handler = LogLines()
    logger = logging.getLogger("stencilgen")
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)


@pytest.fixture
def restore_settings():
    """Every setting as it was before the test, put back through the public setter (so that
    listeners, e.g. the log level's, run)."""
    conf = stencilgen.configuration
    saved = {k: conf[k] for k in conf.keys()}
    yield conf
    for k, v in saved.items():
        # flag settings are kept as tuples but parsed from a string
        conf[k] = " ".join(map(str, v)) if isinstance(v, (list, tuple)) else v

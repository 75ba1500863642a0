"""Devito's numbers, stored: a program in tests/reference runs unchanged under Devito and
stencilgen (``run(api)`` with either module; under Devito 4.8.23 its ``__main__`` writes the
``.npz`` beside it), and a test runs it here under stencilgen and compares."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np

import stencilgen

REFERENCE = Path(__file__).resolve().parent / "reference"


def reference(program: str):
    """(the module of tests/reference/``program``.py, Devito's stored arrays)."""
    sys.path.insert(0, str(REFERENCE))
    try:
        module = importlib.import_module(program)
    finally:
        sys.path.remove(str(REFERENCE))
    return module, np.load(REFERENCE / f"{program}.npz")


def assert_matches_devito(program: str, tol: float = 1e-6, same_zeros: bool = False):
    """Every array of ``program``'s run under stencilgen within ``tol`` of the largest value
    of Devito's (float32 round-off by default), the same keys, and with ``same_zeros`` zero
    exactly where Devito's is."""
    module, ref = reference(program)
    got = module.run(stencilgen)
    assert sorted(got) == sorted(ref.files)
    for key in ref.files:
        assert np.abs(got[key] - ref[key]).max() <= tol * np.abs(ref[key]).max(), key
        if same_zeros:
            assert np.array_equal(got[key] == 0, ref[key] == 0), key

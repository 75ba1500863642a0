"""The backends a feature test runs on: C, OpenACC where it builds, the CUDA backend's source
run on the host by the emulation ("cuda", where nvcc is), and a GPU ("gpu", marked and
skipped without one); ``target`` names the backend an Operator is built for, ``run``
applies it where the case says."""
from __future__ import annotations

import pytest

from stencilgen import platform
from test_cuda import needs_gpu, needs_nvcc


def backends(emulated: bool = True) -> list:
    """The cases; ``emulated=False`` leaves out the emulation (it binds Functions only)."""
    ok, _ = platform.usable("openacc")
    return ["c"] + (["openacc"] if ok else []) + \
        ([pytest.param("cuda", marks=needs_nvcc)] if emulated else []) + \
        [pytest.param("gpu", marks=[pytest.mark.gpu, needs_gpu])]


def target(case: str) -> str:
    return "cuda" if case == "gpu" else case


def run(op, case: str, tmp_path, **kw):
    if case == "cuda":
        import cuda_emulation
        assert cuda_emulation.run(op, str(tmp_path), **kw) == 0
    else:
        op.apply(**kw)

"""Fused CUDA nests or the nests apart (stencilgen/runtime/operator_tuning.py, ``autotune.keep_apart``):
fused by default, where no tuning record says otherwise; the nests apart for a size where the
autotuner measured them faster, remembered beside the build as launch shapes are. Without a
GPU: code generation, and the choice's bookkeeping with the trials' timers stood in for."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from stencilgen import Operator, configuration
from stencilgen.runtime import autotune
from test_cuda import needs_nvcc
from test_fusion_pass import _sa_tti, _variable_density


@pytest.fixture
def fusion_setting():
    """The fusion setting put back after the test."""
    saved = configuration["fusion"]
    try:
        yield
    finally:
        configuration["fusion"] = saved


def test_the_default_fuses_sa_tti_and_the_log_says_so(caplog, fusion_setting):
    assert configuration["fusion"] == "auto"
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        op = Operator(_sa_tti(), backend="cuda", name="TTIDefault")
    assert len(op.program.steps) == 1 and op.program.steps[0].fusion is not None
    k = op.program.steps[0]
    assert f"{k.fusion.producer.name} fused into {k.name}" in caplog.text
    # its paired rings would hold one block an SM: a point a thread (``_layout``)
    assert k.fusion.pair == 1 and "points a thread" not in caplog.text
    configuration["fusion"] = "off"
    assert len(Operator(_sa_tti(), backend="cuda", name="TTIApart").program.steps) == 2


@pytest.mark.parametrize("backend", ["c", "openacc"])
def test_c_and_openacc_do_not_fuse(backend, fusion_setting):
    fused = Operator(_sa_tti(), backend=backend, name="TTIHost").ccode
    configuration["fusion"] = "off"
    assert Operator(_sa_tti(), backend=backend, name="TTIHost").ccode == fused


def test_the_nests_apart_must_be_faster_by_the_margin():
    assert not autotune.keep_apart(1.0, 1.0)
    assert not autotune.keep_apart(1.0, 1.0 - autotune.FUSION_MARGIN / 2)
    assert autotune.keep_apart(1.0, 1.0 - 2 * autotune.FUSION_MARGIN)
    assert not autotune.keep_apart(1.0, 1.5)


def _fused(name):
    op = Operator(_variable_density(), backend="cuda", name=name)
    assert op._fused()
    assert op.cfunction is not None   # built by nvcc (no GPU needed to build and load)
    return op


@needs_nvcc
def test_fused_without_a_record_apart_where_one_says_so(fusion_setting):
    op = _fused("ChoiceRecord")
    memory = autotune.Remembered(op.source_path.parent)
    memory.path.unlink(missing_ok=True)   # a cache kept from an earlier run
    assert not op._runs_apart({})   # no record: the fused kernel runs
    whole = "x".join(map(str, (24, 20, 28, 0, 23, 0, 19, 0, 27)))
    memory.put(autotune.apart_key(whole), [1])
    again = _fused("ChoiceRecord")   # a new process would read the same record
    assert again._runs_apart({})
    assert not again._runs_apart({"x_M": 10})   # another size: nothing remembered
    twin = again._fusion_twin()
    assert not twin._fused() and len(twin.program.steps) == 2
    assert again._fusion_twin() is twin   # built once
    configuration["fusion"] = "on"   # always fused: the record is not read
    assert not _fused("ChoiceRecord")._runs_apart({})


@needs_nvcc
@pytest.mark.parametrize("apart, kept", [(0.002, True), (0.0033, False)])
def test_the_autotuner_keeps_the_faster_and_remembers_it(apart, kept, monkeypatch, caplog,
                                                         fusion_setting):
    """Trials of 10 ms fused (3 steps: 3.33 ms a step) against ``apart`` seconds a step: the
    choice, its record and its log line."""
    op = _fused(f"ChoiceTimed{int(kept)}")
    monkeypatch.setattr(op, "_trial", lambda *a: (lambda choice: np.array([0.004, 0.006])))
    monkeypatch.setattr(op._fusion_twin(), "_trial_seconds", lambda kwargs: apart)
    key = "24x20x28x0x23x0x19x0x27"
    with caplog.at_level(logging.INFO, logger="stencilgen"):
        assert op._choose_fusion({}, [], {}, np.zeros(2, dtype=np.int64), key, {}) is kept
    assert autotune.Remembered(op.source_path.parent).get(autotune.apart_key(key))[0] == kept
    assert op._runs_apart({}) is kept
    assert op._trial_steps({}) == 3
    assert f"fused nests 3.33 ms, apart {1e3 * apart:.2f} ms a step" in caplog.text
    assert f"{'apart' if kept else 'fused'} kept" in caplog.text

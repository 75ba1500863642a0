"""Nests split at run time where a Function is zero on a box (``Function.zero_box``,
``ir/zero_split``): the decisions (taken, refused with a reason), the box as a run-time
argument, its check against the values, and the results of every backend against the
unsplit nest."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from stencilgen import (Eq, Function, Grid, InvalidArgument, Operator, TimeFunction, solve,
                        switchconfig)
from stencilgen.seismic.model import Model
from stencilgen.seismic.propagators import acoustic_operator

from test_cuda import needs_gpu, needs_nvcc

SHAPE = (26, 24, 22)
BOX = ((5, 20), (5, 18), (5, 16))


def _program(backend="c", shape=SHAPE, box=BOX, dtype=np.float32, split="on", name="ZS",
             reads=lambda d: d, storage=None):
    """A damped wave (a sponge ``d``, 0.3 outside ``box``, 0 inside, declared so) from a
    point, 12 steps; ``reads``: how the damping enters the PDE; ``storage``: every field's."""
    g = Grid(shape, extent=tuple(10.0 * (n - 1) for n in shape), dtype=dtype)
    u = TimeFunction(name="u", grid=g, time_order=2, space_order=4, storage=storage)
    m = Function(name="m", grid=g, space_order=2, storage=storage)
    m.data[:] = 1 / 1.5 ** 2
    d = Function(name="d", grid=g, space_order=2, storage=storage)
    d.data[:] = 0.3
    d.data[tuple(slice(lo, hi + 1) for lo, hi in box)] = 0
    d.zero_box = box
    dt = g.stepping_dim.spacing
    pde = m * u.dt2 - u.laplace + reads(d) * (u.forward - u.backward) / (2 * dt)
    with switchconfig(zero_split=split):
        op = Operator([Eq(u.forward, solve(pde, u.forward))], backend=backend, name=name)
    u.data[:, shape[0] // 2, shape[1] // 2, shape[2] // 2] = 1.0
    return op, u, d


def _run(op, u, **kw):
    op.apply(time_M=11, dt=1.0, **kw)
    return np.array(u.data)


def _decisions(caplog):
    return " ".join(r.getMessage() for r in caplog.records if "split" in r.getMessage())


@pytest.mark.parametrize("backend", ["c", "openacc"])
def test_the_split_nest_gives_the_unsplit_numbers(backend, caplog):
    """C (each row cut in three) and OpenACC (a test at each point): the split nest's wave
    equals the unsplit one's to round-off; the split body reads no damping."""
    with caplog.at_level(logging.DEBUG, logger="stencilgen"):
        op, u, _ = _program(backend, name=f"ZS{backend}")
    assert "split at run time where d is zero" in _decisions(caplog)
    (k,) = [k for k in op.program.steps if k.split is not None]
    assert "d" in k.reads and not any(a.base.name == "d" for st in k.split.body
                                      for a in st.rhs.atoms(__import__("sympy").Indexed))
    plain, v, _ = _program(backend, split=False, name=f"ZSoff{backend}")
    assert not any(k.split for k in plain.program.steps)
    a, b = _run(op, u), _run(plain, v)
    assert np.abs(b).max() > 0 and np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
@needs_nvcc
def test_the_emulated_cuda_source_splits_per_point(tmp_path):
    """The CUDA source (a test per point, the box's bounds kernel arguments), run by the
    emulation: the C numbers."""
    import cuda_emulation
    op, u, _ = _program("cuda", name="ZScuda")
    assert "if (sg_zs && (x >= d_zlo0 && x <= d_zhi0" in open(op.source_path).read()
    c_op, v, _ = _program("c", name="ZSc2")
    assert cuda_emulation.run(op, str(tmp_path), tuning=[0], time_M=11, dt=1.0) == 0
    a, b = np.array(u.data), _run(c_op, v)
    assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()   # float32: nvcc and gcc contract
                                                            # the arithmetic differently


@switchconfig(staging=False)   # the unstaged kernel's code (staged: tests/test_staging.py)
@needs_nvcc
def test_the_emulated_cuda_source_splits_paired_16_bit_nests(tmp_path):
    """float16 fields: each thread computes a pair of points (``cuda_pairs``), both tested
    against the box; the emulated run gives the unsplit kernel's numbers bit for bit."""
    import cuda_emulation
    runs = []
    for split in (True, False):
        op, u, _ = _program("cuda", split=split, name=f"ZSpair{split}", storage=np.float16)
        src = open(op.source_path).read()
        assert "sg_z" in src and ("inside the zero box" in src) == split
        assert cuda_emulation.run(op, str(tmp_path), tuning=[1], time_M=11, dt=1.0) == 0
        runs.append(np.array(u.data, dtype=np.float32))
    assert np.abs(runs[1]).max() > 0 and np.array_equal(runs[0], runs[1])


def test_the_box_is_a_run_time_argument():
    """A smaller box, then none, on the same build: each the unsplit numbers (with none the
    split body runs nowhere); the build is not repeated."""
    op, u, d = _program(name="ZSbox")
    plain, v, _ = _program(split=False, name="ZSbox0")
    reference = _run(plain, v)
    built = op.source_path
    for box in (((8, 12), (6, 9), (7, 7)), None):
        d.zero_box = box
        u.data[:] = 0
        u.data[:, SHAPE[0] // 2, SHAPE[1] // 2, SHAPE[2] // 2] = 1.0
        assert np.abs(_run(op, u) - reference).max() <= 1e-6 * np.abs(reference).max()
    assert op.source_path == built


def test_values_that_are_not_zero_in_the_box_are_refused():
    """A write into the box after it was declared: the next apply says where."""
    op, u, d = _program(name="ZSbad")
    _run(op, u)
    d.data[10, 10, 10] = 0.5
    with pytest.raises(InvalidArgument, match=r"d.zero_box is .* not zero there .*\(10, 10, 10\)"):
        _run(op, u)
    d.data[10, 10, 10] = 0
    _run(op, u)


def test_bad_boxes_say_what_to_give():
    g = Grid((8, 8))
    f = Function(name="f", grid=g)
    for box, words in ((((0, 3),), "for each of its 2 dimensions"),
                       (((0, 3), (2, 9)), "not a box inside the domain"),
                       ((3, 4), "give \\(first, last\\) domain indices")):
        with pytest.raises(InvalidArgument, match=words):
            f.zero_box = box
    with pytest.raises(InvalidArgument, match="no time axis"):
        TimeFunction(name="u", grid=g).zero_box = ((0, 1), (0, 1))


def test_refusals_give_their_reason(caplog):
    """A body that divides by the zero-box array (where it is zero: no split body), and a
    nest that writes the array, keep the nest whole, each with its reason in the log."""
    import sympy
    from stencilgen.ir.nodes import Assign
    from stencilgen.ir.zero_split import _without
    x = sympy.Symbol("x", integer=True)
    d, u = sympy.IndexedBase("d"), sympy.IndexedBase("u")
    r = sympy.Symbol("r0")
    body = (Assign(r, 1 / d[x], np.float32), Assign(u[x], u[x] * r))
    kept, why = _without(body, {"d"})
    assert kept is None and "divides by zero" in why
    inner, _ = _without((Assign(r, 2 * d[x], np.float32), Assign(u[x], u[x] + r * u[x + 1])),
                        {"d"})
    assert inner == (Assign(u[x], u[x]),)   # r0 = 0 propagated, then dropped
    g = Grid((10, 10))
    f = Function(name="f", grid=g)
    f.zero_box = ((2, 7), (2, 7))
    e = Function(name="e", grid=g)
    with caplog.at_level(logging.DEBUG, logger="stencilgen"):
        op = Operator([Eq(e, f + 1), Eq(f, f * 2)], name="ZSwrite")
    assert not any(k.split for k in op.program.steps)
    assert "f has a zero box but is written" in _decisions(caplog)


def test_the_model_declares_its_sponge_box():
    """seismic.Model's damping is zero off its layer and says so: the acoustic nest splits,
    and a shot gives the unsplit records."""
    model = Model(vp=np.full((20, 18, 16), 1.5, dtype=np.float32), spacing=10.0, nbl=6,
                  space_order=4, dtype=np.float32)
    box = model.damp.zero_box
    assert box == tuple((6, n + 6 - 1) for n in (20, 18, 16))
    inside = np.asarray(model.damp.data)[tuple(slice(lo, hi + 1) for lo, hi in box)]
    assert not inside.any() and np.asarray(model.damp.data).any()
    with switchconfig(zero_split="on"):
        op, u = acoustic_operator(model, name="ZSmodel")
    assert any(k.split is not None for k in op.program.steps)


def test_zero_split_auto_is_the_backends_choice():
    """``zero-split`` auto: C keeps each nest whole (its row split lost on 2 and 16 cores),
    CUDA splits and offers the split to the autotuner; on splits everywhere, off nowhere."""
    for setting, c_split, cuda_split in (("auto", False, True), ("on", True, True),
                                         ("off", False, False)):
        for backend, want in (("c", c_split), ("cuda", cuda_split)):
            op, _, _ = _program(backend, split=setting, name=f"ZS{setting}{backend}")
            assert any(k.split is not None for k in op.program.steps) == want, \
                (setting, backend)


def _halves(op, k):
    """The launch shapes offered for split nest ``k``: (with the split, without it)."""
    offered = op._emitter.launch_shapes()[k.section.timer]
    half = len(offered) // 2
    return offered[:half], offered[half:]


@needs_nvcc
@pytest.mark.parametrize("stage", [False, True])
def test_the_split_is_the_autotuners_choice_on_cuda(stage, tmp_path):
    """CUDA offers a split nest's launch shapes twice, with the split and without it (its
    test compiled out of the kernel's instance, ``backends/cuda_zero``), staged or not, one
    step or two a pass: every choice gives the same fields and records (the damping is zero
    in its box), emulated. Where nothing is tuned the nest runs without it."""
    import cuda_emulation
    from test_staging import sponge_shot
    with switchconfig(staging=stage):
        op, _, _, _ = sponge_shot(f"ZSChoice{int(stage)}")
    (k,) = [k for k in op.program.kernels if not k.is_sparse]
    split, whole = _halves(op, k)
    assert split and all(w.endswith(", zero split") for w in split)
    assert [w.replace(", zero split", ", no zero split") for w in split] == list(whole)
    default = op._emitter.default_shapes()[k.section.timer]
    assert default >= len(split)   # without it (cuda_zero.DEFAULT_ON)
    src = op.ccode
    name = k.section.function
    assert f"{name}<int, " in src and ", true>" in src and ", false>" in src
    picks = [default % len(split), default % len(split) + len(split)]
    if stage:   # the pass's first shape, with and without the split
        first = next(i for i, w in enumerate(split) if w.startswith("two time steps"))
        picks += [first, first + len(split)]
    out = []
    for pick in picks:
        with switchconfig(staging=stage):
            op, u, shot, dt = sponge_shot(f"ZSChoice{int(stage)}")
        tuning = [0] * len(op.program.kernels)
        tuning[k.section.timer] = pick
        assert cuda_emulation.run(op, str(tmp_path), tuning=tuning, reverse=bool(pick % 2),
                                  time_m=0, time_M=10, dt=dt) == 0
        out.append((np.array(u.data), np.array(shot.rec.data)))
    u0, r0 = out[0]
    assert np.abs(r0).max() > 0.1
    for (u1, r1), pick in zip(out[1:], picks[1:]):
        assert np.abs(u1 - u0).max() <= 1e-6 * np.abs(u0).max(), (split + whole)[pick]
        assert np.abs(r1 - r0).max() <= 1e-6 * np.abs(r0).max(), (split + whole)[pick]


@needs_nvcc
def test_zero_split_on_offers_the_split_alone():
    """``zero-split=on``: the split is no choice (every launch its ``true`` instance, the
    shapes offered once); ``off``: the nest is not split; the setting reads 1/0 as on/off."""
    from stencilgen import configuration
    with switchconfig(staging=False):
        op, _, _ = _program("cuda", name="ZSon", split="on")
    (k,) = op.program.kernels
    assert k.split is not None and "sg_tuned" not in op.ccode
    assert ", false>" not in op.ccode and ", true>" in op.ccode
    assert not any("zero split" in w for w in op._emitter.launch_shapes()[k.section.timer])
    with switchconfig(staging=False):
        auto, _, _ = _program("cuda", name="ZSauto", split="auto")
    assert len(auto._emitter.launch_shapes()[k.section.timer]) == \
        2 * len(op._emitter.launch_shapes()[k.section.timer])
    assert configuration["zero-split"] == "auto"
    for given, read in (("1", "on"), ("0", "off"), ("auto", "auto"), (True, "on")):
        with switchconfig(zero_split=given):
            assert configuration["zero-split"] == read


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("stage", [False, True])
def test_the_split_on_the_gpu_gives_the_c_numbers(stage):
    """Each half of the offered shapes (remembered as tuned), staged or not: the C numbers."""
    from stencilgen.runtime import autotune
    c_op, v, _ = _program("c", name="ZSgpuc")
    b = _run(c_op, v)
    for half in (0, 1):
        with switchconfig(staging=stage):
            op, u, _ = _program("cuda", name=f"ZSgpu{int(stage)}", split="auto")
        (k,) = [k for k in op.program.kernels if not k.is_sparse]
        split, _ = _halves(op, k)
        args, _ = op._arguments(time_M=11, dt=1.0)
        choice = [0] * max(len(op.program.kernels), 1)
        choice[k.section.timer] = op._emitter.default_shapes()[k.section.timer] % \
            len(split) + half * len(split)
        autotune.Remembered(op.source_path.parent).put(autotune.size_key(op.program, args),
                                                       choice)
        a = _run(op, u, autotune=False)
        assert np.abs(a - b).max() <= 1e-5 * np.abs(b).max()

"""What the survey demo's workers run (``stencilgen.seismic.survey``): a setup built once per worker
and a function per shot, for the acoustic forward model and for SA-TTI RTM.

The shot functions check the geometry first, so a source or receiver outside the model
stops that shot with our error naming it, before any step is taken.
"""
from __future__ import annotations

import argparse

import numpy as np

from stencilgen.errors import InvalidArgument
from stencilgen import seismic

from . import imaging
from .geometry import _bounds, _check_inside
from .survey import Shot, ShotResult


def check_geometry(model, shot: Shot) -> None:
    """Our error naming the shot when a source or receiver lies outside the model."""
    try:
        _check_inside("source", np.atleast_2d(shot.src), _bounds(model))
        _check_inside("receivers", np.atleast_2d(shot.rec), _bounds(model))
    except ValueError as exc:
        raise InvalidArgument(f"shot {shot.index}: {exc}") from None


# -- acoustic forward modelling ------------------------------------------------------------

def acoustic_setup(inputs: dict) -> dict:
    """The model (from the scattered ``vp``), one shot's sparse functions and the Operator."""
    model = seismic.Model(vp=inputs["vp"], spacing=inputs["spacing"], nbl=inputs["nbl"],
                          space_order=inputs["space_order"])
    dt = model.critical_dt
    nt = inputs["nt"]
    axis = seismic.TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    src = [[0.5 * e for e in model.extent]]
    rec = np.zeros((inputs["nrec"], model.dim)) + src[0]
    shot = seismic.make_shot(model, axis, inputs["f0"], src, rec)
    op, u = seismic.acoustic_operator(model, shot, backend=inputs["backend"],
                                      name="SurveyAcoustic")
    return {"model": model, "shot": shot, "op": op, "u": u, "dt": dt}


def acoustic_shoot(state: dict, shot: Shot) -> ShotResult:
    """One shot: the wavefield and record zeroed, the geometry set, the record returned."""
    model, s = state["model"], state["shot"]
    check_geometry(model, shot)
    s.src.coordinates.data[:] = shot.src
    s.rec.coordinates.data[:] = shot.rec
    state["u"].zero()   # on the GPU where it lives there: nothing crosses the bus
    s.rec.zero()
    state["op"].apply(time_M=s.nt - 2, dt=state["dt"])
    return ShotResult(record=np.array(s.rec.data), meta={"dt": state["dt"], "f0": s.f0})


# -- SA-TTI reverse-time migration (demos/rtm, seismic/rtm.py) ---------------------------------------------

def rtm_setup(inputs: dict) -> dict:
    """The RTM demo's models and three Operators (``rtm.build``)."""
    from .rtm import build
    return {"survey": build(argparse.Namespace(**inputs))}


def rtm_shoot(state: dict, shot: Shot) -> ShotResult:
    """One shot: observed data in the true model (the record), migrated in the smooth one
    (the image, summed over the survey)."""
    s = state["survey"]
    check_geometry(s.model, shot)
    for f in (s.true, s.fwd):
        f.src.coordinates.data[:] = shot.src
        f.rec.coordinates.data[:] = shot.rec
    s.adj.rec_adj.coordinates.data[:] = shot.rec
    imaging.run_forward(s.true, s.dt)
    observed = np.array(s.true.rec.data)
    m = imaging.migrate(s.fwd, s.adj, observed, s.dt, None)
    return ShotResult(record=observed, image=m.image, meta={"dt": s.dt, "misfit": m.misfit})

"""The reverse-time migration survey of ``demos/rtm`` and the survey's RTM workers: an
anisotropic layer over a faster one, imaged in a model without the reflector (models, time
axis, geometry and the three Operators of one run, built by ``build``)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stencilgen import SparseTimeFunction

from . import imaging
from .geometry import make_shot, receiver_line
from .model import layered_model
from .tti import tti_critical_dt, tti_medium
from .wavelets import TimeAxis

SPACING = 10.0
NBL = 30
F0 = 0.015
TOP, BOTTOM = 1.5, 2.5                   # km/s
ANISOTROPY = dict(epsilon=0.10, delta=0.04, theta=math.radians(20.0), f=0.85)


@dataclass
class Survey:
    """The models, the operators and the shots' geometry of one run."""

    model: object            # the true model (seismic.Model: grid, sponge, vp)
    true: imaging.Forward    # the forward run in the true model (observed data)
    fwd: imaging.Forward     # the forward run in the migration model, keeping its wavefield
    adj: imaging.Adjoint
    dt: float
    sources: np.ndarray      # (nshots, ndim)
    reflector: float


def medium(model, velocity, so):
    """The TTI parameters of ``velocity`` (km/s, padded grid) with the demo's anisotropy."""
    return tti_medium(model.grid, so, V=velocity, b=1.0, phi=0.0, damp=model.damp.data,
                      **ANISOTROPY)


def build(args) -> Survey:
    """Models, time axis, geometry and the three Operators."""
    shape, so = tuple(args.shape), args.space_order
    depth = (shape[-1] - 1) * SPACING
    reflector = 0.6 * depth if args.reflector is None else float(args.reflector)
    model = layered_model(shape, SPACING, velocities=(TOP, BOTTOM), interfaces=(reflector,),
                          nbl=args.nbl, space_order=so, dtype=np.dtype(args.dtype).type)
    true_medium = medium(model, model.vp, so)
    smooth = medium(model, np.full_like(model.vp, TOP), so)
    dt = tti_critical_dt(true_medium, so)
    width = (shape[0] - 1) * SPACING
    xs = np.linspace(0.2 * width, 0.8 * width, args.nshots) if args.nshots > 1 else \
        np.array([0.5 * width])
    sources = np.array([[x] + [0.5 * w for w in model.extent[1:-1]] + [2 * SPACING]
                        for x in xs])
    if args.nt is None:
        far = max(np.max(np.abs(xs)), np.max(np.abs(width - xs)))
        two_way = 2 * math.hypot(far / 2, reflector) / TOP
        nt = int((1.5 / args.f0 + 1.1 * two_way) / dt) + 1
    else:
        nt = args.nt
    axis = TimeAxis(start=0.0, stop=(nt - 1) * dt, step=dt, num=nt)
    rec = receiver_line(model, shape[0], depth=2 * SPACING)
    shot = make_shot(model, axis, args.f0, sources[0], rec)
    keep = "checkpoints" if args.checkpoints else (args.keep or "memory")
    backend = args.backend
    true = imaging.forward_operator(true_medium, shot.src, shot.rec, None, backend=backend,
                                    name="RTMObserved")
    fwd = imaging.forward_operator(smooth, shot.src, shot.rec, keep, args.factor,
                                   backend=backend, name="RTMForward")
    residual = SparseTimeFunction(name="resid", grid=model.grid, npoint=len(rec), nt=nt,
                                  coordinates=rec)
    adj = imaging.adjoint_operator(smooth, residual, forward=fwd, backend=backend,
                                   name="RTMAdjoint")
    for op in (true.op, fwd.op, adj.op):
        op.cfunction   # noqa: B018 - built now, so that the shots' times hold no build
    return Survey(model, true, fwd, adj, dt, sources, reflector)

"""The seismic toolkit's propagators as PyTorch functions: receiver data from the squared
slowness and the source wavelet, differentiable in both.

``AcousticShot(model, sources, receivers, nt, dt)`` and ``SATTIShot(medium, ...)`` build one
shot's forward Operator (keeping the wavefield in memory) and its exact adjoint once;
calling one with ``m`` (1/V^2 on the grid's points, s^2/km^2) and the wavelet as torch
tensors (on the CPU, or on the GPU for a shot built with ``backend="cuda"``: then nothing
crosses to the host, the fields' GPU copies are read and written in place through DLPack)
runs the forward Operator and returns the receiver data as a tensor. Its backward
runs the adjoint with the incoming gradient of the data as the adjoint source and returns
the gradient in ``m`` (exact for the discrete scheme) and in the wavelet (the adjoint's
records at the sources). The forward wavefield reaches the adjoint as ``seismic.keeping``
plans it: kept every step where that fits where the arrays live, else recomputed from
binomial checkpoints between the forward and the backward call (``checkpoints=`` and
``snapshots=`` choose, ``memory=`` caps the bytes). torch is imported here only
(``import_torch``): ``pip install 'stencilgen[torch]'``.
"""
from __future__ import annotations

import ctypes
import sys

import numpy as np

from stencilgen import SparseTimeFunction
from stencilgen.errors import InvalidArgument

from . import imaging
from .checkpointing import Reversal
from .keeping import field_bytes, plan, step_bytes
from .propagators import _no_perf_report, acoustic_imaging_operators, batch_model


def import_torch():
    """PyTorch, imported after the C compiler's OpenMP runtime. PyTorch's wheels bundle a
    ``libgomp.so.1`` without OpenACC's entry points, and a process keeps the first library
    of that name it loads: loaded first, it breaks every OpenACC Operator built later (gcc's
    libgomp serves PyTorch as well)."""
    if "torch" not in sys.modules:
        try:
            ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
        except OSError:   # no system libgomp: no OpenACC builds to protect
            pass
    try:
        import torch
    except ImportError as exc:   # an extra: say how to get it
        raise ImportError("stencilgen.seismic.autograd needs PyTorch: pip install "
                          "'stencilgen[torch]'") from exc
    return torch


class _Shot:
    """What both propagators share: the sparse functions (one set for a whole batch), the
    checks, the shapes of a batch, the runs on host arrays, and the call through torch."""

    def __init__(self, grid, wavefield_grid, sources, receivers, nt: int, dt: float,
                 batch: bool = False):
        sources, receivers = np.asarray(sources, dtype=float), np.asarray(receivers, dtype=float)
        name = type(self).__name__
        want = 3 if batch else 2
        for label, points in (("sources", sources), ("receivers", receivers)):
            if points.ndim != want or points.shape[-1] != grid.dim or 0 in points.shape:
                shape = "(nshots, n, %d)" % grid.dim if batch else "(n, %d)" % grid.dim
                raise InvalidArgument(f"{name}: {label} have shape {points.shape}; give "
                                      f"{shape} coordinates")
        if batch and len(sources) != len(receivers):
            raise InvalidArgument(f"{name}: {len(sources)} shots of sources but "
                                  f"{len(receivers)} of receivers; give both per shot")
        #: shots in the batch (None: one shot, no shot axis); a batch of several runs on
        #: a ``propagators.batched_grid`` (shot k at coordinate k of its BatchDimension)
        self.nshots = len(sources) if batch else None
        self.wavefield_grid = wavefield_grid
        self.nsrc, self.nrec = sources.shape[-2], receivers.shape[-2]

        def sparse(label, points):
            if self.wavefield_grid is not grid:   # the shot's index ahead of its coordinates
                shot = np.broadcast_to(np.arange(self.nshots)[:, None, None],
                                       points.shape[:2] + (1,))
                points = np.concatenate([shot, points], axis=2)
            points = points.reshape(-1, points.shape[-1])
            return SparseTimeFunction(name=label, grid=self.wavefield_grid, npoint=len(points),
                                      nt=int(nt), coordinates=points)
        self.grid, self.nt, self.dt = grid, int(nt), float(dt)
        self.src, self.rec = sparse("src", sources), sparse("rec", receivers)
        self.rec_adj, self.src_adj = sparse("reca", receivers), sparse("srca", sources)
        self.runs = 0    # forward runs so far: the kept wavefield is that of the last one
        self.keeping, self.reversal, self.reversed = None, None, None

    def __call__(self, m, wavelet):
        return _function().apply(m, wavelet, self)

    # -- the forward wavefield on its way to the adjoint --------------------------------------
    def _keep(self, keeping, forward_op, adjoint_op, states) -> None:
        """Run ``forward_op`` and ``adjoint_op`` as ``keeping`` says: over every step, or
        (checkpoints) through a binomial Reversal of ``states`` (the forward's TimeFunctions:
        every time slot of theirs is saved), the adjoint one step at a time."""
        self.keeping, self._ops = keeping, (forward_op, adjoint_op)
        if keeping.mode != "checkpoints":
            return
        slots, storages = {}, [f.field.storage for f in states]
        self._slots = slots
        self.reversal = Reversal(
            self.nt, keeping.checkpoints,
            advance=lambda a, b: forward_op.apply(time_m=a, time_M=b - 1, dt=self.dt),
            save=lambda k, slot: slots.__setitem__(slot, [s.checkpoint() for s in storages]),
            restore=lambda slot: [s.restore(c) for s, c in zip(storages, slots[slot])],
            reverse=lambda k: adjoint_op.apply(time_m=k, time_M=k, dt=self.dt))

    def _run_forward(self):
        self._zero_forward()
        if self.reversal is None:
            self._ops[0].apply(time_m=0, time_M=self.nt - 1, dt=self.dt)
            return
        with _no_perf_report():   # every piece of the schedule would report
            self.reversal.forward()

    def _run_adjoint(self):
        """The adjoint run; returns the gradient's Function (over a snapshots' steps only:
        ``_scale`` makes it the sum over every step)."""
        self._zero_adjoint()
        if self.reversal is None:
            self._ops[1].apply(time_m=0, time_M=self.nt - 1, dt=self.dt)
        else:
            with _no_perf_report():
                self.reversed = self.reversal.backward()
            self._slots.clear()   # the checkpoints' memory back
        return self._gradient

    def stale(self, run: int) -> bool:
        """Whether the backward of forward run ``run`` must run it again: another forward ran
        since, or (checkpoints) a backward already consumed its states."""
        return self.runs != run or (self.reversal is not None and not self.reversal.swept)

    @property
    def _scale(self) -> int:
        """What the gradient summed over the kept steps is multiplied by: a snapshot stands
        for the ``factor`` steps around it."""
        return self.keeping.factor if self.keeping.mode == "snapshots" else 1

    # -- shapes: a batch's arrays lead with the shot axis, the sparse functions' columns are
    #    its shots' points one shot after another --------------------------------------------
    def wavelet_shape(self, shape) -> tuple:
        """``shape`` (a wavelet's) as the sources' full shape broadcasts it: (nt, 1 or nsrc),
        with a batch's (1 or nshots) ahead; an InvalidArgument where it does not fit."""
        shape = tuple(shape)
        if self.nshots is None:
            full, fits = shape + (1,) * (len(shape) == 1), len(shape) in (1, 2)
            hint = f"({self.nt},) or ({self.nt}, {self.nsrc})"
        else:
            full = (1, shape[0], 1) if len(shape) == 1 else shape
            fits = len(shape) in (1, 3) and full[0] in (1, self.nshots)
            hint = f"({self.nt},) or ({self.nshots}, {self.nt}, 1 or {self.nsrc})"
        if not fits or full[-2] != self.nt or full[-1] not in (1, self.nsrc):
            raise InvalidArgument(f"{type(self).__name__}: the wavelet has shape {shape}; "
                                  f"give {hint}")
        return full

    def _columns(self, wavelet, xp):
        """The wavelet (numpy array or tensor; ``xp`` numpy or torch) as the sources' data."""
        full = self.wavelet_shape(wavelet.shape)
        if self.nshots is None:
            return xp.broadcast_to(wavelet.reshape(full), (self.nt, self.nsrc))
        w = xp.broadcast_to(wavelet.reshape(full), (self.nshots, self.nt, self.nsrc))
        return w.swapaxes(0, 1).reshape(self.nt, -1)

    def _per_shot(self, columns):
        """A sparse function's data (nt, points of every shot) as (nshots, nt, points)."""
        if self.nshots is None:
            return columns
        return columns.reshape(self.nt, self.nshots, -1).swapaxes(0, 1)

    def _data_columns(self, data):
        """Receiver data (``_per_shot``'s shape) back as the receivers' data."""
        return data if self.nshots is None else data.swapaxes(0, 1).reshape(self.nt, -1)

    def _check(self, shape, positive: bool) -> None:
        """m of the grid's shape and positive."""
        name, shape = type(self).__name__, tuple(shape)
        if shape != self.grid.shape:
            raise InvalidArgument(f"{name}: m has shape {shape}; give one value per grid "
                                  f"point, {self.grid.shape}")
        if not positive:
            raise InvalidArgument(f"{name}: m = 1/V^2 must be positive everywhere")

    def _set(self, m: np.ndarray, wavelet: np.ndarray) -> None:
        self._check(m.shape, bool(np.all(m > 0)))
        columns = self._columns(wavelet, np)
        self._set_model(m)
        self.src.data[:] = columns

    def forward(self, m: np.ndarray, wavelet: np.ndarray) -> np.ndarray:
        """The receiver data of the model ``m`` and the wavelet (host arrays): (nt, nrec), a
        batch's (nshots, nt, nrec)."""
        self._set(m, wavelet)
        self._run_forward()
        self.runs += 1
        return np.array(self._per_shot(self.rec.data))

    def backward(self, grad_rec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(d/dm, d/dsrc) of <grad_rec, data> at the last forward run's m and wavelet; d/dsrc
        in the sources' full shape (``wavelet_shape``'s with nsrc)."""
        self.rec_adj.data[:] = self._data_columns(grad_rec)
        gradient = np.array(self._run_adjoint().data)
        if self._scale != 1:
            gradient *= self._scale
        return gradient, np.array(self._per_shot(self.src_adj.data))

    # -- the same on CUDA tensors: the fields' GPU copies written and read in place --------
    def forward_device(self, m, wavelet, torch):
        residency = getattr(self.fwd, "op", self.fwd).residency   # SA-TTI's is a Forward
        if residency != "cuda":
            raise InvalidArgument(f"{type(self).__name__}: CUDA tensors need a shot built "
                                  f"with backend='cuda' (this one runs on {residency})")
        self._check(m.shape, bool((m > 0).all()))
        columns = self._columns(wavelet.detach(), torch).contiguous()
        self._set_model_device(m.detach(), torch)
        self.src.data = columns
        self._run_forward()
        self.runs += 1
        return self._per_shot(torch.from_dlpack(self.rec.device_data)).clone()

    def backward_device(self, grad_rec, torch):
        self.rec_adj.data = self._data_columns(grad_rec.detach()).contiguous()
        gradient = torch.from_dlpack(self._run_adjoint().device_data)
        return (gradient * self._scale if self._scale != 1 else gradient.clone(),
                self._per_shot(torch.from_dlpack(self.src_adj.device_data)).clone())


_KEEPING_DOC = """``checkpoints`` (n): the forward states recomputed from n binomial
    checkpoints (the gradient the same as from memory, to round-off); ``snapshots`` (k): every
    k-th step kept, the gradient k times their sum (an approximation: keep k below the
    wavelet's Nyquist interval); neither: every step kept where that fits in ``memory``
    bytes (default: 90 % of what is free where the arrays live, the GPU for CUDA, less the
    shot's other fields), else as many checkpoints as fit there, said in a warning before
    anything runs (``shot.keeping`` says what was chosen)."""


class AcousticShot(_Shot):
    """One shot of the acoustic propagator with the sponge (``propagators.acoustic_pde``) on
    ``model`` (``model.Model``): sources and receivers at the given coordinates (a row
    each), ``nt`` steps of ``dt``. ``shot(m, wavelet)``: ``m`` the squared slowness on the
    padded grid, ``wavelet`` (nt,) for every source or (nt, nsources); returns (nt,
    nreceivers).

    ``batch=True``: sources and receivers are given per shot, (nshots, n, dim), and every
    shot runs in the same kernel launches (a BatchDimension ahead of the model's: the GPU
    filled by a batch of small 2D shots); the wavelet is (nt,) or (nshots, nt, 1 or
    nsources), the data (nshots, nt, nreceivers), the gradient in m summed over the shots.
    A batch needs a 1D or 2D model (stencilgen's grids have at most three dimensions).
    ``keep``: the kept forward wavefield's storage (None: float32; numpy.float16 or
    "bfloat16": half its memory and traffic, the gradient within the error
    docs/imaging.md states). ``options``: the Operators' other keyword arguments
    (``cflags=``...).

    """ + _KEEPING_DOC

    def __init__(self, model, sources, receivers, nt: int, dt: float, backend=None,
                 name: str = "TorchAcoustic", batch: bool = False, keep=None,
                 checkpoints=None, snapshots=None, memory=None, **options):
        if batch and model.grid.dim > 2:
            raise InvalidArgument(f"AcousticShot: a batch needs a 1D or 2D model, this one is "
                                  f"{model.grid.dim}D; run its shots one after another "
                                  f"(batch=False), each fills the GPU")
        nshots = len(sources) if batch else 1
        self.model = batch_model(model, nshots) if nshots > 1 else model
        super().__init__(model.grid, getattr(self.model, "wavefield_grid", model.grid),
                         sources, receivers, nt, dt, batch)
        self.fwd, self.adj, self.fields, self.gradient, keeping = acoustic_imaging_operators(
            self.model, self.src, self.rec, self.rec_adj, self.src_adj, backend, name,
            keep=keep, who="AcousticShot", checkpoints=checkpoints, snapshots=snapshots,
            memory=memory, **options)
        self._keep(keeping, self.fwd, self.adj, self.fields[:1])

    def _set_model(self, m):
        self.model.m.data[:] = m

    def _set_model_device(self, m, torch):
        self.model.m.data = m.contiguous()

    def _zero_forward(self):
        # not the kept wavefield: the forward writes every step of it before the adjoint
        # reads one (zeroing it cost a 2D batch gradient of 32 shots 3.9 ms of its 99 ms)
        for f in (self.fields[0], self.rec):
            f.zero()

    def _zero_adjoint(self):
        for f in (self.fields[2], self.src_adj, self.gradient):
            f.zero()

    @property
    def _gradient(self):
        return self.gradient


class SATTIShot(_Shot):
    """One shot of the SA-TTI propagator on ``medium`` (``tti.tti_medium``), its adjoint and
    gradient from ``imaging``; called as ``AcousticShot`` is (m sets V = 1/sqrt(m)).

    """ + _KEEPING_DOC

    def __init__(self, medium, sources, receivers, nt: int, dt: float, backend=None,
                 name: str = "TorchTTI", checkpoints=None, snapshots=None, memory=None):
        super().__init__(medium.grid, medium.grid, sources, receivers, nt, dt)
        self.medium = medium
        # P and M of the forward and adjoint (three time slots each), image and gradient
        slot = step_bytes(medium.V)
        params = [f for f in (medium.V, medium.b, medium.epsilon, medium.delta, medium.theta,
                              medium.phi, medium.qinv, medium.damp) if f is not None]
        others = 14 * slot + sum(field_bytes(f) for f in params)
        keeping = plan("SATTIShot", self.nt, 2 * slot, 6 * slot, others, backend,
                       checkpoints, snapshots, memory)
        self.fwd = imaging.forward_operator(medium, self.src, self.rec, keeping.mode,
                                            keeping.factor, backend=backend, name=f"{name}F")
        self.adj = imaging.adjoint_operator(medium, self.rec_adj, self.src_adj,
                                            forward=self.fwd, backend=backend,
                                            name=f"{name}A")
        self._keep(keeping, self.fwd.op, self.adj.op, (self.fwd.P, self.fwd.M))

    def _set_model(self, m):
        V = self.medium.V
        V.data_with_halo[:] = np.pad(1.0 / np.sqrt(m), V.halo, mode="edge")

    def _set_model_device(self, m, torch):
        V = self.medium.V
        pads = [h for pair in reversed(V.halo) for h in pair]   # last dimension first
        v = torch.rsqrt(m)[None, None]
        torch.from_dlpack(V.device_data_with_halo).copy_(
            torch.nn.functional.pad(v, pads, mode="replicate")[0, 0])

    def _zero_forward(self):
        imaging.zero(self.fwd.P, self.fwd.M, self.fwd.rec)

    def _zero_adjoint(self):
        a = self.adj
        imaging.zero(a.P, a.M, a.src_adj, a.image, a.gradient)

    @property
    def _gradient(self):
        return self.adj.gradient


_FUNCTION = None


def _function():
    """The torch.autograd.Function class, made on first use (torch imported then)."""
    global _FUNCTION
    if _FUNCTION is not None:
        return _FUNCTION
    torch = import_torch()

    def host(t, dtype):
        return np.ascontiguousarray(t.detach().numpy(), dtype=dtype)

    def run_forward(shot, m, wavelet):
        if m.is_cuda:
            return shot.forward_device(m, wavelet, torch)
        dtype = shot.grid.dtype
        return torch.from_numpy(shot.forward(host(m, dtype), host(wavelet, dtype)))

    class Shot(torch.autograd.Function):
        @staticmethod
        def forward(ctx, m, wavelet, shot):
            if m.device != wavelet.device:
                raise InvalidArgument(f"{type(shot).__name__}: m is on {m.device}, the "
                                      f"wavelet on {wavelet.device}; put both on one device")
            data = run_forward(shot, m, wavelet)
            ctx.shot, ctx.run = shot, shot.runs
            ctx.save_for_backward(m, wavelet)
            return data.to(m.dtype)

        @staticmethod
        def backward(ctx, grad_rec):
            shot, (m, wavelet) = ctx.shot, ctx.saved_tensors
            if shot.stale(ctx.run):   # its wavefield is no longer there: run it again
                run_forward(shot, m, wavelet)
            if m.is_cuda:
                gm, gs = shot.backward_device(grad_rec, torch)
            else:
                gm, gs = (torch.from_numpy(g) for g in
                          shot.backward(host(grad_rec, shot.grid.dtype)))
            # the sources' gradient summed over what the wavelet was broadcast along
            gs = gs.sum_to_size(shot.wavelet_shape(wavelet.shape)).reshape(wavelet.shape)
            grads = [g.to(t.dtype) if need else None
                     for g, t, need in zip((gm, gs), (m, wavelet), ctx.needs_input_grad)]
            return grads[0], grads[1], None

    _FUNCTION = Shot
    return Shot

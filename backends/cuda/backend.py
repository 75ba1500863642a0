"""The CUDA C++ backend: one ``__global__`` kernel per loop nest, the time loop on the host.

The ``extern "C"`` entry point takes the same arguments as the C backend's, but its arrays are
device allocations in the layout of ``device_layout`` (made, filled and read back by the
caller, ``stencilgen.data.places``): it runs all sections there (the contiguous dimension on
``threadIdx.x``, sparse points with ``atomicAdd``) and copies nothing but the sparse
coordinates, so fields stay on the GPU between applies. Each CUDA call is checked; a failure
returns a nonzero status and leaves a message in ``stencilgen_error()``. Section times come
from CUDA events.

The emitter is ``CudaBackend``, put together from its parts: ``kernel_args`` (what kernels
take), ``grid_kernels`` (the kernels of grid nests), ``launches`` (launch shapes and calls) and
``host_program`` (the time loop and the rest of the host code), over ``kernel_text`` (the
printers, preludes and shapes).
"""
from __future__ import annotations

from . import step_passes, zero_split
from ..c.backend import CBackend
from ..common.options import EmitOptions
from .kernel_text import CheckedPrinter, CudaPrinter
from .grid_kernels import GridKernels
from .host_program import HostProgram
from .kernel_args import KernelArgs
from .launches import Launches
# the names other modules read here
from .kernel_text import EVENT_SLOTS, TIMER_SAMPLE, field_layout  # noqa: F401


class CudaBackend(KernelArgs, GridKernels, Launches, HostProgram, CBackend):
    """Prints a Program as CUDA C++: kernels for the loop nests, a host driver for the rest."""

    name = "cuda"
    language = "CUDA C++"
    tuning_rounds = 1   # CUDA events: a shape's trial times agree to 0.1 % between runs
    tuning_margin = 0.0
    source_suffix = ".cu"
    openmp_threads = False   # no OpenMP team in the calling process
    printer_class = CudaPrinter
    #: whether grid nests over 16-bit arrays compute two points a thread from paired loads
    #: (``cuda_pairs``); False: one point a thread, each 16-bit read alone
    pair_loads = True
    STORAGE_PROBES = {}      # nvcc always has cuda_fp16.h and cuda_bf16.h
    #: split nests at run time: the split is the autotuner's choice (``cuda_zero``)
    ZERO_SPLIT = True
    #: what fused nests (``stencilgen/ir/fusion``) may use: Hopper's 227 KiB of shared memory
    #: a block; a thread per producer point, at most 1024 a block less the 31 its halo columns'
    #: rounding to a warp may add; tiles of the inner dimensions (innermost last, a warp along
    #: it): 16x32 recomputes the least halo (864 threads at so 8), 8x32 the most.
    #: P and M not interleaved (``interleave``): the 128-bit loads halve the shared loads but
    #: hold 4 registers a quad; at 432 threads a block (128 registers) the SA-TTI kernel
    #: spilled and lost 12 % on an H200 (docs/performance.md, issue 63). An SM's 228 KiB, 1 KiB
    #: of it kept a block: two points a thread only where two blocks fit an SM (``_layout``)
    # queue: a staged nest's inputs along the streamed dimension from registers (4 blocks an
    # SM kept resident: ``fused_nests.resident_blocks``): the acoustic so 8 at 512^3 on an
    # H200 164.5 against 158.0 GPts/s from rings (docs/performance.md, issue 65)
    FUSION = dict(shared_bytes=227 * 1024, points=1024, pair=2, warp=32, interleave=False,
                  queue=True,
                  sm_shared_bytes=228 * 1024, block_reserve=1024,
                  tiles={2: ((16, 32), (12, 32), (8, 32)), 1: ((256,), (128,))},
                  # two steps a pass: wider tiles, the first step's halo a smaller share
                  step_tiles={2: ((32, 32), (24, 32), (16, 64), (16, 32))})

    def __init__(self, program, options: EmitOptions = EmitOptions()):
        super().__init__(program, options)
        self._slots: dict = {}
        # the nest running two time steps a pass, if any (``cuda_steps``), its pass; while the
        # pass's loop is printed, the field its launches reach through the level table
        self.stepped = next((k for k in program.steps if getattr(k, "steps", None)), None)
        self.passed = step_passes.pass_kernel(self.stepped) if self.stepped else None
        self._leveled = False
        # where the host reads the launch shapes: the tuning argument, or its copy with the
        # zero split's choice taken out (``cuda_zero``)
        self.tuning = zero_split.TUNED if any(zero_split.offered(self, k)
                                             for k in program.kernels) else program.tuning
        # device code is a template over its index type: 32-bit where every array fits
        self.index = "sg_int"
        if options.debug:
            self.printer = CheckedPrinter(program.dtype, self.printer.strides,
                                          [a.name for a in program.arrays])
            self.printer.stored = self.stored

    # -- what kernels take --------------------------------------------------------------------
    residency = "cuda"   # arrays are device copies the caller keeps (stencilgen.data.places)

    time_tiles = False   # time-skewed tiles are the C backend's (c_timetile)

    split_style = "points"   # a zero-box split tested by each thread

    # -- device code ------------------------------------------------------------------------

    # -- host code --------------------------------------------------------------------------

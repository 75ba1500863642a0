"""The platform layer: which backend, which compiler and which GPU, and the settings they get.

The one place that reads the settings for code generation and builds, probes the GPU and
chooses jitcache toolchains. Backends (which only print) and jitcache (which only builds) get
the results as arguments: ``EmitOptions`` for the one, a ``Toolchain`` for the other.
"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import os
import subprocess
import sys
from dataclasses import dataclass

import jitcache
from backends import EmitOptions, available_backends, get_backend

from . import logger as log
from .configuration import configuration
from .errors import InvalidArgument
from .ir.fusion import Limits


@dataclass(frozen=True)
class Target:
    """A chosen backend: its name, the class that prints its source, and why it was chosen."""

    name: str
    emitter: type
    why: str = ""

    @property
    def narrow_index(self) -> bool:
        """Whether kernels also get 32-bit index arithmetic (GPUs: much faster than 64-bit)."""
        return self.name == "cuda"

    @property
    def flops_per_byte(self) -> float:
        """Arithmetic per byte of memory bandwidth, for choosing between reading an invariant
        from an array and recomputing it: an H200 does 67 TFLOP/s in fp32 against 4.8 TB/s
        (14); 0 on CPUs, which keep every costly invariant in an array."""
        return 14.0 if self.name in ("cuda", "openacc") else 8.0

    @property
    def zero_split(self) -> bool:
        """Whether nests reading a zero-box array are split at run time (``ir/zero_split``):
        the ``zero-split`` setting; ``auto`` asks the backend (``ZERO_SPLIT``)."""
        setting = configuration["zero-split"]
        return setting == "on" or (setting == "auto" and getattr(self.emitter, "ZERO_SPLIT", True))

    @property
    def fusion(self):
        """The limits of the nests the backend fuses (``ir/fusion.Limits``), or None."""
        figures = getattr(self.emitter, "FUSION", None)
        if not figures or configuration["fusion"] == "off":
            return None
        queue = configuration["register-queue"]
        return Limits(**{**figures, "queue": queue == "on" or (queue == "auto" and
                                                              figures.get("queue", False))})


#: the choices of ``auto`` logged so far in this process
_SAID: set = set()


def select(name: str | None = None) -> Target:
    """The backend called ``name`` (default: the ``backend`` setting); ``auto`` is resolved by
    :func:`choose_auto`, and its choice logged."""
    requested = name or configuration["backend"]
    if not isinstance(requested, str):
        raise InvalidArgument(f"Operator: backend must be a name such as 'c' or 'cuda', "
                              f"got {requested!r}")
    requested, why = requested.lower(), "requested"
    if requested == "auto":
        requested, why = choose_auto()
        said = (requested, why) in _SAID
        _SAID.add((requested, why))
        # once a process (then at DEBUG): a script building many Operators is told once
        (log.debug if said else log.info)(f"Backend `auto` chose `{requested}`: {why}")
    try:
        return Target(requested, get_backend(requested), why)
    except ValueError:
        raise InvalidArgument(f"Operator: unknown backend {requested!r}; available: auto, "
                              f"{', '.join(available_backends())}") from None


def choose_auto() -> tuple[str, str]:
    """The backend ``auto`` means here, and why: CUDA when it can run (a GPU and nvcc), else C."""
    if "cuda" not in available_backends():
        return "c", "the C/OpenMP backend is the one this build provides"
    ok, why = usable("cuda")
    return ("cuda" if ok else "c"), why


# -- the GPU ------------------------------------------------------------------------------------

_PROBE = r"""
import ctypes, sys
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError:
    print("none|the NVIDIA driver (libcuda.so.1) is not installed"); sys.exit()
rc = cu.cuInit(0)
if rc != 0:
    msg = ctypes.c_char_p()
    cu.cuGetErrorString(rc, ctypes.byref(msg))
    print(f"none|cuInit failed: {(msg.value or b'unknown error').decode()} (CUresult {rc})")
    sys.exit()
n, dev, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
cu.cuDeviceGetCount(ctypes.byref(n))
if n.value < 1:
    print("none|the NVIDIA driver sees no CUDA device"); sys.exit()
cu.cuDeviceGet(ctypes.byref(dev), 0)
name = ctypes.create_string_buffer(256)
cu.cuDeviceGetName(name, 256, dev)
cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)
cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)
cc = f"{major.value}{minor.value}"
print(f"gpu|{cc}|{n.value}|{name.value.decode()} (sm_{cc})")
"""


def gpu_count() -> int:
    """How many GPUs the CUDA driver sees (0: none, or no driver)."""
    return _probe()[3]


def probe_gpu() -> tuple[bool, str, int | None]:
    """(whether the CUDA driver sees a GPU, its name or why not, its compute capability: 90 for
    9.0), asked in a child process so that this one never initialises CUDA (forks stay safe)."""
    return _probe()[:3]


@functools.lru_cache(maxsize=None)
def _probe() -> tuple[bool, str, int | None, int]:
    """``probe_gpu``'s answer and the number of GPUs, from one child process."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"the GPU probe could not run ({exc})", None, 0
    kind, _, text = done.stdout.strip().partition("|")
    if kind == "gpu":
        cc, count, name = text.split("|", 2)
        return True, name, int(cc), int(count)
    if kind == "none":
        return False, text, None, 0
    return False, f"the GPU probe failed: {(done.stderr or done.stdout).strip()[-200:]}", None, 0


def nvcc_arch(nvcc_path: str) -> str | None:
    """``sm_XY`` of the visible GPU when the nvcc at ``nvcc_path`` can build for it, else None
    (jitcache then takes the oldest architecture that nvcc supports)."""
    gpu, _, cc = probe_gpu()
    if not gpu or cc is None:
        return None
    supported = jitcache.nvcc_archs(nvcc_path)
    return f"sm_{cc}" if not supported or cc in supported else None


# -- toolchains ---------------------------------------------------------------------------------

def _c_toolchain(cflags):
    """gcc (or the ``cc`` setting); ``cflags``, else the ``cflags`` setting, replace -O3 etc.
    Debug builds with gcc also report which loops were vectorised (``-fopt-info-vec``)."""
    flags = configuration["cflags"] if cflags is None else cflags
    tc = jitcache.gcc(cflags=flags, cc=configuration["cc"])
    if configuration["debug"] and "clang" not in tc.version().lower():
        tc = jitcache.gcc(cflags=list(tc.cflags) + ["-fopt-info-vec"], cc=tc.cc)
    return tc


def _cuda_toolchain(cflags):
    """nvcc for the visible GPU's arch, with the debug / fast-math / NVTX needs of the settings;
    the ``cflags`` setting is for the C compilers and does not apply."""
    tc = jitcache.nvcc(cflags=cflags)
    arch = nvcc_arch(tc.cc)
    if arch is not None:
        tc = jitcache.nvcc(cflags=cflags, arch=arch, cc=tc.cc)
    extra = ["-G", "-lineinfo"] if configuration["debug"] else []
    if configuration["fast-math"]:
        extra.append("--use_fast_math")
    tc = tc.with_flags(extra=extra)
    if configuration["nvtx"]:
        # nvtx3 is header-only but loads its injection library with dlopen
        tc = dataclasses.replace(tc, libraries=tuple(tc.libraries) + ("dl",))
    return tc


def _openacc_toolchain(cflags):
    """nvc++ (for the visible GPU) when installed, else GCC (offloading to nvptx when it can);
    ``openacc-cc`` forces one. Without ``cflags`` a GCC gets the ``cflags`` setting (gcc flags
    such as -march=native, which nvc++ would reject), nvc++ its own defaults."""
    cc, debug = configuration["openacc-cc"], configuration["debug"]
    tc = jitcache.openacc(cflags=cflags, cc=cc, debug=debug)
    if tc.name.startswith("GCC"):
        if cflags is None and configuration["cflags"] is not None:
            tc = jitcache.openacc(cflags=configuration["cflags"], cc=cc, debug=debug)
        return tc
    gpu, _, cap = probe_gpu()
    if gpu and cap:
        tc = jitcache.openacc(cflags=cflags, cc=tc.cc, debug=debug, gpu=f"cc{cap}")
    return tc


_TOOLCHAINS = {"c": _c_toolchain, "cuda": _cuda_toolchain, "openacc": _openacc_toolchain}


def _known(target: str) -> str:
    if target not in _TOOLCHAINS:
        raise InvalidArgument(f"unknown backend {target!r}; available: {', '.join(_TOOLCHAINS)}")
    return target


def toolchain(target: str, cflags=None) -> jitcache.Toolchain:
    """The jitcache toolchain that builds backend ``target``'s source here; ``cflags`` (an
    Operator's ``cflags=``) replace the compiler's default flags."""
    return _TOOLCHAINS[_known(target)](cflags)


def emit_options(target: str) -> EmitOptions:
    """What backend ``target`` prints by, from the settings (debug checks, NVTX ranges)."""
    _known(target)
    return EmitOptions(debug=configuration["debug"], nvtx=configuration["nvtx"],
                       flush_denormals=configuration["flush-denormals"],
                       time_tiles=configuration["time-tiling"],
                       zero_split=configuration["zero-split"])


def openmp_threads() -> int:
    """The threads an OpenMP parallel region of this process gets (the generated C's
    ``omp_get_max_threads``; the cores where GNU OpenMP is not loadable)."""
    try:
        return int(ctypes.CDLL("libgomp.so.1").omp_get_max_threads())
    except (OSError, AttributeError):
        return os.cpu_count() or 1


# -- can it run, and where did it run ---------------------------------------------------------

def _cuda_usable() -> tuple[bool, str]:
    try:
        tc = jitcache.nvcc()
    except jitcache.CompilerNotFoundError:
        return False, "nvcc (the CUDA compiler) is not on PATH or in $CUDA_HOME/bin"
    gpu, what, _ = probe_gpu()
    if not gpu:
        return False, f"nvcc is installed but no NVIDIA GPU is usable: {what}"
    return True, f"an NVIDIA GPU, {what}, and nvcc ({tc.version()}) are present"


def _openacc_usable() -> tuple[bool, str]:
    try:
        tc = toolchain("openacc")
    except jitcache.CompilerNotFoundError as exc:
        return False, str(exc)
    if tc.name.startswith("GCC") and "host" in tc.name:
        return True, f"{tc.name}: no nvptx offload compiler, so compute regions run on the host"
    return True, f"{tc.name} builds for the GPU"


def usable(target: str) -> tuple[bool, str]:
    """Whether backend ``target`` can build and run here, and a few words saying why."""
    if _known(target) == "cuda":
        return _cuda_usable()
    if target == "openacc":
        return _openacc_usable()
    return True, "a C compiler with OpenMP is all it needs"


def describe(target: str, library) -> str | None:
    """One line on what a loaded build does at run time (OpenACC: where its compute regions
    run, as the OpenACC runtime says from inside one), or None."""
    if target != "openacc":
        return None
    try:
        on_device = library.stencilgen_acc_device
        devices = library.stencilgen_acc_devices
    except AttributeError:
        return None     # a backdoor edit may drop the probe; nothing to report then
    on_device.restype = devices.restype = ctypes.c_int
    on_device.argtypes = devices.argtypes = []
    if on_device():
        return (f"runs its OpenACC compute regions on the GPU (the runtime reports "
                f"acc_on_device(acc_device_not_host) inside a region; {devices()} device(s))")
    return ("runs its OpenACC compute regions on the HOST (no offload device in this build "
            "or at run time: use nvc++, or a gcc with an nvptx offload compiler and a GPU)")

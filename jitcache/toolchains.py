"""Compilers as plain, hashable values: the command line they run and the version they report.

A :class:`Toolchain` wraps a codepy toolchain (``codepy.toolchain.GCCToolchain`` or
``NVCCToolchain``), which answers the version query and whose fields make the command line.
"""
from __future__ import annotations

import functools
import logging
import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from codepy.toolchain import GCCToolchain, GCCLikeToolchain, NVCCToolchain

from .errors import CompilerNotFoundError

logger = logging.getLogger("jitcache")

# Full `cc --version` text per executable; a compiler does not change under a running process.
_VERSIONS: dict[str, str] = {}


def _flags(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(shlex.split(value))
    return tuple(str(v) for v in value)


@dataclass(frozen=True)
class Toolchain:
    """One compiler with its flags; equal toolchains produce identical builds."""

    name: str
    cc: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    libraries: tuple[str, ...] = ()
    source_suffix: str = ".c"

    def __post_init__(self) -> None:
        # Accept lists (or a flag string) but store tuples so the value stays hashable.
        for field in ("cflags", "ldflags", "libraries"):
            object.__setattr__(self, field, _flags(getattr(self, field)))

    def _codepy(self) -> GCCLikeToolchain:
        """The codepy toolchain with the same compiler and flags."""
        cls = NVCCToolchain if self.source_suffix == ".cu" or self.name == "NVCC" else GCCToolchain
        return cls(
            cc=self.cc, ld=self.cc, cflags=list(self.cflags), ldflags=list(self.ldflags),
            libraries=list(self.libraries), library_dirs=[], include_dirs=[],
            defines=[], undefines=[], features=set(), so_ext=".so", o_ext=".o")

    def version_text(self) -> str:
        """The compiler's whole ``--version`` output (part of the cache key)."""
        text = _VERSIONS.get(self.cc)
        if text is None:
            try:
                text = self._codepy().get_version()
            except Exception as exc:  # codepy raises OSError or RuntimeError, depending
                raise CompilerNotFoundError(
                    f"the {self.name} compiler {self.cc!r} could not be run "
                    f"(`{self.cc} --version` failed: {exc}); install it or choose another "
                    "compiler (CC / STENCILGEN_CC for C)") from exc
            _VERSIONS[self.cc] = text
        return text

    def version(self) -> str:
        """One line naming the compiler version, e.g. ``gcc (Debian 12.2.0-14) 12.2.0``."""
        lines = [line.strip() for line in self.version_text().splitlines() if line.strip()]
        # nvcc's first line ("nvcc: NVIDIA (R) Cuda compiler driver") names no version.
        release = [line for line in lines if re.search(r"\brelease \d", line)]
        return (release or lines or [""])[0]

    def command(self, source: str, output: str) -> list[str]:
        """The full command line that compiles ``source`` into the shared library ``output``."""
        tc = self._codepy()
        return ([tc.cc, *tc.cflags, *tc.ldflags, *(f"-I{d}" for d in tc.include_dirs),
                 str(source), "-o", str(output),
                 *(f"-L{d}" for d in tc.library_dirs), *(f"-l{lib}" for lib in tc.libraries)])

    def with_flags(self, cflags: str | Iterable[str] | None = None,
                   extra: str | Iterable[str] = ()) -> "Toolchain":
        """A copy whose cflags are replaced by ``cflags`` (if given), then extended by ``extra``."""
        base = self.cflags if cflags is None else _flags(cflags)
        return replace(self, cflags=base + _flags(extra))


def _merge(defaults: Sequence[str], given: str | Iterable[str] | None,
           kept: Sequence[str]) -> tuple[str, ...]:
    """``given`` replaces ``defaults``; each of ``kept`` follows unless ``given`` sets its option."""
    flags = list(_flags(defaults) if given is None else _flags(given))
    for flag in kept:
        option = flag.split("=", 1)[0] + "=" if "=" in flag else flag
        if not any(f == flag or f.startswith(option) for f in flags):
            flags.append(flag)
    return tuple(flags)


def _find(names: Sequence[str]) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path:
            return os.path.abspath(path)
    return None


def native_cflags() -> tuple[str, ...]:
    """-O3 for this machine's CPU; on x86-64 with 512-bit vectors where the CPU has AVX-512
    (gcc otherwise keeps them at 256 bits; measured on a 16-core Xeon: the so 8 stencils
    8-17 % faster; no effect on a CPU without AVX-512)."""
    wide = ("-mprefer-vector-width=512",) if platform.machine() in ("x86_64", "AMD64") else ()
    return ("-O3", "-march=native") + wide


def gcc(cflags: str | Iterable[str] | None = None, cc: str | None = None,
        openmp: bool = True) -> Toolchain:
    """The C toolchain: ``cc``, else ``$CC``, else gcc, else cc; ``cflags`` replace
    ``native_cflags()`` (-O3 -march=native ...)."""
    if cc:
        tried = [cc]
    elif os.environ.get("CC"):
        tried = [os.environ["CC"]]
    else:
        tried = ["gcc", "cc"]
    path = _find(tried)
    if path is None:
        raise CompilerNotFoundError(
            f"no C compiler was found (tried {', '.join(repr(t) for t in tried)}); "
            "install gcc, or set CC or STENCILGEN_CC to the path of a C compiler")
    kept = ["-std=gnu11"] + (["-fopenmp"] if openmp else [])
    return Toolchain(name="GCC", cc=path, cflags=_merge(native_cflags(), cflags, kept),
                     ldflags=("-shared", "-fPIC"), libraries=("m",), source_suffix=".c")


def nvcc(cflags: str | Iterable[str] | None = None, arch: str | None = None,
         cc: str | None = None) -> Toolchain:
    """The CUDA toolchain for ``arch`` (``sm_90``, ``9.0``, ``90``...); without it, the oldest
    architecture >= sm_70 this nvcc lists (no GPU is probed: the caller passes the GPU's)."""
    tried = [cc] if cc else ["nvcc"]
    path = _find(tried)
    if path is None and not cc and os.environ.get("CUDA_HOME"):
        tried.append(os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc"))
        path = _find(tried[-1:])
    if path is None:
        raise CompilerNotFoundError(
            f"nvcc, the CUDA compiler, was not found (tried {', '.join(repr(t) for t in tried)}); "
            "install the CUDA toolkit and put nvcc on PATH (or set CUDA_HOME), "
            "or use the C backend")
    arch = arch or _default_arch(path)
    if not arch.startswith(("sm_", "compute_", "native", "all")):
        arch = f"sm_{arch.replace('.', '')}"
    kept = ["-std=c++17", f"-arch={arch}"]
    return Toolchain(name="NVCC", cc=path, cflags=_merge(("-O3",), cflags, kept),
                     ldflags=("-Xcompiler", "-fPIC", "--shared"), source_suffix=".cu")


def _run(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


@functools.lru_cache(maxsize=None)
def nvcc_archs(nvcc_path: str) -> tuple[int, ...]:
    """The GPU architectures the nvcc at ``nvcc_path`` can build for (75 for compute_75/sm_75),
    sorted; empty when it cannot say (``--list-gpu-arch`` is CUDA 11+)."""
    listed = _run([nvcc_path, "--list-gpu-arch"])
    return tuple(sorted({int(m) for m in re.findall(r"compute_(\d+)", listed)}))


@functools.lru_cache(maxsize=None)
def _default_arch(nvcc_path: str) -> str:
    """The oldest architecture >= sm_70 this nvcc supports (CUDA 13 dropped sm_70), else sm_70."""
    supported = nvcc_archs(nvcc_path)
    arch = next((a for a in supported if a >= 70), 70)
    logger.debug("nvcc %s: supported %s -> default sm_%d", nvcc_path, supported, arch)
    return f"sm_{arch}"


# -- OpenACC: nvc++ (NVIDIA HPC SDK) or GCC with -fopenacc ------------------------------------

NVPTX = "nvptx-none"
_NVHPC_NAMES = ("nvc++", "nvc", "pgc++", "pgcc")
_PROBE = "int main(void){int on=0;\n#pragma acc parallel copy(on)\non=1;\nreturn on!=1;}\n"


def openacc(cflags: str | Iterable[str] | None = None, cc: str | None = None,
            debug: bool = False, offload: bool | None = None,
            gpu: str | None = None) -> Toolchain:
    """The OpenACC toolchain: ``cc`` if given (nvc++/nvc or a GCC), else nvc++ when installed,
    else GCC (offloading to nvptx-none when an offload compiler is installed, else on the host).
    ``gpu`` (e.g. ``cc90``) is nvc++'s target, see :func:`nvhpc`."""
    if cc:
        path = _find([cc])
        if path is None:
            raise CompilerNotFoundError(
                f"the OpenACC compiler {cc!r} (setting openacc-cc / STENCILGEN_OPENACC_CC) was "
                "not found; give a path or a name on PATH (nvc++, nvc or a gcc with -fopenacc), "
                "or unset it to let stencilgen choose")
        if is_nvhpc(path):
            return nvhpc(cflags, cc=path, gpu=gpu, debug=debug)
        return gcc_openacc(cflags, cc=path, offload=offload)
    path = _find(["nvc++"])
    if path is not None:
        return nvhpc(cflags, cc=path, gpu=gpu, debug=debug)
    return gcc_openacc(cflags, offload=offload)


def is_nvhpc(cc: str) -> bool:
    """Whether ``cc`` names a compiler of the NVIDIA HPC SDK (nvc++, nvc; PGI's pgc++, pgcc)."""
    return os.path.basename(cc) in _NVHPC_NAMES


def nvhpc_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from ``nvc++ --version`` text, e.g. ``nvc++ 24.5-1 64-bit target ...``."""
    match = re.search(r"\b(?:nvc\+\+|nvc|pgc\+\+|pgcc)\s+(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


def nvhpc(cflags: str | Iterable[str] | None = None, cc: str | None = None,
          gpu: str | None = None, debug: bool = False) -> Toolchain:
    """nvc++ with ``-acc -gpu=GPU`` (``cc90``, ``sm_90`` or ``9.0``; default ``ccall``, every
    GPU it supports: no GPU is probed here); ``-Minfo=accel`` in debug builds so the compiler
    reports what it offloaded. ``cflags`` replace -O3."""
    tried = [cc] if cc else ["nvc++"]
    path = _find(tried)
    if path is None:
        raise CompilerNotFoundError(
            f"nvc++, the NVIDIA HPC SDK compiler, was not found (tried "
            f"{', '.join(repr(t) for t in tried)}); install the HPC SDK and put its bin on PATH, "
            "or set STENCILGEN_OPENACC_CC to a gcc with OpenACC support")
    if gpu is None:
        gpu = "ccall"
    elif not gpu.startswith("cc"):
        gpu = f"cc{gpu.replace('.', '').removeprefix('sm_')}"
    base = os.path.basename(path)
    toolchain = Toolchain(
        name=f"{base.upper()} (OpenACC, {gpu})", cc=path,
        cflags=_merge(("-O3",), cflags, ["-acc", f"-gpu={gpu}"] + (["-Minfo=accel"] if debug else [])),
        ldflags=("-shared", "-fPIC"), libraries=("m",),
        # nvc++ compiles C++; the generated source is valid C and C++ (extern "C" entry points)
        source_suffix=".cpp" if base.endswith("++") else ".c")
    version = nvhpc_version(toolchain.version_text())
    if version is not None and version < (20, 7):
        raise CompilerNotFoundError(
            f"{path} is version {version[0]}.{version[1]}; the OpenACC backend needs the NVIDIA "
            "HPC SDK 20.7 or newer (-gpu=ccXX); upgrade it or set STENCILGEN_OPENACC_CC to gcc")
    return toolchain


@functools.lru_cache(maxsize=None)
def _gcc_offloads(path: str, stamp: float, isa: str) -> bool:
    """Whether the GCC at ``path`` builds and links OpenACC code for nvptx-none: its offload
    compiler is installed (``accel/nvptx-none/mkoffload``) and a tiny probe compiles for ``isa``
    (nvptx-tools check the PTX with the installed ptxas, which may reject gcc's default sm_30).

    Cached per executable, modification time (``stamp``) and isa, so a process probes once.
    """
    mkoffload = _run([path, f"-print-prog-name=accel/{NVPTX}/mkoffload"]).strip()
    if not (os.path.isabs(mkoffload) and os.access(mkoffload, os.X_OK)):
        return False
    import tempfile
    with tempfile.TemporaryDirectory(prefix="stencilgen-acc-probe-") as tmp:
        src, out = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w") as f:
            f.write(_PROBE)
        try:
            done = subprocess.run([path, "-fopenacc", f"-foffload={NVPTX}",
                                   f"-foffload-options=-misa={isa}", src, "-o", out],
                                  capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return False
        ok = done.returncode == 0 and os.path.exists(out)
    logger.debug("gcc %s: nvptx offload compiler %s, probe %s", path, mkoffload,
                 "compiled" if ok else f"failed: {done.stderr.strip()[:500]}")
    return ok


def gcc_offloads(path: str, isa: str = "sm_80") -> bool:
    """Whether the GCC at ``path`` can offload OpenACC regions to NVIDIA GPUs (nvptx-none)."""
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        return False
    return _gcc_offloads(os.path.realpath(path), stamp, isa)


def gcc_openacc(cflags: str | Iterable[str] | None = None, cc: str | None = None,
                offload: bool | None = None, isa: str = "sm_80") -> Toolchain:
    """GCC with ``-fopenacc``: ``-foffload=nvptx-none -foffload-options=-misa=ISA`` when it has
    an nvptx offload compiler (``offload=None`` detects it), else ``-foffload=disable`` (host).

    Without ``cc`` the first of gcc, gcc-14 ... gcc-10 that offloads is taken, else gcc; a
    ``-foffload...`` flag in ``cflags`` replaces the offload flags chosen here.
    """
    tried = [cc] if cc else ["gcc"] + [f"gcc-{v}" for v in range(14, 9, -1)] + ["cc"]
    found: list[str] = []
    for name in tried:
        path = _find([name])
        if path and os.path.realpath(path) not in map(os.path.realpath, found):
            found.append(path)
    if not found:
        raise CompilerNotFoundError(
            f"no C compiler for OpenACC was found (tried {', '.join(repr(t) for t in tried)}); "
            "install gcc (and gcc-offload-nvptx to run on NVIDIA GPUs) or the NVIDIA HPC SDK, "
            "or set STENCILGEN_OPENACC_CC")
    if offload is None:
        path = next((p for p in found if gcc_offloads(p, isa)), found[0])
        offload = gcc_offloads(path, isa)
    else:
        path = found[0]
        if offload and not gcc_offloads(path, isa):
            raise CompilerNotFoundError(
                f"{path} cannot offload OpenACC to {NVPTX}: its offload compiler "
                f"(accel/{NVPTX}/mkoffload, e.g. Debian's gcc-N-offload-nvptx) is missing or "
                "broken; install it, or build for the host")
    flags = list(_merge(("-O3", "-march=native"), cflags, ["-std=gnu11", "-fopenacc"]))
    if not any(f.startswith("-foffload") for f in flags):
        flags += ([f"-foffload={NVPTX}", f"-foffload-options=-misa={isa}",
                   "-foffload-options=-lm"] if offload else ["-foffload=disable"])
    offloads = any(f.startswith("-foffload=") and f != "-foffload=disable" for f in flags)
    if not offloads:
        # the code then holds no device image: it must not run on a GPU libgomp may find
        flags.append("-DSTENCILGEN_ACC_HOST")
    where = f"offload to {NVPTX}" if offloads else "host"
    return Toolchain(name=f"GCC (OpenACC, {where})", cc=path, cflags=tuple(flags),
                     ldflags=("-shared", "-fPIC"), libraries=("m",), source_suffix=".c")


@functools.lru_cache(maxsize=None)
def _probe(toolchain: "Toolchain", source: str) -> str:
    import tempfile
    with tempfile.TemporaryDirectory(prefix="stencilgen-probe-") as tmp:
        src = os.path.join(tmp, "probe" + toolchain.source_suffix)
        with open(src, "w") as fh:
            fh.write(source)
        cmd = toolchain.command(src, os.path.join(tmp, "probe.so"))
        done = subprocess.run(cmd, capture_output=True, text=True)
    return "" if done.returncode == 0 else (done.stderr or done.stdout).strip()


def compile_failure(toolchain: "Toolchain", source: str) -> str:
    """The compiler's log where ``toolchain`` cannot build the translation unit ``source``
    into a library ("" where it can); each pair is tried once per process."""
    return _probe(toolchain, source)

"""Every setting stencilgen reads, in one place: environment variables first, then Python.

Each entry is read from its ``STENCILGEN_*`` variable when this module is imported and can be
changed later with ``configuration["backend"] = "c"``; unknown keys and bad values raise.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any, Callable

from jitcache import default_cache_dir

from .errors import ConfigurationError
from .user_warnings import warn_user


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected 0/1, true/false or yes/no, got {value!r}")


def _time_tiles(value: Any):
    """None (off), "auto" (on, the default: the autotuner picks among the untiled loop and
    the backend's sizes), or (widths..., depth) of the C backend's time tiles: "W,T",
    "W0,W1,T", or "W,0,T" for tiles of x alone on a 3D grid (commas or spaces)."""
    if value is None or value is False or str(value).lower() in ("0", "off", "false", "no", ""):
        return None
    if value is True or str(value).lower() in ("1", "on", "true", "yes", "auto"):
        return "auto"
    try:
        sizes = tuple(int(v) for v in (value if isinstance(value, (tuple, list))
                                       else str(value).replace(",", " ").split()))
    except ValueError:
        sizes = ()
    if len(sizes) not in (2, 3) or min(sizes[:1] + sizes[-1:]) < 1 or min(sizes) < 0:
        raise ValueError(f"time-tiling: {value!r}; give 'W,T' (W points a tile along each "
                         f"tiled dimension, T steps), 'W0,W1,T' ('W,0,T': x alone), auto, on "
                         f"or off")
    return sizes


def _auto_bool(value: Any) -> str:
    """``auto`` (the autotuner's choice), ``on`` or ``off``; a boolean is on or off."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return "on" if _bool(value) else "off"


def _flags(value: Any) -> list[str]:
    """Compiler flags from a shell-quoted string or a list of strings."""
    import shlex
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return shlex.split(str(value))


def _choice(*options: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        text = str(value).strip().lower()
        if text not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {value!r}")
        return text
    return parse


def _autotuning(value: Any) -> str:
    """auto, on or off; Devito's levels too (off, basic, aggressive, max; alone or with a
    mode: ('aggressive', 'runtime')): any level but off is on."""
    level = value[0] if isinstance(value, (tuple, list)) and value else value
    if level is False or level == 0:
        return "off"
    if level is True or level == 1:
        return "on"
    text = str(level).strip().lower()
    if text in ("basic", "aggressive", "max"):
        return "on"
    return _choice("auto", "on", "off")(text)


def _upper_choice(*options: str) -> Callable[[Any], str]:
    lower = _choice(*(o.lower() for o in options))
    return lambda value: lower(value).upper()


def _count(lo: int, hi: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        n = int(str(value).strip())
        if not lo <= n <= hi:
            raise ValueError(f"expected a whole number from {lo} to {hi}, got {value!r}")
        return n
    return parse


def _seconds(value: Any) -> float:
    seconds = float(str(value).strip())
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"expected a number of seconds >= 0, got {value!r}")
    return seconds


def _mpi_mode(value: Any) -> str:
    """off, basic (exchange, then compute) or overlap (interior computed while halos fly);
    1/true/on mean basic, 0/false/off off, "full" (Devito's word) overlap."""
    text = str(value).strip().lower()
    if text in ("overlap", "overlap2", "full"):
        return "overlap"
    if text in ("basic", "diag", "diag2"):   # Devito's other modes: exchange, then compute
        return "basic"
    try:
        return "basic" if _bool(value) else "off"
    except ValueError:
        raise ValueError(f"expected 0, 1, basic or overlap, got {value!r}") from None


@dataclass(frozen=True)
class _Setting:
    env: str
    parse: Callable[[Any], Any]
    default: Callable[[], Any]
    help: str


_SETTINGS: dict[str, _Setting] = {
    "backend": _Setting("STENCILGEN_BACKEND", _choice("auto", "c", "openacc", "cuda"),
                        lambda: "auto", "code generator used when Operator gets no backend="),
    "jit-backdoor": _Setting("STENCILGEN_JIT_BACKDOOR", _bool, lambda: False,
                             "compile the source file in the cache as the user edited it"),
    "cache-dir": _Setting("STENCILGEN_CACHE_DIR", lambda v: os.path.expanduser(str(v)),
                          default_cache_dir, "where built operators are kept"),
    "log-level": _Setting("STENCILGEN_LOGGING",
                          _upper_choice("CRITICAL", "ERROR", "WARNING", "INFO", "PERF", "DEBUG"),
                          lambda: "INFO", "INFO: builds; PERF: also the performance report; "
                          "WARNING, ERROR, CRITICAL: less"),
    "debug": _Setting("STENCILGEN_DEBUG", _bool, lambda: False,
                      "debug builds with bounds checks"),
    "nvtx": _Setting("STENCILGEN_NVTX", _bool, lambda: False, "NVTX ranges around sections"),
    "fast-math": _Setting("STENCILGEN_FAST_MATH", _bool, lambda: False,
                          "GPU builds with fast, less accurate math (nvcc --use_fast_math)"),
    # an empty value (STENCILGEN_CFLAGS=) is no setting, not "no flags": -O0 ran 10x slower
    "cflags": _Setting("STENCILGEN_CFLAGS", lambda v: _flags(v) or None,
                       lambda: None, "replace the C compiler's default optimisation flags"),
    "cc": _Setting("STENCILGEN_CC", lambda v: str(v) if v else None, lambda: None,
                   "C compiler executable (default: $CC, then gcc, then cc)"),
    "autotuning": _Setting("STENCILGEN_AUTOTUNING", _autotuning,
                           lambda: "auto", "tune the launch shapes of a new size: auto, in a "
                           "large run; on, in any run; off, only when apply(autotune=True)"),
    "flush-denormals": _Setting("STENCILGEN_FLUSH_DENORMALS", _bool, lambda: True,
                                "C: compute with denormal floats flushed to zero (x86 cores "
                                "are many times slower on them); 0 keeps IEEE denormals"),
    "check-finite": _Setting("STENCILGEN_CHECK_FINITE", _bool, lambda: True,
                             "after apply, warn if a field the run wrote holds NaN or Inf"),
    "progress": _Setting("STENCILGEN_PROGRESS", _choice("log", "tqdm", "off"), lambda: "log",
                         "runs longer than progress-after seconds report steps done, GPts/s "
                         "and the time left: log (INFO lines), tqdm (a bar, if installed), off"),
    "progress-after": _Setting("STENCILGEN_PROGRESS_AFTER", _seconds, lambda: 5.0,
                               "seconds a run goes before its first progress report"),
    "mpi": _Setting("STENCILGEN_MPI", _mpi_mode,
                    lambda: _mpi_mode(os.environ.get("DEVITO_MPI", "0")),
                    "split every Grid over MPI.COMM_WORLD (mpirun -n N; DEVITO_MPI where this is "
                    "unset): 0 (off), 1/basic "
                    "(exchange halos, then compute), overlap (compute the interior while "
                    "the halos travel)"),
    # on by default: the autotuner times the fused nests against the nests apart and keeps
    # the faster per size (fused where nothing is remembered: docs/performance.md, issue 47)
    "fusion": _Setting("STENCILGEN_FUSION", _auto_bool, lambda: "auto",
                       "CUDA: fuse a nest that only computes temporaries into the nest that "
                       "reads them, the temporaries kept on chip; auto (default): the "
                       "autotuner keeps the nests apart for a size where they ran faster; "
                       "1/on: always fused; 0/off: two nests, the temporaries in global "
                       "memory"),
    # auto by default: the autotuner times the untiled loop against the tiles and keeps a
    # tile only where it ran faster; untuned runs take time_tiling.default_rule (issue 62)
    "time-tiling": _Setting("STENCILGEN_TIME_TILING", _time_tiles, lambda: "auto",
                            "C: time-skewed tiles; auto/on (default): the autotuner picks "
                            "among the untiled loop and the tile sizes (untuned: wave-front "
                            "tiles where they keep the threads busy, else untiled); 'W,T': W "
                            "points along each tiled dimension, T steps; 0/off: one step at "
                            "a time"),
    # auto by default: on CUDA the autotuner times each split nest with and without its
    # split and keeps the faster per size (the unstaged acoustic lost 14 % in float16 to a
    # split always on: docs/performance.md, issue 62); C splits its rows
    "zero-split": _Setting("STENCILGEN_ZERO_SPLIT", _auto_bool, lambda: "auto",
                           "split the nests that read a Function with a zero box "
                           "(Function.zero_box: the sponge's layer) at run time, the box "
                           "run without the terms it zeroes; auto (default): C splits, CUDA "
                           "splits where the autotuner measured it faster; 1/on: always; "
                           "0/off: never"),
    # on by default: with fusion auto the autotuner times the staged nest against the nest
    # itself and keeps the faster per size (acoustic so 8 at 512^3 on an H200: 1.24x staged in
    # float32, 0.96x in float16: docs/performance.md, issue 51)
    "staging": _Setting("STENCILGEN_STAGING", _bool, lambda: True,
                        "CUDA: a 3D nest reading arrays at neighbours streams along its "
                        "outermost dimension, those arrays' planes staged in shared memory "
                        "(each value loaded and widened once a block); on by default (with "
                        "fusion auto, the autotuner keeps the nest unstaged for a size where "
                        "that ran faster); 0 turns it off"),
    # offered to the autotuner, not the default: a pass computes the first step on the halo
    # the second reads as well (docs/performance.md, issue 51)
    "time-steps": _Setting("STENCILGEN_TIME_STEPS", _bool, lambda: True,
                           "CUDA: a staged nest stepping one buffered field may also run two "
                           "time steps a pass (the first step's plane kept in shared memory for "
                           "the second), a choice the autotuner times beside one step; 0 "
                           "offers one step only"),
    "register-queue": _Setting("STENCILGEN_REGISTER_QUEUE", _auto_bool, lambda: "auto",
                               "CUDA: a staged nest reads its inputs along the streamed "
                               "dimension from a register queue of each thread's column (the "
                               "shared rings two planes deep); auto (default): where the "
                               "backend takes it; 1/on: always; 0/off: from the rings"),
    "openacc-cc": _Setting("STENCILGEN_OPENACC_CC", lambda v: str(v) if v else None,
                           lambda: None, "OpenACC compiler: nvc++/nvc or a gcc (default: nvc++ "
                           "if installed, else a gcc that offloads to nvptx-none, else gcc)"),
}


class Configuration:
    """A dict-like view of the settings; assignment validates the value."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._devito: dict[str, Any] = dict(_DEVITO_ONLY)   # Devito's keys with no effect here
        self._listeners: list[Callable[[str, Any], None]] = []
        for key, setting in _SETTINGS.items():
            raw = os.environ.get(setting.env)
            self._values[key] = setting.default() if raw is None else self._parse(key, raw)

    @staticmethod
    def _parse(key: str, value: Any) -> Any:
        setting = _SETTINGS[key]
        try:
            return setting.parse(value)
        except ValueError as exc:
            raise ConfigurationError(
                f"bad value for {key!r} (environment {setting.env}): {exc}") from None

    def __getitem__(self, key: str) -> Any:
        if key not in _SETTINGS:
            if key in _DEVITO_READS:
                return _DEVITO_READS[key](self)
            if key in self._devito:
                return self._devito[key]
            raise ConfigurationError(
                f"unknown setting {key!r}; known settings: {', '.join(_SETTINGS)} (and "
                f"Devito's {', '.join(_devito_keys())})")
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _SETTINGS and key in _devito_keys():
            for k, v in devito_setting(key, value):
                if k in _SETTINGS:
                    self[k] = v
                else:
                    self._devito[k] = v
            return
        self[key]  # noqa: B018 - validates the key
        self._values[key] = _SETTINGS[key].default() if value is None else self._parse(key, value)
        for listener in self._listeners:
            listener(key, self._values[key])

    def _restore(self, key: str, value: Any) -> None:
        """Put back a value read from this configuration (already parsed)."""
        if key not in _SETTINGS:
            self._devito[key] = value
            return
        self._values[key] = value
        for listener in self._listeners:
            listener(key, value)

    def on_change(self, listener: Callable[[str, Any], None]) -> None:
        self._listeners.append(listener)

    def keys(self):
        return _SETTINGS.keys()

    def __contains__(self, key) -> bool:
        return key in _SETTINGS or key in _devito_keys()

    def describe(self) -> str:
        return "\n".join(f"{k:14s} {self._values[k]!r:40s} {_SETTINGS[k].env}: {_SETTINGS[k].help}"
                         for k in _SETTINGS)

    def __repr__(self) -> str:
        return f"Configuration({self._values!r})"


# -- Devito's keys ----------------------------------------------------------------------------
#: Devito's configuration keys with no setting here, and what reading one gives until it is
#: set (Devito 4.8's defaults): accepted, with a warning that they change nothing here
_DEVITO_ONLY = {"opt": "advanced", "opt-options": {}, "platform": "cpu64", "topology": None,
                "first-touch": False, "ignore-unknowns": False, "autopadding": False,
                "autopadding-mode": None, "deviceid": -1, "develop-mode": False,
                "profiling": "basic", "compiler": "custom", "safe-math": False}
_NO_EFFECT = {
    "opt": "stencilgen's optimisations always run and keep the results Devito's 'advanced' "
           "gives",
    "opt-options": "blocking, parallelism and tiling are the autotuner's (see the "
                   "time-tiling, fusion and staging settings)",
    "platform": "the backend setting (Devito's language) picks the target",
    "topology": "give Grid(topology=...) for a split over MPI ranks",
    "first-touch": "fields are allocated where they are first used",
    "autopadding": "device rows are padded as the CUDA backend needs",
    "autopadding-mode": "device rows are padded as the CUDA backend needs",
    "deviceid": "each MPI rank takes the GPU of its local rank",
    "develop-mode": "the checks it would add always run",
    "profiling": "every section is always timed",
    "compiler": "no compiler of that name is known here: set cc (C), openacc-cc (OpenACC)",
}
#: Devito's compilers -> (our setting, its value); "custom" is Devito's default: ours
_COMPILERS = {"gcc": ("cc", "gcc"), "gnu": ("cc", "gcc"), "clang": ("cc", "clang"),
              "icx": ("cc", "icx"), "icc": ("cc", "icc"), "intel": ("cc", "icx"),
              "nvc": ("openacc-cc", "nvc++"), "nvc++": ("openacc-cc", "nvc++"),
              "nvidia": ("openacc-cc", "nvc++"), "pgcc": ("openacc-cc", "nvc++"),
              "pgi": ("openacc-cc", "nvc++")}
#: our backend -> Devito's language, for reads
_BACKEND_LANGUAGES = {"c": "openmp", "openacc": "openacc", "cuda": "cuda", "auto": "C"}


def _devito_warning(key: str, value: Any) -> None:
    warn_user(f"configuration[{key!r}] = {value!r} has no effect in stencilgen: "
              f"{_NO_EFFECT[key]}")


def devito_setting(key: str, value: Any) -> list[tuple[str, Any]]:
    """Devito's ``key = value`` as settings here: ours where one means the same, else the
    key itself (kept for reads, with a warning that it has no effect)."""
    if key == "language":
        name = {0: "C", 1: "openmp"}.get(value, value)   # Devito's old DEVITO_OPENMP values
        backend = LANGUAGES.get(str(name).lower())
        if backend is None:
            raise ConfigurationError(f"language={value!r} is not one of {', '.join(LANGUAGES)}")
        return [("backend", backend)]
    if key == "safe-math":   # no unsafe arithmetic; Devito's default (unsafe allowed) is ours
        safe = _bool(value)
        return [("fast-math", False), (key, safe)] if safe else [(key, safe)]
    if key == "compiler" and str(value).lower() in _COMPILERS:
        return [_COMPILERS[str(value).lower()], (key, value)]
    if key == "compiler" and str(value).lower() == "custom":
        return [(key, value)]
    if key == "ignore-unknowns":   # apply() reads it
        return [(key, _bool(value))]
    _devito_warning(key, value)
    return [(key, value)]


#: reads of Devito's keys that name one of ours
_DEVITO_READS = {
    "language": lambda c: _BACKEND_LANGUAGES[c["backend"]],
}


def _devito_keys() -> list[str]:
    """Devito's keys taken here besides ours, sorted."""
    return sorted(set(_DEVITO_READS) | set(_DEVITO_ONLY))


configuration = Configuration()

#: Devito's languages -> stencilgen's backends
LANGUAGES = {"c": "c", "openmp": "c", "openacc": "openacc", "cuda": "cuda"}


def _settings(name: str, value: Any) -> list[tuple[str, Any]]:
    """A setting given by Devito's name (``log_level``, ``language='openmp'``,
    ``safe_math=True``) as ours (``devito_setting``)."""
    key = name.replace("_", "-")
    if key in _SETTINGS:
        return [(key, value)]
    if key in _devito_keys():
        try:
            return devito_setting(key, value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"switchconfig: {exc}") from None
    raise ConfigurationError(f"switchconfig: {name!r} is not a setting stencilgen has; "
                             f"it has {', '.join(k.replace('-', '_') for k in _SETTINGS)}, "
                             f"and Devito's {', '.join(_devito_keys())}")


class switchconfig:
    """Devito's ``switchconfig(log_level="DEBUG", ...)``: the settings changed inside a
    ``with`` block, or for each call of the function it decorates, then put back."""

    def __init__(self, **settings):
        self._changes = dict(kv for k, v in settings.items() for kv in _settings(k, v))
        self._saved: list[dict] = []

    def __enter__(self):
        self._saved.append({k: configuration[k] for k in self._changes})
        try:
            for k, v in self._changes.items():
                configuration[k] = v
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for k, v in self._saved.pop().items():
            configuration._restore(k, v)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def switched(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return switched

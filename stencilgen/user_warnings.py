"""Warnings at the user's line: the log's warning and a UserWarning whose stacklevel is that
of the first caller outside stencilgen. A leaf: the settings and every layer warn through it."""
from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _user_level() -> int:
    """The ``stacklevel`` of the first caller outside stencilgen (the user's line)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and Path(frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn_user(text: str) -> None:
    """``text`` in stencilgen's log and as a UserWarning pointing at the user's line."""
    logging.getLogger("stencilgen").warning(text)
    warnings.warn(text, UserWarning, stacklevel=_user_level())

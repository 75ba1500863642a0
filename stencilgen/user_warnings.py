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


#: the attribute of a log record that is also a Python warning: stencilgen's console handler
#: leaves it out (the warning shows it), other handlers (files, the user's) keep it
WARNED = "sg_warned"


def warn_user(text: str, category: type = UserWarning) -> None:
    """``text`` in stencilgen's log and as a warning of ``category`` pointing at the user's
    line; the console shows it once, as the warning."""
    logging.getLogger("stencilgen").warning(text, extra={WARNED: True})
    warnings.warn(text, category, stacklevel=_user_level())

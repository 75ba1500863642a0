"""Warnings at the user's line: the log's warning and a UserWarning whose stacklevel is that
of the first caller outside the project's packages (``jitcache.errors.user_stacklevel``). A
leaf of stencilgen: the settings and every layer warn through it."""
from __future__ import annotations

import logging
import warnings

from jitcache.errors import user_stacklevel

#: the attribute of a log record that is also a Python warning: stencilgen's console handler
#: leaves it out (the warning shows it), other handlers (files, the user's) keep it
WARNED = "sg_warned"


def warn_user(text: str, category: type = UserWarning) -> None:
    """``text`` in stencilgen's log and as a warning of ``category`` pointing at the user's
    line; the console shows it once, as the warning."""
    logging.getLogger("stencilgen").warning(text, extra={WARNED: True})
    warnings.warn(text, category, stacklevel=user_stacklevel())

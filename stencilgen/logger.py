"""stencilgen's log: INFO for builds, PERF for the performance report, DEBUG for passes."""
from __future__ import annotations

import logging
import sys

from .configuration import configuration
from .user_warnings import WARNED

PERF = 15
DEBUG = logging.DEBUG
logging.addLevelName(PERF, "PERF")

class _StdoutHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stdout`` is at the time (redirections and pytest capture)."""

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value):
        pass


logger = logging.getLogger("stencilgen")
_handler = _StdoutHandler()
_handler.setFormatter(logging.Formatter("%(message)s"))
# a warning the user also gets as a Python warning is printed once, by the warning
_handler.addFilter(lambda record: not getattr(record, WARNED, False))
logger.addHandler(_handler)
logger.propagate = False


def _apply_level(key, value):
    if key == "log-level":
        logger.setLevel(PERF if value == "PERF" else getattr(logging, value))


_apply_level("log-level", configuration["log-level"])
configuration.on_change(_apply_level)


def perf(msg, *args):
    logger.log(PERF, msg, *args)


def info(msg, *args):
    logger.info(msg, *args)


def debug(msg, *args):
    logger.debug(msg, *args)


def warning(msg, *args):
    logger.warning(msg, *args)


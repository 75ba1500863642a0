"""The backend-neutral loop program: plain data, built by passes, printed by backends."""
from .nodes import ArrayParam, Assign, Kernel, Program, ScalarParam, TimeIndex  # noqa: F401

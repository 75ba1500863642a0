"""One name registry per Operator: every identifier of the generated source comes from here.

User names (the Operator, dimensions, Functions, Constants) are registered first and stay
as written where they are safe C identifiers; a name that is reserved (a C/C++/CUDA keyword,
a library or runtime name) or already taken becomes ``usr_<name>`` (then ``_2``, ``_3``...).
Generated names come after, from a base (``t`` -> ``t0``, ``x_m``...), and never meet either.
"""
from __future__ import annotations

import re
from typing import Callable

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class NameRegistry:
    """Hands out unique C identifiers; ``reserved(name)`` says which a program may not declare."""

    def __init__(self, reserved: Callable[[str], bool]):
        self._reserved = reserved
        self._taken: set[str] = set()
        self._user: dict = {}

    def taken(self, name: str) -> bool:
        return name in self._taken or self._reserved(name)

    def _claim(self, name: str) -> str:
        self._taken.add(name)
        return name

    def _numbered(self, base: str, first: int) -> str:
        k = first
        while self.taken(f"{base}_{k}"):
            k += 1
        return self._claim(f"{base}_{k}")

    def user(self, key, name: str) -> str:
        """The C name of the user's object ``key`` called ``name`` (the same for the same key)."""
        if key in self._user:
            return self._user[key]
        if _IDENTIFIER.match(name) and not self.taken(name):
            cname = self._claim(name)
        else:
            base = "usr_" + (re.sub(r"_+", "_", re.sub(r"\W", "_", name)).strip("_") or "name")
            cname = self._claim(base) if not self.taken(base) else self._numbered(base, 2)
        self._user[key] = cname
        return cname

    def fresh(self, base: str) -> str:
        """A generated name: ``base`` if free, else ``base_2``, ``base_3``..."""
        return self._claim(base) if not self.taken(base) else self._numbered(base, 2)

    def counted(self, prefix: str) -> str:
        """A generated name from a numbered family: ``prefix0``, ``prefix1``..."""
        k = 0
        while self.taken(f"{prefix}{k}"):
            k += 1
        return self._claim(f"{prefix}{k}")

    def bind(self, key, cname: str) -> str:
        """Let ``key`` (a compiler-made object) answer to the generated ``cname``."""
        self._user[key] = cname
        return cname

    def cname(self, key) -> str:
        """The C name given to ``key``."""
        return self._user[key]

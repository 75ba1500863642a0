"""The package's layout (docs/architecture.md, "The package"): the subpackages import one
another in one direction only, the public names and the modules' old names still import."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import stencilgen

PACKAGE = Path(stencilgen.__file__).resolve().parent
#: the subpackages, lowest first: each may import those before it, none after; Devito's
#: module paths last (re-exports of symbolic's names that nothing inside imports)
ORDER = ("ir", "distributed", "data", "symbolic", "compiler", "runtime", "seismic",
         "finite_differences", "symbolics", "builtins")


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path):
    """The stencilgen modules and packages ``path`` imports (deferred imports included)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield f"{target}.{alias.name}" if target == "stencilgen" else target
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def _subpackage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "stencilgen" and parts[1] in ORDER \
        else None


def test_subpackages_import_downward_only():
    """No subpackage imports one above it in ORDER (so none import each other), and every
    subpackage is in ORDER."""
    found = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert found == set(ORDER)
    upward = []
    for path in PACKAGE.rglob("*.py"):
        mine = _subpackage(_module(path) + ".x")
        if mine is None:
            continue
        for target in _imports(path):
            theirs = _subpackage(target + ".x") if target.count(".") == 1 else \
                _subpackage(target)
            if theirs and ORDER.index(theirs) > ORDER.index(mine):
                upward.append(f"{_module(path)} imports {target}")
    assert not upward, "\n".join(upward)


def test_the_public_names_import():
    for name in stencilgen.__all__:
        assert getattr(stencilgen, name) is not None


@pytest.mark.parametrize("old", sorted(stencilgen._MOVED))
def test_a_moved_module_answers_to_its_old_name(old):
    """``from stencilgen import grid`` (and ``stencilgen.grid``) give the module that moved."""
    moved = importlib.import_module(f"stencilgen.{stencilgen._MOVED[old]}")
    assert getattr(stencilgen, old) is moved
    namespace: dict = {}
    exec(f"from stencilgen import {old} as m", namespace)
    assert namespace["m"] is moved and moved.__name__.endswith("." + old)

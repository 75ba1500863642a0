"""The compiler's shape: one driver of logged, pure passes, one name registry, and packages
that depend one way (backends and jitcache never import stencilgen)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backends.common.reserved import is_reserved
from stencilgen import Eq, Function, Grid, Operator, TimeFunction, solve
from stencilgen.compiler.pipeline import compile_program
from stencilgen.ir.names import NameRegistry

ROOT = Path(__file__).resolve().parents[1]
PASSES = ["derivative expansion", "indexing", "temporary widening", "complex calls",
          "scale folding", "classification", "accumulation folding", "invariant hoisting",
          "temporary sizing",
          "scheduling", "kernel optimisation", "counting", "run-time split", "fusion",
          "halo exchanges", "layout",
          "index types", "sections"]


def _acoustic():
    grid = Grid(shape=(12, 10), extent=(11.0, 9.0), dtype=np.float32)
    u = TimeFunction(name="u", grid=grid, time_order=2, space_order=4)
    m = Function(name="m", grid=grid, space_order=4)
    return [Eq(u.forward, solve(m * u.dt2 - u.laplace, u.forward))]


def test_every_pass_is_logged_in_order_at_debug(restore_settings, stencilgen_log):
    restore_settings["log-level"] = "DEBUG"
    Operator(_acoustic(), name="Logged", backend="c")
    after = [line.split(" after ", 1)[1].split(":", 1)[0] for line in stencilgen_log.take()
             if line.startswith("Operator `Logged` after ")]
    assert after == PASSES
    restore_settings["log-level"] = "INFO"
    Operator(_acoustic(), name="Quiet", backend="c")
    assert not [line for line in stencilgen_log.take() if " after " in line]


def test_the_driver_is_a_pure_function_of_the_equations():
    eqs = _acoustic()
    first, _ = compile_program(eqs, "Twice", narrow_index=False)
    second, _ = compile_program(eqs, "Twice", narrow_index=False)
    assert first == second
    narrow, _ = compile_program(eqs, "Twice", narrow_index=True)
    assert narrow.index_types.narrow == "int32" and first.index_types.narrow is None


def test_registry_keeps_safe_names_and_mangles_the_others():
    names = NameRegistry(is_reserved)
    assert names.user("u", "u") == "u"
    assert names.user("int", "int") == "usr_int"
    assert names.user("sg", "sg_status") == "usr_sg_status"
    assert names.user("dunder", "a__b") == "usr_a_b"
    assert names.user("u2", "u") == "usr_u"           # taken by the first u
    assert names.user("u3", "usr_u") == "usr_usr_u"   # usr_u is taken: mangled in turn
    assert names.user("u4", "u") == "usr_u_2"
    assert names.user("u", "ignored") == "u"          # the same key, the same name
    assert names.fresh("u") == "u_2"                  # generated names go around user names
    assert names.counted("r") == "r0" and names.counted("r") == "r1"


@pytest.mark.parametrize("package", ["backends", "jitcache"])
def test_lower_packages_never_import_stencilgen(package):
    modules = {"backends": "backends, backends.c.backend, backends.cuda.backend, "
                           "backends.cuda.runtime, backends.openacc, backends.common.cprinter, "
                           "backends.common.reserved",
               "jitcache": "jitcache, jitcache.cache, jitcache.toolchains, jitcache.__main__"}
    code = (f"import sys; import {modules[package]}; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'stencilgen'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"

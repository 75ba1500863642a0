"""jitcache: keys, fetching, atomic parallel builds, compile errors, the JIT backdoor, the CLI."""
from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import jitcache
from jitcache import (BackdoorError, CompilationError, CompilerNotFoundError,
                      EditedSourceWarning, build, clear, entries, gcc, nvcc)

ROOT = Path(__file__).resolve().parents[1]
PLUS1 = "int f(int a){return a+1;}\n"
PLUS2 = "int f(int a){return a+2;}\n"


@pytest.fixture(scope="module")
def tc():
    return gcc(cflags=["-O1"], openmp=False)


def test_build_then_fetch(tmp_path, tc):
    first = build(PLUS1, tc, "inc", cache_dir=tmp_path)
    assert first.compiled and first.seconds > 0 and first.library.f(41) == 42
    assert first.source_path.read_text() == PLUS1
    assert first.library_path.parent == first.source_path.parent == \
        tmp_path / f"inc-{first.key[:16]}"
    again = build(PLUS1, tc, "inc", cache_dir=tmp_path)
    assert not again.compiled and again.seconds == 0.0
    assert again.library_path == first.library_path and again.key == first.key
    assert again.library.f(1) == 2 and again.compiler == "GCC" and not again.backdoor


def test_key_covers_flags_and_source(tmp_path, tc):
    base = build(PLUS1, tc, "k", cache_dir=tmp_path)
    flags = build(PLUS1, tc.with_flags(extra=["-DX=1"]), "k", cache_dir=tmp_path)
    assert flags.compiled and flags.key != base.key
    assert flags.library_path.parent != base.library_path.parent
    other = build(PLUS2, tc, "k", cache_dir=tmp_path)
    assert other.compiled and other.key not in (base.key, flags.key)
    assert other.library.f(1) == 3
    assert len(entries(tmp_path)) == 3


def test_gcc_flags():
    default = gcc()
    assert default.cflags[:2] == ("-O3", "-march=native")
    assert "-fopenmp" in default.cflags and "-std=gnu11" in default.cflags
    assert default.ldflags == ("-shared", "-fPIC") and os.path.isabs(default.cc)
    custom = gcc(cflags="-O0 -g", openmp=True)
    assert custom.cflags == ("-O0", "-g", "-std=gnu11", "-fopenmp")
    assert "-fopenmp" not in gcc(openmp=False).cflags
    assert gcc().with_flags(["-O2"]).cflags == ("-O2",)
    cmd = default.command("a.c", "liba.so")
    assert cmd[0] == default.cc and cmd[cmd.index("-o") + 1] == "liba.so" and "a.c" in cmd
    assert "gcc" in default.version().lower() or "clang" in default.version().lower()


def _build_in_child(cache_dir, barrier, queue):
    barrier.wait()
    result = build(PLUS1, gcc(cflags=["-O1"], openmp=False), "race", cache_dir=cache_dir)
    queue.put((result.compiled, result.library.f(1), str(result.library_path)))


def test_parallel_processes_share_one_build(tmp_path):
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else "spawn")
    n = 4
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_build_in_child, args=(str(tmp_path), barrier, queue))
             for _ in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(compiled for compiled, _, _ in results) == 1
    assert {value for _, value, _ in results} == {2}
    assert len({path for _, _, path in results}) == 1
    entry = Path(results[0][2]).parent
    assert not [p for p in entry.iterdir() if p.name.startswith(".tmp-")]


def test_compile_error(tmp_path, tc):
    with pytest.raises(CompilationError) as info:
        build("int f(int a){return a +;}\n", tc, "bad", cache_dir=tmp_path)
    err = info.value
    assert err.source_path and err.source_path in str(err) and err.source_path.endswith("bad.c")
    assert "error" in err.log and err.log in str(err)
    assert tc.cc in str(err) and err.command[0] == tc.cc
    assert not list(Path(err.source_path).parent.glob("*.so"))


def test_edited_source_is_kept_in_normal_mode(tmp_path, tc):
    first = build(PLUS1, tc, "ed", cache_dir=tmp_path)
    edited = b"/* mine */\nint f(int a){return a+2;}\n"
    first.source_path.write_bytes(edited)
    with pytest.warns(EditedSourceWarning, match="backdoor"):
        fetched = build(PLUS1, tc, "ed", cache_dir=tmp_path)
    assert fetched.library.f(1) == 2 and first.source_path.read_bytes() == edited
    # With the library gone, the generated code is rebuilt from a private file.
    first.library_path.unlink()
    with pytest.warns(EditedSourceWarning):
        rebuilt = build(PLUS1, tc, "ed", cache_dir=tmp_path)
    assert rebuilt.compiled and rebuilt.library.f(1) == 2
    assert first.source_path.read_bytes() == edited
    assert [e["edited"] for e in entries(tmp_path)] == [True]


def test_backdoor(tmp_path, tc):
    first = build(PLUS1, tc, "bd", cache_dir=tmp_path)
    first.source_path.write_text(PLUS2)
    edited = build(PLUS1, tc, "bd", cache_dir=tmp_path, backdoor=True)
    assert edited.backdoor and edited.compiled and edited.library.f(1) == 3
    assert edited.library_path != first.library_path
    assert edited.source_path == first.source_path
    again = build(PLUS1, tc, "bd", cache_dir=tmp_path, backdoor=True)
    assert not again.compiled and again.library_path == edited.library_path
    assert first.source_path.read_text() == PLUS2


def test_backdoor_broken_edit_is_left_alone(tmp_path, tc):
    src = build(PLUS1, tc, "bb", cache_dir=tmp_path).source_path
    broken = "int f(int a){return a + undefined_thing;}\n"
    src.write_text(broken)
    with pytest.raises(BackdoorError) as info:
        build(PLUS1, tc, "bb", cache_dir=tmp_path, backdoor=True)
    msg = str(info.value)
    assert str(src) in msg and "undefined_thing" in msg and "error" in msg
    assert "left on disk" in msg and info.value.log in msg and tc.cc in msg
    assert src.read_text() == broken


def test_backdoor_missing_source(tmp_path, tc):
    with pytest.raises(BackdoorError, match="STENCILGEN_JIT_BACKDOOR") as info:
        build(PLUS1, tc, "miss", cache_dir=tmp_path, backdoor=True)
    assert info.value.source_path in str(info.value)
    assert info.value.source_path.endswith("miss.c")


def test_compiler_not_found(monkeypatch):
    with pytest.raises(CompilerNotFoundError) as info:
        gcc(cc="/nonexistent/cc")
    msg = str(info.value)
    assert "no C compiler" in msg and "/nonexistent/cc" in msg and "STENCILGEN_CC" in msg
    monkeypatch.setenv("CC", "no-such-compiler-xyz")
    with pytest.raises(CompilerNotFoundError, match="no-such-compiler-xyz"):
        gcc()
    with pytest.raises(CompilerNotFoundError, match="nvcc"):
        nvcc(cc="/nonexistent/nvcc")


def test_bad_name(tmp_path, tc):
    with pytest.raises(jitcache.JitCacheError, match="name"):
        build(PLUS1, tc, "../escape", cache_dir=tmp_path)


def _cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "jitcache", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_cli_list_show_clear(tmp_path, tc):
    a = build(PLUS1, tc, "alpha", cache_dir=tmp_path)
    build(PLUS2, tc, "beta", cache_dir=tmp_path)
    listing = _cli("--cache-dir", str(tmp_path), "list")
    assert listing.returncode == 0
    assert "alpha" in listing.stdout and "beta" in listing.stdout and a.key[:16] in listing.stdout

    shown = _cli("show", a.key[:8], "--cache-dir", str(tmp_path))
    assert shown.returncode == 0
    assert str(a.source_path) in shown.stdout and PLUS1.strip() in shown.stdout
    assert "beta" not in shown.stdout

    missing = _cli("--cache-dir", str(tmp_path), "show", "nothing-here")
    assert missing.returncode == 1 and "nothing-here" in missing.stderr

    assert _cli("--cache-dir", str(tmp_path), "bogus").returncode == 2

    cleared = _cli("--cache-dir", str(tmp_path), "clear", "alpha")
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    assert [e["name"] for e in entries(tmp_path)] == ["beta"]
    assert "removed 1" in _cli("--cache-dir", str(tmp_path), "clear").stdout
    assert entries(tmp_path) == []


def test_clear_then_rebuild(tmp_path, tc):
    build(PLUS1, tc, "c1", cache_dir=tmp_path)
    build(PLUS1, tc, "c2", cache_dir=tmp_path)
    assert clear(tmp_path, "c1") == 1 and clear(tmp_path, "c1") == 0
    assert build(PLUS1, tc, "c1", cache_dir=tmp_path).compiled
    assert clear(tmp_path) == 2 and clear(tmp_path / "absent") == 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_nvcc_builds_host_code(tmp_path):
    tc = nvcc()
    assert tc.name == "NVCC" and tc.source_suffix == ".cu"
    assert any(f.startswith("-arch=sm_") for f in tc.cflags) and "-std=c++17" in tc.cflags
    assert "release" in tc.version()
    result = build('extern "C" int f(int a){return a+1;}\n', tc, "cu", cache_dir=tmp_path)
    assert result.compiled and result.source_path.suffix == ".cu" and result.library.f(1) == 2


def _script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_nvcc_default_arch_is_a_compiler_fact(tmp_path, monkeypatch):
    """Without ``arch=``, nvcc builds for the oldest architecture >= sm_70 it lists, whatever
    GPU is visible (jitcache probes none; the caller passes the GPU's)."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    _script(tmp_path / "nvidia-smi", 'echo "9.0"\n')
    fake = _script(tmp_path / "nvcc-fake", 'case "$1" in --list-gpu-arch) '
                   "printf 'compute_60\\ncompute_75\\ncompute_80\\ncompute_90\\n';; esac\n")
    assert jitcache.nvcc_archs(fake) == (60, 75, 80, 90)
    assert "-arch=sm_75" in nvcc(cc=fake).cflags
    assert "-arch=sm_90" in nvcc(cc=fake, arch="9.0").cflags
    mute = _script(tmp_path / "nvcc-mute", "exit 1\n")        # cannot list: sm_70
    assert jitcache.nvcc_archs(mute) == () and "-arch=sm_70" in nvcc(cc=mute).cflags


def test_cli_default_cache_dir(tmp_path, tc, monkeypatch):
    """``python -m jitcache`` reads --cache-dir, else $STENCILGEN_CACHE_DIR, else
    $XDG_CACHE_HOME/stencilgen (``~/.cache/stencilgen``), jitcache's one default."""
    build(PLUS1, tc, "where", cache_dir=tmp_path / "xdg" / "stencilgen")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("STENCILGEN_CACHE_DIR", None)

    def listing(**extra):
        done = subprocess.run([sys.executable, "-m", "jitcache", "list"], cwd=ROOT,
                              env={**env, **extra}, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "where" in listing() and str(tmp_path / "xdg" / "stencilgen") in listing()
    other = listing(STENCILGEN_CACHE_DIR=str(tmp_path / "other"))
    assert "where" not in other and str(tmp_path / "other") in other
    # the rule lives once: stencilgen's cache-dir setting defaults to jitcache's
    from stencilgen.configuration import Configuration
    monkeypatch.delenv("STENCILGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert jitcache.default_cache_dir() == str(tmp_path / "xdg" / "stencilgen")
    assert Configuration()["cache-dir"] == jitcache.default_cache_dir()
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert jitcache.default_cache_dir() == str(Path.home() / ".cache" / "stencilgen")


def test_jitcache_imports_nothing_of_stencilgen():
    """jitcache is a library of its own: importing it (and its CLI) loads no stencilgen module."""
    code = ("import sys, jitcache, jitcache.__main__; print(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('stencilgen', 'backends')))")
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr

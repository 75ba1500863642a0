"""The build cache cannot be poisoned or crash us: permissions whatever the umask, ownership and
hash checks before loading, damaged libraries rebuilt, locks that time out or are taken over,
unusable cache directories, killed compilers (issue 15, first part)."""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import jitcache
from jitcache import (BackdoorError, CacheDirError, CacheWarning, CompilationError,
                      CompilerKilledError, LockTimeoutError, Toolchain, build, gcc)
from jitcache import cache as cache_module
from jitcache import locking, trust

ROOT = Path(__file__).resolve().parents[1]
OTHER_UID = 12345
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to chown to another uid")


@pytest.fixture(scope="module")
def tc():
    return gcc(cflags=["-O1"], openmp=False)


@pytest.fixture
def private(tmp_path, monkeypatch):
    """The private temporary cache lands in this test's directory."""
    base = tmp_path / "tmpdir"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    monkeypatch.setattr(trust, "_PRIVATE", [])
    return base / f"stencilgen-{os.geteuid()}"


def source(n: int) -> str:
    return f"int f(int a){{return a+{n};}}\n"


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _run(code: str, args=(), env: dict | None = None, prefix=()) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT),
                                                        os.environ.get("PYTHONPATH", "")]))
    full.update(env or {})
    return subprocess.run([*prefix, sys.executable, "-c", code, *args], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=120)


VICTIM = """
import json, sys, warnings, jitcache
warnings.simplefilter("always")
tc = jitcache.gcc(cflags=["-O1"], openmp=False)
out = []
for name, n in json.loads(sys.argv[1]):
    r = jitcache.build("int f(int a){return a+%d;}\\n" % n, tc, name, cache_dir=sys.argv[2])
    out.append([name, r.library.f(1), r.compiled, str(r.library_path)])
print(json.dumps(out))
"""


def victim(cache, jobs, env=None, prefix=()) -> tuple[list, str]:
    """Build ``jobs`` ([name, n] each) in a fresh process, which has loaded nothing yet: returns
    what each gave (name, f(1), compiled, library path) and its stderr (the warnings)."""
    done = _run(VICTIM, (json.dumps(jobs), str(cache)), env, prefix)
    assert done.returncode == 0, f"victim exited with {done.returncode}:\n{done.stderr}"
    return json.loads(done.stdout), done.stderr


# -- permissions --------------------------------------------------------------------------------

def test_directories_0700_and_files_0600_under_umask_000(tmp_path, tc):
    cache = tmp_path / "a" / "b" / "cache"
    old = os.umask(0)
    try:
        first = build(source(1), tc, "um", cache_dir=cache)
        first.source_path.write_text(source(2))          # an edit: the backdoor builds it
        edited = build(source(1), tc, "um", cache_dir=cache, backdoor=True)
        first.library_path.unlink()                     # rebuilt from the generated copy
        with pytest.warns(jitcache.EditedSourceWarning):
            again = build(source(1), tc, "um", cache_dir=cache)
        from stencilgen.runtime import (autotune)      # the Operator's launch shapes, beside the build
        autotune.Remembered(first.source_path.parent).put("size", [0])
    finally:
        os.umask(old)
    assert edited.library.f(1) == 3 and again.compiled and again.compiled_from.name.startswith(".")
    entry = first.source_path.parent
    for d in (tmp_path / "a", tmp_path / "a" / "b", cache, entry):
        assert mode(d) == 0o700, d
    files = sorted(p.name for p in entry.iterdir())
    assert {".lock", "manifest.json", "meta.json", "um.c", ".um.generated.c",
            "tuning.json"} <= set(files)
    assert len([f for f in files if f.endswith(".so")]) == 2
    for name in files:
        if name != "um.c":                              # the user's edit keeps its own mode
            assert mode(entry / name) == 0o600, name


# -- what is loaded -----------------------------------------------------------------------------

def _evil(tmp_path, tc, n=666) -> bytes:
    """A library whose f(a) returns a + n: what an attacker would put in the cache."""
    lib = tmp_path / f"evil{n}.so"
    subprocess.run(tc.command(str(_write(tmp_path / f"evil{n}.c", source(n))), str(lib)),
                   check=True)
    return lib.read_bytes()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@as_root
def test_library_replaced_by_another_user_is_never_loaded(tmp_path, tc, private):
    """The issue's attack: another user swaps lib*.so of an entry in a shared cache."""
    cache = tmp_path / "shared"
    lib = build(source(1), tc, "attack", cache_dir=cache).library_path
    lib.unlink()
    lib.write_bytes(_evil(tmp_path, tc))
    os.chown(lib, OTHER_UID, OTHER_UID)
    (result,), said = victim(cache, [["attack", 1]], env={"TMPDIR": str(private.parent)})
    assert result[1] == 2 and result[2] is True
    assert Path(result[3]).parent.parent == private
    assert "CacheWarning" in said and str(lib) in said and f"uid {OTHER_UID}" in said
    assert "STENCILGEN_CACHE_DIR" in said and "private temporary cache" in said


@as_root
def test_entries_and_caches_of_another_user_are_not_used(tmp_path, tc, private):
    cache = tmp_path / "c"
    first = build(source(3), tc, "owned", cache_dir=cache)
    entry = first.source_path.parent
    os.chown(entry, OTHER_UID, OTHER_UID)
    with pytest.warns(CacheWarning, match=rf"{entry}.*belongs to uid {OTHER_UID}"):
        r = build(source(3), tc, "owned", cache_dir=cache)
    assert r.compiled and r.library_path.parent.parent == private and r.library.f(1) == 4
    os.chown(entry, 0, 0)
    os.chown(cache, OTHER_UID, OTHER_UID)     # the cache directory itself is someone else's
    with pytest.warns(CacheWarning, match=rf"{cache}.*belongs to uid {OTHER_UID}"):
        r = build(source(3), tc, "owned", cache_dir=cache)
    assert not r.compiled and r.library_path.parent.parent == private


@as_root
def test_private_cache_taken_by_another_user(tmp_path, tc, private):
    """If another user made $TMPDIR/stencilgen-<uid> first, a fresh private one is used."""
    private.mkdir(mode=0o777)
    os.chown(private, OTHER_UID, OTHER_UID)
    cache = tmp_path / "file"
    cache.write_text("")
    with pytest.warns(CacheWarning):
        r = build(source(4), tc, "squat", cache_dir=cache)
    got = r.library_path.parent.parent
    assert got != private and got.parent == private.parent and got.name.startswith(private.name)
    assert mode(got) == 0o700 and os.stat(got).st_uid == os.geteuid()
    assert not list(private.iterdir())


def test_writable_by_others_is_not_loaded(tmp_path, tc, private):
    cache = tmp_path / "loose"
    first = build(source(5), tc, "loose", cache_dir=cache)
    first.library_path.chmod(0o666)
    with pytest.warns(CacheWarning, match=r"writable by group and others \(mode 0666\)") as said:
        r = build(source(5), tc, "loose", cache_dir=cache)
    assert "python -m jitcache clear loose" in str(said[0].message)
    assert r.library_path.parent.parent == private and r.library.f(1) == 6
    first.library_path.chmod(0o600)
    cache.chmod(0o777)                           # anyone could swap entries: not trusted
    with pytest.warns(CacheWarning, match="without the sticky bit"):
        r = build(source(5), tc, "loose", cache_dir=cache)
    assert r.library_path.parent.parent == private
    cache.chmod(0o1777)                          # as /tmp: others cannot rename our entries
    r = build(source(5), tc, "loose", cache_dir=cache)
    assert r.library_path == first.library_path and not r.compiled
    link = tmp_path / "linked"
    first.library_path.rename(link)
    first.library_path.symlink_to(link)          # a link out of the entry is not followed
    cache.chmod(0o700)
    with pytest.warns(CacheWarning, match="symbolic link"):
        r = build(source(5), tc, "loose", cache_dir=cache)
    assert r.library_path.parent.parent == private


def test_damaged_libraries_are_rebuilt_before_dlopen(tmp_path, tc):
    """Truncated, empty, garbage or tampered libraries of a trusted entry are never dlopened
    (a truncated one crashed every later run with SIGBUS): they are rebuilt in place."""
    cache = tmp_path / "c"
    jobs = [["trunc", 11], ["empty", 12], ["garbage", 13], ["tamper", 14], ["nohash", 15]]
    # built by another process: damaging in place a library mapped here would crash pytest
    built, _ = victim(cache, jobs)
    libs = {name: Path(path) for name, _, _, path in built}
    data = libs["trunc"].read_bytes()
    libs["trunc"].write_bytes(data[:len(data) // 2])
    libs["empty"].write_bytes(b"")
    libs["garbage"].write_bytes(os.urandom(len(libs["garbage"].read_bytes())))
    evil = _evil(tmp_path, tc, 999)
    libs["tamper"].write_bytes(evil)
    manifest = libs["nohash"].parent / "manifest.json"
    manifest.write_text("{not json")
    results, said = victim(cache, jobs)
    for (name, n), (_, value, compiled, path) in zip(jobs, results):
        assert value == n + 1 and compiled is True and path == str(libs[name]), name
        assert f"{libs[name]}" in said, name
    assert "bytes where" in said and "does not match the sha256" in said
    assert "has no hash in manifest.json" in said
    # the rebuilt libraries check out again: no warning, nothing compiled
    results, said = victim(cache, jobs)
    assert [r[2] for r in results] == [False] * len(jobs) and "Warning" not in said


def test_check_costs_little(tmp_path, tc):
    """The check hashes a library once per process (then by inode, size and times)."""
    r = build(source(16), tc, "cost", cache_dir=tmp_path)
    entry, lib = r.library_path.parent, r.library_path
    trust._VERIFIED.clear()
    assert trust.check(entry, lib) == (trust.OK, "")
    assert len(trust._VERIFIED) == 1
    calls = []
    real = trust.sha256_file
    trust.sha256_file = lambda fd: calls.append(fd) or real(fd)
    try:
        assert trust.check(entry, lib) == (trust.OK, "")
        assert calls == []
        st = os.stat(lib)
        time.sleep(0.02)                   # the kernel's file times are coarse (a few ms)
        os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns))   # the same times but a new ctime
        assert os.stat(lib).st_ctime_ns != st.st_ctime_ns
        assert trust.check(entry, lib) == (trust.OK, "") and len(calls) == 1
    finally:
        trust.sha256_file = real


# -- locks --------------------------------------------------------------------------------------

def _hold(entry: Path, pid: int, since: float | None = None) -> int:
    """Lock ``entry/.lock`` here (another open file description conflicts even in one process)
    with a record naming ``pid`` on this host: a lock held by someone else."""
    entry.mkdir(parents=True, exist_ok=True)
    fd = os.open(entry / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    record = {"pid": pid, "host": socket.gethostname(), "since": since or time.time()}
    os.pwrite(fd, json.dumps(record).encode(), 0)
    return fd


def _entry(cache: Path, src: str, tc, name: str) -> Path:
    return cache / f"{name}-{jitcache.cache_key(src, tc)[:16]}"


def test_lock_wait_names_the_holder_and_times_out(tmp_path, tc, monkeypatch, caplog):
    monkeypatch.setattr(locking, "NOTICE_AFTER", 0.2)
    monkeypatch.setattr(locking, "NOTICE_EVERY", 0.2)
    sleeper = subprocess.Popen(["sleep", "30"])          # a live holder, hung
    fd = _hold(_entry(tmp_path, source(20), tc, "hung"), sleeper.pid, time.time() - 3600)
    try:
        start = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="jitcache"):
            with pytest.raises(LockTimeoutError) as info:
                build(source(20), tc, "hung", cache_dir=tmp_path, lock_timeout=1.0)
        waited = time.monotonic() - start
    finally:
        os.close(fd)
        sleeper.kill()
        sleeper.wait()
    assert 1.0 <= waited < 10
    msg = str(info.value)
    who = f"pid {sleeper.pid} on {socket.gethostname()} since "
    assert who in msg and re.search(r"\(36\d\d s ago\)", msg) and "gave up after 1 s" in msg
    assert ".lock" in msg and info.value.holder.startswith(who)
    notices = [r.getMessage() for r in caplog.records if "waited" in r.getMessage()]
    assert notices and all(who in n for n in notices)
    # what to do about it: the entry's lock, the holder to stop, the file to delete
    assert all(f"kill {sleeper.pid}" in n and "if it is gone, delete" in n and ".lock" in n
               and "still waiting" in n for n in notices)


_WAITER = """
import sys, time
import jitcache
from jitcache import locking
locking.NOTICE_AFTER = 0.2
src, name, cache = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    jitcache.build(src, jitcache.gcc(cflags=["-O1"], openmp=False), name, cache_dir=cache,
                   lock_timeout=600)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
"""


def test_a_lock_wait_speaks_and_stops_at_once_on_ctrl_c(tmp_path, tc):
    """Another process's build holds the entry: the waiter says so on stderr within a
    second, keeps waiting, and a SIGINT ends it at once (not after the timeout)."""
    sleeper = subprocess.Popen(["sleep", "60"])
    fd = _hold(_entry(tmp_path, source(22), tc, "waiter"), sleeper.pid)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    waiter = subprocess.Popen([sys.executable, "-c", _WAITER, source(22), "waiter",
                               str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    try:
        time.sleep(2.0)
        assert waiter.poll() is None                      # still waiting
        start = time.monotonic()
        waiter.send_signal(signal.SIGINT)
        out, err = waiter.communicate(timeout=10)
        stopped = time.monotonic() - start
    finally:
        os.close(fd)
        sleeper.kill()
        sleeper.wait()
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 3 and "interrupted" in out and stopped < 2.0
    assert f"held by pid {sleeper.pid}" in err and f"kill {sleeper.pid}" in err


def test_lock_of_a_dead_holder_is_taken_over(tmp_path, tc, monkeypatch, caplog):
    """The holder's process is gone but the lock is still held (a child inherited the file)."""
    monkeypatch.setattr(locking, "TAKEOVER_AFTER", 0.3)
    gone = subprocess.Popen(["true"])
    gone.wait()
    fd = _hold(_entry(tmp_path, source(21), tc, "dead"), gone.pid)
    try:
        with caplog.at_level(logging.WARNING, logger="jitcache"):
            r = build(source(21), tc, "dead", cache_dir=tmp_path, lock_timeout=30)
    finally:
        os.close(fd)
    assert r.compiled and r.library.f(1) == 22
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "taking over the lock" in said and f"pid {gone.pid}" in said and "is gone" in said
    assert (r.library_path.parent / ".lock").read_bytes() == b""     # released: no holder


# -- cache directories that cannot be used -------------------------------------------------------

def test_cache_path_that_is_a_file(tmp_path, tc, private):
    cache = tmp_path / "afile"
    cache.write_text("not a directory")
    with pytest.warns(CacheWarning) as said:
        r = build(source(30), tc, "file", cache_dir=cache)
    msg = str(said[0].message)
    assert str(cache) in msg and "STENCILGEN_CACHE_DIR" in msg and "not a directory" in msg
    assert "to a directory" in msg and str(private) in msg
    assert r.library.f(1) == 31 and r.library_path.parent.parent == private
    with pytest.warns(CacheWarning, match="Not a directory"):      # a path through a file
        build(source(30), tc, "file", cache_dir=cache / "sub")
    assert cache.read_text() == "not a directory"


def test_full_disk_falls_back_and_leaves_no_temporary(tmp_path, tc, private, monkeypatch):
    cache = tmp_path / "full"
    real = cache_module._put

    def put(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(cache)):
            os.close(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(cache_module, "_put", put)
    with pytest.warns(CacheWarning) as said:
        r = build(source(31), tc, "full", cache_dir=cache)
    msg = str(said[0].message)
    assert "No space left on device" in msg and "STENCILGEN_CACHE_DIR" in msg
    assert "python -m jitcache clear" in msg
    assert r.library.f(1) == 32 and r.library_path.parent.parent == private
    left = [p for p in cache.rglob("*") if p.name.startswith(".tmp")]
    assert left == [] and not list(cache.rglob("*.so"))


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'fake 1.0'; exit 0; fi\n"
                    + body)
    path.chmod(0o755)
    return str(path)


def _fake(tmp_path, body: str) -> Toolchain:
    return Toolchain(name="Fake", cc=_script(tmp_path / "fakecc", body), cflags=(), ldflags=())


def test_full_disk_while_compiling_and_no_private_cache(tmp_path, private, monkeypatch):
    """The compiler cannot write its output anywhere: our error names the setting, both
    directories and the remedy; no temporary is left."""
    tc = _fake(tmp_path, "echo 'ld: final link failed: No space left on device' >&2\nexit 1\n")
    cache = tmp_path / "c"
    with pytest.warns(CacheWarning), pytest.raises(CacheDirError) as info:
        build(source(32), tc, "nospace", cache_dir=cache)
    msg = str(info.value)
    assert str(cache) in msg and str(private) in msg and "STENCILGEN_CACHE_DIR" in msg
    assert "No space left on device" in msg and "free space" in msg
    assert not [p for p in tmp_path.rglob(".tmp*")]


def _unprivileged() -> tuple:
    """A command prefix that runs a child without root's power over file permissions."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot make a directory read-only")
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search")


def test_read_only_cache_dir(tmp_path, tc, private):
    prefix = _unprivileged()
    cache = tmp_path / "ro"
    build(source(33), tc, "kept", cache_dir=cache)        # an entry that is there already
    cache.chmod(0o500)
    try:
        (kept, new), said = victim(cache, [["kept", 33], ["new", 34]],
                                   {"TMPDIR": str(private.parent)}, prefix)
    finally:
        cache.chmod(0o700)
    assert kept[1:3] == [34, False] and kept[3].startswith(f"{cache}/")  # a fetch writes nothing
    assert new[1:3] == [35, True] and new[3].startswith(f"{private}/")
    assert "Permission denied" in said and "STENCILGEN_CACHE_DIR" in said
    assert f"make {cache} writable" in said


# -- compilers and the backdoor -----------------------------------------------------------------

def test_compiler_killed_by_a_signal(tmp_path):
    with pytest.raises(CompilerKilledError) as info:
        build(source(40), _fake(tmp_path, "kill -KILL $$\n"), "killed", cache_dir=tmp_path)
    msg = str(info.value)
    assert "killed by SIGKILL" in msg and "out-of-memory" in msg and info.value.signal == "SIGKILL"
    assert "code-generator bug" not in msg and isinstance(info.value, CompilationError)
    # gcc's driver survives and reports its compiler proper killed
    said = "gcc: fatal error: Killed signal terminated program cc1\ncompilation terminated."
    (tmp_path / "d").mkdir()
    tc = _fake(tmp_path / "d", f"echo '{said}' >&2\nexit 1\n")
    with pytest.raises(CompilerKilledError, match="killed by SIGKILL") as info:
        build(source(41), tc, "killed2", cache_dir=tmp_path)
    assert said in str(info.value) and "code-generator bug" not in str(info.value)


def test_backdoor_edit_hiding_the_entry_point(tmp_path, tc):
    src = build(source(42), tc, "hide", cache_dir=tmp_path, entry_point="f").source_path
    src.write_text("static int f(int a){return a+1;}\nint g(int a){return f(a);}\n")
    with pytest.raises(BackdoorError) as info:
        build(source(42), tc, "hide", cache_dir=tmp_path, backdoor=True, entry_point="f")
    msg = str(info.value)
    assert str(src) in msg and "entry point `f`" in msg and "static" in msg
    assert info.value.source_path == str(src)


def test_clear_skips_what_it_cannot_remove(tmp_path, tc, monkeypatch, caplog):
    """An entry that cannot be removed (another user's) is reported and the others removed."""
    build(source(50), tc, "keep", cache_dir=tmp_path)
    build(source(51), tc, "gone", cache_dir=tmp_path)
    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if Path(path).name.startswith("keep-"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        real(path, *args, **kwargs)

    monkeypatch.setattr(cache_module.shutil, "rmtree", rmtree)
    with caplog.at_level(logging.WARNING, logger="jitcache"):
        assert jitcache.clear(tmp_path) == 1
    assert [e["name"] for e in jitcache.entries(tmp_path)] == ["keep"]
    assert "could not remove" in caplog.text and "keep-" in caplog.text

"""The seismic toolkit ships in the package: a wheel built from the project's files, unpacked
into a fresh environment that sees this one's dependencies but not the checkout, runs a
survey on two Dask worker processes, whose workers import the shot functions by name from the
wheel; its records equal those of the checkout's serial loop."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

pytest.importorskip("distributed", reason="surveys need Dask: pip install 'stencilgen[survey]'")

SHAPE, SPACING, NT = (41, 31), 10.0, 80
XS = (80.0, 300.0)

WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import distributed
    import stencilgen
    from stencilgen import seismic
    from stencilgen.seismic import shots, survey

    site, out = sys.argv[1], sys.argv[2]
    model = seismic.layered_model({shape}, {spacing}, velocities=(1.5, 2.5), nbl=10,
                                  space_order=4)
    rec = seismic.receiver_line(model, 9, depth=2 * {spacing})
    geometry = [survey.Shot(i, np.array([[x, 2 * {spacing}]]), rec)
                for i, x in enumerate({xs})]
    inputs = {{"vp": model.physical(model.vp), "spacing": model.spacing, "nbl": 10,
               "space_order": 4, "nt": {nt}, "f0": 0.02, "nrec": len(rec), "backend": "c"}}
    cluster = survey.local_cluster(workers=2)
    client = distributed.Client(cluster)
    where = client.run(lambda: __import__("stencilgen").__file__)
    result = survey.run_survey(shots.acoustic_setup, shots.acoustic_shoot, geometry,
                               inputs=inputs, out=out, client=client)
    client.close()
    cluster.close()
    print(json.dumps({{"here": stencilgen.__file__, "workers": sorted(where.values()),
                       "done": result.done, "site": site}}))
""").format(shape=SHAPE, spacing=SPACING, xs=XS, nt=NT)


def _wheel(tmp: Path) -> Path:
    """A wheel of the project's own files, built outside the checkout."""
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("stencilgen", "backends", "jitcache"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    # pip fetches the build backend (setuptools) into an isolated environment, as the
    # project's own install does
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                           "-w", str(tmp / "dist"), str(src)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no wheel could be built here (pip wheel, which needs the package "
                    f"index for setuptools: {done.stderr[-300:]})")
    return next((tmp / "dist").glob("stencilgen-*.whl"))


def _environment(tmp: Path, wheel: Path) -> tuple[Path, Path]:
    """A fresh environment: the wheel unpacked in its site-packages, this environment's
    site-packages after it through a .pth (whose own .pth files, an editable install of the
    checkout among them, are not read). Its python and site-packages."""
    env = tmp / "env"
    venv.create(env, with_pip=False)
    python = env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return python, site


@pytest.mark.slow
def test_a_survey_runs_from_the_wheel_with_the_checkouts_records(tmp_path):
    wheel = _wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert "stencilgen/seismic/shots.py" in names and "stencilgen/seismic/survey.py" in names
    python, site = _environment(tmp_path, wheel)
    out = tmp_path / "records"
    done = subprocess.run([str(python), "-c", WORKER, str(site), str(out)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "STENCILGEN_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["done"] == [0, 1]
    for path in [report["here"]] + report["workers"]:
        assert path.startswith(str(site)), f"stencilgen imported from {path}, not the wheel"
    assert len(report["workers"]) == 2

    from stencilgen import seismic
    from stencilgen.seismic import shots, survey
    model = seismic.layered_model(SHAPE, SPACING, velocities=(1.5, 2.5), nbl=10, space_order=4)
    rec = seismic.receiver_line(model, 9, depth=2 * SPACING)
    inputs = {"vp": model.physical(model.vp), "spacing": model.spacing, "nbl": 10,
              "space_order": 4, "nt": NT, "f0": 0.02, "nrec": len(rec), "backend": "c"}
    state = shots.acoustic_setup(inputs)
    for i, x in enumerate(XS):
        want = np.array(shots.acoustic_shoot(
            state, survey.Shot(i, np.array([[x, 2 * SPACING]]), rec)).record)
        with np.load(survey.record_path(out, i)) as f:
            got = f["record"]
        assert np.abs(want).max() > 0
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())

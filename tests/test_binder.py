"""binder/'s repo2docker recipe for the course, run as far as it can be without Docker.

repo2docker installs binder/environment.yml, then runs binder/postBuild in the repository's
folder with the image's Python first on PATH. Here:

* the environment *resolves*: pip resolves every package environment.yml names (conda names
  are pip names for all of them) without installing anything;
* postBuild runs against an "image": a fresh virtual environment whose dependencies come from
  this checkout's venv (a path entry, so nothing is downloaded), in a copy of the repository.
  labkit must land in the image's site-packages (not editable, not the checkout), and the warm
  step must write numba's cache next to the image's labkit — where a hub that mounts a home
  folder over the repository still finds it — and `labkit warm --check` must then pass.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.full


def _environment_packages() -> list[str]:
    out, section, in_pip = [], "", False
    for ln in (ROOT / "binder" / "environment.yml").read_text().splitlines():
        body = ln.split("#")[0].rstrip()
        if body and not body.startswith(" "):
            section, in_pip = body.split(":")[0], False
            continue
        item = body.strip()[2:].strip() if body.strip().startswith("- ") else ""
        if section != "dependencies" or not item:
            continue
        if item.rstrip(":") == "pip":
            in_pip = item.endswith(":")
            continue
        if item.startswith("python"):
            continue
        out.append(item.replace(" ", ""))
    return out


def test_binder_environment_resolves(tmp_path):
    pkgs = _environment_packages()
    assert {"numba>=0.62", "jupyterlab>=4.0", "osaca>=0.7"} <= set(pkgs), pkgs
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                           "--ignore-installed", "--report", str(report), *pkgs],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    names = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert {"numba", "jupyterlab", "osaca", "ipywidgets"} <= names, sorted(names)


def _repo_copy(dst: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    for f in files:
        src = ROOT / f
        if src.is_file() and not f.startswith(("notebooks/", "tests/", "docs/")):
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)
    return dst


def test_postbuild_installs_labkit_into_the_image_and_warms_its_cache(tmp_path):
    repo = _repo_copy(tmp_path / "repo")
    image = tmp_path / "image"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(image)], check=True)
    py = image / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    # the image's packages: this checkout's venv (a plain path: its editable labkit finder is
    # a .pth file of that folder, which a path entry does not run)
    (site / "zz_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_CACHE_DIR",
                                                                    "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(PATH=f"{image / 'bin'}{os.pathsep}{env.get('PATH', '')}", LABKIT_WARM_LABS="lesson00",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    where = subprocess.run([str(py), "-c", "import labkit; print(labkit.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    pkg = Path(where).parent
    assert pkg == site / "labkit", f"labkit imports from {pkg}, not the image's {site}"
    cached = list((pkg / "lesson00").rglob("*.nbi"))
    assert cached, f"no numba cache next to the image's labkit ({pkg / 'lesson00'})"
    assert not list((repo / "labkit").rglob("*.nbi")), "the warm step wrote into the checkout"
    check = subprocess.run([str(image / "bin" / "labkit"), "warm", "--check", "lesson00"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr

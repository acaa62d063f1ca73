"""pyproject.toml and environment.yml list the same packages with the same lower bounds."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# names that differ between PyPI and conda-forge
CONDA_NAMES = {"parasail": "parasail-python"}


def _project() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomli = pytest.importorskip("tomli")
        tomllib = tomli
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pyproject():
    proj = _project()
    reqs = list(proj["dependencies"])
    for extra in proj["optional-dependencies"].values():
        reqs += extra
    out = {}
    for r in reqs:
        if r.startswith(proj["name"] + "["):   # an extra that includes another (test ⊃ book)
            continue
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(>=\s*[\w.]+)?", r)
        out[CONDA_NAMES.get(m.group(1).lower(), m.group(1).lower())] = (m.group(2) or "").replace(" ", "")
    return out


def _environment():
    out = {}
    text = (ROOT / "environment.yml").read_text()
    deps = text.split("dependencies:", 1)[1]
    for line in deps.splitlines():
        m = re.match(r"^\s+-\s+([A-Za-z0-9_.\-]+)\s*(>=\s*[\w.]+)?(,\s*<\s*[\w.]+)?\s*$", line)
        if m and m.group(1) not in ("python", "pip"):
            out[m.group(1).lower()] = (m.group(2) or "").replace(" ", "")
    return out


def test_same_packages():
    py, env = _pyproject(), _environment()
    assert sorted(py) == sorted(env), (
        f"only in pyproject: {sorted(set(py) - set(env))}; only in environment.yml: "
        f"{sorted(set(env) - set(py))}")


def test_same_lower_bounds():
    py, env = _pyproject(), _environment()
    diff = {k: (py[k], env[k]) for k in py if py[k] != env.get(k)}
    assert not diff, f"lower bounds differ (pyproject, environment.yml): {diff}"


def test_self_referencing_extras_exist():
    """`labkit[book]` inside the test extra must name an extra that exists."""
    proj = _project()
    extras = proj["optional-dependencies"]
    for name, reqs in extras.items():
        for r in reqs:
            if r.startswith(proj["name"] + "["):
                inner = r[len(proj["name"]) + 1:r.index("]")]
                assert all(x.strip() in extras for x in inner.split(",")), (name, r)
    assert "labkit[book]" in extras["test"], "make test installs the book's packages"


def test_runtime_pins():
    py = _pyproject()
    assert py["numba"] == ">=0.62" and py["llvmlite"] == ">=0.45"

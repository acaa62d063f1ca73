"""The lab contract (DESIGN.md §3), checked for every lab in ``labkit.registry``.

Each lab is one package with the same files for the same roles (the template of
``labkit.registry``: ``TEMPLATE``, ``OPTIONAL`` and each lab's declared ``topics``), the same
contract names with the same shapes, its exercise checks registered, a notebook source, an
executed solution and a student copy.
"""
from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest

from labkit import registry

ROOT = Path(__file__).resolve().parent.parent
LABS = registry.LABS
FILES = tuple(registry.TEMPLATE)


@pytest.fixture(scope="module", params=LABS, ids=[l.name for l in LABS])
def lab(request):
    return request.param


def test_registry_is_consistent():
    names = registry.names()
    assert len(set(names)) == len(names)
    assert [l.number for l in LABS] == list(range(len(LABS))), "notebooks numbered 00, 01, … in order"
    for l in LABS:
        assert registry.get(l.name) is registry.get(l.notebook) is registry.get(l.number) is l
    with pytest.raises(KeyError, match="no lab"):
        registry.get("nosuchlab")


def _template(lab) -> tuple[str, ...]:
    """The template files this lab must have (``challenge.py`` only where its entry says so)."""
    return tuple(f for f in FILES if lab.challenge or f != "challenge.py")


def test_same_files(lab):
    pkg = ROOT / "labkit" / lab.name
    missing = [f for f in _template(lab) if not (pkg / f).is_file()]
    assert not missing, f"labkit/{lab.name}/ lacks {missing} (every lab has {FILES})"


def test_no_undeclared_public_module(lab):
    """Every public module of a lab is a template file, an optional one or a declared topic;
    helpers are private (``_name.py``). No sub-packages."""
    pkg = ROOT / "labkit" / lab.name
    topics = {f"{name}.py" for name, _ in lab.topics}
    allowed = set(_template(lab)) | set(registry.OPTIONAL) | topics
    private = [p.name for p in pkg.glob("_*.py") if not p.name.startswith("__")]
    extra = sorted(p.name for p in pkg.glob("*.py") if p.name not in allowed | set(private))
    assert not extra, (f"labkit/{lab.name}/ has public modules {extra} that are neither in the "
                       f"template nor declared in its registry entry's topics (or rename them _x.py)")
    subdirs = sorted(p.name for p in pkg.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert not subdirs, f"labkit/{lab.name}/ has sub-packages {subdirs}: a lab is one flat package"


def test_topics_are_declared_once_with_a_role(lab):
    pkg = ROOT / "labkit" / lab.name
    names = [name for name, _ in lab.topics]
    assert len(set(names)) == len(names), names
    for name, role in lab.topics:
        assert (pkg / f"{name}.py").is_file(), f"labkit/{lab.name}: topic {name!r} has no module"
        assert f"{name}.py" not in FILES and f"{name}.py" not in registry.OPTIONAL, name
        assert not name.startswith("_") and role.strip(), (name, role)


def test_template_roles():
    assert list(registry.TEMPLATE)[:2] == ["__init__.py", "inputs.py"]
    assert all(role.strip() for role in {**registry.TEMPLATE, **registry.OPTIONAL}.values())
    assert not set(registry.TEMPLATE) & set(registry.OPTIONAL)


def test_contract_names(lab):
    mod = lab.load()
    for name in ("SIZES", "Inputs", "make_inputs", "reference", "validate", lab.entry,
                 "run_benchmark", "TARGETS", "__all__"):
        assert hasattr(mod, name), f"labkit.{lab.name} lacks {name}"
    for name in mod.__all__:
        assert hasattr(mod, name), f"labkit.{lab.name}.__all__ names {name!r}, which does not exist"
    assert not hasattr(mod, "BENCHMARK"), "BENCHMARK was dropped: run_benchmark + TARGETS is the contract"
    assert callable(getattr(mod, lab.entry))
    assert dataclasses.is_dataclass(mod.Inputs)


def test_make_inputs_sizes(lab):
    mod = lab.load()
    assert {"small", "seed", "large"} <= set(mod.SIZES), sorted(mod.SIZES)
    params = inspect.signature(mod.make_inputs).parameters
    assert list(params)[:2] == ["size", "seed"], list(params)
    assert params["size"].default == "small" and params["seed"].default == 0
    a, b = mod.make_inputs("small", seed=1), mod.make_inputs("small", seed=1)
    assert isinstance(a, mod.Inputs)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        same = np.array_equal(x, y) if isinstance(x, np.ndarray) else repr(x) == repr(y)
        assert same, f"make_inputs('small', seed=1).{f.name} differs between two calls"
    with pytest.raises(ValueError, match="unknown size"):
        mod.make_inputs("nosuchsize")
    with pytest.raises(ValueError, match="unknown size keys"):
        mod.make_inputs({"nosuchkey": 1})
    with pytest.raises(TypeError):
        mod.make_inputs(3.5)


def test_reference_validates_against_itself(lab):
    mod = lab.load()
    inp = mod.make_inputs("small")
    ref = mod.reference(inp)
    mod.validate(ref, ref)


def test_targets_and_run_benchmark(lab):
    from labkit import bench
    mod = lab.load()
    assert isinstance(mod.TARGETS, list)
    assert all(isinstance(t, bench.Target) for t in mod.TARGETS)
    params = inspect.signature(mod.run_benchmark).parameters
    assert "size" in params and "repeat" in params


def test_checks_registered(lab):
    from labkit import check
    mine = [n for n in check.names() if check.get(n).module.startswith(lab.module)]
    assert mine, f"no exercise registered from {lab.module}.checks"


def test_notebooks_exist(lab):
    for path in (lab.source, f"solutions/{lab.notebook}.ipynb", f"notebooks/{lab.notebook}.ipynb"):
        assert (ROOT / path).is_file(), f"{path} missing for lab {lab.name}"

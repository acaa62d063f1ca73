"""The lab contract (DESIGN.md §3), checked for every lab in ``labkit.registry``.

Each lab is one package with the same files, the same contract names with the same shapes, its
exercise checks registered, a notebook source, an executed solution and a student copy.
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
FILES = ("__init__.py", "kernels.py", "bench.py", "checks.py")


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


def test_same_files(lab):
    pkg = ROOT / "labkit" / lab.name
    missing = [f for f in FILES if not (pkg / f).is_file()]
    assert not missing, f"labkit/{lab.name}/ lacks {missing} (every lab has {FILES})"


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

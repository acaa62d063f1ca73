"""The idle-machine reference figures a notebook shows when load hides a lesson's effect."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.bench import reference
from tooling import load_tool

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    return load_tool("reference_figures")


def test_every_key_has_a_probe_and_a_stored_measurement():
    probes = {k for per_nb in _tool().PROBES.values() for k in per_nb}
    assert probes == set(reference.KEYS)
    for key in reference.KEYS:
        f = reference.figure(key)
        assert f.get("value") is not None, f"{key}: run tools/reference_figures.py --write"
        assert f["host"]["cpu"] and f["host"]["cores"] >= 1 and f["date"], key
        assert len(f["load"]) == 2, key


@pytest.mark.parametrize("key", sorted(reference.KEYS))
def test_each_figure_reads_as_a_sentence_with_its_host(key):
    s = reference.sentence(key)
    assert s.startswith("On an idle ") and s.endswith(".") and reference.MISSING not in s
    assert reference.figure(key)["host"]["cpu"] in s and "load " in s
    assert reference.clause(key)[0].islower()
    assert re.search(r"\d+(\.\d+)?(×| GB/s| GFLOP/s)", reference.describe(key)), \
        "a figure carries its numbers and their unit"


def test_thread_figures_are_per_round_ratios():
    for key in ("threads_alignment", "threads_bspline", "threads_epistasis"):
        value = reference.figure(key)["value"]
        assert isinstance(value, list) and value and all(0 < r < 8 for r in value), value
        assert f"median of {len(value)} rounds" in reference.describe(key)


def test_the_notebooks_ask_only_for_stored_keys():
    used = set()
    for md in (ROOT / "solutions").glob("*.md"):
        used |= set(re.findall(r"reference\.(?:clause|sentence)\(['\"](\w+)['\"]\)",
                               md.read_text(encoding="utf-8")))
    assert used and used <= set(reference.KEYS)


def test_unknown_and_missing_keys():
    with pytest.raises(KeyError, match="known: cache_steps"):
        reference.sentence("no_such_figure")
    saved = reference._figures().pop("tile_sizes")
    try:
        assert reference.sentence("tile_sizes") == reference.MISSING[:1].upper() + \
            reference.MISSING[1:] + "."
    finally:
        reference._figures()["tile_sizes"] = saved

"""tools/grade_demo_class.py's synthetic class, graded in the sandbox: every honest student
(stripped metadata, a lab saved under another lab's name, a stray -Copy1, a renamed grade id,
edited check cells) gets full marks; every cheat (answer key, classmate, tampering, detached
process, network, root, delegation, json/clock/IPython-hook forgeries, …) zero or a flag."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from test_grade import LAB_MODULE, require_sandbox, solution_notebook

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("grade_demo_class",
                                                  ROOT / "tools" / "grade_demo_class.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_synthetic_class_is_graded_fairly(tmp_path):
    require_sandbox()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    lk = tmp_path / "lk"                     # a labkit install with solutions/ beside it
    shutil.copytree(ROOT / "labkit", lk / "labkit", ignore=shutil.ignore_patterns("__pycache__"))
    (lk / "solutions").mkdir()
    sol = lk / "solutions" / "00_fix.ipynb"
    nbformat.write(solution_notebook(), sol)
    sys.path.insert(0, str(tmp_path / "pkg"))
    try:
        import gradefix_lab  # noqa: F401 - registers the exercises the tool asks about
        tool = _tool()
        expected = tool.make(sol, tmp_path / "class")
    finally:
        sys.path.remove(str(tmp_path / "pkg"))
    kinds = {s.split("_", 1)[1] for s, _ in expected}
    assert {"delegate-wrapper", "delegate-alias", "delegate-getattr", "answer-key",
            "classmate", "detached", "stripped-metadata", "copy1"} <= kinds
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "pkg"), str(lk)]))
    env.pop("LABKIT_SPEED", None)
    bench = (lk / "labkit" / "bench" / "__init__.py").read_bytes()
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "labkit", "grade", str(tmp_path / "class"), "--out",
         str(out / "grades.csv"), "--json", str(out / "grades.json"), "--solutions",
         str(lk / "solutions"), "--exercise-module", "gradefix_lab", "--no-progress",
         "--no-cache", "--jobs", "2", "--cell-timeout", "10", "--memory-limit", "4G"],
        capture_output=True, text=True, env=env, timeout=900, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "grades.json").read_text())["submissions"]
    assert tool.judge(results, expected) == []
    by = {r["student"]: r for r in results if r.get("status") != "duplicate"}
    verdicts = {s: {e["exercise"]: e["verdict"] for e in r["exercises"]} for s, r in by.items()}
    for s, v in verdicts.items():
        # (a computed getattr is traced only inside labkit's own modules; this fixture lab is
        # not one, so that student is caught by the zero-or-flag rule above)
        if "delegate-wrapper" in s or "delegate-alias" in s:
            assert v["gf_add_one"] == "uses labkit's answer", (s, v)
    assert (lk / "labkit" / "bench" / "__init__.py").read_bytes() == bench  # read-only

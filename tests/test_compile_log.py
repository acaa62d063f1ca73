"""tools/compile_log (a numba compilation log of every process of a run) and
tools/compile_report.py (where that compilation went)."""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from tooling import load_tool

ROOT = Path(__file__).resolve().parents[1]
compile_report = load_tool("compile_report")


def test_every_compilation_is_logged_without_importing_numba_early(tmp_path):
    log = tmp_path / "c.jsonl"
    code = ("import sys\n"
            "assert 'numba' not in sys.modules\n"
            "from numba import njit\n"
            "import json\n"
            "json.dumps = lambda *a, **k: '{\"passed\": true}'\n"   # as a fake student does
            "@njit\n"
            "def inner(x):\n    return x + 1\n"
            "@njit\n"
            "def outer(x):\n    return inner(x) * 2\n"
            "assert outer(3) == 8\n")
    env = dict(os.environ, LABKIT_COMPILE_LOG=str(log),
               PYTHONPATH=os.pathsep.join([str(ROOT / "tools" / "compile_log"),
                                           os.environ.get("PYTHONPATH", "")]),
               PYTEST_CURRENT_TEST="tests/x.py::t (call)")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    rows = {r["name"]: r for r in map(json.loads, log.read_text().splitlines())}
    inner, outer = rows["__main__.inner"], rows["__main__.outer"]
    assert inner["args"] == "(int64,)" and outer["test"] == "tests/x.py::t (call)"
    # nested: the caller's compilation includes the callee's, its own CPU does not
    assert outer["start"] <= inner["start"] and outer["cpu"] >= inner["cpu"]
    assert abs(outer["cpu"] - outer["self_cpu"] - inner["cpu"]) < 1e-3
    # without the variable the hook does nothing
    env.pop("LABKIT_COMPILE_LOG")
    log.unlink()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=300)
    assert not log.exists()


def test_load_skips_lines_that_are_not_compilations(tmp_path):
    good = {"pid": 1, "argv": "-c", "test": "", "name": "m.f", "args": "()", "start": 0.0,
            "wall": 0.1, "cpu": 0.1, "self_cpu": 0.1}
    log = tmp_path / "c.jsonl"
    log.write_text(json.dumps(good) + '\n{"passed": true}\n[1]\n{"pid": 2, "na')
    assert compile_report.load(str(log)) == [good]


def test_report_splits_repeats_into_overlapping_and_later():
    def row(pid, start, wall, cpu, name="labkit.lab.engine.k", args="(int64,)"):
        return {"pid": pid, "argv": f"p{pid}", "test": "", "name": name, "args": args,
                "start": start, "wall": wall, "cpu": cpu, "self_cpu": cpu}
    rows = [row(1, 0.0, 5.0, 4.0), row(2, 2.0, 5.0, 3.0), row(3, 10.0, 1.0, 2.0),
            row(3, 11.0, 1.0, 1.0, args="(float64,)"),           # another signature: no repeat
            row(1, 0.5, 0.1, 0.5, name="numba.np.impl"), row(4, 0.0, 1.0, 1.5, name="cell.f")]
    out = io.StringIO()
    got = compile_report.report(rows, out=out)
    assert got["repeat_overlap"] == 3.0 and got["repeat_after"] == 2.0
    assert got["kinds"] == {"labkit": 10.0, "numba": 0.5, "cells": 1.5}
    assert "at once" in out.getvalue() and "after" in out.getvalue()

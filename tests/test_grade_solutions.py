"""The repo's own lesson 00 solution notebook, graded as an instructor grades it (sandboxed,
speed enforced, one submission): full points on every exercise whose verdict does not predict a
measured clock — what an honest, complete submission must get on a busy machine too."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

from test_grade import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
_PREDICTION = {"latency"}      # graded against the clock measured beside it (tests/labs: lesson00)


def test_lesson00_solution_gets_full_points(tmp_path):
    require_sandbox()
    sol = ROOT / "solutions" / "00_tools.ipynb"
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    shutil.copy(sol, tmp_path / "subs" / "ada" / sol.name)
    env = dict(os.environ)
    env.pop("LABKIT_SPEED", None)                    # enforced, as when grading
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(tmp_path / "subs"),
                           "--out", str(out), "--no-progress", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["exercise"] for r in rows} >= {"colsum", "softsign", "dot_partials"}, rows
    lost = [(r["exercise"], r["verdict"], r["message"]) for r in rows
            if r["exercise"] not in _PREDICTION and float(r["points"]) < float(r["max_points"])]
    assert not lost, lost

"""The repo's own solution notebooks, graded as an instructor grades them (sandboxed, speed
enforced, one student handing in every lesson): full points on every exercise whose verdict does
not predict a measured clock — what an honest, complete submission must get on a busy machine
too."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_grade import require_sandbox

ROOT = Path(__file__).resolve().parent.parent
_PREDICTION = {"latency"}      # graded against the clock measured beside it (tests/labs: lesson00)
#: read from OSACA's reports: `inconclusive` only where no report can be made (no OSACA, no AVX2
#: Muła loop) — printed, not failed; any other loss fails
_MODEL = {"loop_bound", "popcount_bound"}


@pytest.mark.full      # the solutions pass their checks strictly in nbval (default tier)
def test_every_solution_gets_full_points(tmp_path):
    require_sandbox()
    sols = sorted((ROOT / "solutions").glob("0*.ipynb"))
    assert len(sols) == 5, sols
    (tmp_path / "subs" / "ada").mkdir(parents=True)
    for sol in sols:
        shutil.copy(sol, tmp_path / "subs" / "ada" / sol.name)
    env = dict(os.environ)
    env.pop("LABKIT_SPEED", None)                    # enforced, as when grading
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "labkit", "grade", str(tmp_path / "subs"),
                           "--out", str(out), "--no-progress", "--no-cache"],
                          capture_output=True, text=True, env=env, timeout=1500, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    graded = {r["notebook"] for r in rows}
    assert len(graded) == 5, graded
    assert {r["exercise"] for r in rows} >= {"colsum", "softsign", "dot_partials"}, rows
    lost = [(r["notebook"], r["exercise"], r["verdict"], r["message"]) for r in rows
            if r["exercise"] not in _PREDICTION and float(r["points"]) < float(r["max_points"])]
    known = [x for x in lost if x[1] in _MODEL and x[2] == "inconclusive"]
    for x in known:
        warnings.warn(f"not gradable under {os.environ.get('NUMBA_CPU_NAME')}: {x}")
    noise = [x for x in lost if _full_but_for_noise(x[2], x[3])]
    for x in noise:
        warnings.warn(f"a busy run's interval cost a challenge its full tier: {x}")
    lost = [x for x in lost if x not in known and x not in noise]
    assert not lost, lost


def _full_but_for_noise(verdict: str, message: str) -> bool:
    """A challenge passed below full only because a busy run's position interval straddled the
    full tier's boundary while the median position lay in the full tier (the check gives the
    lower tier by design, "a quieter run may earn full"): a measurement outcome, not a slower
    solution (tests/test_challenges.py reads the same from the check's details)."""
    import re

    from labkit.check.challenge import FULL_AT
    m = re.search(r"position (-?[0-9.]+) on the log scale", message)
    return (verdict == "passed" and m is not None and float(m.group(1)) >= FULL_AT
            and "straddles the full" in message)

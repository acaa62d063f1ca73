"""``labkit grade --shard i/N --seed S`` and ``labkit grade merge``: three shards of a
small class of the fixture course merge to the serial run byte for byte; merging is idempotent;
shards graded with another seed or settings, overlapping or missing shards are refused."""
from __future__ import annotations

import json
import re
import shutil
import sys
import subprocess
from pathlib import Path

import pytest

from test_grade import PY, _env, _grade_cli, build_class, require_sandbox

from labkit.grade import find_submissions
from labkit.grade.shard import ShardError, merge_shards, parse_shard, pick

LIMITS = ("--memory-limit", "2G", "--cell-timeout", "8", "--notebook-timeout", "120",
          "--no-cache")
#: alice (right), carol (wrong: her message shows the seeded inputs), ivan (unreadable),
#: kim (no notebook), rosa (two copies: duplicates are resolved inside her shard)
SMALL = ("alice.ipynb", "carol.ipynb", "ivan.ipynb", "kim", "rosa")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The small class graded once serially (seed read from a file) and as three shards, all
    with seed 7."""
    require_sandbox()
    root = tmp_path_factory.mktemp("shard")
    course = build_class(root)
    small = root / "small"
    small.mkdir()
    for name in SMALL:
        src = course["subs"] / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, small / name)
    (root / "serial").mkdir()
    (root / "seed.txt").write_text("7\n")                          # @FILE: the same seed
    proc = _grade_cli(course, small, root / "serial" / "grades.csv", "--seed",
                      f"@{root / 'seed.txt'}", "--json",
                      str(root / "serial" / "grades.json"), *LIMITS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shards = []
    for i in (1, 2, 3):
        (root / f"s{i}").mkdir()
        proc = _grade_cli(course, small, root / f"s{i}" / "grades.csv", "--seed", "7",
                          "--shard", f"{i}/3", *LIMITS)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"shard {i}/3" in proc.stdout
        shards.append(root / f"s{i}" / "grades.json")
    return {"course": course, "small": small, "root": root, "shards": shards}


def _merge(runs, out: Path, *shards, extra=()):
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.run([PY, "-m", "labkit", "grade", "merge", str(out), *map(str, shards),
                           *extra], capture_output=True, text=True, env=_env(runs["course"]),
                          timeout=300, cwd=str(out.parent))


def _stable(doc: dict) -> list[dict]:
    """The submissions without their timings (seconds differ from run to run)."""
    subs = json.loads(json.dumps(doc["submissions"]))
    for s in subs:
        s.pop("duration_s", None)
        for e in s["exercises"]:
            e.pop("seconds", None)
    return subs


def _page(path: Path) -> str:
    return re.sub(r"graded \d{4}-\d\d-\d\d \d\d:\d\d UTC", "graded …", path.read_text())


def test_three_shards_merge_to_the_serial_run(runs):
    root = runs["root"]
    merged = root / "merged" / "grades.csv"
    proc = _merge(runs, merged, *runs["shards"], extra=("--json", str(merged.with_suffix(".json"))))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    serial = root / "serial"
    assert merged.read_bytes() == (serial / "grades.csv").read_bytes()
    assert (root / "merged" / "grades-wide.csv").read_bytes() == \
        (serial / "grades-wide.csv").read_bytes()
    mj = json.loads(merged.with_suffix(".json").read_text())
    assert _stable(mj) == _stable(json.loads((serial / "grades.json").read_text()))
    fb = sorted(p.name for p in (serial / "feedback").iterdir())
    assert sorted(p.name for p in (root / "merged" / "feedback").iterdir()) == fb
    for name in fb:
        assert _page(root / "merged" / "feedback" / name) == _page(serial / "feedback" / name)
    report = (root / "merged" / "report.html").read_text()
    assert all(f">{s}</a>" in report for s in ("alice", "carol", "ivan", "kim", "rosa"))
    # the seed made carol's wrong output the same in both runs; the class seed is not written
    assert "out[0]" in (serial / "grades.csv").read_text()
    assert '"7"' not in merged.with_suffix(".json").read_text()
    # idempotent: again (a shard given twice as well) → the same bytes
    again = root / "again" / "grades.csv"
    proc = _merge(runs, again, *runs["shards"], runs["shards"][0],
                  extra=("--json", str(again.with_suffix(".json"))))
    assert proc.returncode == 0, proc.stderr
    assert again.read_bytes() == merged.read_bytes()
    assert again.with_suffix(".json").read_bytes() == merged.with_suffix(".json").read_bytes()


def test_a_shard_with_another_seed_or_missing_is_refused(runs):
    root = runs["root"]
    other = root / "seed8" / "grades.csv"
    other.parent.mkdir()
    proc = _grade_cli(runs["course"], runs["small"], other, "--seed", "8", "--shard", "3/3",
                      *LIMITS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _merge(runs, root / "bad" / "grades.csv", *runs["shards"][:2],
                  other.with_suffix(".json"))
    assert proc.returncode == 2 and "different seeds (--seed)" in proc.stderr, proc.stderr
    assert not (root / "bad" / "grades.csv").exists()
    proc = _merge(runs, root / "bad" / "grades.csv", *runs["shards"][:2])
    assert proc.returncode == 2 and "missing shard(s) 3/3" in proc.stderr, proc.stderr
    # --shard without --seed: refused before grading
    proc = _grade_cli(runs["course"], runs["small"], root / "bad" / "x.csv", "--shard", "1/3")
    assert proc.returncode == 2 and "--shard needs --seed" in proc.stderr


def test_merge_refuses_other_settings_and_overlaps(runs, tmp_path):
    docs = [json.loads(p.read_text()) for p in runs["shards"]]

    def put(name, doc):
        p = tmp_path / name
        p.write_text(json.dumps(doc))
        return p

    files = [put(f"s{i}.json", d) for i, d in enumerate(docs, 1)]
    assert [r["notebook"] for r in merge_shards(files)[0]] == \
        [s.rel for s in find_submissions(runs["small"])]
    slow = json.loads(json.dumps(docs[1]))
    slow["shard"]["identity"]["settings"]["cell_timeout"] = 30.0
    with pytest.raises(ShardError, match=r"different settings \(--cell-timeout\)"):
        merge_shards([files[0], put("slow.json", slow), files[2]])
    twice = json.loads(json.dumps(docs[1]))
    twice["generated"] = "later"
    with pytest.raises(ShardError, match="overlapping shards: .* both shard 2/3"):
        merge_shards([*files, put("twice.json", twice)])
    older = json.loads(json.dumps(docs[2]))
    older["shard"]["identity"]["labkit"] = "0.0.9"
    with pytest.raises(ShardError, match="different labkit versions"):
        merge_shards([files[0], files[1], put("older.json", older)])
    with pytest.raises(ShardError, match="not a shard"):
        merge_shards([runs["root"] / "serial" / "grades.json"])


def test_shards_cover_every_submission_once_with_students_whole(tmp_path):
    course = build_class(tmp_path)
    subs = find_submissions(course["subs"])
    for n in (1, 2, 3, 5, 40):
        parts = [pick(subs, i, n) for i in range(1, n + 1)]
        rels = [s.rel for part in parts for s in part]
        assert sorted(rels) == sorted(s.rel for s in subs) and len(set(rels)) == len(rels)
        for part in parts:
            mine = {s.student for s in part}
            assert all(s in part for s in subs if s.student in mine)     # a student is whole
    assert parse_shard("2/5") == (2, 5)
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(Exception, match="cannot read shard"):
            parse_shard(bad)


def test_no_sandbox_flags_every_row(tmp_path, monkeypatch):
    """--no-sandbox is loud on every row (CSV flags), not only in the stderr banner."""
    import nbformat

    from labkit.grade import batch, report, run
    from test_grade import LAB_MODULE, solution_notebook
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    for d in ("solutions", "subs"):
        (tmp_path / d).mkdir()
    nbformat.write(solution_notebook(), tmp_path / "solutions" / "00_fix.ipynb")
    nbformat.write(solution_notebook(), tmp_path / "subs" / "alice.ipynb")
    (tmp_path / "subs" / "kim").mkdir()
    monkeypatch.setattr(run, "run_exercise", lambda ex, cell, timeout, last=False: (
        {"verdict": "passed", "passed": True, "points": ex.points, "message": "ok",
         "details": {}}, 1))
    try:
        results = batch.grade(tmp_path / "subs", solutions=tmp_path / "solutions",
                              sandbox=False, progress=False, exercise_modules=("gradefix_lab",))
    finally:
        sys.modules.pop("gradefix_lab", None)
    rows = report.rows(results)
    assert len(rows) == 3 and all("graded WITHOUT the sandbox" in r["flags"] for r in rows)


@pytest.mark.full   # test_three_shards_merge_to_the_serial_run proves the same rows for shards
def test_a_local_dask_cluster_writes_the_serial_rows(runs):
    pytest.importorskip("distributed", reason="pip install 'labkit[cluster]'")
    out = runs["root"] / "local2" / "grades.csv"
    out.parent.mkdir()
    proc = _grade_cli(runs["course"], runs["small"], out, "--seed", "7", "--cluster", "local:2",
                      *LIMITS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_bytes() == (runs["root"] / "serial" / "grades.csv").read_bytes()

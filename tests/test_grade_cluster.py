"""``labkit grade DIR --scheduler ADDRESS`` / ``--cluster local:N``: a real Dask
scheduler and two worker processes on 127.0.0.1 grade 12 submissions of the fixture class; one
worker is killed mid-submission; every submission is graded exactly once with the points of the
serial run. The default tier checks the pieces that need no cluster."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_grade import PY, _env, _grade_cli, build_class, require_sandbox

from labkit.grade.cluster import parse_cluster
from labkit.grade.shard import cpu_section

#: twelve submissions that each start a sandboxed worker (no endless loop: no 8 s timeouts)
TWELVE = ("alice", "bob", "carol", "dave", "erin", "hank", "lena", "omar", "pete", "quin",
          "sam", "judy")
LIMITS = ("--memory-limit", "2G", "--cell-timeout", "8", "--notebook-timeout", "120",
          "--no-cache", "--seed", "36")


def test_cluster_option_and_missing_distributed(monkeypatch, tmp_path, capsys):
    assert parse_cluster("local:3") == 3
    with pytest.raises(ValueError, match="write local:N"):
        parse_cluster("slurm:3")
    monkeypatch.setitem(sys.modules, "distributed", None)         # not installed
    from labkit import grade
    (tmp_path / "subs").mkdir()
    assert grade.main([str(tmp_path / "subs"), "--cluster", "local:2", "--out",
                       str(tmp_path / "g.csv"), "--no-sandbox"]) == 2
    assert "pip install 'labkit[cluster]'" in capsys.readouterr().err


def test_report_groups_speed_verdicts_by_cpu():
    def nb(student, cpu, verdict, ratio):
        return {"student": student, "notebook": f"{student}.ipynb", "status": "graded",
                "environment": {"cpu": cpu},
                "exercises": [{"exercise": "fast", "points": 1.0 * (verdict == "passed"),
                               "max_points": 1.0, "verdict": verdict, "message": "",
                               "details": {"speed_ratio": ratio}}]}
    one = [nb("a", "Xeon", "passed", 3.0), nb("b", "Xeon", "slower", 0.5)]
    assert cpu_section(one) == ""                                  # one CPU: nothing extra
    mixed = one + [nb("c", "EPYC <x>", "passed", 5.0)]
    html = cpu_section(mixed)
    assert "more than one CPU" in html and "EPYC &lt;x&gt;" in html
    assert "<td>Xeon</td><td>2</td><td>1 / 2</td>" in html
    from labkit.grade.pages import report_html
    assert "more than one CPU" in report_html(mixed)


def _start(cmd, env, log: Path):
    return subprocess.Popen(cmd, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.full   # the default tier proves the rows of a seeded run match (test_grade_shard)
def test_dask_workers_grade_the_class_once_when_one_dies(tmp_path):
    require_sandbox()
    distributed = pytest.importorskip("distributed", reason="pip install 'labkit[cluster]'")
    course = build_class(tmp_path)
    subs = tmp_path / "twelve"
    subs.mkdir()
    for s in TWELVE:
        src = course["subs"] / s
        if src.is_dir():
            (subs / s).mkdir()
            for f in src.iterdir():
                (subs / s / f.name).write_bytes(f.read_bytes())
        else:
            (subs / f"{s}.ipynb").write_bytes((course["subs"] / f"{s}.ipynb").read_bytes())
    (tmp_path / "serial").mkdir()
    proc = _grade_cli(course, subs, tmp_path / "serial" / "g.csv", "--json",
                      str(tmp_path / "serial" / "g.json"), *LIMITS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    serial = json.loads((tmp_path / "serial" / "g.json").read_text())["submissions"]

    env = _env(course)
    env.pop("LABKIT_SPEED", None)
    dask = str(Path(PY).with_name("dask"))
    sf = tmp_path / "scheduler.json"
    procs = [_start([dask, "scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", str(sf)], env, tmp_path / "s.log")]
    try:
        for _ in range(300):
            if sf.exists():
                break
            time.sleep(0.1)
        workers = {name: _start([dask, "worker", "--scheduler-file", str(sf), "--nthreads", "1",
                                 "--resources", "grade=1", "--no-nanny", "--no-dashboard",
                                 "--host", "127.0.0.1", "--name", name], env,
                                tmp_path / f"{name}.log") for name in ("wa", "wb")}
        procs += workers.values()
        (tmp_path / "dask").mkdir()
        out = tmp_path / "dask" / "g.csv"
        grader = subprocess.Popen(
            [PY, "-m", "labkit", "grade", str(subs), "--out", str(out), "--solutions",
             str(course["solutions"]), "--exercise-module", "gradefix_lab", "--no-progress",
             "--json", str(out.with_suffix(".json")), "--scheduler", str(sf), *LIMITS],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=str(out.parent))
        procs.append(grader)
        with distributed.Client(scheduler_file=str(sf), timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            addr = {i["name"]: a for a, i in client.scheduler_info()["workers"].items()}
            for _ in range(1200):                      # until wb is in a submission
                if client.processing().get(addr["wb"]):
                    break
                time.sleep(0.1)
            else:
                pytest.fail("worker wb never got a submission")
            time.sleep(1.0)                            # mid-submission (one takes 2-5 s)
            busy = client.processing().get(addr["wb"])
            _stop(workers["wb"])
            assert busy, "wb finished its submission before it was killed"
            lost = {str(k).split(":", 2)[2] for k in busy}         # labkit-grade:<id>:<rel>
        stdout, stderr = grader.communicate(timeout=900)
        assert grader.returncode == 0, stdout + stderr
    finally:
        for p in procs:
            _stop(p)
    got = json.loads(out.with_suffix(".json").read_text())["submissions"]
    assert sorted(r["notebook"] for r in got) == sorted(r["notebook"] for r in serial)
    assert len(got) == len(TWELVE)                     # each exactly once

    def points(results):
        return {(r["student"], e["exercise"]): (e["points"], e["verdict"])
                for r in results for e in r["exercises"]}
    assert points(got) == points(serial)
    used = {r["environment"]["worker"] for r in got}
    assert addr["wa"] in used and used <= {addr["wa"], addr["wb"]}
    assert all(r["environment"]["worker"] == addr["wa"] for r in got if r["notebook"] in lost)
    assert all(r["environment"]["cpu"] == serial[0]["environment"]["cpu"] for r in got)
    assert (tmp_path / "dask" / "report.html").is_file()

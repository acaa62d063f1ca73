"""The grading sandbox (bubblewrap) holds: submissions that try to write outside, reach a
loopback listener, read solutions/ or a classmate's notebook, leave a detached process behind
or find out they are root get nowhere, and their grade is unaffected.

Each attacker's first exercise returns the right answer only when its attack *failed* (so a
``passed`` verdict is the sandbox's evidence), and the grader's side checks what it can see:
no file written, no connection accepted, no process left. A control run of two attackers
without the sandbox shows the attacks are real. These tests must run (not skip) on Linux with
bwrap; set LABKIT_ALLOW_NO_SANDBOX=1 to skip them where bwrap cannot work.
"""
from __future__ import annotations

import csv
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from test_grade import LAB_MODULE, _fn, _set, require_sandbox, solution_notebook

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MARKER = "labkit-sandbox-test-detached"


_FORGED = ('{"result": {"name": "gf_add_one", "passed": True, "points": 1.0, "max_points": 1.0, '
           '"verdict": "passed", "message": "forged", "details": {}}, "restart": False}')
#: wrong answers that write a passing verdict frame from the student's function: to every fd
#: of its own process, and to every fd of its parent (the check worker) through /proc
FORGERS = {
    "forge_frame": _fn("add_one", "import os\nfrom labkit.check.runner import write_frame\n"
                                  "for fd in range(3, 64):\n    try:\n"
                                  f"        write_frame(fd, {_FORGED})\n"
                                  "    except OSError:\n        pass\nreturn x"),
    "forge_proc": _fn("add_one", "import os\nfrom labkit.check.runner import write_frame\n"
                                 "d = f'/proc/{os.getppid()}/fd'\n"
                                 "for n in (os.listdir(d) if os.access(d, os.R_OK) else []):\n"
                                 "    try:\n        fd = os.open(f'{d}/{n}', os.O_WRONLY)\n"
                                 f"        write_frame(fd, {_FORGED})\n"
                                 "    except OSError:\n        pass\nreturn x"),
}


def _attack(body: str) -> str:
    """An add_one that returns x + 1 only if ``body`` raised (the attack failed)."""
    return _fn("add_one", "try:\n" + "".join(f"    {ln}\n" for ln in body.splitlines())
               + "except Exception:\n    return x + 1\nreturn x")


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    require_sandbox()
    root = tmp_path_factory.mktemp("sandbox")
    (root / "pkg").mkdir()
    (root / "pkg" / "gradefix_lab.py").write_text(LAB_MODULE, encoding="utf-8")
    shutil.copytree(ROOT / "labkit", root / "lk" / "labkit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "solutions").mkdir()
    sol = solution_notebook()
    nbformat.write(sol, root / "solutions" / "00_fix.ipynb")
    outside = root / "outside"
    outside.mkdir()
    outside.chmod(0o777)                       # even a world-writable folder is not reachable
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    subs = root / "subs"
    subs.mkdir()
    labkit_file = root / "lk" / "labkit" / "__init__.py"
    attacks = {
        "write_outside": f"open({str(outside / 'pwned')!r}, 'w').write('x')\n"
                         f"open({str(labkit_file)!r}, 'a').write('# x')",
        "network": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)",
        "read_solutions": f"open({str(root / 'solutions' / '00_fix.ipynb')!r}).read()",
        "read_classmate": f"open({str(subs / 'alice.ipynb')!r}).read()",
        "detached": "import subprocess\n"
                    "subprocess.Popen(['/bin/sh', '-c', 'sleep 3; echo late > "
                    f"{outside / 'late'}; sleep 60 # {MARKER}'], start_new_session=True)\n"
                    "raise RuntimeError('started')",
        "whoami": "import subprocess\n"
                  "uid = subprocess.run(['id', '-u'], capture_output=True, text=True).stdout\n"
                  f"assert int(uid) in ({os.getuid()}, 0)",
    }
    nbformat.write(sol, subs / "alice.ipynb")
    for name, body in attacks.items():
        nbformat.write(_set(sol, "ex-gf_add_one", _attack(body)), subs / f"{name}.ipynb")
    for name, src in FORGERS.items():
        nbformat.write(_set(sol, "ex-gf_add_one", src), subs / f"{name}.ipynb")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "pkg"), str(root / "lk")]))
    env.pop("LABKIT_SPEED", None)

    def run(folder, *extra):
        out = root / f"{Path(folder).name}.csv"
        proc = subprocess.run(
            [PY, "-m", "labkit", "grade", str(folder), "--out", str(out), "--solutions",
             str(root / "solutions"), "--exercise-module", "gradefix_lab", "--no-progress",
             "--no-cache", "--jobs", "2", "--cell-timeout", "20", *extra],
            capture_output=True, text=True, env=env, timeout=600, cwd=str(root))
        with open(out, newline="", encoding="utf-8") as f:
            return proc, list(csv.DictReader(f))

    proc, table = run(subs)
    time.sleep(4)                              # the detached process would have written by now
    left = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and MARKER in (p / "cmdline").read_text():
                left.append(p.name)
        except OSError:
            pass
    # control: the same attacks without the sandbox succeed (so the tests above mean something)
    ctrl = root / "control"
    ctrl.mkdir()
    for name in ("read_solutions", "whoami"):
        shutil.copy(subs / f"{name}.ipynb", ctrl / f"{name}.ipynb")
    cproc, ctable = run(ctrl, "--no-sandbox")
    stop.set()
    listener.close()
    return {"proc": proc, "table": table, "outside": outside, "accepted": accepted,
            "forgers": FORGERS,
            "left": left, "control": ctable, "control_proc": cproc, "attacks": attacks}


def _by(table):
    return {(r["student"], r["exercise"]): r for r in table}


def test_every_attack_fails_inside_and_the_grade_is_unaffected(sandboxed):
    assert sandboxed["proc"].returncode == 0, sandboxed["proc"].stdout + sandboxed["proc"].stderr
    by = _by(sandboxed["table"])
    for name in ["alice", *sandboxed["attacks"]]:
        for ex in ("gf_add_one", "gf_double"):
            assert by[(name, ex)]["verdict"] == "passed", (name, ex, by[(name, ex)]["message"])
        assert "tampered" not in by[(name, "gf_add_one")]["flags"]


def test_a_forged_verdict_frame_gets_no_points(sandboxed):
    """The student's function runs in a child of the check worker: a frame it writes to its
    own fds or (through /proc) to the worker's never becomes the verdict."""
    by = _by(sandboxed["table"])
    for name in sandboxed["forgers"]:
        row = by[(name, "gf_add_one")]
        assert row["verdict"] != "passed" and float(row["points"]) == 0, (name, row)
        assert "forged" not in row["message"]
        assert by[(name, "gf_double")]["verdict"] == "passed", (name, by[(name, "gf_double")])


def test_nothing_reached_the_grader_side(sandboxed):
    assert list(sandboxed["outside"].iterdir()) == []                 # no file, early or late
    assert sandboxed["accepted"] == []                                # no connection
    assert sandboxed["left"] == []                                    # no process outlived it


def test_without_the_sandbox_the_same_attacks_work(sandboxed):
    proc = sandboxed["control_proc"]
    assert "WITHOUT a sandbox" in proc.stderr
    by = _by(sandboxed["control"])
    assert by[("read_solutions", "gf_add_one")]["verdict"] == "wrong"
    assert by[("whoami", "gf_add_one")]["verdict"] == "wrong"


def test_no_sandbox_means_a_loud_refusal(monkeypatch, tmp_path, capsys):
    from labkit import grade
    from labkit.grade import sandbox
    monkeypatch.setattr(sys, "platform", "darwin")
    assert sandbox.probe.__wrapped__() == (False, "the sandbox needs Linux (this is darwin)")
    monkeypatch.undo()
    monkeypatch.setattr(sandbox, "probe", lambda: (False, "`bwrap` is not installed "
                                                          "(Debian: apt-get install bubblewrap)"))
    (tmp_path / "solutions").mkdir()
    nbformat.write(solution_notebook(), tmp_path / "solutions" / "00_fix.ipynb")
    assert grade.main([str(tmp_path), "--solutions", str(tmp_path / "solutions")]) == 4
    err = capsys.readouterr().err
    assert "bubblewrap" in err and "--no-sandbox" in err and "!!!!" in err


def test_the_sandbox_command_binds_only_what_is_needed():
    from labkit.grade import sandbox
    cmd = sandbox.SandboxSpec(memory=1 << 30, cpu_seconds=60).command(["python"])
    text = " ".join(cmd)
    for opt in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--clearenv",
                "--as=1073741824", "--cpu=60", "--nproc=", "--fsize="):
        assert opt in text
    binds = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--ro-bind"]
    assert str(ROOT / "solutions") not in binds and str(ROOT) not in binds
    assert not any(a == "--bind" for a in cmd)                        # nothing writable bound

"""Gradescope: ``results.json`` from labkit's grading, and an autograder bundle that runs labkit
in Gradescope's container (``labkit gradescope build OUTDIR``).

``results.json`` (Gradescope's autograder specification; :func:`validate`) is made by
:mod:`.gsresults`, whose names are importable from here.

The bundle (``setup.sh``, ``run_autograder``, ``labkit-gradescope.json``, labkit's source and
the assignment's solution notebooks, zipped as ``autograder.zip``) installs labkit into
``/opt/labkit`` when Gradescope builds the image and warms numba's cache there; for each
submission ``run_autograder`` calls ``labkit gradescope run``: it grades
``/autograder/submission`` with ``labkit grade`` and writes ``/autograder/results/results.json``.
What the sandbox can do inside Gradescope's container: ``docs/course.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

# results.json, importable from here as before (some only re-exported)
from .gsresults import (VISIBILITY, assignment_results, lab_tests, submission_results, validate,
                        write_results)

__all__ = ["VISIBILITY", "validate", "lab_tests", "assignment_results", "submission_results",
           "write_results", "build_bundle", "run", "main"]

CONFIG = "labkit-gradescope.json"
SANDBOX_MODES = ("fallback", "required")
USER = "labkit"                       # the unprivileged user setup.sh creates
CACHE = "/opt/labkit-cache"           # numba's cache of the labs, warmed by setup.sh


# ------------------------------------------------------------------ the bundle
SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (written by
# `labkit gradescope build`). It installs labkit into /opt/labkit, the sandbox's tools, an
# unprivileged user for grading without the sandbox, and warms numba's cache of the labs.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap util-linux
python3 -m venv /opt/labkit
/opt/labkit/bin/python -m pip install --upgrade pip
/opt/labkit/bin/python -m pip install /autograder/source/labkit-src
id -u {user} >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin {user}
# compile the labs' kernels into the image once (labkit warm) into a cache the grading user
# may use: graded without the sandbox, a submission loads them instead of compiling (in the
# sandbox each submission's worker compiles into its own private cache, as labkit grade does)
mkdir -p {cache}
NUMBA_CACHE_DIR={cache} /opt/labkit/bin/labkit warm {warm} --solutions /autograder/source \\
  || echo "labkit warm failed: each submission compiles the kernels it needs (slower)"
chown -R {user}: {cache}
/opt/labkit/bin/python -m labkit.grade.sandbox \\
  || echo "no bubblewrap sandbox in this container: see sandbox in labkit-gradescope.json"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission (written by `labkit gradescope build`): labkit
# grades /autograder/submission and writes /autograder/results/results.json.
exec /opt/labkit/bin/labkit gradescope run --source /autograder/source \\
  --submission /autograder/submission --results /autograder/results/results.json
"""

_SKIP = ("__pycache__", ".ipynb_checkpoints")
_SKIP_SUFFIX = (".pyc", ".pyo", ".nbi", ".nbc")


def _copy_package(dest: Path) -> None:
    import labkit
    from labkit.release import ROOT
    pkg = Path(labkit.__file__).resolve().parent
    shutil.copytree(pkg, dest / "labkit", ignore=lambda d, names: [
        n for n in names if n in _SKIP or n.endswith(_SKIP_SUFFIX)])
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, dest / name)
    if not (dest / "pyproject.toml").is_file():
        raise FileNotFoundError(f"no pyproject.toml beside labkit at {ROOT}: build the bundle "
                                "from a checkout of labkit")


def build_bundle(outdir, labs, *, assignment: str = "", points: float | None = None,
                 visibility: str = "visible", sandbox: str = "fallback", solutions=None
                 ) -> Path:
    """Write the autograder into ``outdir`` (must be empty or absent) and zip it as
    ``outdir/autograder.zip``; returns the zip's path."""
    from .notebooks import load_solutions
    from labkit.release import ROOT
    if visibility not in VISIBILITY:
        raise ValueError(f"visibility must be one of {', '.join(VISIBILITY)}")
    if sandbox not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}")
    labs = [str(x).removesuffix(".ipynb") for x in labs]
    if not labs:
        raise ValueError("name the assignment's labs (--lab 01_alignment, …) or --course with "
                         "--assignment")
    sol = Path(solutions) if solutions else ROOT / "solutions"
    canon = {Path(k).stem: v for k, v in load_solutions(sol).items()}
    missing = [x for x in labs if x not in canon]
    if missing:
        raise ValueError(f"lab(s) {', '.join(missing)} not in {sol} (have: "
                         f"{', '.join(sorted(canon))})")
    out = Path(outdir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; give a new folder")
    out.mkdir(parents=True, exist_ok=True)
    (out / "solutions").mkdir()
    for lab in labs:
        shutil.copy2(canon[lab].path, out / "solutions" / canon[lab].path.name)
        md = canon[lab].path.with_suffix(".md")
        if md.is_file():                       # labkit warm reads the exercise cells from it
            shutil.copy2(md, out / "solutions" / md.name)
    _copy_package(out / "labkit-src")
    warm = " ".join(str(int(x[:2])) for x in labs)
    (out / "setup.sh").write_text(SETUP_SH.format(user=USER, warm=warm, cache=CACHE),
                                  encoding="utf-8")
    (out / "run_autograder").write_text(RUN_AUTOGRADER, encoding="utf-8")
    for f in ("setup.sh", "run_autograder"):
        os.chmod(out / f, 0o755)
    cfg = {"labkit_gradescope": 1, "assignment": assignment, "labs": labs, "points": points,
           "lab_max": {lab: canon[lab].max_points for lab in labs}, "visibility": visibility,
           "sandbox": sandbox, "user": USER}
    (out / CONFIG).write_text(json.dumps(cfg, indent=1) + "\n", encoding="utf-8")
    zpath = out / "autograder.zip"
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(out.rglob("*")):
            if p == zpath or p.is_dir():
                continue
            info = zipfile.ZipInfo.from_file(p, str(p.relative_to(out)))
            with open(p, "rb") as f:
                z.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
    return zpath


# ------------------------------------------------------------------ in the container
def _read_config(source: Path) -> dict:
    p = source / CONFIG
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"cannot read {p}: {e}") from None
    if not isinstance(cfg, dict) or cfg.get("labkit_gradescope") != 1 or not cfg.get("labs"):
        raise ValueError(f"{p} is not a labkit autograder configuration (rebuild the bundle "
                         "with labkit gradescope build)")
    return cfg


def _as_user(user: str) -> list[str]:
    """The command prefix that runs as ``user`` (root only), or ``[]`` when not needed/able."""
    if not user or os.geteuid() != 0 or shutil.which("runuser") is None:
        return []
    try:
        import pwd
        home = pwd.getpwnam(user).pw_dir
    except KeyError:
        return []
    return ["runuser", "-u", user, "--", "env", f"HOME={home}"] + (
        [f"NUMBA_CACHE_DIR={CACHE}"] if os.path.isdir(CACHE) else [])


def run(source, submission, results, *, grade_cmd: list[str] | None = None) -> int:
    """Grade one Gradescope submission and write its results.json (``labkit gradescope run``).

    With a working sandbox the grading runs as in ``labkit grade`` (each submission's check
    worker in bubblewrap). Without one, ``sandbox = "fallback"`` grades with ``--no-sandbox``
    as the unprivileged user of setup.sh (every process of that user is killed before the
    results are read) and says so in the output; ``"required"`` fails the autograder."""
    from .sandbox import probe
    t0 = time.monotonic()
    source, submission = Path(source), Path(submission)
    cfg = _read_config(source)
    ok, why = probe()
    if not ok and cfg.get("sandbox") == "required":
        print(f"labkit gradescope: no sandbox here ({why}) and the bundle requires one; "
              "rebuild with --sandbox fallback to grade without it", file=sys.stderr)
        return 4
    prefix = [] if ok else _as_user(str(cfg.get("user") or ""))
    work = Path(tempfile.mkdtemp(prefix="labkit-gs-"))
    try:
        sub = work / "submission"
        shutil.copytree(submission, sub, symlinks=True)
        shutil.copytree(source / "solutions", work / "solutions")
        (work / "out").mkdir()
        if prefix:
            import pwd
            pw = pwd.getpwnam(cfg["user"])
            for p in [work, *work.rglob("*")]:
                os.chown(p, pw.pw_uid, pw.pw_gid, follow_symlinks=False)
        cmd = (grade_cmd or [sys.executable, "-m", "labkit", "grade"]) + [
            str(sub), "--out", str(work / "out" / "grades.csv"), "--json",
            str(work / "out" / "grades.json"), "--solutions", str(work / "solutions"),
            "--no-cache", "--no-progress"] + ([] if ok else ["--no-sandbox"])
        p = subprocess.run(prefix + cmd, text=True, capture_output=True)
        print(p.stdout[-20000:])
        print(p.stderr[-20000:], file=sys.stderr)
        if prefix:                     # whatever a submission left running as that user
            subprocess.run(prefix + ["kill", "-9", "-1"], capture_output=True)
        if p.returncode not in (0, 3):
            print(f"labkit gradescope: labkit grade failed (exit {p.returncode}); no "
                  "results.json written", file=sys.stderr)
            return p.returncode or 1
        try:
            doc = json.loads((work / "out" / "grades.json").read_text(encoding="utf-8"))
            rows = doc["submissions"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"labkit gradescope: labkit grade wrote no readable grades.json ({e}); no "
                  "results.json written", file=sys.stderr)
            return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    how = ("sandbox: bubblewrap" if ok else f"graded WITHOUT the bubblewrap sandbox ({why})"
           + (f", as the unprivileged user {cfg['user']}" if prefix else ""))
    from labkit import __version__
    out = submission_results(rows, cfg["labs"], cfg.get("lab_max") or {},
                             cfg.get("points"), cfg.get("visibility", "visible"),
                             f"labkit {__version__}; {how}", time.monotonic() - t0)
    write_results(out, results)
    print(f"wrote {results}: {out['score']:g} points")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``labkit gradescope build OUTDIR …`` | ``labkit gradescope run …`` | ``labkit gradescope
    results grades.json …``."""
    a = _parser().parse_args(argv)
    try:
        if a.cmd == "build":
            return _build_command(a)
        if a.cmd == "run":
            return run(a.source, a.submission, a.results)
        return _results_command(a)
    except (ValueError, FileNotFoundError, FileExistsError) as e:
        print(f"labkit gradescope: {e}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    """The ``labkit gradescope`` command line: build, run, results."""
    p = argparse.ArgumentParser(prog="labkit gradescope",
                                description="Gradescope autograder bundle and results.json.")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="write an autograder bundle (setup.sh, run_autograder, "
                       "autograder.zip) into a new folder")
    b.add_argument("outdir")
    b.add_argument("--lab", action="append", default=[], help="a lab of the assignment "
                   "(01_alignment); repeat for several")
    b.add_argument("--course", default=None, help="course.toml: take labs and points from "
                   "--assignment")
    b.add_argument("--assignment", default=None, help="assignment name in --course")
    b.add_argument("--points", type=float, default=None, help="scale the labs' points to this")
    b.add_argument("--visibility", default="visible", choices=VISIBILITY)
    b.add_argument("--sandbox", default="fallback", choices=SANDBOX_MODES,
                   help="without bubblewrap in Gradescope's container: grade unsandboxed as an "
                        "unprivileged user (fallback, default) or fail (required)")
    b.add_argument("--solutions", default=None, help="canonical notebooks (default solutions/)")
    r = sub.add_parser("run", help="in Gradescope's container: grade the submission, write "
                       "results.json")
    r.add_argument("--source", default="/autograder/source")
    r.add_argument("--submission", default="/autograder/submission")
    r.add_argument("--results", default="/autograder/results/results.json")
    x = sub.add_parser("results", help="results.json from labkit grade's --json output (every "
                       "notebook in it is one submission)")
    x.add_argument("grades_json")
    x.add_argument("--lab", action="append", default=[], required=True)
    x.add_argument("--points", type=float, default=None)
    x.add_argument("--visibility", default="visible", choices=VISIBILITY)
    x.add_argument("--solutions", default=None)
    x.add_argument("--out", default="results.json")
    return p


def _build_command(a: argparse.Namespace) -> int:
    """``labkit gradescope build``: the bundle of the ``--lab``s, or of a course's assignment."""
    labs, points, name = list(a.lab), a.points, a.assignment or ""
    if a.course:
        labs, name, points = _course_assignment(a.course, a.assignment, points)
    z = build_bundle(a.outdir, labs, assignment=name, points=points,
                     visibility=a.visibility, sandbox=a.sandbox, solutions=a.solutions)
    print(f"wrote {z} (upload it as the assignment's autograder; docs/course.md)")
    return 0


def _course_assignment(course: str, assignment: str | None, points: float | None
                       ) -> tuple[list[str], str, float | None]:
    """(labs, name, points) of ``assignment`` in the course file; ``points`` given wins."""
    from .coursefile import load_course
    c = load_course(course)
    match = [x for x in c.assignments if x.name == assignment]
    if not match:
        raise ValueError(f"--assignment: {assignment!r} is not an assignment of "
                         f"{course} (have: "
                         f"{', '.join(x.name for x in c.assignments)})")
    return (list(match[0].labs), match[0].name,
            points if points is not None else match[0].points)


def _results_command(a: argparse.Namespace) -> int:
    """``labkit gradescope results``: one results.json from labkit grade's --json output."""
    from .notebooks import load_solutions
    canon = {Path(k).stem: v.max_points for k, v in load_solutions(a.solutions).items()}
    try:
        doc = json.loads(Path(a.grades_json).read_text(encoding="utf-8"))
        subs = doc["submissions"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{a.grades_json} is not labkit grade --json output ({e})") from None
    labs = [x.removesuffix(".ipynb") for x in a.lab]
    unknown = [x for x in labs if x not in canon]
    if unknown:
        raise ValueError(f"lab(s) {', '.join(unknown)} not among the solutions")
    write_results(submission_results(subs, labs, canon, a.points, a.visibility), a.out)
    print(f"wrote {a.out}")
    return 0

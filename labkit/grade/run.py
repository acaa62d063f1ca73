"""Grading one submission: its exercise cells read statically, each check run by labkit's
trusted worker inside this submission's sandbox, one row per exercise (verdicts, timeouts run
again alone, tampering). A batch of them is :mod:`.batch`; the numba cache seed :mod:`.seed`."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from typing import Any

from .build import read_exercises
from .checkcell import run_exercise, use_worker
from .notebooks import Canonical, ExerciseSpec, Submission, _read_submission, match_canonical
from .settings import MAX_MESSAGE, REFUSED, GradeSettings, _short

__all__ = ["grade_notebook", "environment_stamp", "SandboxUnavailable"]


class SandboxUnavailable(RuntimeError):
    """No sandbox here and ``--no-sandbox`` was not given."""


def _unreadable(e: BaseException) -> str:
    return _short(f"cannot read this notebook: {type(e).__name__}: {e}")


def _read_and_match(sub: Submission, canon: dict[str, Canonical],
                    settings: GradeSettings) -> tuple[Canonical | None, str | None]:
    """(the canonical notebook ``sub`` is, why it cannot be graded): never raises — a refused,
    unreadable or malformed submission is its own row, the batch goes on."""
    only = next(iter(canon.values())) if len(canon) == 1 else None    # its max points shown
    if sub.refused:
        return only, sub.refused
    if sub.path.is_dir():
        return None, f"no notebook (*.ipynb) in folder {sub.path.name}/"
    try:
        nb = _read_submission(sub.path, settings.max_notebook_bytes)
        return match_canonical(nb, sub.path, canon), None
    except Exception as e:  # noqa: BLE001 - any failure of one notebook is that notebook's
        return only, str(e) if isinstance(e, ValueError) else _unreadable(e)


def _row(ex: ExerciseSpec, verdict: str, message: str, points: float = 0.0, **extra) -> dict:
    return {"exercise": ex.name, "points": points, "max_points": ex.points, "verdict": verdict,
            "message": _short(message), **extra}


def environment_stamp() -> dict:
    """CPU, ISA, cores and versions of the machine that measured (``labkit.hardware.info()``)."""
    try:
        from labkit import hardware
        i = hardware.info()
        return {"cpu": f"{i.cpu} [{i.machine}]", "isa": " ".join(k for k, v in i.features.items()
                                                                 if v),
                "cores": i.logical_cores, "numba": i.numba, "llvmlite": i.llvmlite,
                "numpy": i.numpy, "python": i.python, "numba_cpu": i.numba_cpu}
    except Exception as e:  # noqa: BLE001 - the stamp must not stop grading
        return {"cpu": f"unknown ({type(e).__name__})"}


def _worker(settings: GradeSettings, seed_build: str | None = None):
    """The worker one submission is graded by. ``settings.numba_cache`` is the seed: a warm
    numba cache built by :func:`_build_seed` before any submission, which each worker gets a
    private copy of. ``seed_build``: the folder the seed build itself compiles into (no sandbox:
    it runs only labkit and the instructor's solution cells)."""
    from .sandbox import SandboxSpec, SandboxWorker
    if seed_build is not None:
        return SandboxWorker(None, settings.exercise_modules, numba_cache=seed_build)
    spec = None
    if settings.sandbox:
        # no RLIMIT_CPU: with one armed, Linux samples the process CPU clock (the speed gates'
        # clock) at tick resolution; CPU is bounded by the wall-clock timeouts instead
        spec = SandboxSpec(memory=settings.memory_limit, extra_paths=settings.extra_paths,
                           numba_seed=settings.numba_cache)
    return SandboxWorker(spec, settings.exercise_modules, numba_seed=settings.numba_cache)


#: A challenge's facts kept when a row's details are too long to keep whole.
_CHALLENGE_KEPT = ("position", "position_low", "position_high", "tier", "straddles", "decided",
                   "judged", "rounds")


def _verdict_row(ex: ExerciseSpec, r: dict, seed: int, seconds: float) -> dict:
    passed = r.get("passed") is True
    try:
        frac = float(r.get("points", 0)) / float(r.get("max_points") or 0)
    except (TypeError, ValueError, ZeroDivisionError):
        frac = 1.0 if passed else 0.0
    pts = round(min(max(frac, 0.0), 1.0) * ex.points, 6) if passed else 0.0
    details = json.loads(json.dumps(r.get("details") or {}, default=str))
    verdict = str(r.get("verdict", "error"))
    message = str(r.get("message", ""))
    # how labkit's worker stopped the checker (labkit.check.runner.stopped_kind), never the wording
    stopped = details.get("stopped") if verdict == "error" else None
    text = json.dumps(details)
    if len(text) > 4 * MAX_MESSAGE:
        facts = details.get("challenge")
        details = {"truncated": _short(text, 4 * MAX_MESSAGE),
                   **({"stopped": stopped} if stopped else {}),
                   # what the re-measurement and the report read of a challenge (straddled())
                   **({"challenge": {k: facts.get(k) for k in _CHALLENGE_KEPT}}
                      if isinstance(facts, dict) else {})}
    extra = {}
    if stopped == "timeout":
        verdict = TIMED_OUT
    elif stopped == "load-timeout":
        # the checker's time loading the cell ran out: the student's function never ran, so
        # the check is run again alone after the batch, as one the notebook's time cut off
        verdict, extra = TIMED_OUT, {"never_ran": True}
    elif stopped == "crash":
        verdict = "crashed"
    row = _row(ex, verdict, message, pts, seed=seed, seconds=round(seconds, 2), details=details,
               **extra)
    if not passed:
        try:
            from labkit import hints
            row["hint"] = hints.pointer(ex.name)
        except Exception:  # noqa: BLE001 - no hints for this exercise
            pass
    return row


def grade_notebook(sub: Submission, canon: Canonical | None, settings: GradeSettings,
                   read_error: str | None = None, seed_build: str | None = None) -> dict:
    """Grade one submission; never raises for anything the submission does.
    (``seed_build``: see :func:`_worker`; only for the instructor's own solution notebooks.)"""
    t0 = time.monotonic()
    res: dict[str, Any] = {"student": sub.student, "notebook": sub.rel,
                           "canonical": canon.name if canon else None, "status": "graded",
                           "exercises": [], "flags": {}}
    student_nb, read_error = _open_notebook(sub, canon, settings, read_error, seed_build)
    if read_error is not None or canon is None:
        _not_graded(res, canon, read_error)
    else:
        try:
            found, missing, flags = read_exercises(canon, student_nb)
            res["flags"] = flags
            res["exercises"] = _run_checks(sub, canon, settings, seed_build, found, missing)
        except Exception as e:  # noqa: BLE001 - a grader bug must not stop the batch
            _grader_error(res, canon, e)
    res["duration_s"] = round(time.monotonic() - t0, 2)
    return res


def _open_notebook(sub: Submission, canon: Canonical | None, settings: GradeSettings,
                   read_error: str | None, seed_build: str | None) -> tuple[Any, str | None]:
    """``(notebook, read_error)``: the submission read (the instructor's own notebook when
    building a seed), or why it cannot be graded (refused, unreadable)."""
    student_nb = None
    if read_error is None and sub.refused:
        read_error = sub.refused
    if read_error is None and canon is not None and seed_build is not None:
        student_nb = canon.nb            # the instructor's own notebook (may be a link)
    elif read_error is None and canon is not None:
        try:
            student_nb = _read_submission(sub.path, settings.max_notebook_bytes)
        except ValueError as e:
            read_error = str(e)
        except Exception as e:  # noqa: BLE001 - whatever the file is, it is one row
            read_error = _unreadable(e)
    return student_nb, read_error


def _not_graded(res: dict, canon: Canonical | None, read_error: str | None) -> None:
    """Mark ``res`` unmatched, refused or unreadable: one row worth 0 that says why."""
    res["status"] = ("unmatched" if not read_error else REFUSED
                     if read_error.startswith(REFUSED + ":") else "unreadable")
    if read_error:
        res["error"] = _short(read_error)
    msg = read_error or ("cannot tell which lesson this notebook is: it shares no grade id, "
                         "exercise function or heading with a solution notebook")
    res["exercises"] = [{"exercise": "", "points": 0.0,
                         "max_points": canon.max_points if canon else 0.0,
                         "verdict": res["status"], "message": _short(msg)}]


def _run_checks(sub: Submission, canon: Canonical, settings: GradeSettings,
                seed_build: str | None, found: dict, missing: dict[str, str]) -> list[dict]:
    """One row per exercise: its check run in one worker for the notebook, within the
    notebook's time (an exercise left without time never ran), or why it has no cell."""
    rows = []
    deadline = time.monotonic() + settings.notebook_timeout
    graded = [ex for ex in canon.exercises if not (settings.only and ex.name not in settings.only)]
    runs = [ex.name for ex in graded if ex.name not in missing]
    with use_worker(_worker(settings, seed_build)):
        for ex in graded:
            if ex.name in missing:
                rows.append(_row(ex, "missing", missing[ex.name]))
                continue
            left = deadline - time.monotonic()
            if left <= 1:
                rows.append(_row(ex, TIMED_OUT, "the notebook's checks did not finish "
                                 f"within {settings.notebook_timeout:g} s; this one never "
                                 "ran", never_ran=True))
                continue
            t = time.monotonic()
            derived = _check_seed(settings, sub, ex)
            r, seed = run_exercise(ex, found[ex.name], min(settings.cell_timeout, left),
                                   last=ex.name == runs[-1],
                                   **({} if derived is None else {"seed": derived}))
            rows.append(_verdict_row(ex, r, seed, time.monotonic() - t))
    return rows


def _grader_error(res: dict, canon: Canonical, e: Exception) -> None:
    """Mark ``res`` a grader error: the exercises not yet graded are not run."""
    res["status"] = "grader error"
    res["error"] = _short(f"{type(e).__name__}: {e}")
    done = {r["exercise"] for r in res["exercises"]}
    res["exercises"] += [_row(ex, "not run", f"grader error: {res['error']}")
                         for ex in canon.exercises if ex.name not in done]


# ------------------------------------------------------------------ the batch
#: Verdicts that say the machine could not decide (a speed gate's interval straddled its target
#: while other work shared the cores): those checks run again after the batch, one at a time.
UNDECIDED = ("inconclusive",)
#: A check that ran out of time is run again alone too when the batch shared the machine
#: (parallel workers: a slow-but-honest kernel met their load) or never started (the notebook's
#: time was used up by its other checks): once, with its own cell timeout.
TIMED_OUT = "timed out"


#: Verdicts that judge speed alone (the function was right on every input): between two
#: measurements of a straddling challenge the better stands. Any other second verdict (``wrong``
#: on the second run's fresh inputs, ``error``, ``timed out``, …) is the code's and stands.
SPEED_OUTCOMES = ("passed", "not fast enough", "no change", "slower", "inconclusive")


def straddled(e: dict) -> bool:
    """A challenge row whose position interval still straddled the tier boundary above its median
    at the last round (:mod:`labkit.check.challenge` then gives the lower tier): the points
    below the next tier may be the machine's load, not the student's code."""
    facts = (e.get("details") or {}).get("challenge")
    return (isinstance(facts, dict) and facts.get("straddles") is True
            and facts.get("judged") is not False and facts.get("decided") is not False
            and float(e.get("points") or 0) < float(e.get("max_points") or 0))


def _undecided(res: dict, shared: bool = False) -> list[str]:
    """The checks of a graded notebook to run again alone (a tampered one keeps its zeros):
    undecided ones, challenges whose tier was given while their interval straddled a boundary,
    and timed-out ones that never ran or (``shared``) ran beside other work; each once."""
    if res.get("status") != "graded":
        return []
    return [e["exercise"] for e in res.get("exercises", ())
            if e.get("verdict") in UNDECIDED
            or (straddled(e) and not e.get("remeasured"))
            or (e.get("verdict") == TIMED_OUT and not e.get("remeasured") and
                (shared or e.get("never_ran")))]


def _merge_remeasured(res: dict, again: dict, names) -> dict:
    """``res`` with the rows of ``again`` for the checks ``names`` (run once more) in place of its
    own; its other rows stand, and so does a row the second run did not judge (``not run`` after
    a grader error, which lists every check). A straddling challenge keeps the **better** of its
    two measurements: load only ever slows code down, so the faster run is the nearer to the
    code's own speed — a second run that earns fewer points for its speed (or cannot decide)
    does not take away the first one's; one that finds the code wrong or broken does."""
    new = {e["exercise"]: e for e in again.get("exercises", ()) if e.get("verdict") != "not run"}
    for i, e in enumerate(res["exercises"]):
        r = new.get(e["exercise"])
        if r is None or e["exercise"] not in names:
            continue
        was = straddled(e)
        if was and r.get("verdict") in SPEED_OUTCOMES and \
                float(r.get("points") or 0) < float(e.get("points") or 0):
            kept = dict(e, remeasured=True)
            kept["message"] = _short(f"{e['message']} (measured again after the batch, alone on "
                                     f"the machine: {r['verdict']}, {_pts(r)} — the better "
                                     "measurement stands)")
            res["exercises"][i] = kept
            continue
        r = dict(r, remeasured=True)
        r["message"] = _short(f"{r['message']} (re-measured after the batch, alone on the "
                              f"machine: the first run was {e['verdict']}"
                              + (f", {_pts(e)}, its interval straddling a tier boundary"
                                 if was else "") + ")")
        res["exercises"][i] = r
    return res


def _pts(e: dict) -> str:
    return f"{float(e.get('points') or 0):g} of {float(e.get('max_points') or 0):g} points"


def _check_seed(settings: GradeSettings, sub: Submission, ex: ExerciseSpec) -> int | None:
    """The seed of one check: ``None`` (a fresh secret one) unless the run has a class seed
    (``--seed``, :mod:`.shard`), from which each check's is derived (HMAC of the student, the
    notebook and the exercise): shards and workers then draw the same inputs as one run."""
    if settings.seed is None:
        return None
    import hmac
    msg = "\0".join((sub.student, sub.rel, ex.name)).encode("utf-8", "surrogateescape")
    d = hmac.new(str(settings.seed).encode(), msg, hashlib.sha256).digest()
    return int.from_bytes(d[:8], "big") >> 2


def _grade_task(args) -> dict:
    sub, canon, settings, read_error, *seed_build = args
    sys.dont_write_bytecode = True
    import importlib
    for mod in settings.exercise_modules:      # a spawned process registers them again
        try:
            importlib.import_module(mod)
        except Exception:  # noqa: BLE001 - the check then says the exercise is unknown
            pass
    return grade_notebook(sub, canon, settings, read_error, *seed_build)


def _not_run(sub: Submission, canon: Canonical | None, why: str) -> dict:
    exercises = canon.exercises if canon else []
    rows_ = [_row(ex, "not run", why) for ex in exercises] or [
        {"exercise": "", "points": 0.0, "max_points": 0.0, "verdict": "not run",
         "message": _short(why)}]
    return {"student": sub.student, "notebook": sub.rel,
            "canonical": canon.name if canon else None, "status": "grader error",
            "error": _short(why), "exercises": rows_, "flags": {}}


def _tampered(res: dict, changed: list[str], unrestored: list[str] | None, when: str) -> None:
    """Zero the submission, flag it; the batch goes on (``unrestored``: files that could not
    be put back; ``None``: nothing was put back)."""
    shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    res["status"] = "tampered"
    res["error"] = (f"files of the installed labkit changed {when}: {shown}"
                    + ("" if unrestored is None else "; restored from the grader's snapshot"
                       if not unrestored else f"; COULD NOT restore {', '.join(unrestored[:3])}"))
    for e in res["exercises"]:
        if e.get("exercise"):
            e["points"] = 0.0
            e["message"] = _short("points withheld: labkit was changed on disk while this "
                                  "notebook was graded; " + e.get("message", ""))
    res.setdefault("flags", {}).setdefault("", []).append("tampered: " + res["error"])

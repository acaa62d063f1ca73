"""Grading: one submission (its exercise cells read statically, each check run by labkit's
trusted worker inside this submission's sandbox) and a batch of them (tamper check before and
after each, cached results, duplicates resolved, in parallel, with a progress bar and ETA)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .build import read_exercises
from .checkcell import _resolve_modules, run_exercise, use_worker
from .integrity import Snapshot, _module_root
from .report import LOAD_TIMEOUT, mark_review
from .notebooks import (Canonical, ExerciseSpec, Submission, _read_submission, find_submissions,
                        load_solutions, match_canonical)
from .settings import (CELL_TIMEOUT, MAX_MESSAGE, MAX_NOTEBOOK_BYTES, MEMORY_LIMIT,
                       NOTEBOOK_TIMEOUT, REFUSED, GradeSettings, _short)

__all__ = ["grade_notebook", "grade", "environment_stamp", "SandboxUnavailable"]

CACHE_VERSION = 2
#: the flag of every row graded with --no-sandbox
UNSANDBOXED = ("graded WITHOUT the sandbox (--no-sandbox): this submission's code ran with the "
               "grader's rights")
SEED_MIN = 3            # submissions of one lab from which its kernels are compiled up front


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


def _verdict_row(ex: ExerciseSpec, r: dict, seed: int, seconds: float) -> dict:
    passed = r.get("passed") is True
    try:
        frac = float(r.get("points", 0)) / float(r.get("max_points") or 0)
    except (TypeError, ValueError, ZeroDivisionError):
        frac = 1.0 if passed else 0.0
    pts = round(min(max(frac, 0.0), 1.0) * ex.points, 6) if passed else 0.0
    details = json.loads(json.dumps(r.get("details") or {}, default=str))
    text = json.dumps(details)
    if len(text) > 4 * MAX_MESSAGE:
        details = {"truncated": _short(text, 4 * MAX_MESSAGE)}
    verdict = str(r.get("verdict", "error"))
    message = str(r.get("message", ""))
    extra = {}
    if verdict == "error" and "did not return within" in message:
        verdict = TIMED_OUT
    elif verdict == "error" and LOAD_TIMEOUT.search(message):
        # the checker's time loading the cell ran out: the student's function never ran, so
        # the check is run again alone after the batch, as one the notebook's time cut off
        verdict, extra = TIMED_OUT, {"never_ran": True}
    elif verdict == "error" and ("crashed the checker" in message or "ended the checker" in message):
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
    if read_error is not None or canon is None:
        res["status"] = ("unmatched" if not read_error else REFUSED
                         if read_error.startswith(REFUSED + ":") else "unreadable")
        if read_error:
            res["error"] = _short(read_error)
        msg = read_error or ("cannot tell which lesson this notebook is: it shares no grade id, "
                             "exercise function or heading with a solution notebook")
        res["exercises"] = [{"exercise": "", "points": 0.0,
                             "max_points": canon.max_points if canon else 0.0,
                             "verdict": res["status"], "message": _short(msg)}]
        res["duration_s"] = round(time.monotonic() - t0, 2)
        return res
    try:
        found, missing, flags = read_exercises(canon, student_nb)
        res["flags"] = flags
        rows = []
        deadline = time.monotonic() + settings.notebook_timeout
        with use_worker(_worker(settings, seed_build)):
            for ex in canon.exercises:
                if settings.only and ex.name not in settings.only:
                    continue
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
                                       **({} if derived is None else {"seed": derived}))
                rows.append(_verdict_row(ex, r, seed, time.monotonic() - t))
        res["exercises"] = rows
    except Exception as e:  # noqa: BLE001 - a grader bug must not stop the batch
        res["status"] = "grader error"
        res["error"] = _short(f"{type(e).__name__}: {e}")
        done = {r["exercise"] for r in res["exercises"]}
        res["exercises"] += [_row(ex, "not run", f"grader error: {res['error']}")
                             for ex in canon.exercises if ex.name not in done]
    res["duration_s"] = round(time.monotonic() - t0, 2)
    return res


# ------------------------------------------------------------------ the batch
#: Verdicts that say the machine could not decide (a speed gate's interval straddled its target
#: while other work shared the cores): those checks run again after the batch, one at a time.
UNDECIDED = ("inconclusive",)
#: A check that ran out of time is run again alone too when the batch shared the machine
#: (parallel workers: a slow-but-honest kernel met their load) or never started (the notebook's
#: time was used up by its other checks): once, with its own cell timeout.
TIMED_OUT = "timed out"


def _undecided(res: dict, shared: bool = False) -> list[str]:
    """The checks of a graded notebook to run again alone (a tampered one keeps its zeros):
    undecided ones, and timed-out ones that never ran or (``shared``) ran beside other work."""
    if res.get("status") != "graded":
        return []
    return [e["exercise"] for e in res.get("exercises", ())
            if e.get("verdict") in UNDECIDED or (e.get("verdict") == TIMED_OUT and not
                                                 e.get("remeasured") and
                                                 (shared or e.get("never_ran")))]


def _merge_remeasured(res: dict, again: dict, names) -> dict:
    """``res`` with the rows of ``again`` for the checks ``names`` (run once more) in place of its
    own; its other rows stand, and so does a row the second run did not judge (``not run`` after
    a grader error, which lists every check)."""
    new = {e["exercise"]: e for e in again.get("exercises", ()) if e.get("verdict") != "not run"}
    for i, e in enumerate(res["exercises"]):
        r = new.get(e["exercise"])
        if r is not None and e["exercise"] in names:
            r = dict(r, remeasured=True)
            r["message"] = _short(f"{r['message']} (re-measured after the batch, alone on the "
                                  f"machine: the first run was {e['verdict']})")
            res["exercises"][i] = r
    return res


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


# ------------------------------------------------------------------ the numba cache seed
def _is_labkit_lab(canon: Canonical) -> bool:
    """Whether the notebook's checks are labkit's own labs' (their references are labkit's
    ``cache=True`` kernels, seconds to compile; an extra exercise module's are not)."""
    try:
        from labkit import check, registry
        labs = registry.modules()
        for ex in canon.exercises:
            mod = check.get(ex.name).module
            if any(mod == m or mod.startswith(m + ".") for m in labs):
                return True
    except Exception:  # noqa: BLE001 - unknown exercise: no seed, the lab compiles as before
        pass
    return False


SEED_VERSION = 1
SEED_DIR = "numba-seed"          # in the grading cache folder: the last run's seed, kept


def _seed_key(canons: list[Canonical], settings: GradeSettings, digest: str, stamp: dict) -> str:
    """What a seed's compiled code depends on: the solution notebooks it graded, labkit's and
    the exercise modules' contents (``digest``), the stamps numba keys its cache on (labkit's
    source files' mtime and size), the machine and versions, the switches that change code."""
    from labkit import warm
    h = hashlib.sha256()
    for c in sorted(canons, key=lambda c: c.name):
        h.update(c.name.encode() + b"\0" + c.path.read_bytes())
    stamps = sorted((str(f.relative_to(warm.PACKAGE)), st.st_mtime_ns, st.st_size)
                    for f in warm.PACKAGE.rglob("*.py") for st in (f.stat(),))
    h.update(json.dumps([SEED_VERSION, digest, stamp, stamps, sys.executable,
                         list(settings.exercise_modules),
                         {k: os.environ.get(k) for k in warm._ENV_KEYS}]).encode())
    return h.hexdigest()[:24]


def _kept_seed(cache: Path | None, canons: list[Canonical], settings: GradeSettings,
               digest: str, stamp: dict) -> tuple[Path | None, bool]:
    """(the folder a seed for this run is kept in, whether it is there already). Only for
    sandboxed runs with a cache folder: without the sandbox a submission could write into a
    kept seed, and the next run's workers would load its code."""
    if cache is None or not canons or not settings.sandbox:
        return None, False
    try:
        home = cache / SEED_DIR / _seed_key(canons, settings, digest, stamp)
    except OSError:
        return None, False
    return home, (home / "numba-cache" / ".complete").is_file()


def _keep_seed(seed: str, home: Path) -> str:
    """Move a freshly built seed (``seed``'s 0700 parent) to ``home``, replacing the seeds of
    earlier runs; the seed's new path (the old one when it cannot be moved)."""
    import shutil
    try:
        Path(seed, ".complete").touch()
        root = home.parent
        root.mkdir(parents=True, exist_ok=True)
        os.chmod(root, 0o700)
        for old in root.iterdir():
            if old != home:
                shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
        if os.stat(seed).st_dev == os.stat(root).st_dev:
            os.replace(os.path.dirname(seed), home)
        else:
            shutil.copytree(os.path.dirname(seed), home)
            shutil.rmtree(os.path.dirname(seed), ignore_errors=True)
        os.chmod(home, 0o700)
        return str(home / "numba-cache")
    except OSError:
        return seed


def _build_seed(canons: list[Canonical], settings: GradeSettings, jobs: int,
                progress: bool) -> str | None:
    """A warm numba cache for grading ``canons``' submissions: each canonical (solution)
    notebook graded once, unsandboxed (only labkit and the instructor's solution cells run),
    its worker compiling labkit's kernels into a fresh folder of the grader's. Every worker then
    starts from a private copy (:func:`_worker`) instead of compiling them again. The folder
    sits inside a 0700 one (no other user of the host reaches it); in the sandbox it is bound
    read-only, so it is world-readable itself. No lab to seed: ``None`` in the sandbox (each
    worker's tmpfs cache starts empty), an empty folder without it (each worker's private copy
    keeps its cache out of labkit's folder and away from the other submissions)."""
    if not canons and settings.sandbox:
        return None
    parent = tempfile.mkdtemp(prefix="labkit-grade-seed-")
    seed = os.path.join(parent, "numba-cache")
    os.mkdir(seed)
    if not canons:
        return seed
    t0 = time.monotonic()
    if progress:
        print(f"grading: compiling labkit's kernels once for "
              f"{', '.join(c.name for c in canons)} (from the solutions) …", file=sys.stderr,
              flush=True)
    tasks = [(Submission("(seed)", c.path, c.path.name), c, settings, None, seed)
             for c in canons]
    if jobs == 1 or len(tasks) == 1:
        for t in tasks:
            _grade_task(t)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)),
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_grade_task, tasks))
    from .sandbox import share_seed
    share_seed(seed)
    if progress:
        print(f"grading: numba cache warm in {time.monotonic() - t0:.0f} s", file=sys.stderr,
              flush=True)
    return seed


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


def _cache_key(sub: Submission, canon: Canonical | None, settings: GradeSettings,
               digest: str) -> str | None:
    if sub.refused or sub.path.is_dir():
        return None
    h = hashlib.sha256()
    try:
        h.update(sub.path.read_bytes())
        if canon is not None:
            h.update(canon.path.read_bytes())
    except OSError:
        return None
    h.update(json.dumps([CACHE_VERSION, digest, canon.name if canon else None, sub.student,
                         sub.rel, settings.cell_timeout, settings.notebook_timeout,
                         settings.memory_limit, settings.sandbox,
                         list(settings.exercise_modules)]
                        + ([] if settings.seed is None else [_seed_id(settings.seed)])).encode())
    return h.hexdigest()


def _seed_id(seed) -> str:
    """What a class seed is told by in the JSON and the cache (not the seed itself)."""
    return hashlib.sha256(f"labkit-grade-seed\0{seed}".encode()).hexdigest()[:16]


def _points(r: dict) -> float:
    return sum(float(e["points"]) for e in r["exercises"])


def _undo_dedupe(results: list[dict]) -> None:
    """Every copy :func:`_dedupe` set aside back to its own status, its flag removed (a
    ``duplicate`` without ``duplicate_status`` — an older run's JSON — stays set aside)."""
    for r in results:
        if r.get("status") == "duplicate" and "duplicate_status" in r:
            r["status"] = r.pop("duplicate_status")
            r.pop("duplicate_of", None)
        note = r.pop("copies_flag", None)
        kept = r.get("flags", {}).get("", [])
        if note in kept:
            kept.remove(note)
            if not kept:
                del r["flags"][""]


def _dedupe(results: list[dict], key=None, why: str = "best score") -> None:
    """Several copies of one lab from one student: one copy counts, flagged; the others get
    status ``duplicate`` (kept in the JSON with their own status in ``duplicate_status``, left
    out of the CSVs). ``key(r)``: what the counting copy maximises (the first of equal ones
    counts); default its points, then a graded copy, then the shorter file name. ``why`` names
    it in the flag. Called again (``labkit grade --course`` chooses after the late penalty,
    :func:`labkit.grade.course.choose_copies`), it first undoes its earlier choice."""
    _undo_dedupe(results)
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        if r.get("canonical") and r.get("status") not in ("unreadable", "unmatched", REFUSED,
                                                          "duplicate"):
            groups.setdefault((r["student"], r["canonical"]), []).append(r)
    if key is None:
        key = lambda r: (_points(r), r.get("status") == "graded", -len(r["notebook"]))  # noqa: E731
    for (_, lab), rs in groups.items():
        if len(rs) < 2:
            continue
        best = max(rs, key=key)
        others = [r for r in rs if r is not best]
        flag = (f"{len(rs)} copies of {lab}: {best['notebook']} counts ({why}); also "
                + ", ".join(f"{r['notebook']} ({_points(r):g} pt)" for r in others))
        best.setdefault("flags", {}).setdefault("", []).append(flag)
        best["copies_flag"] = flag
        for r in others:
            r["duplicate_status"] = r["status"]
            r["status"] = "duplicate"
            r["duplicate_of"] = best["notebook"]


def grade(folder, *, solutions=None, jobs: int = 1, cell_timeout: float = CELL_TIMEOUT,
          notebook_timeout: float = NOTEBOOK_TIMEOUT, memory_limit: int = MEMORY_LIMIT,
          exercise_modules=(), progress: bool = True, sandbox: bool = True,
          cache_dir=None, max_notebook_bytes: int = MAX_NOTEBOOK_BYTES, seed=None,
          submissions=None, runner=None) -> list[dict]:
    """Grade every submission in ``folder``; returns one result dict per notebook.

    ``sandbox=False`` (``--no-sandbox``) runs the checks without a sandbox; otherwise a
    missing sandbox raises :class:`SandboxUnavailable`. ``cache_dir``: where results are kept
    for incremental regrading (unchanged submission + unchanged labkit → cached result);
    ``None`` = no cache.
    ``max_notebook_bytes``: a bigger submission is refused unread (0 = no limit).
    ``seed``: a class seed every check's seed is derived from (``None``: fresh secret seeds).
    ``submissions``: grade only these (of ``find_submissions(folder)``: a shard, :mod:`.shard`).
    ``runner``: grades the submissions elsewhere (:class:`.cluster.DaskRunner`)."""
    if cell_timeout <= 0 or notebook_timeout <= 0:
        raise ValueError("timeouts must be positive numbers of seconds")
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    if max_notebook_bytes < 0:
        raise ValueError(f"max_notebook_bytes must be ≥ 0, got {max_notebook_bytes}")
    if sandbox:
        from .sandbox import probe
        ok, why = probe()
        if not ok:
            raise SandboxUnavailable(
                f"no sandbox for student code: {why}. Refusing to grade; install bubblewrap "
                "(Debian: apt-get install bubblewrap) or pass --no-sandbox in a throwaway "
                "environment")
    else:
        from .sandbox import NO_SANDBOX_WARNING
        print("\n" + "!" * 78 + "\n" + NO_SANDBOX_WARNING + "\n" + "!" * 78 + "\n",
              file=sys.stderr)
    # the grader (and the processes it spawns) adds nothing to labkit's folder: no .pyc
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    canon = load_solutions(solutions)
    subs = find_submissions(folder) if submissions is None else list(submissions)
    exercise_modules = tuple(exercise_modules)
    extra_paths = []
    for m in exercise_modules:
        root = _module_root(m)
        if root is not None:
            extra_paths.append(str(root.parent))
    settings = GradeSettings(cell_timeout=float(cell_timeout),
                             notebook_timeout=float(notebook_timeout),
                             memory_limit=int(memory_limit),
                             max_notebook_bytes=int(max_notebook_bytes),
                             exercise_modules=exercise_modules, sandbox=bool(sandbox),
                             extra_paths=tuple(dict.fromkeys(extra_paths)),
                             seed=None if seed is None else str(seed))
    tasks = [(sub, c, settings, err) for sub in subs
             for c, err in [_read_and_match(sub, canon, settings)]]
    broken: dict[str, str] = {}          # a lab whose exercises labkit cannot find: its rows say
    for c in {t[1].name: t[1] for t in tasks if t[1] is not None}.values():
        try:
            _resolve_modules(c, exercise_modules)
        except ValueError as e:
            broken[c.name] = str(e)
    stamp = environment_stamp()          # before the snapshot: it may compile (numba cache)
    snap = Snapshot(exercise_modules)
    cache = Path(cache_dir) if cache_dir else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    keys = [(_cache_key(t[0], t[1], settings, snap.digest) if cache and t[3] is None else None)
            for t in tasks]
    results: list[dict | None] = [None] * len(tasks)
    todo = []
    for k, key in enumerate(keys):
        c = tasks[k][1]
        if c is not None and c.name in broken and tasks[k][3] is None:
            results[k] = _not_run(tasks[k][0], c, f"cannot grade this lab: {broken[c.name]}")
            results[k]["environment"] = stamp
            continue
        hit = cache / f"{key}.json" if key else None
        if hit is not None and hit.is_file():
            try:
                results[k] = json.loads(hit.read_text(encoding="utf-8"))
                results[k]["cached"] = True
                continue
            except (OSError, ValueError):
                pass
        todo.append(k)
    # labs with ≥ SEED_MIN submissions to grade: compile their kernels once, not once per
    # submission (the seed costs about one submission of that lab: fewer do not gain)
    per_lab: dict[str, list] = {}
    for k in todo:
        if tasks[k][1] is not None:
            per_lab.setdefault(tasks[k][1].name, []).append(tasks[k][1])
    seeds = [cs[0] for cs in per_lab.values() if len(cs) >= SEED_MIN and _is_labkit_lab(cs[0])]
    home, kept = _kept_seed(cache, seeds, settings, snap.digest, stamp)
    if runner is not None:    # its workers build their own seeds (another machine's paths)
        home, settings.numba_cache = None, None
    elif kept:                  # the same labs, labkit and machine as a kept seed: no compiling
        settings.numba_cache = str(home / "numba-cache")
        if progress:
            print("grading: numba cache warm (kept from the last run)", file=sys.stderr,
                  flush=True)
    else:
        settings.numba_cache = _build_seed(seeds, settings, jobs, progress)
        if home is not None and settings.numba_cache:
            settings.numba_cache = _keep_seed(settings.numba_cache, home)

    shared = not (jobs == 1 or len(todo) <= 1)       # notebooks graded side by side
    if runner is not None:
        shared = runner.shared and len(todo) > 1

    def undo(changed: list[str]) -> list[str] | None:
        # Without the sandbox a submission can write labkit's files: put them back so the
        # next student meets an intact labkit. In the sandbox labkit is read-only to student
        # code, so a change came from outside the grading (an admin, an editor): flagged, but
        # the files are left as they are.
        return None if settings.sandbox else snap.restore(changed)

    def finish(k: int, res: dict, before: list[str]) -> None:
        changed = snap.changes()
        if before or changed:
            both = sorted(set(before) | set(changed))
            _tampered(res, both, undo(both),
                      "while this notebook was graded" if changed else
                      "before this notebook was graded (a process left by an earlier one?)")
            if settings.sandbox:
                snap.rebase()
        if not settings.sandbox:                  # loud on every row, not only on stderr
            fl = res.setdefault("flags", {}).setdefault("", [])
            if UNSANDBOXED not in fl:
                fl.insert(0, UNSANDBOXED)
        res.setdefault("environment", stamp)      # a remote worker's own stamp stays
        results[k] = res
        if keys[k] and res["status"] in ("graded",) and not _undecided(res, shared):
            try:
                (cache / f"{keys[k]}.json").write_text(json.dumps(res, default=str),
                                                        encoding="utf-8")
            except OSError:
                pass

    def one_by_one(k: int, task: tuple, merge=None) -> None:
        # in this process, one notebook at a time: an earlier one's leftovers undone first
        before = snap.changes()
        if before:
            undo(before)
        res = _grade_task(task)
        if merge is not None:
            res = merge(res)
        finish(k, res, before)

    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc="grading", unit="nb",
               disable=not progress, file=sys.stderr)
    try:
        if runner is not None:
            for k, res in runner.map({k: tasks[k] for k in todo}):
                finish(k, res, [])
                bar.update()
        elif not shared:
            for k in todo:
                bar.set_postfix_str(tasks[k][0].student[:20])
                one_by_one(k, tasks[k])
                bar.update()
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                futs = {pool.submit(_grade_task, tasks[k]): k for k in todo}
                for f in as_completed(futs):
                    k = futs[f]
                    try:
                        res = f.result()
                    except Exception as e:  # noqa: BLE001 - a worker died: record, go on
                        res = _not_run(tasks[k][0], tasks[k][1],
                                       f"the grader's worker process failed: "
                                       f"{type(e).__name__}: {e}")
                    finish(k, res, [])
                    bar.update()
        # checks the machine could not decide, once more, one at a time (nothing else of the
        # grader's runs beside them); the batch's other results stand
        for k in [k for k in todo if results[k] is not None and _undecided(results[k], shared)]:
            bar.set_postfix_str(f"re-measuring {tasks[k][0].student[:16]}")
            sub, canon, st, err = tasks[k]
            first = results[k]
            names = tuple(_undecided(first, shared))
            task = (sub, canon, dataclasses.replace(st, only=names), err)
            if runner is not None:
                finish(k, _merge_remeasured(first, runner.again(task, first), names), [])
                continue
            one_by_one(k, task, merge=lambda again, first=first, names=names:
                       _merge_remeasured(first, again, names))
    finally:
        bar.close()
        seed = settings.numba_cache
        if seed and (home is None or Path(seed).parent != home):   # a kept seed stays
            import shutil
            shutil.rmtree(os.path.dirname(seed), ignore_errors=True)
    out = [r for r in results if r is not None]
    _dedupe(out)
    return mark_review(out)      # final rows (after the re-measurement): review True/False


"""Grading: one notebook (execute, replay after a crash, verdict per exercise, tamper check)
and a batch of them (in parallel, with a progress bar)."""
from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .build import _Plan, build_notebook
from .checkcell import _parse_result, _resolve_modules
from .integrity import _package_digest
from .kernel import _Session
from .notebooks import (Canonical, ExerciseSpec, Submission, _read_submission, find_submissions,
                        load_solutions, match_canonical)
from .settings import (CELL_TIMEOUT, MAX_MESSAGE, MAX_RESTARTS, MEMORY_LIMIT, NOTEBOOK_TIMEOUT,
                       GradeSettings, _short)

__all__ = ["grade_notebook", "grade"]


def _row(ex: ExerciseSpec, verdict: str, message: str, points: float = 0.0, **extra) -> dict:
    return {"exercise": ex.name, "points": points, "max_points": ex.points, "verdict": verdict,
            "message": _short(message), **extra}


def grade_notebook(sub: Submission, canon: Canonical | None, settings: GradeSettings,
                   read_error: str | None = None) -> dict:
    """Grade one submission; never raises for anything the submission does."""
    t0 = time.monotonic()
    res: dict[str, Any] = {"student": sub.student, "notebook": sub.rel,
                           "canonical": canon.name if canon else None, "status": "graded",
                           "exercises": [], "cells": [], "flags": {}, "kernel_restarts": 0}
    if read_error is None and canon is not None:
        try:
            student_nb = _read_submission(sub.path)
        except ValueError as e:
            read_error = str(e)
    if read_error is not None or canon is None:
        res["status"] = "unreadable" if read_error else "unmatched"
        msg = read_error or ("cannot tell which lesson this notebook is: no labkit metadata, "
                             "file name or grade ids match a solution notebook")
        res["exercises"] = [{"exercise": "", "points": 0.0,
                             "max_points": canon.max_points if canon else 0.0,
                             "verdict": res["status"], "message": _short(msg)}]
        res["duration_s"] = round(time.monotonic() - t0, 2)
        return res
    try:
        _execute(sub, canon, student_nb, settings, res)
    except Exception as e:  # noqa: BLE001 - a grader bug must not stop the batch
        res["status"] = "grader error"
        res["error"] = _short(f"{type(e).__name__}: {e}")
        done = {r["exercise"] for r in res["exercises"]}
        res["exercises"] += [_row(ex, "not run", f"grader error: {res['error']}")
                             for ex in canon.exercises if ex.name not in done]
    order = {ex.name: k for k, ex in enumerate(canon.exercises)}
    res["exercises"].sort(key=lambda r: order.get(r["exercise"], len(order)))
    if settings.digest:
        now = _package_digest(settings.digest_modules)
        changed = sorted(set(now) ^ set(settings.digest) |
                         {f for f in now if settings.digest.get(f) != now[f]})
        if changed:
            res["status"] = "tampered"
            res["error"] = ("files that grading trusts changed on disk while this notebook ran: "
                            + ", ".join(changed))
    res["duration_s"] = round(time.monotonic() - t0, 2)
    return res


def _execute(sub, canon, student_nb, settings, res) -> None:
    nb, plan, pre = build_notebook(canon, student_nb, skip_tags=settings.skip_tags)
    res["flags"] = pre["flags"]
    specs = {ex.name: ex for ex in canon.exercises}
    final: dict[str, dict] = {}
    for name, why in pre["missing"].items():
        final[name] = _row(specs[name], "missing", why)
    deadline = time.monotonic() + settings.notebook_timeout
    workdir = Path(tempfile.mkdtemp(prefix="labkit-grade-"))
    session = _Session(nb, plan, workdir, settings)
    done: list[int] = []           # cells run so far (replayed after a restart)
    bad: set[int] = set()          # cells never to run again (they hung or killed the kernel)
    log = res["cells"]
    sol_errors: dict[str, str] = {}   # exercise → error raised by the student's exercise cell
    poisoned: set[str] = set()     # student functions that hung or crashed: cells using them skip

    def restart() -> bool:
        while session.restarts < MAX_RESTARTS:
            session.stop()
            session.restarts += 1
            session.start()
            ok = True
            for j in done:
                if j in bad:
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                st, detail = session.run(j, min(settings.cell_timeout, left))
                if st in ("timeout", "dead"):
                    bad.add(j)
                    log.append({"cell": j, "replay": True, "status": st, "detail": _short(detail)})
                    ok = False
                    break
            if ok:
                return True
        return False

    try:
        session.start()
        alive = True
        for i, p in enumerate(plan):
            if p.kind == "skip" or not nb.cells[i].source.strip():
                continue
            if p.kind == "check" and p.exercise in final:
                continue
            if p.kind == "code":
                hit = [f for f in poisoned if re.search(rf"\b{re.escape(f)}\b", nb.cells[i].source)]
                if hit:
                    log.append({"cell": i, "kind": "code", "status": "skipped",
                                "detail": f"uses {hit[0]}, which already hung or crashed"})
                    continue
            left = deadline - time.monotonic()
            if left <= 0 or not alive:
                break
            t = time.monotonic()
            status, detail = session.run(i, min(settings.cell_timeout, left))
            entry = {"cell": i, "kind": p.kind, "exercise": p.exercise, "status": status,
                     "seconds": round(time.monotonic() - t, 2)}
            if status == "dead":
                detail += (": " + session.kernel_log()) if session.kernel_log() else ""
            if detail:
                entry["detail"] = _short(detail)
            log.append(entry)
            ex = specs.get(p.exercise) if p.exercise else None
            if status in ("ok", "error"):
                if p.kind != "check":
                    done.append(i)
                elif ex is not None:
                    r = _parse_result(nb.cells[i], p)
                    final[ex.name] = _verdict_row(ex, r, p, i in session.client.truncated)
                    if ex.name in sol_errors and final[ex.name]["verdict"] != "passed":
                        final[ex.name]["message"] = _short(
                            f"your exercise cell failed ({sol_errors[ex.name]}); "
                            + final[ex.name]["message"])
                if status == "error" and p.kind == "solution" and ex is not None:
                    sol_errors[ex.name] = _short(detail, 200)
                continue
            bad.add(i)
            if ex is not None and ex.fn_src.isidentifier():
                poisoned.add(ex.fn_src)
            where = "the check" if p.kind == "check" else f"exercise cell ex-{p.exercise}"
            if status == "timeout":
                if ex is not None and ex.name not in final:
                    final[ex.name] = _row(ex, "timed out", f"{where} did not finish within "
                                          f"{session.client.timeout} s (infinite loop or far "
                                          "too slow?)", seed=p.seed)
                if session.responsive():
                    continue
                log.append({"cell": i, "status": "stuck", "detail": "kernel did not answer the "
                            "interrupt; restarting it and replaying earlier cells"})
            else:
                if ex is not None and ex.name not in final:
                    lim = (f"; memory limit {settings.memory_limit / 2**30:g} GiB"
                           if settings.memory_limit else "")
                    final[ex.name] = _row(ex, "crashed", f"the kernel died while running {where} "
                                          f"(segfault, os._exit or out of memory{lim}); it was "
                                          "restarted and grading went on", seed=p.seed)
            alive = restart()
            res["kernel_restarts"] = session.restarts
    finally:
        session.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    res["kernel_restarts"] = session.restarts
    over = time.monotonic() >= deadline
    for ex in canon.exercises:
        if ex.name not in final:
            if over:
                final[ex.name] = _row(ex, "timed out", "the notebook did not finish within "
                                      f"{settings.notebook_timeout:g} s; this check never ran")
            else:
                final[ex.name] = _row(ex, "not run", f"the kernel kept dying or hanging "
                                      f"({session.restarts} restarts); this check never ran")
    res["exercises"] = list(final.values())
    if session.truncated:
        res["truncated_output_cells"] = sorted(session.truncated)


def _verdict_row(ex: ExerciseSpec, r: dict | None, p: _Plan, truncated: bool) -> dict:
    if r is None:
        why = ("the grader's check printed no verified result (output redirected, or the check "
               "was interrupted)" + ("; output was truncated" if truncated else ""))
        return _row(ex, "no result", why, seed=p.seed)
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
    return _row(ex, str(r.get("verdict", "error")), str(r.get("message", "")), pts, seed=p.seed,
                details=details)


# ------------------------------------------------------------------ the batch
def _grade_task(args) -> dict:
    sub, canon, settings, read_error = args
    return grade_notebook(sub, canon, settings, read_error)


def _not_run(sub: Submission, canon: Canonical | None, why: str) -> dict:
    exercises = canon.exercises if canon else []
    rows_ = [_row(ex, "not run", why) for ex in exercises] or [
        {"exercise": "", "points": 0.0, "max_points": 0.0, "verdict": "not run",
         "message": _short(why)}]
    return {"student": sub.student, "notebook": sub.rel,
            "canonical": canon.name if canon else None, "status": "grader error",
            "error": _short(why), "exercises": rows_, "cells": [], "flags": {},
            "kernel_restarts": 0}


def grade(folder, *, solutions=None, jobs: int = 1, cell_timeout: float = CELL_TIMEOUT,
          notebook_timeout: float = NOTEBOOK_TIMEOUT, memory_limit: int = MEMORY_LIMIT,
          skip_tags=(), exercise_modules=(), progress: bool = True) -> list[dict]:
    """Grade every submission in ``folder``; returns one result dict per notebook."""
    if cell_timeout <= 0 or notebook_timeout <= 0:
        raise ValueError("timeouts must be positive numbers of seconds")
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    canon = load_solutions(solutions)
    subs = find_submissions(folder)
    exercise_modules = tuple(exercise_modules)
    settings = GradeSettings(cell_timeout=float(cell_timeout),
                             notebook_timeout=float(notebook_timeout),
                             memory_limit=int(memory_limit), skip_tags=tuple(skip_tags),
                             exercise_modules=exercise_modules)
    tasks = []
    resolved: set[str] = set()
    for sub in subs:
        try:
            nb, err = _read_submission(sub.path), None
        except ValueError as e:
            nb, err = None, str(e)
        c = match_canonical(nb, sub.path, canon) if not sub.path.is_dir() else None
        if c is not None and c.name not in resolved:
            _resolve_modules(c, exercise_modules)
            resolved.add(c.name)
        tasks.append((sub, c, settings, err))
    used = {ex.module for t in tasks if t[1] is not None for ex in t[1].exercises if ex.module}
    settings.digest_modules = tuple(sorted(used | set(exercise_modules)))
    settings.digest = _package_digest(settings.digest_modules)
    from tqdm.auto import tqdm

    results: list[dict | None] = [None] * len(tasks)
    bar = tqdm(total=len(tasks), desc="grading", unit="nb", disable=not progress,
               file=sys.stderr)
    try:
        if jobs == 1 or len(tasks) <= 1:
            for k, t in enumerate(tasks):
                bar.set_postfix_str(t[0].student[:20])
                results[k] = _grade_task(t)
                bar.update()
                if results[k]["status"] == "tampered":
                    break
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                futs = {pool.submit(_grade_task, t): k for k, t in enumerate(tasks)}
                for f in as_completed(futs):
                    k = futs[f]
                    try:
                        results[k] = f.result()
                    except Exception as e:  # noqa: BLE001 - a worker died: record, go on
                        results[k] = _not_run(tasks[k][0], tasks[k][1],
                                              f"the grader's worker process failed: "
                                              f"{type(e).__name__}: {e}")
                    bar.update()
                    if results[k]["status"] == "tampered":
                        for other in futs:
                            other.cancel()
                        break
    finally:
        bar.close()
    return [r for r in results if r is not None]

"""Grading a batch of submissions (:func:`grade`): each read and matched to its lab's solution,
labkit's files checked for tampering before and after each, results kept for the next run, the
kernels compiled once (:mod:`.seed`), notebooks graded side by side with a progress bar, the
checks the machine could not decide graded again alone, duplicate copies resolved."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path

from .checkcell import _resolve_modules
from .integrity import Snapshot, _module_root
from .notebooks import Canonical, Submission, find_submissions, load_solutions
from .report import mark_review
from .run import (SandboxUnavailable, _grade_task, _merge_remeasured, _not_run, _read_and_match,
                  _tampered, _undecided, environment_stamp)
from .seed import SEED_MIN, _build_seed, _is_labkit_lab, _keep_seed, _kept_seed
from .settings import (CELL_TIMEOUT, MAX_NOTEBOOK_BYTES, MEMORY_LIMIT, NOTEBOOK_TIMEOUT, REFUSED,
                       GradeSettings)

__all__ = ["grade"]

CACHE_VERSION = 2
#: the flag of every row graded with --no-sandbox
UNSANDBOXED = ("graded WITHOUT the sandbox (--no-sandbox): this submission's code ran with the "
               "grader's rights")



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
    ``runner``: grades the submissions elsewhere (:class:`.cluster.DaskRunner`).

    The steps: arguments checked, the sandbox required (:func:`_require_sandbox`), settings
    built (:func:`_settings`), each submission read and matched to its lab's solution; then a
    :class:`_Batch`: results kept from an earlier run and labs labkit cannot find set aside
    (``plan``), labkit's kernels compiled once for the labs many submissions share (``seed``),
    the rest graded (``run``), the checks the machine could not decide graded again alone
    (``remeasure``), duplicate copies set aside and review marks set (``final``)."""
    _check_arguments(cell_timeout, notebook_timeout, jobs, max_notebook_bytes)
    _require_sandbox(sandbox)
    # the grader (and the processes it spawns) adds nothing to labkit's folder: no .pyc
    sys.dont_write_bytecode = True
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    canon = load_solutions(solutions)
    subs = find_submissions(folder) if submissions is None else list(submissions)
    settings = _settings(cell_timeout, notebook_timeout, memory_limit, max_notebook_bytes,
                         exercise_modules, sandbox, seed)
    tasks = [(sub, c, settings, err) for sub in subs
             for c, err in [_read_and_match(sub, canon, settings)]]
    batch = _Batch(tasks, settings, cache_dir, runner)
    batch.plan()
    batch.seed(jobs, progress)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(tasks), initial=len(tasks) - len(batch.todo), desc="grading",
               unit="nb", disable=not progress, file=sys.stderr)
    try:
        batch.run(jobs, bar)
        batch.remeasure(bar)
    finally:
        bar.close()
        batch.drop_seed()
    return batch.final()


def _check_arguments(cell_timeout: float, notebook_timeout: float, jobs: int,
                     max_notebook_bytes: int) -> None:
    if cell_timeout <= 0 or notebook_timeout <= 0:
        raise ValueError("timeouts must be positive numbers of seconds")
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    if max_notebook_bytes < 0:
        raise ValueError(f"max_notebook_bytes must be ≥ 0, got {max_notebook_bytes}")


def _require_sandbox(sandbox: bool) -> None:
    """The sandbox, or :class:`SandboxUnavailable`; without it (``--no-sandbox``) a loud
    warning on stderr."""
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


def _settings(cell_timeout, notebook_timeout, memory_limit, max_notebook_bytes,
              exercise_modules, sandbox, seed) -> GradeSettings:
    """The run's settings; the folders of the extra exercise modules (bound into the sandbox)."""
    exercise_modules = tuple(exercise_modules)
    extra_paths = []
    for m in exercise_modules:
        root = _module_root(m)
        if root is not None:
            extra_paths.append(str(root.parent))
    return GradeSettings(cell_timeout=float(cell_timeout),
                         notebook_timeout=float(notebook_timeout),
                         memory_limit=int(memory_limit),
                         max_notebook_bytes=int(max_notebook_bytes),
                         exercise_modules=exercise_modules, sandbox=bool(sandbox),
                         extra_paths=tuple(dict.fromkeys(extra_paths)),
                         seed=None if seed is None else str(seed))


class _Batch:
    """One grading run's state: ``tasks`` (submission, its lab's solution, settings, read
    error), their ``results`` by index, the indexes still ``todo``, labkit's files as they were
    before any student ran (``snap``), the result cache and the numba seed."""

    def __init__(self, tasks: list[tuple], settings: GradeSettings, cache_dir, runner) -> None:
        self.tasks, self.settings, self.runner = tasks, settings, runner
        self.broken: dict[str, str] = {}   # a lab whose exercises labkit cannot find: its rows say
        for c in {t[1].name: t[1] for t in tasks if t[1] is not None}.values():
            try:
                _resolve_modules(c, settings.exercise_modules)
            except ValueError as e:
                self.broken[c.name] = str(e)
        self.stamp = environment_stamp()   # before the snapshot: it may compile (numba cache)
        self.snap = Snapshot(settings.exercise_modules)
        self.cache = Path(cache_dir) if cache_dir else None
        if self.cache is not None:
            self.cache.mkdir(parents=True, exist_ok=True)
        self.keys = [(_cache_key(t[0], t[1], settings, self.snap.digest)
                      if self.cache and t[3] is None else None) for t in tasks]
        self.results: list[dict | None] = [None] * len(tasks)
        self.todo: list[int] = []
        self.home: Path | None = None
        self.shared = False                # set by run(): other notebooks graded beside one

    def plan(self) -> None:
        """Results kept from an earlier run taken as they are; a lab labkit cannot find gets
        its rows without grading; the rest is ``todo``."""
        for k, key in enumerate(self.keys):
            c = self.tasks[k][1]
            if c is not None and c.name in self.broken and self.tasks[k][3] is None:
                self.results[k] = _not_run(self.tasks[k][0], c,
                                           f"cannot grade this lab: {self.broken[c.name]}")
                self.results[k]["environment"] = self.stamp
                continue
            hit = self.cache / f"{key}.json" if key else None
            if hit is not None and hit.is_file():
                try:
                    self.results[k] = json.loads(hit.read_text(encoding="utf-8"))
                    self.results[k]["cached"] = True
                    continue
                except (OSError, ValueError):
                    pass
            self.todo.append(k)

    def seed(self, jobs: int, progress: bool) -> None:
        """Labs with ≥ SEED_MIN submissions to grade: their kernels compiled once, not once per
        submission (the seed costs about one submission of that lab: fewer do not gain)."""
        settings = self.settings
        per_lab: dict[str, list] = {}
        for k in self.todo:
            if self.tasks[k][1] is not None:
                per_lab.setdefault(self.tasks[k][1].name, []).append(self.tasks[k][1])
        seeds = [cs[0] for cs in per_lab.values()
                 if len(cs) >= SEED_MIN and _is_labkit_lab(cs[0])]
        home, kept = _kept_seed(self.cache, seeds, settings, self.snap.digest, self.stamp)
        if self.runner is not None:   # its workers build their own seeds (another machine's paths)
            home, settings.numba_cache = None, None
        elif kept:                # the same labs, labkit and machine as a kept seed: no compiling
            settings.numba_cache = str(home / "numba-cache")
            if progress:
                print("grading: numba cache warm (kept from the last run)", file=sys.stderr,
                      flush=True)
        else:
            settings.numba_cache = _build_seed(seeds, settings, jobs, progress)
            if home is not None and settings.numba_cache:
                settings.numba_cache = _keep_seed(settings.numba_cache, home)
        self.home = home

    def _undo(self, changed: list[str]) -> list[str] | None:
        # Without the sandbox a submission can write labkit's files: put them back so the
        # next student meets an intact labkit. In the sandbox labkit is read-only to student
        # code, so a change came from outside the grading (an admin, an editor): flagged, but
        # the files are left as they are.
        return None if self.settings.sandbox else self.snap.restore(changed)

    def _finish(self, k: int, res: dict, before: list[str]) -> None:
        """A notebook's result in place: tampering seen before or while it ran zeroes it, an
        unsandboxed run is flagged on every row, a decided graded result goes to the cache."""
        changed = self.snap.changes()
        if before or changed:
            both = sorted(set(before) | set(changed))
            _tampered(res, both, self._undo(both),
                      "while this notebook was graded" if changed else
                      "before this notebook was graded (a process left by an earlier one?)")
            if self.settings.sandbox:
                self.snap.rebase()
        if not self.settings.sandbox:             # loud on every row, not only on stderr
            fl = res.setdefault("flags", {}).setdefault("", [])
            if UNSANDBOXED not in fl:
                fl.insert(0, UNSANDBOXED)
        res.setdefault("environment", self.stamp)  # a remote worker's own stamp stays
        self.results[k] = res
        key = self.keys[k]
        if key and res["status"] in ("graded",) and not _undecided(res, self.shared):
            try:
                (self.cache / f"{key}.json").write_text(json.dumps(res, default=str),
                                                        encoding="utf-8")
            except OSError:
                pass

    def _one_by_one(self, k: int, task: tuple, merge=None) -> None:
        # in this process, one notebook at a time: an earlier one's leftovers undone first
        before = self.snap.changes()
        if before:
            self._undo(before)
        res = _grade_task(task)
        if merge is not None:
            res = merge(res)
        self._finish(k, res, before)

    def run(self, jobs: int, bar) -> None:
        """Every ``todo`` notebook graded: by the runner, one by one here, or ``jobs`` side by
        side in spawned processes."""
        # other notebooks graded beside each one (parallel jobs, or the runner's workers)
        self.shared = (self.runner.shared if self.runner is not None else jobs > 1) \
            and len(self.todo) > 1
        if self.runner is not None:
            for k, res in self.runner.map({k: self.tasks[k] for k in self.todo}):
                self._finish(k, res, [])
                bar.update()
        elif not self.shared:
            for k in self.todo:
                bar.set_postfix_str(self.tasks[k][0].student[:20])
                self._one_by_one(k, self.tasks[k])
                bar.update()
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                futs = {pool.submit(_grade_task, self.tasks[k]): k for k in self.todo}
                for f in as_completed(futs):
                    k = futs[f]
                    try:
                        res = f.result()
                    except Exception as e:  # noqa: BLE001 - a worker died: record, go on
                        res = _not_run(self.tasks[k][0], self.tasks[k][1],
                                       f"the grader's worker process failed: "
                                       f"{type(e).__name__}: {e}")
                    self._finish(k, res, [])
                    bar.update()

    def remeasure(self, bar) -> None:
        """The checks the machine could not decide, once more, one at a time (nothing else of
        the grader's runs beside them); the batch's other results stand."""
        for k in [k for k in self.todo
                  if self.results[k] is not None and _undecided(self.results[k], self.shared)]:
            bar.set_postfix_str(f"re-measuring {self.tasks[k][0].student[:16]}")
            sub, canon, st, err = self.tasks[k]
            first = self.results[k]
            names = tuple(_undecided(first, self.shared))
            task = (sub, canon, dataclasses.replace(st, only=names), err)
            if self.runner is not None:
                self._finish(k, _merge_remeasured(first, self.runner.again(task, first), names),
                             [])
                continue
            self._one_by_one(k, task, merge=lambda again, first=first, names=names:
                             _merge_remeasured(first, again, names))

    def drop_seed(self) -> None:
        """The seed built for this run removed (a kept one stays for the next run)."""
        seed = self.settings.numba_cache
        if seed and (self.home is None or Path(seed).parent != self.home):
            import shutil
            shutil.rmtree(os.path.dirname(seed), ignore_errors=True)

    def final(self) -> list[dict]:
        """The results in submission order; duplicate copies set aside; review marks set on
        the final rows (after the re-measurement)."""
        out = [r for r in self.results if r is not None]
        _dedupe(out)
        return mark_review(out)

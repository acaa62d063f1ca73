"""The numba cache seed of a grading run: labkit's kernels compiled once, by grading each lab's
solution notebook unsandboxed (trusted code only), for every submission's worker to start from a
private copy of — instead of each compiling them again; kept in the grading cache folder for the
next run of the same labs, labkit and machine."""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from .notebooks import Canonical, Submission
from .run import _grade_task
from .settings import GradeSettings

SEED_MIN = 3            # submissions of one lab from which its kernels are compiled up front


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

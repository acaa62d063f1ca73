"""The grader's check of one exercise — the only place grading calls ``labkit.check``.

:func:`_resolve_modules` (in the grader's process: which module registers each exercise) and
:func:`run_exercise`: the exercise cell's source, the import statements of the notebook's other
code cells and the plain constants it reads go to :func:`labkit.check.run_source`, which runs
the check in labkit's trusted worker — here a :class:`~labkit.grade.sandbox.SandboxWorker`
started inside the sandbox for this submission. The verdict comes back over the worker's pipe;
no student kernel runs, so nothing a cell does to ``json``, the clock, IPython or its own
outputs can reach it."""
from __future__ import annotations

import contextlib
import importlib
import os
import secrets

from .build import FoundCell
from .notebooks import Canonical, ExerciseSpec

__all__ = ["run_exercise", "use_worker"]


def _resolve_modules(canon: Canonical, exercise_modules=()) -> None:
    """Find (in this trusted process) which module registers each exercise."""
    try:
        for mod in exercise_modules:
            importlib.import_module(mod)
        from labkit import check
    except Exception as e:  # noqa: BLE001 - say which module, not a traceback
        raise ValueError(f"cannot import the exercise modules for {canon.name}: "
                         f"{type(e).__name__}: {e}") from None

    for ex in canon.exercises:
        if ex.module:
            continue
        try:
            ex.module = check.get(ex.name).module
        except ImportError as e:
            raise ValueError(f"{canon.name}: importing labkit's lab modules to find exercise "
                             f"{ex.name!r} failed: {e}") from None
        except AttributeError as e:
            raise ValueError(f"{canon.name}: its check cell calls check.{ex.name}, but no module "
                             f"registers that exercise ({e}); list the lab in "
                             "labkit.registry (its checks.py registers the exercises) or pass "
                             "--exercise-module MODULE") from None


@contextlib.contextmanager
def use_worker(worker):
    """Make ``labkit.check.run_source`` use ``worker`` (this process grades one submission at
    a time), and stop it afterwards: nothing of this submission outlives it."""
    from labkit.check import runner
    runner.nodump()     # student code (the worker's children) cannot reach our pipes via /proc
    prev, runner._WORKER = runner._WORKER, worker
    try:
        yield worker
    finally:
        runner._WORKER = prev
        worker.stop()


def run_exercise(ex: ExerciseSpec, cell: FoundCell, timeout: float,
                 seed: int | None = None, last: bool = False) -> tuple[dict, int]:
    """``(result dict, seed)`` of the check of ``ex`` on the student's cell, in the current
    worker (see :func:`use_worker`), with a fresh secret seed (or ``seed``: one derived from
    the run's class seed, ``labkit grade --seed``). ``last``: the worker's last check (it
    starts no spare process for a next one)."""
    from labkit import check

    seed = secrets.randbits(62) if seed is None else int(seed)
    saved = {k: v for k, v in os.environ.items() if k.startswith("LABKIT_")}
    for k in saved:
        del os.environ[k]
    os.environ.update(LABKIT_GRADING="1", LABKIT_SEED=str(seed))
    if last:
        os.environ["LABKIT_CHECK_LAST"] = "1"
    try:
        fn = cell.function or (ex.fn_src if ex.fn_src.isidentifier() else None)
        res = check.run_source(ex.name, cell.source, cell.imports, function=fn,
                               constants=cell.constants, timeout=timeout).to_dict()
    except Exception as e:  # noqa: BLE001 - a checker failure is this exercise's error
        res = {"name": ex.name, "passed": False, "points": 0.0, "max_points": ex.points,
               "verdict": "error", "details": {},
               "message": f"the check itself failed: {type(e).__name__}: {e}"}
    finally:
        for k in [k for k in os.environ if k.startswith("LABKIT_")]:
            del os.environ[k]
        os.environ.update(saved)
    return res, seed

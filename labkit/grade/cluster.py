"""Grading on Dask ``distributed``: ``labkit grade DIR --scheduler ADDRESS`` (a running
scheduler: ``dask scheduler``, dask-jobqueue's Slurm/PBS clusters, Dask's Kubernetes operator)
or ``--cluster local:N`` (N local worker processes).

Each submission is one task needing the worker resource ``grade=1``: start every worker with
``--nthreads 1 --resources grade=1`` (one worker process per core pair), so a worker grades one
submission at a time and two never share its cores. The task carries the notebook's bytes (no
shared disk needed for the class; labkit, the exercise modules and the venv must be the same on
every worker: the same image or a shared install) and grades it exactly as ``labkit grade``
does: the same sandbox, the derived seeds (``--seed``), the tamper check of labkit's files (on
the worker), a numba seed per lab built once per worker process. Each result's environment
stamp is the worker's (its CPU, host and address). A worker that dies mid-submission (killed,
OOM, node lost) loses only that task: the scheduler gives it to another worker, and its one
result goes into the outputs; a submission that kills three workers is a ``grader error`` row.
Checks the worker could not decide are re-measured after the batch, one at a time, on the
worker that graded them first. The client keeps the result cache and writes every output."""
from __future__ import annotations

import atexit
import dataclasses
import os
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlparse

__all__ = ["DaskRunner", "parse_cluster", "grade_remote", "RESOURCE"]

RESOURCE = "grade"          # the worker resource one submission takes
_STATE: dict = {}           # per worker process: labkit's snapshot, its stamp, numba seeds


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ImportError("labkit grade --scheduler/--cluster needs Dask distributed: "
                          "pip install 'labkit[cluster]'") from None
    return distributed


def parse_cluster(text: str) -> int:
    """``"local:4"`` → 4 (worker processes of a local Dask cluster)."""
    m = re.fullmatch(r"\s*local\s*:\s*(\d+)\s*", text or "")
    if not m or int(m.group(1)) < 1:
        raise ValueError(f"cannot read --cluster {text!r}: write local:N (N ≥ 1 worker "
                         "processes); for another cluster start its scheduler and pass "
                         "--scheduler ADDRESS")
    return int(m.group(1))


# ------------------------------------------------------------------ on the worker
def _worker_info(modules=()) -> dict:
    """What the client checks before it sends a submission (run on every worker)."""
    from .run import environment_stamp
    from .sandbox import probe
    from .shard import labkit_identity
    ok, why = probe()
    return {"identity": labkit_identity(tuple(modules)), "sandbox": ok, "why": why,
            "cpu": environment_stamp().get("cpu"), "host": socket.gethostname()}


def _state(settings) -> dict:
    if not _STATE:
        from .integrity import Snapshot
        from .run import environment_stamp
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"     # nothing added to labkit's folder
        sys.dont_write_bytecode = True
        for mod in settings.exercise_modules:
            __import__(mod)
        _STATE.update(stamp=environment_stamp(), seeds={},
                      snap=Snapshot(tuple(settings.exercise_modules)))
    return _STATE


def _seed(canon, settings) -> str | None:
    """This worker's numba seed for ``canon``'s lab (:func:`.seed._build_seed`, built on the
    first of its submissions this worker grades; none for a lab that is not labkit's)."""
    from .seed import _build_seed, _is_labkit_lab
    seeds = _STATE["seeds"]
    lab = canon.name if canon is not None and _is_labkit_lab(canon) else None
    if lab is None and settings.sandbox:
        return None
    if lab not in seeds:
        seeds[lab] = _build_seed([canon] if lab else [], settings, 1, False)
        if seeds[lab]:
            atexit.register(shutil.rmtree, os.path.dirname(seeds[lab]), True)
    return seeds[lab]


def _address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except Exception:  # noqa: BLE001 - not in a worker (a test calls it directly)
        return ""


def grade_remote(task: tuple, data: bytes | None, identity: dict) -> dict:
    """One submission, on a Dask worker (``data``: the notebook's bytes, ``None`` when it is
    not read); refuses a worker whose labkit differs from the client's."""
    from .notebooks import Submission
    from .run import _grade_task, _tampered
    from .shard import labkit_identity
    sub, canon, settings, err = task
    mine = labkit_identity(tuple(settings.exercise_modules))
    if mine != identity:
        raise RuntimeError(f"labkit on worker {_address()} ({socket.gethostname()}) is not the "
                           f"client's: {mine} here, {identity} there; install the same labkit")
    st = _state(settings)
    snap = st["snap"]
    settings = dataclasses.replace(settings, numba_cache=_seed(canon, settings))
    with tempfile.TemporaryDirectory(prefix="labkit-grade-sub-") as tmp:
        if data is not None:
            path = Path(tmp) / (Path(sub.rel).name or "submission.ipynb")
            path.write_bytes(data)
            sub = Submission(sub.student, path, sub.rel, sub.refused)
        before = snap.changes()
        if before and not settings.sandbox:
            snap.restore(before)
        res = _grade_task((sub, canon, settings, err))
    changed = snap.changes()
    if before or changed:
        both = sorted(set(before) | set(changed))
        _tampered(res, both, None if settings.sandbox else snap.restore(both),
                  "while this notebook was graded" if changed else
                  "before this notebook was graded (a process left by an earlier one?)")
        if settings.sandbox:
            snap.rebase()
    res["environment"] = dict(st["stamp"], host=socket.gethostname(), worker=_address())
    return res


# ------------------------------------------------------------------ on the client
def _host(address: str) -> str:
    return urlparse(address).hostname or address


class DaskRunner:
    """``grade(..., runner=DaskRunner(...))``: the submissions go to Dask workers."""

    def __init__(self, scheduler: str | None = None, cluster: str | None = None, modules=(),
                 sandbox: bool = True, progress: bool = True, timeout: float = 120):
        d = _distributed()
        self._cluster = None
        if cluster is not None:
            import logging
            self._cluster = d.LocalCluster(
                n_workers=parse_cluster(cluster), threads_per_worker=1, processes=True,
                resources={RESOURCE: 1}, dashboard_address=None, silence_logs=logging.ERROR)
            self.client = d.Client(self._cluster)
        elif scheduler and os.path.isfile(scheduler):
            self.client = d.Client(scheduler_file=scheduler, timeout=timeout)
        elif scheduler:
            self.client = d.Client(scheduler, timeout=timeout)
        else:
            raise ValueError("DaskRunner needs a scheduler address or a cluster")
        from .shard import labkit_identity
        self.modules = tuple(modules)
        self.identity = labkit_identity(self.modules)
        self.progress = progress
        try:
            self.workers = self._preflight(sandbox, timeout)
        except BaseException:
            self.close()
            raise

    def _preflight(self, sandbox: bool, timeout: float) -> dict:
        self.client.wait_for_workers(1, timeout=timeout)
        info = self.client.scheduler_info(n_workers=-1)["workers"] if _takes_n(self.client) \
            else self.client.scheduler_info()["workers"]
        ours = [w for w, i in info.items() if (i.get("resources") or {}).get(RESOURCE, 0) >= 1]
        if not ours:
            raise ValueError(f"no Dask worker offers the resource {RESOURCE}=1: start the "
                             f"workers with `dask worker ADDRESS --nthreads 1 --resources "
                             f"{RESOURCE}=1`")
        got = self.client.run(_worker_info, self.modules, workers=ours)
        other = {w: i["identity"] for w, i in got.items() if i["identity"] != self.identity}
        if other:
            raise ValueError(f"labkit differs on {len(other)} Dask worker(s) ({next(iter(other))}"
                             f": {next(iter(other.values()))}; here: {self.identity}): give "
                             "every worker the same labkit and exercise modules")
        bad = {w: i["why"] for w, i in got.items() if not i["sandbox"]}
        if sandbox and bad:
            from .run import SandboxUnavailable
            w, why = next(iter(bad.items()))
            raise SandboxUnavailable(f"no sandbox for student code on {len(bad)} Dask worker(s) "
                                     f"({w}: {why}). Refusing to grade; install bubblewrap on "
                                     "the workers (docs/grading.md, \"Grading across machines\")")
        hosts = [_host(w) for w in ours]
        self.shared = len(set(hosts)) < len(hosts)   # two workers on one machine
        if self.progress:
            cpus = sorted({str(i["cpu"]) for i in got.values()})
            print(f"grading on {len(ours)} Dask worker(s) on {len(set(hosts))} machine(s): "
                  + "; ".join(cpus), file=sys.stderr, flush=True)
        return got

    def _submit(self, task: tuple, **where):
        from .notebooks import _read_bytes
        sub, canon, settings, err = task
        data = None
        if err is None and canon is not None and not sub.refused and sub.path.is_file():
            data = _read_bytes(sub.path, settings.max_notebook_bytes)
        import uuid
        return self.client.submit(grade_remote, task, data, self.identity, pure=False,
                                  key=f"labkit-grade:{uuid.uuid4().hex[:12]}:{sub.rel}",
                                  resources={RESOURCE: 1}, **where)

    def map(self, tasks: dict):
        """Yield ``(k, result)`` as each submission of ``tasks`` (k → task) is graded."""
        from distributed import as_completed

        from .run import _not_run
        futs = {}
        for k, task in tasks.items():
            try:
                futs[self._submit(task)] = k
            except Exception as e:  # noqa: BLE001 - unreadable now: that row, the batch goes on
                yield k, _not_run(task[0], task[1], f"cannot send it to a worker: {e}")
        for f in as_completed(futs):
            k = futs[f]
            try:
                res = f.result()
            except Exception as e:  # noqa: BLE001 - the task failed on every worker it met
                res = _not_run(tasks[k][0], tasks[k][1],
                               f"the Dask worker failed: {type(e).__name__}: {e}")
            f.release()
            yield k, res

    def again(self, task: tuple, first: dict) -> dict:
        """``task`` (some checks of a graded notebook) once more, alone, on the worker that
        graded it first when it is still there."""
        from .run import _not_run
        worker = (first.get("environment") or {}).get("worker")
        where = {"workers": [worker], "allow_other_workers": True} if worker else {}
        try:
            return self._submit(task, **where).result()
        except Exception as e:  # noqa: BLE001 - the first result stands
            return _not_run(task[0], task[1], f"the Dask worker failed: {e}")

    def close(self) -> None:
        for thing in (getattr(self, "client", None), self._cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # noqa: BLE001 - closing what is already gone
                    pass


def _takes_n(client) -> bool:
    import inspect
    return "n_workers" in inspect.signature(client.scheduler_info).parameters

"""The trusted check worker: ``python -m labkit.check.worker <read fd> <write fd>``.

Started by :mod:`labkit.check.runner`. Before any student code, it binds what it needs (the
pipe, marshal, the clock in :mod:`labkit.check.speed`), points file descriptors 0–2 at
/dev/null, makes itself non-dumpable (no ptrace, no /proc/<pid>/mem or fd access by other
processes of the user), drops the working directory from ``sys.path``, imports numpy, numba,
labkit and every lab's checks, and snapshots the identities of their functions.

No student Python runs in this process. Per request it loads the cell the strict way
(:func:`labkit.check.cells._strict` → :func:`labkit.check.strict.load`: imports of installed
packages, ``def`` with numba's decorators, constants: nothing of the student's is called) into
a fresh namespace. A numba
function is compiled and run here — every compiled overload of the cell's functions is first
inspected for numba's escape hatches (:mod:`labkit.check.hatches`: objmode, ctypes/cffi,
intrinsics …), which end the check "not judged". Any other function runs in a child process
through a :class:`labkit.check.proxy.Proxy`: the check body here calls it like the function
and judges the data that comes back. After tampering it answers and exits.
"""
from __future__ import annotations

import io
import os
import sys
import time

# the cell loading, bound before any student code (also importable from here, as before)
from labkit.check.cells import (_cell_file, _cell_module, _dropped_note, _load,  # noqa: F401
                                _strict, missing_message, redefined_note)

_read_fd = int(sys.argv[1]) if __name__ == "__main__" else -1
_write_fd = int(sys.argv[2]) if __name__ == "__main__" else -1


class _Sink(io.TextIOBase):
    """sys.stdout/stderr of student code: counts and discards."""

    def __init__(self):
        self.n = 0

    def write(self, s):
        self.n += len(s)
        return len(s)

    def writable(self):
        return True


def _silence() -> "_Sink":
    """fds 0–2 to /dev/null (unless LABKIT_CHECK_DEBUG=1), sys.stdout/stderr a counting sink."""
    devnull = os.open(os.devnull, os.O_RDWR)
    if os.environ.get("LABKIT_CHECK_DEBUG") != "1":
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    sink = _Sink()
    sys.stdout = sys.stderr = sink
    return sink


def _prune_path() -> None:
    """The working directory (a submission could put ``scipy.py`` there) is not searched."""
    from labkit.check.runner import _labkit_root
    cwd = os.path.realpath(os.getcwd())
    keep = os.path.realpath(_labkit_root())
    sys.path[:] = [p for p in sys.path
                   if p and (os.path.realpath(p) != cwd or os.path.realpath(p) == keep)]


def _resolve(req: dict, cache: dict, ex, deadline: float, timeout: float):
    """(callable or None, notes, error or None, error verdict, proxy or None). Loading the
    cell (here, and in a plain-Python student's process) is labkit's time, not the student's:
    what it took moves a proxy's deadline (the caller's timer is paused: :func:`main`)."""
    import importlib
    import time
    t_load = time.monotonic()

    from labkit.check.guard import is_dispatcher
    from labkit.check.proxy import Proxy
    if req.get("ref"):
        mod, _, attr = req["ref"].partition(":")
        obj = importlib.import_module(mod)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj, [], None, "", None
    ns, dropped, err = _strict(req, cache)
    name = req.get("name_fn") or ""
    obj = ns.get(name) if ns is not None else None
    twice = redefined_note(req.get("source") or "", name) if req.get("cell", True) else ""
    if err is None and is_dispatcher(obj):
        notes = [_dropped_note(dropped)] if dropped and req.get("cell", True) else []
        return obj, notes + [twice] * bool(twice), None, "", None
    if err is not None and err.startswith("the cell does not parse"):
        return None, [], err, "error", None
    proxy = Proxy(req, ex, deadline, timeout, inert=obj)
    perr, verdict, notes = proxy.start()
    proxy.deadline = deadline + (time.monotonic() - t_load)
    notes = (notes + [twice] * bool(twice)) if req.get("cell", True) else []
    if perr is not None:
        proxy.close()
        return None, notes, perr, verdict, None
    return proxy, notes, None, "", proxy


_CURRENT: dict = {}


def _loading(started: bool) -> None:
    """Tell the caller (:meth:`labkit.check.runner.Worker.request`) that loading the cell
    starts or ended: its timer stops meanwhile (loading is labkit's time, with a budget of its
    own), so the student's function gets its whole timeout."""
    if _write_fd >= 0:
        from labkit.check.runner import write_frame
        write_frame(_write_fd, {"loading": bool(started)})


def _refuse(fn_name: str, why: str) -> None:
    """A cell-defined numba function compiled with an escape hatch: answer and exit (called by
    :mod:`labkit.check.hatches` before the compiled code runs)."""
    from labkit.check.runner import write_frame
    msg = (f"{fn_name} uses {why}: the check runs only nopython code — not judged (0 points)")
    write_frame(_write_fd, {"result": {"name": _CURRENT.get("name", ""), "passed": False,
                                       "points": 0.0, "max_points": _CURRENT.get("points", 0.0),
                                       "verdict": "error", "message": msg, "details": {}},
                            "restart": True})
    os._exit(0)


def main() -> int:
    """Start (:func:`_start`), then answer each request (:func:`_answer`) until the pipe
    closes or an answer asks for a fresh worker."""
    rfd, wfd = _read_fd, _write_fd
    from labkit.check.runner import read_frame, write_frame
    started = _start(wfd)
    if started is None:
        return 1
    sink, baseline = started
    write_frame(wfd, {"ready": True, "pid": os.getpid()})
    cache: dict = {}
    while True:
        req = read_frame(rfd)
        if req is None:
            return 0
        if req.get("op") == "ping":
            write_frame(wfd, {"pong": True, "pid": os.getpid()})
            continue
        reply = _answer(req, cache, baseline, sink)
        write_frame(wfd, reply)
        if reply.get("restart"):
            return 0


def _start(wfd: int):
    """Everything bound before any student code: non-dumpable, silenced, numba, numpy and every
    lab's checks imported, the working directory off ``sys.path``, the loaded modules trusted,
    the escape hatches guarded, the baseline snapshot taken. ``(sink, baseline)``, or None
    (after telling the caller) when that fails."""
    from labkit.check.runner import write_frame
    import labkit.check.runner as runner
    runner._IN_WORKER = True
    runner.nodump()
    sink = _silence()
    try:
        import numba  # noqa: F401 - warm the compiler
        import numpy  # noqa: F401

        from labkit.check import framework, guard, hatches, proxy, speed, strict  # noqa: F401
        framework._load_all()
        _prune_path()
        strict.trust_loaded()
        hatches.install(_refuse)
        hatches.guard_disk_cache()
        baseline = guard.Snapshot()
    except Exception as e:  # noqa: BLE001
        write_frame(wfd, {"ready": False, "error": f"{type(e).__name__}: {e}"})
        return None
    return sink, baseline


def _take_env(req: dict) -> None:
    """The request's ``LABKIT_*`` environment replaces the previous request's."""
    environ = os.environ
    for k in [k for k in environ if k.startswith("LABKIT_")]:
        if k not in req.get("env", {}):
            del environ[k]
    environ.update(req.get("env") or {})


def _answer(req: dict, cache: dict, baseline, sink: _Sink) -> dict:
    """The reply to one check request: ``{"result": …}``, with ``"restart"`` when the worker
    must be replaced (an unknown exercise has none)."""
    from labkit.check import framework
    import labkit.check.runner as runner
    t0 = time.monotonic()
    _take_env(req)
    name = req.get("name", "")
    try:
        ex = framework.get(name)
    except AttributeError as e:
        return {"result": {"name": name, "passed": False, "points": 0.0, "max_points": 0.0,
                           "verdict": "error", "message": str(e), "details": {}}}
    _CURRENT.update(name=name, points=ex.points)
    timeout = float(req.get("timeout") or runner.default_timeout())
    deadline = t0 + max(1.0, timeout - 1.5)
    sink.n = 0
    baseline.extend()
    _loading(True)
    try:
        fn, notes, err, verdict, px = _resolve(req, cache, ex, deadline, timeout)
    finally:
        _loading(False)
    try:
        res, restart = _run(name, ex, fn, err, verdict, px, baseline)
    finally:
        if px is not None:
            sink.n += px.printed
            px.close()
    return {"result": _noted(res, notes, sink).to_dict(), "restart": restart}


def _run(name: str, ex, fn, err, verdict: str, px, baseline):
    """(result, restart): the check run on the loaded function — unless loading the cell
    changed what the checker relies on, or failed — and a plain-Python student's failure in
    its own process (tampering, delegation) over a passing body's verdict."""
    from labkit.check import framework
    ch = baseline.changes()
    if ch:
        return framework.CheckResult(name, False, 0.0, ex.points, "error",
                                     f"your cell changed {', '.join(ch[:3])} while loading"
                                     " — the checker's own functions must not be replaced",
                                     {}), True
    if err is not None:
        return framework.CheckResult(name, False, 0.0, ex.points, verdict or "error", err,
                                     {}), False
    restart = False
    res = framework.run_local(ex, fn)
    if baseline.changes() or res.verdict == "error" and "must not be replaced" in res.message:
        restart = px is None or bool(baseline.changes())
    if px is not None and px.failure is not None and \
            (res.passed or px.failure.message not in res.message):
        res = framework.CheckResult(name, False, 0.0, ex.points,
                                    px.failure.verdict, px.failure.message,
                                    dict(px.failure.details))
    return res, restart


def _noted(res, notes: list, sink: _Sink):
    """``res`` with the loading notes and the size of what the function printed appended to
    its message."""
    from labkit.check import framework
    extra = list(notes)
    if sink.n > 10_000:
        extra.append(f"your function printed {sink.n / 1e6:.1f} MB (discarded)")
    if extra:
        res.message = framework.short(res.message + "; " + "; ".join(extra))
    return res


if __name__ == "__main__":
    sys.exit(main())

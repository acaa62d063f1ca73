"""The trusted check runner, notebook side: a warm worker process and its private pipes.

``check.<name>(fn)`` for an exercise of a registry lab sends the *source* of the cell that
defined ``fn`` (plus earlier cells' imports and the plain-data globals it reads) to a separate
Python process started and kept by labkit (:mod:`labkit.check.worker`). The worker loads only
the cell's definitions, runs the check with references it bound before any student code ran,
and answers over a pipe no student code in this process can reach. A worker that crashed,
timed out or saw tampering is replaced before the next check.

:func:`run_source` runs a check straight from cell sources (the grader's entry point: no
notebook is executed). ``LABKIT_CHECK_TIMEOUT`` (seconds, default 180) bounds one check; Ctrl-C stops it.
"""
from __future__ import annotations

import atexit
import marshal
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

from .result import CheckResult

__all__ = ["run_function", "run_source", "in_worker", "restart", "shutdown", "Worker"]

_IN_WORKER = False
_HEADER = struct.Struct("!Q")
_MAX_FRAME = 64 << 20
#: How long loading a cell may take in the worker (its imports; a plain-Python student's own
#: process started and loaded too: :data:`labkit.check.proxy.STARTUP_S`), on top of the
#: student's timeout, which counts only the check itself.
LOAD_BUDGET_S = 150.0


def in_worker() -> bool:
    """True inside the trusted worker process."""
    return _IN_WORKER


def default_timeout() -> float:
    try:
        return float(os.environ.get("LABKIT_CHECK_TIMEOUT", "180"))
    except ValueError:
        return 180.0


def write_frame(fd: int, obj, _dumps=marshal.dumps, _write=os.write, _pack=_HEADER.pack) -> None:
    data = _dumps(obj)
    buf = _pack(len(data)) + data
    view = memoryview(buf)
    while view:
        n = _write(fd, view)
        view = view[n:]


def read_frame(fd: int, deadline: float | None = None, _read=os.read, _loads=marshal.loads):
    """One frame from ``fd``; None at EOF; TimeoutError past ``deadline`` (time.monotonic)."""
    def readn(n):
        chunks, got = [], 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                r, _, _ = select.select([fd], [], [], left)
                if not r:
                    raise TimeoutError
            b = _read(fd, min(n - got, 1 << 20))
            if not b:
                return None
            chunks.append(b)
            got += len(b)
        return b"".join(chunks)

    head = readn(_HEADER.size)
    if head is None:
        return None
    (n,) = _HEADER.unpack(head)
    if n > _MAX_FRAME:
        raise ValueError("frame too large")
    data = readn(n)
    if data is None:
        return None
    return _loads(data)


def nodump() -> None:
    """Make this process non-dumpable (Linux ``PR_SET_DUMPABLE 0``): other processes of the
    same user can then neither ptrace it nor open its ``/proc/<pid>/mem`` or ``fd/`` links
    (its pipes). The worker does this before any student code; the grader too."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux
        pass


def _labkit_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spawn(argv_for, env: dict, cwd: str | None = None):
    """Start a process that exchanges frames over two pipes: ``argv_for(its read fd, its write
    fd)`` → its argv. Returns ``(proc, our write fd, our read fd)``; its stdio is /dev/null unless
    LABKIT_CHECK_DEBUG=1, and it runs in a session of its own."""
    down_r, down_w = os.pipe()
    up_r, up_w = os.pipe()
    debug = os.environ.get("LABKIT_CHECK_DEBUG") == "1"
    try:
        proc = subprocess.Popen(
            argv_for(down_r, up_w), pass_fds=(down_r, up_w), stdin=subprocess.DEVNULL,
            stdout=None if debug else subprocess.DEVNULL,
            stderr=None if debug else subprocess.DEVNULL,
            env=env, cwd=cwd or os.getcwd(), start_new_session=True, close_fds=True)
    except BaseException:
        for fd in (down_w, up_r):
            os.close(fd)
        raise
    finally:
        os.close(down_r)
        os.close(up_w)
    return proc, down_w, up_r


class Worker:
    """One warm worker process (start lazily; :meth:`request` restarts it after a crash)."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None
        self.rfd = self.wfd = -1
        self.lock = threading.Lock()
        self.started_s = 0.0
        self.starts = 0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 300.0) -> None:
        t0 = time.monotonic()
        env = dict(os.environ)
        root = _labkit_root()
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.pop("LABKIT_CHECK_INPROCESS", None)
        self.proc, self.wfd, self.rfd = spawn(
            lambda r, w: [sys.executable, "-m", "labkit.check.worker", str(r), str(w)], env)
        try:
            hello = read_frame(self.rfd, time.monotonic() + timeout)
        except TimeoutError:
            hello = None
        if not (isinstance(hello, dict) and hello.get("ready")):
            err = hello.get("error") if isinstance(hello, dict) else None
            self.stop()
            raise RuntimeError(f"labkit's check worker did not start{': ' + err if err else ''}")
        self.started_s = time.monotonic() - t0
        self.starts += 1

    def stop(self) -> None:
        p, self.proc = self.proc, None
        for fd in (self.rfd, self.wfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.rfd = self.wfd = -1
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                p.kill()
        if p is not None:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def request(self, req: dict, timeout: float) -> tuple[dict | None, str]:
        """(reply, "") or (None, why) — why: "timeout", "crash:<code>", "start:<msg>"."""
        with self.lock:
            fresh = False
            if not self.alive():
                self.stop()
                try:
                    self.start()
                except RuntimeError as e:
                    return None, f"start:{e}"
                fresh = True
            try:
                write_frame(self.wfd, req)
                deadline, loading = time.monotonic() + timeout, None
                while True:
                    reply = read_frame(self.rfd, deadline)
                    # the worker loads the cell (and starts a plain-Python student's process)
                    # between {"loading": True} and {"loading": False}: labkit's time, with
                    # its own budget, not the student's — the timer stops meanwhile (once)
                    if isinstance(reply, dict) and set(reply) == {"loading"}:
                        now = time.monotonic()
                        if reply["loading"] and loading is None:
                            loading, deadline = (now, deadline), now + LOAD_BUDGET_S
                        elif not reply["loading"] and isinstance(loading, tuple):
                            deadline, loading = loading[1] + (now - loading[0]), False
                        continue
                    break
            except TimeoutError:
                self.stop()
                return None, "load-timeout" if isinstance(loading, tuple) else "timeout"
            except (OSError, ValueError, EOFError):
                reply = None
            except BaseException:      # KeyboardInterrupt: the reply would answer the next check
                self.stop()
                raise
            if reply is None:
                code = self.proc.wait(timeout=10) if self.proc is not None else None
                self.stop()
                return None, f"crash:{code}"
            if reply.get("restart"):
                self.stop()
            if fresh:
                reply["_fresh"] = True
            return reply, ""


_WORKER = Worker()
_FIRST_NOTE_SHOWN = False
atexit.register(_WORKER.stop)


def restart() -> None:
    """Stop the worker (the next check starts a fresh one) — e.g. between two students."""
    _WORKER.stop()


def shutdown() -> None:
    _WORKER.stop()


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k.startswith(("LABKIT_", "NUMBA_OPT"))}


def crash_message(why: str, timeout: float) -> str:
    """The one line for a checker process that timed out (``"timeout"``; ``"load-timeout"``:
    while loading the cell), died
    (``"crash:<exit code>"``) or did not start."""
    if why == "timeout":
        return (f"your function did not return within {timeout:g} s (an endless loop?) — the "
                "checker was stopped and restarted")
    if why == "load-timeout":
        return (f"loading your cell did not finish within {LOAD_BUDGET_S:g} s (an import that "
                "hangs, or a machine far too busy) — the checker was stopped and restarted")
    if why.startswith("crash:"):
        code = why.split(":", 1)[1]
        try:
            c = int(code)
        except ValueError:
            c = None
        if c is not None and c < 0:
            try:
                sig = signal.Signals(-c).name
            except ValueError:
                sig = f"signal {-c}"
            return f"your function crashed the checker ({sig}, e.g. an out-of-bounds write) — restarted"
        return (f"your function ended the checker's process (exit code {code}, e.g. "
                "os._exit or sys.exit) — restarted")
    return f"labkit's checker could not start ({why.split(':', 1)[-1]}) — a labkit bug?"


def stopped_kind(why: str) -> str:
    """How a checker process was stopped, for the result's ``details["stopped"]`` — what the
    grader reads, never the message's wording: ``"timeout"`` (the student's function ran out of
    time), ``"load-timeout"`` (loading the cell did: labkit's time), ``"crash"`` (the process
    died) or ``"start"`` (it never started)."""
    if why in ("timeout", "load-timeout"):
        return why
    return "crash" if why.startswith("crash:") else "start"


def _why(name: str, points: float, why: str, timeout: float) -> CheckResult:
    return CheckResult(name=name, passed=False, points=0.0, max_points=points, verdict="error",
                       message=crash_message(why, timeout),
                       details={"stopped": stopped_kind(why)})


def _points(name: str) -> float:
    from .framework import get
    try:
        return get(name).points
    except AttributeError:
        return 0.0


def _send(req: dict, timeout: float | None) -> CheckResult:
    global _FIRST_NOTE_SHOWN
    timeout = default_timeout() if timeout is None else float(timeout)
    req["env"] = _env()
    req["timeout"] = timeout
    reply, why = _WORKER.request(req, timeout)
    if reply is None:
        return _why(req["name"], _points(req["name"]), why, timeout)
    res = CheckResult.from_dict(reply["result"])
    if reply.get("_fresh") and not _FIRST_NOTE_SHOWN and req.get("first_note", True):
        _FIRST_NOTE_SHOWN = True
        res.message += (f" (first check here: starting labkit's checker took "
                        f"{_WORKER.started_s:.1f} s; later checks are quicker)")
    return res


def run_function(name: str, fn, *, timeout: float | None = None) -> CheckResult:
    """``check.<name>(fn)`` in a notebook or a script: ``fn``'s cell goes to the worker."""
    from .framework import get
    from .loader import collect
    ex = get(name)
    if fn is None or not callable(fn):
        return CheckResult(name=name, passed=False, points=0.0, max_points=ex.points,
                           verdict="not implemented",
                           message=f"expected your function, got {type(fn).__name__}")
    try:
        spec = collect(fn)
    except TypeError as e:
        return CheckResult(name=name, passed=False, points=0.0, max_points=ex.points,
                           verdict="error", message=str(e))
    spec["name_fn"] = spec.pop("name")
    return _send({"op": "check", **spec, "name": name}, timeout)


def run_source(name: str, cell_source: str, imports: str = "", *, function: str | None = None,
               constants: dict | None = None, timeout: float | None = None) -> CheckResult:
    """Run check ``name`` on the function ``function`` (default: the cell's last ``def``) of a
    notebook cell given as text, with ``imports`` (earlier cells' import statements) — in the
    trusted worker, without executing the notebook. ``constants``: plain values the function
    reads from other cells (e.g. ``{"best_tile": 96}``)."""
    from .framework import get
    ex = get(name)
    if function is None:
        import ast
        try:
            defs = [n.name for n in ast.parse(cell_source).body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        except SyntaxError as e:
            return CheckResult(name=name, passed=False, points=0.0, max_points=ex.points,
                               verdict="error", message=f"the cell does not parse: {e}")
        if not defs:
            return CheckResult(name=name, passed=False, points=0.0, max_points=ex.points,
                               verdict="not implemented", message="no function defined in the cell")
        function = defs[-1]
    return _send({"op": "check", "name": name, "source": cell_source, "imports": imports,
                  "name_fn": function, "constants": dict(constants or {}), "first_note": False},
                 timeout)


def ping(timeout: float = 60.0) -> dict | None:
    reply, _ = _WORKER.request({"op": "ping", "name": "", "env": _env()}, timeout)
    return reply

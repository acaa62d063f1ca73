"""W's side of a plain-Python student function: a :class:`Proxy` the check body calls like
the function, which runs it in a child process C (:mod:`labkit.check.child`).

Arguments go to C by value (a pickle; labkit's functions by reference, the check's callables
as handles C calls back — W runs the callback, trusted code, and replies); the result and the
array arguments C changed come back as data (:mod:`labkit.check.wire`) and are copied into
W's arrays. A student exception comes back as its type name and text and is raised here as an
exception of that name (a subclass of the builtin one), so the check's messages are the ones
students saw before. A crash, an exit, a timeout or malformed data from C ends the check with
``error``. C is started (or a spare one taken) per check and killed after it.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import types

from . import wire
from .result import CheckFailure

__all__ = ["Proxy", "is_proxy", "spare"]

_SPARE: list = []

#: How long labkit's own start of C may take (a fresh interpreter importing numpy, numba,
#: labkit and the exercise's lab, then loading the cell's imports and definitions): none of it
#: is the student's time. On a quiet machine it takes 1–3 s; on a loaded one (parallel grading
#: beside a test suite on two cores) it has taken more than a short cell timeout, which used to
#: end honest students' checks with ``error``. The student's deadline starts after it.
STARTUP_S = 120.0


def is_proxy(obj) -> bool:
    return isinstance(obj, Proxy)


def _child_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LABKIT_SEED",)}
    return env


class _Child:
    """One C process and its pipes."""

    def __init__(self):
        from .runner import spawn

        self.proc, self.wfd, self.rfd = spawn(
            lambda r, w: [sys.executable, "-m", "labkit.check.child", str(r), str(w)], _child_env())
        self.ready = False

    def kill(self) -> int | None:
        for fd in (self.rfd, self.wfd):
            try:
                os.close(fd)
            except OSError:
                pass
        p = self.proc
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                p.kill()
        try:
            return p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None


def spare() -> None:
    """Start a child now (it imports numpy and labkit while W is idle) for the next check."""
    if not _SPARE:
        try:
            _SPARE.append(_Child())
        except OSError:
            pass


def _take() -> _Child:
    """A child for this check; the next one starts now, while this (plain-Python, untimed)
    check runs, rather than beside a later check's speed gates — unless the caller said this
    is the worker's last check (``LABKIT_CHECK_LAST=1``: the grader's last exercise of a
    notebook, whose worker stops after it; a spare would start only to be killed)."""
    child = _SPARE.pop() if _SPARE else _Child()
    if os.environ.get("LABKIT_CHECK_LAST") != "1":
        spare()
    return child


def _rebuild(kind: dict) -> BaseException:
    """An exception of the student's type name, text and builtin base (data only)."""
    import builtins
    tname = str(kind.get("type") or "Exception")[:80]
    module = str(kind.get("module") or "builtins")[:80]
    text = str(kind.get("text") or "")
    base = Exception
    for b in kind.get("bases") or ():
        c = getattr(builtins, str(b), None)
        if isinstance(c, type) and issubclass(c, Exception) and c not in (BaseException,):
            base = c
            break
    if not tname.isidentifier():
        tname = "Exception"
    try:
        cls = types.new_class(tname, (base,), {}, lambda ns: ns.update(
            __module__=module, __str__=lambda self: text))
        e = cls.__new__(cls)
        Exception.__init__(e, text)
    except TypeError:   # a base with its own layout (e.g. UnicodeDecodeError)
        e = Exception(text)
    return e


class Proxy:
    """Calls the student's function in C. ``inert``: W's own (never called) copy of it, when
    the strict loader kept one — its bytecode is what static checks read."""

    def __init__(self, req: dict, exercise, deadline: float, timeout: float, inert=None):
        self.req, self.exercise, self.deadline, self.timeout = req, exercise, deadline, timeout
        self.name = req.get("name_fn") or "your function"
        self._inert = inert if isinstance(inert, types.FunctionType) else None
        self.child: _Child | None = None
        self.failure: CheckFailure | None = None
        self.printed = 0
        self.started_s = 0.0         # labkit's start of C: added to the deadline
        self.calls = 0
        self.notes: list = []
        self._handles: list = []     # W's callables C may call, by id (for this check)
        self._cb_error: BaseException | None = None

    # -- what static code sees
    @property
    def __name__(self):
        return self.name

    def __getattr__(self, item):
        if item in ("__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__",
                    "__doc__", "__module__") and self.__dict__.get("_inert") is not None:
            return getattr(self.__dict__["_inert"], item)
        raise AttributeError(item)

    def __repr__(self):
        return f"<your function {self.name} (plain Python, run in a separate process)>"

    # -- lifetime
    def start(self) -> tuple[str | None, str, list]:
        """Load the cell in C: ``(error or None, verdict for the error, notes)``. The start has
        its own budget (:data:`STARTUP_S`); the time it took moves the student's deadline
        (``started_s``, which the worker passes on to its caller's timer)."""
        from .runner import read_frame
        from .hatches import mark_student_ran
        t0 = time.monotonic()
        start_by = max(self.deadline, t0 + STARTUP_S)
        try:
            self.child = _take()
            try:
                hello = read_frame(self.child.rfd, start_by, _loads=wire.loads_c2w)
            except TimeoutError:
                raise OSError(f"it did not start within {STARTUP_S:g} s — the machine is "
                              "very busy") from None
            if not (isinstance(hello, dict) and hello.get("ok")):
                err = hello.get("error") if isinstance(hello, dict) else None
                raise OSError(f"it did not start: {str(err)[:200]}" if err else
                              "it exited while starting")
            mark_student_ran()
            env = {k: v for k, v in os.environ.items() if k.startswith("LABKIT_")
                   and k != "LABKIT_SEED"}
            req = {k: self.req.get(k) for k in ("source", "imports", "constants", "filename",
                                                 "name_fn", "cell")}
            self._send({"op": "load", "req": req, "env": env, "exercise": self.exercise.name,
                        "answers": tuple(self.exercise.answers),
                        "module": getattr(self.exercise, "module", ""),
                        "allowed": tuple(getattr(self.exercise, "allowed", ()))})
            msg = self._recv(start_by)
        except CheckFailure as e:
            return e.message, e.verdict, []
        except (OSError, TimeoutError, ValueError) as e:
            return f"labkit's checker could not start its child process ({e}) — a labkit bug?", \
                "error", []
        self.started_s = time.monotonic() - t0
        self.deadline += self.started_s
        notes = [str(n)[:300] for n in (msg.get("notes") or [])][:5]
        if msg.get("op") != "loaded":
            return "your cell sent the checker something it did not ask for", "error", notes
        if not msg.get("ok"):
            verdict = str(msg.get("verdict") or "error")
            from .guard import ANSWER
            if verdict not in ("not implemented", ANSWER):
                verdict = "error"
            return str(msg.get("error") or "loading your cell failed")[:2000], verdict, notes
        return None, "", notes

    def close(self) -> None:
        if self.child is not None:
            self.child.kill()
            self.child = None

    # -- frames
    def _send(self, obj) -> None:
        from .runner import write_frame
        data = wire.dumps_w2c(obj, self._handles)
        try:
            write_frame(self.child.wfd, data, _dumps=lambda b: b)
        except OSError:
            self._died()

    def _recv(self, deadline: float | None = None) -> dict:
        from .runner import read_frame
        if self.child is None:
            raise self.failure
        try:
            msg = read_frame(self.child.rfd, deadline or self.deadline, _loads=wire.loads_c2w)
        except TimeoutError:
            self.close()
            if deadline is not None:         # still starting: labkit's time, not the student's
                self._fail(f"your cell did not load within {STARTUP_S:g} s (the machine is very "
                           "busy, or an import in the cell hangs)", stopped="load-timeout")
            self._fail(f"your function did not return within {self.timeout:g} s (an endless "
                       "loop?) — the checker was stopped and restarted", stopped="timeout")
        except Exception:  # noqa: BLE001 - malformed frame: C's data is not trusted
            self.close()
            self._fail("your function sent the checker malformed data — its process was "
                       "stopped (0 points)")
        if msg is None:
            self._died()
        if not isinstance(msg, dict):
            self.close()
            self._fail("your function sent the checker malformed data (0 points)")
        return msg

    def _fail(self, message: str, stopped: str | None = None):
        """End the check with ``error``; ``stopped`` (as :func:`.runner.stopped_kind`) when the
        child process was stopped or died."""
        self.failure = CheckFailure("error", message, {"stopped": stopped} if stopped else None)
        raise self.failure

    def _died(self):
        from .runner import crash_message
        code = self.child.kill() if self.child is not None else None
        self.child = None
        self._fail(crash_message(f"crash:{code}", self.timeout), stopped="crash")

    # -- the call
    def __call__(self, *args, **kwargs):
        if self.failure is not None:
            raise self.failure
        if self.child is None:
            raise CheckFailure("error", "your function's process is not running")
        self.calls += 1
        self._send({"op": "call", "args": args, "kwargs": kwargs})
        handles = self._handles
        while True:
            msg = self._recv()
            op = msg.get("op")
            self.printed = max(self.printed, int(msg.get("printed") or 0)) \
                if isinstance(msg.get("printed"), int) else self.printed
            if op == "cb":
                self._callback(handles, msg)
                continue
            if self._cb_error is not None and op in ("ret", "exc"):
                e, self._cb_error = self._cb_error, None
                raise e
            if op == "ret":
                try:
                    value = wire.decode(msg.get("value"))
                    for path, arr in msg.get("mutated") or ():
                        self._copy_back(args, path, wire.decode(arr))
                except (ValueError, TypeError, KeyError, IndexError):
                    self.close()
                    self._fail("your function returned data the checker cannot read (0 points)")
                return value
            if op == "exc":
                kind = msg.get("kind")
                text = str(msg.get("text") or "")[:2000]
                if kind == "tampered":
                    from .guard import Tampered
                    self.close()
                    self.failure = CheckFailure("error", text)
                    raise Tampered(text)
                if kind == "answer":
                    from .guard import ANSWER
                    self.failure = CheckFailure(ANSWER, text)
                    raise self.failure
                raise _rebuild(msg)
            self.close()
            self._fail("your function sent the checker something it did not ask for (0 points)")

    def _callback(self, handles, msg) -> None:
        try:
            fn = handles[int(msg.get("id"))]
            a = wire.decode(msg.get("args"))
            kw = wire.decode(msg.get("kwargs"))
            if not isinstance(a, list) or not isinstance(kw, dict) or \
                    not all(isinstance(k, str) for k in kw):
                raise ValueError("bad callback arguments")
        except (ValueError, TypeError, IndexError, KeyError):
            self.close()
            self._fail("your function called the check's callback with data the checker "
                       "cannot read (0 points)")
        try:
            out = fn(*a, **kw)
            reply = {"op": "cb_ret", "value": out}
        except Exception as e:  # noqa: BLE001 - the check's callback refused the data
            self._cb_error = self._cb_error or e      # W's own exception ends the call
            reply = {"op": "cb_err", "type": type(e).__name__, "text": str(e)[:2000]}
        self._send(reply)

    @staticmethod
    def _copy_back(args, path, new) -> None:
        import numpy as np
        obj = args
        for i in path:
            obj = obj[int(i)]
        if isinstance(obj, np.ndarray) and isinstance(new, np.ndarray) and \
                obj.shape == new.shape and obj.flags.writeable:
            np.copyto(obj, new.astype(obj.dtype, copy=False), casting="unsafe")

"""The child process C that runs a plain-Python student function for the trusted worker W:
``python -m labkit.check.child <read fd> <write fd>`` (started by :mod:`labkit.check.proxy`).

C is untrusted once it has loaded the cell: it loads the cell's definitions the permissive way
(classes, any decorator — :func:`labkit.check.cells._load`), wraps the function in a
:class:`~labkit.check.guard.Guard` (labkit's answers traced, tampering seen, as in W before),
then serves calls: arguments arrive as a pickle from W, results, changed array arguments and
exceptions go back as tagged JSON (:mod:`labkit.check.wire`), and the check's callbacks are
called back through W. Nothing C sends is a verdict: W's check judges the data.
"""
from __future__ import annotations

import os
import sys


def _prctl_deathsig() -> None:
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except Exception:  # noqa: BLE001 - not Linux: the worker kills us anyway
        pass


def _arrays(args, path=(), depth=0, out=None):
    """``[(path, array)]`` of the numpy arrays among ``args`` (tuples and lists followed)."""
    import numpy as np
    out = [] if out is None else out
    if isinstance(args, np.ndarray):
        out.append((list(path), args, args.copy()))
    elif isinstance(args, (tuple, list)) and depth < 3 and len(args) <= 64:
        for i, a in enumerate(args):
            _arrays(a, path + (i,), depth + 1, out)
    return out


def _changed(before, now) -> bool:
    import numpy as np
    if before.shape != now.shape or before.dtype != now.dtype:
        return True
    return not np.array_equal(before, now, equal_nan=before.dtype.kind in "fc")


def main() -> int:
    """Load the student's function (:func:`_load_student`), then serve the worker's calls
    (:func:`_serve`)."""
    rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
    _prctl_deathsig()
    from labkit.check.worker import _silence
    send, recv = _channel(rfd, wfd)
    sink = _silence()
    baseline = _ready(send)
    if baseline is None:
        return 1
    req = recv()
    if req is None:
        return 0
    g = _load_student(req, baseline, send)
    if g is None:
        return 0
    return _serve(g, recv, send, sink)


def _channel(rfd: int, wfd: int):
    """``(send, recv)`` over the pipes to the worker: tagged JSON out, pickles in, a callable
    argument of the check's arriving as a callback that calls back through the worker."""
    from labkit.check import wire
    from labkit.check.runner import read_frame, write_frame

    def send(obj):
        write_frame(wfd, obj, _dumps=wire.dumps_c2w)

    def make_callback(hid):
        def callback(*a, **kw):
            send({"op": "cb", "id": hid, "args": wire.encode(list(a)),
                  "kwargs": wire.encode(dict(kw))})
            reply = read_frame(rfd, _loads=lambda d: wire.loads_w2c(d, make_callback))
            if reply is None:
                os._exit(0)
            if reply.get("op") == "cb_ret":
                return reply["value"]
            raise _rebuild(reply.get("type", "Exception"), reply.get("text", ""))
        callback.__name__ = f"check_callback_{hid}"
        return callback

    def recv():
        return read_frame(rfd, _loads=lambda d: wire.loads_w2c(d, make_callback))

    return send, recv


def _ready(send):
    """numba and numpy imported and the baseline snapshot taken (labkit's lab modules join it
    as they are imported); the worker told whether that worked. The snapshot, or None."""
    try:
        import numba  # noqa: F401
        import numpy  # noqa: F401

        from labkit.check import guard
        baseline = guard.Snapshot()
    except Exception as e:  # noqa: BLE001
        send({"op": "ready", "ok": False, "error": f"{type(e).__name__}: {e}"})
        return None
    send({"op": "ready", "ok": True})
    return baseline


def _load_student(req: dict, baseline, send):
    """The student's function loaded the permissive way (:func:`labkit.check.cells._load`)
    after the exercise's lab, wrapped in a run-time :class:`~labkit.check.guard.Guard` and
    checked statically; the worker told the outcome. The guard, or None."""
    from labkit.check import guard
    os.environ.update(req.get("env") or {})
    sys.path.insert(0, os.getcwd())
    from labkit.check.cells import _load
    from labkit.check.result import CheckFailure
    _import_lab(req.get("module") or "")
    baseline.extend()
    fn, notes, err = _load(req["req"], {})
    ch = baseline.changes()
    if ch:
        send({"op": "loaded", "ok": False, "verdict": "error", "notes": notes,
              "error": f"your cell changed {', '.join(ch[:3])} while loading — the checker's "
                       "own functions must not be replaced"})
        return None
    if err is not None:
        send({"op": "loaded", "ok": False, "notes": notes, "error": err,
              "verdict": "not implemented" if "not defined" in err else "error"})
        return None
    g = guard.Guard(fn, req.get("answers") or (), name=req.get("exercise", ""), snapshot=baseline,
                    allowed=tuple(req.get("allowed") or ()), runtime=True)
    try:
        g.static_checks()
    except CheckFailure as e:
        send({"op": "loaded", "ok": False, "verdict": e.verdict, "error": e.message,
              "notes": notes})
        return None
    send({"op": "loaded", "ok": True, "notes": notes,
          "kind": "dispatcher" if guard.is_dispatcher(fn) else type(fn).__name__})
    return g


def _serve(g, recv, send, sink) -> int:
    """Each call of the worker answered (:func:`_call`) until the pipe closes or the student's
    code tampered."""
    from labkit.check import guard, wire
    from labkit.check.result import CheckFailure
    while True:
        msg = recv()
        if msg is None:
            return 0
        reply = _call(g, msg, sink, wire, guard.Tampered, CheckFailure)
        send(reply)
        if reply.get("kind") == "tampered":
            return 0


def _call(g, msg: dict, sink, wire, tampered: type, failure: type) -> dict:
    """The reply to one call: its result and the array arguments it changed, or what it raised
    — tampering, labkit's answer used (``failure``) or the student's own exception."""
    args, kwargs = msg.get("args", ()), msg.get("kwargs") or {}
    watched = _arrays(list(args))
    try:
        out = g(*args, **kwargs)
        value = wire.encode(out)
    except tampered as e:
        return {"op": "exc", "kind": "tampered", "text": str(e), "printed": sink.n}
    except failure as e:
        return {"op": "exc", "kind": "answer", "verdict": e.verdict, "text": e.message,
                "printed": sink.n}
    except Exception as e:  # noqa: BLE001 - the student's exception, described to W
        return _described(e, sink)
    mutated = [[p, wire.encode(now)] for p, now, before in
               ((p, a, b) for p, a, b in watched) if _changed(before, now)]
    return {"op": "ret", "value": value, "mutated": mutated, "printed": sink.n}


def _described(e: Exception, sink) -> dict:
    """The student's exception ``e`` described to the worker (type, module, text, builtin
    bases)."""
    try:
        text = str(e)
    except Exception:  # noqa: BLE001
        text = ""
    return {"op": "exc", "kind": "raise", "type": type(e).__name__[:80],
            "module": (type(e).__module__ or "")[:80], "text": text[:4000],
            "bases": [c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins"],
            "printed": sink.n}


def _import_lab(module: str) -> None:
    """Import every module of the exercise's lab (``labkit.<lab>.*``) before the student's cell
    loads, so that the run-time tracing covers them: a module the student imports by a computed
    name during a call is one already traced."""
    import importlib
    import pkgutil
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "labkit":
        return
    try:
        pkg = importlib.import_module(".".join(parts[:2]))
    except Exception:  # noqa: BLE001 - the check itself will report a broken lab
        return
    for info in pkgutil.walk_packages(getattr(pkg, "__path__", []), pkg.__name__ + "."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001
            continue


def _rebuild(tname: str, text: str) -> Exception:
    import builtins
    cls = getattr(builtins, str(tname), None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    try:
        return cls(text)
    except Exception:  # noqa: BLE001
        return RuntimeError(text)


if __name__ == "__main__":
    sys.exit(main())

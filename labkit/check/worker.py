"""The trusted check worker: ``python -m labkit.check.worker <read fd> <write fd>``.

Started by :mod:`labkit.check.runner`. Before any student code, it binds what it needs (the
pipe, marshal, the clock in :mod:`labkit.check.speed`), points file descriptors 0–2 at
/dev/null, makes itself non-dumpable (no ptrace, no /proc/<pid>/mem or fd access by other
processes of the user), drops the working directory from ``sys.path``, imports numpy, numba,
labkit and every lab's checks, and snapshots the identities of their functions.

No student Python runs in this process. Per request it loads the cell with
:func:`labkit.check.strict.load` (imports of installed packages, ``def`` with numba's
decorators, constants: nothing of the student's is called) into a fresh namespace. A numba
function is compiled and run here — every compiled overload of the cell's functions is first
inspected for numba's escape hatches (:mod:`labkit.check.hatches`: objmode, ctypes/cffi,
intrinsics …), which end the check "not judged". Any other function runs in a child process
through a :class:`labkit.check.proxy.Proxy`: the check body here calls it like the function
and judges the data that comes back. After tampering it answers and exits.
"""
from __future__ import annotations

import hashlib
import io
import marshal
import os
import sys
import tempfile
import types

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


def _cell_file(source: str) -> str:
    d = os.path.join(tempfile.gettempdir(), f"labkit-cells-{os.getuid()}")
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, "cell_" + hashlib.sha256(source.encode()).hexdigest()[:16] + ".py")
    if not os.path.exists(path):
        tmp = path + f".{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    return path


def _statements(imports: str) -> list:
    """Each import statement of ``imports`` on its own (one failing import skips only itself)."""
    import ast
    try:
        tree = ast.parse(imports)
    except SyntaxError:
        return []
    return [ast.Module(body=[n], type_ignores=[]) for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))]


def _cell_key(req: dict) -> str:
    return hashlib.sha256(marshal.dumps((req.get("source") or "", req.get("imports") or "",
                                         sorted((req.get("constants") or {}).items()),
                                         req.get("filename") or ""))).hexdigest()


def _cell_module(req: dict, source: str) -> tuple[dict, str]:
    """A fresh ``labkit_cell_*`` module for the cell (registered: numba's cache and pickling
    look modules up by name) and the file name its code is compiled with."""
    import builtins
    import linecache
    filename = req.get("filename") or ""
    if not filename or not os.path.exists(filename):
        filename = _cell_file(source)
    else:
        with open(filename, encoding="utf-8") as f:
            if f.read() != source:
                filename = _cell_file(source)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    modname = "labkit_cell_" + os.path.basename(filename).rsplit(".", 1)[0].replace("-", "_")
    modname = "".join(c if c.isalnum() or c == "_" else "_" for c in modname)
    module = types.ModuleType(modname)
    module.__file__ = filename
    sys.modules[modname] = module
    ns = vars(module)
    ns["__builtins__"] = builtins
    return ns, filename


def _silence() -> "_Sink":
    """fds 0–2 to /dev/null (unless LABKIT_CHECK_DEBUG=1), sys.stdout/stderr a counting sink."""
    devnull = os.open(os.devnull, os.O_RDWR)
    if os.environ.get("LABKIT_CHECK_DEBUG") != "1":
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
    sink = _Sink()
    sys.stdout = sys.stderr = sink
    return sink


def _load(req: dict, cache: dict):
    """The permissive load, run only in the child process C (:mod:`labkit.check.child`): the
    cell's definitions (:func:`labkit.check.loader.definitions`: classes and any decorator
    included) executed. ``(function or None, message notes, error text or None)``."""
    from labkit.check.loader import definitions
    notes = []
    source = req.get("source") or ""
    key = _cell_key(req)
    hit = cache.get(key)
    if hit is None:
        try:
            kept, dropped = definitions(source)
        except SyntaxError as e:
            return None, notes, f"the cell does not parse: {e.msg} (line {e.lineno})"
        ns, filename = _cell_module(req, source)
        for stmt in _statements(req.get("imports") or ""):
            try:
                exec(compile(stmt, "<imports>", "exec"), ns)
            except Exception:  # noqa: BLE001 - an earlier cell's import that fails here
                pass
        ns.update(req.get("constants") or {})
        try:
            exec(compile(kept, filename, "exec"), ns)
        except Exception as e:  # noqa: BLE001 - the student's definitions may raise
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            return None, notes, f"loading your cell raised {type(e).__name__}: {text}".rstrip(": ")
        hit = cache[key] = (ns, dropped)
    ns, dropped = hit
    if dropped and req.get("cell", True):     # a .py module's other statements are no news
        notes.append(_dropped_note(dropped))
    name = req.get("name_fn") or ""
    if name not in ns:
        return None, notes, missing_message(source, name)
    return ns[name], notes, None


def _assignments(source: str, name: str):
    """(kind, line) of each top-level statement of ``source`` that binds ``name``: ``"def"``,
    ``"lambda"`` or ``"value"`` (any other assignment)."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            out.append(("def", node.lineno))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                kind = "lambda" if isinstance(node.value, ast.Lambda) else "value"
                out.append((kind, node.lineno))
    return out


def missing_message(source: str, name: str) -> str:
    """Why the cell's definitions do not give ``name``: a lambda, a value built by code, or no
    definition at all — each in its own words."""
    who = name or "your function"
    binds = _assignments(source, name) if name else []
    kinds = {k for k, _ in binds}
    if "lambda" in kinds:
        line = next(ln for k, ln in binds if k == "lambda")
        return (f"{who} is a lambda (line {line}): the check loads functions written with def — "
                f"write `def {who}(…):` (with @njit where the exercise compiles it)")
    if "value" in kinds:
        line = next(ln for k, ln in binds if k == "value")
        return (f"{who} is assigned by code (line {line}), which the check does not run — "
                f"define it with `def {who}(…):` in the exercise cell")
    return (f"{who} is not defined by the cell's definitions (the check loads only its imports, "
            "functions and constants)")


def redefined_note(source: str, name: str) -> str:
    """A note when ``name`` is defined more than once in the cell (the last one is judged)."""
    lines = [ln for k, ln in _assignments(source, name) if k == "def"] if name else []
    if len(lines) < 2:
        return ""
    return (f"{name} is defined {len(lines)} times in this cell (lines "
            f"{', '.join(map(str, lines))}): the check judges the last one, line {lines[-1]}, "
            "as Python does — delete the others")


def _prune_path() -> None:
    """The working directory (a submission could put ``scipy.py`` there) is not searched."""
    from labkit.check.runner import _labkit_root
    cwd = os.path.realpath(os.getcwd())
    keep = os.path.realpath(_labkit_root())
    sys.path[:] = [p for p in sys.path
                   if p and (os.path.realpath(p) != cwd or os.path.realpath(p) == keep)]


def _strict(req: dict, cache: dict):
    """(namespace or None, dropped statements, error text or None): the cell loaded with no
    student code run (:mod:`labkit.check.strict`)."""
    from labkit.check import hatches, strict
    source = req.get("source") or ""
    key = _cell_key(req)
    hit = cache.get(key)
    if hit is not None:
        return hit[0], hit[1], None
    ns, filename = _cell_module(req, source)
    ns.update(req.get("constants") or {})
    try:
        dropped = strict.load(source, ns, filename, req.get("imports") or "")
    except SyntaxError as e:
        return None, [], f"the cell does not parse: {e.msg} (line {e.lineno})"
    except Exception as e:  # noqa: BLE001 - e.g. a NameError of the cell's own constants
        text = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return None, [], f"loading your cell raised {type(e).__name__}: {text}".rstrip(": ")
    hatches.uncache(ns)
    cache[key] = (ns, dropped)
    return ns, dropped, None


def _dropped_note(dropped: list) -> str:
    shown = "; ".join(dropped[:3]) + (f" and {len(dropped) - 3} more" if len(dropped) > 3 else "")
    return (f"not run by the check (only imports, functions and constants are loaded): "
            f"{shown}")


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
    global _read_fd, _write_fd
    rfd, wfd = _read_fd, _write_fd
    from labkit.check.runner import read_frame, write_frame
    import labkit.check.runner as runner
    runner._IN_WORKER = True
    runner.nodump()
    sink = _silence()
    try:
        import time

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
        return 1
    write_frame(wfd, {"ready": True, "pid": os.getpid()})
    cache: dict = {}
    _environ = os.environ
    while True:
        req = read_frame(rfd)
        if req is None:
            return 0
        op = req.get("op")
        if op == "ping":
            write_frame(wfd, {"pong": True, "pid": os.getpid()})
            continue
        t0 = time.monotonic()
        for k in [k for k in _environ if k.startswith("LABKIT_")]:
            if k not in req.get("env", {}):
                del _environ[k]
        _environ.update(req.get("env") or {})
        name = req.get("name", "")
        restart = False
        try:
            ex = framework.get(name)
        except AttributeError as e:
            write_frame(wfd, {"result": {"name": name, "passed": False, "points": 0.0,
                                         "max_points": 0.0, "verdict": "error",
                                         "message": str(e), "details": {}}})
            continue
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
            ch = baseline.changes()
            if ch:
                res = framework.CheckResult(name, False, 0.0, ex.points, "error",
                                            f"your cell changed {', '.join(ch[:3])} while loading"
                                            " — the checker's own functions must not be replaced",
                                            {})
                restart = True
            elif err is not None:
                res = framework.CheckResult(name, False, 0.0, ex.points, verdict or "error", err,
                                            {})
            else:
                res = framework.run_local(ex, fn)
                if baseline.changes() or res.verdict == "error" and \
                        "must not be replaced" in res.message:
                    restart = px is None or bool(baseline.changes())
                if px is not None and px.failure is not None and \
                        (res.passed or px.failure.message not in res.message):
                    res = framework.CheckResult(name, False, 0.0, ex.points,
                                                px.failure.verdict, px.failure.message, {})
        finally:
            if px is not None:
                sink.n += px.printed
                px.close()
        extra = list(notes)
        if sink.n > 10_000:
            extra.append(f"your function printed {sink.n / 1e6:.1f} MB (discarded)")
        if extra:
            res.message = framework.short(res.message + "; " + "; ".join(extra))
        d = res.to_dict()
        write_frame(wfd, {"result": d, "restart": restart})
        if restart:
            return 0


if __name__ == "__main__":
    sys.exit(main())

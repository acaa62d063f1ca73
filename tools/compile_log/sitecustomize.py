"""Log every numba compilation of every Python process of a run (the test suite's workers, the
notebooks' kernels, the check workers and children): put this folder first on ``PYTHONPATH``
and name a log file in ``LABKIT_COMPILE_LOG``; ``tools/compile_report.py`` reads it.

    LABKIT_COMPILE_LOG=/tmp/compiles.jsonl PYTHONPATH=$PWD/tools/compile_log make test
    .venv/bin/python tools/compile_report.py /tmp/compiles.jsonl

One JSON line per compilation, appended when it ends: the process, its command line's tail, the
test that was running (``PYTEST_CURRENT_TEST``, inherited by the processes a test starts), the
function, its argument types, the start (epoch seconds), wall and CPU seconds, and the CPU of
the compilation itself (``self_cpu``: nested compilations of the functions it calls
subtracted). Nothing is imported before numba is: the listener is registered when
``numba.core.event`` is first imported (an import hook), so a process that never imports numba
is unchanged. Without ``LABKIT_COMPILE_LOG`` this file does nothing."""
import os
import sys

_LOG = os.environ.get("LABKIT_COMPILE_LOG")


def _register(event) -> None:
    import json
    import threading
    import time

    local = threading.local()
    dumps = json.dumps          # bound now: code that runs later may replace json.dumps

    class _Listener(event.Listener):
        def on_start(self, ev):
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            stack.append([time.time(), time.perf_counter(), time.process_time(), 0.0])

        def on_end(self, ev):
            stack = getattr(local, "stack", None)
            if not stack:
                return
            t0, w0, c0, nested = stack.pop()
            cpu = time.process_time() - c0
            if stack:
                stack[-1][3] += cpu
            d = ev.data.get("dispatcher")
            f = getattr(d, "py_func", None)
            rec = {"pid": os.getpid(), "argv": " ".join(sys.argv)[-80:],
                   "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
                   "name": f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
                   "args": str(ev.data.get("args"))[:400], "start": round(t0, 3),
                   "wall": round(time.perf_counter() - w0, 4), "cpu": round(cpu, 4),
                   "self_cpu": round(cpu - nested, 4)}
            try:
                with open(_LOG, "a") as fh:      # one short append per line: no interleaving
                    fh.write(dumps(rec) + "\n")
            except OSError:
                pass

    event.register("numba:compile", _Listener())


if _LOG:
    import importlib.abc
    import importlib.machinery

    class _Hook(importlib.abc.MetaPathFinder):
        """Wraps the loader of numba.core.event to register the listener once it is loaded."""

        def find_spec(self, name, path, target=None):
            if name != "numba.core.event":
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    _register(module)
                except Exception:  # noqa: BLE001 - a measurement aid never breaks the process
                    pass

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Hook())

"""The student's function as a check body sees it: a :class:`Guard`.

* **Delegation** (``uses labkit's answer``): the exercise's answer kernels (``answers=`` of
  ``@exercise``) may not be the student's function, be reachable from its bytecode (globals,
  attribute chains, closures, defaults, nested and helper functions of the same cell), be
  called from its numba code (the typing of every compiled overload, helpers followed), or be
  called while it runs (the answers are replaced by tracing wrappers in every ``labkit.*``
  module during each call, so ``getattr(A, "trans" + "pose_batch")`` and ``importlib`` are seen).
  In the child process that runs a plain-Python student (``runtime=True``) every other
  off-limits labkit function is traced the same way, and every off-limits labkit numba kernel
  changes class to one whose ``__call__`` records the call: a name computed at run time reaches
  a traced object. A call counts when the code calling it is not labkit's or numba's own (an
  allowed labkit function may call labkit's kernels).
* **Tampering**: the identities of the functions, classes and modules in numpy, json, time,
  math, marshal, builtins and ``labkit.*`` are snapshotted before student code runs and
  verified after each call (the first 64, then every 16th, and at the check's end), with the
  thread, trace and import-hook state. A change ends the check
  with ``error`` (0 points); the worker that saw it is then replaced.

In the trusted worker the guarded function is a numba dispatcher or a
:class:`~labkit.check.proxy.Proxy` (plain Python, run in a child process); the child wraps the
real function in its own Guard, so run-time delegation and tampering there are reported to the
worker as data (they can only fail the check).

The checks live in :mod:`labkit.check.delegation` (static), :mod:`labkit.check.tracing` (run
time) and :mod:`labkit.check.snapshot` (tampering); :class:`Guard` puts them together.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from .delegation import ANSWER, _ids, is_dispatcher, resolve_answers  # noqa: F401
from .result import CheckFailure
from .snapshot import WATCHED, Snapshot  # noqa: F401
from .tracing import Tracing

__all__ = ["Guard", "Tampered", "Snapshot", "unwrap", "resolve_answers", "is_dispatcher"]

#: Calls verified one by one; after that every EVERY-th call (and always at the check's end) —
#: a check calling the student thousands of times (job_coords) would spend seconds verifying.
FULL_CALLS = 64
EVERY = 16


class Tampered(Exception):
    """Student code changed something the checker relies on."""


def unwrap(fn):
    """The student's own callable behind a :class:`Guard` (gates inspect this)."""
    return fn.fn if isinstance(fn, Guard) else fn


def _allowed_for(name: str) -> tuple[str, ...]:
    """The labkit functions exercise ``name`` lets the student's code call (``allowed=`` of its
    ``@exercise``); none for an unknown name."""
    if not name:
        return ()
    try:
        from .framework import _REGISTRY
    except ImportError:       # pragma: no cover - framework is part of this package
        return ()
    ex = _REGISTRY.get(name)
    return tuple(getattr(ex, "allowed", ()) or ())


class Guard(Tracing):
    """Wraps the student's callable for a check body; attribute access passes through."""

    def __init__(self, fn: Callable, answers=(), *, name: str = "", snapshot: Snapshot | None = None,
                 allowed=None, runtime: bool = False):
        self.fn = fn
        self.runtime = runtime          # trace every off-limits labkit function (child process)
        self._swapped: list[tuple[Any, type]] = []
        self.name = name
        self.answers = resolve_answers(answers)
        self._answer_ids = {}
        for label, obj in self.answers:
            for i in _ids(obj):
                self._answer_ids[i] = label
        if allowed is None:
            allowed = _allowed_for(name)
        self._allowed = {i for _, obj in resolve_answers(allowed) for i in _ids(obj)}
        self.snapshot = snapshot or Snapshot()
        self.delegated: str | None = None
        self.tampered: list[str] = []
        self.calls = 0
        self._checked_sigs: set = set()
        self._tracers: list[tuple[types.ModuleType, str, Any]] = []
        self._active = 0
        self._ignore: dict = {}
        self._where = None

    # -- pass-through so `hasattr(student, "signatures")`, `.py_func` … keep working
    def __getattr__(self, item):
        return getattr(self.fn, item)

    @property
    def __name__(self):  # noqa: D401 - the student's function name
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    # -- the call
    def __call__(self, *args, **kwargs):
        self.snapshot.extend()
        self.precompile(args)
        self.calls += 1
        with self.tracing():
            out = self.fn(*args, **kwargs)
        if self.calls <= FULL_CALLS or self.calls % EVERY == 0:
            self.verify()
        elif self.delegated:
            self.verify()
        return out

    def verify(self) -> None:
        """Raise :class:`Tampered` / end with ``uses labkit's answer`` if the last calls did so."""
        ch = self.snapshot.changes(self._ignore)
        if ch:
            self.tampered = ch
            raise Tampered(f"your code changed {', '.join(ch[:3])} — the checker's own "
                           "functions must not be replaced (0 points)")
        if self.delegated:
            raise CheckFailure(ANSWER, f"{self.delegated} — write the exercise's code yourself; "
                                       "labkit's kernels are there to compare with")

    def late_verdict(self) -> tuple[str, str] | None:
        """A verdict that overrides the body's: tampering, then delegation."""
        try:
            self.verify()
        except Tampered as e:
            return "error", str(e)
        except CheckFailure as e:
            return e.verdict, e.message
        return None

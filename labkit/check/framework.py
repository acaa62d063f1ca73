"""The exercise registry and the in-process part of a check: seeds, notes, verdict mapping.

``@exercise(name, points, answers=(...))`` registers a check body; ``check.<name>(fn)`` finds it
through :mod:`labkit.registry` (each lab's ``labkit.<lab>.checks`` module, imported with
importlib — this package never imports a lab statically). Where the body runs is decided by
:meth:`Exercise.__call__`: exercises of registry labs run in the trusted worker
(:mod:`labkit.check.runner`); others (a test's fake exercise, ``--exercise-module``) run here.
In both places the body receives the student's function wrapped in a
:class:`labkit.check.guard.Guard` (delegation tracing, tamper detection); in the worker that
function is a numba dispatcher or, for plain Python, a :class:`labkit.check.proxy.Proxy`.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import secrets
import warnings
import zlib
from typing import Callable

import numpy as np

from .result import MAX_MESSAGE, CheckFailure, CheckResult

__all__ = ["Exercise", "exercise", "seed", "rng", "note", "award", "names", "get", "run",
           "speed_enforced", "speed_not_judged", "current", "last"]


# ---------------------------------------------------------------- seeds and inputs
def seed() -> int:
    """The seed for this check run: ``LABKIT_SEED`` if set (grading), else a fresh random one."""
    env = os.environ.get("LABKIT_SEED")
    if env not in (None, ""):
        try:
            return int(env)
        except ValueError:
            return zlib.crc32(env.encode())
    return secrets.randbits(63)


def rng(salt: str | None = None) -> np.random.Generator:
    """A fresh ``numpy`` Generator seeded from :func:`seed` (and ``salt``, e.g. the exercise)."""
    s = seed()
    if salt is None:
        salt = _current.name if _current is not None else ""
    return np.random.default_rng([s, zlib.crc32(salt.encode())])


def speed_enforced() -> bool:
    """True unless ``LABKIT_SPEED=report`` (tests/CI); grading (``LABKIT_GRADING``) always enforces."""
    if os.environ.get("LABKIT_GRADING"):
        return True
    return os.environ.get("LABKIT_SPEED", "").lower() != "report"


# ---------------------------------------------------------------- the running check
class _Context:
    def __init__(self, name: str, exercise: "Exercise | None" = None):
        self.name = name
        self.exercise = exercise
        self.notes: list[str] = []
        self.details: dict = {}
        self.guard = None
        self.share: float | None = None     # award(): a passed check's share of its points


_current: _Context | None = None
_REGISTRY: dict[str, "Exercise"] = {}


def current() -> _Context | None:
    """The running check's context (None outside a check)."""
    return _current


def note(text: str) -> None:
    """Add a remark to the running check's message (e.g. "32 int16 lanes"); no-op outside one."""
    if _current is not None and text:
        _current.notes.append(str(text))


def speed_not_judged(why: str) -> None:
    """The running check passes on other proof while speed could not be judged now (a machine
    too busy): ``why`` joins the message and ``details["speed_not_judged"]`` marks the result, so
    the grader puts the row up for review (:func:`labkit.grade.report.review_reason`) — a field,
    not the message's wording."""
    note(why)
    if _current is not None:
        _current.details["speed_not_judged"] = str(why)


def award(share: float) -> None:
    """A passed check earns ``share`` (0 < share ≤ 1) of its points instead of all of them: a
    challenge's tier (:mod:`labkit.check.challenge`). The result stays ``passed`` — nbgrader
    reads a grade cell's printed points as partial credit only from a cell that did not raise,
    and the grader scales ``points / max_points`` of a passed row. No-op outside a check."""
    share = float(share)
    if not 0.0 < share <= 1.0:
        raise ValueError(f"a passed check's share of its points is in (0, 1], got {share!r}; "
                         "a check that earns nothing fails with a verdict instead")
    if _current is not None:
        _current.share = share


class Exercise:
    """A registered check: call it with the student's function to get a :class:`CheckResult`."""

    def __init__(self, name: str, points: float, body: Callable, module: str,
                 answers: tuple[str, ...] = (), outputs: tuple[int, ...] = (),
                 allowed: tuple[str, ...] = ()):
        self.name, self.points, self.body, self.module = name, points, body, module
        self.answers = tuple(answers)
        self.allowed = tuple(allowed)
        self.outputs = tuple(outputs)
        self.__doc__ = body.__doc__
        self.__name__ = name

    @property
    def trusted(self) -> bool:
        """True when this exercise runs in the trusted worker (it belongs to a registry lab)."""
        if os.environ.get("LABKIT_CHECK_INPROCESS") == "1":
            return False
        from labkit import registry
        return any(self.module == lab.module or self.module.startswith(lab.module + ".")
                   for lab in registry.LABS)

    def __call__(self, student=None, *args, strict: bool = False, **kwargs) -> CheckResult:
        """Run the check on ``student``; ``strict=True`` raises AssertionError on failure."""
        from . import runner
        if runner.in_worker() or not self.trusted or args or kwargs:
            result = run_local(self, student, args, kwargs)
        else:
            result = runner.run_function(self.name, student)
        return finish(result, strict)

    def __repr__(self) -> str:
        return f"<labkit check {self.name!r} ({self.points:g} pt) from {self.module}>"


#: exercises whose check passed in this process (this notebook's kernel): see :func:`earned`
_EARNED: set[str] = set()


def earned(name: str) -> bool:
    """True once ``check.<name>(…)`` has passed in this kernel. A notebook cell that reveals an
    exercise's answer (a measured latency, a computed n) shows it only then: Run All on an
    unsolved copy must not print the answer right below its exercise."""
    get(name)                                   # an unknown exercise name is an error
    return name in _EARNED


#: the latest result of each exercise's check in this process (see :func:`last`)
_LAST: dict[str, CheckResult] = {}


def last(name: str) -> CheckResult | None:
    """The result of the latest ``check.<name>(…)`` in this kernel, passed or not (None before
    it ran): what a notebook cell reads to show a check's details — a challenge's feedback
    (:func:`labkit.check.challenge.feedback`)."""
    get(name)                                   # an unknown exercise name is an error
    return _LAST.get(name)


def locked(name: str, what: str) -> str:
    """The one line such a cell shows instead, until :func:`earned` (``name``)."""
    get(name)
    return (f"🔒 This cell shows {what} once `check.{name}` has passed in this notebook: "
            "solve the exercise above, run its check, then run this cell again.")


def finish(result: CheckResult, strict: bool = False) -> CheckResult:
    """Name the next hint on a failure, record (``LABKIT_RESULTS``) and apply strict mode
    (``LABKIT_CHECK_STRICT``, nbgrader)."""
    _LAST[result.name] = result
    if result.passed:
        _EARNED.add(result.name)
    else:
        _EARNED.discard(result.name)            # a later failing attempt locks it again
    if not result.passed:
        from labkit import hints
        pointer = hints.pointer(result.name)
        if pointer and pointer not in result.message:
            result.message = f"{result.message} — {pointer}" if result.message else pointer
    if os.environ.get("LABKIT_RESULTS"):
        _record(result)
    strict = (strict or os.environ.get("LABKIT_CHECK_STRICT") == "1"
              or bool(os.environ.get("NBGRADER_EXECUTION")))  # nbgrader autograde/validate
    if strict and not result.passed:
        raise AssertionError(str(result))
    return result


def short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def run_local(ex: Exercise, student, args=(), kwargs=None) -> CheckResult:
    """Run ``ex``'s body here on ``student`` (wrapped in a Guard) and map the outcome to a verdict."""
    from .guard import Guard, Tampered
    global _current
    kwargs = kwargs or {}
    ctx = _Context(ex.name, ex)
    prev, _current = _current, ctx
    verdict, message = "passed", ""
    guard = None
    try:
        if student is None or not callable(student):
            raise CheckFailure("not implemented",
                               f"expected your function, got {type(student).__name__}")
        with _quiet():
            guard = ctx.guard = Guard(student, ex.answers, name=ex.name,
                                      allowed=getattr(ex, "allowed", ()))
            _own_inputs(guard, getattr(ex, "outputs", ()))
            guard.static_checks()
            extra = ex.body(guard, *args, **kwargs)
            guard.verify()
        message = "; ".join([str(extra)] * bool(extra) + ctx.notes) or "all good"
    except Tampered as e:
        verdict, message = "error", str(e)
    except CheckFailure as e:
        from .executed import explain
        verdict, message = e.verdict, e.message
        ctx.details.update(e.details)
        if verdict in ("not vectorised", "technique missing"):   # a gate read the code that ran
            message = explain(message)
    except NotImplementedError as e:
        verdict = "not implemented"
        message = str(e) or "the function still raises NotImplementedError — write your code"
    except AssertionError as e:
        verdict, message = "wrong", str(e) or "a result differs from the reference"
    except Exception as e:  # noqa: BLE001 - a student's code may raise anything
        verdict = "error"
        body_file = getattr(getattr(ex.body, "__code__", None), "co_filename", "")
        blame = _blame_student(e, student, body_file)
        message = _describe_error(e) if blame else _describe_own_error(e)
        if not blame and _not_numba(e, student):
            verdict, message = "technique missing", (
                f"{getattr(student, '__name__', 'your function')} is not a numba function (no "
                "@njit): this check times or inspects compiled code — decorate it with @njit")
    finally:
        _current = prev
    if guard is not None:   # a tamper or a call to labkit's answer overrides any other verdict
        late = guard.late_verdict()
        if late is not None:
            verdict, message = late
    passed = verdict == "passed"
    points = ex.points if ctx.share is None else round(ex.points * ctx.share, 6)
    return CheckResult(name=ex.name, passed=passed, points=points if passed else 0.0,
                       max_points=ex.points, verdict=verdict, message=short(message),
                       details=_plain(ctx.details))


def _own_inputs(guard, outputs) -> None:
    """Make ``guard``'s calls hand the student copies of the check's arrays (outputs passed
    through) and end the check with ``wrong`` — "changed its input <name>: …" — when a copy
    comes back changed (:mod:`labkit.check.inputs`). The check's own arrays stay pristine, so
    a reference computed from them, before or after the call, is the true one."""
    from . import inputs
    call = guard.__call__
    outputs = tuple(outputs)
    guard.outputs = outputs
    names: dict[int, list[str]] = {}

    class _Owned(type(guard)):
        def __call__(self, *args, **kwargs):
            given = inputs.hand_over(args, outputs)
            kw = {k: inputs.own_copy(v) for k, v in kwargs.items()}
            out = call(*given, **kw)
            n = len(args)
            if n not in names:                  # inspect.signature once per arity, not per call
                names[n] = inputs.arg_names(self, n)
            msg = inputs.changed_input(args, given, outputs, names[n])
            if msg is None:
                for k, v in kwargs.items():
                    msg = inputs.changed_input((v,), (kw[k],), (), [k])
                    if msg:
                        break
            if msg is not None:
                raise CheckFailure("wrong", msg)
            return out

    _Owned.__name__ = type(guard).__name__
    guard.__class__ = _Owned


def _not_numba(e: BaseException, student) -> bool:
    """A plain-Python function (run in a child process) reached a check step that needs a
    numba dispatcher (labkit.inspect, a timing of compiled code)."""
    from .guard import unwrap
    from .proxy import is_proxy
    return is_proxy(unwrap(student)) and isinstance(e, TypeError) and \
        ("numba" in str(e) or "dispatcher" in str(e))


def _plain(d: dict) -> dict:
    return json.loads(json.dumps(d, default=str))


def _blame_student(e: BaseException, student, body_file: str = "") -> bool:
    """True unless the exception started in the check's own code (labkit or the check body's
    file) rather than in the student's function or in code numba compiled."""
    own = {getattr(f, "__code__", None) for f in (student, getattr(student, "py_func", None))}
    own.discard(None)
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    if any(code in own or "numba" in code.co_filename for code in frames):
        return True
    if not frames:
        return True
    last = os.path.abspath(frames[-1].co_filename)
    if os.path.basename(last) in ("guard.py", "speed.py", "proxy.py") and \
            os.path.dirname(last) == os.path.dirname(os.path.abspath(__file__)):
        return True      # raised by the call into the student's function (wrong signature …)
    labkit_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return not (last.startswith(labkit_dir + os.sep)
                or (body_file and last == os.path.abspath(body_file)))


def _describe_own_error(e: BaseException) -> str:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = (f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
             if tb is not None else "?")
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return (f"the check itself failed at {where} ({type(e).__name__}: {text}) — if your "
            "function returns the documented type and shape, this is a labkit bug: please report it")


_OTHER_CELL = (" — the check loads the exercise cell's definitions, the notebook's imports, "
               "plain constants and the functions of earlier cells (def) it calls; anything "
               "else (an object built by code, a lambda, a class from another cell) must be "
               "defined in the exercise cell")


_UNDEFINED = re.compile(r"name '([A-Za-z_]\w*)' is not defined")


def _describe_error(e: BaseException) -> str:
    kind = type(e).__name__
    text = str(e).strip()
    m = _UNDEFINED.search(re.sub(r"\x1b\[[0-9;]*m", "", text))
    if m and (isinstance(e, NameError) or "NameError" in text):
        return (f"your function uses {m.group(1)!r}, which nothing the check loads defines "
                f"(NameError){_OTHER_CELL}")
    if "numba" in type(e).__module__:
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).strip() for ln in text.splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith(("Failed in", "During:", "File ",
                                                                "^", "- Resolution", "<source"))]
        first = lines[0] if lines else kind
        hint = _OTHER_CELL if ("Untyped global name" in text or "NameError" in text) else ""
        return f"numba could not compile or run your function ({kind}): {first}{hint}"
    hint = _OTHER_CELL if isinstance(e, NameError) else ""
    return f"your function raised {kind}: {text.splitlines()[0] if text else ''}".rstrip(": ") + hint


@contextlib.contextmanager
def _quiet():
    """Silence Python-level stderr and warnings (numba performance warnings) inside a check."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stderr(io.StringIO()):
            yield


def _record(result: CheckResult) -> None:
    path = os.environ["LABKIT_RESULTS"]
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(result.to_dict()) + "\n")


# ---------------------------------------------------------------- registry
def exercise(name: str, points: float = 1, *, answers: tuple[str, ...] = (),
             outputs: tuple[int, ...] = (),
             allowed: tuple[str, ...] = ()) -> Callable[[Callable], Exercise]:
    """Decorator registering a check body ``body(student) -> str | None`` as ``check.<name>``.

    ``answers``: labkit's own kernels for this exercise, as ``"module:attribute"`` strings —
    a student function that is, wraps or calls one of them gets ``uses labkit's answer`` (also
    when called through a name computed at run time: they are traced while the student runs).

    ``allowed``: the labkit functions the exercise lets the student call (``"module:attribute"``,
    e.g. a lab's ``tile_coords``). Every other function or kernel of labkit — the check's own
    comparators and helpers, an engine wrapped around the answer — is off-limits too: found in
    the student's bytecode (any cell's import) or numba typing, it gives ``uses labkit's answer``.

    ``outputs``: positions of the arguments the student's function writes into (``out``).
    Every other array argument is an input: the student gets a copy, and a changed copy ends
    the check with ``wrong`` ("changed its input <name>: …")."""
    if not all(isinstance(i, int) and i >= 0 for i in outputs):
        raise ValueError(f"outputs are argument positions (ints ≥ 0), got {outputs!r}")
    if not name.isidentifier():
        raise ValueError(f"exercise name {name!r} must be a Python identifier")
    for a in tuple(answers) + tuple(allowed):
        if not isinstance(a, str) or ":" not in a:
            raise ValueError(f"answers and allowed entries are 'module:attribute' strings, "
                             f"got {a!r}")

    def deco(body: Callable) -> Exercise:
        ex = Exercise(name, points, body, body.__module__, answers, outputs, allowed)
        old = _REGISTRY.get(name)
        if old is not None and old.module != ex.module:
            raise ValueError(f"exercise {name!r} is registered by both {old.module} and {ex.module}")
        _REGISTRY[name] = ex
        return ex

    return deco


def _load_all() -> None:
    from labkit import registry
    registry.load_checks()


def names() -> list[str]:
    """Names of every registered exercise (loads every lab's checks)."""
    _load_all()
    return sorted(_REGISTRY)


def get(name: str) -> Exercise:
    """The registered exercise ``name`` (loads lab checks as needed)."""
    if name not in _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise AttributeError(f"no exercise named {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def run(name: str, student, *, strict: bool = False) -> CheckResult:
    """Run exercise ``name`` on ``student`` (same as ``check.<name>(student)``)."""
    return get(name)(student, strict=strict)

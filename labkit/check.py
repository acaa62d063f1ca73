"""Exercise checks: honest, one-line verdicts on a student's function.

A lab registers each exercise with :func:`exercise`; a notebook calls ``check.<name>(fn)``::

    from labkit import check
    check.transpose(transpose)          # -> CheckResult, shown as ✔ / ✘ and why

Verdicts are a small fixed set (see :data:`VERDICTS`). Correctness uses fresh random inputs
(seed from ``LABKIT_SEED`` when set, random otherwise). Speed is a ratio against labkit's own
kernel measured at the same moment; it fails a check unless ``LABKIT_SPEED=report`` (tests and
CI set that, since shared machines are noisy — there the speed is reported, not judged).
``LABKIT_CHECK_STRICT=1`` makes every check raise on failure (the test suite sets it while
nbval runs the solutions, so a failing check in a solution notebook fails the build); so does
nbgrader's ``NBGRADER_EXECUTION``, so nbgrader's autograder scores the check cells directly.
Checks write nothing to stderr.
"""
from __future__ import annotations

import contextlib
import html
import importlib
import io
import json
import os
import secrets
import warnings
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

__all__ = [
    "CheckResult", "VERDICTS", "LAB_MODULES", "exercise", "run", "names", "mismatch", "rng",
    "seed", "speed_gate", "vectorized_gate", "CheckFailure", "speed_enforced", "note", "get",
]

#: Every verdict a check can give, in the order a student fixes them.
VERDICTS = ("not implemented", "error", "wrong", "not vectorised", "slower", "no change",
            "not fast enough", "passed")

#: Modules that register exercises; ``check.<name>`` imports them lazily, in this order.
LAB_MODULES = ("labkit.lesson00", "labkit.alignment", "labkit.bspline", "labkit.pcc",
               "labkit.epistasis")

_MAX_MESSAGE = 600


@dataclass
class CheckResult:
    """The outcome of one exercise check: verdict, points and a one-line message."""

    name: str
    passed: bool
    points: float
    max_points: float
    verdict: str
    message: str
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        mark = "✔" if self.passed else "✘"
        return f"{mark} {self.name}: {self.verdict} — {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        ok = self.passed
        colour, bg = ("#1a7f37", "#e8f5e9") if ok else ("#b3261e", "#fdecea")
        mark = "✔" if ok else "✘"
        pts = f"{self.points:g}/{self.max_points:g} pt"
        return (
            f'<div class="labkit-check" data-passed="{str(ok).lower()}" '
            f'style="border-left:4px solid {colour};background:{bg};padding:6px 10px;'
            f'margin:4px 0;font-family:sans-serif;">'
            f'<b style="color:{colour}">{mark} {html.escape(self.name)}: '
            f'{html.escape(self.verdict)}</b> — {html.escape(self.message)}'
            f'<span style="float:right;color:#555">{pts}</span></div>'
        )

    def to_dict(self) -> dict:
        """Plain-JSON form (used by the grader)."""
        d = asdict(self)
        d["details"] = json.loads(json.dumps(d["details"], default=str))
        return d


class CheckFailure(Exception):
    """Raised inside a check body to end it with a given verdict and message."""

    def __init__(self, verdict: str, message: str):
        if verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r}; use one of {VERDICTS}")
        super().__init__(message)
        self.verdict = verdict
        self.message = message


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


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.6g}"
    if isinstance(v, np.generic):
        return str(v.item())
    return str(v)


def mismatch(got, expected, *, name: str = "out", atol: float = 0.0, rtol: float = 0.0,
             max_show: int = 5) -> str | None:
    """``None`` if ``got`` equals ``expected`` (within atol/rtol), else a message naming up to
    ``max_show`` differing entries: ``out[3, 7] = 12, expected 14 (2 more)``."""
    exp = np.asarray(expected)
    if got is None:
        return f"{name} is None — did you forget to return the result?"
    try:
        g = np.asarray(got)
    except Exception:  # noqa: BLE001 - any object that numpy cannot take
        return f"{name} is a {type(got).__name__}, expected an array of shape {exp.shape}"
    if g.dtype == object:
        return f"{name} has dtype object, expected a numeric array like {exp.dtype}"
    if g.shape != exp.shape:
        return f"{name} has shape {g.shape}, expected {exp.shape}"
    if exp.dtype.kind in "fc" or g.dtype.kind in "fc":
        bad = ~np.isclose(g, exp, atol=atol, rtol=rtol, equal_nan=True)
    else:
        bad = g != exp
    nbad = int(np.count_nonzero(bad))
    if nbad == 0:
        return None
    idx = np.argwhere(bad)[:max_show] if g.ndim else [()]
    parts = []
    for ix in idx:
        ix = tuple(int(i) for i in ix)
        label = f"{name}[{', '.join(map(str, ix))}]" if ix else name
        parts.append(f"{label} = {_fmt(g[ix])}, expected {_fmt(exp[ix])}")
    more = nbad - len(parts)
    tail = f" ({more} more)" if more > 0 else ""
    return "; ".join(parts) + tail


# ---------------------------------------------------------------- gates
def speed_enforced() -> bool:
    """True unless ``LABKIT_SPEED=report`` (tests/CI); grading always enforces."""
    if os.environ.get("LABKIT_GRADING"):
        return True
    return os.environ.get("LABKIT_SPEED", "").lower() != "report"


def speed_gate(student: Callable, reference: Callable, args, *, need: float,
               vs: str = "labkit's kernel", repeat: int = 5, min_time: float = 0.05,
               student_args=None) -> float:
    """Time ``student`` against ``reference`` (same moment, interleaved) and require
    ``ratio ≥ need``; returns the ratio and notes it in the check's message."""
    from labkit import bench  # late import: bench imports plotting lazily

    funcs = {"reference": reference,
             "yours": student if student_args is None else (student, student_args)}
    res = bench.compare(funcs, args, baseline="reference", repeat=repeat, min_time=min_time)
    ratio = float(res.ratio("yours"))
    compile_s = next((r["compile_s"] for r in res.rows if r["name"] == "yours"), float("nan"))
    note = f"{ratio:.1f}× faster than {vs}" if ratio >= 1 else f"{1 / ratio:.1f}× slower than {vs}"
    if compile_s >= 0.01:  # the first call compiled the student's function here
        note += f" (compile {compile_s:.2f} s)"
    if _current is not None:
        _current.details["speed_ratio"] = ratio
        _current.details["speed_need"] = need
    if ratio >= need:
        _note(note)
        return ratio
    if ratio < 0.9:
        verdict = "slower"
    elif ratio < 1.1 and need > 1.1:
        verdict = "no change"
    else:
        verdict = "not fast enough"
    msg = f"{note}, need ≥ {need:g}×"
    if speed_enforced():
        raise CheckFailure(verdict, msg)
    _note(f"{msg} — speed reported only (LABKIT_SPEED=report)")
    return ratio


def _as_signature(signature):
    """Turn a tuple of example arguments into numba types (types pass through)."""
    if isinstance(signature, tuple):
        import numba

        return tuple(a if isinstance(a, numba.types.Type) else numba.typeof(a) for a in signature)
    return signature


def vectorized_gate(fn: Callable, signature=None, *, min_bits: int = 128) -> int:
    """Require that ``fn``'s compiled loop uses vector instructions at least ``min_bits`` wide;
    ``signature`` may be numba types or example arguments. On failure the message carries the
    vectoriser's own reason when it can be found."""
    from labkit import inspect as lk_inspect

    signature = _as_signature(signature)
    rep = lk_inspect.vector_report(fn, signature)
    width = int(rep.max_width_bits)
    if _current is not None:
        _current.details["vector_bits"] = width
    if rep.vectorized and width >= min_bits:
        _note(f"vectorised, {width}-bit")
        return width
    reason = ""
    try:
        rem = lk_inspect.remarks(fn, signature)
        missed = [r for r in rem if not getattr(r, "vectorized", False)]
        if missed:
            r0 = missed[0]
            reason = f" — line {getattr(r0, 'line', '?')}: {getattr(r0, 'reason', '')}".rstrip(": ")
    except Exception:  # noqa: BLE001 - the reason is a bonus; the verdict stands without it
        reason = ""
    what = "no vector instructions" if not rep.vectorized else f"only {width}-bit vectors"
    raise CheckFailure("not vectorised", f"{what}, need ≥ {min_bits}-bit{reason}")


# ---------------------------------------------------------------- registry
class _Context:
    def __init__(self, name: str):
        self.name = name
        self.notes: list[str] = []
        self.details: dict = {}


_current: _Context | None = None
_REGISTRY: dict[str, "Exercise"] = {}


def note(text: str) -> None:
    """Add a remark to the running check's message (e.g. "32 int16 lanes"); no-op outside one."""
    if _current is not None and text:
        _current.notes.append(str(text))


_note = note


class Exercise:
    """A registered check: call it with the student's function to get a :class:`CheckResult`."""

    def __init__(self, name: str, points: float, body: Callable, module: str):
        self.name, self.points, self.body, self.module = name, points, body, module
        self.__doc__ = body.__doc__
        self.__name__ = name

    def __call__(self, student=None, *args, strict: bool = False, **kwargs) -> CheckResult:
        """Run the check on ``student``; ``strict=True`` raises AssertionError on failure."""
        result = _run_body(self, student, args, kwargs)
        if os.environ.get("LABKIT_RESULTS"):
            _record(result)
        strict = (strict or os.environ.get("LABKIT_CHECK_STRICT") == "1"
                  or bool(os.environ.get("NBGRADER_EXECUTION")))  # nbgrader autograde/validate
        if strict and not result.passed:
            raise AssertionError(str(result))
        return result

    def __repr__(self) -> str:
        return f"<labkit check {self.name!r} ({self.points:g} pt) from {self.module}>"


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _run_body(ex: Exercise, student, args, kwargs) -> CheckResult:
    global _current
    ctx = _Context(ex.name)
    prev, _current = _current, ctx
    verdict, message = "passed", ""
    try:
        if student is None or not callable(student):
            raise CheckFailure("not implemented",
                               f"expected your function, got {type(student).__name__}")
        with _quiet():
            extra = ex.body(student, *args, **kwargs)
        message = "; ".join([str(extra)] * bool(extra) + ctx.notes) or "all good"
    except CheckFailure as e:
        verdict, message = e.verdict, e.message
    except NotImplementedError as e:
        verdict = "not implemented"
        message = str(e) or "the function still raises NotImplementedError — write your code"
    except AssertionError as e:
        verdict, message = "wrong", str(e) or "a result differs from the reference"
    except Exception as e:  # noqa: BLE001 - a student's code may raise anything
        verdict = "error"
        body_file = getattr(getattr(ex.body, "__code__", None), "co_filename", "")
        message = (_describe_error(e) if _blame_student(e, student, body_file)
                   else _describe_own_error(e))
    finally:
        _current = prev
    passed = verdict == "passed"
    return CheckResult(name=ex.name, passed=passed, points=ex.points if passed else 0.0,
                       max_points=ex.points, verdict=verdict, message=_short(message),
                       details=ctx.details)


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
    here = os.path.dirname(os.path.abspath(__file__))
    return not (last.startswith(here + os.sep) or (body_file and last == os.path.abspath(body_file)))


def _describe_own_error(e: BaseException) -> str:
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = (f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
             if tb is not None else "?")
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return (f"the check itself failed at {where} ({type(e).__name__}: {text}) — if your "
            "function returns the documented type and shape, this is a labkit bug: please report it")


def _describe_error(e: BaseException) -> str:
    kind = type(e).__name__
    text = str(e).strip()
    if "numba" in type(e).__module__:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("\x1b")]
        first = lines[0] if lines else kind
        return f"numba could not compile or run your function ({kind}): {first}"
    return f"your function raised {kind}: {text.splitlines()[0] if text else ''}".rstrip(": ")


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


def exercise(name: str, points: float = 1) -> Callable[[Callable], Exercise]:
    """Decorator registering a check body ``body(student) -> str | None`` as ``check.<name>``."""
    if not name.isidentifier():
        raise ValueError(f"exercise name {name!r} must be a Python identifier")

    def deco(body: Callable) -> Exercise:
        ex = Exercise(name, points, body, body.__module__)
        old = _REGISTRY.get(name)
        if old is not None and old.module != ex.module:
            raise ValueError(f"exercise {name!r} is registered by both {old.module} and {ex.module}")
        _REGISTRY[name] = ex
        return ex

    return deco


def _load_all() -> None:
    for mod in LAB_MODULES:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:  # a real missing dependency inside the lab: say so
                raise


def names() -> list[str]:
    """Names of every registered exercise (loads every lab module)."""
    _load_all()
    return sorted(_REGISTRY)


def get(name: str) -> Exercise:
    """The registered exercise ``name`` (loads lab modules as needed)."""
    if name not in _REGISTRY:
        _load_all()
    if name not in _REGISTRY:
        raise AttributeError(f"no exercise named {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def run(name: str, student, *, strict: bool = False) -> CheckResult:
    """Run exercise ``name`` on ``student`` (same as ``check.<name>(student)``)."""
    return get(name)(student, strict=strict)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return get(name)

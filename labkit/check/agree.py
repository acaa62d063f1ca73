"""Whether a timed call's result agrees: with the first call's on the same inputs (to rounding,
:func:`_same`) and with the reference's on the timing input (to :data:`REFERENCE_RTOL`,
:func:`_close`). :class:`labkit.check.speed._Student` verifies every timed sample with these.
"""
from __future__ import annotations

import numpy as np

from labkit._common import mismatch as _mismatch


def _each(compare, got, exp: tuple, name: str, expected: str) -> str | None:
    """``compare`` element by element of a tuple result: the first difference, else ``None``
    (``expected`` says what ``got`` should have been when it is no tuple of that length)."""
    if not isinstance(got, tuple) or len(got) != len(exp):
        return f"{name} is a {type(got).__name__}, {expected}"
    for k, (g, e) in enumerate(zip(got, exp)):
        msg = compare(g, e, f"{name}[{k}]")
        if msg:
            return msg
    return None


def _same(got, exp, name: str) -> str | None:
    """``None`` when a timed call's result equals the first call's (to rounding: a parallel
    reduction may add in another order), else the difference."""
    if exp is None or got is None:
        return None if got is exp else f"{name} is {got!r}, the first call gave {exp!r}"
    if isinstance(exp, tuple):
        return _each(_same, got, exp, name, "the first call gave a tuple")
    if isinstance(got, np.ndarray) and isinstance(exp, np.ndarray) and \
            got.shape == exp.shape and got.dtype == exp.dtype and \
            np.array_equal(got, exp, equal_nan=exp.dtype.kind in "fc"):
        return None                 # the usual case, fast: the same values again
    try:
        e = np.asarray(exp)
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind in "fc" else 1.0
        if not np.isfinite(scale):
            scale = 1.0
        return _mismatch(got, exp, name=name, rtol=1e-9, atol=1e-12 * scale)
    except Exception:  # noqa: BLE001 - an object numpy cannot compare
        return None if got == exp else f"{name} differs from the first call's"


#: A timed result must match the reference's on the same inputs to this relative tolerance (and
#: ``REFERENCE_RTOL × max(1, largest |value|)`` absolute): another summation order passes, a
#: result computed differently on the timing input (skipped rows, a constant) does not.
REFERENCE_RTOL = 1e-6


def _close(got, exp, name: str) -> str | None:
    """``None`` when ``got`` matches the reference's ``exp`` to :data:`REFERENCE_RTOL`."""
    if isinstance(exp, tuple):
        return _each(_close, got, exp, name, f"the reference returns a tuple of {len(exp)}")
    try:
        e = np.asarray(exp)
        if e.dtype == object:
            return None         # not an array the reference can be compared as
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind in "fc" else 1.0
        if not np.isfinite(scale):
            scale = 1.0
        return _mismatch(got, exp, name=name, rtol=REFERENCE_RTOL,
                         atol=REFERENCE_RTOL * max(1.0, scale))
    except Exception:  # noqa: BLE001 - an object numpy cannot compare: the check's cases judge it
        return None

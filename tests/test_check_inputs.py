"""Inputs the student cannot touch, when checked and when timed: the student's function gets
copies of the check's arrays, every reference comes from the check's pristine ones, a changed
input is its own ``wrong`` verdict; speed is timed on inputs verified between samples, every
timed call's result is checked, and a fallback comparator that is not faster than the
baseline gives ``inconclusive``, never ``passed``. Fake students, top-level definitions (the
worker loads this file's definitions as it loads a notebook cell's)."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from numba import njit

from labkit import check
from labkit.check import inputs

from tests.fakes import colsum_honest


# ------------------------------------------------------------------ the copies
def test_own_copy_keeps_dtype_shape_layout_and_readonly():
    g = np.random.default_rng(0)
    c = g.random((5, 7))
    f = np.asfortranarray(c)
    s = c[:, ::2]
    r = c.copy()
    r.flags.writeable = False
    for a in (c, f, s, r, np.zeros((0, 3)), np.full((), 2.0)):
        b = inputs.own_copy(a)
        assert b is not a and not np.shares_memory(a, b)
        assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b)
        assert (b.flags.c_contiguous, b.flags.f_contiguous, b.flags.writeable) == \
            (a.flags.c_contiguous, a.flags.f_contiguous, a.flags.writeable)
    Pair = collections.namedtuple("Pair", "x n")
    p = Pair(c, 3)
    q = inputs.own_copy(p)
    assert type(q) is Pair and q.n == 3 and q.x is not c and np.array_equal(q.x, c)
    assert inputs.own_copy(7) == 7


def test_changed_input_names_the_argument_and_ignores_outputs():
    x, out = np.arange(4.0), np.zeros(4)
    given = inputs.hand_over((x, out), outputs=(1,))
    assert given[1] is out and given[0] is not x
    given[0][2] = -1.0
    out[:] = 5.0
    msg = inputs.changed_input((x, out), given, outputs=(1,), names=["x", "out"])
    assert msg is not None and msg.startswith("changed its input x:") and "x[2]" in msg
    assert inputs.changed_input((x, out), inputs.hand_over((x, out), (1,)), (1,)) is None
    nan = np.array([np.nan])
    neg = np.array([np.nan]).view(np.uint64) ^ np.uint64(1)
    assert not inputs.same_bytes(nan, neg.view(np.float64))     # byte for byte, NaN payloads too


# ------------------------------------------------- references from pristine inputs: lab checks
@njit
def colsum_zeroing(a):                     # zeroes its input, returns zeros: numpy of zeros
    a[:, :] = 0.0
    return np.zeros(a.shape[1])


@njit
def colsum_in_place(a):                    # the right sums, accumulated into row 0 of the input
    n, m = a.shape
    for i in range(1, n):
        for j in range(m):
            a[0, j] += a[i, j]
    return a[0].copy()


@njit
def dot_zeroing(x, y):                     # zeroes both inputs: np.dot afterwards would say 0
    for i in range(x.size):
        x[i] = 0.0
        y[i] = 0.0
    return 0.0


@njit(error_model="numpy")
def softsign_honest(x, out):
    for i in range(x.size):
        out[i] = x[i] / (1.0 + abs(x[i]))
    return out


@njit(error_model="numpy")
def softsign_in_input(x, out):             # computes in x, copies to out: right values
    for i in range(x.size):
        x[i] = x[i] / (1.0 + abs(x[i]))
    out[:] = x
    return out


@njit
def block_zeroing(Z, i, j, out):           # zero Z: the 16 dot products become 0
    Z[:, :] = 0.0
    out[:, :] = 0.0


@pytest.mark.parametrize("name, student, arg", [
    ("colsum", colsum_zeroing, "a"), ("colsum", colsum_in_place, "a"),
    ("dot_partials", dot_zeroing, "x"), ("softsign", softsign_in_input, "x"),
    ("block4x4", block_zeroing, "Z")])
def test_a_changed_input_is_wrong_with_its_name(name, student, arg):
    r = check.run(name, student)
    assert r.verdict == "wrong" and r.points == 0, r
    assert f"changed its input {arg}" in r.message, r.message


def test_honest_students_keep_their_marks():
    r = check.run("softsign", softsign_honest)
    assert r.passed, r
    r = check.run("colsum", colsum_honest)
    assert r.passed, r


# ---------------------------------------------------- timed on verified inputs: speed gates
@njit
def _passes(x, k):                         # k passes' work, one pass's sum (every kernel here
    s = 0.0                                # computes what the baseline computes: the gate
    for _ in range(k):                     # compares the timed results with the baseline's)
        for i in range(x.size):
            s += x[i] * 1.000001
    return s / k


@njit
def _baseline(x):                          # 4 passes
    return _passes(x, 4)


@njit
def _fast_answer(x):                       # 2 passes: 2× the baseline
    return _passes(x, 2)


@njit
def _slow_answer(x):                       # a stub comparator: 5 passes, slower than the baseline
    return _passes(x, 5)


@njit
def stash_in_input(x):                     # computes once, keeps the sum in x, returns it after
    n = x.size
    if x[n - 1] == -12345.0:
        return x[n - 2]
    s = 0.0
    for _ in range(2):
        for i in range(n):
            s += x[i] * 1.000001
    x[n - 2] = s / 2
    x[n - 1] = -12345.0
    return s / 2


@njit
def stash_hidden(x):                       # hides a flag in the sign bit of a zero: same value
    n = x.size
    if np.signbit(x[0]) and x[0] == 0.0:
        return 1.0
    s = 0.0
    for _ in range(4):
        for i in range(n):
            s += x[i] * 1.000001
    x[0] = -0.0
    return 1.0


@njit
def lazy_sometimes(x):                     # skips the work at random: only a cheap answer
    if np.random.random() < 0.5:
        return 0.0
    return _passes(x, 4)


@njit
def two_passes(x):                         # the honest technique: the answer's work
    s = 0.0
    for _ in range(2):
        for i in range(x.size):
            s += x[i] * 1.000001
    return s / 2


@njit
def four_passes(x):                        # the baseline technique, no step applied
    s = 0.0
    for _ in range(4):
        for i in range(x.size):
            s += x[i] * 1.000001
    return s / 4


_X = np.random.default_rng(3).random(4000)
_X[0] = 0.0


#: A virtual CPU clock for the verdicts that depend on a ratio (the ``enforce`` fixture): each
#: timed function advances it by its passes, so the ratios are exactly the work ratios (2×, 1×,
#: 0.8× the baseline's speed) on any machine under any load — the gate's logic is tested, not
#: this host's timer. The tricks above are ``wrong`` whatever the clock says.
_V = [0.0]


def _ticking(fn, passes: int):
    def timed(x):
        _V[0] += 1e-3 * passes
        return fn(x)
    timed.__name__ = timed.__qualname__ = fn.__name__
    return timed


_baseline_t, _fast_answer_t, _slow_answer_t = (_ticking(_baseline, 4), _ticking(_fast_answer, 2),
                                               _ticking(_slow_answer, 5))
two_passes_t, four_passes_t = _ticking(two_passes, 2), _ticking(four_passes, 4)


@check.exercise("_t_inputs_speed", points=1)
def _speed_fast_answer(student):
    check.speed_gate(student, _baseline_t, (_X,), need=1.5, vs="the baseline",
                     answer=_fast_answer_t, min_time=0.003)


@check.exercise("_t_inputs_slow_fallback", points=1)
def _speed_slow_fallback(student):
    # 1.5× is out of reach of the (stubbed) slow answer: the gate falls back to it
    check.speed_gate(student, _baseline_t, (_X,), need=1.5, vs="the baseline",
                     answer=_slow_answer_t, min_time=0.003)


@pytest.fixture
def enforce(monkeypatch):
    from labkit.check import speed
    monkeypatch.setattr(speed, "_clock", lambda: _V[0])
    monkeypatch.setenv("LABKIT_SPEED", "enforce")


@pytest.mark.parametrize("student, needle", [
    (stash_in_input, "changed its input x"), (stash_hidden, "changed its input x"),
    (lazy_sometimes, "another result than")])
@pytest.mark.parametrize("mode", ["enforce", "report"])
def test_timing_tricks_are_wrong(student, needle, mode, monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", mode)
    before = _X.copy()
    r = check._t_inputs_speed(student)
    assert r.verdict == "wrong" and not r.passed, r
    assert needle in r.message, r.message
    assert inputs.same_bytes(_X, before)           # the check's own array is untouched


def test_baseline_technique_beside_a_slower_comparator_is_inconclusive(enforce):
    r = check._t_inputs_slow_fallback(four_passes_t)
    assert r.verdict == "inconclusive" and not r.passed, r
    assert "not faster than the baseline" in r.message, r.message


def test_honest_technique_beside_a_slower_comparator_passes_on_its_own_ratio(enforce):
    r = check._t_inputs_slow_fallback(two_passes_t)
    # 2× the baseline clears 1.5× on its own: passed on its own ratio, never via the stub
    assert r.passed and r.details["speed_low"] == pytest.approx(2.0), r
    assert "speed_share" not in r.details, r


def test_honest_technique_passes_with_fresh_verified_inputs(enforce):
    r = check._t_inputs_speed(two_passes_t)
    assert r.passed and r.details["speed_ratio"] == pytest.approx(2.0), r


@njit
def colsum_stash(a):                       # right sums; on the timing matrix (600 × 600) it
    n, m = a.shape                         # keeps them in the last row and returns them again
    if n >= 600 and a[n - 1, 0] == -1.0 and a[n - 1, 1] == -2.0:
        return a[n - 2].copy()
    out = np.zeros(m)
    for i in range(n):
        for j in range(m):
            out[j] += a[i, j]
    if n >= 600:
        a[n - 2, :] = out
        a[n - 1, 0] = -1.0
        a[n - 1, 1] = -2.0
    return out


def test_colsum_that_stashes_its_result_in_the_timing_input_is_wrong():
    r = check.run("colsum", colsum_stash)
    assert r.verdict == "wrong" and r.points == 0, r
    assert "changed its input a" in r.message and "speed measurement" in r.message, r.message

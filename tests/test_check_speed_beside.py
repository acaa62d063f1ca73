"""A speed gate measures a student who misses its target again beside labkit's own answer:
when the answer misses the target too (a loaded or throttled machine), an honest solution as
fast as the answer passes, and a slow one still fails; when the answer reaches the target, the
target stands. Fake students, deterministic work ratios (2× and 1× the reference's speed)."""
from __future__ import annotations

import numpy as np
import pytest

from labkit import check
from labkit.check import speed

#: A virtual CPU clock: each fake kernel advances it by its passes over the data, so the
#: ratios are exactly the work ratios (2× and 1× the reference's speed) on any machine, under
#: any load — the gate's logic is tested, not this host's timer.
_T = [0.0]


def _work(x, k):               # k passes on the virtual clock; the same result every call
    _T[0] += 1e-3 * k
    return 1.0


def _reference(x):             # 4 passes
    return _work(x, 4)


def _answer(x):                # labkit's answer: 2 passes, 2× the reference
    return _work(x, 2)


def honest(x):                 # the student's own code, the answer's work
    return _work(x, 2)


def slow(x):                   # a student who did not apply the step: the reference's work
    return _work(x, 4)


_X = np.random.default_rng(0).random(4000)


@pytest.fixture(autouse=True)
def _virtual_clock(monkeypatch):
    monkeypatch.setattr(speed, "_clock", lambda: _T[0])


@check.exercise("_t_beside_unreachable", points=1)
def _unreachable(student):
    # 3× is out of the answer's reach here, as 1.5× is for dot_partials on a loaded machine
    check.speed_gate(student, _reference, (_X,), need=3.0, vs="the reference", answer=_answer,
                     min_time=0.003)


@check.exercise("_t_beside_reachable", points=1)
def _reachable(student):
    check.speed_gate(student, _reference, (_X,), need=1.5, vs="the reference", answer=_answer,
                     min_time=0.003)


@pytest.fixture(autouse=True)
def _enforce(monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "enforce")


def test_honest_student_passes_when_the_answer_misses_the_target_too():
    r = check._t_beside_unreachable(honest)
    assert r.verdict == "passed", r.message
    assert "labkit's own answer did not clear it either" in r.message and "of the answer's speed" in r.message
    assert r.details["speed_answer_ratio"] == pytest.approx(2.0) and r.details["speed_share"] >= 0.85


def test_slow_student_still_fails_beside_the_answer():
    r = check._t_beside_unreachable(slow)
    assert r.verdict in ("no change", "not fast enough"), r.message
    assert "need ≥ 85 % of it" in r.message.replace("85%", "85 %"), r.message
    assert r.details["speed_share"] < 0.7


def test_the_target_stands_when_the_answer_reaches_it():
    assert check._t_beside_reachable(honest).verdict == "passed"
    r = check._t_beside_reachable(slow)
    assert r.verdict in ("no change", "not fast enough"), r.message
    assert "labkit's own answer" not in r.message and "speed_share" not in r.details


def test_report_mode_never_measures_beside(monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "report")
    r = check._t_beside_unreachable(slow)
    assert r.verdict == "passed" and "speed_share" not in r.details

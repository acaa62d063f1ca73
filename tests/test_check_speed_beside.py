"""A speed gate measures a student who misses its target again beside labkit's own answer:
when the answer misses the target too (a loaded or throttled machine), an honest solution as
fast as the answer passes, and a slow one still fails; when the answer reaches the target, the
target stands. Fake students, deterministic work ratios (2× and 1× the reference's speed)."""
from __future__ import annotations

import re

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


# ------------------------------------------------ beside the answer: the student must beat the baseline
#: One case of the grid below: the student's and the answer's speed (× the reference's, on the
#: virtual clock), a deterministic spread of each call's time (± that fraction), and the target.
_CASE = {"student": 1.0, "answer": 1.0, "spread_s": 0.0, "spread_a": 0.0, "need": 1.5}
_CALLS = {"student": 0, "answer": 0}


def _tick(who: str):
    """One call of ``who``: the reference's 4 units of time ÷ its speed, times a quasi-random
    factor in [1 - spread, 1 + spread] (the golden angle's sine: the same sequence on every run)."""
    k = _CALLS[who] = _CALLS[who] + 1
    spread = _CASE["spread_s" if who == "student" else "spread_a"]
    _T[0] += 4e-3 / _CASE[who] * (1.0 + spread * np.sin(2.39996 * k + (who == "answer")))
    return 1.0


def _reference_v(x):           # 4 units, no spread
    _T[0] += 4e-3
    return 1.0


def _answer_v(x):
    return _tick("answer")


def student_v(x):              # the student of the case (its speed set in _CASE)
    return _tick("student")


@check.exercise("_t_beside_grid", points=1)
def _grid(student):
    check.speed_gate(student, _reference_v, (_X,), need=_CASE["need"], vs="the reference",
                     answer=_answer_v, min_time=0.003)


def _run(student=1.0, answer=1.0, need=1.5, spread_s=0.0, spread_a=0.0):
    _CASE.update(student=student, answer=answer, need=need, spread_s=spread_s, spread_a=spread_a)
    _CALLS.update(student=0, answer=0)
    return check._t_beside_grid(student_v)


def test_a_student_slower_than_the_baseline_fails_beside_a_barely_faster_answer():
    # the answer runs at 1.05× the baseline, the student at 0.9×: 86 % of the answer's speed,
    # but slower than the baseline itself — never passed
    r = _run(student=0.9, answer=1.05)
    assert not r.passed and r.verdict == "slower", r.message
    assert r.details["speed_share"] >= speed.ANSWER_SHARE, r.details
    assert "slower than the reference: 0.90× its speed" in r.message, r.message
    assert "faster than the reference itself, and yours is not" in r.message, r.message


def test_a_student_at_the_baselines_speed_beside_a_faster_answer_is_no_change():
    r = _run(student=1.0, answer=1.1)
    assert not r.passed and r.verdict == "no change", r.message
    assert "the same speed as the reference (1.00×)" in r.message, r.message


def test_a_student_beside_the_answer_passes_when_both_beat_the_baseline():
    r = _run(student=1.3, answer=1.35)
    assert r.passed, r.message
    assert r.details["speed_low"] > 1 and r.details["speed_share"] >= speed.ANSWER_SHARE
    assert "1.30× faster than the reference" in r.message and "below the 1.5× target" in r.message


def test_a_student_whose_interval_straddles_the_baseline_is_inconclusive_beside_the_answer():
    # nominal 0.8×, each call's time ± 40 %: best-of-two rounds read 0.96–1.24×
    r = _run(student=0.8, answer=1.15, spread_s=0.4)
    lo, hi = r.details["speed_low"], r.details["speed_high"]
    assert lo <= 1 <= hi, r.details                       # the case is the one named
    assert r.verdict == "inconclusive" and not r.passed, r.message
    assert "reaches 1× the reference" in r.message, r.message


def test_a_median_above_the_target_is_never_said_to_be_below_it():
    # a spread that 44 rounds cannot resolve, beside an answer that misses the target too
    r = _run(student=1.0, answer=0.95, need=1.2, spread_s=0.3, spread_a=0.3)
    lo, med = r.details["speed_low"], r.details["speed_ratio"]
    assert lo < 1.2 <= med and "speed_share" in r.details, r.details
    assert "faster than the reference as a median, but its interval [" in r.message, r.message
    assert "reaches below the 1.2× target" in r.message, r.message
    assert "), below the 1.2× target" not in r.message, r.message
    assert not _agrees(r.message), r.message


# ------------------------------------------------ every direction word agrees with its number
_NUM = r"(\d+(?:\.\d+)?)×"
_PHRASES = [
    ("faster", re.compile(_NUM + r" faster than ")),
    ("slower", re.compile(r"slower than [^:]+: " + _NUM + " its speed")),
    ("same", re.compile(r"the same speed as [^(]+\(" + _NUM + r"\)")),
    ("apart", re.compile(_NUM + r" the speed of [^,]+, not told apart from it")),
]
_INTERVAL = re.compile(r"\[(-?\d+\.\d+), (\d+\.\d+)\]×")
_BELOW = re.compile(r"\[(\d+\.\d+), (\d+\.\d+)\]× over \d+ interleaved rounds\), below the "
                    r"(\d+(?:\.\d+)?)× target")
_REACHES = re.compile(r" as a median, but its interval \[(\d+\.\d+), (\d+\.\d+)\]× over \d+ "
                      r"interleaved rounds reaches below the (\d+(?:\.\d+)?)× target")


def _agrees(message: str, first_interval=None) -> list[str]:
    """The direction phrases of a check message that contradict their numbers: each phrase's
    ratio, and the interval printed after it (or ``first_interval`` for the first phrase of a
    message that prints none: the student's, from the result's details)."""
    bad = []
    found = sorted((m.start(), kind, m) for kind, rx in _PHRASES for m in rx.finditer(message))
    for n, (at, kind, m) in enumerate(found):
        x = float(m.group(1))
        reads_one = 0.95 <= x < 1.05                # the printed ratio rounds to 1.0×
        nxt = found[n + 1][0] if n + 1 < len(found) else len(message)
        iv = _INTERVAL.search(message, m.end(), nxt)
        lo, hi = (float(iv.group(1)), float(iv.group(2))) if iv else (first_interval or (x, x))
        if not iv and n and first_interval is not None:
            lo = hi = x
        ok = {"faster": x > 1 and not reads_one and lo > 1,
              "slower": x < 1 and not reads_one and hi < 1,
              "same": reads_one,
              "apart": not reads_one and lo <= 1 <= hi}[kind]
        if not ok:
            bad.append(f"{kind} with {x}× [{lo}, {hi}]: {message}")
    for m in _BELOW.finditer(message):
        if not float(m.group(2)) < float(m.group(3)):
            bad.append(f"'below' with an interval reaching {m.group(2)}: {message}")
    for m in _REACHES.finditer(message):            # the median: the phrase just before
        med = float([p for at, _, p in found if at < m.start()][-1].group(1))
        lo, need = float(m.group(1)), float(m.group(3))
        if not (med >= need > lo):
            bad.append(f"'median, but … reaches below' with {med}, {lo}, {need}: {message}")
    if "below the" in message and not (_BELOW.search(message) or _REACHES.search(message)):
        bad.append(f"'below the target' said another way: {message}")
    return bad


def test_describe_words_agree_with_the_numbers_printed():
    """A grid of ratios (0.5–2.0× by 0.01, the rounding edges, 150×) and interval widths."""
    ratios = [round(0.5 + 0.01 * k, 2) for k in range(151)] + [0.945, 0.955, 1.045, 1.049,
                                                               1.051, 1.005, 150.0]
    for ratio in ratios:
        for width in (0.0, 0.03, 0.2):
            lo, hi = ratio * (1 - width), ratio * (1 + width)
            text = speed._describe(ratio, "the reference", lo, hi)
            msg = f"{text} (interval [{lo:.2f}, {hi:.2f}]× over 9 interleaved rounds), need ≥ 3×"
            assert not _agrees(msg), _agrees(msg)
            assert sum(1 for _, rx in _PHRASES if rx.search(text)) == 1, text
            assert "1.0× slower" not in text and "1.0× faster" not in text, text
            verdict = speed._verdict(ratio, 3.0, lo, hi)
            assert (verdict == "slower") == ("slower" in text), (verdict, text)


def test_describe_says_the_same_speed_for_a_ratio_reading_one():
    assert speed._describe(0.96, "colsum_naive") == "the same speed as colsum_naive (0.96×)"
    assert speed._describe(0.5, "x") == "slower than x: 0.50× its speed"
    assert speed._describe(2.0, "x") == "2.00× faster than x"
    assert speed._describe(1.3, "x", 0.9, 1.6) == "1.30× the speed of x, not told apart from it"


_GRID = [(s, a, need, sp) for s in (0.5, 0.9, 0.96, 1.0, 1.04, 1.2, 1.3, 1.8, 2.6)
         for a in (0.9, 1.05, 1.35, 2.0) for need in (1.2, 1.5, 3.0) for sp in (0.0, 0.3)]


def test_gate_messages_agree_with_their_numbers_over_a_grid():
    """Every message the gate writes, over a grid of speeds, spreads and targets (the answer's
    path included): the word beside each ratio fits it and its interval."""
    bad, seen = [], set()
    for s, a, need, sp in _GRID:
        r = _run(student=s, answer=a, need=need, spread_s=sp, spread_a=sp)
        seen.add(r.verdict)
        d = r.details
        bad += _agrees(r.message, (round(d["speed_low"], 2), round(d["speed_high"], 2)))
        if r.verdict == "slower":
            assert round(d["speed_high"], 2) < 1 and "slower than" in r.message, r.message
        if r.passed and "speed_share" in d:
            assert round(d["speed_low"], 2) > 1, r.message
    assert not bad, "\n".join(bad[:5])
    assert {"passed", "slower", "no change", "not fast enough", "inconclusive"} <= seen, seen


# ------------------------------------------------ timed results against the bound reference
def consistent_but_wrong(x):   # the same answer every call, not the reference's
    _T[0] += 2e-3
    return 2.0


def summed_in_another_order(x):    # the reference's value to rounding
    _T[0] += 2e-3
    return 1.0 + 1e-13


def test_every_timed_result_is_checked_against_the_reference_bound_before_the_call():
    r = check._t_beside_reachable(consistent_but_wrong)
    assert r.verdict == "wrong" and not r.passed, r.message
    assert "returned another result than the reference" in r.message, r.message
    assert "expected 1" in r.message, r.message
    r = check._t_beside_reachable(summed_in_another_order)
    assert r.passed, r.message

"""labkit.check: verdicts, messages, seeds, strict mode, silence, registry, gates."""
import sys

import numpy as np
import pytest
from numba import njit

from labkit import check
from labkit.check import CheckFailure, CheckResult, exercise, mismatch

from tests.fakes import colsum_honest


# ------------------------------------------------------------------ mismatch messages
def test_mismatch_equal_and_first_five():
    exp = np.arange(20).reshape(4, 5)
    assert mismatch(exp.copy(), exp) is None
    got = exp.copy()
    got[0, 1] = 99
    assert mismatch(got, exp) == "out[0, 1] = 99, expected 1"
    got = exp + 1
    msg = mismatch(got, exp, name="score")
    assert msg.startswith("score[0, 0] = 1, expected 0; score[0, 1] = 2, expected 1")
    assert msg.endswith("(15 more)") and msg.count("expected") == 5


def test_mismatch_shape_none_tolerance_scalar():
    assert mismatch(np.zeros(3), np.zeros(4)) == "out has shape (3,), expected (4,)"
    assert "forget to return" in mismatch(None, np.zeros(2))
    assert mismatch(np.array([1.0 + 1e-13]), np.array([1.0]), rtol=1e-12) is None
    assert mismatch(1.5, 2.0, name="dot") == "dot = 1.5, expected 2"
    assert mismatch(np.array([np.nan]), np.array([np.nan])) is None


# ------------------------------------------------------------------ verdicts
@exercise("_t_double", points=3)
def _check_double(student):
    x = check.rng().integers(0, 100, 10)
    msg = mismatch(student(x), 2 * x)
    assert msg is None, msg
    return "doubles 10 random ints"


def good(x):
    return 2 * x


def wrong(x):
    y = 2 * x
    y[3] += 1
    return y


def stub(x):
    raise NotImplementedError("multiply by two")


def crash(x):
    raise ZeroDivisionError("oops")


@pytest.mark.parametrize("fn, verdict, needle", [
    (good, "passed", "doubles 10 random ints"),
    (wrong, "wrong", "out[3] ="),
    (stub, "not implemented", "multiply by two"),
    (crash, "error", "ZeroDivisionError: oops"),
    (None, "not implemented", "expected your function"),
])
def test_verdicts(fn, verdict, needle):
    r = check._t_double(fn)
    assert isinstance(r, CheckResult) and r.verdict == verdict and needle in r.message
    assert r.passed == (verdict == "passed")
    assert r.points == (3 if r.passed else 0) and r.max_points == 3
    line = str(r)
    assert line.startswith("✔ _t_double: passed" if r.passed else f"✘ _t_double: {verdict}")
    html = r._repr_html_()
    assert f'data-passed="{str(r.passed).lower()}"' in html


def test_strict_raises_assertion():
    with pytest.raises(AssertionError, match="wrong"):
        check._t_double(wrong, strict=True)
    assert check._t_double(good, strict=True).passed


def test_numba_typing_error_is_one_line():
    from numba import njit

    @njit
    def bad(x):
        return x.no_such_attribute

    r = check._t_double(bad)
    assert r.verdict == "error" and "numba could not compile" in r.message
    assert "\n" not in r.message


def test_check_writes_nothing_to_stderr(capfd):
    def noisy(x):
        import warnings
        print("to stderr", file=sys.stderr)
        warnings.warn("a warning")
        return 2 * x

    assert check._t_double(noisy).passed
    assert capfd.readouterr().err == ""


def test_seed_from_env_is_reproducible(monkeypatch):
    monkeypatch.setenv("LABKIT_SEED", "1234")
    a = check.rng("x").integers(0, 1 << 30, 4)
    b = check.rng("x").integers(0, 1 << 30, 4)
    c = check.rng("y").integers(0, 1 << 30, 4)
    assert (a == b).all() and not (a == c).all()
    monkeypatch.delenv("LABKIT_SEED")
    assert check.seed() != check.seed()


def test_results_file(tmp_path, monkeypatch):
    out = tmp_path / "r.jsonl"
    monkeypatch.setenv("LABKIT_RESULTS", str(out))
    check._t_double(good)
    check._t_double(stub)
    import json
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["verdict"] for r in rows] == ["passed", "not implemented"]


def test_registry_and_unknown_name():
    assert "_t_double" in check.names()
    assert check.get("_t_double") is check._t_double
    with pytest.raises(AttributeError, match="no exercise named"):
        check.no_such_exercise
    with pytest.raises(ValueError, match="unknown verdict"):
        CheckFailure("meh", "x")
    with pytest.raises(ValueError, match="identifier"):
        exercise("not an id")


def test_lesson00_exercises_registered():
    names = check.names()
    assert {"colsum", "dot_partials"} <= set(names)


# ------------------------------------------------------------------ gates
#: A virtual CPU clock for the speed gate (as in test_check_speed_beside.py): the loop costs
#: 10 ticks a call, numpy's sum 1, so the measured ratio is exactly 10× on any machine under any
#: load — the gate's logic is tested, not this host's timer.
_TICKS = [0.0]


def _slow_sum(x):
    _TICKS[0] += 1e-2
    s = 0
    for v in x.tolist():
        s += v
    return s


def _fast_sum(x):
    _TICKS[0] += 1e-3
    return x.sum()


@exercise("_t_speed", points=1)
def _check_speed(student, need=3.0):
    x = np.arange(20000)
    assert student(x) == x.sum()
    check.speed_gate(student, _slow_sum, (x,), need=need, vs="the loop", repeat=3, min_time=0.01)


def test_speed_gate_reports_under_ci_and_fails_when_enforced(monkeypatch):
    from labkit.check import speed
    monkeypatch.setattr(speed, "_clock", lambda: _TICKS[0])
    monkeypatch.setenv("LABKIT_SPEED", "report")
    r = check._t_speed(_slow_sum)
    assert r.passed and "speed reported only" in r.message and "need ≥ 3×" in r.message
    monkeypatch.setenv("LABKIT_SPEED", "enforce")
    r = check._t_speed(_slow_sum)
    assert not r.passed and r.verdict in ("no change", "not fast enough", "slower")
    assert "need ≥ 3×" in r.message
    r = check._t_speed(_fast_sum)
    assert r.passed and "faster than the loop" in r.message
    assert r.details["speed_ratio"] == pytest.approx(10.0)
    monkeypatch.setenv("LABKIT_SPEED", "report")
    monkeypatch.setenv("LABKIT_GRADING", "1")
    assert not check._t_speed(_slow_sum).passed


def _sum_same_speed(x):           # 0.96× the loop's speed: reads 1.0×
    _TICKS[0] += 1e-2 / 0.96
    return x.sum()


def _sum_half_speed(x):
    _TICKS[0] += 2e-2
    return x.sum()


def test_speed_messages_pair_each_direction_word_with_a_ratio_that_fits_it(monkeypatch):
    """Direction words that fit their numbers: "1.0× slower" is gone — a ratio reading 1.0× is the
    same speed (its number shown), "slower" comes with the ratio below 1 and an interval below
    1×."""
    from labkit.check import speed
    monkeypatch.setattr(speed, "_clock", lambda: _TICKS[0])
    monkeypatch.setenv("LABKIT_SPEED", "enforce")
    r = check._t_speed(_sum_same_speed)
    assert r.verdict == "no change", str(r)
    assert "the same speed as the loop (0.96×)" in r.message, r.message
    assert "slower" not in r.message and "faster" not in r.message, r.message
    r = check._t_speed(_sum_half_speed)
    assert r.verdict == "slower", str(r)
    assert "slower than the loop: 0.50× its speed (interval [0.50, 0.50]×" in r.message, r.message
    r = check._t_speed(_fast_sum)
    assert r.passed and "10.00× faster than the loop" in r.message, r.message


@njit
def _naive_colsum(a):                 # a student's copy of colsum_naive: strided, one chain
    n, m = a.shape
    out = np.zeros(m)
    for j in range(m):
        s = 0.0
        for i in range(n):
            s += a[i, j]
        out[j] = s
    return out


@njit
def _plain_dot(x, y):                 # a student's copy of dot_plain: one accumulator
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


def test_vectorized_gate_and_lesson00_checks():
    from labkit import lesson00 as l0

    r = check.colsum(colsum_honest)
    assert r.passed, str(r)
    assert r.details["vector_bits"] >= check.native_bits()
    r = check.colsum(_naive_colsum)
    assert r.verdict == "not vectorised", str(r)
    # labkit's own kernels are not a submission — the answers named by the exercise and every
    # other labkit kernel too (colsum_naive, dot_plain: the baselines)
    assert check.colsum(l0.colsum_rows).verdict == "uses labkit's answer"
    assert check.dot_partials(l0.dot_partials).verdict == "uses labkit's answer"
    assert check.colsum(l0.colsum_naive).verdict == "uses labkit's answer"
    assert check.dot_partials(l0.dot_plain).verdict == "uses labkit's answer"
    r = check.dot_partials(_plain_dot)    # correct, but one accumulator: the lesson is missing
    assert r.verdict == "technique missing" and "need ≥ 8" in r.message, str(r)


@exercise("_t_broken", points=1)
def _check_broken(student):
    student(np.arange(3))
    return {}["missing"]  # a bug in the check itself, not in the student's code


def test_error_in_check_code_is_not_blamed_on_student():
    r = check._t_broken(good)
    assert r.verdict == "error" and "the check itself failed" in r.message, r.message
    assert "test_check.py" in r.message or "?" in r.message
    r = check._t_double(crash)
    assert "your function raised ZeroDivisionError" in r.message


def test_speed_not_judged_marks_the_result_for_the_graders_review():
    from labkit.check import framework
    from labkit.grade.report import review_reason

    def body(student):
        framework.speed_not_judged("the machine is too busy: speed not judged")

    r = framework.run_local(framework.Exercise("_fx_unjudged", 1, body, __name__), lambda: None)
    assert r.passed and "too busy" in r.message
    assert r.details["speed_not_judged"].startswith("the machine is too busy")
    row = {"exercise": "_fx_unjudged", "verdict": "passed", "message": r.message,
           "details": r.details}
    assert review_reason(row) == "passed, but the check says speed was not judged"

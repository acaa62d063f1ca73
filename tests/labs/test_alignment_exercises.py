"""Lab 01's exercises with fake students, through the trusted worker (check.run_source): the
notebook's reference solutions pass (also on a simulated 128-bit host), the stubs give 'not
implemented' with the first hint, delegation to labkit's kernels gives "uses labkit's answer",
and the shortcuts that once passed fail (a strided view, missing padding or lengths, an
int64-lane kernel, a wrong prediction)."""
import re

import pytest

from labkit import check, hints
from labkit.alignment import checks as _checks  # noqa: F401 - registers the checks and hints
from labkit.check.falsefail import solutions

IMPORTS = ("import numpy as np\nimport numba\nfrom numba import njit\n"
           "from labkit import alignment as A\nfrom labkit import inspect as lk\n")
EXERCISES = ("ragged_transpose", "transposed_inner", "int16_lanes", "int16_length")
SOL = {s.name: s for s in solutions() if s.lab == "alignment"}


pytestmark = pytest.mark.usefixtures("report_speed", "fresh_worker")


def _run(name, source, function=None):
    return check.run_source(name, source, IMPORTS, function=function)


def _stub(source: str) -> str:
    """The student copy of an exercise cell: the solution region → raise NotImplementedError."""
    from labkit.release import strip_source
    return strip_source(source)


def test_the_notebook_has_the_four_exercises():
    assert set(EXERCISES) <= set(SOL), sorted(SOL)
    for name in EXERCISES:
        assert check.get(name).points >= 1
        assert hints.tiers(name) == 3, name


# at the host's width nbval runs this solution's check (strict) in the default tier: full
@pytest.mark.parametrize("bits", [pytest.param(None, marks=pytest.mark.full), "128"])
@pytest.mark.parametrize("name", EXERCISES)
def test_reference_solution_passes(name, bits, monkeypatch):
    if bits:
        monkeypatch.setenv("LABKIT_NATIVE_BITS", bits)
        check.restart_worker()
    sol = SOL[name]
    r = check.run_source(name, sol.source, sol.imports, function=sol.function)
    if bits:
        check.restart_worker()
    assert r.passed, str(r)


@pytest.mark.parametrize("name", EXERCISES)
def test_stub_is_not_implemented_with_the_first_hint(name):
    sol = SOL[name]
    r = check.run_source(name, _stub(sol.source), sol.imports, function=sol.function)
    assert r.verdict == "not implemented", str(r)
    first = hints.get(name).texts[0]
    assert first[:60] in r.message, r.message


# ------------------------------------------------------------------ ragged_transpose
RAGGED_DIRECT = '''
def my_ragged_transpose(flat, offsets, lanes):
    return A.transpose_ragged(flat, offsets, lanes)
'''
RAGGED_ALIAS = '''
from labkit.alignment.kernels import transpose_ragged as tr

def my_ragged_transpose(flat, offsets, lanes):
    return tr(flat, offsets, lanes)
'''
RAGGED_GETATTR = '''
def my_ragged_transpose(flat, offsets, lanes):
    fn = getattr(A, "transpose_" + "ragged")
    return fn(flat, offsets, lanes)
'''
RAGGED_NO_PADDING = '''
def my_ragged_transpose(flat, offsets, lanes):
    n = offsets.size - 1
    lens = np.diff(offsets)
    T = np.zeros((lens.max(), n), np.uint8)
    for p in range(n):
        T[:lens[p], p] = flat[offsets[p]:offsets[p + 1]]
    return T, lens
'''
RAGGED_VIEW = '''
def my_ragged_transpose(flat, offsets, lanes):
    n = offsets.size - 1
    lens = np.diff(offsets)
    w = -(-n // lanes) * lanes
    rows = np.zeros((w, lens.max()), np.uint8)
    for p in range(n):
        rows[p, :lens[p]] = flat[offsets[p]:offsets[p + 1]]
    out = np.zeros(w, np.int64)
    out[:n] = lens
    return rows.T, out
'''
RAGGED_FULL_LENGTHS = '''
def my_ragged_transpose(flat, offsets, lanes):
    n = offsets.size - 1
    lens = np.diff(offsets)
    w = -(-n // lanes) * lanes
    T = np.zeros((lens.max(), w), np.uint8)
    for p in range(n):
        T[:lens[p], p] = flat[offsets[p]:offsets[p + 1]]
    return T, np.full(w, lens.max())
'''


@pytest.mark.parametrize("src", [RAGGED_DIRECT, RAGGED_ALIAS, RAGGED_GETATTR])
def test_ragged_transpose_delegation(src):
    r = _run("ragged_transpose", src, "my_ragged_transpose")
    assert r.verdict == "uses labkit's answer", str(r)


@pytest.mark.parametrize("src,needle", [(RAGGED_NO_PADDING, "multiple of lanes"),
                                        (RAGGED_VIEW, "strided view"),
                                        (RAGGED_FULL_LENGTHS, "lens[")])
def test_ragged_transpose_shortcuts_are_wrong(src, needle):
    r = _run("ragged_transpose", src, "my_ragged_transpose")
    assert r.verdict == "wrong" and needle in r.message, str(r)


# ------------------------------------------------------------------ the lane loop, int16
def _solution_body(name):
    return SOL[name].source


def test_transposed_inner_delegation():
    for body in ("return A.align_transposed(seqs1T, seqs2T, scoring)",
                 "f = getattr(A, 'align_' + 'transposed')\n    return f(seqs1T, seqs2T, scoring)",
                 "from labkit.alignment import kernels as K\n"
                 "    return K.align_transposed_promoted(seqs1T, seqs2T, scoring)"):
        src = f"def my_align_transposed(seqs1T, seqs2T, scoring):\n    {body}\n"
        r = _run("transposed_inner", src, "my_align_transposed")
        assert r.verdict == "uses labkit's answer", (body, str(r))
    src = "def my_align_int16(seqs1T, seqs2T, scoring):\n    return A.align(seqs1T.T.copy(), seqs2T.T.copy(), scoring)\n"
    assert _run("int16_lanes", src, "my_align_int16").verdict == "uses labkit's answer"


def test_plain_python_lane_loop_is_not_vectorised():
    src = _solution_body("transposed_inner").replace("@njit\n", "")
    r = _run("transposed_inner", src, "my_align_transposed")
    assert r.verdict == "not vectorised" and "@njit" in r.message, str(r)


def test_int64_lane_kernel_fails_the_int16_gate():
    # exercise 2's plain kernel (numba computes it in int64) handed in for exercise 3
    src = _solution_body("transposed_inner").replace("def my_align_transposed", "def my_align_int16")
    r = _run("int16_lanes", src, "my_align_int16")
    assert r.verdict == "technique missing", str(r)
    assert re.search(r"maxima work on <\d+ x i64>", r.message) and "int16" in r.message, r.message


def test_int16_kernel_with_wrong_gap_is_wrong():
    src = _solution_body("int16_lanes").replace("opened = np.int16(best + go)",
                                                "opened = np.int16(best + ge)")
    r = _run("int16_lanes", src, "my_align_int16")
    assert r.verdict == "wrong" and "score[" in r.message, str(r)


# ------------------------------------------------------------------ the prediction
@pytest.mark.parametrize("value,verdict,needle", [
    (5461, "passed", "32744"), (5462, "wrong", "too long"), (5460, "wrong", "too short"),
    (32767 // 2, "wrong", "too long"), ("5461", "wrong", "expected a whole number"),
    (5461.5, "wrong", "whole number")])
def test_int16_length_is_graded_exactly(value, verdict, needle):
    src = f"def int16_max_length():\n    return {value!r}\n"
    r = _run("int16_length", src, "int16_max_length")
    assert r.verdict == verdict and needle in r.message, str(r)


def test_int16_length_by_bisection_on_labkits_guard_is_delegation():
    src = ("def int16_max_length():\n    L = 1\n"
           "    while A.fits_int16(L + 1, L + 1):\n        L += 1\n    return L\n")
    assert _run("int16_length", src, "int16_max_length").verdict == "uses labkit's answer"


def test_int16_limit_bounds():
    from labkit.alignment import Scoring
    from labkit.alignment.checks import int16_limit
    assert int16_limit() == 5461 == 32767 // 6
    # with a tiny match score the negative side (gaps) binds first
    assert int16_limit(Scoring(match=1, mismatch=-1, gap_open=-11, gap_extend=-10)) < 32767


# ---------------------------------------------------------------- inputs the student cannot touch
RAGGED = """
@njit
def my_ragged(flat, offsets, lanes):
    n = offsets.size - 1
    L = 0
    for p in range(n):
        L = max(L, offsets[p + 1] - offsets[p])
    w = -(-n // lanes) * lanes
    T = np.zeros((L, w), np.uint8)
    lens = np.zeros(w, np.int64)
    for p in range(n):
        o = offsets[p]
        m = offsets[p + 1] - o
        lens[p] = m
        for i in range(m):
            T[i, p] = flat[o + i]
    {spoil}
    return T, lens
"""


@pytest.mark.parametrize("spoil, arg", [("flat[:] = 0", "flat"),
                                        ("offsets[1:] = offsets[1:] - offsets[:-1]", "offsets")])
def test_ragged_transpose_that_changes_its_input_is_wrong(spoil, arg):
    r = _run("ragged_transpose", RAGGED.format(spoil=spoil), "my_ragged")
    assert r.verdict == "wrong" and r.points == 0, r
    assert f"changed its input {arg}" in r.message, r.message


def test_ragged_transpose_that_leaves_its_input_alone_passes():
    r = _run("ragged_transpose", RAGGED.format(spoil="pass"), "my_ragged")
    assert r.passed, r

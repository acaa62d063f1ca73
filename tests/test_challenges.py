"""Open challenges: graded on a log scale between a lab's slow starting point (0
points) and labkit's kernel (full points), correctness first on hidden inputs the student cannot
touch. The scale's logic runs on a virtual CPU clock (as tests/test_check_speed_beside.py):
fake kernels advance it by fixed amounts, so every position, interval and tier is exact on any
machine under any load. The labs' challenges: their anchors agree with the lab's reference on
the hidden inputs, a call into labkit's kernel is refused, a wrong or input-changing function
fails; the real timing (the solution's full points, the starting point's 0, a half-speed
solution's middle tier) is in the full tier."""
from __future__ import annotations

import importlib
import inspect
import math
import sys
import types

import nbformat
import numpy as np
import pytest

from labkit import check
from labkit.check import challenge as C
from labkit.check import speed
from labkit.check.challenge import Challenge, judge
from tooling import full_but_for_noise

LABS = ("alignment", "bspline", "pcc", "epistasis")

# ------------------------------------------------------------------ the scale, on paper


def test_position_is_zero_at_the_start_one_at_labkit_and_nan_without_a_scale():
    assert C.position(32.0, 32.0, 1.0) == 0.0
    assert C.position(32.0, 1.0, 1.0) == 1.0
    assert C.position(32.0, 2.0, 1.0) == pytest.approx(0.8)          # 32^0.2 = 2
    assert C.position(32.0, 0.5, 1.0) == pytest.approx(1.2)          # faster than labkit
    assert C.position(32.0, 64.0, 1.0) == pytest.approx(-0.2)        # slower than the start
    assert math.isnan(C.position(1.0, 1.0, 1.0)) and math.isnan(C.position(1.0, 1.0, 2.0))


def test_tiers_and_a_boundary_counts():
    assert [at for at, _ in C.TIERS] == [0.2, 0.4, 0.55, C.FULL_AT] and C.FULL_AT == 0.7
    assert [s for _, s in C.TIERS] == [0.25, 0.5, 0.75, 1.0]
    assert [C.tier_of(p) for p in (-1, 0, 0.19, 0.2, 0.39, 0.4, 0.55, 0.69, 0.7, 1.5)] == \
        [0, 0, 0, 1, 1, 2, 3, 3, 4, 4]
    assert C.tier_of(0.55 - 1e-12) == 3                # a boundary reached to rounding
    assert [C.describe_tier(k) for k in range(5)] == ["no", "¼", "½", "¾", "full"]


def _times(ps, scale=32.0, spread=0.0, n=None):
    """Per-round (t_start, t_student, t_labkit) with positions ``ps`` (cycled to ``n`` rounds)."""
    n = n or max(7, len(ps))
    out = []
    for k in range(n):
        p = ps[k % len(ps)]
        f = 1.0 + spread * math.sin(2.39996 * k)
        out.append((scale * f, scale ** (1 - p), 1.0))
    return out


def test_place_gives_the_tier_of_the_intervals_low_end_and_says_when_it_straddles():
    pl = C.place(_times([0.5]))
    assert pl.decided and pl.tier == 2 and not pl.straddles
    assert pl.position.ratio == pytest.approx(0.5)
    pl = C.place(_times([0.5, 0.53, 0.57, 0.6, 0.54, 0.56, 0.52]))
    assert pl.decided and pl.straddles and (pl.tier, pl.tier_high) == (2, 3)
    pl = C.place(_times([0.3, 0.45, 0.5, 0.55, 0.65, 0.35, 0.6]))     # spans 0.4 and 0.55
    assert not pl.decided and "spans 2 tier boundaries" in pl.why


def test_place_is_undecided_when_labkit_is_not_clearly_faster_than_the_start():
    pl = C.place(_times([0.5], scale=1.5))
    assert not pl.decided and "not clearly faster than the starting point" in pl.why
    pl = C.place([(1.0, 1.0, 1.0)] * 7)
    assert not pl.decided


def test_the_noise_rule_excuses_only_an_interval_that_reaches_the_full_tier():
    """tooling.full_but_for_noise, the real-timing tests' rule: a straddle of the full tier's
    boundary is the machine's (the check gives the lower tier by design); an interval wholly
    below it, a straddle of a lower boundary or a failed verdict is not."""
    def d(straddles, p, high):
        return {"challenge": {"straddles": straddles, "position": p, "position_high": high}}
    assert full_but_for_noise("passed", d(True, 0.69, 0.72))
    assert full_but_for_noise("passed", d(True, 0.71, 0.78))
    assert not full_but_for_noise("passed", d(True, 0.5, 0.6))         # the ½/¾ boundary
    assert not full_but_for_noise("passed", d(False, 0.62, 0.68))       # decidedly ¾
    assert not full_but_for_noise("wrong", d(True, 0.69, 0.72))
    assert not full_but_for_noise("passed", None)


# ------------------------------------------------------------------ a fake challenge
#: The virtual clock: the start costs 32 units, labkit's kernel 1, the student 32^(1 - p)
#: times a deterministic factor exp(spread · sin(2.39996 ⌊k/2⌋)) for its k-th call (the golden
#: angle: the same quasi-random sequence on every run; a round times two calls in a row, so
#: its best of two is that factor) — position p, scale 32×, on any machine.
_T = [0.0]
_CASE = {"p": 0.5, "spread": 0.0, "scale": 32.0, "calls": 0, "wrong_after": None,
         "mutate_after": None}
_U = 1e-3


def _start(x):
    _T[0] += _CASE["scale"] * _U
    return x.sum()


def _labkit(x):
    _T[0] += _U
    return x.sum()


def _reference(x):
    return float(np.sum(x))


def _compare(got, exp):
    if not isinstance(got, float):
        got = float(got)
    return None if abs(got - exp) <= 1e-9 * max(1.0, abs(exp)) else f"sum {got}, expected {exp}"


def student(x):
    """The fake student: position _CASE["p"], optionally wrong or mutating after some calls."""
    k = _CASE["calls"] = _CASE["calls"] + 1
    f = math.exp(_CASE["spread"] * math.sin(2.39996 * (k // 2)))   # pairs of calls alike
    _T[0] += _CASE["scale"] ** (1 - _CASE["p"]) * _U * f
    if _CASE["mutate_after"] is not None and k > _CASE["mutate_after"]:
        x[0] += 1.0
    s = x.sum()
    if _CASE["wrong_after"] is not None and k > _CASE["wrong_after"]:
        s += 1.0
    return s


def _cases(g):
    return [("a short vector", (g.random(5),)), ("one element", (np.array([2.5]),))]


FAKE = Challenge(name="_t_challenge", start=_start, labkit=_labkit,
                 timing_input=lambda g: (g.random(1000),), cases=_cases, reference=_reference,
                 compare=_compare, min_time=0.003)


@check.exercise("_t_challenge", points=4)
def _t_challenge(fn):
    return judge(fn, FAKE)


@pytest.fixture(autouse=True)
def _virtual(monkeypatch):
    monkeypatch.setattr(speed, "_clock", lambda: _T[0])
    monkeypatch.setenv("LABKIT_SPEED", "enforce")
    _CASE.update(p=0.5, spread=0.0, scale=32.0, calls=0, wrong_after=None, mutate_after=None)


def _run(**case):
    _CASE.update(calls=0, **case)
    return check._t_challenge(student)


def test_the_starting_points_speed_earns_nothing():
    r = _run(p=0.0)
    assert not r.passed and r.points == 0 and r.verdict == "no change", r.message
    assert "the same speed as the starting point (1.00×)" in r.message, r.message
    d = r.details["challenge"]
    assert d["tier"] == 0.0 and d["position"] == pytest.approx(0.0, abs=1e-9)
    assert d["scale"] == pytest.approx(32.0) and d["vs_start"] == pytest.approx(1.0)


def test_slower_than_the_start_is_slower():
    r = _run(p=-0.3)
    assert not r.passed and r.verdict == "slower", r.message


@pytest.mark.parametrize("p, share", [(0.1, 0.0), (0.3, 0.25), (0.5, 0.5), (0.6, 0.75),
                                      (0.8, 1.0)])
def test_each_tier_earns_its_share_of_the_points(p, share):
    r = _run(p=p)
    assert r.points == pytest.approx(4 * share) and r.max_points == 4, r.message
    assert r.passed == (share > 0), r.message
    assert r.details["challenge"]["tier"] == share
    assert r.details["challenge"]["position"] == pytest.approx(p)
    if share:
        assert r.message.startswith(f"tier {C.describe_tier(C.tier_of(p))} "), r.message
        assert r.to_dict()["points"] == pytest.approx(4 * share)      # what the grader reads
    else:
        assert r.verdict == "not fast enough" and "no tier yet" in r.message, r.message


def test_a_slowed_down_honest_answer_earns_a_middle_tier():
    # an answer with full points at p = 0.85, slowed down 4× (its work done four times, as
    # the full tier's real test does): 0.85 − log 4 / log 32 = 0.45
    assert _run(p=0.85).points == 4
    r = _run(p=0.85 - math.log(4) / math.log(32))
    assert r.passed and r.points == 2, r.message
    assert r.details["challenge"]["tier"] == 0.5


def test_faster_than_labkits_kernel_is_named():
    r = _run(p=1.3)
    assert r.passed and r.points == 4, r.message
    assert r.message.startswith("faster than labkit's kernel!"), r.message
    assert r.details["challenge"]["ratio"] == pytest.approx(32 ** 0.3, rel=1e-3)


def test_an_interval_straddling_a_boundary_gets_the_lower_tier_and_says_so():
    # rounds on both sides of the ¾ boundary (0.55) up to the last one (the best of two samples
    # per round lifts the median above the nominal 0.52 here)
    r = _run(p=0.52, spread=0.2)
    d = r.details["challenge"]
    assert d["position_low"] < 0.55 <= d["position_high"], d
    assert r.passed and r.points == 2.0 and d["tier"] == 0.5 and d["straddles"], r.message
    assert "straddles the ¾ (0.55) boundary, so the lower tier is given" in r.message, r.message
    assert d["rounds"] == C.MAX_ROUNDS            # it measured again before giving the lower tier


def test_a_machine_too_busy_for_the_scale_is_inconclusive_never_a_tier():
    r = _run(p=0.5, scale=1.0)             # labkit's kernel no faster than the start
    assert not r.passed and r.points == 0 and r.verdict == "inconclusive", r.message
    assert "not clearly faster than the starting point" in r.message, r.message
    assert r.details["challenge"]["tier"] is None
    r = _run(p=0.5, scale=32.0, spread=2.0)    # every round somewhere else: spans two boundaries
    assert r.verdict == "inconclusive" and "tier boundaries" in r.message, r.message


def test_report_mode_measures_three_rounds_and_gives_the_points(monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "report")
    r = _run(p=0.1)
    assert r.passed and r.points == 4, r.message
    assert "speed reported only" in r.message and "no tier on this run" in r.message, r.message
    assert r.details["challenge"]["rounds"] == C.REPORT_ROUNDS
    assert r.details["challenge"]["judged"] is False
    r = _run(p=0.52, spread=0.2)             # three rounds on both sides of ¾: it says so
    d = r.details["challenge"]
    assert r.points == 4 and d["straddles"], r.message
    assert f"tier {C.describe_tier(C.tier_of(d['position_low']))} (its interval reaches " \
        in r.message and " on this run" in r.message, r.message


def test_a_wrong_result_is_wrong_before_any_timing():
    r = _run(wrong_after=0)
    assert r.verdict == "wrong" and r.message.startswith("a short vector: sum"), r.message
    assert "challenge" not in r.details


def test_a_result_that_changes_in_the_timed_calls_is_wrong():
    # right on the hidden cases and the timing input's first call, wrong afterwards
    r = _run(wrong_after=4)
    assert r.verdict == "wrong" and "a timed call returned another result" in r.message, r.message


def test_a_student_who_changes_its_input_does_not_pass():
    r = _run(mutate_after=0)
    assert not r.passed and r.verdict == "wrong" and "changed its input x" in r.message, r.message
    r = _run(mutate_after=4)                       # only once the timing has started
    assert not r.passed and r.verdict == "wrong", r.message
    assert "changed its input" in r.message, r.message


# ------------------------------------------------------------------ fractional points
def test_award_rejects_a_share_outside_0_1():
    from labkit.check.framework import award
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="share of its points"):
            award(bad)


def test_fractional_points_survive_the_result_round_trip():
    r = _run(p=0.5)
    d = r.to_dict()
    back = check.CheckResult.from_dict(d)
    assert back.points == 2.0 and back.max_points == 4 and back.passed


# ------------------------------------------------------------------ the labs' challenges
def _lab(lab):
    return importlib.import_module(f"labkit.{lab}.challenge")


def test_every_lab_registers_its_challenge_through_the_registry():
    from labkit.registry import check_modules
    mods = check_modules()
    for lab in LABS:
        mod = _lab(lab)
        name = mod.CHALLENGE.name
        assert f"labkit.{lab}.challenge" in mods
        ex = check.get(name)
        assert ex.module == f"labkit.{lab}.challenge" and ex.points == 4 and ex.answers
        assert mod.RULES and "Not allowed" in mod.RULES and "Threads" in mod.RULES
        assert mod.SOLUTION and "labkit" not in mod.SOLUTION
        src = mod.start_source()
        assert src.startswith("@njit\ndef ") and f"def {name}(" in src and "labkit" not in src


def _student(lab, source, name=None):
    """Load ``source`` (+ the challenge's imports) as a notebook cell would be: a module that is
    not labkit's."""
    import linecache
    mod = _lab(lab)
    m = types.ModuleType(f"challenge_student_{lab}_{abs(hash(source))}")
    sys.modules[m.__name__] = m
    text = mod.SOLUTION_IMPORTS + source
    filename = f"<{m.__name__}>"                 # its source readable, as the worker's cells
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), vars(m))
    return getattr(m, name or mod.CHALLENGE.name)


@pytest.mark.parametrize("lab", LABS)
def test_the_anchors_agree_with_the_reference_on_the_hidden_inputs(lab):
    # the starting point (0 points) and labkit's kernel (full points) both answer every hidden
    # input right: the scale's two ends are correct programs
    ch = _lab(lab).CHALLENGE
    for label, args in ch.cases(np.random.default_rng(7)):
        exp = ch.reference(*args)
        for who, fn, read in (("start", ch.start, ch.result_of),
                              ("labkit", ch.labkit, ch.labkit_result_of)):
            a = tuple(_copy(x) for x in args)
            got = read(a, fn(*a))
            assert ch.compare(got, exp) is None, f"{lab} {who} on {label}: {ch.compare(got, exp)}"


def _copy(x):
    from labkit.check import inputs
    return inputs.own_copy(x)


def _renamed_start(lab, old: str, new: str) -> str:
    src = _lab(lab).start_source()
    assert old in src, (lab, old)
    return src.replace(old, new, 1)


@pytest.fixture
def _inprocess(monkeypatch):
    # the guard's own checks, run here (the worker path is proven once below)
    monkeypatch.setenv("LABKIT_CHECK_INPROCESS", "1")


#: Per lab: a cell that hands the work to labkit (refused before any timing), a change that
#: makes the starting point wrong, and one that makes it change an input.
_DELEGATE = {
    "alignment": "from labkit.alignment.kernels import align_batched_serial\n\n@njit\n"
                 "def align_challenge(seqs1, seqs2):\n    return align_batched_serial(seqs1, seqs2)\n",
    "bspline": "from labkit.bspline import vgh_aos\n\n@njit\ndef vgh_challenge(coefs, positions, "
               "value, grad, hess):\n    vgh_aos(coefs, positions, value, grad, hess)\n",
    "pcc": "from labkit.pcc.kernels import pcc_transformed\n\n@njit\ndef pcc_challenge(X, t):\n"
           "    R = pcc_transformed(X)\n    return R, R, R\n",
    "epistasis": "from labkit.epistasis import kernels\n\n@njit\ndef epistasis_challenge(g, y, top):\n"
                 "    return kernels.popcount_hw(g)\n",
}
_WRONG = {"alignment": ("match, mismatch, gap_open, gap_extend = 6, -4, -11, -1",
                        "match, mismatch, gap_open, gap_extend = 5, -4, -11, -1"),
          "bspline": ("value[p, m] = v", "value[p, m] = v + 1e-6"),
          "pcc": ("if abs(r) >= threshold:", "if abs(r) > threshold + 0.01:"),
          "epistasis": ("cell = genotypes[i, a] * 9", "cell = genotypes[i, b] * 9")}
_MUTATE = {"alignment": ("n = len(seqs1)\n", "n = len(seqs1)\n    seqs1[0] = seqs2[0]\n"),
           "bspline": ("nx, ny, nz, N = coefs.shape\n",
                       "nx, ny, nz, N = coefs.shape\n    coefs[0, 0, 0, 0] = 0.0\n"),
           "pcc": ("n, l = X.shape\n", "n, l = X.shape\n    X[0, 0] += 1.0\n"),
           "epistasis": ("m, n = genotypes.shape\n",
                         "m, n = genotypes.shape\n    labels[0] = 1 - labels[0]\n")}


@pytest.mark.parametrize("lab", LABS)
def test_a_call_into_labkits_kernel_is_refused(lab, _inprocess):
    ch = _lab(lab).CHALLENGE
    r = check.run(ch.name, _student(lab, _DELEGATE[lab]))
    assert not r.passed and r.points == 0 and r.verdict == "uses labkit's answer", r.message
    assert "challenge" not in r.details             # refused before any timing


@pytest.mark.parametrize("lab", LABS)
def test_a_wrong_result_is_wrong(lab, _inprocess):
    ch = _lab(lab).CHALLENGE
    r = check.run(ch.name, _student(lab, _renamed_start(lab, *_WRONG[lab])))
    assert not r.passed and r.verdict == "wrong", r.message
    assert "challenge" not in r.details


@pytest.mark.parametrize("lab", LABS)
def test_a_function_that_changes_its_input_does_not_pass(lab, _inprocess):
    ch = _lab(lab).CHALLENGE
    r = check.run(ch.name, _student(lab, _renamed_start(lab, *_MUTATE[lab])))
    assert not r.passed and r.verdict == "wrong" and "changed its input" in r.message, r.message


def test_a_plain_python_function_is_told_to_use_njit():
    # through the worker: plain Python runs in a child process, whose time is the pipe's
    src = "def pcc_challenge(X, threshold):\n    return X, X, X\n"
    r = check.run_source("pcc_challenge", src, "import numpy as np\n", function="pcc_challenge")
    assert r.verdict == "technique missing" and "@njit" in r.message, r.message


def test_the_worker_refuses_labkits_kernel_in_a_challenge():
    r = check.run_source("align_challenge", _DELEGATE["alignment"], "from numba import njit\n",
                         function="align_challenge")
    assert r.verdict == "uses labkit's answer", r.message


def test_prange_shape_checks_are_no_escape_hatch():
    # parallel=True's array analysis adds its own intrinsics (assert_equiv here, at the join of
    # an if/else inside a prange body): honest parallel code, not a hatch — lab 02's challenge
    # invites prange. A student's own intrinsic is still refused (test_check_forgery.py).
    from labkit.check import hatches
    src = ("@njit(parallel=True)\ndef f(c, out):\n    N = c.shape[1]\n"
           "    s = np.empty((numba.get_num_threads(), N))\n"
           "    for p in prange(out.shape[0]):\n        q = numba.get_thread_id()\n"
           "        for i in range(3):\n            if i == 0:\n"
           "                for k in range(N):\n                    s[q, k] = c[i, k]\n"
           "            else:\n                for k in range(N):\n"
           "                    s[q, k] += c[i, k]\n        out[p] = s[q, 0]\n")
    m = types.ModuleType(hatches.CELL_PREFIX + "prange_if")
    sys.modules[m.__name__] = m
    exec(compile("import numpy as np\nimport numba\nfrom numba import njit, prange\n" + src,
                 m.__name__, "exec"), vars(m))
    m.f(np.ones((3, 8)), np.zeros(4))
    ann = m.f.overloads[m.f.signatures[0]].type_annotation
    assert any("assert_equiv" in str(t) for t in ann.typemap.values())
    assert hatches.refusal(m.f) is None


# ------------------------------------------------------------------ the notebooks' last section
_NB = {"alignment": "01_alignment", "bspline": "02_bspline", "pcc": "03_pcc",
       "epistasis": "04_epistasis"}


def _source_cells(lab):
    from labkit import notebooks as lknb
    from labkit.release import ROOT
    return lknb.read_source(ROOT / "solutions" / f"{_NB[lab]}.md").cells


def _gid(c):
    return (c.metadata.get("nbgrader") or {}).get("grade_id")


@pytest.mark.parametrize("lab", LABS)
def test_the_notebook_ends_with_the_challenge_its_rules_and_solution_from_the_module(lab):
    """Each lab's last section holds the challenge as labkit.<lab>.challenge has it, so the two
    cannot drift: a markdown cell equal to RULES, the exercise cell whose solution region is
    SOLUTION (its start named in the cell's metadata for the release), the check cell (4
    points), then the feedback cell; the imports SOLUTION needs come from earlier cells."""
    from labkit.check.loader import imports_only
    mod, cells = _lab(lab), _source_cells(lab)
    name = mod.CHALLENGE.name
    heads = [i for i, c in enumerate(cells) if c.cell_type == "markdown"
             and "Challenge: make it fast" in c.source]
    assert len(heads) == 1, lab
    tail = cells[heads[0]:]
    assert [c.source for c in tail if c.cell_type == "markdown"].count(mod.RULES) == 1, (
        f"solutions/{_NB[lab]}.md: the rules cell differs from labkit.{lab}.challenge.RULES")
    ex = next(c for c in tail if _gid(c) == f"ex-{name}")
    region = ex.source.split("### BEGIN SOLUTION\n", 1)[1].split("\n### END SOLUTION", 1)[0]
    assert region == mod.SOLUTION.rstrip("\n"), (
        f"solutions/{_NB[lab]}.md: the solution region differs from labkit.{lab}.challenge."
        "SOLUTION — paste the module's SOLUTION (tests/test_challenges.py)")
    assert ex.metadata["labkit"]["start"] == f"labkit.{lab}.challenge:start_source"
    from labkit import hints                 # hint 1 above the region, as every exercise's stub
    above = ex.source.split("\n### BEGIN SOLUTION", 1)[0].splitlines()[-1]
    assert above == "# Hint: " + " ".join(hints.get(name).texts[0].split()), above
    i = tail.index(ex)
    chk = tail[i + 1]
    fb = next(c for c in tail[i + 2:] if c.cell_type == "code")
    assert _gid(chk) == f"check-{name}" and chk.source.strip() == f"check.{name}({name})"
    assert chk.metadata["nbgrader"]["points"] == check.get(name).points == 4
    assert f'feedback("{name}")' in fb.source and "nbval-ignore-output" in fb.metadata["tags"]
    assert all(c.cell_type == "markdown" or _gid(c) or "feedback(" in c.source for c in tail)
    before = "".join(imports_only(c.source) for c in cells[:heads[0]] if c.cell_type == "code")
    for line in mod.SOLUTION_IMPORTS.strip().splitlines():
        assert line in before, f"{_NB[lab]}: an earlier cell must `{line}` for the solution"


def _student_copy_cell(lab):
    """The challenge's exercise cell of the student copy (labkit release) and the imports of
    the copy's earlier cells."""
    from labkit.check.loader import imports_only
    from labkit.release import release_notebook
    nb = nbformat.v4.new_notebook()
    nb.cells = _source_cells(lab)
    stu = release_notebook(nb, f"{_NB[lab]}.md").cells
    name = _lab(lab).CHALLENGE.name
    i = next(k for k, c in enumerate(stu) if _gid(c) == f"ex-{name}")
    return stu[i].source, "".join(imports_only(c.source) for c in stu[:i]
                                  if c.cell_type == "code")


@pytest.mark.parametrize("lab", LABS)
def test_the_starting_point_as_given_is_no_change_at_once(lab, monkeypatch):
    """The unsolved student copy earns 0 on its challenge — in every mode, LABKIT_SPEED=report
    (this suite's) too, where a correct function gets the points: the start as given is
    recognised (the same def and options) and told 'no change' before anything is timed."""
    monkeypatch.setenv("LABKIT_SPEED", "report")
    source, imports = _student_copy_cell(lab)
    name = _lab(lab).CHALLENGE.name
    r = check.run_source(name, source, imports, function=name)
    assert not r.passed and r.points == 0 and r.verdict == "no change", str(r)
    assert "starting point as the notebook gives it" in r.message, r.message
    assert r.details["challenge"] == {"unchanged": True, "judged": False}


def test_is_start_looks_at_the_code_not_the_comments():
    mod = _lab("pcc")
    src = mod.start_source()
    same = _student("pcc", "# mine\n" + src.replace("\n    n, l = X.shape",
                                                     "\n\n    n, l = X.shape  # ok"))
    assert C.is_start(same, mod.CHALLENGE.start)
    for changed in (src.replace('"""', '"""Mine. ', 1),                        # its docstring
                    src.replace("@njit", "@njit(fastmath=True)", 1),            # its options
                    src.replace("n, l = X.shape", "n, m = X.shape\n    l = m", 1)):
        assert not C.is_start(_student("pcc", changed), mod.CHALLENGE.start), changed
    assert not C.is_start(lambda X, t: X, mod.CHALLENGE.start)


def test_feedback_is_locked_until_the_check_ran_then_shows_the_facts(monkeypatch):
    from labkit.check import framework
    monkeypatch.setattr(framework, "_LAST", {})
    assert "🔒" in str(C.feedback("align_challenge"))
    with pytest.raises(AttributeError, match="no exercise named"):
        C.feedback("no_such_challenge")
    facts = {"ratio": 0.82, "ratio_low": 0.8, "ratio_high": 0.85, "vs_start": 21.0,
             "scale": 27.0, "position": 0.94, "position_low": 0.93, "position_high": 0.95,
             "rounds": 7, "tier": 1.0, "decided": True, "judged": True, "vector_bits": 0,
             "roof_share": 0.31, "roof": "the int16 ALU roof", "threads": 1,
             "steps": {"align_batched": 1.4}}
    framework.finish(check.CheckResult("align_challenge", True, 4.0, 4.0, "passed", "ok",
                                       {"challenge": facts}))
    text = str(C.feedback("align_challenge"))
    for part in ("✔", "0.82×", "0.80× – 0.85×", "21.00×", "27.00×", "0.94", "full",
                 "scalar", "31%", "the int16 ALU roof", "`align_batched`", "1.40×",
                 "Your hot loop is scalar"):
        assert part in text, (part, text)
    facts.update(tier=0.5, vector_bits=256, lanes=16, lane_type="int16")
    monkeypatch.setenv("LABKIT_NATIVE_BITS", "512")
    framework.finish(check.CheckResult("align_challenge", True, 2.0, 4.0, "passed", "ok",
                                       {"challenge": facts}))
    text = str(C.feedback("align_challenge"))
    assert "½; ¾ from position 0.55" in text and "256-bit vectors, 16 int16 lanes" in text
    assert "numba emits 512-bit vectors" in text, text
    framework.finish(check.CheckResult("align_challenge", False, 0, 4.0, "wrong", "no"))
    assert "stopped before timing" in str(C.feedback("align_challenge"))
    framework.finish(check.CheckResult("align_challenge", False, 0, 4.0, "no change", "same",
                                       {"challenge": {"unchanged": True}}))
    assert "still the starting point" in C.feedback("align_challenge")._repr_markdown_()


# ------------------------------------------------------------------ real timing (full tier)
#: A run on a machine too busy to place the student says so; that is the only other outcome the
#: real-timing tests accept.
_BUSY = "this run cannot place your kernel"


def _slowed(lab, times: int = 4) -> str:
    """The reference solution doing its whole work ``times`` times: an honest answer at a
    quarter of its speed."""
    mod = _lab(lab)
    name = mod.CHALLENGE.name
    params = ", ".join(inspect.signature(mod.CHALLENGE.start.py_func).parameters)
    src = mod.SOLUTION.replace(f"def {name}(", f"def _work(", 1)
    return (src + f"\n\n@njit\ndef {name}({params}):\n    r = _work({params})\n"
            f"    for _ in range({times - 1}):\n        r = _work({params})\n    return r\n")


def _grade(lab, source):
    mod = _lab(lab)
    return check.run_source(mod.CHALLENGE.name, source, mod.SOLUTION_IMPORTS,
                            function=mod.CHALLENGE.name)


@pytest.mark.full      # default tier: the scale's logic on the virtual clock above; the anchors
                       # on the hidden inputs (test_the_anchors_agree_…)
@pytest.mark.parametrize("lab", LABS)
def test_real_timing_solution_full_start_nothing_slowed_a_middle_tier(lab, monkeypatch):
    monkeypatch.setenv("LABKIT_SPEED", "enforce")
    sol = _grade(lab, _lab(lab).SOLUTION)
    assert sol.verdict == "passed" and (sol.points == 4 or
                                        full_but_for_noise(sol.verdict, sol.details)) or \
        (sol.verdict == "inconclusive" and _BUSY in sol.message), str(sol)
    # the starting point with one word of its docstring changed: timed as a student's own code
    # (the unchanged start is "no change" before any timing: test_the_starting_point_as_given_…)
    start = _grade(lab, _lab(lab).start_source().replace('"""', '"""My copy: ', 1))
    assert start.points == 0 and not start.passed, str(start)
    assert "challenge" in start.details and not start.details["challenge"].get("unchanged")
    assert start.verdict in ("no change", "slower", "not fast enough") or \
        (start.verdict == "inconclusive" and _BUSY in start.message), str(start)
    slow = _grade(lab, _slowed(lab))
    assert (slow.passed and 0 < slow.points < 4) or \
        (slow.verdict == "inconclusive" and _BUSY in slow.message), str(slow)

"""The graded prediction exercises (predicted bound beside measured cycles) with fake students:
lesson 00's ``loop_bound`` (which resource bounds a loop, how many cycles per element, read off
OSACA's report) and lab 04's ``popcount_bound`` (which popcount the reports say is faster, by how
much, or None when a lower bound cannot tell).

The check bodies run in-process on synthetic reports (the builders and the measurements are
monkeypatched), so every verdict here is the same on any host; delegation goes through the
trusted worker (``check.run_source``), refused before any report is built.
"""
from __future__ import annotations

import pytest

from labkit import check
from labkit.check import CheckFailure
from labkit.epistasis import checks as E
from labkit.lesson00 import checks as L
from labkit.check.bounds import reading_error, stated
from labkit.inspect.loopreport import LoopReport, truth
from tests.fakes import faster


def _rep(name, ports, dependency, elements, model="SPR", unknown=(), critical=0.0):
    return LoopReport(name=name, cpu="test", model=model, ports=dict(ports),
                      dependency=dependency, critical_path=critical, elements=elements,
                      unknown=list(unknown), instructions=20)


def _judged(exercise, student):
    """(verdict, message) of the exercise's check body run in-process on ``student``."""
    try:
        return "passed", exercise.body(student)
    except CheckFailure as e:
        return e.verdict, str(e)


def _bound(student):
    """loop_bound's (verdict, message) on ``student``."""
    return _judged(L.check_loop_bound, student)


def _faster(student):
    """popcount_bound's (verdict, message) on ``student``."""
    return _judged(E.check_popcount_bound, student)


def _in_turn(state, key):
    """A stand-in measurement: call i gets ``state[key][i]`` (read at the call, as tests change
    it), the last entry from then on."""
    calls = iter(range(100))

    def next_value():
        values = state[key]
        return values[min(next(calls), len(values) - 1)]
    return next_value


# ---------------------------------------------------------------- lesson 00: loop_bound
PLAIN = _rep("dot_plain", {"0": 1.0, "5": 1.33}, 16.0, 8, critical=20.0)
PARTIALS = _rep("dot_partials", {"0": 5.33, "5": 5.34, "2": 2.0}, 2.0, 8, critical=11.0)
FASTMATH = _rep("dot_fastmath", {"1": 2.67, "0": 2.0}, 4.0, 16, critical=12.0)
FOREIGN = _rep("dot_fastmath", {"1D": 4.0, "3D": 3.9}, 3.0, 16, model="ZEN4", critical=9.0)


def right(report):
    port, busy = max(report.ports.items(), key=lambda kv: kv[1])
    if report.dependency > busy:
        return "dependency", report.dependency / report.elements
    return f"port {port}", busy / report.elements


def always_chain(report):          # wrong resource: the chain, whatever the ports say
    port, busy = max(report.ports.items(), key=lambda kv: kv[1])
    return "dependency", max(busy, report.dependency) / report.elements


def critical_path(report):         # the one-iteration latency path taken for the bound
    port, busy = max(report.ports.items(), key=lambda kv: kv[1])
    if report.critical_path > busy:
        return "dependency", report.critical_path / report.elements
    return port, busy / report.elements


def twice(report):                 # off by 2×
    r, c = right(report)
    return r, 2 * c


def per_iteration(report):         # forgot the elements per iteration
    r, c = right(report)
    return r, c * report.elements


def _rounds(*cycles):
    return sorted((c, c * 0.5, 2e9) for c in cycles)


@pytest.fixture
def host(monkeypatch):
    """Synthetic reports for this 'core' and the foreign ones; measurements set per test."""
    state = {"host": {"dot_plain": (PLAIN, None), "dot_partials": (PARTIALS, None),
                      "dot_fastmath": (FASTMATH, None)},
             "rounds": [(2.05,) * 9]}

    def reports(cpu=None, kernels=L.BOUND_KERNELS, n=2048):
        if cpu is None:
            return dict(state["host"])
        return {k: (FOREIGN, None) for k in kernels}

    next_rounds = _in_turn(state, "rounds")
    monkeypatch.setattr(L, "bound_reports", reports)
    monkeypatch.setattr(L, "measured_cycle_rounds", lambda *a, **k: _rounds(*next_rounds()))
    return state


def test_loop_bound_right_reading_passes_beside_the_measurement(host):
    verdict, msg = _bound(right)
    assert verdict == "passed", msg
    assert "read 5 reports right" in msg and "measured 2.05" in msg and "your bound 2 " in msg
    assert "the model describes this core" in msg


@pytest.mark.parametrize("student, needle", [
    (always_chain, "dot_partials on SPR: you said the dependency chain"),
    (critical_path, "1.56× the report's bound"),     # dot_plain: 20/8 against 16/8 … 2.5/2
    (twice, "2.00× the report's bound"),
    (per_iteration, "per iteration of 8 elements"),
])
def test_loop_bound_misreadings_are_wrong(host, student, needle):
    verdict, msg = _bound(student)
    if student is critical_path:
        needle = "1.25× the report's bound"
    assert verdict == "wrong" and needle in msg, msg


def test_loop_bound_a_tie_for_busiest_port_accepts_either_port(host):
    for port in ("0", "5"):
        def named(report, _p=port):
            r, c = right(report)
            return (f"port {_p}" if report is PARTIALS else r), c
        assert _bound(named)[0] == "passed"
    def other(report):
        r, c = right(report)
        return ("port 2" if report is PARTIALS else r), c
    verdict, msg = _bound(other)
    assert verdict == "wrong" and "port 2 has 2.00 cycles of work" in msg, msg


@pytest.mark.parametrize("bad", [None, 2.0, ("dependency",), (3, 2.0), ("dependency", -1),
                                 ("dependency", True), ("dependency", float("nan"))])
def test_loop_bound_rejects_answers_that_are_not_a_bound(host, bad):
    verdict, msg = _bound(lambda report: bad)
    assert verdict == "wrong", msg


def test_loop_bound_busy_host_passes_on_the_readings_and_says_it_could_not_tell(host):
    # the reading is right, every round disturbed and far from the chain: the machine's fact,
    # in the message, not a verdict on the student's reading
    host["rounds"] = [(3.0, 3.2, 3.4, 3.5, 3.6, 3.9, 4.0, 4.1, 4.2)]
    verdict, msg = _bound(right)
    assert verdict == "passed" and "too busy" in msg and "18 rounds" in msg, msg
    assert "judges the model, not your reading" in msg
    # a quiet round in the second batch settles it
    host["rounds"] = [(3.0, 3.2, 3.4, 3.5, 3.6, 3.9, 4.0, 4.1, 4.2), (2.02,) + (3.0,) * 8]
    verdict, msg = _bound(right)
    assert verdict == "passed" and "the model describes this core" in msg, msg
    # a wrong reading stays wrong, busy or not
    assert _bound(twice)[0] == "wrong"


def test_loop_bound_steady_disagreement_is_the_models_not_the_students(host):
    host["rounds"] = [(4.0,) * 9]
    verdict, msg = _bound(right)
    assert verdict == "passed" and "does not describe this core" in msg, msg


def test_loop_bound_without_a_model_here_is_judged_on_the_other_cores(host):
    host["host"] = {"_why": "no OSACA core model for 'generic'"}
    verdict, msg = _bound(right)
    assert verdict == "passed" and "generic" in msg and "nothing is measured" in msg, msg
    assert "read 2 reports right" in msg                 # the foreign ones were read
    verdict, msg = _bound(twice)                          # … and judged
    assert verdict == "wrong", msg


def test_loop_bound_without_any_report_is_inconclusive(host, monkeypatch):
    monkeypatch.setattr(L, "bound_reports", lambda cpu=None, kernels=(), n=0: {
        "_why": "OSACA is not installed"})
    verdict, msg = _bound(right)
    assert verdict == "inconclusive" and "not gradable" in msg and "not installed" in msg, msg


def test_loop_bound_host_plain_with_unknown_instructions_is_not_measured(host):
    low = _rep("dot_plain", {"0": 1.0}, 16.0, 8, unknown=["vfoo %xmm0"])
    host["host"] = dict(host["host"], dot_plain=(low, None))
    verdict, msg = _bound(right)
    assert verdict == "passed" and "cannot back a bound for dot_plain" in msg, msg


def test_reading_normalises_port_names():
    assert stated(("Port 5", 1)) == ("5", 1.0) and stated(("p1d", 2.0)) == ("1D", 2.0)
    assert stated(("loop-carried dependency", 2))[0] == "dependency"
    assert reading_error(FOREIGN, stated(("1d", 0.25)), 0.1) is None
    assert truth(PARTIALS)[2] == ["0", "5"]
    near = _rep("x", {"0": 4.0}, 4.05, 4)                 # chain and port within 3 %: both right
    assert reading_error(near, ("dependency", 1.0), 0.1) is None
    assert reading_error(near, ("0", 1.0), 0.1) is None


# ---------------------------------------------------------------- lab 04: popcount_bound
MULA = _rep("Muła (vpshufb)", {"5": 12.0, "0": 4.0}, 3.0, 16, model="SKX")
TABLE = _rep("byte table", {"5": 48.0, "2": 16.0}, 1.0, 2, model="SKX")
HW_LOW = _rep("ctpop <8 x i64>", {"0": 8.0}, 2.0, 16, model="SKX", unknown=["vmovdqu64 x"])
MULA_LOW = _rep("Muła (vpshufb)", {"1": 1.4}, 3.0, 16, model="SPR", unknown=["vpshufb a"] * 24)
TABLE_LOW = _rep("byte table", {"0": 8.0}, 1.0, 2, model="SPR", unknown=["vpmovzxbq b"] * 32)


def ignores_lower_bounds(a, b):
    ca = max(max(a.ports.values()), a.dependency) / a.elements
    cb = max(max(b.ports.values()), b.dependency) / b.elements
    return (a.name, cb / ca) if ca <= cb else (b.name, ca / cb)


def wrong_kernel(a, b):
    ans = faster(a, b)
    return ans and ((b.name if ans[0] == a.name else a.name), ans[1])


def twice_faster(a, b):
    ans = faster(a, b)
    return ans and (ans[0], 2 * ans[1])


def per_iteration_faster(a, b):
    ca, cb = max(max(a.ports.values()), a.dependency), max(max(b.ports.values()), b.dependency)
    fast, slow = (a, b) if ca <= cb else (b, a)
    return None if fast.unknown else (fast.name, max(ca, cb) / min(ca, cb))


def always_none(a, b):
    return None


@pytest.fixture
def pairs(monkeypatch):
    """This 'core' (SPR-like: lower bounds only, unless set) and SKX's fully modelled pair."""
    import labkit.epistasis.kernels as K
    state = {"host": {("Muła (vpshufb)", "ctpop <8 x i64>"): (MULA_LOW, HW_LOW),
                      ("Muła (vpshufb)", "byte table"): (MULA_LOW, TABLE_LOW)},
             "measured": [{"Muła (vpshufb)": 1.0, "byte table": 30.0}]}

    def pair(cpu, na, nb):
        if cpu is None:
            p = state["host"].get((na, nb))
            return (p, "") if p else (None, "no OSACA core model for 'generic'")
        if {na, nb} == {"Muła (vpshufb)", "byte table"}:
            return (MULA, TABLE) if na.startswith("M") else (TABLE, MULA), ""
        return (MULA, HW_LOW) if na.startswith("M") else (HW_LOW, MULA), ""

    next_measured = _in_turn(state, "measured")
    monkeypatch.setattr(K, "MULA_KIND", "avx2-pshufb")
    monkeypatch.setattr(E, "_pop_pair", pair)
    monkeypatch.setattr(E, "measured_seconds_per_word", lambda names, rounds=5: next_measured())
    return state


def test_popcount_bound_right_passes_and_says_the_host_is_a_lower_bound(pairs):
    verdict, msg = _faster(faster)
    assert verdict == "passed", msg
    assert "(cannot tell)" in msg and "lacks instructions" in msg and "no pair is measured" in msg


@pytest.mark.parametrize("student, needle", [
    (ignores_lower_bounds, "only a lower bound"),
    (wrong_kernel, "per word it is the other one"),
    (twice_faster, "2.00× the reports' ratio"),
    (per_iteration_faster, "the reports' ratio"),
    (always_none, "you returned None, but the reports can tell"),
])
def test_popcount_bound_misreadings_are_wrong(pairs, student, needle):
    verdict, msg = _faster(student)
    assert verdict == "wrong" and needle in msg, msg


def test_popcount_bound_a_backed_host_pair_is_measured(pairs):
    pairs["host"] = {("Muła (vpshufb)", "byte table"): (MULA, TABLE)}   # 32× by the model
    verdict, msg = _faster(faster)
    assert verdict == "passed" and "measured here: Muła (vpshufb) 30.00× faster" in msg, msg
    pairs["measured"] = [{"Muła (vpshufb)": 1.0, "byte table": 5.0}] * 2   # 5×: not within 2×
    verdict, msg = _faster(faster)                  # the model's miss, not the student's
    assert verdict == "passed" and "not within 2×" in msg and "not your reading" in msg, msg
    assert _faster(twice_faster)[0] == "wrong"


def test_popcount_bound_not_gradable_without_avx2_or_a_backed_pair(pairs, monkeypatch):
    import labkit.epistasis.kernels as K
    monkeypatch.setattr(K, "MULA_KIND", "scalar-nibble")
    verdict, msg = _faster(faster)
    assert verdict == "inconclusive" and "no AVX2" in msg, msg
    monkeypatch.setattr(K, "MULA_KIND", "avx2-pshufb")
    monkeypatch.setattr(E, "_pop_pair", lambda cpu, a, b: (None, "no OSACA core model"))
    verdict, msg = _faster(faster)
    assert verdict == "inconclusive" and "not gradable" in msg, msg


# ---------------------------------------------------------------- delegation (trusted worker)
_L0 = "import numpy as np\nfrom labkit import inspect as lk\nfrom labkit import lesson00 as l0\n"
_EP = "import numpy as np\nfrom labkit import inspect as lk\nfrom labkit import epistasis as ep\n"


@pytest.mark.parametrize("name, imports, src", [
    ("loop_bound", _L0, "def read_bound(report):\n    import numpy as np\n    x = np.ones(64)\n"
                        "    p = lk.predict(l0.dot_plain, (x, x))\n"
                        "    return p.bound, p.cycles_per_element\n"),
    ("loop_bound", _L0, "from labkit.inspect.loopreport import truth\n"
                        "def read_bound(report):\n    k, c, _ = truth(report)\n    return k, c\n"),
    ("popcount_bound", _EP, "def faster(a, b):\n    f = getattr(lk, 'pre' + 'dict')\n"
                            "    f(ep.popcount_mula, (np.ones(64, np.uint64),))\n"
                            "    return None\n"),
    ("popcount_bound", _EP, "from labkit.epistasis.checks import faster_truth\n"
                            "def faster(a, b):\n    return faster_truth(a, b)\n"),
])
def test_calling_labkits_own_prediction_is_delegation(name, imports, src):
    r = check.run_source(name, src, imports)
    assert r.verdict == "uses labkit's answer", str(r)

"""Lab 02's exercise checks with fake students, run in the trusted worker through
``check.run_source`` (the notebook cell as text): reference solutions pass, stubs give
"not implemented" with the first hint, delegation to labkit's kernels (direct, through an
attribute, with a computed name) is "uses labkit's answer", and the shortcuts the lesson names
(outputs only in the working set, per-tile allocation, a ragged tile written past N, no
parallel loop, a prange nested in a prange, the outputs' read-modify-write counted as DRAM
traffic) get "wrong" or "technique missing"; on one numba thread flat_tiles is "inconclusive",
never "passed". Speed is reported, not judged (LABKIT_SPEED), unless a test says otherwise."""
from __future__ import annotations

import pytest

from labkit import check, hints
import labkit.bspline.checks as bchecks  # noqa: F401  (registers the exercises)
from tests.fakes import FLAT_TILES as FLAT

IMPORTS = ("import numpy as np\nimport numba\nfrom numba import njit, prange\n"
           "from labkit import bspline as bs\n")

SPILL = '''
def predict_spill(l1, l2, itemsize):
    per = (10 + 64) * itemsize
    return l1 // per, l2 // per
'''
COST = '''
def vgh_cost(itemsize):
    flops = 16 * (3 * 7 + 10 * 2)
    return flops, (64 + 10) * itemsize
'''
DRIVER = '''
@njit(parallel=True)
def my_aosoa_vgh(tcoefs, n, idx, pref, out):
    M, Nb = tcoefs.shape[0], tcoefs.shape[4]
    scratch = np.empty((numba.get_num_threads(), 10, Nb))
    for m in prange(M):
        t = numba.get_thread_id()
        bs.vgh_soa(tcoefs[m], idx, pref, scratch[t])
        lo = m * Nb
        for s in range(10):
            for k in range(min(Nb, n - lo)):
                out[s, lo + k] = scratch[t, s, k]
'''


pytestmark = pytest.mark.usefixtures("report_speed", "fresh_worker")


def _run(name, src):
    return check.run_source(name, src, IMPORTS)


def _stub(signature, name):
    text = hints.get(name).texts[0]          # what `labkit release` puts in the stub
    return f"def {signature}:\n    raise NotImplementedError({text!r})\n", text


@pytest.mark.parametrize("name, signature", [
    ("spill_n", "predict_spill(l1, l2, itemsize)"),
    ("vgh_cost", "vgh_cost(itemsize)"),
    ("aosoa_driver", "my_aosoa_vgh(tcoefs, n, idx, pref, out)"),
    ("flat_tiles", "my_batch_tiles(tcoefs, idx, pref, out)"),
])
def test_stub_is_not_implemented_with_the_first_hint(name, signature):
    src, text = _stub(signature, name)
    r = _run(name, src)
    assert r.verdict == "not implemented", str(r)
    assert str(text)[:40] in r.message


def test_spill_prediction():
    assert _run("spill_n", SPILL).passed
    outputs_only = SPILL.replace("(10 + 64)", "10")
    r = _run("spill_n", outputs_only)
    assert r.verdict == "wrong" and "spill point" in r.message
    r = _run("spill_n", "def predict_spill(l1, l2, itemsize):\n    return 83, 3542\n")
    assert r.verdict == "wrong"
    r = _run("spill_n", "def predict_spill(l1, l2, itemsize):\n    return 83\n")
    assert r.verdict == "wrong"


def test_vgh_cost():
    assert _run("vgh_cost", COST).passed
    r = _run("vgh_cost", COST.replace("(64 + 10)", "(64 + 16 * 2 * 10)"))
    assert r.verdict == "wrong" and "bytes" in r.message
    r = _run("vgh_cost", COST.replace("3 * 7", "3 * 8"))
    assert r.verdict == "wrong" and "FLOP" in r.message
    r = _run("vgh_cost", "def vgh_cost(itemsize):\n    t = bs.traffic_per_eval()\n"
                         "    return bs.flops_per_eval(), (t['coef_reads'] + t['out_writes']) "
                         "* itemsize // 8\n")
    assert r.verdict == "uses labkit's answer", str(r)


def test_aosoa_driver():
    r = _run("aosoa_driver", DRIVER)
    assert r.passed, str(r)
    per_tile = DRIVER.replace("    scratch = np.empty((numba.get_num_threads(), 10, Nb))\n", "") \
        .replace("        t = numba.get_thread_id()\n", "        scratch = np.empty((10, Nb))\n") \
        .replace("scratch[t]", "scratch").replace("scratch[t, s, k]", "scratch[s, k]")
    r = _run("aosoa_driver", per_tile)
    assert r.verdict == "technique missing" and "allocat" in r.message, str(r)
    ragged = DRIVER.replace("range(min(Nb, n - lo))", "range(min(Nb, out.shape[1] - lo))")
    r = _run("aosoa_driver", ragged)
    assert r.verdict == "wrong" and "last tile" in r.message, str(r)
    serial = DRIVER.replace("@njit(parallel=True)", "@njit").replace("prange(M)", "range(M)")
    r = _run("aosoa_driver", serial)
    assert r.verdict == "technique missing" and "parallel" in r.message, str(r)
    r = _run("aosoa_driver", "def my_aosoa_vgh(tcoefs, n, idx, pref, out):\n"
                             "    o = np.zeros((tcoefs.shape[0], 10, tcoefs.shape[4]))\n"
                             "    bs.vgh_aosoa(tcoefs, idx, pref, o)\n"
                             "    out[:, :n] = np.moveaxis(o, 0, 1).reshape(10, -1)[:, :n]\n")
    assert r.verdict == "uses labkit's answer", str(r)


def test_flat_tiles():
    r = _run("flat_tiles", FLAT)
    assert r.passed, str(r)
    nested = FLAT.replace("    for t in prange(P * M):\n        p = t // M\n        m = t - p * M\n",
                          "    for p in prange(P):\n      for m in prange(M):\n")
    r = _run("flat_tiles", nested)
    assert r.verdict == "technique missing" and "prange inside a prange" in r.message, str(r)
    serial = FLAT.replace("@njit(parallel=True)", "@njit").replace("prange(P * M)", "range(P * M)")
    r = _run("flat_tiles", serial)
    assert r.verdict == "technique missing", str(r)
    for how in ("bs._batch_tiles", "bs.kernels._batch_tiles",
                "getattr(bs.kernels, '_batch' + '_tiles')"):
        r = _run("flat_tiles", f"def my_batch_tiles(tcoefs, idx, pref, out):\n"
                               f"    f = {how}\n    f(tcoefs, idx, pref, out)\n")
        assert r.verdict == "uses labkit's answer", (how, str(r))


@pytest.mark.parametrize("bits", ["128"])
def test_driver_and_flat_at_128_bits(monkeypatch, bits):
    monkeypatch.setenv("LABKIT_NATIVE_BITS", bits)
    assert _run("aosoa_driver", DRIVER).passed
    assert _run("flat_tiles", FLAT).passed


def test_flat_tiles_speed_judged_against_labkit_at_the_same_moment(monkeypatch):
    """Speed enforced (as when grading): the honest flat driver is judged relative to labkit's
    own flat driver timed alongside — on a busy machine both gain little and speed is not
    judged, so it never fails for other jobs' load; calling labkit's driver for the comparison
    is the checker's, not the student's."""
    monkeypatch.delenv("LABKIT_SPEED", raising=False)
    r = _run("flat_tiles", FLAT)
    assert r.passed or r.verdict == "inconclusive", str(r)
    assert "labkit's" in r.message, str(r)


def test_flat_tiles_that_changes_its_input_while_timed_is_wrong():
    """Inputs the student cannot touch, when timed too: only the timing inputs (Nb = 256) are
    spoilt, after the output is right — the thread-gain measurement gives the student its own
    copies and compares them after every sample, so the change is seen there and the check's arrays
    stay the reference's."""
    spoil = ("@njit\ndef _spoil(t):\n    if t.shape[-1] == 256:\n"
             "        t[0, 0, 0, 0, 0] = 0.5 * t[0, 0, 0, 0, 0] + 1.0\n"
             + FLAT + "    _spoil(tcoefs)\n")
    r = _run("flat_tiles", spoil)
    assert r.verdict == "wrong" and r.points == 0, str(r)
    assert "changed its input tcoefs" in r.message and "speed measurement" in r.message, str(r)


def test_flat_tiles_on_one_thread_is_inconclusive_never_passed(monkeypatch):
    """Speed that cannot be judged is not a pass: with one numba thread neither the per-block
    thread count nor the 2-thread gain can show that one walker's tiles share the threads, so the
    flat driver is `inconclusive` (0 points, the grader flags it for review), speed judged as when
    grading. The worker runs with NUMBA_NUM_THREADS=1 (read when numba starts), then restarts with
    this machine's."""
    monkeypatch.delenv("LABKIT_SPEED", raising=False)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    check.restart_worker()
    try:
        r = _run("flat_tiles", FLAT)
        serial = _run("flat_tiles", FLAT.replace("@njit(parallel=True)", "@njit")
                      .replace("prange(P * M)", "range(P * M)"))
    finally:
        monkeypatch.delenv("NUMBA_NUM_THREADS")
        check.restart_worker()
    assert r.verdict == "inconclusive" and not r.passed and r.points == 0, str(r)
    assert "one thread here" in r.message and "cannot be shown" in r.message, str(r)
    assert serial.verdict == "technique missing", str(serial)     # no parallel loop: still 0

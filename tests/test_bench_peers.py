"""`labkit bench` against the best each peer can do on the host: the host-default BLAS
measured in a child process without OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, parasail's fastest NW
function and Opal's fastest global mode picked on labkit's scores, and thread ratios that read
"not measurable now" while other work runs. Properties only: no timing is asserted."""
from __future__ import annotations

import os

import numpy as np
import pytest

from labkit import bench
from labkit.bench import BenchResult, NotJudged, Target, check_targets, ratio_of
from labkit.bench.load import Idleness, busy_reason, judge_threads, other_work
from labkit.bench.targets import _format_target

FORCED = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "262144"}


# ------------------------------------------------------------------ BLAS as the host would pick it
# These tests never set or unset the variables in this process (OPENBLAS_CORETYPE stays what the
# machine has): each hands labkit an environment of its own through ``environ=``.
def test_child_env_lacks_both_variables_and_the_parent_keeps_them():
    from labkit.pcc import bench as pb
    parent = dict(os.environ, **FORCED)
    env = pb.host_default_env(parent)
    assert not set(pb.OPENBLAS_FORCING) & set(env)
    assert env.get("PATH") == os.environ.get("PATH")          # the rest is kept
    assert {k: parent[k] for k in FORCED} == FORCED             # the given one is untouched
    assert pb.forced_blas(parent) == FORCED
    given = dict(FORCED, HOME="/x")
    assert pb.host_default_env(given) == {"HOME": "/x"} and given == dict(FORCED, HOME="/x")
    warning = pb.blas_warning(parent, kernel="Haswell")
    assert warning.startswith("WARNING") and "OPENBLAS_CORETYPE=Haswell" in warning
    assert "Haswell kernels" in warning


def test_no_warning_and_no_child_without_the_variables():
    from labkit.pcc import bench as pb
    bare = {k: v for k, v in os.environ.items() if k not in FORCED}
    assert pb.forced_blas(bare) == {} and pb.blas_warning(bare) is None


def test_the_child_process_runs_without_both_variables():
    """A real child on a tiny input: its own environment lacks both variables, the parent's
    still has them, its scores match numpy's corrcoef, and it names its kernel set."""
    pytest.importorskip("threadpoolctl")
    from labkit.pcc import bench as pb
    parent = dict(os.environ, **FORCED)
    child = pb.host_blas_child({"n": 40, "l": 30}, 1, repeat=1, min_time=0.0, timeout=120,
                               environ=parent)
    assert child["child_env"] == {}
    assert sorted(child["removed"]) == sorted(FORCED)
    assert {k: parent[k] for k in FORCED} == FORCED
    assert child["max_err"] < 1e-10 and child["median_s"] > 0 and (child["n"], child["l"]) == (40, 30)
    assert "architecture" in child


def test_the_pcc_target_is_judged_against_the_host_default_row():
    from labkit.pcc import bench as pb
    rows = [{"name": "numpy BLAS (standardise + Z @ Z.T)", "median_s": 2.0},
            {"name": pb.ENTRY, "median_s": 1.0}]
    res = BenchResult(rows, times={r["name"]: [r["median_s"]] for r in rows}, unit="flop")
    child = {"median_s": 0.5, "best_s": 0.5, "q1_s": 0.5, "q3_s": 0.5, "compile_s": 0.5,
             "loops": 1, "times": [0.5], "architecture": "SkylakeX", "max_err": 0.0}
    table = pb.blas_table(res, child, FORCED, "Haswell", work=1e9)
    names = table.names
    assert names[0].startswith(pb.HOST_BLAS) and "SkylakeX" in names[0]
    assert "Haswell" in names[1] and "OPENBLAS_CORETYPE=Haswell" in names[1]
    target = next(t for t in pb.TARGETS if t.need == 1.1)
    alone = {"vs numpy BLAS (n=4000, l=2000)": res}
    assert target.check(alone)[0] == pytest.approx(2.0)                 # no child: the BLAS row
    both = dict(alone, **{f"{pb.BLAS_TABLE} (n=4000, l=2000)": table})
    assert target.check(both) == (pytest.approx(0.5), False)           # the host-default row


# ------------------------------------------------------------------ parasail and Opal at their best
def _tiny_alignment_inputs(pairs=12, length=40, seed=3):
    from labkit.alignment import make_inputs
    return make_inputs({"pairs": pairs, "length": length}, seed=seed)


def test_parasail_picker_returns_a_named_function_with_the_reference_scores():
    pytest.importorskip("parasail")
    from labkit.alignment import bench as ab
    from labkit.alignment import reference
    inp = _tiny_alignment_inputs()
    expected = reference(inp)
    name, fn, res = ab.parasail_best(inp, expected, repeat=1, min_cpu=0.0)
    assert name in ab.PARASAIL_NW and name in res.names
    assert np.array_equal(fn(), expected)
    assert len(res.names) >= 2                                  # several families were tried
    label = ab.parasail_label(name, len(res.names))
    assert label.startswith(f"parasail {name} (best of ") and label.endswith(")")
    # the alignment targets find the row by its "parasail" prefix, whatever the winner
    row = {"name": label, "median_s": 1.0}
    table = BenchResult([row, {"name": "labkit align (1 thread)", "median_s": 0.25}])
    target = next(t for t in ab.TARGETS if "parasail" in t.claim and "transposition" in t.claim)
    assert target.check({"vs parasail": table})[0] == pytest.approx(4.0)


def test_parasail_picker_refuses_when_no_variant_gives_the_scores():
    pytest.importorskip("parasail")
    from labkit.alignment import bench as ab
    from labkit.alignment import reference
    inp = _tiny_alignment_inputs(pairs=4)
    with pytest.raises(ValueError, match="no parasail NW function"):
        ab.parasail_best(inp, reference(inp) + 1, repeat=1, min_cpu=0.0)


def test_opal_picker_keeps_global_scores():
    pytest.importorskip("pyopal")
    import dataclasses

    from labkit.alignment import bench as ab
    from labkit.alignment import reference
    db = _tiny_alignment_inputs(pairs=20, length=50, seed=5)
    query, targets = db.strings()[0][0], db.strings()[1]
    one_query = dataclasses.replace(db, seqs1=np.repeat(db.seqs1[:1], db.pairs, 0),
                                    lens1=np.repeat(db.lens1[:1], db.pairs))
    expected = reference(one_query)                      # the numpy oracle, no JIT
    name, fn, res = ab.opal_best(query, targets, db.scoring, expected, repeat=1, min_cpu=0.0)
    assert name.startswith("Opal (pyopal, nw") and "best of" in name
    assert np.array_equal(fn(), expected)


# ------------------------------------------------------------------ thread ratios under load
IDLE = (Idleness(wall=10.0, busy_s=100.0, own_s=5.0, load1=0.2, cores=2),
        Idleness(wall=12.0, busy_s=103.9, own_s=8.9, load1=1.1, cores=2))   # others: 0 s
BUSY = (Idleness(wall=10.0, busy_s=100.0, own_s=5.0, load1=3.9, cores=2),
        Idleness(wall=12.0, busy_s=103.9, own_s=6.9, load1=4.2, cores=2))   # others: 2 of 4 s


def _thread_table():
    rows = [{"name": "1 thread", "median_s": 2.0}, {"name": "2 threads", "median_s": 1.9}]
    return BenchResult(rows, label="threads", times={r["name"]: [r["median_s"]] for r in rows})


def test_other_work_is_the_machine_less_this_process():
    assert other_work(*IDLE) == pytest.approx(0.0)
    assert other_work(*BUSY) == pytest.approx(0.5)
    assert busy_reason(*IDLE) is None
    assert "load 3.9 → 4.2" in busy_reason(*BUSY)
    no_proc = Idleness(wall=1.0, busy_s=None, own_s=0.0, load1=None, cores=2)
    assert other_work(no_proc, no_proc) is None and busy_reason(no_proc, no_proc) is None


def test_a_busy_reading_prints_not_measurable_and_the_target_is_not_judged():
    res = judge_threads(_thread_table(), *BUSY)
    text = str(res)
    assert "not measurable now (load 3.9 → 4.2" in text
    row = next(line for line in text.splitlines() if line.startswith("2 threads"))
    assert "not measurable now" in row and "1.1×" not in row
    target = Target("2 threads vs 1", 1.8, ratio_of("threads", "2 threads", "1 thread"))
    assert isinstance(target.measure({"threads": res}), NotJudged)
    [verdict] = check_targets([target], {"threads": res})
    assert verdict["met"] is None and verdict["value"] is None
    line = _format_target(verdict)
    assert "not judged: not measurable now (load 3.9" in line and "✘" not in line


def test_an_idle_reading_keeps_the_ratio_and_judges_the_target():
    res = judge_threads(_thread_table(), *IDLE)
    assert "not measurable" not in str(res) and "host idle" in res.label
    target = Target("2 threads vs 1", 1.8, ratio_of("threads", "2 threads", "1 thread"))
    [verdict] = check_targets([target], {"threads": res})
    assert verdict["met"] is False and verdict["value"] == pytest.approx(2.0 / 1.9)


def test_only_the_named_rows_are_marked():
    rows = [{"name": "soa, 1 thread", "median_s": 2.0}, {"name": "aosoa, 1 thread", "median_s": 1.0},
            {"name": "aosoa, 2 threads", "median_s": 0.6}]
    res = judge_threads(BenchResult(rows), *BUSY, rows=["aosoa, 2 threads"])
    assert set(res.not_measurable) == {"aosoa, 2 threads"}
    assert ratio_of("t", "aosoa, 1 thread")({"t": res}) == pytest.approx(2.0)
    assert isinstance(ratio_of("t", "aosoa, 2 threads")({"t": res}), NotJudged)


def test_the_markdown_table_says_not_judged(monkeypatch):
    from labkit.bench import cli
    res = judge_threads(_thread_table(), *BUSY)
    target = Target("2 threads vs 1", 1.8, ratio_of("threads", "2 threads", "1 thread"))
    [verdict] = check_targets([target], {"threads": res})
    monkeypatch.setattr("labkit.hardware.summary", lambda: "a host")
    text = cli.markdown_table([("alignment", verdict)], "labkit bench alignment")
    assert "not judged: not measurable now" in text


def test_measured_idle_reads_the_host_around_the_call(monkeypatch):
    from labkit.bench import load
    readings = iter(BUSY)
    monkeypatch.setattr(load, "idleness", lambda: next(readings))
    res = bench.measured_idle(lambda label: _thread_table(), label="x")
    assert "2 threads" in res.not_measurable

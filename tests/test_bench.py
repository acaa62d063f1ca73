"""Tests for labkit.bench: structure, interleaving, validation, compile time apart, rendering, CLI."""
import json
import math
import sys
import time
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numba import njit  # noqa: E402

from labkit import bench, registry  # noqa: E402

FAST = dict(repeat=3, min_time=0.001)


@pytest.fixture(autouse=True)
def _autoscaled(monkeypatch):
    """These tests time with autoscaled loops, as a user's process does (conftest.py sets
    LABKIT_TIMING=once for the rest of the suite)."""
    monkeypatch.delenv("LABKIT_TIMING", raising=False)


@njit(cache=True)
def _jit_sum(a):
    s = 0.0
    for x in a:
        s += x
    return s


def test_compare_structure_and_ratios():
    a = np.arange(1000.0)
    res = bench.compare({"loop": _jit_sum, "numpy": np.sum}, (a,), work=len(a), unit="adds", **FAST)
    assert isinstance(res, bench.BenchResult)
    assert res.names == ["loop", "numpy"] and res.baseline == "loop"
    keys = {"name", "compile_s", "median_s", "q1_s", "q3_s", "spread", "throughput", "ratio"}
    for row in res.rows:
        assert keys <= set(row)
        assert row["median_s"] > 0 and row["ratio"] > 0 and row["throughput"] > 0
        assert row["q1_s"] <= row["median_s"] <= row["q3_s"]
        assert row["spread"] >= 0
    assert res.ratio("loop") == pytest.approx(1.0)
    assert res.ratio("numpy") == pytest.approx(res.median("loop") / res.median("numpy"))
    assert res.ratio("loop", baseline="numpy") == pytest.approx(1 / res.ratio("numpy"))
    assert res.throughput("numpy") == pytest.approx(1000 / res.median("numpy"))
    json.dumps(res.to_dict())
    with pytest.raises(KeyError, match="names are"):
        res.median("nope")


def test_compare_in_cpu_seconds(monkeypatch):
    # a sleeping function costs wall time but (almost) no CPU time: the two clocks tell them apart
    funcs = {"sleep": lambda: time.sleep(0.002), "spin": lambda: sum(range(20000))}
    wall = bench.compare(funcs, (), repeat=2, min_time=0.01)
    cpu = bench.compare(funcs, (), repeat=2, min_time=0.01, clock="cpu")
    assert wall.clock == "wall" and cpu.clock == "cpu" and cpu.to_dict()["clock"] == "cpu"
    assert cpu.median("sleep") < wall.median("sleep")
    assert "process CPU seconds" in str(cpu) and "process CPU seconds" not in str(wall)


def test_compare_best_of_repeats():
    calls = {"n": 0}

    def jumpy():                       # every third repeat is slow: the median sees it, best not
        calls["n"] += 1
        time.sleep(0.004 if calls["n"] % 3 == 0 else 0.001)

    res = bench.compare({"jumpy": jumpy, "steady": lambda: time.sleep(0.001)}, (), repeat=6,
                        min_time=0, work=1, stat="best")
    assert res.stat == "best" and res.to_dict()["stat"] == "best"
    for name in res.names:
        row = res._row(name)
        assert row["best_s"] == min(res.times[name]) <= row["median_s"]
        assert res.time(name) == row["best_s"] and row["throughput"] == pytest.approx(1 / row["best_s"])
    assert res.ratio("steady") == pytest.approx(res.time("jumpy") / res.time("steady"))
    text = str(res)
    assert "best of 6 interleaved repeats" in text and " best " in text.splitlines()[0]
    med = bench.BenchResult([{"name": "a", "median_s": 2.0}, {"name": "b", "median_s": 1.0}])
    assert med.stat == "median" and med.ratio("b", "a") == 2.0 and med.time("a") == 2.0
    with pytest.raises(ValueError, match="stat"):
        bench.BenchResult([{"name": "a", "median_s": 1.0}], stat="mean")


def test_interleaved_order_and_first_calls():
    log = []

    def make(name):
        def fn(x):
            log.append(name)
            return x
        return fn

    bench.compare({"f": make("f"), "g": make("g"), "h": make("h")}, (1,), repeat=4, min_time=0)
    # first calls (compile + validate) come first, in order; the timed rounds alternate f, g, h, f, g, h, …
    assert log[:3] == ["f", "g", "h"]
    assert log[-12:] == ["f", "g", "h"] * 4


def test_autoscale_loops_reach_min_time():
    calls = []
    res = bench.compare({"f": lambda: calls.append(1)}, (), repeat=2, min_time=0.002)
    assert res.rows[0]["loops"] > 1  # a trivial function needs many loops per repeat
    assert len(calls) >= 2 * res.rows[0]["loops"]


def test_validate_called_on_first_result_of_each():
    seen = []
    bench.compare({"a": lambda: 1, "b": lambda: 2}, (), validate=seen.append, **FAST)
    assert seen == [1, 2]


def test_validate_failure_names_the_function():
    def check(r):
        assert r == 1, f"got {r}, expected 1"

    with pytest.raises(AssertionError, match=r"b: got 2, expected 1"):
        bench.compare({"a": lambda: 1, "b": lambda: 2}, (), validate=check, **FAST)
    with pytest.raises(AssertionError, match="returned False"):
        bench.compare({"a": lambda: 1}, (), validate=lambda r: False, **FAST)


def test_compile_time_timed_apart():
    state = {"first": True}

    def slow_first():
        if state["first"]:
            state["first"] = False
            time.sleep(0.05)  # stands in for JIT compilation

    res = bench.compare({"f": slow_first}, (), **FAST)
    row = res.rows[0]
    assert row["compile_s"] > 10 * row["median_s"]


def test_a_wrapper_that_compiles_on_its_first_call_is_still_autoscaled():
    # a lambda or Workload object around a jitted kernel: slow first call (compilation), then
    # fast; the loop count must come from the fast calls, not stay at one call per repeat
    state = {"first": True}

    def wrapper():
        if state["first"]:
            state["first"] = False
            time.sleep(0.03)

    res = bench.compare({"w": wrapper}, (), repeat=2, min_time=0.01)
    assert res.rows[0]["loops"] > 1
    slow = bench.compare({"s": lambda: time.sleep(0.012)}, (), repeat=2, min_time=0.01)
    assert slow.rows[0]["loops"] == 1              # genuinely slow: one call per repeat


def test_numba_dispatcher_recognised():
    assert bench.is_jitted(_jit_sum)
    assert not bench.is_jitted(np.sum)


def test_args_callable_called_once_and_per_function_args():
    made = []

    def inputs():
        made.append(1)
        return (np.ones(10),)

    res = bench.compare({"a": np.sum, "b": (lambda x, y: x + y, (1, 2))}, inputs, **FAST)
    assert made == [1]
    assert res.names == ["a", "b"]


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(functions=[np.sum]), TypeError, "dict of name"),
    (dict(functions={}), ValueError, "at least one"),
    (dict(functions={"a": 3}), TypeError, "not callable"),
    (dict(functions={"a": (np.sum,)}), TypeError, "callable, args_tuple"),
    (dict(functions={"a": np.sum}, args=np.ones(3)), TypeError, r"wrap a single argument as \(x,\)"),
    (dict(functions={"a": np.sum}, baseline="b"), ValueError, "not one of the functions"),
    (dict(functions={"a": np.sum}, repeat=0), ValueError, "repeat must be > 0"),
    (dict(functions={"a": np.sum}, repeat=2.5), TypeError, "repeat must be an int"),
    (dict(functions={"a": np.sum}, min_time=-1), ValueError, "min_time"),
    (dict(functions={"a": np.sum}, work=-5), ValueError, "work must be > 0"),
    (dict(functions={"a": np.sum}, work={"b": 1}), ValueError, "work dict lacks"),
    (dict(functions={"a": np.sum}, unit=""), TypeError, "unit"),
    (dict(functions={"a": np.sum}, validate=3), TypeError, "validate"),
    (dict(functions={"a": np.sum}, clock="cpu_time"), ValueError, "clock must be 'wall' or 'cpu'"),
    (dict(functions={"a": np.sum}, stat="min"), ValueError, "stat must be 'median' or 'best'"),
])
def test_compare_bad_input(kwargs, exc, msg):
    functions = kwargs.pop("functions")
    args = kwargs.pop("args", (np.ones(3),))
    with pytest.raises(exc, match=msg):
        bench.compare(functions, args, **{"min_time": 0.001, "repeat": 1, **kwargs})


def test_text_and_html_rendering():
    res = bench.compare({"scalar": lambda: sum(range(50)), "fast": lambda: 1225}, (), work=16,
                        unit="alignments", label="demo table", **FAST)
    text = str(res)
    assert "demo table" in text and "scalar" in text and "fast" in text
    assert "(baseline)" in text and "×" in text and "alignments/s" in text
    assert "speedup %" not in text and "%" not in text.splitlines()[-2].split("×")[-1]
    assert bench.format_ratio(res.ratio("fast")) in text
    htm = res._repr_html_()
    assert "<table" in htm and "scalar" in htm and "fast" in htm and "×" in htm and "demo table" in htm
    # no throughput column without work=
    res2 = bench.compare({"a": lambda: 1}, (), **FAST)
    assert "throughput" not in str(res2) and "throughput" not in res2._repr_html_()


def test_plot_returns_axes():
    res = bench.compare({"a": lambda: 1, "b": lambda: 2}, (), **FAST)
    ax = res.plot()
    assert ax.get_xlabel() and "×" in ax.get_xlabel()
    plt.close("all")


@pytest.mark.parametrize("value, unit, expected", [
    (12.3e6, "alignments/s", "12.3 M alignments/s"),
    (999.96, "x", "1.00 k x"),
    (4.2, "", "4.20"),
    (2.5e9, "FLOP/s", "2.50 G FLOP/s"),
])
def test_format_si(value, unit, expected):
    assert bench.format_si(value, unit) == expected


def test_format_helpers():
    assert bench.format_throughput(12.3e6, "alignments") == "12.3 M alignments/s"
    assert bench.format_ratio(4.83) == "4.8×"
    assert bench.format_ratio(123.4) == "123×"
    assert bench.format_ratio(0.052) == "0.052×"
    assert bench.format_time(1.234e-3) == "1.23 ms"
    assert bench.format_time(412e-9) == "412 ns"
    assert bench.format_time(2.5) == "2.50 s"
    assert bench.format_time(float("nan")) == "–"


def test_timeit():
    t = bench.timeit(_jit_sum, np.ones(100), repeat=3, min_time=0.001)
    assert isinstance(t, bench.Timing)
    assert t.loops >= 1 and t.q1_s <= t.median_s <= t.q3_s and t.compile_s > 0
    assert len(t.times) == 3
    assert "per call" in str(t) and "first call" in str(t)
    with pytest.raises(TypeError, match="callable"):
        bench.timeit(3)
    with pytest.raises(ValueError, match="repeat"):
        bench.timeit(_jit_sum, np.ones(3), repeat=0)



def _block_cpu(block: bytes) -> float:
    """Thread CPU seconds of one sha256 of ``block`` in this thread."""
    import hashlib
    t = time.thread_time()
    hashlib.sha256(block)
    return time.thread_time() - t


def test_timeit_in_thread_cpu_seconds():
    # the caller waits while another thread of the process hashes: process CPU time counts the
    # hashing, the caller's thread CPU time does not (labkit.hardware times its kernels so). The
    # timed call waits until the other thread has hashed ~30 ms of blocks, so each repeat holds
    # that work whatever the scheduler does — a fixed 3 ms sleep held none of it when a loaded
    # run did not schedule the other thread then, and Linux adds a running thread's time to its
    # process's clock at scheduler ticks (1–4 ms), so a window of a few ms can show none of it
    import hashlib
    import threading
    stop = threading.Event()
    block = bytes(1 << 20)
    blocks = max(4, math.ceil(0.03 / max(min(_block_cpu(block) for _ in range(3)), 1e-5)))
    hashed = [0]
    done = threading.Condition()

    def spin():     # hashing a large block releases the GIL: the caller's thread is not
        while not stop.is_set():    # starved of it when the cores are busy (pure-Python
            hashlib.sha256(block)   # spinning made this test take 10 s under xdist)
            with done:
                hashed[0] += 1
                done.notify_all()

    def wait_for_the_blocks():      # blocked on the condition: one wake-up per block
        with done:
            start = hashed[0]
            done.wait_for(lambda: hashed[0] - start >= blocks)

    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    try:
        kw = dict(repeat=3, min_time=0.01)
        with bench.single_loop():   # a wait costs little thread CPU: autoscaling would loop long
            own = bench.timeit(wait_for_the_blocks, clock="thread", **kw)
            cpu = bench.timeit(wait_for_the_blocks, clock="cpu", **kw)
    finally:
        stop.set()
        spinner.join()
    # ≥ blocks − 1 whole hashes (~30 ms) in each window, less two ticks' lag at most
    assert min(cpu.times) > 0.01, (cpu.times, blocks)
    assert max(own.times) < min(cpu.times) / 2, (own.times, cpu.times)
    with pytest.raises(ValueError, match="clock must be 'wall', 'cpu' or 'thread'"):
        bench.timeit(time.sleep, 0.0, clock="gpu")


def test_autoscale_of_a_waiting_function_on_a_cpu_clock_stops_at_the_elapsed_cap():
    # a sleep costs (almost) no thread CPU time: the loops stop growing once a repeat has lasted
    # the elapsed cap (1 s: at most 1 / 0.005 + 1 sleeps), instead of growing toward min_time of
    # thread CPU (thousands of sleeps per repeat)
    t = bench.timeit(time.sleep, 0.005, clock="thread", repeat=1, min_time=0.01)
    assert 2 <= t.loops <= 201


def test_sweep():
    seen = []

    def fn(n, a):
        seen.append(n)
        return a[:n].sum()

    a = np.ones(1000)
    res = bench.sweep(fn, "n", [10, 100, 1000], args_for=lambda n: (a,), work_for=lambda n: n,
                      unit="adds", repeat=2, min_time=0.001, progress=False)
    assert isinstance(res, bench.SweepResult)
    assert res.values == [10, 100, 1000]
    assert len(res.median_s) == 3 and all(m > 0 for m in res.median_s)
    assert len(res.throughput) == 3 and all(t > 0 for t in res.throughput)
    assert set(seen) == {10, 100, 1000}
    assert res.best in res.values
    text, htm = str(res), res._repr_html_()
    assert "n" in text and "adds/s" in text and "<table" in htm and "1000" in htm
    assert res.plot().get_ylabel().startswith("throughput")
    plt.close("all")


def test_sweep_without_work_and_with_progress(capsys):
    res = bench.sweep(lambda v: v * 2, "v", ["a", "b"], repeat=1, min_time=0, progress=True)
    assert res.throughput is None and res.best in ("a", "b")
    assert "time per call" in res.plot().get_ylabel()
    plt.close("all")


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(fn=3, param="n", values=[1]), TypeError, "callable"),
    (dict(fn=abs, param="", values=[1]), TypeError, "param"),
    (dict(fn=abs, param="n", values=[]), ValueError, "empty"),
    (dict(fn=abs, param="n", values=5), TypeError, "list of parameter values"),
    (dict(fn=abs, param="n", values=[1], args_for=3), TypeError, "args_for"),
    (dict(fn=abs, param="n", values=[1], work_for=lambda v: -1), ValueError, "work_for"),
])
def test_sweep_bad_input(kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        bench.sweep(**{"repeat": 1, "min_time": 0, "progress": False, **kwargs})


def test_cli_runs_lab_benchmarks(monkeypatch, capsys):
    fake = types.ModuleType("labkit.alignment")
    calls = []

    def run_benchmark(size=None, repeat=5):
        calls.append((size, repeat))
        return {"pairs": bench.compare({"scalar": lambda: 1, "simd": lambda: 2}, (), repeat=repeat,
                                       min_time=0.001, label="fake alignment")}

    fake.run_benchmark = run_benchmark
    monkeypatch.setitem(sys.modules, "labkit.alignment", fake)
    monkeypatch.setitem(sys.modules, "labkit.epistasis", None)  # import fails: "not available yet"
    assert bench.main(["alignment", "--size", "small", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    assert calls == [("small", 2)]
    assert "== alignment ==" in out and "fake alignment" in out and "simd" in out and "×" in out
    assert "cores" in out.splitlines()[0]  # hardware summary first
    assert bench.main(["bench", "epistasis"]) == 0
    assert "lab epistasis not available yet" in capsys.readouterr().out


def test_targets_measures_and_verdicts():
    res = bench.BenchResult([{"name": "slow", "median_s": 4.0, "throughput": 2e6},
                             {"name": "fast kernel (2 threads)", "median_s": 1.0, "throughput": 8e6}])
    results = {"speed (n=10)": res, None: res}
    assert bench.ratio_of("speed", "fast kernel")(results) == 4.0          # key and row by prefix
    assert bench.ratio_of("speed (n=10)", "slow", "fast kernel (2 threads)")(results) == 0.25
    assert bench.ratio_of("nope", "slow")(results) is None
    assert bench.ratio_of("speed", "nope")(results) is None
    assert bench.throughput_of("speed", "fast", 1e6)(results) == 8.0
    targets = [bench.Target("fast vs slow", 3, bench.ratio_of("speed", "fast")),
               bench.Target("fast vs slow, ambitious", 5, bench.ratio_of("speed", "fast")),
               bench.Target("memory", 2, lambda r: 1.5, unit=" GB", at_most=True),
               bench.Target("peer", 1, bench.ratio_of("peer table", "x"))]
    rows = bench.check_targets(targets, results)
    assert [r["met"] for r in rows] == [True, False, True, None]
    assert rows[0]["value"] == 4.0
    text = [bench._format_target(r) for r in rows]
    assert text[0].startswith("  ✔  fast vs slow: ≥ 3×, measured 4×")
    assert text[1].startswith("  ✘") and "< 2 GB, measured 1.5 GB" in text[2]
    assert "not measured" in text[3]
    close = bench.check_targets([bench.Target("close", 1.8, lambda r: 1.7996)], {})
    assert bench._format_target(close[0]) == "  ✘  close: ≥ 1.8×, measured 1.7996×"


def test_cli_checks_lab_targets(monkeypatch, capsys):
    fake = types.ModuleType("labkit.alignment")

    def run_benchmark(size=None, repeat=5):
        return {"t": bench.BenchResult([{"name": "a", "median_s": 2.0}, {"name": "b", "median_s": 1.0}])}

    fake.run_benchmark = run_benchmark
    fake.TARGETS = [bench.Target("b vs a", 1.5, bench.ratio_of("t", "b")),
                    bench.Target("b vs a, big", 3, bench.ratio_of("t", "b")),
                    bench.Target("large only", 1, lambda r: 9.0, size="large")]
    monkeypatch.setitem(sys.modules, "labkit.alignment", fake)
    for lab in registry.modules():                      # every other lab: "not available yet"
        if lab != "labkit.alignment":
            monkeypatch.setitem(sys.modules, lab, None)
    assert bench.main(["all", "--repeat", "1"]) == 0      # a missed target is not a failure
    out = capsys.readouterr().out
    assert "✔  b vs a: ≥ 1.5×, measured 2×" in out and "✘  b vs a, big" in out
    assert "large only" not in out
    assert "targets met: 1 of 2 measured (2 stated)" in out and "✘ alignment: b vs a, big" in out
    assert bench.main(["alignment", "--size", "small"]) == 0
    assert "targets: stated for size default, large, not --size small" in capsys.readouterr().out


@pytest.mark.parametrize("lab", ["alignment", "bspline", "pcc", "epistasis"])
def test_every_lab_states_its_targets(lab):
    import importlib

    mod = importlib.import_module(f"labkit.{lab}")
    assert mod.TARGETS and all(isinstance(t, bench.Target) for t in mod.TARGETS)
    assert all(t.need > 0 and t.claim for t in mod.TARGETS)
    rows = bench.check_targets(mod.TARGETS, {})          # nothing measured: no errors, no verdicts
    assert all(r["met"] is None for r in rows)


def test_cli_reports_failing_lab(monkeypatch, capsys):
    fake = types.ModuleType("labkit.pcc")

    def run_benchmark(size=None, repeat=5):
        raise RuntimeError("boom")

    fake.run_benchmark = run_benchmark
    monkeypatch.setitem(sys.modules, "labkit.pcc", fake)
    assert bench.main(["pcc", "--repeat", "1"]) == 1
    assert "boom" in capsys.readouterr().out


def test_cli_bad_arguments():
    with pytest.raises(SystemExit):
        bench.main(["nolab"])
    with pytest.raises(SystemExit):
        bench.main(["pcc", "--repeat", "0"])


def test_cli_lab_with_broken_import(monkeypatch, capsys):
    import importlib

    real = importlib.import_module

    def fake_import(name, *a, **k):
        if name == "labkit.bspline":
            raise ModuleNotFoundError("No module named 'somedep'", name="somedep")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    assert bench.main(["bspline"]) == 1
    assert "could not be imported" in capsys.readouterr().out


def test_bench_result_from_hand_made_rows():
    res = bench.BenchResult([{"name": "est", "median_s": 2.0}, {"name": "real", "median_s": 0.5}],
                            unit="pairs", label="scaled")
    assert res.baseline == "est" and res.ratio("real") == pytest.approx(4.0)
    assert "4.0×" in str(res) and "est" in res._repr_html_()
    with pytest.raises(TypeError, match="median_s"):
        bench.BenchResult([{"name": "x"}])
    with pytest.raises(ValueError, match="baseline"):
        bench.BenchResult([{"name": "x", "median_s": 1.0}], baseline="y")


def test_pcc_rss_target_reads_the_large_run():
    from labkit import pcc

    res = bench.BenchResult([{"name": "correlated_pairs", "median_s": 10.0}])
    res.peak_rss_mb = 1024.0
    (t,) = [t for t in pcc.TARGETS if t.size == "large"]
    assert t.check({"correlated_pairs n=100000 l=500": res}) == (1.0, True)
    res.peak_rss_mb = 3000.0
    assert t.check({"correlated_pairs n=100000 l=500": res})[1] is False


def test_cli_writes_markdown_between_markers(monkeypatch, capsys, tmp_path):
    fake = types.ModuleType("labkit.alignment")
    fake.run_benchmark = lambda size=None, repeat=5: {
        "t": bench.BenchResult([{"name": "a", "median_s": 2.0}, {"name": "b | c", "median_s": 1.0}])}
    fake.TARGETS = [bench.Target("b | c vs a", 1.5, bench.ratio_of("t", "b", "a")),
                    bench.Target("b vs a, ambitious", 3, bench.ratio_of("t", "b", "a")),
                    bench.Target("peer", 1, bench.ratio_of("missing", "x"))]
    monkeypatch.setitem(sys.modules, "labkit.alignment", fake)
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\n<!-- labkit bench: begin -->\nold table\n"
                      "<!-- labkit bench: end -->\n\nafter\n", encoding="utf-8")
    assert bench.main(["alignment", "--markdown", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# title\n\n<!-- labkit bench: begin -->\nWritten by `labkit bench "
                           "alignment --markdown …` at ")
    assert text.endswith("<!-- labkit bench: end -->\n\nafter\n") and "old table" not in text
    assert "| 01 | b \\| c vs a | ≥ 1.5× | 2× ✔ |" in text
    assert "| 01 | b vs a, ambitious | ≥ 3× | 2× ✘ |" in text
    assert "| 01 | peer | ≥ 1× | not measured in this run |" in text
    assert "Targets met: 1 of 2 measured (3 stated)." in text
    out = tmp_path / "bench.md"                  # no markers: the whole file
    assert bench.main(["alignment", "--markdown", str(out)]) == 0
    assert out.read_text(encoding="utf-8").startswith("Written by `labkit bench alignment")
    broken = tmp_path / "broken.md"
    broken.write_text("<!-- labkit bench: end -->\n<!-- labkit bench: begin -->\n")
    with pytest.raises(SystemExit):              # refused before the run, not after it
        bench.main(["alignment", "--markdown", str(broken)])
    assert "not both in that order" in capsys.readouterr().err


def test_readme_table_lists_every_stated_target():
    """README's benchmark table is written by `labkit bench all --markdown README.md`: between
    its markers it has a row for every target the labs state (a renamed or new target fails here
    until the table is written again)."""
    from pathlib import Path

    from labkit import registry
    from labkit.bench.cli import MARK_BEGIN, MARK_END

    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert MARK_BEGIN in text and MARK_END in text
    table = text.split(MARK_BEGIN, 1)[1].split(MARK_END, 1)[0]
    missing = []
    for name in registry.names(benchmark=True):
        lab = registry.get(name)
        for t in getattr(lab.load(), "TARGETS", ()):
            if t.size is None and f"| {lab.number:02d} | {t.claim.replace('|', chr(92) + '|')} |" not in table:
                missing.append(f"{name}: {t.claim}")
    assert not missing, ("README.md's benchmark table lacks these targets — run "
                         "`labkit bench all --markdown README.md`:\n" + "\n".join(missing))


def test_cli_says_whether_the_host_speed_held(monkeypatch, capsys, tmp_path):
    """The FMA rate before, between and after the labs: a run on a throttled host (74 → 52
    GFLOP/s, load average unchanged) says so in the output and in the Markdown table."""
    from labkit.bench import cli
    fake = types.ModuleType("labkit.alignment")
    fake.run_benchmark = lambda size=None, repeat=5: {
        "t": bench.BenchResult([{"name": "a", "median_s": 2.0}, {"name": "b", "median_s": 1.0}])}
    fake.TARGETS = [bench.Target("b vs a", 1.5, bench.ratio_of("t", "b", "a"))]
    monkeypatch.setitem(sys.modules, "labkit.alignment", fake)
    rates = iter([74.0, 73.0])
    monkeypatch.setattr(cli, "host_rate", lambda: next(rates))
    out = tmp_path / "t.md"
    assert bench.main(["alignment", "--markdown", str(out)]) == 0
    assert ("host speed steady: one core's FMA rate 74, 73 GFLOP/s before and after each lab"
            in capsys.readouterr().out)
    assert "; host speed steady" in out.read_text()
    rates = iter([74.0, 52.0])
    assert bench.main(["alignment", "--markdown", str(out)]) == 0
    said = capsys.readouterr().out
    assert "HOST SPEED CHANGED" in said and "42% apart" in said and "while alignment ran" in said
    assert "HOST SPEED CHANGED" in out.read_text()
    note = cli.host_note([64, 74, 74, 72], ["lesson00", "alignment", "pcc"])
    assert "while lesson00 ran:" in note and "alignment" not in note


# ----------------------------------------------------------- predicted beside measured (OSACA)

@njit(cache=True)
def _chain_dot(x, y):                 # one accumulator: latency-bound on every core
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


def test_compare_predict_puts_a_predicted_column_beside_the_measured_one():
    """compare(..., predict=True): each row gains measured cycles per element (positive) and
    OSACA's bound (positive, or None with a reason — here numpy's dot, no numba loop); the text
    and HTML tables show both columns and name the clock; explain() is one computed sentence."""
    pytest.importorskip("osaca")
    x = np.random.default_rng(0).random(2048)
    res = bench.compare({"chain": _chain_dot, "numpy": np.dot}, (x, x.copy()), work=x.size,
                        unit="elements", predict=True, **FAST)
    for name in res.names:
        assert res.cycles_per_elem(name) > 0
    p = res.predicted("chain")
    note = res.rows[0]["prediction_note"]
    assert (p is not None and p > 0) or note, note    # a host without a model: None and why
    assert res.predicted("numpy") is None and "numba" in res.rows[1]["prediction_note"]
    text, page = str(res), res._repr_html_()
    for view in (text, page):
        assert "cycles/elem" in view and "predicted cycles/elem" in view
        assert "labkit.hardware.clock.measure_clock" in view and "GHz" in view
    head = text.splitlines()[0].split()
    assert head[-1] == "ratio"                          # the ratio (and its bar) stays last
    said = res.explain("chain")
    if p is not None:
        assert f"{res.cycles_per_elem('chain'):.2f}" in said and "× the bound" in said
    assert res.explain("numpy").startswith("numpy: no prediction — ")
    json.dumps(res.to_dict())                           # rows stay plain data
    plain = bench.compare({"chain": _chain_dot}, (x, x), work=x.size, **FAST)
    assert "predicted" not in str(plain)                # opt-in: no column unless asked


def test_with_predictions_for_other_cores_and_without_a_model(monkeypatch):
    """A hand-made row annotated with predictions made for haswell and apple-m1 (compile_for
    targets, not run) and a given clock: the predicted column is that core's bound. No model, no
    OSACA: a note in the table and in explain(), never an exception."""
    pytest.importorskip("osaca")
    from labkit import inspect as lk
    from labkit.bench import uarch
    x = np.ones(1024)
    rows = [{"name": "hsw", "median_s": 1e-6, "throughput": 1024 / 1e-6},
            {"name": "m1", "median_s": 1e-6, "throughput": 1024 / 1e-6},
            {"name": "p4", "median_s": 1e-6, "throughput": 1024 / 1e-6},
            {"name": "no work", "median_s": 1e-6}]
    res = bench.BenchResult(rows)
    preds = {"hsw": lk.predict(_chain_dot, (x, x), cpu="haswell"),
             "m1": lk.predict(_chain_dot, (x, x), cpu="apple-m1")}
    res.with_predictions({**preds, "p4": (_chain_dot, (x, x), {"cpu": "pentium4"}),
                          "no work": (_chain_dot, (x, x))}, hz=3e9)
    assert res.cycles_per_elem("hsw") == pytest.approx(3e9 * 1e-6 / 1024)
    for name, model in (("hsw", "HSW"), ("m1", "M1")):
        assert res.predicted(name) > 0
        assert res.predicted(name) == pytest.approx(preds[name].cycles_per_element)
        assert model in res.explain(name)
    assert res.predicted("p4") is None and "no OSACA core model" in res.explain("p4")
    assert res.cycles_per_elem("no work") is None and "work=" in res.explain("no work")
    assert "no OSACA core model" in str(res) and "3.00 GHz" in str(res)

    def no_osaca(*a, **k):
        raise ImportError("labkit.inspect.predict needs OSACA: pip install osaca")
    monkeypatch.setattr("labkit.inspect.uarch.predict", no_osaca)
    p, why = uarch.prediction_for(_chain_dot, (x, x))
    assert p is None and "pip install osaca" in why
    res.with_predictions({"hsw": (_chain_dot, (x, x))}, hz=3e9)
    assert res.predicted("hsw") is None and "pip install osaca" in res.explain("hsw")
    with pytest.raises(ValueError, match="kept no functions"):
        bench.BenchResult([{"name": "a", "median_s": 1.0}]).with_predictions(True, hz=3e9)
    with pytest.raises(ValueError, match="with_predictions"):
        bench.BenchResult([{"name": "a", "median_s": 1.0}]).explain("a")


_LINE = (r"^0\d \w+ .+: measured \d+\.\d\d cycles per .+ at \d+\.\d\d GHz"
         r"(, predicted (≥ )?\d+\.\d\d \((a loop-carried dependency|port \S+); OSACA \w+.*\): "
         r"\d+\.\d\d× the bound — .+|; no prediction — .+|; predicted .+ no per-element ratio)$")


def test_bench_uarch_line_is_computed_for_a_lab(monkeypatch):
    """`labkit bench`'s per-lab line: lesson 00's key kernel measured and predicted (or why not),
    in one line; without a model it says so; a broken lab spec gives a line, not a traceback."""
    import re

    from labkit.bench import uarch
    line = uarch.lab_line("lesson00", rounds=1)
    assert re.match(_LINE, line) and "\n" not in line, line
    monkeypatch.setattr(uarch, "prediction_for",
                        lambda *a, **k: (None, "no OSACA core model for 'x86-64'"))
    line = uarch.lab_line("lesson00", rounds=1)
    assert re.match(_LINE, line) and line.endswith("no prediction — no OSACA core model for 'x86-64'")
    monkeypatch.setattr(uarch, "lab_kernel", lambda lab: 1 / 0)
    assert "no kernel to measure (ZeroDivisionError" in uarch.lab_line("pcc")


def test_cli_uarch_prints_one_line_per_lab(monkeypatch, capsys):
    from labkit.bench import cli, uarch
    monkeypatch.setattr(uarch, "lab_line", lambda lab, rounds=3: f"line for {lab}")
    assert bench.main(["all", "--uarch"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "predicted vs measured" in out[1] and "measure_clock" in out[1]
    assert out[2:2 + len(bench.lab_names())] == [f"  line for {lab}" for lab in bench.lab_names()]
    assert "== " not in "\n".join(out)                  # no tables: seconds, not minutes
    with pytest.raises(SystemExit):
        bench.main(["all", "--uarch", "--no-uarch"])
    assert cli.uarch_header().startswith("predicted vs measured")


def test_every_lab_names_a_kernel_to_predict():
    from labkit.bench import uarch
    for lab in bench.lab_names():
        spec = uarch.lab_kernel(lab)
        assert spec is not None and spec.elements > 0 and callable(spec.fn), lab


def _fake_lab_with_kernel(monkeypatch, spec=True):
    """labkit.alignment replaced by a one-table lab whose UARCH_KERNEL is _chain_dot on 4096
    elements (or none), the host's speed probe by a constant: `labkit bench alignment` in a
    second or two."""
    from labkit.bench import cli
    from labkit.bench.uarch import KernelSpec
    fake = types.ModuleType("labkit.alignment")
    fake.run_benchmark = lambda size=None, repeat=5: {
        "t": bench.BenchResult([{"name": "a", "median_s": 2.0}, {"name": "b", "median_s": 1.0}])}
    x = np.random.default_rng(0).random(4096)
    if spec:
        fake.UARCH_KERNEL = lambda: KernelSpec("chain dot", _chain_dot, (x, x.copy()), x.size)
    monkeypatch.setitem(sys.modules, "labkit.alignment", fake)
    monkeypatch.setitem(sys.modules, "labkit.alignment.bench",    # not the real lab's hook
                        types.ModuleType("labkit.alignment.bench"))
    monkeypatch.setattr(cli, "host_rate", lambda: 70.0)


def test_cli_lab_shows_its_uarch_kernel_row_with_the_predicted_column(monkeypatch, capsys):
    """`labkit bench <lab>`: after the lab's tables, its UARCH_KERNEL as a bench row timed on its
    elements, with measured and predicted cycles per element as columns; the line at the end
    repeats that row's numbers (not a second measurement); --no-uarch leaves both out."""
    import re

    pytest.importorskip("osaca")
    from labkit.bench import uarch
    _fake_lab_with_kernel(monkeypatch)
    assert bench.main(["alignment", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    part = out.split("-- predicted beside measured (labkit.inspect.predict)\n", 1)[1]
    head, _, row = part.splitlines()[1:4]
    assert "cycles/elem" in head and "predicted cycles/elem" in head
    assert row.startswith("chain dot") and "elements/s" in row
    measured, predicted = row.split()[-4:-2]           # … cycles/elem, predicted, 1.0× (baseline)
    assert float(measured) > 0
    assert predicted == "–" or float(predicted) > 0     # a host without a model: a dash
    line = out.split("predicted vs measured", 1)[1]
    assert "best repeat of its table above" in line
    assert f"measured {measured} cycles per element" in line
    assert re.search(_LINE, line.splitlines()[1].strip()), line
    assert out.index("-- predicted beside measured") < out.index("host speed steady")
    assert bench.main(["alignment", "--repeat", "1", "--no-uarch"]) == 0
    out = capsys.readouterr().out
    assert "predicted beside measured" not in out and "predicted vs measured" not in out
    assert uarch.lab_table("alignment", repeat=1, min_time=0.01)[0].spec.label == "chain dot"


def test_cli_uarch_kernel_row_without_osaca_or_a_kernel_is_a_dash_not_a_traceback(monkeypatch,
                                                                                   capsys):
    """No OSACA (or no model, no loop): the kernel's row is still measured, its predicted cell is
    a dash and the reason is under the table and in the line. A lab without a UARCH_KERNEL: one
    sentence in place of the table."""
    def no_osaca(*a, **k):
        raise ImportError("labkit.inspect.predict needs OSACA: pip install osaca")
    monkeypatch.setattr("labkit.inspect.uarch.predict", no_osaca)
    _fake_lab_with_kernel(monkeypatch)
    assert bench.main(["alignment", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    part = out.split("-- predicted beside measured (labkit.inspect.predict)\n", 1)[1]
    row = part.splitlines()[3]
    measured, predicted = row.split()[-4:-2]
    assert float(measured) > 0 and predicted == "–", row
    assert "chain dot: labkit.inspect.predict needs OSACA: pip install osaca" in part
    assert "no prediction — labkit.inspect.predict needs OSACA" in out.split(
        "predicted vs measured", 1)[1]
    _fake_lab_with_kernel(monkeypatch, spec=False)
    assert bench.main(["alignment", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "-- predicted beside measured (labkit.inspect.predict)\nno kernel named for a " \
           "prediction (the lab has no UARCH_KERNEL)" in out
    assert "Traceback" not in out

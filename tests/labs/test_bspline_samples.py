"""The per-repeat samples lab 02's computed prose claims from (no claim from one noisy sample):
layout_throughputs (samples=True) and ndbspline_chunk_sweep's scipy_samples, one positive rate per
repeat, whose medians are the figures the lab prints."""
from labkit import bench
from labkit import bspline as bs
from labkit.bench import reference


def test_layout_throughputs_samples_one_rate_per_repeat():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 64, "positions": 8})
    per = bs.layout_throughputs(x, tile=16, repeat=3, min_time=0.0, samples=True)
    assert set(per) == {"aos", "soa", "aosoa Nb=16"}
    assert all(len(v) == 3 and min(v) > 0 for v in per.values())
    c = bench.claim(per["soa"], per["aos"], "SoA", "AoS", kind="rate")
    assert c.kind == "rate" and c.low <= c.ratio <= c.high


def test_chunk_sweep_samples_match_its_medians():
    x = bs.make_inputs({"grid": (6, 6, 6), "n": 8, "positions": 16})
    sw = bs.ndbspline_chunk_sweep(x, chunks=(1, 4), batch=8, repeat=3, min_time=0.0)
    assert len(sw["scipy_samples"]) == 2 and all(len(s) == 3 for s in sw["scipy_samples"])
    for med, samples in zip(sw["scipy"], sw["scipy_samples"]):
        assert min(samples) > 0
        # the printed rate is the work over the median time: between the fastest and slowest repeat
        assert min(samples) * (1 - 1e-9) <= med <= max(samples) * (1 + 1e-9)


# ------------------------------------------------------------------ threads in paired rounds
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from labkit.bspline.bench import paired_rounds  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_paired_rounds_one_ratio_per_round():
    r = paired_rounds(lambda: sum(range(3000)), lambda: sum(range(1000)), rounds=4, min_time=0.0)
    assert len(r["one_s"]) == len(r["two_s"]) == len(r["ratios"]) == 4
    assert all(a / b == q for a, b, q in zip(r["one_s"], r["two_s"], r["ratios"]))
    assert min(r["one_s"] + r["two_s"]) > 0


def test_thread_scaling_samples_and_default_ratio():
    r = bs.thread_scaling("small", repeat=3, samples=True)
    assert set(r) == {"one walker", "walkers x tiles"}
    for v in r.values():
        assert len(v["ratios"]) == len(v["one_s"]) == len(v["two_s"]) == 3
        assert v["ratio"] == float(np.median(v["ratios"])) > 0


def _section7_verdict_cell():
    md = (ROOT / "solutions" / "02_bspline.md").read_text()
    cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", md, re.S)
    (src,) = [c for c in cells if 'reference.clause("threads_bspline")' in c and "verdict" in c]
    return "\n".join(ln for ln in src.splitlines() if not ln.startswith(":"))


def _verdict(one_s, two_s):
    """Run section 7's prose cell on fake rounds; its Markdown text."""
    from IPython.display import Markdown

    rounds = {"one_s": one_s, "two_s": two_s, "ratios": [a / b for a, b in zip(one_s, two_s)]}
    shown = []
    ns = {"np": np, "bench": bench, "Markdown": Markdown, "display": lambda m: shown.append(m.data),
          "rounds": rounds, "walker_in": bs.make_inputs("tiny"),
          "gain": bench.claim(two_s, one_s, "2 threads", "1 thread"),
          "speedup": float(np.median(rounds["ratios"]))}
    exec(_section7_verdict_cell(), ns)
    return shown[-1]


def _spread(center, rel, n=15):
    return [center * (1 + rel * k) for k in np.linspace(-1, 1, n)]


def test_section7_claims_a_gain_only_when_the_rounds_separate():
    text = _verdict(_spread(1e-3, 0.02), _spread(0.55e-3, 0.02))
    assert "2 threads is 1.8× faster than 1 thread" in text and "cut the walker's time" in text
    assert "load hid" not in text and "above 2.5×" not in text

    text = _verdict(_spread(1e-3, 0.4), _spread(0.95e-3, 0.4))     # overlapping rounds
    assert "not told apart" in text and "the load hid the threads' effect" in text
    assert "cut the walker's time" not in text and "faster" not in text
    assert reference.clause("threads_bspline") in text      # what an idle machine gave, beside it

    text = _verdict(_spread(1e-3, 0.02), _spread(2e-3, 0.02))      # two threads lose
    assert "2 threads is 2.0× slower than 1 thread" in text and "did not have a core" in text

    text = _verdict(_spread(3e-3, 0.02), _spread(1e-3, 0.02))      # one-thread runs disturbed
    assert "2 threads is 3.0× faster" in text and "does not size the gain" in text


@pytest.mark.parametrize("seed", range(10))
def test_section7_verdict_never_contradicts_its_rounds(seed):
    rng = np.random.default_rng(seed)
    one = list(1e-3 * rng.uniform(0.6, 1.6, 15))
    two = list(1e-3 * rng.uniform(0.4, 1.4, 15))
    text = _verdict(one, two)
    c = bench.claim(two, one)
    assert ("cut the walker's time" in text) == (c.better is True)
    assert ("the load hid" in text) == (c.better is None)
    assert ("did not have a core" in text) == (c.better is False)

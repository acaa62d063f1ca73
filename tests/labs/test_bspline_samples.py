"""The per-repeat samples lab 02's computed prose claims from (issue 41): layout_throughputs
(samples=True) and ndbspline_chunk_sweep's scipy_samples, one positive rate per repeat, whose
medians are the figures the lab prints."""
from labkit import bench
from labkit import bspline as bs


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

import re

import pytest

from labkit.hardware import clock


def test_clock_is_plausible():
    hz = clock.measure_clock(iterations=2_000_000, repeat=3)
    assert 0.3e9 < hz < 8e9, f"{hz / 1e9:.2f} GHz is not a CPU clock"


def test_chain_is_not_vectorised_or_folded():
    from labkit import inspect as lk
    k = clock._kernel()
    k(10, 3, 5)
    ir = lk.llvm_ir(k)
    assert "<" not in "".join(re.findall(r"= (?:add|xor) (<[^>]+>)", ir)), "chain vectorised"
    assert re.search(r"xor i64", ir) and re.search(r"add i64", ir), "chain folded away"
    # the same answer as plain Python: the kernel computes what it claims
    x = 3
    for _ in range(10):
        x = ((x + 3) ^ 5) & (2**64 - 1)
    assert k(10, 3, 5) & (2**64 - 1) == x


def test_bad_arguments():
    with pytest.raises(TypeError, match="iterations must be a positive int"):
        clock.measure_clock(iterations=1.5)
    with pytest.raises(ValueError, match="repeat must be ≥ 1"):
        clock.measure_clock(repeat=0)


def test_bench_cycles_per_item():
    import numpy as np
    from labkit import bench
    x = np.ones(1000)
    res = bench.compare({"sum": np.sum}, (x,), work=x.size, repeat=2, min_time=0.01)
    assert res.cycles_per_item("sum", hz=1e9) == pytest.approx(1e9 / res.throughput("sum"))
    assert res.cycles_per_item("sum") > 0
    with pytest.raises(ValueError, match="positive clock"):
        res.cycles_per_item("sum", hz=-1)
    nowork = bench.compare({"sum": np.sum}, (x,), repeat=2, min_time=0.01)
    with pytest.raises(ValueError, match="work="):
        nowork.cycles_per_item("sum", hz=1e9)

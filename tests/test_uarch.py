"""labkit.inspect.predict (issue 34): OSACA's bound for the hot loop of five small kernels whose
limiting resource is known — stated as properties (which bound wins, which of two loops is
faster), never as one LLVM schedule — on the host and, without running them, for other cores."""
import numpy as np
import pytest
from numba import njit

pytest.importorskip("osaca")

from labkit import inspect as lk  # noqa: E402
from labkit.inspect.uarch import MODELS, osaca_model  # noqa: E402

CPUS = ("haswell", "znver4", "apple-m1", "neoverse-v2")


@njit
def sum_chain(x, y):                   # one accumulator: every add waits for the previous one
    s = 0.0
    for i in range(x.size):
        s += x[i] * y[i]
    return s


@njit
def sum_partials(x, y):                # eight independent sums
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for i in range(0, x.size - 7, 8):
        s0 += x[i] * y[i]
        s1 += x[i + 1] * y[i + 1]
        s2 += x[i + 2] * y[i + 2]
        s3 += x[i + 3] * y[i + 3]
        s4 += x[i + 4] * y[i + 4]
        s5 += x[i + 5] * y[i + 5]
        s6 += x[i + 6] * y[i + 6]
        s7 += x[i + 7] * y[i + 7]
    return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7


@njit(fastmath=True)
def triad(x, y, out):                  # independent FMAs, two loads and a store each
    for i in range(x.size):
        out[i] = 1.5 * x[i] + y[i]
    return out


@njit
def copy(x, y, out):                   # loads and stores only
    for i in range(x.size):
        out[i] = x[i]
    return out


@njit(fastmath=True)
def gather(x, idx, out):               # indexed loads
    for i in range(idx.size):
        out[i] = x[idx[i]] * 2.0
    return out


def _args():
    x, y = np.ones(4096), np.ones(4096)
    return {"sum_chain": (x, y), "sum_partials": (x, y), "triad": (x, y, np.empty(4096)),
            "copy": (x, y, np.empty(4096)),
            "gather": (x, np.arange(4096, dtype=np.int64)[::-1].copy(), np.empty(4096))}


KERNELS = {"sum_chain": sum_chain, "sum_partials": sum_partials, "triad": triad, "copy": copy,
           "gather": gather}


@pytest.mark.parametrize("cpu", CPUS)
def test_the_bound_that_wins_is_the_expected_resource(cpu):
    args = _args()
    p = {name: lk.predict(fn, args[name], cpu=cpu) for name, fn in KERNELS.items()}
    chain = p["sum_chain"]
    assert chain.bound == "dependency", chain.explain()
    assert any("add" in ln for ln in chain.lcd_instructions), chain.lcd_instructions
    for name in ("triad", "copy"):
        assert p[name].bound == "ports", (name, p[name].explain())
    assert p["gather"].cycles_per_iteration > 0
    # eight sums per element of chain: a shorter loop-carried chain per element
    if chain.elements and p["sum_partials"].elements:
        assert p["sum_partials"].cycles_per_element < chain.cycles_per_element
        assert p["sum_partials"].lcd_cycles / p["sum_partials"].elements < \
            chain.lcd_cycles / chain.elements


def test_elements_per_iteration_read_from_the_loop_step_on_x86():
    args = _args()
    for cpu in ("haswell", "znver4"):
        chain = lk.predict(sum_chain, args["sum_chain"], cpu=cpu)
        assert chain.elements and chain.elements >= 1
        # one dependent add per element: the chain per element is one add's latency
        assert chain.cycles_per_element == pytest.approx(chain.lcd_cycles / chain.elements)
        assert 2.0 <= chain.cycles_per_element <= 6.0, chain.explain()


def test_measured_beside_predicted_on_this_host():
    """The latency-bound chain runs within 1.6× of its predicted cycles per element here (the
    fastest of lesson 00's clock-and-kernel rounds, the round least disturbed by load)."""
    from labkit.hardware.target import target
    from labkit.lesson00.checks import measured_cycle_rounds
    from labkit.lesson00.kernels import dot_plain
    try:
        osaca_model(target().cpu)
    except ValueError:
        pytest.skip(f"no OSACA model for this host ({target().cpu})")
    x = np.random.default_rng(0).random(1 << 14)
    p = lk.predict(dot_plain, (x, x))
    if p.cycles_per_element is None:
        pytest.skip("the loop's step could not be read on this host")
    measured = min(r[0] for r in measured_cycle_rounds())
    assert 1 / 1.6 <= measured / p.cycles_per_element <= 1.6, (measured, p.explain(measured))
    text = p.explain(measured)
    assert f"{measured:.2f}" in text and "dependency" in text


def test_explain_words_follow_the_numbers(monkeypatch):
    from labkit.inspect import uarch
    monkeypatch.setattr(uarch, "_busy", lambda: "")
    p = lk.predict(sum_chain, _args()["sum_chain"], cpu="znver4")
    per = p.cycles_per_element
    assert "as predicted" in p.explain(per * 1.05)
    assert "above the bound" in p.explain(per * 1.8)
    assert "look at memory" in p.explain(per * 4)
    assert "pessimistic" in p.explain(per * 0.5)
    with pytest.raises(ValueError, match="positive"):
        p.explain(-1.0)
    monkeypatch.setattr(uarch, "_busy", lambda: "load 4.0 on 2 cores")
    assert "other jobs on this machine (load 4.0 on 2 cores)" in p.explain(per * 1.8)
    assert "other jobs" not in p.explain(per * 1.05)


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match="no OSACA core model"):
        osaca_model("pentium4")

    @njit
    def no_loop(x):
        return x + 1.0

    with pytest.raises(ValueError, match="no loop"):
        lk.predict(no_loop, (1.0,), cpu="haswell")
    assert MODELS["znver5"][1], "an approximated model names what it stands in for"
    p = lk.predict(sum_chain, _args()["sum_chain"], cpu="znver5")
    assert p.model == "ZEN4" and "Zen 4 model" in p.explain()


def test_loop_by_kind_picks_the_register_blocks_fma_loop():
    """lab 03's tile_block: the loop show() marks hot is a dead copy full of scatters; loop="fma"
    analyses the 4×4 block's k loop instead — for cores with 32 vector registers (znver4,
    apple-m1) a port bound with all 16 FMAs in it, predicted without running."""
    from labkit import pcc
    from labkit.pcc import kernels
    Z = pcc.standardize(pcc.make_inputs({"n": 16, "l": 64}).X)[0]
    args = (Z, 0, 8, 8, 16, False, Z.shape[1], np.zeros((16, 16)), 0, 0)
    for cpu in ("znver4", "apple-m1"):
        p = lk.predict(kernels.tile_block, args, cpu=cpu, loop="fma")
        fmas = [ln for ln in p.loop if ln.split()[0].startswith(("vfmadd", "fmla"))]
        assert len(fmas) >= 16 and p.bound == "ports", (cpu, p.explain())
    with pytest.raises(ValueError, match="no innermost loop with 'popcount'"):
        lk.predict(sum_chain, _args()["sum_chain"], cpu="haswell", loop="popcount")


def test_a_lower_bound_is_not_blamed_on_memory(monkeypatch):
    from labkit.inspect import uarch
    monkeypatch.setattr(uarch, "_busy", lambda: "")
    p = lk.predict(sum_chain, _args()["sum_chain"], cpu="znver4")
    p.unknown = ["vpmaxsw %ymm1, %ymm2, %ymm3"]
    said = p.explain(p.cycles_per_element * 4)
    assert "lower bound" in said and "look at memory" not in said

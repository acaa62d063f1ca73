"""Tests for labkit.plots: each kind returns a labelled Axes; bad input errors."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from labkit import plots  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_speedup_bars():
    ax = plots.speedup_bars(["scalar", "simd"], [1.0, 4.8], title="lab 01")
    assert "×" in ax.get_xlabel() and "scalar" in ax.get_xlabel()
    texts = [t.get_text() for t in ax.texts]
    assert "4.8×" in texts and "1.0×" in texts
    assert [t.get_text() for t in ax.get_yticklabels()] == ["scalar", "simd"]
    assert ax.get_title() == "lab 01"
    # wide range switches to a log axis
    ax = plots.speedup_bars(["a", "b"], [1.0, 500.0], baseline="a")
    assert ax.get_xscale() == "log"


def test_speedup_bars_draws_into_given_axes():
    fig, ax = plt.subplots()
    assert plots.speedup_bars(["a"], [1.0], ax=ax) is ax


@pytest.mark.parametrize("names, ratios, exc", [
    (["a", "b"], [1.0], ValueError),
    (["a"], [-1.0], ValueError),
    (["a"], ["x"], TypeError),
    ([], [], ValueError),
])
def test_speedup_bars_bad_input(names, ratios, exc):
    with pytest.raises(exc):
        plots.speedup_bars(names, ratios)


def test_throughput_vs():
    ax = plots.throughput_vs([8, 16, 32, 64], {"scalar": [1e6, 2e6, 3e6, 3.5e6], "simd": [4e6, 8e6, 9e6, 9e6]},
                             xlabel="tile (elements)", unit="alignments", logx=True, highlight=(16, 8e6))
    assert ax.get_xlabel() == "tile (elements)"
    assert ax.get_ylabel() == "throughput (M alignments/s)"
    assert ax.get_xscale() == "log" and len(ax.lines) == 3
    assert ax.get_legend() is not None
    ax = plots.throughput_vs([1, 2], {"t": [1e-3, 2e-3]}, xlabel="n", unit="s", ylabel="time (s)")
    assert ax.get_ylabel() == "time (s)"


@pytest.mark.parametrize("x, ys, exc", [
    ([1, 2], {}, TypeError),
    ([1, 2], {"a": [1.0]}, ValueError),
    ([[1, 2]], {"a": [1.0]}, ValueError),
])
def test_throughput_vs_bad_input(x, ys, exc):
    with pytest.raises(exc):
        plots.throughput_vs(x, ys, xlabel="n", unit="items")


def test_throughput_vs_logx_needs_positive():
    with pytest.raises(ValueError, match="positive"):
        plots.throughput_vs([0, 1], {"a": [1, 2]}, xlabel="n", unit="items", logx=True)


def test_heatmap():
    m = np.arange(12.0).reshape(3, 4)
    ax = plots.heatmap(m, xlabels=list("abcd"), ylabels=[1, 2, 3], xlabel="SNP j", ylabel="SNP i",
                       cbar_label="r²", title="t")
    assert ax.get_xlabel() == "SNP j" and ax.get_ylabel() == "SNP i"
    assert len(ax.texts) == 12  # annotated when small
    cbar_ax = [a for a in ax.figure.axes if a is not ax][0]
    assert cbar_ax.get_ylabel() == "r²"
    assert len(plots.heatmap(np.ones((20, 20))).texts) == 0


@pytest.mark.parametrize("m, kw, exc", [
    (np.ones(3), {}, ValueError),
    (np.ones((0, 3)), {}, ValueError),
    (np.ones((2, 2)), {"xlabels": ["a"]}, ValueError),
    (np.ones((2, 2)), {"ylabels": ["a", "b", "c"]}, ValueError),
    (np.array([["a", "b"]]), {}, TypeError),
])
def test_heatmap_bad_input(m, kw, exc):
    with pytest.raises(exc):
        plots.heatmap(m, **kw)


def test_roofline():
    ax = plots.roofline(200.0, 20.0, points={"scalar": (0.25, 1.5), "simd": (0.25, 4.8)})
    assert "FLOP/byte" in ax.get_xlabel() and "GFLOP/s" in ax.get_ylabel()
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    xs, ys = ax.lines[0].get_data()
    assert np.allclose(ys, np.minimum(200.0, 20.0 * xs))
    assert {"scalar", "simd"} <= {t.get_text() for t in ax.texts}


@pytest.mark.parametrize("args, exc", [
    ((0, 10), ValueError),
    ((10, "x"), TypeError),
    ((10, 10, {"a": (1,)}), TypeError),
    ((10, 10, {"a": (1, -2)}), ValueError),
])
def test_roofline_bad_input(args, exc):
    with pytest.raises(exc):
        plots.roofline(*args)


def test_bad_axes():
    with pytest.raises(TypeError, match="Axes"):
        plots.speedup_bars(["a"], [1.0], ax="nope")

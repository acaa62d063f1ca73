"""Tests for labkit.widgets.tuner: controls, run-on-create, debounce, status, history, headless output."""
import threading

import matplotlib

matplotlib.use("Agg")
import ipywidgets as W  # noqa: E402
import pytest  # noqa: E402

from labkit import widgets  # noqa: E402


def fake_run(tile, order="row"):
    return {"throughput": tile * 1e6 * (2 if order == "row" else 1), "median_s": 1e-3 / tile}


def test_controls_and_initial_run():
    t = widgets.tuner(fake_run, {"tile": [8, 16, 32], "order": ["row", "col"]}, debounce=0, title="demo")
    assert isinstance(t, W.VBox)
    assert isinstance(t.controls["tile"], W.SelectionSlider)
    assert isinstance(t.controls["order"], W.Dropdown)
    assert {"jupyter-widgets", "widget-slider"} <= set(t.controls["tile"]._dom_classes)
    assert t.controls["tile"].value == 8 and t.controls["order"].value == "row"
    assert t.runs == 1 and t.history == [{"tile": 8, "order": "row", "throughput": 16e6, "median_s": 1.25e-4}]
    assert t.status in t.children and t.output in t.children
    assert "16.0 M" in t.status.value and "125 µs" in t.status.value
    assert len(t.output.outputs) == 1 and "image/png" in t.output.outputs[0]["data"]
    assert t.figure.axes[0].get_xlabel() == "tile"


def test_change_reruns_and_redraws_immediately_without_debounce():
    t = widgets.tuner(fake_run, {"tile": [8, 16, 32], "order": ["row", "col"]}, debounce=0, unit="pairs")
    first_png = t.output.outputs[0]["data"]["image/png"]
    t.controls["tile"].value = 32
    t.controls["order"].value = "col"
    assert t.runs == 3
    assert t.history[-1] == {"tile": 32, "order": "col", "throughput": 32e6, "median_s": 1e-3 / 32}
    assert t.output.outputs[0]["data"]["image/png"] != first_png
    ax = t.figure.axes[0]
    assert ax.get_ylabel() == "throughput (M pairs/s)"
    assert "32.0 M pairs/s" in t.status.value
    assert {line.get_label() for line in ax.lines} >= {"order=row", "order=col", "current"}


def test_debounce_coalesces_changes():
    calls = []

    def run(tile):
        calls.append(tile)
        return {"throughput": float(tile)}

    t = widgets.tuner(run, {"tile": [8, 16, 32, 64]}, debounce=0.5)
    for v in (16, 32, 64):
        t.controls["tile"].value = v
    t.wait()
    assert calls == [8, 64]
    assert t.values == {"tile": 64}


def test_status_shows_running_during_run():
    seen = []
    holder = {}

    def run(tile):
        if "t" in holder:
            seen.append(holder["t"].status.value)
        return {"throughput": 1.0}

    holder["t"] = widgets.tuner(run, {"tile": [1, 2]}, debounce=0)
    holder["t"].run_now()
    assert "running…" in seen[0] and "tile=1" in seen[0]
    assert "running" not in holder["t"].status.value


def test_errors_shown_in_status_and_raised_by_run_now():
    def run(tile):
        if tile == 2:
            raise ValueError("tile 2 is not supported")
        return {"throughput": 1.0}

    t = widgets.tuner(run, {"tile": [1, 2]}, debounce=0)
    t.controls["tile"].value = 2  # the observer swallows the error but shows it
    assert "✘" in t.status.value and "tile 2 is not supported" in t.status.value
    assert isinstance(t.last_error, ValueError)
    assert len(t.history) == 1
    with pytest.raises(ValueError, match="not supported"):
        t.run_now()


def test_creation_errors_raise():
    with pytest.raises(ZeroDivisionError):
        widgets.tuner(lambda tile: 1 / 0, {"tile": [1]})
    with pytest.raises(TypeError, match="must return a dict"):
        widgets.tuner(lambda tile: 3.0, {"tile": [1]})
    with pytest.raises(ValueError, match="rename"):
        widgets.tuner(lambda tile: {"tile": 1.0}, {"tile": [1]})


@pytest.mark.parametrize("args, kwargs, exc, msg", [
    ((3, {"tile": [1]}), {}, TypeError, "callable"),
    ((fake_run, {}), {}, TypeError, "non-empty dict"),
    ((fake_run, {"tile": []}), {}, ValueError, "empty"),
    ((fake_run, {"tile": 8}), {}, TypeError, "list of values"),
    ((fake_run, {"tile": "abc"}), {}, TypeError, "list of values"),
    ((fake_run, {"not a name": [1]}), {}, ValueError, "identifiers"),
    ((fake_run, {"tile": [1]}), {"debounce": -1}, ValueError, "debounce"),
    ((fake_run, {"tile": [1]}), {"plot": 3}, TypeError, "plot"),
])
def test_bad_input(args, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        widgets.tuner(*args, **kwargs)


def test_custom_plot_and_history_flag():
    calls = []

    def plot(ax, history):
        calls.append(len(history))
        ax.plot([h["tile"] for h in history], [h["throughput"] for h in history])
        ax.set_xlabel("tile (elements)")

    t = widgets.tuner(fake_run, {"tile": [8, 16]}, plot=plot, history=False, debounce=0)
    t.controls["tile"].value = 16
    assert calls == [1, 1] and len(t.history) == 1 and t.history[0]["tile"] == 16
    assert t.figure.axes[0].get_xlabel() == "tile (elements)"


def test_threaded_runs_do_not_overlap():
    active, overlaps = [0], []
    lock = threading.Lock()

    def run(tile):
        with lock:
            active[0] += 1
            overlaps.append(active[0])
        import time
        time.sleep(0.01)
        with lock:
            active[0] -= 1
        return {"throughput": float(tile)}

    t = widgets.tuner(run, {"tile": [1, 2, 3]}, debounce=0.01)
    threads = [threading.Thread(target=t.run_now) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    t.wait()
    assert max(overlaps) == 1 and t.runs == 4


def test_mimebundle_has_png_and_stable_text():
    t = widgets.tuner(fake_run, {"tile": [8, 16]}, debounce=0)
    data = t._repr_mimebundle_()
    assert data["text/plain"] == "tuner(tile=[8, 16])" == repr(t)
    assert "image/png" in data and "application/vnd.jupyter.widget-view+json" in data


def test_headless_notebook_shows_initial_figure(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(
        "from labkit import widgets\n"
        "def run(tile):\n"
        "    return {'throughput': tile * 1e6}\n"
        "widgets.tuner(run, {'tile': [8, 16, 32]})"
    ))
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = nb.cells[0].outputs
    assert not [o for o in outputs if o.output_type == "error"], outputs
    data = [o for o in outputs if o.output_type == "execute_result"][0].data
    assert "image/png" in data and data["text/plain"] == "tuner(tile=[8, 16, 32])"
    assert "application/vnd.jupyter.widget-view+json" in data


def test_samples_key_draws_the_spread_and_shows_its_interval():
    from matplotlib.collections import LineCollection

    def run(tile):
        xs = [tile * 1e6 * f for f in (0.8, 0.9, 1.0, 1.1, 1.2)]
        return {"throughput": tile * 1e6, "throughput_samples": xs}

    t = widgets.tuner(run, {"tile": [8, 16]}, debounce=0, unit="pairs")
    t.controls["tile"].value = 16
    assert t.history[-1]["throughput_samples"][0] == 16e6 * 0.8      # kept for claims
    assert "throughput_samples" not in t.status.value                 # shown as an interval instead
    assert "(14.4 M pairs/s–17.6 M pairs/s, 5 repeats)" in t.status.value
    bars = [c for c in t.figure.axes[0].collections if isinstance(c, LineCollection)]
    spans = sorted(tuple(seg[:, 1]) for c in bars for seg in c.get_segments())
    assert spans == [(7.2, 8.8), (14.4, 17.6)]                        # the middle half, in M pairs/s
    assert widgets.spread([1, 2, 3]) == (1, 3) and widgets.spread([1, 2, 3, 4, 5]) == (2, 4)


def test_no_samples_no_bars():
    from matplotlib.collections import LineCollection

    t = widgets.tuner(fake_run, {"tile": [8, 16]}, debounce=0)
    assert not [c for c in t.figure.axes[0].collections if isinstance(c, LineCollection)]
    with pytest.raises(ValueError, match="at least one"):
        widgets.spread([])

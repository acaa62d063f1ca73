"""What an idle machine gave: the figure a notebook shows beside its own numbers when this run's
load hides a lesson's effect (threads, double buffering, tile sizes, cache steps).

>>> reference.sentence("double_buffering")
'On an idle 2-core AMD EPYC (znver4, load 0.98 → 1.12 counting the measurement, 2026-12-06;
tools/reference_figures.py) two buffers ran at 0.56× one buffer (0.54–0.58×, slower than …'

The figures live in :mod:`labkit.bench.reference_figures`, written by
``tools/reference_figures.py``, which executes the solution notebook's own cells on an idle
machine and reads each figure out of the kernel's variables — never a number typed in by hand.
A notebook calls :func:`sentence` only in the branch where its own run could not show the effect;
its own numbers always come first.
"""
from __future__ import annotations

import statistics

__all__ = ["KEYS", "figure", "describe", "clause", "sentence"]

#: The figures a notebook may ask for, and what each one is.
KEYS = {
    "cache_steps": "add_arrays' GB/s by the cache level its three arrays fit in (00 §caches)",
    "threads_alignment": "the best width on 2 threads vs 1, paired rounds in wall time (01 §8)",
    "threads_bspline": "2 threads vs 1 on one walker, the same tiles, paired rounds (02)",
    "threads_epistasis": "the order-3 search on 2 threads vs 1, interleaved rounds (04)",
    "tile_sizes": "pearson_allpairs' GFLOP/s by tile size (03 §6)",
    "double_buffering": "Alg. 2's two buffers vs one buffer, and the bound overlap allows (03 §7)",
}


def _figures() -> dict:
    from .reference_figures import FIGURES
    return FIGURES


def figure(key: str) -> dict:
    """The stored figure: ``{"value", "notebook", "host", "date", "load", "seconds"}``, or ``{}``
    when it was never measured."""
    if key not in KEYS:
        raise KeyError(f"no reference figure {key!r}; known: {', '.join(KEYS)}")
    return _figures().get(key) or {}


#: What a notebook says where a figure was never measured (tests/test_reference.py keeps every
#: key measured in the repository; a contributor's new key reads this until the tool runs).
MISSING = "no idle-machine figure is stored for this yet (tools/reference_figures.py --write)"


def _threads(value: list, what: str) -> str:
    return (f"{what} ran at {statistics.median(value):.2f}× one thread (median of "
            f"{len(value)} rounds, {min(value):.2f}–{max(value):.2f}×)")


def describe(key: str) -> str:
    """The figure in words, without the host (see :func:`sentence`)."""
    v = figure(key).get("value")
    if v is None:
        return MISSING
    if key == "cache_steps":
        order = ["L1D", "L2", "L3", "DRAM"]             # nearest level first
        levels = sorted(v, key=lambda lvl: order.index(lvl) if lvl in order else len(order))
        return "add_arrays moved " + "; ".join(
            f"{lvl} {v[lvl][0]:.0f}" + (f"–{v[lvl][1]:.0f}" if round(v[lvl][1]) != round(v[lvl][0])
                                        else "") + " GB/s" for lvl in levels)
    if key == "threads_alignment":
        return _threads(v, "2 threads at the best width")
    if key == "threads_bspline":
        return _threads(v, "one walker on 2 threads (the same tiles)")
    if key == "threads_epistasis":
        return _threads(v, "the 2-thread search")
    if key == "tile_sizes":
        tiles = dict(sorted((int(t), g) for t, g in v.items()))
        best = max(tiles, key=tiles.get)
        return ("tiles " + ", ".join(map(str, tiles)) + f" gave {min(tiles.values()):.1f}–"
                f"{max(tiles.values()):.1f} GFLOP/s, the best median at tile {best} "
                f"({tiles[best]:.1f})")
    if key == "double_buffering":
        word = ("within its spread of" if not v["separated"] else
                "faster than" if v["ratio"] > 1 else "slower than")
        return (f"two buffers ran at {v['ratio']:.2f}× one buffer ({v['low']:.2f}–{v['high']:.2f}×,"
                f" {word} one buffer; overlap could give at most {v['bound']:.2f}×)")
    raise KeyError(key)


def clause(key: str) -> str:
    """'on an idle <n>-core <cpu> (<target>, load a → b counting the measurement, <date>;
    tools/reference_figures.py) <the figure>' — for inside a sentence; :func:`sentence` is the
    same as a sentence of its own. :data:`MISSING` for a figure never measured."""
    f = figure(key)
    if f.get("value") is None:
        return MISSING
    host = f.get("host", {})
    lo, hi = (list(f.get("load") or []) + [float("nan")] * 2)[:2]
    return (f"on an idle {host.get('cores', '?')}-core {host.get('cpu', 'machine')} "
            f"({host.get('target', '?')}, load {lo:.2f} → {hi:.2f} counting the measurement, "
            f"{f.get('date', '?')}; tools/reference_figures.py) {describe(key)}")


def sentence(key: str) -> str:
    """'On an idle <n>-core <cpu> (<target>, load a → b counting the measurement, <date>;
    tools/reference_figures.py) <the figure>.' (:func:`clause` as a sentence)."""
    text = clause(key)
    return text[:1].upper() + text[1:] + "."

"""Lab 01's computed sentences about its sweeps (section 7's batch sweep, section 8's tuner).

Every direction in them comes from :func:`labkit.bench.claim` on the repeats: a width "falls",
a batch size "is faster" per pair, two threads "run at 1.8× the rate" only when the intervals of
the repeats separate; otherwise the sentence says that this run cannot tell them apart, with the
load it saw. The notebook passes the samples it measured; the tests pass fake ones.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from labkit.bench.claims import claim, load_note
from labkit.bench import reference

__all__ = ["tuner_reading", "batch_steps_reading", "column_kib"]


def column_kib(lanes: int, length: int) -> float:
    """KiB of the DP column ``align_batched`` keeps per sweep: H and E, int16, lanes × length each."""
    return lanes * length * 4 / 1024


def _median(xs) -> float:
    return float(np.median(np.asarray(list(xs), dtype=float)))


def _list(xs: Sequence) -> str:
    xs = [str(x) for x in xs]
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def tuner_reading(one: Mapping[int, Sequence[float]], *, length: int = 200, l1: int | None = None,
                  rounds: Mapping | None = None, threads: int = 2, load: str | None = None) -> str:
    """What the lanes sweep shows, as Markdown.

    ``one``: lanes → the repeats' alignments/s on one thread; ``rounds``: ``A.thread_rounds``'
    paired rounds at the best width (or None); ``l1``: the L1 data cache in bytes (or None);
    ``load``: the load note to quote (default: the machine's now)."""
    if not one:
        raise ValueError("one must map at least one width to its repeats")
    load = load_note() if load is None else load
    widths = sorted(one)
    med = {w: _median(one[w]) for w in widths}
    kib = {w: column_kib(w, length) for w in widths}
    best = max(widths, key=med.get)
    words = _width_words(one, widths, med, kib)
    vs = {w: claim(one[w], one[best], f"{w} lanes", f"{best} lanes", kind="rate")
          for w in widths if w != best}
    where = ""
    if l1:
        fits = [w for w in widths if kib[w] * 1024 <= l1]
        words.append(f"The L1 data cache holds {l1 / 1024:.0f} KiB: the column fits up to "
                     + (f"{max(fits)} lanes" if fits else "no width measured") + ".")
        where = (" (its column inside L1)" if kib[best] * 1024 <= l1 else
                 f" (its column {kib[best]:.0f} KiB, over L1's {l1 / 1024:.0f} KiB)")
    words.append(_best_words(vs, best, where, load))
    _wider_words(words, widths, best, vs, kib, l1)
    if rounds:
        words.append(_threads_words(rounds, threads, best, load))
    return " ".join(words)


def _width_words(one, widths, med, kib) -> list:
    """The medians of one thread per width, then each step to the next width as the repeats
    tell it."""
    words = ["One thread, median of the repeats: "
             + ", ".join(f"{w} lanes {med[w] / 1e3:.0f} k/s ({kib[w]:.0f} KiB)" for w in widths) + "."]
    if len(widths) > 1:
        steps = [(a, b, claim(one[b], one[a], f"{b} lanes", f"{a} lanes", kind="rate"))
                 for a, b in zip(widths, widths[1:])]
        words.append("Width by width: " + "; ".join(f"{a} → {b} lanes {c.phrase}" for a, b, c in steps)
                     + ".")
    return words


def _best_words(vs: dict, best: int, where: str, load: str) -> str:
    """The best width: measurably best, or one of those this run cannot tell apart."""
    close = [w for w, c in vs.items() if not c.separated]
    if not vs:
        return f"Only {best} lanes was measured."
    if not close:
        word = next(iter(vs.values())).word
        return (f"The best width is {best} lanes{where}: every other width runs at a measurably "
                f"{word} rate (their middle repeats do not overlap its).")
    return (f"The highest median is at {best} lanes{where}, but this run cannot tell "
            f"{_list(close)} lanes from it (their middle repeats overlap"
            + (f", {load}" if load else "") + "): the best width is one of "
            + _list(sorted([best] + close)) + " lanes.")


def _wider_words(words: list, widths, best: int, vs: dict, kib: dict, l1) -> None:
    """Whether the widths beyond the best fall or hold its rate (appended to ``words``; the last
    sentence says so when the best is the widest)."""
    wider = [w for w in widths if w > best]
    if vs and not wider:
        words[-1] = words[-1][:-1] + f"; {best} lanes is the widest measured."
    elif wider:
        fall = [w for w in wider if vs[w].separated]
        hold = [w for w in wider if not vs[w].separated]
        parts = []
        if fall:
            parts.append("wider batches fall: " + "; ".join(
                vs[w].sentence() + (f" — its column, {kib[w]:.0f} KiB, is over L1"
                                    if l1 and kib[w] * 1024 > l1 else "") for w in fall))
        if hold:
            parts.append(f"{_list(hold)} lanes {'hold' if len(hold) > 1 else 'holds'} it as far as "
                         "this run can tell ("
                         + "; ".join(f"{vs[w].low:.2f}–{vs[w].high:.2f}×" for w in hold)
                         + " its rate, overlapping)")
        words.append(" ".join(p[0].upper() + p[1:] + "." for p in parts))


def _threads_words(rounds: Mapping, threads: int, best: int, load: str) -> str:
    """The paired rounds of ``threads`` threads against one at the best width, and what the
    machine's load let them show."""
    many, single, ratios = rounds["many"], rounds["one"], list(rounds["ratios"])
    c = claim(many, single, f"{threads} threads", "1 thread", kind="rate")
    text = (f"With {threads} threads at {best} lanes, {len(ratios)} paired rounds in wall time: "
            f"{c.sentence()}; round by round {min(ratios):.2f}–{max(ratios):.2f}× "
            f"(median {_median(ratios):.2f}×)")
    idle = reference.clause("threads_alignment") if threads == 2 else ""
    if c.better is None:
        text += (". The load hid the second thread's effect on this run; `labkit bench "
                 "alignment` also times the threads in CPU seconds (their parallel efficiency)"
                 + (f"; {idle}" if idle else ""))
    elif c.better and c.ratio < 0.8 * threads:
        text += (f" — short of the {threads}× that free cores would give"
                 + (f" ({load})" if load else "") + (f"; {idle}" if idle else ""))
    elif not c.better:
        text += (" — the second thread did not have a core of its own in most rounds"
                 + (f" ({load})" if load else "") + "; "
                 + (idle if idle else "rerun on idle cores to see what the split gives"))
    return text + "."


def batch_steps_reading(cost: Mapping[int, Sequence[float]], per_pass: int | None, *,
                        seed_pairs: int = 16, load: str | None = None) -> str:
    """What the batch-size sweep of the int16 kernel shows, as Markdown.

    ``cost``: pairs → the repeats' time per pair and DP cell (any unit, lower is better);
    ``per_pass``: the pairs the int16 hot loop takes per iteration (section 6), or None."""
    if not cost:
        raise ValueError("cost must map at least one batch size to its repeats")
    load = load_note() if load is None else load
    sizes = sorted(cost)
    if not per_pass:
        return ("The int16 hot loop's pairs per pass could not be read on this ISA (section 6), "
                "so the sweep's steps are not located here: read the plot.")
    pairs = []                 # (full batch m, the size just below it, claim of m against it)
    for m in sizes:
        below = [k for k in sizes if k < m]
        if m % per_pass == 0 and below and below[-1] % per_pass:
            k = below[-1]
            pairs.append((m, k, claim(cost[m], cost[k], f"a pair in a batch of {m}",
                                      f"one in a batch of {k}")))
    words = []
    if not pairs:
        words.append(f"The sweep has no multiple of {per_pass} pairs right after a size that is "
                     "not one, so it shows no step.")
    else:
        steps = [(m, k, c) for m, k, c in pairs if c.better]
        unclear = [(m, k, c) for m, k, c in pairs if c.better is None]
        reverse = [(m, k, c) for m, k, c in pairs if c.better is False]
        if steps:
            words.append(
                f"The int16 hot loop takes {per_pass} pairs per pass (section 6). "
                + (f"At every multiple of {per_pass} measured after a size that is not one"
                   if len(steps) == len(pairs) else
                   f"At {_list([m for m, _, _ in steps])} pairs (of the multiples of {per_pass} "
                   "measured after a size that is not one)")
                + ", the cost per pair steps: " + "; ".join(c.sentence() for _, _, c in steps) + ". A batch that "
                f"is not a multiple of {per_pass} runs its last pairs through the loops after the "
                "hot loop (narrower vectors, then one pair at a time) on every row — a property "
                "of the code, not noise.")
        if unclear:
            words.append("This run cannot tell "
                         + "; ".join(f"{m} from {k} pairs ({c.low:.2f}–{c.high:.2f}×, overlapping)"
                                     for m, k, c in unclear)
                         + (f" — {load}" if load else "") + ".")
        if reverse:
            words.append("No step at " + "; ".join(c.sentence() for _, _, c in reverse) + ".")
    if seed_pairs < per_pass:
        words.append(f"The seed's {seed_pairs} pairs are fewer than one pass: its batch never enters "
                     "the hot loop and runs only the loops after it, so the hot loop's instruction "
                     "count says little about the seed's speed.")
    elif seed_pairs % per_pass:
        words.append(f"The seed's {seed_pairs} pairs are not a multiple of {per_pass}: "
                     f"{seed_pairs % per_pass} of them run in the loops after the hot loop.")
    return " ".join(words)

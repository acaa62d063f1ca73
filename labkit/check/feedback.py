"""The notebook's feedback cell of a challenge (``from labkit.check.challenge import
feedback``): the facts of the latest check's ``details["challenge"]`` as a Markdown table —
the speed beside both anchors and the lab's steps, the position and tier, the hot loop's
vectors and lanes, the roof, the threads — and where to look next.
"""
from __future__ import annotations

from .scale import TIERS, describe_tier


class Feedback:
    """What :func:`feedback` shows: Markdown in a notebook, the same text elsewhere."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def hot_loop(facts: dict) -> str | None:
    """The hot loop's vectors and lanes in words, from a challenge's facts (``vector_bits``,
    ``lanes``, ``lane_type``), or None when they were not read — the notebook's feedback cell
    and the grader's feedback page say it the same way."""
    bits = facts.get("vector_bits")
    if bits is None:
        return None
    lanes = facts.get("lanes")
    return "scalar (no vector instructions)" if not bits else (
        f"{bits}-bit vectors" + (f", {lanes} {facts.get('lane_type')} lanes" if lanes else ""))


def _x(v) -> str:
    return f"{float(v):.2f}×" if isinstance(v, (int, float)) else "—"


def feedback(name: str) -> Feedback:
    """The feedback of the latest ``check.<name>(…)`` in this kernel (a challenge): the facts of
    ``details["challenge"]`` — the speed beside both anchors and the lab's steps, the position
    and tier, the hot loop's vector width and lanes, the share of the lab's roof, the threads —
    and where to look next. Before the check ran: one locked line saying so."""
    from .framework import last
    r = last(name)
    if r is None:
        return Feedback(f"🔒 This cell shows your kernel's feedback once `check.{name}` has run "
                        "in this notebook: run the check cell above, then this cell again.")
    return Feedback(feedback_text(r))


def feedback_text(r) -> str:
    """Markdown of one challenge result (a :class:`~labkit.check.result.CheckResult`)."""
    mark = "✔" if r.passed else "✘"
    head = f"**{mark} `{r.name}`: {r.verdict} — {r.points:g} / {r.max_points:g} points.**"
    d = (r.details or {}).get("challenge")
    if not isinstance(d, dict):
        return (f"{head} The check stopped before timing your function: the message above says "
                "why. Fix that first; the speed feedback follows once it is correct and your "
                "own code.")
    if d.get("unchanged"):
        return (f"{head} This is still the starting point as the notebook gives it: change it, "
                "then run the check again (the rules above say what is allowed; the lab's "
                "sections are the steps).")
    rows = [("your speed ÷ labkit's kernel's (the leaderboard's number)",
             f"{_x(d.get('ratio'))} (interval {_x(d.get('ratio_low'))} – "
             f"{_x(d.get('ratio_high'))})"),
            ("your speed ÷ the starting point's", _x(d.get("vs_start"))),
            ("labkit's kernel ÷ the starting point (the scale)", _x(d.get("scale"))),
            ("position: 0 = the starting point, 1 = labkit's kernel",
             f"{d.get('position', float('nan')):.2f} (interval {d.get('position_low', 0):.2f} – "
             f"{d.get('position_high', 0):.2f}, {d.get('rounds', 0)} rounds)")]
    tier = d.get("tier")
    if tier is None:
        rows.append(("tier", "undecided: the machine was too busy to place your kernel"))
    else:
        k = sum(1 for _, share in TIERS if share <= tier + 1e-9)
        nxt = (f"; {describe_tier(k + 1)} from position {TIERS[k][0]:g}"
               if k < len(TIERS) else "")
        said = "" if d.get("judged", True) else (
            " on this run — reported only (LABKIT_SPEED=report): the points do not depend on it")
        rows.append(("tier", f"{describe_tier(k)}{said}{nxt}"))
    loop = hot_loop(d)
    if loop is not None:
        rows.append(("the hot loop", loop))
    if d.get("roof_share") is not None:
        rows.append((f"share of {d.get('roof', 'the roof')}", f"{d['roof_share']:.0%}"))
    rows.append(("threads", f"{d.get('threads', 1)}" + (f" ({d['threads_note']})"
                                                         if d.get("threads_note") else "")))
    for step, ratio in (d.get("steps") or {}).items():
        rows.append((f"the lab's `{step}`: its time ÷ yours (best of three)", _x(ratio)))
    table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    nxt = _next_steps(d)
    return head + "\n\n" + table + ("\n\n" + "\n".join(f"* {t}" for t in nxt) if nxt else "")


def _next_steps(d: dict) -> list[str]:
    """Where to look next, from facts that are not measured (the code's vectors, this CPU's)."""
    out = []
    bits, lanes, lane_type = d.get("vector_bits"), d.get("lanes"), d.get("lane_type")
    try:
        from .gates import native_bits, native_lanes
        native = native_bits()
        most = native_lanes(lane_type) if lane_type else None
    except Exception:  # noqa: BLE001 - feedback only
        native, most = None, None
    if bits == 0:
        out.append("Your hot loop is scalar: the lab's steps that put independent work into "
                   "SIMD lanes are the next thing to apply.")
    elif bits and native and bits < native:
        out.append(f"Your hot loop's widest vectors are {bits}-bit; numba emits {native}-bit "
                   "vectors for plain loops on this CPU: a loop it can vectorise whole (no "
                   "branch, no call, unit stride) fills them.")
    elif lanes and most and lanes < most:
        out.append(f"Your hot loop holds {lanes} {lane_type} lanes per vector; this CPU's "
                   f"{native}-bit vectors hold {most}: a narrower element type gives more.")
    if d.get("threads_note"):
        out.append("Threads do not count here: the check runs one thread (the rules above).")
    return out

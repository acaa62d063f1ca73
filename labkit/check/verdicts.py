"""A speed gate's verdict from its measurement (:func:`labkit.check.speed.speed_gate`): passed
and noted in the check's message, or the failure — ``slower`` / ``no change`` / ``not fast
enough`` / ``inconclusive`` — in words that agree with the numbers printed
(:mod:`labkit.check.ratios`), beside labkit's own answer when the machine could not show the
whole effect.
"""
from __future__ import annotations

from .framework import note
from .ratios import (Measurement, _against_target, _at, _clears, _describe, _faster, _r2,
                     _verdict)
from .result import CheckFailure


#: When labkit's own answer misses a gate's target in the same rounds as the student (a loaded
#: or throttled machine, another CPU), the student passes at this share of the answer's speed.
ANSWER_SHARE = 0.85


def _judge_beside_answer(m: Measurement, need: float, vs: str, share: float,
                         ma: Measurement) -> float:
    """The verdict of a student below ``need`` beside an answer that did not clear it either
    (see :func:`speed_gate`): passed (noted) at ≥ :data:`ANSWER_SHARE` of the answer's speed
    when both beat ``vs``, else a failure."""
    ratio = m.ratio
    text = _describe(ratio, vs, m.low, m.high)
    head = _against_target(text, m, need, f"{len(m.ratios)} interleaved rounds")
    ans = (f"{_describe(ma.ratio, vs, ma.low, ma.high)}, interval "
           f"[{ma.low:.2f}, {ma.high:.2f}]×")
    answer_part = (f"labkit's own answer did not clear it either in the same rounds ({ans}: "
                   "this machine cannot show the whole effect right now, loaded or "
                   "throttled)")
    share_part = f"yours runs at {share:.0%} of the answer's speed"
    if share < ANSWER_SHARE:
        raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                           f"{head} — {answer_part}: {share_part}, need ≥ "
                           f"{ANSWER_SHARE:.0%} of it")
    if not _faster(ma.ratio, ma.low):
        raise CheckFailure("inconclusive",
                           f"{head} — and labkit's own answer was not faster than {vs} "
                           f"beyond the noise in the same rounds ({ans}): here it cannot "
                           "show the technique's effect, so matching it proves nothing; run "
                           "the check again on a quieter machine")
    if _faster(ratio, m.low):
        note(f"{head} — but {answer_part}: {share_part}")
        return ratio
    # at the answer's share, but not shown faster than the baseline itself: a verdict
    # when its interval lies at or below 1× (or reads 1.0×), inconclusive when it straddles
    if not _r2(m.low) <= 1 < _r2(m.high):
        raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                           f"{head} — {answer_part}; {share_part}, but matching the answer "
                           f"counts only for a kernel faster than {vs} itself, and yours "
                           "is not")
    raise CheckFailure("inconclusive",
                       f"{head} — {answer_part}; {share_part}, but your own interval "
                       f"reaches 1× {vs}: these rounds do not show yours faster than it, "
                       "and matching the answer counts only for a kernel that is; run the "
                       "check again on a quieter machine")


def _judge(m: Measurement, need: float, vs: str, enforce: bool) -> float:
    """The verdict against ``need``: noted when reported only or passed, else ``slower`` /
    ``no change`` / ``not fast enough`` below it, ``inconclusive`` while it straddles."""
    ratio = m.ratio
    text = _describe(ratio, vs, m.low, m.high)
    interval = (f"[{_at(m.low, need)}, {_at(m.high, need)}]× over {len(m.ratios)} "
                "interleaved rounds")
    if not enforce:
        if _clears(ratio, need):
            note(text)
        else:
            note(f"{text}, need ≥ {need:g}× — speed reported only (LABKIT_SPEED=report)")
        return ratio
    if _clears(m.low, need):
        note(text)
        return ratio
    if not _clears(m.high, need):
        raise CheckFailure(_verdict(ratio, need, m.low, m.high),
                           f"{text} (interval {interval}), need ≥ {need:g}×")
    raise CheckFailure("inconclusive",
                       f"{text}, interval {interval} straddles the {need:g}× threshold — the "
                       "machine is too noisy to decide; run the check again")

"""Tiered hints for exercises: concept → approach → near-code, one tier at a time.

A notebook's exercise stub carries the first tier only (in its ``raise NotImplementedError``);
the later tiers are revealed on demand, so a student who is stuck gets the *next* step, not the
answer::

    from labkit import hints
    hints.next("colsum")          # shows the next tier not yet seen in this session
    hints.show("colsum", 2)       # a given tier
    hints.tiers("colsum")         # how many there are

A lab defines its hints next to its checks (``labkit/<lab>/checks.py``)::

    hints.define("colsum",
                 concept="A C-ordered matrix stores rows contiguously …",
                 approach="Put the loop over rows outside …",
                 near_code="for i in range(n): for j in range(m): out[j] += …")

and a failing check names the next hint with :func:`pointer` ("stuck? `hints.next('colsum')`
shows hint 2 of 3: the approach"). This module imports no part of ``labkit.check``: the check
hands it the failed result's exercise name, and the labs' hints are loaded through
:func:`labkit.registry.load_checks`.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

__all__ = ["TIER_NAMES", "Hints", "define", "get", "tiers", "show", "next", "seen", "pointer",
           "reset", "names"]

TIER_NAMES = ("concept", "approach", "near-code")

_HINTS: dict[str, "Hints"] = {}
_SEEN: dict[str, int] = {}          # exercise → highest tier shown in this process


@dataclass(frozen=True)
class Hints:
    """The hint tiers of one exercise (1-based tiers: 1 concept, 2 approach, 3 near-code)."""

    exercise: str
    texts: tuple[str, ...] = field(default_factory=tuple)

    def tier(self, k: int) -> "HintText":
        if not 1 <= k <= len(self.texts):
            raise ValueError(f"exercise {self.exercise!r} has hints 1…{len(self.texts)}, "
                             f"not {k}")
        return HintText(self.exercise, k, len(self.texts), self.texts[k - 1])


@dataclass(frozen=True)
class HintText:
    """One revealed hint; shows as a line in a terminal and a small box in Jupyter."""

    exercise: str
    tier: int
    of: int
    text: str

    @property
    def label(self) -> str:
        name = TIER_NAMES[self.tier - 1] if self.tier <= len(TIER_NAMES) else f"tier {self.tier}"
        return f"hint {self.tier} of {self.of} ({name})"

    def __str__(self) -> str:
        more = (f" — `hints.next({self.exercise!r})` for hint {self.tier + 1}"
                if self.tier < self.of else " — that was the last hint")
        return f"💡 {self.exercise}, {self.label}: {self.text}{more}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        more = (f"<code>hints.next({self.exercise!r})</code> for hint {self.tier + 1}"
                if self.tier < self.of else "that was the last hint")
        return (f"<div style='border-left:4px solid #f0b400;padding:4px 10px;margin:4px 0'>"
                f"<b>💡 {html.escape(self.exercise)} — {html.escape(self.label)}</b><br>"
                f"{html.escape(self.text)}<br><span style='color:#777'>{more}</span></div>")


def define(exercise: str, concept: str, approach: str | None = None,
           near_code: str | None = None, *more: str) -> Hints:
    """Register the tiers of ``exercise`` (at least the concept); returns them."""
    if not isinstance(exercise, str) or not exercise.isidentifier():
        raise ValueError(f"exercise must be an exercise name like 'colsum', got {exercise!r}")
    texts = tuple(t for t in (concept, approach, near_code, *more) if t is not None)
    for t in texts:
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"hints for {exercise!r} must be non-empty strings, got {t!r}")
    h = Hints(exercise, texts)
    _HINTS[exercise] = h
    return h


def _load() -> None:
    # hints sit beside the checks; importing the labs' check modules (the registry) defines them
    try:
        from labkit import registry
        registry.load_checks()
    except Exception:  # noqa: BLE001 - hints defined so far are still usable
        pass


def get(exercise: str) -> Hints:
    """The hints of ``exercise``; KeyError naming the exercises that have hints."""
    if exercise not in _HINTS:
        _load()
    if exercise not in _HINTS:
        raise KeyError(f"no hints for {exercise!r}; exercises with hints: "
                       f"{', '.join(sorted(_HINTS)) or 'none'}")
    return _HINTS[exercise]


def names() -> list[str]:
    _load()
    return sorted(_HINTS)


def tiers(exercise: str) -> int:
    return len(get(exercise).texts)


def seen(exercise: str) -> int:
    """The highest tier shown for ``exercise`` in this process (the stub's counts as 1)."""
    return max(1, _SEEN.get(exercise, 1))


def show(exercise: str, tier: int) -> HintText:
    """Hint ``tier`` (1-based) of ``exercise``; remembers it as seen."""
    h = get(exercise).tier(int(tier))
    _SEEN[exercise] = max(seen(exercise), h.tier)
    return h


def next(exercise: str) -> HintText:  # noqa: A001 - the word a student types
    """The next tier after the highest one seen (the stub shows tier 1, so this starts at 2);
    after the last one it shows the last one again."""
    return show(exercise, min(seen(exercise) + 1, tiers(exercise)))


def pointer(exercise: str) -> str:
    """The sentence a failing check appends: where the next hint is, or '' if none defined."""
    if exercise not in _HINTS:
        _load()                  # the grader asks before anything in its process loaded them
    if exercise not in _HINTS:
        return ""
    n, k = tiers(exercise), min(seen(exercise) + 1, tiers(exercise))
    if seen(exercise) >= n:
        return ""
    name = TIER_NAMES[k - 1] if k <= len(TIER_NAMES) else f"tier {k}"
    return f"stuck? hints.next({exercise!r}) shows hint {k} of {n} ({name})"


def reset(exercise: str | None = None) -> None:
    """Forget which tiers were seen (all exercises, or one)."""
    if exercise is None:
        _SEEN.clear()
    else:
        _SEEN.pop(exercise, None)

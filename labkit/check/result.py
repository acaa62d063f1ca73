"""The outcome of a check: the fixed set of verdicts, :class:`CheckResult`, :class:`CheckFailure`."""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field

__all__ = ["VERDICTS", "CheckResult", "CheckFailure", "MAX_MESSAGE"]

#: Every verdict a check can give, in the order a student fixes them.
VERDICTS = ("not implemented", "error", "wrong", "uses labkit's answer", "not vectorised",
            "technique missing", "slower", "no change", "not fast enough", "inconclusive",
            "passed")

MAX_MESSAGE = 600


@dataclass
class CheckResult:
    """The outcome of one exercise check: verdict, points and a one-line message."""

    name: str
    passed: bool
    points: float
    max_points: float
    verdict: str
    message: str
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        mark = "✔" if self.passed else "✘"
        return f"{mark} {self.name}: {self.verdict} — {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        ok = self.passed
        colour, bg = ("#1a7f37", "#e8f5e9") if ok else ("#b3261e", "#fdecea")
        mark = "✔" if ok else "✘"
        pts = f"{self.points:g}/{self.max_points:g} pt"
        return (
            f'<div class="labkit-check" data-passed="{str(ok).lower()}" '
            f'style="border-left:4px solid {colour};background:{bg};padding:6px 10px;'
            f'margin:4px 0;font-family:sans-serif;">'
            f'<b style="color:{colour}">{mark} {html.escape(self.name)}: '
            f'{html.escape(self.verdict)}</b> — {html.escape(self.message)}'
            f'<span style="float:right;color:#555">{pts}</span></div>'
        )

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Under nbgrader (``NBGRADER_EXECUTION``) the plain text is the points — nbgrader reads a
        grade cell's numeric output as partial credit — while the HTML still shows the verdict."""
        import os
        plain = f"{self.points:g}" if os.environ.get("NBGRADER_EXECUTION") else str(self)
        return {"text/plain": plain, "text/html": self._repr_html_()}

    def to_dict(self) -> dict:
        """Plain-JSON form (used by the grader)."""
        d = asdict(self)
        d["details"] = json.loads(json.dumps(d["details"], default=str))
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "CheckResult":
        return cls(name=str(d["name"]), passed=bool(d["passed"]), points=float(d["points"]),
                   max_points=float(d["max_points"]), verdict=str(d["verdict"]),
                   message=str(d["message"]), details=dict(d.get("details") or {}))


class CheckFailure(Exception):
    """Raised inside a check body to end it with a given verdict and message."""

    def __init__(self, verdict: str, message: str, details: dict | None = None):
        if verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {verdict!r}; use one of {VERDICTS}")
        super().__init__(message)
        self.verdict = verdict
        self.message = message
        self.details = dict(details or {})   # merged into the result's details

"""labkit's own answer clears every speed gate on the host the tests run on (no escape hatch passes
a busy machine, so the answer must earn its pass): each check that judges a speed (its body calls
``speed_gate`` or reads ``speed_enforced``) runs on its reference solution — the exercise cell of
``solutions/NN_name.md``, as ``python -m labkit.check.falsefail`` loads it — through
``check.run_source`` with speed enforced, as when grading. It must pass on its own measurement:
never ``slower`` / ``no change`` / ``not fast enough``, never a pass only beside labkit's answer
(the answer itself missing the target), never ``inconclusive`` because labkit's answer is no faster
than the baseline. ``inconclusive`` is accepted only for a machine too busy or too noisy to decide
(or with one thread), after a second try. A reference answer below its own gate is a labkit bug
(popcount on Zen 4 was 0.94× the byte table it had to beat by 1.2×).

Full tier: the default tier proves each check's logic on fake students with speed reported
(``tests/labs/*``) and the gate's arithmetic on a virtual clock
(``tests/test_check_speed_beside.py``); nbval runs the same solutions' checks strictly."""
from __future__ import annotations

import inspect
import re
import warnings

import pytest

from labkit import check
from labkit.check.falsefail import solutions

#: the reasons an `inconclusive` may give that are the machine's, not the answer's
BUSY = re.compile(r"too (?:busy|noisy)|one thread here")


def _speed_gated() -> list:
    out = []
    for s in solutions():
        body = inspect.getsource(check.get(s.name).body)
        if "speed_gate(" in body or "speed_enforced(" in body:
            out.append(s)
    return out


GATED = _speed_gated()


def _problem(r) -> str | None:
    """Why ``r`` (a reference solution's result) does not clear its gate, or None."""
    d = r.details or {}
    if r.passed:
        if "speed_share" in d:            # passed at a share of labkit's answer: it missed
            return (f"passed only beside labkit's answer ({d.get('speed_answer_ratio', 0):.2f}×, "
                    f"need {d.get('speed_need')}): the answer misses its own target here")
        return None
    if r.verdict == "inconclusive" and BUSY.search(r.message) and "not faster than" not in \
            r.message:
        return "busy"
    return f"{r.verdict}: {r.message}"


@pytest.mark.full
def test_every_speed_gated_exercise_is_found():
    names = {s.name for s in GATED}
    # one per lab at least (the labs' timed exercises; a lab without one would need a reason)
    assert {s.lab for s in GATED} >= {"lesson00", "alignment", "bspline", "pcc", "epistasis"}, names
    assert {"popcount", "soa_inner_loop", "flat_tiles"} <= names, names


@pytest.mark.full
@pytest.mark.parametrize("sol", GATED, ids=[s.name for s in GATED])
def test_reference_answer_clears_its_speed_gate(sol, monkeypatch):
    monkeypatch.delenv("LABKIT_SPEED", raising=False)          # enforced, as when grading
    monkeypatch.delenv("LABKIT_CHECK_STRICT", raising=False)
    why = None
    for _ in range(2):                     # a second try: one transient burst of other work
        r = check.run_source(sol.name, sol.source, sol.imports, function=sol.function,
                             constants=sol.constants)
        why = _problem(r)
        if why is None:
            return
    if why == "busy":
        warnings.warn(f"{sol.name}: inconclusive twice, the machine too busy to decide: {r}")
        return
    pytest.fail(f"labkit's answer to {sol.name} ({sol.lab}) does not clear its gate on this "
                f"host: {why}")

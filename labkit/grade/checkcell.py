"""The grader's check of one exercise — the only place grading calls ``labkit.check``.

Three parts, kept together so that switching grading to another check runner changes this module
only: :func:`_resolve_modules` (in the grader's trusted process: which module registers each
exercise), :func:`_check_cell_source` (the cell the kernel runs instead of the submitted check
cell: a fresh ``labkit.check`` from disk, ``check.run(name, fn)``, one signed result line) and
:func:`_parse_result` (reading that line back, only with the cell's nonce and key)."""
from __future__ import annotations

import hashlib
import hmac
import importlib
import json
from typing import Any

from .notebooks import Canonical, ExerciseSpec

__all__: list[str] = []


def _resolve_modules(canon: Canonical, exercise_modules=()) -> None:
    """Find (in this trusted process) which module registers each exercise."""
    try:
        for mod in exercise_modules:
            importlib.import_module(mod)
        from labkit import check
    except Exception as e:  # noqa: BLE001 - say which module, not a traceback
        raise ValueError(f"cannot import the exercise modules for {canon.name}: "
                         f"{type(e).__name__}: {e}") from None

    for ex in canon.exercises:
        if ex.module:
            continue
        try:
            ex.module = check.get(ex.name).module
        except ImportError as e:
            raise ValueError(f"{canon.name}: importing labkit's lab modules to find exercise "
                             f"{ex.name!r} failed: {e}") from None
        except AttributeError as e:
            raise ValueError(f"{canon.name}: its check cell calls check.{ex.name}, but no module "
                             f"registers that exercise ({e}); list the lab in "
                             "labkit.registry (its checks.py registers the exercises) or pass "
                             "--exercise-module MODULE") from None


def _check_cell_source(ex: ExerciseSpec, nonce: str, key: str, seed: int) -> str:
    roots = sorted({"labkit", (ex.module or "labkit").split(".")[0]})
    extra = "".join(f", {a}" for a in ex.extra_src)
    fn = f"_labkit_grade_{nonce[:12]}"
    return f'''# labkit grader: check-{ex.name} (written by `labkit grade`; the submitted cell is unused)
def {fn}():
    import sys as _sys
    for _m in [m for m in list(_sys.modules) if m.split(".")[0] in {roots!r}]:
        _sys.modules.pop(_m, None)
    import hashlib as _hashlib, hmac as _hmac, importlib as _il, json as _json, os as _os
    for _k in [k for k in _os.environ if k.startswith("LABKIT_")]:
        del _os.environ[_k]
    _os.environ["LABKIT_GRADING"] = "1"
    _os.environ["LABKIT_SEED"] = "{seed}"
    try:
        _check = _il.import_module("labkit.check")
        _il.import_module({ex.module or "labkit.check"!r})
        try:
            _fn = ({ex.fn_src})
        except NameError as _e:
            _res = {{"name": {ex.name!r}, "passed": False, "points": 0.0, "max_points": 0.0,
                    "verdict": "error", "details": {{}},
                    "message": "%s — did the exercise cell run?" % (_e,)}}
        else:
            _res = _check.run({ex.name!r}, _fn{extra}).to_dict()
    except KeyboardInterrupt:
        raise
    except BaseException as _e:
        _res = {{"name": {ex.name!r}, "passed": False, "points": 0.0, "max_points": 0.0,
                "verdict": "error", "details": {{}},
                "message": "the check itself failed: %s: %s" % (type(_e).__name__, _e)}}
    finally:
        _os.environ.pop("LABKIT_SEED", None)
    _payload = _json.dumps(_res, default=str)
    _mac = _hmac.new({key!r}.encode(), _payload.encode(), _hashlib.sha256).hexdigest()
    _sys.stdout.flush()
    _sys.stdout.write("{nonce} " + _mac + " " + _payload + "\\n")
    _sys.stdout.flush()
{fn}()
del {fn}'''


def _parse_result(cell, plan: Any) -> dict | None:
    """The verified result of the check cell ``cell`` (its ``plan``: a ``build._Plan`` with the
    exercise, nonce and key), or None."""
    text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    for line in text.splitlines():
        if not line.startswith(plan.nonce + " "):
            continue
        parts = line.split(" ", 2)
        if len(parts) != 3:
            continue
        mac = hmac.new(plan.key.encode(), parts[2].encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, parts[1]):
            continue
        try:
            res = json.loads(parts[2])
        except json.JSONDecodeError:
            continue
        if isinstance(res, dict) and res.get("name") == plan.exercise:
            return res
    return None

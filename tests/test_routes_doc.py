"""docs/routes.md names only what exists: every `path.py:function` and `module.name` it cites
(a module by its file name under labkit/, then attributes) resolves in this checkout, so a
refactor that moves or renames a step on a route fails here until the map follows it."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "routes.md"

#: `labkit/check/runner.py:run_function`, `labkit/grade/_boot.py:main`
_PATH = re.compile(r"^(labkit/[\w/]+)\.py:([A-Za-z_][\w.]*)$")
#: `runner.Worker.request`, `framework._load_all` — a labkit module's file name, then attributes
_DOTTED = re.compile(r"^([a-z_][a-z0-9_]*)\.([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)$")


def _modules_by_stem() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in (ROOT / "labkit").rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.setdefault(parts[-1], []).append(".".join(parts))
    return out


def _resolves(module: str, chain: str) -> bool:
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return False
    for name in chain.split("."):
        if not hasattr(obj, name):
            return False
        obj = getattr(obj, name)
    return True


def test_every_named_step_exists():
    stems = _modules_by_stem()
    tokens = set(re.findall(r"`([^`\s]+)`", DOC.read_text(encoding="utf-8")))
    checked, missing = 0, []
    for tok in sorted(tokens):
        tok = tok.rstrip("()")
        m = _PATH.match(tok)
        if m:
            checked += 1
            if not _resolves(m.group(1).replace("/", "."), m.group(2)):
                missing.append(tok)
            continue
        m = _DOTTED.match(tok)
        if m and m.group(1) in stems:
            checked += 1
            if not any(_resolves(mod, m.group(2)) for mod in stems[m.group(1)]):
                missing.append(tok)
    assert checked > 100, checked          # the map is read, not skipped
    assert not missing, f"docs/routes.md names what does not exist: {missing}"

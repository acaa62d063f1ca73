"""Tamper detection: a sha256 per file that grading trusts, taken before the batch and
compared after each notebook."""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

__all__: list[str] = []

_LABKIT = Path(__file__).resolve().parent.parent


def _files_of(path: Path) -> list[Path]:
    """A module's file, or every ``*.py`` of a package (given its ``__init__.py`` or folder)."""
    if path.is_dir():
        path = path / "__init__.py"
    if path.name == "__init__.py":
        return sorted(p for p in path.parent.rglob("*.py") if "__pycache__" not in p.parts)
    return [path]


def _package_digest(modules=()) -> dict[str, str]:
    """sha256 per file that grading trusts (labkit's ``__init__``, ``labkit.check``,
    ``labkit.grade`` and the modules registering the exercises — for ``labkit.<lab>.checks``
    every file of the lab's package): detects a submission editing them on disk."""
    check = _LABKIT / "check"        # the package if there is one (Python imports it first)
    files = [_LABKIT / "__init__.py"]
    files += _files_of(check if (check / "__init__.py").is_file() else _LABKIT / "check.py")
    files += _files_of(_LABKIT / "grade")
    for mod in sorted(set(modules)):
        parts = mod.split(".")
        if parts[0] == "labkit" and len(parts) > 2:    # labkit.<lab>.checks: the whole lab package
            mod = ".".join(parts[:2])
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec and spec.origin and spec.origin.endswith(".py"):
            files += _files_of(Path(spec.origin))
    out = {}
    for f in dict.fromkeys(files):
        try:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
        except OSError:
            out[str(f)] = "<unreadable>"
    return out

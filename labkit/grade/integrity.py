"""Tamper detection: every file of the installed ``labkit`` package (all of them, any
extension, ``__pycache__/*.pyc`` included; not numba's ``*.nbi``/``*.nbc`` cache, which grading
never reads) and of the extra exercise modules, hashed before the batch
and compared before and after each submission. A change is undone from the snapshot (the bytes
of every file are kept), so the next student is graded by an intact labkit."""
from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

__all__ = ["Snapshot"]

_LABKIT = Path(__file__).resolve().parent.parent


def _module_root(mod: str) -> Path | None:
    """The file (or package folder) of module ``mod``, without importing it."""
    try:
        spec = importlib.util.find_spec(mod)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    origin = Path(spec.origin).resolve()
    return origin.parent if origin.name == "__init__.py" else origin


# numba's on-disk cache of labkit's own kernels: written by anyone who runs them, never read
# by grading (its workers compile into a private NUMBA_CACHE_DIR), so not hashed
_NOT_READ = (".nbi", ".nbc")


def _walk(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if (p.is_file() or p.is_symlink())
                  and not (p.suffix in _NOT_READ and p.parent.name == "__pycache__"))


def trusted_roots(modules=()) -> list[Path]:
    """labkit's folder and the files/folders of ``modules`` that live outside it."""
    roots = [_LABKIT]
    for mod in sorted(set(modules)):
        r = _module_root(mod)
        if r is not None and _LABKIT not in r.parents and r != _LABKIT and r not in roots:
            roots.append(r)
    return roots


class Snapshot:
    """The bytes and sha256 of every trusted file, taken once."""

    def __init__(self, modules=(), roots=None):
        self.roots = list(roots) if roots is not None else trusted_roots(modules)
        self.files: dict[str, bytes] = {}
        for root in self.roots:
            for f in _walk(root):
                try:
                    self.files[str(f)] = f.read_bytes()
                except OSError:
                    self.files[str(f)] = b"<unreadable>"
        self.hashes = {k: hashlib.sha256(v).hexdigest() for k, v in self.files.items()}
        self.digest = hashlib.sha256("".join(f"{k}\0{v}\n" for k, v in
                                             sorted(self.hashes.items())).encode()).hexdigest()

    def rebase(self) -> None:
        """Take the current files as the new reference (after a change was reported)."""
        self.__init__(roots=self.roots)

    def changes(self) -> list[str]:
        """Files changed, added or removed since the snapshot (sorted)."""
        now: dict[str, str] = {}
        for root in self.roots:
            for f in _walk(root):
                try:
                    now[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
                except OSError:
                    now[str(f)] = "<unreadable>"
        return sorted(set(now) ^ set(self.hashes)
                      | {f for f in now if f in self.hashes and self.hashes[f] != now[f]})

    def restore(self, changed=None) -> list[str]:
        """Put the snapshot back (changed files rewritten, added ones removed); returns what
        could not be restored."""
        failed = []
        for f in changed if changed is not None else self.changes():
            p = Path(f)
            try:
                if f in self.files:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    if p.is_symlink():
                        p.unlink()
                    p.write_bytes(self.files[f])
                elif p.is_file() or p.is_symlink():
                    p.unlink()
            except OSError:
                failed.append(f)
        return failed


"""numba's cache of labkit's kernels kept between test runs, across clones of the same labkit.

numba caches a compiled kernel next to its source (``labkit/**/__pycache__``, ignored by git),
so every run on a fresh clone compiled every kernel again (≈ 130 s of ``make test``'s wall on 2
cores). An index is valid for its source file's bytes (numba stamps it with their sha256) and
labkit's own cache key holds a digest of the sources a kernel can depend on (``labkit/jit.py``,
``sources_digest``); this store adds a key over all of labkit besides:

* ``save`` (after a test run): every fresh index of labkit's ``__pycache__`` folders, with the
  compiled files it lists, is copied into ``$XDG_CACHE_HOME/labkit/test-numba/<key>/`` (default
  ``~/.cache``). A lab's kernels (``labkit/<lab>/``) are kept under the lab's own key, as
  ``labkit warm`` keys its stamps (``labkit.warm.lab_key``): a digest of every file of labkit/
  except the other labs' packages (caches excluded), numba's, llvmlite's and Python's versions
  and the CPU numba compiles for. The kernels of labkit's shared modules (``labkit/*.py``,
  ``check/``, ``hardware/``, …) are kept under a key of all of labkit but the labs. So a change
  to one lab leaves the other labs' kernels restorable: only that lab compiles afresh. The two
  most recent keys of each are kept.
* ``restore`` (before a test run): for each key of this checkout found in the store, each stored
  index this checkout does not have is copied into its ``__pycache__``, with its compiled files.

Entries for other targets (``NUMBA_CPU_NAME=haswell`` in the host matrix) are kept apart by
numba's own index key, so one store serves every tier. Nothing here changes what a test
proves; a changed file changes the keys it is part of, and what they key compiles afresh.

    python tools/numba_keep.py restore|save [--store DIR]

Prints one line; never fails the build (exit 0), since a missing store only costs time.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "labkit"
KEEP = 2                                  # stored keys kept (the newest)


def store_root(store: str | None = None) -> Path:
    base = store or os.environ.get("LABKIT_TEST_NUMBA_STORE")
    if base:
        return Path(base)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "labkit" / "test-numba"


def key(package: Path = PACKAGE) -> str:
    """The key of the shared modules' kernels: a digest of labkit/'s files but its labs'
    packages (as ``labkit warm`` digests them: caches excluded), the compiler versions and the
    host CPU."""
    return keys(package)[""]


def _compilers() -> bytes:
    import llvmlite
    import llvmlite.binding as ll
    import numba
    return json.dumps([numba.__version__, llvmlite.__version__, sys.version,
                       ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten()]).encode()


def labs_of(package: Path = PACKAGE) -> tuple[str, ...]:
    """The lab packages of ``package`` whose kernels are kept under their own key: labkit's
    labs (``labkit.warm``) for labkit itself, else none."""
    if package.resolve() != PACKAGE.resolve():
        return ()
    from labkit.warm import _labs
    return tuple(_labs())


def keys(package: Path = PACKAGE, labs: tuple[str, ...] | None = None) -> dict[str, str]:
    """{lab: its key, "": the shared modules' key}: a lab's key digests every file of
    ``package`` except the other labs' packages (``labkit.warm.lab_key``'s rule), the shared
    modules' every file except the labs' packages (no shared kernel calls into a lab)."""
    from labkit.warm import _file_digests
    labs = labs_of(package) if labs is None else labs
    files = _file_digests(package)
    compilers = _compilers()
    out = {}
    for unit in ("", *labs):
        others = set(labs) - {unit}
        h = hashlib.sha256(json.dumps([f for f in files
                                       if f[0].split("/", 1)[0] not in others]).encode())
        h.update(compilers)
        if unit:
            h.update(f"lab {unit}".encode())
        out[unit] = h.hexdigest()[:32]
    return out


def _unit(rel: Path, labs: tuple[str, ...]) -> str:
    """The lab an index (relative to the package) belongs to, or "" (a shared module)."""
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in labs else ""


def _read_index(path: Path):
    """(numba's cache format version, stamp, overloads) of an index file, or None."""
    try:
        with open(path, "rb") as f:
            version = pickle.load(f)
            stamp, overloads = pickle.loads(f.read())
        return version, stamp, overloads
    except Exception:  # noqa: BLE001 - a torn or foreign file: not ours to keep
        return None


def _stamp(src: Path) -> bytes:
    """numba's source stamp (0.59 and later): the sha256 of the file's bytes."""
    return hashlib.sha256(src.read_bytes()).digest()


def _source(idx: Path) -> Path:
    """The source file of a numba index: ``<module>.<qualname>-<line>.pyXY.nbi`` beside it in
    ``__pycache__`` (a package's own functions: its ``__init__.py``)."""
    stem = idx.name.split(".", 1)[0]
    folder = idx.parent.parent
    own = folder / f"{stem}.py"
    return own if own.is_file() or folder.name != stem else folder / "__init__.py"


def _fresh_indexes(package: Path):
    """(index, its source file, its contents) for every index of labkit/ whose stamp is its
    source file's (numba would load it)."""
    for idx in package.rglob("__pycache__/*.nbi"):
        src = _source(idx)
        got = _read_index(idx)
        if got is not None and src.is_file() and got[1] == _stamp(src):
            yield idx, src, got


def save(store: Path, package: Path = PACKAGE, labs: tuple[str, ...] | None = None) -> str:
    labs = labs_of(package) if labs is None else labs
    ks = keys(package, labs)
    n = 0
    used = set()
    for idx, src, (version, stamp, overloads) in _fresh_indexes(package):
        rel = idx.relative_to(package)
        unit = _unit(rel, labs)
        dest = store / ks[unit]
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        for name in set(overloads.values()):
            data = idx.parent / name
            if data.is_file():
                shutil.copy2(data, out.parent / name)
        shutil.copy2(idx, out)
        n += 1
        used.add(unit)
    for unit in used:
        dest = store / ks[unit]
        (dest / UNIT).write_text(unit or ".", encoding="utf-8")
        os.utime(dest)
    if used:
        _prune(store)
    return (f"numba cache kept: {n} kernel indexes of this labkit under {len(used)} "
            f"key{'s' if len(used) != 1 else ''} in {store}")


#: The file naming a stored key's unit: a lab's name, or "." for labkit's shared modules (a
#: folder without it, from before the labs had keys of their own, counts as ".").
UNIT = "unit"


def _prune(store: Path) -> None:
    """Keep the :data:`KEEP` most recent keys of each unit."""
    by: dict[str, list[Path]] = {}
    for d in (d for d in store.iterdir() if d.is_dir()):
        try:
            unit = (d / UNIT).read_text(encoding="utf-8").strip() or "."
        except OSError:
            unit = "."
        by.setdefault(unit, []).append(d)
    for dirs in by.values():
        for old in sorted(dirs, key=lambda d: d.stat().st_mtime, reverse=True)[KEEP:]:
            shutil.rmtree(old, ignore_errors=True)


def restore(store: Path, package: Path = PACKAGE, labs: tuple[str, ...] | None = None) -> str:
    labs = labs_of(package) if labs is None else labs
    ks = keys(package, labs)
    found = [u for u in ks if (store / ks[u]).is_dir()]
    if not found:
        return (f"numba cache: none kept for this labkit ({ks[''][:12]}…) — the kernels compile "
                "as they are first called")
    n = skipped = 0
    for unit in found:
        src_root = store / ks[unit]
        for out in src_root.rglob("*.nbi"):
            idx = package / out.relative_to(src_root)
            if idx.exists():               # this checkout has its own: never overwritten
                skipped += 1
                continue
            got = _read_index(out)
            src = _source(idx)
            if got is None or not src.is_file() or got[1] != _stamp(src):
                continue
            idx.parent.mkdir(parents=True, exist_ok=True)
            for name in set(got[2].values()):
                data = out.parent / name
                if data.is_file():
                    shutil.copy2(data, idx.parent / name)
            shutil.copy2(out, idx)         # the index last: numba never sees it without its data
            n += 1
        os.utime(src_root)
    missing = [u for u in labs if u not in found]
    return (f"numba cache: {n} kernel indexes restored from {store}"
            + (f" ({skipped} already here)" if skipped else "")
            + (f"; none kept for {', '.join(missing)} (compiled as first called)"
               if missing else ""))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("restore", "save"))
    p.add_argument("--store", default=None,
                   help="folder of kept caches (default: LABKIT_TEST_NUMBA_STORE, else "
                        "$XDG_CACHE_HOME/labkit/test-numba)")
    ns = p.parse_args(argv)
    t0 = time.monotonic()
    try:
        store = store_root(ns.store)
        store.mkdir(parents=True, exist_ok=True)
        line = (restore if ns.action == "restore" else save)(store)
    except Exception as e:  # noqa: BLE001 - a cache, never a reason for a build to fail
        line = f"numba cache {ns.action} skipped: {type(e).__name__}: {e}"
    print(f"{line} ({time.monotonic() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

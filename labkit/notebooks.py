"""Notebooks as text: read the MyST sources, execute them, stamp and check the executed copies.

``solutions/NN_name.md`` (MyST Markdown, paired by jupytext) is the only source of a notebook.
``labkit solutions [NAME ...]`` (``make solutions``) executes it into ``solutions/NN_name.ipynb``
with nbclient — outputs kept, working directory ``solutions/``, ``LABKIT_CHECK_STRICT=1`` so a
failing check fails the build — and writes a stamp into the notebook metadata::

    "labkit": {"stamp": {"source": sha256 of the .md, "labkit": sha256 of labkit/,
                         "executed": ISO time}}

:func:`stale` compares a stamp with the files as they are now; ``tests/test_notebooks.py`` fails
on any stale stamp and names the command that fixes it.

Cell ids are derived from each cell's position and source (:func:`stable_ids`), so executing
twice, or releasing the student copies, does not churn ids that nothing else changed.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from labkit import registry

__all__ = ["ROOT", "SOLUTIONS", "FIX", "read_source", "stable_ids", "source_digest",
           "labkit_digest", "make_stamp", "stale", "resolve", "run", "execute",
           "untracked_package_files", "main"]

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
PACKAGE = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 900          # one cell, on a loaded 2-core machine (compilation included)
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".nbi", ".nbc")
# grading switches, and MPLBACKEND (Agg would leave the executed copy without its figures)
_NOT_HERE = ("LABKIT_GRADING", "LABKIT_RESULTS", "MPLBACKEND")
FIX = "make solutions (or: .venv/bin/labkit solutions {stem})"


def read_source(path: str | Path):
    """The notebook of a MyST source (``.md``) with stable cell ids; an ``.ipynb`` as is."""
    import jupytext

    path = Path(path)
    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    nb = jupytext.read(path, fmt="md:myst")
    stable_ids(nb)
    return nb


def stable_ids(nb) -> None:
    """Give every cell an id computed from its position and source (in place)."""
    for i, cell in enumerate(nb.cells):
        h = hashlib.sha1(f"{i}\0{cell.cell_type}\0{cell.source}".encode("utf-8")).hexdigest()
        cell["id"] = h[:12]


def source_digest(path: str | Path) -> str:
    """sha256 of the source file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def labkit_digest(package: str | Path | None = None) -> str:
    """sha256 over every file of the labkit package: sorted relative paths and contents
    (``__pycache__``, numba cache files and checkpoints excluded)."""
    package = Path(package) if package is not None else PACKAGE
    files = []
    for p in package.rglob("*"):
        rel = p.relative_to(package)
        if not p.is_file() or _SKIP_DIRS & set(rel.parts) or p.name.endswith(_SKIP_SUFFIXES):
            continue
        files.append((rel.as_posix(), p))
    h = hashlib.sha256()
    for rel, p in sorted(files):
        data = p.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode("utf-8"))
        h.update(data)
    return h.hexdigest()


def make_stamp(source: str | Path, package: str | Path | None = None) -> dict:
    """The stamp of an execution of ``source`` against ``package`` (default: labkit/), now."""
    return {"source": source_digest(source), "labkit": labkit_digest(package),
            "executed": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def stale(executed: str | Path, source: str | Path | None = None,
          package: str | Path | None = None) -> list[str]:
    """Why the executed notebook no longer matches its source or the library ([] if fresh)."""
    executed = Path(executed)
    source = Path(source) if source is not None else executed.with_suffix(".md")
    if not executed.exists():
        return [f"{executed.name} does not exist (never executed)"]
    nb = nbformat.read(executed, as_version=4)
    stamp = nb.metadata.get("labkit", {}).get("stamp")
    if not stamp:
        return [f"{executed.name} has no labkit stamp (not executed by `labkit solutions`)"]
    why = []
    if stamp.get("source") != source_digest(source):
        why.append(f"{source.name} changed since {executed.name} was executed "
                   f"({stamp.get('executed', '?')})")
    if stamp.get("labkit") != labkit_digest(package):
        why.append(f"labkit/ changed since {executed.name} was executed "
                   f"({stamp.get('executed', '?')})")
    return why


def resolve(names: list[str] | None, folder: Path = SOLUTIONS) -> list[Path]:
    """Source paths for notebook names (``01_alignment``, ``alignment``, ``1``, ``x.md``);
    all labs of the registry when ``names`` is empty."""
    if not names:
        return [ROOT / lab.source for lab in registry.LABS]
    out = []
    for name in names:
        stem = Path(name).stem if name.endswith((".md", ".ipynb")) else name
        if (folder / f"{stem}.md").exists():
            out.append(folder / f"{stem}.md")
            continue
        try:
            key = int(stem) if stem.isdigit() else stem
            out.append(folder / f"{registry.get(key).notebook}.md")
        except KeyError as e:
            raise KeyError(f"no notebook {name!r}; notebooks: "
                           + ", ".join(lab.notebook for lab in registry.LABS)) from e
    return out


def run(nb, folder: str | Path, *, timeout: int = CELL_TIMEOUT_S, kernel: str = "python3"):
    """Execute the notebook ``nb`` in place, in ``folder``, as the build executes a solution:
    ``LABKIT_CHECK_STRICT=1``, ``LABKIT_SPEED=report`` unless set otherwise, without the
    variables that do not belong here (``_NOT_HERE``); the environment is restored afterwards.
    An error in any cell, a failing check included, raises
    ``nbclient.exceptions.CellExecutionError``. Returns ``nb``."""
    from nbclient import NotebookClient

    saved = {k: os.environ.get(k) for k in ("LABKIT_CHECK_STRICT", "LABKIT_SPEED", *_NOT_HERE)}
    os.environ["LABKIT_CHECK_STRICT"] = "1"          # a failing check fails the build …
    os.environ.setdefault("LABKIT_SPEED", "report")  # … but speed gates report (as under nbval)
    for k in _NOT_HERE:
        os.environ.pop(k, None)
    try:
        NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=False,
                       store_widget_state=True,
                       resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def execute(source: str | Path, out: str | Path | None = None, *,
            timeout: int = CELL_TIMEOUT_S, kernel: str = "python3") -> Path:
    """Execute one MyST source into its ``.ipynb`` (outputs kept, stamped); return the path.

    Runs in the source's folder through :func:`run` (checks strict, speed reported), as the test
    suite's nbval run does: an error in any cell, a failing check included, raises
    ``nbclient.exceptions.CellExecutionError`` and nothing is written.
    """
    source = Path(source).resolve()
    out = Path(out) if out is not None else source.with_suffix(".ipynb")
    stamp = make_stamp(source)              # what the kernel is about to run against
    nb = run(read_source(source), source.parent, timeout=timeout, kernel=kernel)
    for cell in nb.cells:  # nbclient's timing metadata changes every run: keep diffs to outputs
        cell.metadata.pop("execution", None)
    nb.metadata.setdefault("labkit", {})["stamp"] = stamp
    nbformat.validate(nb)
    text = nbformat.writes(nb, version=4)
    out.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return out


def untracked_package_files(root: Path = ROOT) -> list[str]:
    """Files under labkit/ that git does not track (they count in the stamp, but a clean clone
    lacks them, so its stamps would be stale); [] outside a git checkout."""
    import subprocess

    try:
        out = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                              "--untracked-files=all", "--", "labkit"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    if out.returncode != 0:
        return []
    return [line[3:] for line in out.stdout.splitlines() if line.startswith("?? ")]


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit solutions [NAME ...] [--check]``."""
    p = argparse.ArgumentParser(
        prog="labkit solutions",
        description="Execute solutions/NN_name.md into solutions/NN_name.ipynb (outputs kept, "
                    "stamped with digests of the source and of labkit/). Checks run strictly.")
    p.add_argument("names", nargs="*", help="notebooks (01_alignment, alignment, 1); default: all")
    p.add_argument("--check", action="store_true",
                   help="execute nothing; exit 1 if any executed copy is stale")
    p.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds per cell")
    a = p.parse_args(argv)
    try:
        sources = resolve(a.names)
    except KeyError as e:
        print(f"labkit solutions: {e.args[0]}", file=sys.stderr)
        return 2
    if a.check:
        bad = 0
        for src in sources:
            why = stale(src.with_suffix(".ipynb"), src)
            bad += bool(why)
            status = "stale: " + "; ".join(why) if why else "up to date"
            print(f"solutions/{src.stem}.ipynb: {status}")
        if bad:
            print("fix: " + FIX.format(stem=" ".join(s.stem for s in sources)))
        return 1 if bad else 0
    from nbclient.exceptions import CellExecutionError

    stray = untracked_package_files()
    if stray:
        print("labkit solutions: warning: untracked files under labkit/ count in the stamp; "
              "commit or remove them, or a clean clone sees stale stamps: " + ", ".join(stray),
              file=sys.stderr)
    for src in sources:
        t0 = time.monotonic()
        print(f"executing solutions/{src.name} …", flush=True)
        try:
            out = execute(src, timeout=a.timeout)
        except CellExecutionError as e:
            print(f"labkit solutions: {src.name} failed; solutions/{src.stem}.ipynb not written\n"
                  f"{e}", file=sys.stderr)
            return 1
        print(f"wrote solutions/{out.name} ({time.monotonic() - t0:.0f} s)", flush=True)
    return 0

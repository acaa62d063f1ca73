"""Grade a folder of student notebooks headlessly: ``labkit grade DIR --out grades.csv``.

Each submission is matched to its canonical notebook in ``solutions/`` and the notebook that
actually runs is rebuilt from the canonical copy: every cell comes from the instructor's version
except the exercise cells (nbgrader ``solution: true``), which are the student's cells with the
same ``grade_id``, and the check cells, which are replaced by the grader's own code. That code
drops every ``labkit`` module from ``sys.modules`` and imports ``labkit.check`` afresh from disk
(so in-memory monkeypatching is undone), sets a fresh secret ``LABKIT_SEED``, runs
``check.run(name, fn)`` and prints one line ``<nonce> <hmac> <json>``; the grader reads that
line only from the same cell's outputs and only with that cell's nonce and key. Outputs,
check cells and metadata left in the submission are never trusted.

Every notebook runs in a fresh kernel in its own temporary directory with ``LABKIT_GRADING=1``,
per-cell and per-notebook timeouts and an address-space limit; timeouts interrupt the kernel
(restart if it does not answer), a dead kernel is restarted and the earlier cells replayed, and
the batch always goes on. See ``docs/grading.md`` for what this does and does not protect
against.
"""
from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = [
    "ExerciseSpec", "Canonical", "Submission", "GradeSettings", "parse_check_line",
    "load_canonical", "load_solutions", "find_submissions", "match_canonical",
    "build_notebook", "grade_notebook", "grade", "rows", "write_csv", "write_json",
    "summary", "main", "CSV_FIELDS",
]

CELL_TIMEOUT = 120.0
NOTEBOOK_TIMEOUT = 900.0
MEMORY_LIMIT = 8 << 30          # bytes of address space per kernel (0 = no limit)
MAX_MESSAGE = 500               # characters of a message kept in the CSV/JSON
MAX_CELL_OUTPUT = 200_000       # characters of output kept per cell (the rest is dropped)
MAX_RESTARTS = 3                # kernel restarts per notebook before the rest is "not run"
CSV_FIELDS = ("student", "notebook", "exercise", "points", "max_points", "verdict", "message",
              "flags")

_NN = re.compile(r"^(\d\d)_")


# ------------------------------------------------------------------ canonical notebooks
@dataclasses.dataclass
class ExerciseSpec:
    """One graded exercise of a canonical notebook (from its nbgrader metadata)."""

    name: str
    points: float
    check_index: int
    fn_src: str
    extra_src: list[str]
    solution_id: str | None = None
    module: str | None = None


@dataclasses.dataclass
class Canonical:
    """A canonical (solution) notebook and the exercises its check cells grade."""

    name: str
    path: Path
    nb: Any
    exercises: list[ExerciseSpec]

    @property
    def max_points(self) -> float:
        """Total points of the notebook."""
        return float(sum(e.points for e in self.exercises))


def _nbg(cell) -> dict:
    meta = cell.get("metadata") or {}
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def parse_check_line(source: str, where: str = "check cell") -> tuple[str, str, list[str]]:
    """A check cell's last line ``check.<name>(<fn>, …)`` → ``(name, fn source, extra)``."""
    lines = [ln for ln in source.strip().splitlines() if ln.strip() and
             not ln.strip().startswith("#")]
    if not lines:
        raise ValueError(f"{where} is empty; its last line must be `check.<name>(<function>)`")
    last = lines[-1].strip()
    try:
        node = ast.parse(last, mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"{where}: cannot parse last line {last!r} ({e.msg}); it must be "
                         "`check.<name>(<function>)`") from None
    ok = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    if ok and node.func.attr == "run" and node.args and isinstance(node.args[0], ast.Constant):
        name, args = str(node.args[0].value), node.args[1:]          # check.run("name", fn)
    elif ok:
        name, args = node.func.attr, node.args
    else:
        name, args = "", []
    base = node.func.value if ok else None
    base_ok = (isinstance(base, ast.Name) and base.id == "check") or (
        isinstance(base, ast.Attribute) and base.attr == "check")
    if not (ok and base_ok and args and name.isidentifier()):
        raise ValueError(f"{where}: last line {last!r} is not `check.<name>(<function>)`; "
                         "fix the solution notebook (see CONTRIBUTING.md)")
    return name, ast.unparse(args[0]), [ast.unparse(a) for a in args[1:]]


def load_canonical(path: str | Path) -> Canonical:
    """Read a solution notebook and list its exercises (check cells ``check-<name>``)."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    exercises: list[ExerciseSpec] = []
    solution_ids = {_nbg(c).get("grade_id") for c in nb.cells if _nbg(c).get("solution")}
    for i, cell in enumerate(nb.cells):
        nbg = _nbg(cell)
        if not (nbg.get("grade") and not nbg.get("solution") and cell.cell_type == "code"):
            continue
        gid = str(nbg.get("grade_id", ""))
        where = f"{path.name} cell {i} ({gid or 'no grade_id'})"
        name, fn_src, extra = parse_check_line(cell.source, where)
        if gid and gid != f"check-{name}":
            raise ValueError(f"{where}: grade_id {gid!r} does not match its call check.{name}; "
                             f"use grade_id 'check-{name}'")
        sol = f"ex-{name}"
        exercises.append(ExerciseSpec(name=name, points=float(nbg.get("points", 0) or 0),
                                      check_index=i, fn_src=fn_src, extra_src=extra,
                                      solution_id=sol if sol in solution_ids else None))
    return Canonical(name=path.name, path=path, nb=nb, exercises=exercises)


def load_solutions(folder: str | Path | None = None) -> dict[str, Canonical]:
    """All canonical notebooks of ``folder`` (default ``solutions/`` of the repo), by file name."""
    if folder is None:
        from labkit.release import ROOT
        folder = ROOT / "solutions"
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no solutions folder at {folder}; pass --solutions DIR")
    out = {p.name: load_canonical(p) for p in sorted(folder.glob("*.ipynb"))}
    if not out:
        raise FileNotFoundError(f"no *.ipynb in {folder}; pass --solutions DIR")
    return out


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
                             f"registers that exercise ({e}); add the lab module to "
                             "labkit.check.LAB_MODULES or pass --exercise-module MODULE") from None


# ------------------------------------------------------------------ submissions
@dataclasses.dataclass
class Submission:
    """One student notebook (or a student folder without any notebook: ``path`` is the folder)."""

    student: str
    path: Path
    rel: str


def find_submissions(folder: str | Path) -> list[Submission]:
    """``DIR/<student>.ipynb`` (student = file stem) and ``DIR/<student>/**/*.ipynb``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder of submissions")
    subs: list[Submission] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_file() and p.suffix == ".ipynb":
            subs.append(Submission(p.stem, p, p.name))
        elif p.is_dir():
            found = sorted(q for q in p.rglob("*.ipynb")
                           if not any(part.startswith(".") for part in q.relative_to(p).parts))
            if not found:
                subs.append(Submission(p.name, p, p.name + "/"))
            subs += [Submission(p.name, q, str(q.relative_to(folder))) for q in found]
    return subs


def _read_submission(path: Path):
    """The submission as a notebook node, or raise ValueError saying why it is unreadable."""
    import nbformat

    if path.is_dir():
        raise ValueError(f"no notebook (*.ipynb) in folder {path.name}/")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read the file: {e}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not a notebook: invalid JSON ({e})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("not a notebook: the JSON has no list of 'cells'")
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:  # noqa: BLE001 - any nbformat failure is "not a notebook"
        raise ValueError(f"not a notebook: {type(e).__name__}: {e}") from None
    for cell in nb.cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), str):
            raise ValueError("not a notebook: a cell has no text source")
    return nb


def match_canonical(nb, path: Path, canon: dict[str, Canonical]) -> Canonical | None:
    """The canonical notebook for a submission: metadata ``labkit.generated_from``, then the
    file name, then its ``NN_`` prefix, then the most shared grade ids; ``None`` if nothing fits."""
    if nb is not None:
        gen = ((nb.get("metadata") or {}).get("labkit") or {}).get("generated_from")
        if isinstance(gen, str) and Path(gen).name in canon:
            return canon[Path(gen).name]
    if path.name in canon:
        return canon[path.name]
    m = _NN.match(path.name)
    if m:
        hits = [c for n, c in canon.items() if n.startswith(m.group(1) + "_")]
        if len(hits) == 1:
            return hits[0]
    if nb is not None:
        ids = {_nbg(c).get("grade_id") for c in nb.cells} - {None, ""}
        best = max(canon.values(), key=lambda c: len(ids & {_nbg(x).get("grade_id")
                                                             for x in c.nb.cells}), default=None)
        if best is not None and ids & {_nbg(x).get("grade_id") for x in best.nb.cells}:
            return best
    if len(canon) == 1 and nb is None:
        return next(iter(canon.values()))
    return None


# ------------------------------------------------------------------ building the notebook
_FLAG_PATTERNS = [
    (r"get_ipython|\bIPython\b", "uses IPython internals"),
    (r"sys\.modules|importlib|__import__|\bbuiltins\b|__builtins__", "manipulates imports"),
    (r"labkit\.check|from\s+labkit\s+import\s+[^\n]*\bcheck\b|\bcheck\.\w+\s*=",
     "touches labkit.check"),
    (r"settrace|setprofile|_getframe|currentframe|gc\.get_objects|\bctypes\b",
     "introspects the interpreter"),
    (r"os\._exit|\bsignal\b|subprocess|os\.system|os\.kill", "controls processes/signals"),
    (r"sys\.(__)?stdout|sys\.displayhook|\bprint\s*=", "redirects output"),
    (r"LABKIT_", "reads labkit settings"),
    (r"labkit\.(alignment|bspline|pcc|epistasis|lesson00)|from\s+labkit\.\w+\s+import",
     "uses a labkit lab module (may call the reference kernel)"),
]


def _flags_for(source: str) -> list[str]:
    return [why for pat, why in _FLAG_PATTERNS if re.search(pat, source)]


def _code_lines(source: str) -> tuple[str, ...]:
    """A cell's code without comments, blank lines or formatting (what counts as an edit)."""
    try:
        return (ast.dump(ast.parse(source)),)
    except SyntaxError:
        return tuple(ln.strip() for ln in source.splitlines()
                     if ln.strip() and not ln.strip().startswith("#"))


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


@dataclasses.dataclass
class _Plan:
    kind: str                    # "code", "solution", "check", "skip"
    exercise: str | None = None
    nonce: str | None = None
    key: str | None = None
    seed: int | None = None


def build_notebook(canon: Canonical, student_nb, *, skip_tags=()) -> tuple[Any, list[_Plan], dict]:
    """The notebook to execute (canonical cells + student solution cells + grader checks), the
    plan per cell, and what is known before running: ``{"missing": {...}, "flags": {...}}``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}}
    student_cells: dict[str, Any] = {}
    flags: dict[str, list[str]] = {"": []}
    for c in student_nb.cells:
        gid = _nbg(c).get("grade_id")
        if gid:
            if gid in student_cells:
                flags[""].append(f"duplicate grade_id {gid} (the first cell is used)")
                continue
            student_cells[gid] = c
    ex_by_sol = {e.solution_id: e for e in canon.exercises if e.solution_id}
    ex_by_check = {e.check_index: e for e in canon.exercises}
    missing: dict[str, str] = {}
    plan: list[_Plan] = []
    from labkit.release import strip_source

    for i, cell in enumerate(canon.nb.cells):
        nbg = _nbg(cell)
        gid = nbg.get("grade_id")
        src = cell.source
        if cell.cell_type != "code":
            nb.cells.append(nbformat.v4.new_markdown_cell(src) if cell.cell_type == "markdown"
                            else nbformat.v4.new_raw_cell(src))
            plan.append(_Plan("skip"))
            continue
        if i in ex_by_check:
            ex = ex_by_check[i]
            nonce, key, seed = secrets.token_hex(16), secrets.token_hex(32), secrets.randbits(62)
            theirs = student_cells.get(gid)
            if theirs is not None:
                if _code_lines(theirs.get("source", "")) != _code_lines(src):
                    flags.setdefault(ex.name, []).append(f"check cell {gid} was edited (ignored)")
                if _nbg(theirs).get("points") != nbg.get("points"):
                    flags.setdefault(ex.name, []).append(
                        f"check cell {gid}: points changed to {_nbg(theirs).get('points')!r} "
                        "(ignored)")
            nb.cells.append(nbformat.v4.new_code_cell(_check_cell_source(ex, nonce, key, seed)))
            plan.append(_Plan("check", ex.name, nonce, key, seed))
            continue
        if nbg.get("solution"):
            ex = ex_by_sol.get(gid)
            theirs = student_cells.get(gid)
            if theirs is None or theirs.get("cell_type") != "code":
                why = (f"no cell with grade_id {gid} (deleted or renamed?)" if theirs is None
                       else f"cell {gid} is no longer a code cell")
                if ex is not None:
                    missing[ex.name] = why
                else:
                    flags[""].append(why)
                # the released stub keeps later cells (and other exercises) runnable
                nb.cells.append(nbformat.v4.new_code_cell(strip_source(src, grade_id=gid or "")))
                plan.append(_Plan("code"))
                continue
            s = theirs.get("source", "")
            hits = _flags_for(s)
            if hits:
                flags.setdefault(ex.name if ex else "", []).extend(f"{gid}: {h}" for h in hits)
            nb.cells.append(nbformat.v4.new_code_cell(s))
            plan.append(_Plan("solution", ex.name if ex else None))
            continue
        tags = (cell.get("metadata") or {}).get("tags") or []
        if set(tags) & set(skip_tags):
            nb.cells.append(nbformat.v4.new_code_cell(src))
            plan.append(_Plan("skip"))
            continue
        nb.cells.append(nbformat.v4.new_code_cell(src))
        plan.append(_Plan("code"))
    return nb, plan, {"missing": missing, "flags": {k: v for k, v in flags.items() if v}}


# ------------------------------------------------------------------ executing
@dataclasses.dataclass
class GradeSettings:
    """Execution limits for one notebook."""

    cell_timeout: float = CELL_TIMEOUT
    notebook_timeout: float = NOTEBOOK_TIMEOUT
    memory_limit: int = MEMORY_LIMIT
    skip_tags: tuple = ()
    exercise_modules: tuple = ()
    digest: dict | None = None
    digest_modules: tuple = ()


def _short(text: Any, n: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _make_client_class():
    from nbclient import NotebookClient

    class _Client(NotebookClient):
        """nbclient with a per-cell output cap that never drops the grader's own result line."""

        def __init__(self, *a, nonces=None, **kw):
            super().__init__(*a, **kw)
            self._nonces = nonces or {}
            self._sizes: dict[int, int] = {}
            self.truncated: set[int] = set()

        def output(self, outs, msg, display_id, cell_index):
            content = msg.get("content", {})
            text = content.get("text") if isinstance(content.get("text"), str) else None
            size = len(text) if text is not None else len(str(content.get("data", "")))
            nonce = self._nonces.get(cell_index)
            mine = nonce is not None and text is not None and nonce in text
            used = self._sizes.get(cell_index, 0)
            if not mine and used + size > MAX_CELL_OUTPUT:
                self.truncated.add(cell_index)
                return None
            self._sizes[cell_index] = used + (0 if mine else size)
            return super().output(outs, msg, display_id, cell_index)

    return _Client


class _Session:
    """One kernel at a time for one notebook, restartable."""

    def __init__(self, nb, plan: list[_Plan], workdir: Path, settings: GradeSettings):
        self.nb, self.plan, self.workdir, self.s = nb, plan, workdir, settings
        self.client = None
        self.restarts = 0
        self.last_reply: dict | None = None
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("LABKIT_", "JPY_", "NBGRADER_"))}
        # a fresh IPython profile per notebook: no startup files, nothing left for the next one
        self.env.update(LABKIT_GRADING="1", LABKIT_SEED=str(secrets.randbits(62)),
                        PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg",
                        IPYTHONDIR=str(workdir / ".ipython"))
        self.truncated: set[int] = set()

    def start(self) -> None:
        cls = _make_client_class()
        nonces = {i: p.nonce for i, p in enumerate(self.plan) if p.nonce}
        self.client = cls(self.nb, kernel_name="python3", timeout=int(self.s.cell_timeout),
                          allow_errors=True, interrupt_on_timeout=True,
                          error_on_timeout={"ename": "CellTimeoutError", "evalue": "timed out",
                                            "traceback": []},
                          iopub_timeout=2, startup_timeout=120, shutdown_kernel="immediate",
                          record_timing=False, nonces=nonces,
                          on_cell_executed=self._on_executed)
        self.client.create_kernel_manager()
        log = open(self.workdir / f"kernel-{self.restarts}.log", "wb")  # noqa: SIM115
        try:
            self.client.start_new_kernel(cwd=str(self.workdir), env=self.env, stdout=log,
                                         stderr=log)
        finally:
            log.close()
        self.client.start_new_kernel_client()
        self._limit_memory()

    def _limit_memory(self) -> None:
        if not self.s.memory_limit:
            return
        try:
            import resource
            pid = self.client.km.provisioner.process.pid
            lim = int(self.s.memory_limit)
            resource.prlimit(pid, resource.RLIMIT_AS, (lim, lim))
        except Exception:  # noqa: BLE001 - no prlimit (macOS) or no pid: run without the limit
            pass

    def kernel_log(self, n: int = 400) -> str:
        """The last ``n`` characters the current kernel wrote to stdout/stderr (crash clues)."""
        try:
            text = (self.workdir / f"kernel-{self.restarts}.log").read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip() and "without encryption" not in ln]
        return _short(" | ".join(lines), 10_000)[-n:]

    def _on_executed(self, cell, cell_index, execute_reply):
        self.last_reply = execute_reply

    def stop(self) -> None:
        if self.client is not None:
            try:
                self.truncated |= self.client.truncated
                self.client._cleanup_kernel()
            except Exception:  # noqa: BLE001 - already dead: nothing to clean
                pass
            self.client = None

    def run(self, index: int, timeout: float) -> tuple[str, str]:
        """Execute cell ``index``: returns (status, detail) with status ok|error|timeout|dead."""
        from nbclient.exceptions import DeadKernelError

        self.client.timeout = max(1, int(timeout + 0.999))
        self.last_reply = None
        cell = self.nb.cells[index]
        try:
            self.client.execute_cell(cell, index)
        except DeadKernelError:
            return "dead", "the kernel died"
        except Exception as e:  # noqa: BLE001 - nbclient/zmq trouble: treat as a dead kernel
            return "dead", f"{type(e).__name__}: {e}"
        reply = (self.last_reply or {}).get("content", {})
        if reply.get("status") == "error":
            if reply.get("ename") == "CellTimeoutError":
                return "timeout", f"no reply within {self.client.timeout} s"
            return "error", f"{reply.get('ename')}: {reply.get('evalue')}"
        return "ok", ""

    def responsive(self) -> bool:
        """After an interrupt: does the kernel run a trivial cell again?"""
        import nbformat

        probe = nbformat.v4.new_code_cell("pass")
        self.nb.cells.append(probe)
        try:
            status, _ = self.run(len(self.nb.cells) - 1, min(10.0, max(3.0, self.s.cell_timeout)))
        finally:
            self.nb.cells.pop()
        return status == "ok"


def _parse_result(cell, plan: _Plan) -> dict | None:
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


def _row(ex: ExerciseSpec, verdict: str, message: str, points: float = 0.0, **extra) -> dict:
    return {"exercise": ex.name, "points": points, "max_points": ex.points, "verdict": verdict,
            "message": _short(message), **extra}


def _package_digest(modules=()) -> dict[str, str]:
    """sha256 per file that grading trusts (labkit's ``__init__``, check.py, grade.py and the
    modules registering the exercises): detects a submission editing them on disk."""
    here = Path(__file__).resolve().parent
    files = [here / "__init__.py", here / "check.py", here / "grade.py"]
    for mod in sorted(set(modules)):
        try:
            spec = importlib.util.find_spec(mod)
        except (ImportError, ValueError):
            spec = None
        if spec and spec.origin and spec.origin.endswith(".py"):
            p = Path(spec.origin)
            files += sorted(p.parent.rglob("*.py")) if p.name == "__init__.py" else [p]
    out = {}
    for f in dict.fromkeys(files):
        try:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
        except OSError:
            out[str(f)] = "<unreadable>"
    return out


def grade_notebook(sub: Submission, canon: Canonical | None, settings: GradeSettings,
                   read_error: str | None = None) -> dict:
    """Grade one submission; never raises for anything the submission does."""
    t0 = time.monotonic()
    res: dict[str, Any] = {"student": sub.student, "notebook": sub.rel,
                           "canonical": canon.name if canon else None, "status": "graded",
                           "exercises": [], "cells": [], "flags": {}, "kernel_restarts": 0}
    if read_error is None and canon is not None:
        try:
            student_nb = _read_submission(sub.path)
        except ValueError as e:
            read_error = str(e)
    if read_error is not None or canon is None:
        res["status"] = "unreadable" if read_error else "unmatched"
        msg = read_error or ("cannot tell which lesson this notebook is: no labkit metadata, "
                             "file name or grade ids match a solution notebook")
        res["exercises"] = [{"exercise": "", "points": 0.0,
                             "max_points": canon.max_points if canon else 0.0,
                             "verdict": res["status"], "message": _short(msg)}]
        res["duration_s"] = round(time.monotonic() - t0, 2)
        return res
    try:
        _execute(sub, canon, student_nb, settings, res)
    except Exception as e:  # noqa: BLE001 - a grader bug must not stop the batch
        res["status"] = "grader error"
        res["error"] = _short(f"{type(e).__name__}: {e}")
        done = {r["exercise"] for r in res["exercises"]}
        res["exercises"] += [_row(ex, "not run", f"grader error: {res['error']}")
                             for ex in canon.exercises if ex.name not in done]
    order = {ex.name: k for k, ex in enumerate(canon.exercises)}
    res["exercises"].sort(key=lambda r: order.get(r["exercise"], len(order)))
    if settings.digest:
        now = _package_digest(settings.digest_modules)
        changed = sorted(set(now) ^ set(settings.digest) |
                         {f for f in now if settings.digest.get(f) != now[f]})
        if changed:
            res["status"] = "tampered"
            res["error"] = ("files that grading trusts changed on disk while this notebook ran: "
                            + ", ".join(changed))
    res["duration_s"] = round(time.monotonic() - t0, 2)
    return res


def _execute(sub, canon, student_nb, settings, res) -> None:
    nb, plan, pre = build_notebook(canon, student_nb, skip_tags=settings.skip_tags)
    res["flags"] = pre["flags"]
    specs = {ex.name: ex for ex in canon.exercises}
    final: dict[str, dict] = {}
    for name, why in pre["missing"].items():
        final[name] = _row(specs[name], "missing", why)
    deadline = time.monotonic() + settings.notebook_timeout
    workdir = Path(tempfile.mkdtemp(prefix="labkit-grade-"))
    session = _Session(nb, plan, workdir, settings)
    done: list[int] = []           # cells run so far (replayed after a restart)
    bad: set[int] = set()          # cells never to run again (they hung or killed the kernel)
    log = res["cells"]
    sol_errors: dict[str, str] = {}   # exercise → error raised by the student's exercise cell
    poisoned: set[str] = set()     # student functions that hung or crashed: cells using them skip

    def restart() -> bool:
        while session.restarts < MAX_RESTARTS:
            session.stop()
            session.restarts += 1
            session.start()
            ok = True
            for j in done:
                if j in bad:
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                st, detail = session.run(j, min(settings.cell_timeout, left))
                if st in ("timeout", "dead"):
                    bad.add(j)
                    log.append({"cell": j, "replay": True, "status": st, "detail": _short(detail)})
                    ok = False
                    break
            if ok:
                return True
        return False

    try:
        session.start()
        alive = True
        for i, p in enumerate(plan):
            if p.kind == "skip" or not nb.cells[i].source.strip():
                continue
            if p.kind == "check" and p.exercise in final:
                continue
            if p.kind == "code":
                hit = [f for f in poisoned if re.search(rf"\b{re.escape(f)}\b", nb.cells[i].source)]
                if hit:
                    log.append({"cell": i, "kind": "code", "status": "skipped",
                                "detail": f"uses {hit[0]}, which already hung or crashed"})
                    continue
            left = deadline - time.monotonic()
            if left <= 0 or not alive:
                break
            t = time.monotonic()
            status, detail = session.run(i, min(settings.cell_timeout, left))
            entry = {"cell": i, "kind": p.kind, "exercise": p.exercise, "status": status,
                     "seconds": round(time.monotonic() - t, 2)}
            if status == "dead":
                detail += (": " + session.kernel_log()) if session.kernel_log() else ""
            if detail:
                entry["detail"] = _short(detail)
            log.append(entry)
            ex = specs.get(p.exercise) if p.exercise else None
            if status in ("ok", "error"):
                if p.kind != "check":
                    done.append(i)
                elif ex is not None:
                    r = _parse_result(nb.cells[i], p)
                    final[ex.name] = _verdict_row(ex, r, p, i in session.client.truncated)
                    if ex.name in sol_errors and final[ex.name]["verdict"] != "passed":
                        final[ex.name]["message"] = _short(
                            f"your exercise cell failed ({sol_errors[ex.name]}); "
                            + final[ex.name]["message"])
                if status == "error" and p.kind == "solution" and ex is not None:
                    sol_errors[ex.name] = _short(detail, 200)
                continue
            bad.add(i)
            if ex is not None and ex.fn_src.isidentifier():
                poisoned.add(ex.fn_src)
            where = "the check" if p.kind == "check" else f"exercise cell ex-{p.exercise}"
            if status == "timeout":
                if ex is not None and ex.name not in final:
                    final[ex.name] = _row(ex, "timed out", f"{where} did not finish within "
                                          f"{session.client.timeout} s (infinite loop or far "
                                          "too slow?)", seed=p.seed)
                if session.responsive():
                    continue
                log.append({"cell": i, "status": "stuck", "detail": "kernel did not answer the "
                            "interrupt; restarting it and replaying earlier cells"})
            else:
                if ex is not None and ex.name not in final:
                    lim = (f"; memory limit {settings.memory_limit / 2**30:g} GiB"
                           if settings.memory_limit else "")
                    final[ex.name] = _row(ex, "crashed", f"the kernel died while running {where} "
                                          f"(segfault, os._exit or out of memory{lim}); it was "
                                          "restarted and grading went on", seed=p.seed)
            alive = restart()
            res["kernel_restarts"] = session.restarts
    finally:
        session.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    res["kernel_restarts"] = session.restarts
    over = time.monotonic() >= deadline
    for ex in canon.exercises:
        if ex.name not in final:
            if over:
                final[ex.name] = _row(ex, "timed out", "the notebook did not finish within "
                                      f"{settings.notebook_timeout:g} s; this check never ran")
            else:
                final[ex.name] = _row(ex, "not run", f"the kernel kept dying or hanging "
                                      f"({session.restarts} restarts); this check never ran")
    res["exercises"] = list(final.values())
    if session.truncated:
        res["truncated_output_cells"] = sorted(session.truncated)


def _verdict_row(ex: ExerciseSpec, r: dict | None, p: _Plan, truncated: bool) -> dict:
    if r is None:
        why = ("the grader's check printed no verified result (output redirected, or the check "
               "was interrupted)" + ("; output was truncated" if truncated else ""))
        return _row(ex, "no result", why, seed=p.seed)
    passed = r.get("passed") is True
    try:
        frac = float(r.get("points", 0)) / float(r.get("max_points") or 0)
    except (TypeError, ValueError, ZeroDivisionError):
        frac = 1.0 if passed else 0.0
    pts = round(min(max(frac, 0.0), 1.0) * ex.points, 6) if passed else 0.0
    details = json.loads(json.dumps(r.get("details") or {}, default=str))
    text = json.dumps(details)
    if len(text) > 4 * MAX_MESSAGE:
        details = {"truncated": _short(text, 4 * MAX_MESSAGE)}
    return _row(ex, str(r.get("verdict", "error")), str(r.get("message", "")), pts, seed=p.seed,
                details=details)


# ------------------------------------------------------------------ the batch
def _grade_task(args) -> dict:
    sub, canon, settings, read_error = args
    return grade_notebook(sub, canon, settings, read_error)


def _not_run(sub: Submission, canon: Canonical | None, why: str) -> dict:
    exercises = canon.exercises if canon else []
    rows_ = [_row(ex, "not run", why) for ex in exercises] or [
        {"exercise": "", "points": 0.0, "max_points": 0.0, "verdict": "not run",
         "message": _short(why)}]
    return {"student": sub.student, "notebook": sub.rel,
            "canonical": canon.name if canon else None, "status": "grader error",
            "error": _short(why), "exercises": rows_, "cells": [], "flags": {},
            "kernel_restarts": 0}


def grade(folder, *, solutions=None, jobs: int = 1, cell_timeout: float = CELL_TIMEOUT,
          notebook_timeout: float = NOTEBOOK_TIMEOUT, memory_limit: int = MEMORY_LIMIT,
          skip_tags=(), exercise_modules=(), progress: bool = True) -> list[dict]:
    """Grade every submission in ``folder``; returns one result dict per notebook."""
    if cell_timeout <= 0 or notebook_timeout <= 0:
        raise ValueError("timeouts must be positive numbers of seconds")
    if jobs < 1:
        raise ValueError(f"jobs must be ≥ 1, got {jobs}")
    canon = load_solutions(solutions)
    subs = find_submissions(folder)
    exercise_modules = tuple(exercise_modules)
    settings = GradeSettings(cell_timeout=float(cell_timeout),
                             notebook_timeout=float(notebook_timeout),
                             memory_limit=int(memory_limit), skip_tags=tuple(skip_tags),
                             exercise_modules=exercise_modules)
    tasks = []
    resolved: set[str] = set()
    for sub in subs:
        try:
            nb, err = _read_submission(sub.path), None
        except ValueError as e:
            nb, err = None, str(e)
        c = match_canonical(nb, sub.path, canon) if not sub.path.is_dir() else None
        if c is not None and c.name not in resolved:
            _resolve_modules(c, exercise_modules)
            resolved.add(c.name)
        tasks.append((sub, c, settings, err))
    used = {ex.module for t in tasks if t[1] is not None for ex in t[1].exercises if ex.module}
    settings.digest_modules = tuple(sorted(used | set(exercise_modules)))
    settings.digest = _package_digest(settings.digest_modules)
    from tqdm.auto import tqdm

    results: list[dict | None] = [None] * len(tasks)
    bar = tqdm(total=len(tasks), desc="grading", unit="nb", disable=not progress,
               file=sys.stderr)
    try:
        if jobs == 1 or len(tasks) <= 1:
            for k, t in enumerate(tasks):
                bar.set_postfix_str(t[0].student[:20])
                results[k] = _grade_task(t)
                bar.update()
                if results[k]["status"] == "tampered":
                    break
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            ctx = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
                futs = {pool.submit(_grade_task, t): k for k, t in enumerate(tasks)}
                for f in as_completed(futs):
                    k = futs[f]
                    try:
                        results[k] = f.result()
                    except Exception as e:  # noqa: BLE001 - a worker died: record, go on
                        results[k] = _not_run(tasks[k][0], tasks[k][1],
                                              f"the grader's worker process failed: "
                                              f"{type(e).__name__}: {e}")
                    bar.update()
                    if results[k]["status"] == "tampered":
                        for other in futs:
                            other.cancel()
                        break
    finally:
        bar.close()
    return [r for r in results if r is not None]


def rows(results: list[dict]) -> list[dict]:
    """Flatten notebook results into CSV rows (one per exercise)."""
    out = []
    for r in results:
        nb_flags = list(r.get("flags", {}).get("", []))
        if r.get("status") in ("tampered", "grader error") and r.get("error"):
            nb_flags.append(f"{r['status']}: {r['error']}")
        for e in r["exercises"]:
            fl = nb_flags + list(r.get("flags", {}).get(e["exercise"], []))
            out.append({"student": r["student"], "notebook": r["notebook"],
                        "exercise": e["exercise"], "points": f"{float(e['points']):g}",
                        "max_points": f"{float(e['max_points']):g}", "verdict": e["verdict"],
                        "message": e["message"], "flags": _short("; ".join(fl))})
    return out


def write_csv(results: list[dict], path) -> None:
    """Write the CSV (columns :data:`CSV_FIELDS`)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(rows(results))


def write_json(results: list[dict], path, settings: dict | None = None) -> None:
    """Write the full detail (cells, seeds, flags, restarts) as JSON."""
    doc = {"labkit_grade": 1, "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "settings": settings or {}, "submissions": results}
    Path(path).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")


def summary(results: list[dict]) -> str:
    """Text table: per student total / max, then pass counts per exercise."""
    per: dict[str, list[float]] = {}
    flagged: dict[str, int] = {}
    ex_stats: dict[str, list[int]] = {}
    for r in results:
        tot = per.setdefault(r["student"], [0.0, 0.0, 0])
        tot[2] += 1
        nfl = sum(len(v) for v in r.get("flags", {}).values())
        if nfl or r.get("status") in ("tampered", "grader error"):
            flagged[r["student"]] = flagged.get(r["student"], 0) + max(nfl, 1)
        for e in r["exercises"]:
            tot[0] += float(e["points"])
            tot[1] += float(e["max_points"])
            if e["exercise"]:
                s = ex_stats.setdefault(e["exercise"], [0, 0])
                s[0] += e["verdict"] == "passed"
                s[1] += 1
    w = max([len("student")] + [len(s) for s in per])
    lines = [f"{'student':<{w}}  {'points (%)':>19}  notebooks  review"]
    for s, (p, m, n) in sorted(per.items()):
        pct = f"{100 * p / m:5.1f}%" if m else "    -"
        lines.append(f"{s:<{w}}  {p:5g} / {m:<5g}{pct}  {n:>9}  "
                     + (f"{flagged[s]} flag(s)" if s in flagged else ""))
    if ex_stats:
        lines.append("")
        lines.append("exercise: passed / graded")
        lines += [f"  {k}: {v[0]} / {v[1]}" for k, v in ex_stats.items()]
    return "\n".join(ln.rstrip() for ln in lines)


def _size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"cannot read size {text!r}; write e.g. 4G, 512M or 0")
    mult = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit grade DIR --out grades.csv [--json F] [--jobs N] …``."""
    p = argparse.ArgumentParser(prog="labkit grade",
                                description="Grade a folder of student notebooks headlessly.")
    p.add_argument("dir", help="folder with one notebook per student, or one folder per student")
    p.add_argument("--out", default="grades.csv", help="CSV to write (default grades.csv)")
    p.add_argument("--json", default=None, help="also write full detail as JSON here")
    p.add_argument("--jobs", type=int, default=1, help="notebooks graded in parallel")
    p.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                   help=f"seconds per cell (default {CELL_TIMEOUT:g})")
    p.add_argument("--notebook-timeout", type=float, default=NOTEBOOK_TIMEOUT,
                   help=f"seconds per notebook (default {NOTEBOOK_TIMEOUT:g})")
    p.add_argument("--memory-limit", type=_size, default=MEMORY_LIMIT,
                   help="address-space limit per kernel, e.g. 8G (default); 0 = none")
    p.add_argument("--solutions", default=None, help="canonical notebooks (default solutions/)")
    p.add_argument("--skip-tag", action="append", default=[],
                   help="skip canonical (non-exercise) cells with this tag; repeatable")
    p.add_argument("--exercise-module", action="append", default=[],
                   help="extra module registering exercises (besides check.LAB_MODULES)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(argv)
    try:
        results = grade(a.dir, solutions=a.solutions, jobs=a.jobs, cell_timeout=a.cell_timeout,
                        notebook_timeout=a.notebook_timeout, memory_limit=a.memory_limit,
                        skip_tags=a.skip_tag, exercise_modules=a.exercise_module,
                        progress=not a.no_progress)
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"labkit grade: {e}", file=sys.stderr)
        return 2
    write_csv(results, a.out)
    if a.json:
        write_json(results, a.json, {k: v for k, v in vars(a).items() if k != "json"})
    print(summary(results))
    print(f"\nwrote {a.out}" + (f" and {a.json}" if a.json else "")
          + f" ({len(results)} notebooks)")
    bad = [r for r in results if r.get("status") == "tampered"]
    if bad:
        print(f"labkit grade: STOPPED — while {bad[0]['student']}'s notebook ran, "
              f"{bad[0]['error']}; reinstall labkit and grade in a throwaway environment",
              file=sys.stderr)
        return 3
    return 0

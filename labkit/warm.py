"""``labkit warm``: compile labkit's kernels into numba's on-disk cache before a student needs them.

labkit's kernels are ``cache=True``: the first process that calls one compiles it (seconds to
tens of seconds for the big ones) and writes it next to its source (``labkit/**/__pycache__``,
or under ``NUMBA_CACHE_DIR``); every later process loads it in milliseconds. On a fresh checkout
the first run of each notebook would pay that compilation cell by cell. ``labkit warm`` pays it
once, one process per lab in parallel: ``make lab`` starts it in the background (niced) as
JupyterLab opens on lesson 00, which needs none of it; ``make warm`` waits for it.

What is compiled is derived from the code, never listed by hand. For each lab of
:mod:`labkit.registry` a fresh process

1. imports the lab's package and all its submodules (every ``cache=True`` dispatcher exists);
2. runs ``run_benchmark("small", repeat=1)``: the entry points and the variants the lab compares,
   on the small inputs, with the argument types the notebooks use;
3. runs every exercise check of the lab on its reference solution (the exercise cells of
   ``solutions/NN_name.md``) through the trusted check worker, as a notebook's check cell does:
   the references, gates and labkit kernels the checks call;
4. runs the lab's ``python -m labkit.<lab>`` entry point (the multi-rank one, where there is
   one) as a single rank: ``--size small --check --threads 1``.

A stamp per lab (``labkit-warm.json`` in the cache root) records a digest of the files that lab
can use (labkit/ minus the other labs' packages), numba's version, the CPU numba compiles for
and the environment switches that change code; ``--if-needed`` skips a lab whose stamp matches
and whose cache index files are all still there (a few stat calls and a 0.1 s digest).

    labkit warm [LAB ...] [--jobs N] [--if-needed] [--check] [--cache-dir DIR] [--quiet]
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import io
import json
import os
import pkgutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["cache_root", "lab_key", "stale_labs", "warm_lab", "warm", "main"]

PACKAGE = Path(__file__).resolve().parent
STAMP = "labkit-warm.json"
STAMP_VERSION = 1
# environment that changes the machine code numba emits (and so what a cache entry holds)
_ENV_KEYS = ("LABKIT_VECTOR_BITS", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_OPT",
             "NUMBA_BOUNDSCHECK", "NUMBA_FASTMATH", "NUMBA_DISABLE_JIT")
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = (".pyc", ".pyo", ".nbi", ".nbc")


def cache_root(cache_dir: str | None = None) -> Path:
    """Where numba's cache of labkit's kernels lives: ``cache_dir`` / ``NUMBA_CACHE_DIR`` if
    set, else labkit's own folder (its ``__pycache__`` folders)."""
    d = cache_dir or os.environ.get("NUMBA_CACHE_DIR")
    return Path(d).resolve() if d else PACKAGE


def _stamp_path(root: Path) -> Path:
    """The stamp: in NUMBA_CACHE_DIR, or (in-tree caches) in the user's cache folder, keyed by
    labkit's path — never inside labkit/, whose files the grader hashes."""
    if root != PACKAGE:
        return root / STAMP
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "labkit"
    tag = hashlib.sha1(str(PACKAGE).encode()).hexdigest()[:16]
    return base / f"warm-{tag}.json"


def _labs() -> list[str]:
    from labkit import registry
    return list(registry.names())


def lab_key(lab: str, env: dict | None = None, files: list | None = None) -> str:
    """Digest of what a lab's compiled code depends on: every file of labkit/ except the other
    labs' packages (caches and checkpoints excluded), numba/llvmlite/Python versions, the CPU
    numba compiles for and the code-changing environment switches."""
    import llvmlite
    import numba
    env = os.environ if env is None else env
    others = set(_labs()) - {lab}
    h = hashlib.sha256()
    for rel, digest in _file_digests() if files is None else files:
        if rel.split("/", 1)[0] not in others:
            h.update(f"{rel}\0{digest}\0".encode())
    from numba.core import config
    try:
        import llvmlite.binding as ll
        cpu = config.CPU_NAME or ll.get_host_cpu_name()
        features = config.CPU_FEATURES or ll.get_host_cpu_features().flatten()
    except Exception:  # noqa: BLE001 - an exotic host: the versions still key the stamp
        cpu, features = "?", "?"
    h.update(json.dumps([STAMP_VERSION, numba.__version__, llvmlite.__version__,
                         sys.version, cpu, features,
                         {k: env.get(k) for k in _ENV_KEYS}]).encode())
    return h.hexdigest()


def _file_digests(package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(relative path, sha256) of every file of ``package`` (labkit/; caches and checkpoints
    excluded)."""
    out = []
    for p in sorted(package.rglob("*")):
        rel = p.relative_to(package)
        if not p.is_file() or _SKIP_DIRS & set(rel.parts) or p.name.endswith(_SKIP_SUFFIXES):
            continue
        out.append((rel.as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()))
    return out


def _index_files(root: Path, lab: str) -> list[str]:
    """The numba index files (``*.nbi``) of a lab's package under ``root`` (relative paths)."""
    if root == PACKAGE:
        files = (PACKAGE / lab).rglob("*.nbi")
    else:   # numba's NUMBA_CACHE_DIR layout: <dirname>_<sha1 of the source folder>/
        files = (f for d in root.glob(f"{lab}_*") for f in d.rglob("*.nbi"))
    return sorted(str(f.relative_to(root)) for f in files)


def _read_stamp(root: Path) -> dict:
    try:
        data = json.loads(_stamp_path(root).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def stale_labs(labs: list[str] | None = None, cache_dir: str | None = None) -> list[str]:
    """The labs whose cache is not warm for this labkit, numba, CPU and environment."""
    root = cache_root(cache_dir)
    stamp = _read_stamp(root)
    out = []
    keys = lab_keys(labs)
    for lab in labs or _labs():
        s = stamp.get(lab) or {}
        files = s.get("index") or []
        if (s.get("key") != keys[lab] or not files
                or not all((root / f).is_file() for f in files)):
            out.append(lab)
    return out


def lab_keys(labs: list[str] | None = None) -> dict[str, str]:
    """:func:`lab_key` of several labs, labkit's files read once."""
    files = _file_digests()
    return {lab: lab_key(lab, files=files) for lab in labs or _labs()}


# ------------------------------------------------------------------ one lab, in its own process
def _import_all(mod) -> int:
    n = 0
    for info in pkgutil.walk_packages(getattr(mod, "__path__", []), mod.__name__ + "."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue
        importlib.import_module(info.name)
        n += 1
    return n


def _cached_dispatchers(prefix: str) -> list:
    from numba.core.registry import CPUDispatcher
    seen, out = set(), []
    for name, m in list(sys.modules.items()):
        if not (name == prefix or name.startswith(prefix + ".")):
            continue
        for obj in list(vars(m).values()):
            if (isinstance(obj, CPUDispatcher) and id(obj) not in seen
                    and type(obj._cache).__name__ != "NullCache"):
                seen.add(id(obj))
                out.append(obj)
    return out


def _cpu() -> float:
    import resource
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def warm_lab(lab: str, solutions_root: str | Path | None = None) -> dict:
    """Compile one lab's kernels into numba's cache (in this process); what was done, with the
    CPU seconds of each step (this process and the check worker)."""
    from labkit import registry
    from labkit.check import runner
    t0, c0 = time.monotonic(), _cpu()
    os.environ.setdefault("LABKIT_SPEED", "report")      # gates time, but never fail the warm
    entry = registry.get(lab)
    mod = entry.load()
    _import_all(mod)
    out = {"lab": lab, "steps": {}}
    c = _cpu()
    out["steps"]["import"] = round(c - c0, 2)
    if hasattr(mod, "run_benchmark"):
        # each benchmarked function called once (its first call compiles it with the argument
        # types it is given) instead of timing loops: the warm wants the compilation
        from labkit.bench import single_loop
        with single_loop(), contextlib.redirect_stdout(io.StringIO()):
            mod.run_benchmark("small", repeat=1)
        out["steps"]["run_benchmark('small')"] = round(_cpu() - c, 2)
    root = Path(solutions_root) if solutions_root else PACKAGE.parent
    if (root / entry.source).is_file():
        from labkit import check
        from labkit.check.falsefail import solutions
        c = _cpu()
        done = []
        for s in solutions(root):
            if s.lab == lab and s.name in check.names():
                r = check.run_source(s.name, s.source, s.imports, function=s.function,
                                     constants=s.constants)
                done.append(f"{s.name}:{r.verdict}")
        runner.shutdown()                                 # its CPU time counts from here
        out["steps"]["checks"] = round(_cpu() - c, 2)
        out["checks"] = done
    main = PACKAGE / lab / "__main__.py"
    if main.is_file():                  # the multi-rank entry point, as one rank (its kernels)
        c = _cpu()
        argv = [sys.executable, "-m", entry.module, "--size", "small", "--check", "--threads", "1"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                               stdin=subprocess.DEVNULL)
            status = "ok" if r.returncode == 0 else f"exit {r.returncode}"
        except (OSError, subprocess.TimeoutExpired) as e:
            status = type(e).__name__
        out["steps"][f"python -m {entry.module} --size small --check"] = round(_cpu() - c, 2)
        out["main"] = status
    out["dispatchers"] = len(_cached_dispatchers(entry.module))
    out["seconds"] = round(time.monotonic() - t0, 1)
    out["cpu_s"] = round(_cpu() - c0, 1)
    return out


# ------------------------------------------------------------------ all labs, in parallel
def _spawn(lab: str, env: dict, solutions_root, nice: int):
    """A process warming ``lab`` and the temporary file its output goes to."""
    import tempfile
    # run from a checkout (Binder's postBuild runs in the repository), the child and the check
    # workers it starts must compile the labkit this process is (the installed one), not the
    # checkout's labkit/ that `-m` would put first on sys.path: -P, and a neutral folder
    argv = [sys.executable, "-P", "-m", "labkit.warm", "--one", lab]
    if solutions_root:
        argv += ["--solutions", str(Path(solutions_root).resolve())]
    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
    proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                            cwd=tempfile.gettempdir(),
                            stdin=subprocess.DEVNULL, text=True,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)
    return proc, log


@contextlib.contextmanager
def _lock(root: Path):
    """One warm at a time per cache (a second one waits for nothing: it reports and leaves)."""
    import fcntl
    path = _stamp_path(root).with_suffix(".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "w")
    except OSError:                     # nowhere to keep a lock (or the stamp): warm anyway
        yield True
        return
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def warm(labs: list[str] | None = None, *, jobs: int | None = None, cache_dir: str | None = None,
         if_needed: bool = False, solutions_root=None, quiet: bool = False, nice: int = 0) -> int:
    """Warm ``labs`` (default all), ``jobs`` processes at a time (``nice``: their niceness
    increment); 0 if every lab warmed (or another warm of this cache is running)."""
    say = (lambda *a, **k: None) if quiet else (lambda *a, **k: print(*a, **k, flush=True))
    root = cache_root(cache_dir)
    with _lock(root) as mine:
        if not mine:
            say("labkit warm: another labkit warm is compiling into this cache; leaving it to it")
            return 0
        return _warm(root, labs, jobs, cache_dir, if_needed, solutions_root, say, nice)


def _warm(root, labs, jobs, cache_dir, if_needed, solutions_root, say, nice) -> int:
    labs = list(labs or _labs())
    todo = stale_labs(labs, cache_dir) if if_needed else labs
    if not todo:
        say(f"labkit warm: numba cache already warm ({len(labs)} labs, {_show(root)})")
        return 0
    env = dict(os.environ)
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = str(root)
    stamp = _read_stamp(root)
    last = {lab: (stamp.get(lab) or {}).get("seconds", 0) for lab in todo}
    todo.sort(key=lambda lab: -last[lab])                 # the slowest first
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo)))
    say(f"labkit warm: compiling labkit's kernels for {', '.join(todo)} into numba's cache "
        f"({_show(root)}), {jobs} at a time — once per checkout")
    t0, running, pending, failed, done = time.monotonic(), {}, list(todo), [], 0
    keys = lab_keys(todo)
    while pending or running:
        while pending and len(running) < jobs:
            lab = pending.pop(0)
            running[lab] = (*_spawn(lab, env, solutions_root, nice), time.monotonic())
        time.sleep(0.2)
        for lab, (proc, log, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[lab]
            done += 1
            log.seek(0)
            text = log.read()
            log.close()
            secs = time.monotonic() - started
            if proc.returncode == 0:
                info = _last_json(text)
                stamp = _read_stamp(root)
                stamp[lab] = {"key": keys[lab], "seconds": round(secs, 1),
                              "cpu_s": info.get("cpu_s"), "index": _index_files(root, lab)}
                _write_stamp(root, stamp)
                say(f"  [{done}/{len(todo)}] {lab:<10} {secs:6.1f} s"
                    + (f" ({info['cpu_s']:.0f} s CPU)" if info.get("cpu_s") else ""))
            else:
                failed.append(lab)
                tail = " ".join(text.strip().splitlines()[-3:])[-300:]
                say(f"  [{done}/{len(todo)}] {lab:<10} FAILED (exit {proc.returncode}): {tail}")
    total = time.monotonic() - t0
    say(f"labkit warm: {len(todo) - len(failed)}/{len(todo)} labs in {total:.0f} s"
        + (f"; not warmed: {', '.join(failed)} (their cells compile on first use)"
           if failed else ""))
    return 1 if failed else 0


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            d = json.loads(line)
            return d if isinstance(d, dict) else {}
        except ValueError:
            continue
    return {}


def _write_stamp(root: Path, stamp: dict) -> None:
    path = _stamp_path(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(stamp, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:                # the cache is warm; only --if-needed cannot tell
        print(f"labkit warm: could not write the stamp {path}: {e}", file=sys.stderr)


def _show(root: Path) -> str:
    try:
        return str(root.relative_to(Path.cwd())) or "."
    except ValueError:
        return str(root)


def _background(labs: list[str], a) -> int:
    """``--background``: the cheap check here; the compilation in a child process of this
    process group (stopping ``make lab`` with Ctrl-C stops it too; what it compiled stays)."""
    todo = stale_labs(labs or None, a.cache_dir) if a.if_needed else (labs or _labs())
    if not todo:
        print(f"labkit warm: numba cache already warm ({_show(cache_root(a.cache_dir))})")
        return 0
    argv = [sys.executable, "-m", "labkit.warm", *todo, "--nice", str(a.nice)]
    for flag, value in (("--jobs", a.jobs), ("--cache-dir", a.cache_dir),
                        ("--solutions", a.solutions)):
        if value is not None:
            argv += [flag, str(value)]
    proc = subprocess.Popen(argv + ["--quiet"] * a.quiet, stdin=subprocess.DEVNULL)
    print(f"labkit warm: compiling labkit's kernels for {', '.join(todo)} in the background "
          f"(pid {proc.pid}, nice +{a.nice}); lesson 00 needs none of them, the labs' first cells "
          "are fast once it prints its total")
    return 0


def main(argv: list[str] | None = None) -> int:
    """CLI: ``labkit warm``."""
    p = argparse.ArgumentParser(prog="labkit warm", description=__doc__.split("\n\n")[0])
    p.add_argument("labs", nargs="*", help="labs to warm (default: all)")
    p.add_argument("--jobs", "-j", type=int, default=None, help="processes (default: cores)")
    p.add_argument("--if-needed", action="store_true",
                   help="skip the labs whose cache is already warm (cheap check)")
    p.add_argument("--check", action="store_true",
                   help="compile nothing; exit 1 if some lab's cache is not warm")
    p.add_argument("--cache-dir", help="numba cache folder (default: NUMBA_CACHE_DIR, else "
                                       "labkit's __pycache__ folders)")
    p.add_argument("--solutions", help="folder holding solutions/ (default: the checkout)")
    p.add_argument("--nice", type=int, default=0,
                   help="niceness increment of the compiling processes (make lab: 10, so the "
                        "notebook you work in comes first)")
    p.add_argument("--background", action="store_true",
                   help="check in the foreground, compile in a background process (make lab)")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument("--one", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.one:
        info = warm_lab(a.one, a.solutions)
        print(json.dumps(info))
        return 0
    if os.environ.get("LABKIT_WARM") == "0":
        print("labkit warm: skipped (LABKIT_WARM=0)")
        return 0
    from labkit import registry
    try:
        labs = [registry.get(int(x) if x.isdigit() else x).name for x in a.labs]
    except KeyError as e:
        print(f"labkit warm: {e.args[0]}", file=sys.stderr)
        return 2
    if a.check:
        bad = stale_labs(labs or None, a.cache_dir)
        print("labkit warm: " + (f"not warm: {', '.join(bad)}" if bad else "warm"))
        return 1 if bad else 0
    if a.background:
        return _background(labs, a)
    return warm(labs or None, jobs=a.jobs, cache_dir=a.cache_dir, if_needed=a.if_needed,
                solutions_root=a.solutions, quiet=a.quiet, nice=a.nice)


if __name__ == "__main__":
    sys.exit(main())

"""The sandbox a submission's checks run in: Debian's ``bubblewrap`` (``bwrap``) on Linux.

The trusted check worker (:mod:`labkit.check.worker`) is started inside ``bwrap`` once per
submission, so the student's definitions only ever run there:

* an unprivileged user: as root the sandbox drops to the real uid/gid 65534 (``setpriv``, all
  capabilities and the bounding set dropped, ``no_new_privs``); otherwise a user namespace maps
  the grader to uid 65534;
* no network (``--unshare-net``: loopback of an empty namespace), no IPC, own UTS, a PID
  namespace (``--unshare-pid --die-with-parent``: when the worker is stopped every process the
  submission started dies with it, ``start_new_session`` or not);
* a file system of read-only binds only: ``/usr`` (and the ``/bin``/``/lib`` links),
  ``/sys/devices/system/cpu`` (cache sizes and topology for the checks), the Python
  installation and the venv, the installed ``labkit`` package and the folders of extra exercise
  modules; a private tmpfs ``/tmp`` (size-limited) holding ``HOME``; ``solutions/``, the class
  folder and every other submission are simply not there (the check receives the exercise
  cell's source over its pipe);
* limits set by ``prlimit`` inside: address space, processes, file size, open files (CPU
  time is bounded by the grader's wall-clock timeouts: an ``RLIMIT_CPU`` makes Linux sample
  ``CLOCK_PROCESS_CPUTIME_ID``, the speed gates' clock, at tick resolution — 19 distinct
  readings in 50 ms instead of 200 000 — so ``cpu_seconds`` is off by default); stdout/stderr
  go to ``/dev/null`` and the verdict is one bounded frame on the pipe.

:func:`probe` says whether the sandbox works here (not Linux, no ``bwrap``, user namespaces
refused → why). Without it the grader refuses unless ``--no-sandbox`` is given.
"""
from __future__ import annotations

import functools
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from labkit.check import runner

__all__ = ["SandboxSpec", "probe", "SandboxWorker", "NO_SANDBOX_WARNING"]

NO_SANDBOX_WARNING = (
    "WARNING: labkit grade is running WITHOUT a sandbox: student code runs with your rights "
    "(your files, the network, labkit's folder, other submissions). Grade only in a throwaway "
    "environment (a container or VM).")

NOBODY = 65534
TMP_SIZE = 512 << 20            # bytes of the sandbox's tmpfs /tmp (HOME, numba's cache)
NPROC = 256                     # processes+threads of the sandbox user
FSIZE = 64 << 20                # largest file a submission may write (in its /tmp)
NOFILE = 256
_BOOT = "labkit.grade._boot"


def _labkit_dir() -> Path:
    import labkit
    return Path(labkit.__file__).resolve().parent


def _ro_paths(extra=()) -> list[Path]:
    """What the sandbox sees (read-only): Python, the venv, labkit, extra module folders."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(sys.executable).resolve().parent.parent, _labkit_dir()}
    paths |= {Path(p).resolve() for p in extra}
    out = []
    for p in sorted(paths, key=lambda q: len(q.parts)):
        if not p.exists() or str(p).startswith("/usr/") or p == Path("/usr"):
            continue
        if any(p == q or q in p.parents for q in out):
            continue
        out.append(p)
    return out


class SandboxSpec:
    """The ``bwrap`` command line for one worker (limits in bytes / seconds; 0 = none)."""

    def __init__(self, *, memory: int = 0, cpu_seconds: int = 0, extra_paths=(),
                 nproc: int = NPROC, fsize: int = FSIZE, tmp_size: int = TMP_SIZE,
                 numba_seed: str | None = None):
        self.memory, self.cpu_seconds, self.nproc = int(memory), int(cpu_seconds), int(nproc)
        self.fsize, self.tmp_size = int(fsize), int(tmp_size)
        self.extra_paths = tuple(str(p) for p in extra_paths)
        # a warm numba cache (NUMBA_CACHE_DIR layout) the grader built before any submission:
        # bound read-only and copied into this sandbox's private /tmp/numba-cache at start
        self.numba_seed = str(Path(numba_seed).resolve()) if numba_seed else None

    def env(self) -> dict:
        keep = {k: v for k, v in os.environ.items()
                if k.startswith(("NUMBA_", "OMP_", "OPENBLAS_", "MKL_")) and k != "NUMBA_CACHE_DIR"
                or k == "LABKIT_CHECK_DEBUG"}
        labkit_parent = str(_labkit_dir().parent)
        path = os.pathsep.join([labkit_parent, *self.extra_paths])
        return {**keep, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                "HOME": "/tmp/home", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONPATH": path,
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                "NUMBA_CACHE_DIR": "/tmp/numba-cache", "MPLBACKEND": "Agg",
                "MPLCONFIGDIR": "/tmp/home/.mpl", "LABKIT_GRADING": "1"}

    def command(self, argv: list[str]) -> list[str]:
        bwrap = shutil.which("bwrap") or "/usr/bin/bwrap"
        cmd = [bwrap, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv",
               "--ro-bind", "/usr", "/usr"]
        for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            p = Path("/" + top)
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), str(p)]
            elif p.is_dir():
                cmd += ["--ro-bind", str(p), str(p)]
        # /tmp first: extra module folders may live under the host's /tmp (bound on top)
        cmd += ["--perms", "1777", "--size", str(self.tmp_size), "--tmpfs", "/tmp"]
        made = {"/", "/tmp"}

        def ro(p: Path) -> None:
            for parent in reversed(p.parents):          # traversable by the sandbox user
                s = str(parent)
                if s not in made:
                    made.add(s)
                    cmd.extend(["--perms", "0755", "--dir", s])
            cmd.extend(["--ro-bind", str(p), str(p)])
            made.add(str(p))

        for f in ("/etc/ld.so.cache", "/etc/localtime",
                  "/sys/devices/system/cpu"):       # CPU topology and caches (hardware.info)
            if os.path.exists(f):
                ro(Path(f))
        for p in _ro_paths(self.extra_paths):
            ro(p)
        if self.numba_seed:
            ro(Path(self.numba_seed))
        cmd += ["--proc", "/proc", "--dev", "/dev", "--chdir", "/tmp"]
        for k, v in self.env().items():
            cmd += ["--setenv", k, v]
        if os.geteuid() == 0:
            # privileged bwrap (no user namespace): real uid/gid 65534, nothing kept
            cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                    shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={NOBODY}",
                    f"--regid={NOBODY}", "--clear-groups", "--bounding-set=-all",
                    "--inh-caps=-all", "--no-new-privs", "--"]
        else:
            cmd[1:1] = ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
            cmd += ["--"]
        lim = [f"--nproc={self.nproc}", f"--fsize={self.fsize}", f"--nofile={NOFILE}",
               "--core=0"]
        if self.memory:
            lim.append(f"--as={self.memory}")
        if self.cpu_seconds:
            lim.append(f"--cpu={self.cpu_seconds}")
        # the seed is copied before the worker starts, so W's rule "no cache file newer than
        # the first student child" keeps it; a copy that fails leaves a cold (or partial) cache
        seed = (f"cp -R {shlex.quote(self.numba_seed)} /tmp/numba-cache 2>/dev/null; "
                if self.numba_seed else "")
        cmd += [shutil.which("prlimit") or "/usr/bin/prlimit", *lim, "--",
                "/bin/sh", "-c", seed + 'mkdir -p /tmp/home /tmp/numba-cache && exec "$0" "$@"']
        return cmd + list(argv)


@functools.lru_cache(maxsize=None)
def probe() -> tuple[bool, str]:
    """``(True, "")`` if the sandbox works here, else ``(False, why)``."""
    if not sys.platform.startswith("linux"):
        return False, f"the sandbox needs Linux (this is {sys.platform})"
    for tool in ("bwrap", "prlimit") + (("setpriv",) if os.geteuid() == 0 else ()):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/bin/{tool}"):
            pkg = {"bwrap": "bubblewrap", "prlimit": "util-linux", "setpriv": "util-linux"}[tool]
            return False, f"`{tool}` is not installed (Debian: apt-get install {pkg})"
    cmd = SandboxSpec().command([sys.executable, "-c", "import os, numpy; print(os.getuid())"])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap did not run: {e}"
    if p.returncode != 0 or p.stdout.strip() != str(NOBODY):
        err = " ".join((p.stderr or p.stdout).split())[:300]
        return False, (f"bwrap failed (exit {p.returncode}): {err or 'no output'} — are user "
                       "namespaces allowed (sysctl kernel.unprivileged_userns_clone=1)?")
    return True, ""


def unsandboxed_env(environ=None) -> dict:
    """The environment of a worker started without the sandbox (``--no-sandbox``, the seed
    build): the grader's, with labkit on ``PYTHONPATH`` and none of its ``LABKIT_*`` variables but
    ``LABKIT_CHECK_DEBUG`` — a sandboxed worker sees none either (:meth:`SandboxSpec.env`), so a
    ``LABKIT_VECTOR_BITS`` set for the grader cannot build a numba seed at another width than
    the workers that load it ask for."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items()
           if not k.startswith("LABKIT_") or k == "LABKIT_CHECK_DEBUG"}
    root = str(_labkit_dir().parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(PYTHONDONTWRITEBYTECODE="1", LABKIT_GRADING="1")
    return env


class SandboxWorker(runner.Worker):
    """labkit's check worker (``labkit.check.runner.Worker``) started inside the sandbox, with
    the extra exercise modules imported before it snapshots labkit (see :mod:`._boot`).
    ``spec=None``: no sandbox (``--no-sandbox``), the same worker as a plain subprocess.

    ``numba_cache``: the unsandboxed worker's ``NUMBA_CACHE_DIR``, used as is (the grader's seed
    build: trusted code only). ``numba_seed``: a warm cache copied into a folder of this worker's
    own before it starts and removed when it stops (in the sandbox: ``SandboxSpec.numba_seed``),
    so no submission writes into a cache another submission's worker loads."""

    def __init__(self, spec: SandboxSpec | None, modules=(), numba_cache: str | None = None,
                 numba_seed: str | None = None):
        super().__init__()
        self.spec, self.modules = spec, tuple(modules)
        self.numba_cache, self.numba_seed = numba_cache, numba_seed
        self._own_cache: str | None = None

    def start(self, timeout: float = 300.0) -> None:
        t0 = time.monotonic()
        def argv(r, w):
            cmd = [sys.executable, "-m", _BOOT, str(r), str(w), *self.modules]
            return self.spec.command(cmd) if self.spec is not None else cmd

        if self.spec is not None:
            env = {"PATH": "/usr/bin:/bin"}
        else:
            env = unsandboxed_env()
            if self.numba_seed:
                import tempfile
                self._own_cache = tempfile.mkdtemp(prefix="labkit-grade-numba-")
                _copy_seed(self.numba_seed, self._own_cache)
                env["NUMBA_CACHE_DIR"] = self._own_cache
            elif self.numba_cache:
                env["NUMBA_CACHE_DIR"] = self.numba_cache
        self.proc, self.wfd, self.rfd = runner.spawn(
            argv, env, cwd="/tmp" if self.spec is not None else None)
        try:
            hello = runner.read_frame(self.rfd, time.monotonic() + timeout)
        except TimeoutError:
            hello = None
        if not (isinstance(hello, dict) and hello.get("ready")):
            err = hello.get("error") if isinstance(hello, dict) else None
            self.stop()
            raise RuntimeError("labkit's check worker did not start"
                               + (" in the sandbox" if self.spec else "")
                               + (f": {err}" if err else ""))
        self.started_s = time.monotonic() - t0
        self.starts += 1

    def stop(self) -> None:
        super().stop()
        own, self._own_cache = self._own_cache, None
        if own:
            shutil.rmtree(own, ignore_errors=True)


def share_seed(seed: str) -> None:
    """Make a seed folder readable by the sandbox's user (65534): it is bound read-only, so
    only its own folder's permissions count (keep it inside a private 0700 folder)."""
    for d, dirs, files in os.walk(seed):
        for name in dirs:
            os.chmod(os.path.join(d, name), 0o755)
        for name in files:
            os.chmod(os.path.join(d, name), 0o644)
    os.chmod(seed, 0o755)


def _copy_seed(seed: str, dest: str) -> None:
    """The seed's files into ``dest`` (an empty folder); a failure leaves a colder cache."""
    try:
        shutil.copytree(seed, dest, dirs_exist_ok=True)
    except (OSError, shutil.Error):
        pass


def install(timeout: float = 600) -> str:
    """Install Debian's ``bubblewrap`` (and ``util-linux`` for prlimit/setpriv) with apt-get
    when ``bwrap`` is missing and we are root; a one-line account of what happened."""
    if shutil.which("bwrap"):
        return f"bwrap present: {shutil.which('bwrap')}"
    if not sys.platform.startswith("linux"):
        return f"no bwrap on {sys.platform}: grade on Linux, or with --no-sandbox in a VM"
    if os.geteuid() != 0:
        return "bwrap missing and not root: run `sudo apt-get install -y bubblewrap`"
    if shutil.which("apt-get") is None:
        return "bwrap missing and no apt-get: install bubblewrap with your package manager"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for cmd in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                     "-o", "DPkg::Lock::Timeout=120", "bubblewrap", "util-linux"]):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            if p.returncode != 0:
                return f"{' '.join(cmd[:2])} failed: " + " ".join(p.stderr.split())[-300:]
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"apt-get did not finish: {e}"
    probe.cache_clear()
    return f"installed bubblewrap: {shutil.which('bwrap')}"


def main(argv=None) -> int:
    """``python -m labkit.grade.sandbox [--ensure]``: does the sandbox work here? ``--ensure``
    first installs bubblewrap when it is missing and we are root (the test/grading install
    path)."""
    import argparse
    p = argparse.ArgumentParser(prog="python -m labkit.grade.sandbox", description=main.__doc__)
    p.add_argument("--ensure", action="store_true", help="apt-get install bubblewrap if needed")
    a = p.parse_args(argv)
    if a.ensure:
        print(install())
    ok, why = probe()
    print("grading sandbox: " + ("works (bubblewrap)" if ok else f"NOT available — {why}"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

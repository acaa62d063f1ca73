"""Make a system Chromium available for the browser tests (``pytest -m browser``).

Run by ``make test`` before pytest (``python tools/ensure_browser.py || true``). If no Chromium
binary is found and we are root, install Debian's ``chromium`` package with apt-get (quietly,
bounded by a timeout, output logged to ``test-artifacts/browser/apt-chromium.log``). Prints one
line saying what it did. Never fails hard: when Chromium is still missing, the browser tests
skip with a loud reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "test-artifacts" / "browser" / "apt-chromium.log"
CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
NAMES = ("chromium", "chromium-browser")
UPDATE_TIMEOUT_S = 300
INSTALL_TIMEOUT_S = 900

# Headless flags that work on this kind of machine (no GPU, no sandbox as root, no network
# chatter); the tests add a fresh --user-data-dir per run.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """Path of a system Chromium binary (env LABKIT_CHROMIUM wins, even if wrong), or None."""
    env = os.environ.get("LABKIT_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for path in CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(cmd: list[str], log, timeout: float) -> int:
    """Run cmd with stdout/stderr appended to log; return its exit code (124 on timeout)."""
    log.write(f"\n$ {' '.join(cmd)}\n")
    log.flush()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                              stdin=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        log.write(f"timed out after {timeout:.0f} s\n")
        return 124
    except OSError as exc:
        log.write(f"could not run: {exc}\n")
        return 127


def install_chromium() -> str:
    """Install Debian's chromium package with apt-get; return a one-line account of what happened."""
    if shutil.which("apt-get") is None:
        return "no apt-get on this system; install Chromium yourself (browser tests will skip)"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return ("not root, cannot apt-get; run `sudo apt-get install -y chromium` "
                "(browser tests will skip)")
    LOG.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with open(LOG, "a", encoding="utf-8") as log:
        rc = _run(["apt-get", "update", "-q"], log, UPDATE_TIMEOUT_S)
        if rc != 0:
            log.write(f"apt-get update exited {rc}; trying the install anyway\n")
        # Wait for another apt/dpkg run (shared machines) rather than failing at once.
        rc = _run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                   "-o", "DPkg::Lock::Timeout=120", "chromium"], log, INSTALL_TIMEOUT_S)
    took = time.monotonic() - t0
    path = find_chromium()
    if path:
        return f"installed chromium with apt-get in {took:.0f} s: {path} (log: {LOG})"
    return (f"apt-get install chromium failed (exit {rc}, {took:.0f} s); see {LOG} "
            "(browser tests will skip)")


def _playwright_note() -> str:
    """Empty if Playwright (Python) imports, else a short note on how to get it."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "; playwright is missing: pip install -e '.[test]' (browser tests will skip)"
    return ""


def main() -> int:
    """Ensure Chromium is present, print one line, and always return 0."""
    try:
        path = find_chromium()
        if path:
            line = f"chromium already present: {path}"
        elif os.environ.get("LABKIT_CHROMIUM"):
            line = (f"LABKIT_CHROMIUM={os.environ['LABKIT_CHROMIUM']} is not an executable; "
                    "fix or unset it (browser tests will skip)")
        else:
            line = install_chromium()
        print(f"ensure_browser: {line}{_playwright_note()}")
    except Exception as exc:  # never fail `make test` here; the tests skip loudly instead
        print(f"ensure_browser: could not ensure chromium ({type(exc).__name__}: {exc}); "
              "browser tests will skip")
    return 0


if __name__ == "__main__":
    sys.exit(main())

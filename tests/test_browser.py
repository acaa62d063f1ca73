"""End-to-end: real JupyterLab driven by headless Chromium (Playwright), marker ``browser``.

Run only these: ``.venv/bin/pytest -m browser``. One JupyterLab server for the module (free
127.0.0.1 port, random token, root dir = a temporary copy of solutions/ and notebooks/, so the
repo is never written to), one Chromium (Debian's package, see tools/ensure_browser.py).
For every solution notebook: Run All, wait for the kernel, no error output, every check shows
its pass verdict, a widget slider renders and moving it changes the plot or numbers. For the
student copy of lesson 00: Run All shows the checks failing with "not implemented" and the
hint, without a traceback. The course book (`make book`): built once per run into a temporary
folder, opened from file:// with every other URL blocked — each lab page shows its figures, the
landing page links every lab and student copy. The student book (`make book-student`), built
the same way: no solution code and no outputs on any lab page, each exercise's hint tiers folded
in closed toggles that open one tier at a time, nothing fetched from the network. Screenshots go
to test-artifacts/browser/.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tooling import load_tool

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
# LABKIT_BROWSER_SRC: a folder with solutions/ and notebooks/ to test instead of the repo's.
SRC = Path(os.environ.get("LABKIT_BROWSER_SRC", ROOT))
ARTIFACTS = ROOT / "test-artifacts" / "browser"
NB_TIMEOUT_S = float(os.environ.get("LABKIT_BROWSER_TIMEOUT", "180"))
WIDGET_TIMEOUT_S = 90.0
SERVER_START_TIMEOUT_S = 90.0
STUDENT_NB = "notebooks/00_tools.ipynb"
# ipywidgets 8.1: IntSlider has .jupyter-widgets.widget-slider.widget-hslider, but the
# SelectionSlider that labkit.widgets.tuner uses for numeric parameters lacks .jupyter-widgets.
SLIDER = ":is(.widget-slider, .widget-hslider, .widget-vslider):has(.noUi-handle)"

SOLUTIONS = sorted(p.name for p in (SRC / "solutions").glob("*.ipynb"))


def _load_ensure_browser():
    """Import tools/ensure_browser.py (the single place that knows where Chromium lives)."""
    return load_tool("ensure_browser")


def _loud_skip(reason: str):
    """Skip with a reason that stands out in the -ra summary and on stderr."""
    msg = f"BROWSER TESTS NOT RUN: {reason}"
    print(f"\n{'!' * 78}\n{msg}\n{'!' * 78}", file=sys.stderr)
    pytest.skip(msg)


# ------------------------------------------------------------------ JupyterLab server
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """A JupyterLab process on 127.0.0.1 with a token, rooted in a temporary directory."""

    def __init__(self, root: Path, work: Path):
        self.root = root
        self.port = _free_port()
        self.token = os.urandom(16).hex()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = ARTIFACTS / "jupyterlab.log"
        settings = work / "user-settings"
        # Quiet JupyterLab: no news/update toasts, every cell kept in the DOM.
        for ext, name, body in [
            ("@jupyterlab/apputils-extension", "notification",
             {"fetchNews": "false", "checkForUpdates": False}),
            ("@jupyterlab/notebook-extension", "tracker", {"windowingMode": "none"}),
        ]:
            d = settings / ext
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name}.jupyterlab-settings").write_text(json.dumps(body))
        cmd = [
            sys.executable, "-m", "jupyter", "lab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={root}", "--ServerApp.terminals_enabled=False",
            "--LabApp.expose_app_in_browser=True",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={work / 'workspaces'}",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        env = dict(os.environ, LABKIT_SPEED="report", JUPYTER_CONFIG_DIR=str(work / "config"),
                   JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
        # What a student has: no grading/strict/results switches from other tests or CI, and
        # matplotlib's default inline backend (MPLBACKEND=Agg would hide the figures).
        for var in ("LABKIT_GRADING", "LABKIT_CHECK_STRICT", "LABKIT_RESULTS", "MPLBACKEND"):
            env.pop(var, None)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def api(self, path: str, method: str = "GET"):
        """Call the server's REST API; return the decoded JSON (or None)."""
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 30) -> str:
        """The last n lines of the server log."""
        self._log.flush()
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def wait_ready(self, timeout: float = SERVER_START_TIMEOUT_S, fail: bool = True) -> bool:
        """Poll /api/status until the server answers; on early exit fail (or return False)."""
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            if self.proc.poll() is not None:
                if not fail and "already in use" in self.log_tail(200):
                    return False
                pytest.fail(f"jupyter lab exited with {self.proc.returncode} before answering; "
                            f"log {self.log_path}:\n{self.log_tail()}")
            try:
                self.api("/api/status")
                return True
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        pytest.fail(f"jupyter lab did not answer on {self.url} within {timeout:.0f} s; "
                    f"log {self.log_path}:\n{self.log_tail()}")

    def shutdown_kernels(self):
        """Delete every session (and so its kernel) — keeps one kernel alive at a time."""
        try:
            for s in self.api("/api/sessions") or []:
                self.api(f"/api/sessions/{s['id']}", method="DELETE")
            for k in self.api("/api/kernels") or []:
                self.api(f"/api/kernels/{k['id']}", method="DELETE")
        except (urllib.error.URLError, OSError):
            pass

    def stop(self):
        """Shut kernels down, then stop the server (SIGTERM, then SIGKILL); idempotent."""
        if self._log.closed:
            return
        if self.proc.poll() is None:
            self.shutdown_kernels()
            try:
                self.api("/api/shutdown", method="POST")
            except (urllib.error.URLError, OSError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """The system Chromium; loud skip if Playwright or Chromium is missing."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _loud_skip("playwright is not installed in this environment; "
                   "`pip install -e '.[test]'` (make install) provides it")
    path = _load_ensure_browser().find_chromium()
    if not path and os.environ.get("LABKIT_CHROMIUM"):
        _loud_skip(f"LABKIT_CHROMIUM={os.environ['LABKIT_CHROMIUM']} is not an executable "
                   "Chromium; fix or unset it")
    if not path:
        _loud_skip("no Chromium found (/usr/bin/chromium); run `python tools/ensure_browser.py` "
                   "as root or `sudo apt-get install -y chromium`")
    return path


# Module scope (not session): JupyterLab and Chromium stop right after the last browser test
# instead of idling through the rest of `make test`.
@pytest.fixture(scope="module")
def lab(chromium_path, tmp_path_factory):
    """A JupyterLab server over a temporary copy of solutions/ and notebooks/; always stopped."""
    work = tmp_path_factory.mktemp("browser")
    root = work / "root"
    root.mkdir()
    for sub in ("solutions", "notebooks"):
        if (SRC / sub).is_dir():
            shutil.copytree(SRC / sub, root / sub,
                            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    server = None
    try:
        for attempt in range(3):  # a free port can be taken between probing and binding
            server = LabServer(root, work)
            if server.wait_ready(fail=attempt == 2):
                break
            server.stop()
        yield server
    finally:
        if server is not None:
            server.stop()


@pytest.fixture(scope="module")
def playwright_driver(chromium_path):
    """One Playwright driver for the module: its sync API runs an event loop in this thread, so a
    second ``sync_playwright()`` while the first is alive fails ("Sync API inside the asyncio
    loop") — the JupyterLab and the book tests share this one."""
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        yield pw
    finally:
        pw.stop()


@pytest.fixture(scope="module")
def browser_context(chromium_path, lab, playwright_driver):
    """One headless Chromium (fresh profile dir) for this module; always closed."""
    flags = _load_ensure_browser().CHROMIUM_ARGS
    profile = tempfile.mkdtemp(prefix="labkit-chromium-")
    ctx = None
    try:
        # launch_persistent_context passes its own fresh --user-data-dir (profile).
        ctx = playwright_driver.chromium.launch_persistent_context(
            profile, executable_path=chromium_path, headless=True, args=flags,
            viewport={"width": 1400, "height": 1000})
        yield ctx
    finally:
        if ctx is not None:
            ctx.close()
        shutil.rmtree(profile, ignore_errors=True)


# ------------------------------------------------------------------ page helpers
_STATE_JS = r"""
(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return {ready: false, why: 'no window.jupyterapp yet'};
  let panel = null;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === path && w.content && w.content.widgets) panel = w;
  }
  if (!panel) return {ready: false, why: 'notebook panel not open yet'};
  const sc = panel.sessionContext;
  const kernel = sc && sc.session && sc.session.kernel;
  const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
  const cells = panel.content.widgets.map((c, i) => {
    const m = c.model;
    const code = m.type === 'code';
    const outs = code ? m.outputs.toJSON() : [];
    const prompt = c.node.querySelector('.jp-InputPrompt');
    const tags = (m.getMetadata ? m.getMetadata('tags') : (m.metadata || {}).tags) || [];
    return {
      i, type: m.type,
      // nbval's tag for a cell that demonstrates an error on purpose (Run All carries on)
      expects_error: tags.includes('raises-exception'),
      src: m.sharedModel.getSource(),
      count: code ? m.executionCount : null,
      prompt: prompt ? prompt.textContent.trim() : '',
      errors: outs.filter(o => o.output_type === 'error')
                  .map(o => `${o.ename}: ${o.evalue}`),
      tracebacks: outs.filter(o => o.output_type === 'stream' && o.name === 'stderr'
                                   && /Traceback \(most recent call last\)/.test(
                                        [].concat(o.text).join('')))
                      .map(o => [].concat(o.text).join('').slice(-300)),
      // DOM cross-check: in JupyterLab 4.6 an error output renders exactly like a stderr
      // stream (.jp-RenderedText[data-mime-type="application/vnd.jupyter.stderr"], checked by
      // hand), so the model's output_type above is the primary test and this counts what
      // the student would see as a traceback.
      dom_tracebacks: [...c.node.querySelectorAll(
          '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
          .filter(n => /Traceback \(most recent call last\)/.test(n.textContent)).length,
    };
  });
  const dialog = document.querySelector('.jp-Dialog');
  return {
    dialog: dialog ? dialog.innerText.slice(0, 300) : null,
    ready: !!(sc && sc.isReady && kernel),
    kernel: kernel ? kernel.status : null,
    indicator: ind ? ind.getAttribute('data-status') : null,
    cells,
  };
}
"""


_RUN_ALL_JS = r"""
async (path) => {
  const app = window.jupyterapp;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === path) app.shell.activateById(w.id);
  }
  await app.commands.execute('notebook:clear-all-cell-outputs');
  app.commands.execute('runmenu:run-all');
}
"""


_SAVE_JS = r"""
async (path) => {
  const app = window.jupyterapp;
  for (const w of app.shell.widgets('main')) {
    if (w.context && w.context.path === path) { app.shell.activateById(w.id); await w.context.save(); }
  }
}
"""


def _has_outputs(path: Path) -> bool:
    """The notebook on disk has code outputs (JupyterLab has written the run's outputs)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(c.get("outputs") for c in nb.get("cells", []) if c.get("cell_type") == "code")


def _state(page, path):
    return page.evaluate(_STATE_JS, path)


def _shot(page, name: str) -> Path:
    """Screenshot the page into test-artifacts/browser/<name>.png; return the path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"{name}.png"
    try:
        page.screenshot(path=str(out))
    except Exception:  # noqa: BLE001 - a failed screenshot must not hide the real failure
        pass
    return out


def _wait(page, cond, timeout: float, what: str, shot: str, poll: float = 0.5):
    """Call cond() -> (ok, detail) until ok; on timeout screenshot and fail clearly."""
    t_end = time.monotonic() + timeout
    ok, detail = False, None
    while time.monotonic() < t_end:
        ok, detail = cond()
        if ok:
            return detail
        page.wait_for_timeout(poll * 1000)
    png = _shot(page, f"{shot}-TIMEOUT")
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; last state: {detail}; "
                f"screenshot: {png}")


def _open(page, lab, path: str, shot: str, phases=None):
    """Open path in a fresh JupyterLab workspace and wait until its kernel is idle."""
    ws = "t" + os.urandom(4).hex()
    page.goto(f"{lab.url}/lab/workspaces/{ws}/tree/{path}?reset&token={lab.token}",
              wait_until="domcontentloaded", timeout=60_000)
    if phases is not None:
        _wait(page, lambda: (not _state(page, path).get("why"), None), 120,
              f"JupyterLab to load and open {path}", shot, poll=0.2)
        phases.mark("load JupyterLab")

    def ready():
        s = _state(page, path)
        ok = s.get("ready") and s.get("kernel") == "idle" and s.get("indicator") == "idle"
        return (ok, {k: v for k, v in s.items() if k != "cells"})

    _wait(page, ready, 120, f"{path} to open with an idle kernel", shot)


def _run_all(page, lab, path: str, shot: str, timeout: float = NB_TIMEOUT_S) -> dict:
    """Run All (runmenu:run-all) and wait until the kernel is idle and no cell is pending."""
    # Fresh outputs only (the committed solutions carry saved ones), then Run All on this
    # panel. Not awaited: completion is polled below so the timeout stays ours.
    page.evaluate(_RUN_ALL_JS, path)
    page.wait_for_timeout(1000)
    stable = {"n": 0}
    t0 = time.monotonic()

    def done():
        s = _state(page, path)
        code = [c for c in s["cells"] if c["type"] == "code" and c["src"].strip()]
        pending = [c["i"] for c in code if "*" in c["prompt"]]
        unrun = [c["i"] for c in code if c["count"] is None]
        errored = any(c["errors"] and not c["expects_error"] for c in code)
        if s.get("dialog") or s.get("kernel") in ("dead", "autorestarting", "restarting"):
            png = _shot(page, f"{shot}-FAILED")
            pytest.fail(f"{path}: Run All interrupted (kernel {s.get('kernel')!r}, dialog "
                        f"{s.get('dialog')!r}, cells not run {unrun[:10]}); see {png} and "
                        f"{lab.log_path}")
        idle = s.get("kernel") == "idle" and s.get("indicator") == "idle"
        # Run All stops at the first error: the cells after it stay unrun.
        finished = idle and not pending and (not unrun or errored)
        stable["n"] = stable["n"] + 1 if finished else 0
        # Idle, nothing queued, no error, yet cells never ran: Run All stopped (kernel restart).
        stalled = idle and not pending and unrun and not errored
        stable["stalled"] = stable.get("stalled", 0) + 1 if stalled else 0
        if stable["stalled"] >= 10:
            png = _shot(page, f"{shot}-FAILED")
            pytest.fail(f"{path}: Run All stopped with cells {unrun[:10]} never run and the "
                        f"kernel idle (did it restart?); see {png} and {lab.log_path}")
        info = {"kernel": s.get("kernel"), "indicator": s.get("indicator"),
                "pending cells": pending[:10], "unrun cells": unrun[:10],
                "dialog": s.get("dialog"),
                "elapsed_s": round(time.monotonic() - t0)}
        return (stable["n"] >= 2, info) if finished else (False, info)

    _wait(page, done, timeout, f"Run All of {path} to finish", shot)
    return _state(page, path)


def _error_report(state: dict) -> list[str]:
    """One line per cell that shows an error output or a traceback (unless tagged raises-exception)."""
    out = []
    for c in state["cells"]:
        if c["expects_error"]:
            continue
        first = c["src"].strip().splitlines()[0][:80] if c["src"].strip() else ""
        for e in c["errors"]:
            out.append(f"cell {c['i']} ({first!r}): {e}")
        for t in c["tracebacks"]:
            out.append(f"cell {c['i']} ({first!r}): traceback on stderr …{t[-150:]!r}")
        if c["dom_tracebacks"] and not (c["errors"] or c["tracebacks"]):
            out.append(f"cell {c['i']} ({first!r}): a traceback is rendered on the page")
    return out


_TRACEBACK = '.jp-OutputArea-output:has-text("Traceback (most recent call last)")'


def _scroll_to(page, selector: str):
    """Scroll the first element matching selector into view (for a useful screenshot)."""
    try:
        loc = page.locator(selector).first
        if loc.count():
            loc.scroll_into_view_if_needed(timeout=5000)
    except Exception:  # noqa: BLE001 - only cosmetic
        pass


def _checks(page) -> list[dict]:
    """Every rendered check verdict: data-passed and its text."""
    return page.evaluate("""() => [...document.querySelectorAll('div.labkit-check')]
        .map(n => ({passed: n.getAttribute('data-passed'), text: n.innerText.trim()}))""")


def _check_cells(path: Path) -> int:
    """Number of nbgrader check cells (grade_id check-*) in the notebook file."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for c in nb.get("cells", [])
               if str(c.get("metadata", {}).get("nbgrader", {}).get("grade_id", ""))
               .startswith("check-"))


# The tuner's output area without its controls: what must change when a slider moves.
_WIDGET_SNAPSHOT_JS = r"""
([sel, idx]) => {
  const slider = document.querySelectorAll(sel)[idx];
  if (!slider) return null;
  const area = slider.closest('.jp-OutputArea-output') || slider.closest('.jp-OutputArea');
  const clone = area.cloneNode(true);
  clone.querySelectorAll(sel + ', .widget-dropdown, .widget-select, '
                         + '.widget-toggle-buttons, .widget-readout').forEach(n => n.remove());
  const imgs = [...area.querySelectorAll('img')].map(i => i.src.slice(-400));
  const text = clone.textContent.replace(/\s+/g, ' ').trim();
  const readout = slider.querySelector('.widget-readout');
  return {text, imgs, readout: readout ? readout.textContent.trim() : null};
}
"""


def _move_slider_and_wait(page, shot: str):
    """Move the first slider one step; wait until the plot or numbers change and settle."""
    sliders = page.locator(SLIDER)
    if sliders.count() < 1:
        png = _shot(page, f"{shot}-FAILED")
        pytest.fail(f"no ipywidgets slider ({SLIDER}) rendered after Run All; every solution "
                    f"notebook needs a labkit.widgets.tuner with a numeric parameter (screenshot {png})")
    slider = sliders.first
    slider.scroll_into_view_if_needed()
    before = page.evaluate(_WIDGET_SNAPSHOT_JS, [SLIDER, 0])
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for key in ("ArrowRight", "ArrowLeft", "ArrowLeft"):
        handle.press(key)
        page.wait_for_timeout(300)
        now = page.evaluate(_WIDGET_SNAPSHOT_JS, [SLIDER, 0])
        if now["readout"] != before["readout"]:
            break
    else:
        _shot(page, f"{shot}-FAILED")
        pytest.fail(f"the slider did not move with the arrow keys (readout {before['readout']!r})")
    moved_to = now["readout"]
    stable = {"n": 0, "last": None}

    def changed():
        s = page.evaluate(_WIDGET_SNAPSHOT_JS, [SLIDER, 0])
        busy = bool(re.search(r"running(…|\.\.\.)", s["text"], re.IGNORECASE))
        differs = (s["text"], s["imgs"]) != (before["text"], before["imgs"])
        key = (s["text"], tuple(s["imgs"]))
        stable["n"] = stable["n"] + 1 if (differs and not busy and key == stable["last"]) else 0
        stable["last"] = key
        return (stable["n"] >= 2, {"busy": busy, "changed": differs, "text": s["text"][:200]})

    _wait(page, changed, WIDGET_TIMEOUT_S,
          f"the tuner to re-run after moving the slider {before['readout']} → {moved_to} "
          "(plot image or numbers should change, 'running…' should clear)", shot)


class _Phases:
    """Wall time per phase of one notebook, appended to test-artifacts/browser/timings.txt."""

    def __init__(self, name: str):
        self.name, self.t = name, time.monotonic()

    def mark(self, phase: str):
        now = time.monotonic()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with open(ARTIFACTS / "timings.txt", "a", encoding="utf-8") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {self.name:<24} {phase:<20} "
                    f"{now - self.t:6.1f} s\n")
        self.t = now


@contextlib.contextmanager
def _notebook_page(browser_context, lab, shot: str):
    """A new page for one notebook: a screenshot if the test raises in it; closed, and the
    kernels shut down, after."""
    page = browser_context.new_page()
    try:
        yield page
    except Exception:
        _shot(page, f"{shot}-FAILED")
        raise
    finally:
        page.close()
        lab.shutdown_kernels()


def _open_and_run_all(page, lab, path: str, shot: str):
    """Open the notebook, wait for its kernel, Run All: the phase timer (for the phases after)
    and the error outputs Run All left."""
    t = _Phases(shot)
    _open(page, lab, path, shot, t)
    t.mark("kernel idle")
    state = _run_all(page, lab, path, shot)
    t.mark("run all")
    return t, _error_report(state)


# ------------------------------------------------------------------ the tests
# the default tier drives lesson 00's student copy in JupyterLab (what a student opens first);
# every solution, lesson 00's included, is executed once by nbval there, and in the browser only
# in the full tier — so no notebook is executed twice in a tier
@pytest.mark.full       # default tier: nbval (strict checks); the browser by the student copy below
@pytest.mark.parametrize("name", SOLUTIONS or [pytest.param(
    None, marks=pytest.mark.skip(reason="BROWSER: no solutions/*.ipynb yet"))])
def test_solution_notebook_runs_in_jupyterlab(name, lab, browser_context):
    """Run All on a solution notebook: no errors, checks pass, a tuner slider re-runs."""
    path = f"solutions/{name}"
    shot = Path(name).stem
    with _notebook_page(browser_context, lab, shot) as page:
        t, errors = _open_and_run_all(page, lab, path, shot)
        if errors:
            _scroll_to(page, _TRACEBACK)
            png = _shot(page, f"{shot}-FAILED")
            pytest.fail(f"{path}: error output after Run All (screenshot {png}):\n"
                        + "\n".join(errors))
        checks = _checks(page)
        expected = _check_cells(lab.root / path)
        failing = [c["text"][:200] for c in checks if c["passed"] != "true"]
        if failing or len(checks) < expected:
            _scroll_to(page, 'div.labkit-check[data-passed="false"]')
            png = _shot(page, f"{shot}-FAILED")
            assert not failing, f"{path}: checks not passing (screenshot {png}): {failing}"
            pytest.fail(f"{path}: {expected} check cells but only {len(checks)} "
                        f"div.labkit-check verdicts rendered (screenshot {png})")
        _move_slider_and_wait(page, shot)
        t.mark("slider → re-run")
        _shot(page, shot)


def _stub_hints(path: Path) -> list[str]:
    """The literal messages of every `raise NotImplementedError("…")` in the notebook's code."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    hints = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        src = "".join(cell.get("source", []))
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                    and getattr(node.exc.func, "id", "") == "NotImplementedError"
                    and node.exc.args and isinstance(node.exc.args[0], ast.Constant)):
                hints.append(str(node.exc.args[0].value))
    return hints


def test_student_copy_shows_hints_not_tracebacks(lab, browser_context):
    """Run All on notebooks/00_tools.ipynb: checks fail with 'not implemented' + hint, no errors;
    saved, its outputs show no exercise's answer before it is earned (as
    tests/test_notebooks.py's headless run of the student copies, full tier, asserts)."""
    path = STUDENT_NB
    if not (lab.root / path).exists():
        pytest.skip(f"BROWSER: {path} not generated yet (make notebooks)")
    shot = "student-" + Path(path).stem
    with _notebook_page(browser_context, lab, shot) as page:
        _, errors = _open_and_run_all(page, lab, path, shot)
        _scroll_to(page, _TRACEBACK if errors else "div.labkit-check")
        png = _shot(page, shot)
        assert not errors, (
            f"{path}: the student copy shows errors/tracebacks after Run All "
            f"(screenshot {png}):\n" + "\n".join(errors))
        checks = _checks(page)
        assert checks, f"{path}: no check verdict (div.labkit-check) rendered (screenshot {png})"
        passing = [c["text"][:120] for c in checks if c["passed"] != "false"]
        assert not passing, f"{path}: checks pass on the unsolved stubs: {passing}"
        hints = [h for h in _stub_hints(lab.root / path) if h.strip()]
        assert hints, f"{path}: no `raise NotImplementedError(\"hint\")` stub found"
        for c in checks:
            text = " ".join(c["text"].split())
            assert "not implemented" in text, (
                f"{path}: a check fails for another reason than 'not implemented': {text[:200]}")
            assert any(" ".join(h.split())[:40] in text for h in hints), (
                f"{path}: check verdict does not show the stub's hint: {text[:200]}")
        page.evaluate(_SAVE_JS, path)
        saved = lab.root / path
        _wait(page, lambda: (_has_outputs(saved), None), 60, f"{path} to be saved", shot)
        from test_notebooks import _no_answer_before_it_is_earned
        _no_answer_before_it_is_earned(saved, nbformat.read(saved, as_version=4))


# ------------------------------------------------------------------ the course book (make book)
_BOOK_PAGE_JS = r"""
() => {
  const imgs = [...document.querySelectorAll('article img, main img')];
  const outImgs = [...document.querySelectorAll('.cell_output img, .output img')];
  const math = document.querySelectorAll('span.math, div.math').length;
  const typeset = document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container, .MathJax_CHTML').length;
  return {
    title: document.title,
    imgs: imgs.map(i => ({src: i.getAttribute('src'), complete: i.complete, w: i.naturalWidth})),
    out_imgs: outImgs.length,
    math, typeset,
    downloads: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
                   .filter(h => h.includes('_downloads/')),
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
  };
}
"""


@pytest.fixture(scope="session")
def book_site(tmp_path_factory) -> Path:
    """The course book, built once per test run by tools/build_book.py into a temporary folder
    (what `make book` writes into build/book/); the repository is not written to."""
    try:
        import jupyter_book  # noqa: F401
        import myst_nb  # noqa: F401
    except ImportError:
        _loud_skip("jupyter-book / myst-nb are not installed; `pip install -e '.[test]'` "
                   "(make install) provides them through the book extra")
    out = tmp_path_factory.mktemp("book") / "site"
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"),
                           "--root", str(SRC), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"tools/build_book.py failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                    f"{proc.stderr[-4000:]}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "timings.txt", "a", encoding="utf-8") as f:
        f.write(f"{time.strftime('%H:%M:%S')} {'book build':<24} {'':<20} "
                f"{time.monotonic() - t0:6.1f} s\n")
    return out


@pytest.fixture(scope="module")
def book_page(chromium_path, playwright_driver):
    """A headless Chromium page that may only load file:// URLs (the book must work offline);
    ``page.blocked`` lists every other URL the page tried to fetch."""
    flags = _load_ensure_browser().CHROMIUM_ARGS
    browser = None
    try:
        browser = playwright_driver.chromium.launch(executable_path=chromium_path, headless=True,
                                                    args=flags)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.blocked = []

        def _route(route):
            url = route.request.url
            if url.startswith(("file:", "data:", "blob:", "about:")):
                route.continue_()
            else:
                page.blocked.append(url)
                route.abort()

        page.route("**/*", _route)
        yield page
    finally:
        if browser is not None:
            browser.close()


def _png_outputs(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum("image/png" in o.get("data", {}) for c in nb.get("cells", [])
               for o in c.get("outputs", []))


@pytest.mark.full
def test_book_landing_page_links_labs_and_student_copies(book_site, book_page):
    """build/book/index.html: a row per lab with its page and its student copy's download."""
    from labkit import registry

    page = book_page
    page.goto((book_site / "index.html").as_uri(), wait_until="load")
    info = page.evaluate(_BOOK_PAGE_JS)
    _shot(page, "book-index")
    for lab in registry.LABS:
        assert any(h.split("#")[0] == f"{lab.notebook}.html" for h in info["links"]), (
            f"landing page has no link to the {lab.notebook} page: {info['links']}")
        hits = [h for h in info["downloads"] if h.endswith(f"/{lab.notebook}.ipynb")]
        assert hits, f"landing page has no download of notebooks/{lab.notebook}.ipynb: {info['downloads']}"
        student = book_site / hits[0]
        assert student.exists(), f"the download link {hits[0]} points at no file"
        nb = json.loads(student.read_text(encoding="utf-8"))
        assert nb["metadata"]["labkit"]["generated_from"].startswith("solutions/"), (
            f"{hits[0]} is not a student copy (labkit release)")
        assert not any(c.get("outputs") for c in nb["cells"]), f"{hits[0]} has outputs"
    assert not page.blocked, f"the landing page fetched from the network: {page.blocked}"


@pytest.mark.full
@pytest.mark.parametrize("lab", [l.notebook for l in __import__("labkit.registry").registry.LABS])
def test_book_lab_page_renders_figures(lab, book_site, book_page):
    """A lab's page shows its executed outputs: every figure loads (naturalWidth > 0), as many
    figures as the solution has PNG outputs (tuner widgets included), formulas typeset."""
    page = book_page
    page.goto((book_site / f"{lab}.html").as_uri(), wait_until="load")
    try:
        page.wait_for_function(
            "() => [...document.images].every(i => i.complete)", timeout=30_000)
    except Exception:
        pass  # reported below with the list of images
    info = page.evaluate(_BOOK_PAGE_JS)
    if info["math"]:
        try:
            page.wait_for_function(
                "() => document.querySelectorAll('.MathJax, .MathJax_Display, mjx-container')"
                ".length > 0", timeout=30_000)
        except Exception:
            pass
        info = page.evaluate(_BOOK_PAGE_JS)
    png = _shot(page, f"book-{lab}")
    broken = [i["src"] for i in info["imgs"] if not (i["complete"] and i["w"] > 0)]
    assert not broken, f"{lab}.html: images that did not load (screenshot {png}): {broken}"
    expected = _png_outputs(SRC / "solutions" / f"{lab}.ipynb")
    assert expected >= 1, f"solutions/{lab}.ipynb has no figure output"
    assert info["out_imgs"] >= expected, (
        f"{lab}.html shows {info['out_imgs']} output images, the executed solution has "
        f"{expected} PNG outputs (screenshot {png})")
    if info["math"]:
        assert info["typeset"], f"{lab}.html: formulas not typeset by MathJax (screenshot {png})"
    assert not page.blocked, f"{lab}.html fetched from the network: {page.blocked}"


# ------------------------------------------------------------ the student book (make book-student)
_STUDENT_PAGE_JS = r"""
() => {
  const main = document.querySelector('main') || document.body;
  // in plain view: this Chromium's innerText includes the content of a closed <details>, so
  // walk the text nodes and keep those the browser shows (checkVisibility: no display:none,
  // no content-visibility:hidden ancestor — a closed <details> hides its content that way)
  const shown = el => !!el && el.checkVisibility({visibilityProperty: true});
  const walk = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let visible = '';
  for (let n = walk.nextNode(); n; n = walk.nextNode())
    if (shown(n.parentElement)) visible += n.nodeValue;
  const hints = [...document.querySelectorAll('details.labkit-hint')].map(d => ({
    exercise: d.dataset.exercise, tier: Number(d.dataset.tier), open: d.open,
    summary_shown: shown(d.querySelector(':scope > summary')),
    text_shown: shown(d.querySelector(':scope > .labkit-hint-text')),
  }));
  // everything but the hint toggles, hidden or not: a solution line may be nowhere else
  const rest = main.cloneNode(true);
  rest.querySelectorAll('details.labkit-hint').forEach(d => d.remove());
  return {
    title: document.title,
    h1: [...main.querySelectorAll('h1')].map(h => h.textContent.trim()),
    visible_text: visible,
    text_outside_hints: rest.textContent,
    code_cells: main.querySelectorAll('.cell_input').length,
    outputs: main.querySelectorAll('.cell_output, .output').length,
    hints,
  };
}
"""


def _solution_only_lines(stem: str) -> set[str]:
    """The code lines only the solution has (as tests/test_book.py's _solution_lines takes them:
    stripped, longer than 25 characters, in no cell of the student copy)."""
    sol = json.loads((SRC / "solutions" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    stu = json.loads((SRC / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    theirs = {ln.strip() for c in stu["cells"] for ln in "".join(c["source"]).splitlines()}
    return {ln.strip() for c in sol["cells"] if c["cell_type"] == "code"
            for ln in "".join(c["source"]).splitlines()
            if len(ln.strip()) > 25 and ln.strip() not in theirs}


def _leaks(text: str, solution: set[str], student: set[str]) -> list[str]:
    """The solution-only lines that ``text`` contains: a line of the page that holds one and is
    not itself a line of the student copy (the stub keeps e.g. ``H = np.empty(…)  # comment``,
    whose solution twin has no comment)."""
    lines = {ln.strip() for ln in text.splitlines()} - student
    return sorted({sol for sol in solution for ln in lines if sol in ln})


def _student_exercises(stem: str) -> list[str]:
    nb = json.loads((SRC / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [c["metadata"]["nbgrader"]["grade_id"][len("ex-"):] for c in nb["cells"]
            if c.get("metadata", {}).get("nbgrader", {}).get("solution")
            and c["metadata"]["nbgrader"].get("grade_id", "").startswith("ex-")]


@pytest.fixture(scope="session")
def student_book_site(tmp_path_factory) -> Path:
    """The student book (`make book-student`), built once per run by tools/build_book.py's
    build(…, student=True) into a temporary folder; the repository is not written to."""
    try:
        import jupyter_book  # noqa: F401
        import myst_nb  # noqa: F401
    except ImportError:
        _loud_skip("jupyter-book / myst-nb are not installed; `pip install -e '.[test]'` "
                   "(make install) provides them through the book extra")
    tool = load_tool("build_book")
    t0 = time.monotonic()
    index = tool.build(SRC, tmp_path_factory.mktemp("book-student") / "site", student=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with open(ARTIFACTS / "timings.txt", "a", encoding="utf-8") as f:
        f.write(f"{time.strftime('%H:%M:%S')} {'student book build':<24} {'':<20} "
                f"{time.monotonic() - t0:6.1f} s\n")
    return index.parent


def _offline(url: str) -> bool:
    """A URL that does not leave the machine: a file, inline data, or this host's loopback."""
    if url.startswith(("file:", "data:", "blob:", "about:")):
        return True
    return bool(re.match(r"^(https?|wss?)://127\.0\.0\.1(:\d+)?(/|$)", url))


@pytest.mark.full       # default tier: test_book.py::test_student_book_stages_only_student_copies
def test_student_book_landing_page_links_every_lab(student_book_site, book_page):
    """build/book-student/index.html: every lab's page and its student copy's download; it
    speaks of student copies, never of executed solutions; nothing fetched from the network."""
    from labkit import registry

    page = book_page
    page.blocked.clear()
    page.goto((student_book_site / "index.html").as_uri(), wait_until="load")
    info = page.evaluate(_BOOK_PAGE_JS)
    text = page.inner_text("main")
    _shot(page, "student-book-index")
    assert "student copies" in text and "executed solution" not in text.lower()
    for lab in registry.LABS:
        assert any(h.split("#")[0] == f"{lab.notebook}.html" for h in info["links"]), (
            f"student book's landing page has no link to {lab.notebook}: {info['links']}")
        assert any(h.endswith(f"/{lab.notebook}.ipynb") for h in info["downloads"]), (
            f"student book's landing page has no download of {lab.notebook}.ipynb")
    assert not [u for u in page.blocked if not _offline(u)], (
        f"the student book's landing page fetched from the network: {page.blocked}")


@pytest.mark.full       # default tier: test_book.py's staging tests (no solution line, no
#                         output, each exercise's hint tiers folded after it)
@pytest.mark.parametrize("lab", [l.notebook for l in __import__("labkit.registry").registry.LABS])
def test_student_book_page_hides_answers_and_folds_hints(lab, student_book_site, book_page):
    """A lab's page in the student book: it renders (its heading, every code cell of the student
    copy); no line of solution code anywhere outside the hint toggles, none in plain view with
    the toggles closed; no cell output; each exercise's hint tiers (labkit.hints) present,
    closed, nested — clicking tier k opens it and shows tier k+1's toggle, still closed; no
    request leaves the machine."""
    from labkit import hints

    page = book_page
    page.blocked.clear()
    page.goto((student_book_site / f"{lab}.html").as_uri(), wait_until="load")
    info = page.evaluate(_STUDENT_PAGE_JS)
    png = _shot(page, f"student-book-{lab}")

    stu = json.loads((SRC / "notebooks" / f"{lab}.ipynb").read_text(encoding="utf-8"))
    code_cells = sum(c["cell_type"] == "code" for c in stu["cells"])
    assert info["h1"], f"{lab}.html has no heading (screenshot {png})"
    assert info["code_cells"] >= code_cells, (
        f"{lab}.html shows {info['code_cells']} code cells, the student copy has {code_cells}")

    solution = _solution_only_lines(lab)
    assert solution, f"solutions/{lab}.ipynb has no solution-only line: the check would be empty"
    theirs = {ln.strip() for c in stu["cells"] for ln in "".join(c["source"]).splitlines()}
    in_view = _leaks(info["visible_text"], solution, theirs)
    assert not in_view, f"{lab}.html shows solution code (screenshot {png}): {in_view[:3]}"
    hidden = _leaks(info["text_outside_hints"], solution, theirs)
    assert not hidden, f"{lab}.html carries solution code outside the hint toggles: {hidden[:3]}"
    assert info["outputs"] == 0, f"{lab}.html has {info['outputs']} cell outputs (screenshot {png})"

    exercises = _student_exercises(lab)
    assert exercises, f"notebooks/{lab}.ipynb has no exercise cell"
    want = sorted((ex, k) for ex in exercises for k in range(1, hints.tiers(ex) + 1))
    got = sorted((h["exercise"], h["tier"]) for h in info["hints"])
    assert got == want, f"{lab}.html: hint toggles {got}, labkit.hints has {want}"
    for h in info["hints"]:
        assert not h["open"] and not h["text_shown"], f"{lab}.html: a hint is open on load: {h}"
        assert h["summary_shown"] == (h["tier"] == 1), (
            f"{lab}.html: only each exercise's first tier may be offered before it is opened: {h}")

    state = ("(key) => { const d = document.querySelector("
             "`details.labkit-hint[data-exercise='${key[0]}'][data-tier='${key[1]}']`);"
             " const shown = el => el.checkVisibility({visibilityProperty: true});"
             " return {open: d.open, text: shown(d.querySelector(':scope > .labkit-hint-text')),"
             " body: d.querySelector(':scope > .labkit-hint-text').textContent}; }")
    for ex in exercises:
        n = hints.tiers(ex)
        for k in range(1, n + 1):
            sel = f"details.labkit-hint[data-exercise='{ex}'][data-tier='{k}'] > summary"
            page.locator(sel).scroll_into_view_if_needed()
            page.locator(sel).click()
            now = page.evaluate(state, [ex, k])
            assert now["open"] and now["text"], f"{lab}.html: {ex} hint {k} did not open on click"
            text = " ".join(hints.get(ex).texts[k - 1].replace("`", "").split())
            assert text == " ".join(now["body"].split()), f"{lab}.html: {ex} hint {k}'s text"
            if k < n:
                after = page.evaluate(state, [ex, k + 1])
                assert not after["open"] and not after["text"], (
                    f"{lab}.html: opening {ex} hint {k} also showed hint {k + 1}")
                assert page.locator(f"details.labkit-hint[data-exercise='{ex}']"
                                    f"[data-tier='{k + 1}'] > summary").is_visible()
    _shot(page, f"student-book-{lab}-hints-open")
    assert not [u for u in page.blocked if not _offline(u)], (
        f"{lab}.html fetched from the network: {page.blocked}")

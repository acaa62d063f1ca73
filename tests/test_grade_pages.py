"""The grader's HTML pages in headless Chromium (marker ``browser``): report.html and one
feedback/<student>.html are written from a small class's results, opened, checked for their
parts (plots decoded, no hidden inputs) and screenshotted to test-artifacts/grading/."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tooling import load_tool

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "grading"

pytestmark = pytest.mark.browser


def _chromium() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (`pip install -e '.[test]'`)")
    mod = load_tool("ensure_browser")
    path = mod.find_chromium()
    if not path:
        pytest.skip("no Chromium found (/usr/bin/chromium); `python tools/ensure_browser.py`")
    return path, mod.CHROMIUM_ARGS


def _results() -> list[dict]:
    env = {"cpu": "Test CPU [x86_64]", "isa": "sse4_2 avx2", "cores": 2, "numba": "0.0",
           "llvmlite": "0.0", "numpy": "0.0"}

    def ex(name, pts, top, verdict, msg, ratio=None, **kw):
        d = {"exercise": name, "points": pts, "max_points": top, "verdict": verdict,
             "message": msg, "seed": 123456789012345, "details": {}, **kw}
        if ratio is not None:
            d["details"]["speed_ratio"] = ratio
        return d

    out = []
    for k, (student, a, b, flags) in enumerate([
            ("alice", True, True, {}), ("bob", False, False, {}),
            ("carol", True, False, {"": ["2 copies of 00_tools.ipynb: carol/00_tools.ipynb "
                                         "counts (best score)"]}),
            ("dave", True, True, {"colsum": ["exercise cell found by its function colsum() "
                                             "(its cell metadata is missing); graded"]})]):
        out.append({
            "student": student, "notebook": f"{student}.ipynb", "canonical": "00_tools.ipynb",
            "status": "graded", "flags": flags, "duration_s": 8.0 + 3 * k,
            "environment": env,
            "exercises": [
                ex("colsum", 2 if a else 0, 2, "passed" if a else "not implemented",
                   "column sums exact; vectorised, 256-bit; 2.9× faster" if a else
                   "your function raised NotImplementedError", 2.9 - 0.2 * k if a else None,
                   hint="" if a else "stuck? hints.next('colsum') shows hint 2 of 3 (approach)"),
                ex("dot_partials", 2 if b else 0, 2, "passed" if b else "not fast enough",
                   "1.9× faster than dot_plain" if b else "1.2× faster, need ≥ 1.5×",
                   1.9 if b else 1.2, hint="" if b else "stuck? hints.next('dot_partials') "
                                                        "shows hint 2 of 3 (approach)")]})
    # speed that cannot be judged is not a pass: a check still inconclusive after the batch's
    # re-measurement needs review
    out[3]["exercises"][1].update(verdict="inconclusive", points=0, remeasured=True, review=True,
                                  message="1.4× faster, interval straddles the 1.5× threshold")
    return out


def test_report_and_feedback_pages_in_chromium():
    from playwright.sync_api import sync_playwright

    from labkit.grade import write_pages

    chromium, flags = _chromium()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="labkit-grade-pages-"))
    profile = tempfile.mkdtemp(prefix="labkit-chromium-")
    try:
        report, feedback = write_pages(_results(), work)
        bob = next(p for p in feedback if p.name == "bob.html")
        assert "123456789012345" not in bob.read_text()                # no hidden seed
        pw = sync_playwright().start()
        try:
            ctx = pw.chromium.launch_persistent_context(
                profile, executable_path=chromium, headless=True, args=flags,
                viewport={"width": 1100, "height": 900})
            page = ctx.new_page()
            page.goto(report.as_uri())
            assert page.title() == "labkit grade — class report"
            assert page.locator("h2", has_text="Pass rate per exercise").count() == 1
            widths = page.eval_on_selector_all("img", "imgs => imgs.map(i => i.naturalWidth)")
            assert len(widths) == 3 and all(w > 100 for w in widths)     # decoded PNG plots
            assert page.locator("td", has_text="cell metadata is missing").count() == 1
            review = page.locator("h2#needs-review + p + table")
            assert review.locator("tr").count() == 2                     # head + dave's row
            assert "dave" in review.inner_text() and "straddles" in review.inner_text()
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
            page.click("text=bob")                                       # report → feedback
            assert page.url.endswith("feedback/bob.html")
            assert page.locator("h1").inner_text() == "Feedback for bob"
            assert page.locator("td.bad").count() == 2
            assert "hints.next('colsum')" in page.inner_text("body")
            assert "an instructor will look at this row" not in page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "feedback-bob.png"), full_page=True)
            page.goto(report.as_uri())
            page.click("a[href='feedback/dave.html']")
            assert "an instructor will look at this row" in page.inner_text("body")
            ctx.close()
        finally:
            pw.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(profile, ignore_errors=True)
    for name in ("report.png", "feedback-bob.png"):
        assert (ARTIFACTS / name).stat().st_size > 5000


"""HTML pages: ``feedback/<student>.html`` (each exercise: verdict, message, the next hint; for
an open challenge the student's place on the leaderboard and the check's feedback facts — never
the hidden inputs: no seed, no other check details) and ``report.html`` for the class (pass
rate per exercise, measured speedups, the challenges' leaderboard, time per notebook, the rows
that need an instructor's review, flags; matplotlib plots inline), with ``leaderboard.html``
beside it (the leaderboard alone, to share with the class) when a lab's challenge was graded.

The leaderboard ranks each challenge by the ratio to labkit's kernel each notebook's check
measured in the same grading run (:func:`.report.leaderboards`); students are anonymised
("student A", …) unless the course file opts names in (``leaderboard_names = true``,
docs/course.md) — the caller passes ``names``."""
from __future__ import annotations

import base64
import hashlib
import html
import io
import re
import time
from collections import Counter
from pathlib import Path

from .report import (counted, is_challenge, leaderboards, needs_review, ordinal, place_line,
                     review_reason)

#: what a student's page says beside a row the grader flagged for review
REVIEW_NOTE = "an instructor will look at this row"

__all__ = ["write_feedback", "write_report", "write_pages", "page_names", "leaderboard_html"]

_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.35em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.ok{color:#1a7f37;font-weight:600}.bad{color:#b3261e;font-weight:600}
.flag{background:#fff4e5;border-left:4px solid #e67e22;padding:.3em .6em;margin:.3em 0}
.hint{color:#555;font-style:italic}.small{color:#666;font-size:.9em}img{max-width:100%}
.board{background:#f3f6fb;border-left:4px solid #4c72b0;padding:.4em .7em;margin:.6em 0}
table.facts td{border:none;padding:.1em .5em}h3{font-size:1.05em;margin-top:1.2em}"""


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body>{body}</body></html>\n")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:80] or "student"


def page_names(results: list[dict]) -> dict[str, str]:
    """Each student's feedback file name (no ``.html``): :func:`_safe` of the name, and where
    two students' would be one file (also told apart only by case: case-insensitive file
    systems) ``-<8 hex of the name's sha256>`` appended to each of them (``-2``, ``-3`` … on
    top if even that is taken)."""
    students = sorted({r["student"] for r in counted(results)})
    base = {s: _safe(s) for s in students}
    n = Counter(b.lower() for b in base.values())
    out = {s: b for s, b in base.items() if n[b.lower()] == 1}
    used = {b.lower() for b in out.values()}
    for s in students:
        if s in out:
            continue
        tag = hashlib.sha256(s.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        name = stem = f"{base[s]}-{tag}"
        k = 2
        while name.lower() in used:
            name, k = f"{stem}-{k}", k + 1
        used.add(name.lower())
        out[s] = name
    return out


def _e(x) -> str:
    return html.escape(str(x))


def _x(v) -> str:
    return f"{float(v):.2f}×" if isinstance(v, (int, float)) and not isinstance(v, bool) else "—"


def challenge_facts(facts: dict) -> list[tuple[str, str]]:
    """A challenge's feedback facts (``details["challenge"]``) as (what, value) rows: the speed
    beside both anchors, the position, the hot loop's vector width and lanes, the roof share,
    the threads, the lab's steps."""
    from labkit.check.feedback import hot_loop     # the notebook's feedback cell says it so too
    rows = []
    if "ratio" in facts:
        rows.append(("your speed ÷ labkit's kernel's",
                     f"{_x(facts.get('ratio'))} (interval {_x(facts.get('ratio_low'))} – "
                     f"{_x(facts.get('ratio_high'))})"))
    if "vs_start" in facts:
        rows.append(("your speed ÷ the starting point's", _x(facts.get("vs_start"))))
    if "scale" in facts:
        rows.append(("labkit's kernel ÷ the starting point (the scale)", _x(facts.get("scale"))))
    if isinstance(facts.get("position"), (int, float)):
        rows.append(("position (0 = the starting point, 1 = labkit's kernel)",
                     f"{facts['position']:.2f}"))
    loop = hot_loop(facts)
    if loop is not None:
        rows.append(("your hot loop", loop))
    if isinstance(facts.get("roof_share"), (int, float)):
        rows.append((f"share of {facts.get('roof') or 'the roof'}", f"{facts['roof_share']:.0%}"))
    if facts.get("threads"):
        rows.append(("threads", str(facts["threads"])))
    for step, ratio in (facts.get("steps") or {}).items():
        rows.append((f"the lab's {step}: its time ÷ yours", _x(ratio)))
    return rows


def _challenge_block(x, label: str | None) -> str:
    """A student's place on one challenge and the check's feedback facts."""
    who = f" (on the class leaderboard: <b>{_e(label)}</b>)" if label else ""
    out = [f"<div class=board><b>Leaderboard:</b> {_e(place_line(x))}{who}"]
    rows = challenge_facts(x.facts)
    if rows:
        out.append("<table class=facts>" + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
                                                  for k, v in rows) + "</table>")
    out.append("</div>")
    return "".join(out)


def feedback_html(student: str, results: list[dict], names=None) -> str:
    """The page one student gets (``names``: the leaderboard's, as :func:`leaderboard_html`)."""
    mine = [r for r in counted(results) if r["student"] == student]
    boards = leaderboards(results, names) if any(
        is_challenge(e) for r in mine for e in r["exercises"]) else {}
    own = {ex: next((x for x in rows if x.student == student), None)
           for ex, rows in boards.items()}
    got = sum(float(e["points"]) for r in mine for e in r["exercises"])
    top = sum(float(e["max_points"]) for r in mine for e in r["exercises"])
    body = [f"<h1>Feedback for {_e(student)}</h1>",
            f"<p><b>{got:g} / {top:g} points</b></p>"]
    for r in mine:
        body.append(f"<h2>{_e(r.get('canonical') or r['notebook'])} "
                    f"<span class=small>({_e(r['notebook'])})</span></h2>")
        for fl in r.get("flags", {}).get("", []):
            body.append(f"<div class=flag>{_e(fl)}</div>")
        body.append("<table><tr><th>exercise</th><th>verdict</th><th>points</th>"
                    "<th>message</th></tr>")
        for e in r["exercises"]:
            ok = e["verdict"] == "passed"
            hint = e.get("hint") or ""
            msg = _e(e["message"]) + (f"<div class=hint>{_e(hint)}</div>" if hint and not ok
                                      else "")
            for fl in r.get("flags", {}).get(e["exercise"], []):
                msg += f"<div class=flag>{_e(fl)}</div>"
            if needs_review(e):
                msg += (f"<div class='flag review'>{REVIEW_NOTE}: "
                        f"{_e(review_reason(e) or 'flagged by the grader')}</div>")
            body.append(f"<tr><td>{_e(e['exercise'] or '—')}</td>"
                        f"<td class={'ok' if ok else 'bad'}>{'✔' if ok else '✘'} "
                        f"{_e(e['verdict'])}</td><td>{float(e['points']):g} / "
                        f"{float(e['max_points']):g}</td><td>{msg}</td></tr>")
        body.append("</table>")
        for e in r["exercises"]:
            x = own.get(e["exercise"])
            if x is not None and x.notebook == r.get("notebook"):
                body.append(_challenge_block(x, x.label if not names else None))
    body.append(f"<p class=small>graded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
                "by labkit grade</p>")
    return _page(f"Feedback — {student}", "\n".join(body))


def write_feedback(results: list[dict], folder, names=None) -> list[Path]:
    """``folder/<name>.html`` for every student (names: :func:`page_names`); returns the
    paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for s, name in sorted(page_names(results).items()):
        p = folder / f"{name}.html"
        p.write_text(feedback_html(s, results, names), encoding="utf-8")
        out.append(p)
    return out


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return ("<img alt=plot src='data:image/png;base64,"
            + base64.b64encode(buf.getvalue()).decode() + "'>")


def _stats(results: list[dict]):
    ex: dict[str, list[int]] = {}
    speed: dict[str, list[float]] = {}
    for r in counted(results):
        for e in r["exercises"]:
            if not e["exercise"]:
                continue
            s = ex.setdefault(e["exercise"], [0, 0])
            s[0] += e["verdict"] == "passed"
            s[1] += 1
            ratio = (e.get("details") or {}).get("speed_ratio")
            if isinstance(ratio, (int, float)):
                speed.setdefault(e["exercise"], []).append(float(ratio))
    return ex, speed


def _board_table(ex: str, rows: list, instructor: bool) -> str:
    """One challenge's leaderboard: the ranked rows; for the instructor (report.html) also the
    rest with why, for the class (leaderboard.html) only how many and why."""
    ranked = [x for x in rows if x.place is not None]
    rest = [x for x in rows if x.place is None]
    cpus = {x.cpu for x in ranked if x.cpu}
    several = len(cpus) > 1
    out = [f"<h3 id='board-{_e(ex)}'>{_e(ex)}</h3>"]
    if ranked:
        out.append("<table class=leaderboard><tr><th>place</th><th>student</th>"
                   "<th>speed ÷ labkit's kernel</th><th>interval</th><th>tier</th>"
                   "<th>points</th>" + ("<th>CPU</th>" if several else "") + "</tr>")
        for x in ranked:
            f = x.facts
            out.append(f"<tr><td>{ordinal(x.place)}{' (tied)' if x.tied else ''}</td>"
                       f"<td>{_e(x.label)}</td><td>{_x(x.ratio)}</td>"
                       f"<td>{_x(f.get('ratio_low'))} – {_x(f.get('ratio_high'))}</td>"
                       f"<td>{_e(x.tier)}</td><td>{x.points:g} / {x.max_points:g}</td>"
                       + (f"<td>{_e(x.cpu)}</td>" if several else "") + "</tr>")
        out.append("</table>")
        if several:
            out.append("<p class=small>Graded on more than one kind of CPU: each ratio was "
                       "measured beside labkit's kernel on the notebook's own machine, so it is "
                       "fair there; ratios from different CPUs compare less closely.</p>")
    else:
        out.append("<p>Nobody is ranked yet.</p>")
    if rest and instructor:
        out.append("<p class=small>Not ranked:</p><table class=unranked><tr><th>student</th>"
                   "<th>why</th></tr>" + "".join(f"<tr><td>{_e(x.label)}</td><td>{_e(x.why)}"
                                                 "</td></tr>" for x in rest) + "</table>")
    elif rest:
        why = Counter(x.why.split(":")[0] for x in rest)
        out.append("<p class=small>Not ranked: " + _e(", ".join(
            f"{n} {w}" for w, n in sorted(why.items()))) + ".</p>")
    return "\n".join(out)


def leaderboard_section(results: list[dict], names=None, instructor: bool = True) -> str:
    """The leaderboard of every challenge graded (``""`` when none was)."""
    boards = leaderboards(results, names)
    if not boards:
        return ""
    who = ("names as the course file opts in" if names else
           "students anonymised (a course file's <code>leaderboard_names = true</code> shows "
           "names); each student's feedback page says their label and place")
    return ("<h2 id=leaderboard>Leaderboard</h2><p>Each open challenge ranked by the student's "
            "speed ÷ labkit's kernel's (labkit's kernel = 1.00×), measured by each notebook's "
            "check in this grading run beside labkit's kernel and the starting point; the interval "
            f"is the check's, an equal ratio shares a place; {who}.</p>"
            + "".join(_board_table(ex, rows, instructor) for ex, rows in boards.items()))


def leaderboard_html(results: list[dict], names=None) -> str:
    """``leaderboard.html``: the leaderboard alone, to share with the class (no points table,
    no names unless opted in, the unranked only counted)."""
    body = ["<h1>Class leaderboard</h1>",
            f"<p class=small>graded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by "
            "labkit grade</p>", leaderboard_section(results, names, instructor=False)]
    return _page("labkit grade — leaderboard", "\n".join(body))


def report_html(results: list[dict], names=None) -> str:
    """The class report (``names``: the leaderboard's, as :func:`leaderboard_html`)."""
    plt = _pyplot()
    res = counted(results)
    ex, speed = _stats(results)
    body = [_intro_section(results, res), _pass_rate_section(plt, ex),
            _speedup_section(plt, speed), leaderboard_section(results, names),
            _time_section(plt, res), _students_section(results, res), _review_section(res),
            _flags_section(results)]
    return _page("labkit grade — class report", "\n".join(body))


def _pyplot():
    """matplotlib's pyplot, drawing off-screen (Agg) unless a backend is already chosen."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    return plt


def _intro_section(results: list[dict], res: list[dict]) -> str:
    """The heading: how many students and notebooks, when, on which machine and CPUs."""
    body = ["<h1>Class report</h1>",
            f"<p>{len({r['student'] for r in res})} students, {len(res)} notebooks graded "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.</p>"]
    env = next((r.get("environment") for r in res if r.get("environment")), None)
    if env:
        body.append("<p class=small>measured on: " + _e(", ".join(
            f"{k} {v}" for k, v in env.items())) + "</p>")
    from .shard import cpu_section         # a class graded on several kinds of CPU
    body.append(cpu_section(results))
    return "\n".join(body)


def _pass_rate_section(plt, ex: dict) -> str:
    """Pass rate per exercise: a bar chart and a table."""
    body = ["<h2>Pass rate per exercise</h2>"]
    if ex:
        fig, ax = plt.subplots(figsize=(7, 0.45 * len(ex) + 1))
        exs = list(ex)
        ax.barh(exs, [100 * ex[n][0] / max(ex[n][1], 1) for n in exs], color="#4c72b0")
        ax.set_xlim(0, 100)
        ax.set_xlabel("passed (%)")
        ax.invert_yaxis()
        body.append(_png(fig))
        body.append("<table><tr><th>exercise</th><th>passed</th><th>graded</th></tr>"
                    + "".join(f"<tr><td>{_e(n)}</td><td>{v[0]}</td><td>{v[1]}</td></tr>"
                              for n, v in ex.items()) + "</table>")
    return "\n".join(body)


def _speedup_section(plt, speed: dict) -> str:
    """The measured speedups per check, as box plots."""
    body = ["<h2>Measured speedups</h2>"]
    if speed:
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.boxplot(list(speed.values()), orientation="horizontal")
        ax.set_yticks(range(1, len(speed) + 1), list(speed))
        ax.set_xlabel("speedup over labkit's baseline kernel (×)")
        body.append(_png(fig))
    else:
        body.append("<p>No check measured a speed.</p>")
    return "\n".join(body)


def _time_section(plt, res: list[dict]) -> str:
    """A histogram of the seconds each notebook took to grade."""
    body = ["<h2>Time per notebook</h2>"]
    times = [float(r.get("duration_s") or 0) for r in res]
    if times:
        fig, ax = plt.subplots(figsize=(7, 2.5))
        ax.hist(times, bins=min(20, max(3, len(times))), color="#55a868", edgecolor="white")
        ax.set_xlabel("seconds to grade one notebook")
        ax.set_ylabel("notebooks")
        body.append(_png(fig))
    return "\n".join(body)


def _students_section(results: list[dict], res: list[dict]) -> str:
    """One row per counted notebook, linked to its student's feedback page."""
    pages = page_names(results)
    body = ["<h2>Students</h2><table><tr><th>student</th><th>notebook</th><th>points</th>"
            "<th>status</th><th>seconds</th></tr>"]
    for r in sorted(res, key=lambda r: (r["student"], r["notebook"])):
        got = sum(float(e["points"]) for e in r["exercises"])
        top = sum(float(e["max_points"]) for e in r["exercises"])
        body.append(f"<tr><td><a href='feedback/{_e(pages[r['student']])}.html'>"
                    f"{_e(r['student'])}</a></td><td>{_e(r['notebook'])}</td>"
                    f"<td>{got:g} / {top:g}</td><td>{_e(r.get('status'))}"
                    f"{' (cached)' if r.get('cached') else ''}</td>"
                    f"<td>{float(r.get('duration_s') or 0):.1f}</td></tr>")
    body.append("</table>")
    return "\n".join(body)


def _flags_section(results: list[dict]) -> str:
    """Every flag of every notebook, the set-aside copies' included."""
    body = ["<h2>Flags</h2>"]
    flags = [(r["student"], r["notebook"], k, f) for r in results
             for k, v in (r.get("flags") or {}).items() for f in v]
    if flags:
        body.append("<table><tr><th>student</th><th>notebook</th><th>exercise</th><th>flag</th>"
                    "</tr>" + "".join(f"<tr><td>{_e(s)}</td><td>{_e(n)}</td><td>{_e(k or '—')}"
                                      f"</td><td>{_e(f)}</td></tr>" for s, n, k, f in flags)
                    + "</table>")
    else:
        body.append("<p>None.</p>")
    return "\n".join(body)


def _review_section(res: list[dict]) -> str:
    """The "Needs review" section: every row the grader could not judge fully (:func:`.report.needs_review`:
    still ``inconclusive`` after the re-measurement, or passed with speed not judged), with the
    student, the exercise and the check's message."""
    todo = [(r, e) for r in sorted(res, key=lambda r: (r["student"], r["notebook"]))
            for e in r["exercises"] if needs_review(e)]
    head = "<h2 id=needs-review>Needs review</h2>"
    if not todo:
        return head + "<p>None: every check judged its row.</p>"
    return (head + f"<p>{len(todo)} row(s) the checks could not judge fully on the grading "
            "machine (a speed target undecided, or speed not judged): look at the student's "
            "code, or grade those notebooks again on a quieter machine.</p>"
            "<table><tr><th>student</th><th>notebook</th><th>exercise</th><th>verdict</th>"
            "<th>points</th><th>why</th><th>message</th></tr>"
            + "".join(f"<tr><td>{_e(r['student'])}</td><td>{_e(r['notebook'])}</td>"
                      f"<td>{_e(e['exercise'])}</td><td>{_e(e['verdict'])}</td>"
                      f"<td>{float(e['points']):g} / {float(e['max_points']):g}</td>"
                      f"<td>{_e(review_reason(e) or 'flagged by the grader')}</td>"
                      f"<td>{_e(e['message'])}</td></tr>" for r, e in todo)
            + "</table>")


def write_report(results: list[dict], path, names=None) -> Path:
    """``path`` (report.html) and, when a challenge was graded, ``leaderboard.html`` beside
    it."""
    path = Path(path)
    path.write_text(report_html(results, names), encoding="utf-8")
    board = path.with_name("leaderboard.html")
    if any(is_challenge(e) for r in counted(results) for e in r.get("exercises", ())):
        board.write_text(leaderboard_html(results, names), encoding="utf-8")
    return path


def write_pages(results: list[dict], folder, names=None) -> tuple[Path, list[Path]]:
    """``folder/report.html`` (+ ``leaderboard.html``) and ``folder/feedback/<student>.html``;
    ``names``: the leaderboard's (None: anonymised; a dict folder → name from a course file
    that opts names in, :func:`labkit.grade.course.leaderboard_names`)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return (write_report(results, folder / "report.html", names),
            write_feedback(results, folder / "feedback", names))

"""The challenges' class leaderboard, on fake grading results (no real grading): the
ranking by the ratio to labkit's kernel each check measured, ties sharing a place, anonymous
labels unless the course file opts names in, unranked rows listed apart with why, and each
student's feedback page with their place and the check's feedback facts."""
from __future__ import annotations

import re

import pytest

from labkit.grade import pages
from labkit.grade import report as R

EX = "align_challenge"
ENV = {"cpu": "Test CPU [x86_64]", "isa": "avx2", "cores": 2}


def _facts(ratio, tier=1.0, decided=True, **kw):
    return {"ratio": ratio, "ratio_low": round(ratio * 0.95, 3),
            "ratio_high": round(ratio * 1.05, 3), "vs_start": 20 * ratio, "scale": 25.0,
            "position": 0.9, "tier": tier, "decided": decided, "judged": True,
            "vector_bits": 512, "lanes": 32, "lane_type": "int16", "roof_share": 0.24,
            "roof": "the int16 ALU roof", "threads": 1, "steps": {"align_batched": 1.3}, **kw}


def _row(verdict="passed", points=4.0, facts=None, exercise=EX, seed=11):
    e = {"exercise": exercise, "points": points, "max_points": 4, "verdict": verdict,
         "message": "…", "seed": seed, "details": {}}
    if facts is not None:
        e["details"]["challenge"] = facts
    return e


def _nb(student, *rows, env=ENV, status="graded"):
    return {"student": student, "notebook": f"{student}/01_alignment.ipynb",
            "canonical": "01_alignment.ipynb", "status": status, "flags": {},
            "duration_s": 30.0, "environment": env,
            "exercises": [_row("passed", 1.0, exercise="ragged_transpose")] + list(rows)}


def _class():
    return [
        _nb("ada", _row(facts=_facts(0.82))),
        _nb("bob", _row(points=3.0, facts=_facts(0.41, tier=0.75))),
        _nb("cy", _row(facts=_facts(1.13))),
        _nb("dee", _row(facts=_facts(0.82))),                                  # ties with ada
        _nb("eve", _row("inconclusive", 0, _facts(0.5, tier=None, decided=False))),
        _nb("fay", _row("not fast enough", 0, _facts(0.05, tier=0.0))),
        _nb("gus", _row("wrong", 0)),                                          # before timing
        _nb("hal", _row("no change", 0, {"unchanged": True, "judged": True})),
        _nb("ida", _row(facts=_facts(0.9)), status="duplicate"),               # not counted
    ]


def test_ranked_by_the_ratio_to_labkits_kernel_ties_share_a_place():
    board = R.leaderboards(_class())
    assert list(board) == [EX]                          # only the challenge, not ragged_transpose
    rows = board[EX]
    ranked = [x for x in rows if x.place is not None]
    got = [(x.student, x.place, x.tied) for x in ranked]
    assert got[0] == ("cy", 1, False) and got[3] == ("bob", 4, False)
    assert set(got[1:3]) == {("ada", 2, True), ("dee", 2, True)}
    assert ranked[1].label < ranked[2].label            # a tie in the order of the labels
    assert [x.ratio for x in ranked] == [1.13, 0.82, 0.82, 0.41]
    assert {x.of for x in rows} == {4}
    assert "ida" not in {x.student for x in rows}       # a duplicate copy does not count


def test_unranked_rows_say_why():
    why = {x.student: x.why for x in R.leaderboards(_class())[EX] if x.place is None}
    assert why["eve"].startswith("undecided") and "inconclusive" in why["eve"]
    assert why["fay"] == "not passed: not fast enough (0.05× labkit's kernel)"
    assert why["gus"] == "not passed: wrong"
    assert why["hal"] == "not passed: no change (the starting point as given)"
    assert set(why) == {"eve", "fay", "gus", "hal"}


def test_a_student_with_two_counted_rows_is_placed_by_the_better_one():
    res = [_nb("ada", _row(facts=_facts(0.5))), _nb("ada", _row(facts=_facts(0.7)))]
    res[1]["notebook"] = "ada/copy.ipynb"
    (x,) = R.leaderboards(res)[EX]
    assert x.ratio == 0.7 and x.place == 1 and x.notebook == "ada/copy.ipynb"


def test_students_are_anonymised_by_default_with_labels_not_derived_from_names():
    res = _class()
    lab = R.labels(res)
    assert sorted(lab.values()) == [f"student {c}" for c in "ABCDEFGH"]
    assert R.labels(res) == lab                          # the same on every page of one output
    other = R.labels(res, key=b"another secret")
    assert sorted(other.values()) == sorted(lab.values())
    # the order is drawn with a key from the checks' seeds: a different seed, other labels
    # (not a function of the names alone), and with enough students not alphabetical
    many = [_nb(f"s{k:02d}", _row(facts=_facts(0.5), seed=k)) for k in range(30)]
    a = R.labels(many)
    assert set(a.values()) == {f"student {R._letters(k)}" for k in range(30)}   # … Z, AA … AD
    assert [a[f"s{k:02d}"] for k in range(30)] != [f"student {R._letters(k)}" for k in range(30)]
    reseeded = [_nb(f"s{k:02d}", _row(facts=_facts(0.5), seed=k + 1000)) for k in range(30)]
    assert R.labels(reseeded) != a
    html = pages.leaderboard_html(res)
    for name in ("ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal"):
        assert not re.search(rf"\b{name}\b", html), name
    assert "student " in html


def test_names_only_when_the_course_opts_in():
    res = _class()
    named = R.labels(res, names={"ada": "Ada Lovelace"})
    assert named["ada"] == "Ada Lovelace" and named["bob"] == "bob"     # unrostered: the folder
    assert R.labels(res, names=True)["cy"] == "cy"
    html = pages.leaderboard_html(res, names={"ada": "Ada Lovelace"})
    assert "Ada Lovelace" in html and "student A" not in html


def test_place_line_and_ordinals():
    assert [R.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st",
        "111th"]
    rows = {x.student: x for x in R.leaderboards(_class())[EX]}
    assert R.place_line(rows["bob"]) == (
        "4th of 4 on align_challenge, 0.41× labkit's kernel (interval 0.39–0.43×), tier ¾, "
        "3 / 4 points")
    assert R.place_line(rows["ada"]).startswith("2nd (tied) of 4 on align_challenge, 0.82× "
                                                "labkit's kernel")
    assert R.place_line(rows["gus"]) == ("not on the align_challenge leaderboard — not passed: "
                                         "wrong")


def test_feedback_page_shows_the_place_and_the_feedback_facts():
    res = _class()
    page = pages.feedback_html("bob", res)
    label = R.labels(res)["bob"]
    assert "4th of 4 on align_challenge, 0.41× labkit&#x27;s kernel" in page
    assert f"on the class leaderboard: <b>{label}</b>" in page
    for part in ("512-bit vectors, 32 int16 lanes", "24%", "the int16 ALU roof",
                 "align_batched", "1.30×", "8.20×", "25.00×"):
        assert part in page, part
    assert "seed" not in page.lower() and ">11<" not in page        # no hidden seed
    assert "not on the align_challenge leaderboard — not passed: wrong" in pages.feedback_html(
        "gus", res)
    named = pages.feedback_html("bob", res, names={"bob": "Bob B."})
    assert "4th of 4" in named and "on the class leaderboard:" not in named
    plain = pages.feedback_html("bob", [_nb("bob")])
    assert "Leaderboard" not in plain                   # no challenge graded: no block


def test_report_has_the_leaderboard_and_lists_the_unranked_with_why(tmp_path):
    res = _class()
    html = pages.report_html(res)
    assert "<h2 id=leaderboard>Leaderboard</h2>" in html
    board = html.split("<h2 id=leaderboard>")[1].split("<h2>")[0]
    assert board.count("<tr><td>") == 4 + 4             # 4 ranked, 4 unranked
    assert "not passed: not fast enough" in board and "undecided" in board
    assert "1.13×" in board and "2nd (tied)" in board
    assert "<td>cy</td>" not in board and f"<td>{R.labels(res)['cy']}</td>" in board  # anonymised
    assert "<td>cy</td>" in pages.report_html(res, names=True).split("<h2 id=leaderboard>")[1]
    report, feedback = pages.write_pages(res, tmp_path)
    shared = (tmp_path / "leaderboard.html").read_text(encoding="utf-8")
    assert "Class leaderboard" in shared and "1st" in shared
    assert "not passed: wrong" not in shared and "Not ranked: 3 not passed, 1 undecided" in shared
    assert {p.name for p in feedback} >= {"ada.html", "gus.html"}


def test_no_leaderboard_without_a_challenge(tmp_path):
    res = [_nb("ada")]
    assert "id=leaderboard" not in pages.report_html(res)
    pages.write_pages(res, tmp_path)
    assert not (tmp_path / "leaderboard.html").exists()


def test_a_class_on_several_cpus_is_told_so():
    res = _class()
    res[0]["environment"] = dict(ENV, cpu="Other CPU")
    html = pages.report_html(res)
    assert "more than one kind of CPU" in html and "<th>CPU</th>" in html


def test_a_passed_row_without_its_facts_is_not_ranked_and_says_so():
    res = [_nb("ada", _row())]                           # details truncated by the grader
    (x,) = R.leaderboards(res)[EX]
    assert x.place is None and "no measurement" in x.why
    res = [_nb("ada", _row(facts=_facts(0.9, judged=False)))]
    (x,) = R.leaderboards(res)[EX]
    assert x.place is None and "reported only" in x.why


# ------------------------------------------------------------------ the course file's opt-in
def _course(tmp_path, extra=""):
    p = tmp_path / "course.toml"
    p.write_text(f"""[course]
name = "t"
{extra}
[[students]]
id = "1"
name = "Ada Lovelace"
login = "ada"

[[students]]
id = "2"
login = "bob"

[roster]
folder = "login"

[[assignments]]
name = "lab1"
labs = ["01_alignment"]
""", encoding="utf-8")
    return p


def test_course_file_opts_names_in(tmp_path):
    from labkit.grade.course import CourseError, leaderboard_names, load_course
    assert leaderboard_names(None) is None
    assert leaderboard_names(load_course(_course(tmp_path))) is None
    c = load_course(_course(tmp_path, "leaderboard_names = true"))
    assert c.leaderboard_names is True
    assert leaderboard_names(c) == {"ada": "Ada Lovelace", "bob": "bob"}
    with pytest.raises(CourseError, match="leaderboard_names must be true or false"):
        load_course(_course(tmp_path, 'leaderboard_names = "yes"'))

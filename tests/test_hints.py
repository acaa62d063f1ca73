import pytest

from labkit import hints


@pytest.fixture(autouse=True)
def _clean():
    hints.reset()
    yield
    hints.reset()


def test_tiers_revealed_one_at_a_time():
    hints.define("toy_ex", "the concept", "the approach", "the near code")
    assert hints.tiers("toy_ex") == 3
    assert hints.seen("toy_ex") == 1                 # the stub shows tier 1
    assert "stuck? hints.next('toy_ex') shows hint 2 of 3 (approach)" == hints.pointer("toy_ex")
    h = hints.next("toy_ex")
    assert (h.tier, h.text) == (2, "the approach")
    assert "hint 2 of 3 (approach)" in str(h) and "hints.next('toy_ex')" in str(h)
    assert "<b>" in h._repr_html_()
    h = hints.next("toy_ex")
    assert (h.tier, h.text) == (3, "the near code")
    assert "last hint" in str(h)
    assert hints.pointer("toy_ex") == ""
    assert hints.next("toy_ex").tier == 3            # stays at the last one


def test_show_given_tier_and_errors():
    hints.define("toy_two", "only concept", "and approach")
    assert hints.show("toy_two", 1).text == "only concept"
    with pytest.raises(ValueError, match="hints 1…2, not 3"):
        hints.show("toy_two", 3)
    with pytest.raises(KeyError, match="no hints for 'nosuch'"):
        hints.get("nosuch")
    with pytest.raises(ValueError, match="exercise name"):
        hints.define("not a name", "x")
    with pytest.raises(ValueError, match="non-empty"):
        hints.define("toy_three", "  ")
    assert hints.pointer("undefined_ex") == ""


def test_failing_check_names_the_next_hint():
    from labkit.check.framework import finish
    from labkit.check.result import CheckResult

    hints.define("toy_ptr", "c", "a", "n")
    bad = finish(CheckResult("toy_ptr", False, 0, 1, "wrong", "out[0] = 1, expected 2"))
    assert bad.message == ("out[0] = 1, expected 2 — stuck? hints.next('toy_ptr') shows hint 2 "
                           "of 3 (approach)")
    good = finish(CheckResult("toy_ptr", True, 1, 1, "passed", "exact"))
    assert good.message == "exact"
    hints.next("toy_ptr"); hints.next("toy_ptr")
    assert finish(CheckResult("toy_ptr", False, 0, 1, "wrong", "x")).message == "x"


def test_check_result_plain_text_is_points_under_nbgrader(monkeypatch):
    from labkit.check.result import CheckResult

    r = CheckResult("toy", False, 0.5, 2, "slower", "1.2× slower")
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert r._repr_mimebundle_()["text/plain"] == str(r)
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    bundle = r._repr_mimebundle_()
    assert bundle["text/plain"] == "0.5" and "slower" in bundle["text/html"]


def test_pointer_in_a_fresh_process_loads_the_hints_itself():
    # the grader asks for the pointer of a row without having called a check in its process
    import subprocess
    import sys
    code = ("from labkit import hints\n"
            "print(hints.pointer('colsum'))\n"
            "print(repr(hints.pointer('no_such_exercise')))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first.startswith("stuck? hints.next('colsum') shows hint "), r.stdout
    assert second == "''"

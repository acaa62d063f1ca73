"""The grader's numba cache seed is kept between grading runs (sandboxed runs with a cache
folder): the second run of the same labs on the same labkit and machine reuses it instead of
compiling labkit's kernels again; anything the compiled code depends on makes a new one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import SimpleNamespace

from labkit.grade import seed
from labkit.grade.settings import GradeSettings


def _canon(tmp_path, name, text="{}"):
    p = tmp_path / f"{name}.ipynb"
    p.write_text(text, encoding="utf-8")
    return SimpleNamespace(name=name, path=p)


def _fresh_seed():
    # as seed._build_seed leaves it: <0700 temp folder>/numba-cache with the compiled files
    parent = tempfile.mkdtemp(prefix="labkit-grade-seed-")
    seed = Path(parent, "numba-cache")
    (seed / "labkit_x").mkdir(parents=True)
    (seed / "labkit_x" / "f.nbi").write_bytes(b"index")
    return str(seed)


def test_a_seed_is_kept_and_found_again(tmp_path):
    cache = tmp_path / "cache"
    canons = [_canon(tmp_path, "02_bspline")]
    s = GradeSettings(sandbox=True)
    home, kept = seed._kept_seed(cache, canons, s, "digest", {"cpu": "x"})
    assert home is not None and not kept
    built = _fresh_seed()
    path = seed._keep_seed(built, home)
    assert path == str(home / "numba-cache") and not os.path.exists(built)
    assert (home / "numba-cache" / "labkit_x" / "f.nbi").read_bytes() == b"index"
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert seed._kept_seed(cache, canons, s, "digest", {"cpu": "x"}) == (home, True)


def test_what_the_code_depends_on_makes_a_new_seed_and_old_ones_go(tmp_path):
    cache = tmp_path / "cache"
    canons = [_canon(tmp_path, "02_bspline")]
    s = GradeSettings(sandbox=True)
    home, _ = seed._kept_seed(cache, canons, s, "digest", {"cpu": "x"})
    seed._keep_seed(_fresh_seed(), home)
    others = [seed._kept_seed(cache, canons, s, "digest2", {"cpu": "x"}),      # labkit changed
              seed._kept_seed(cache, canons, s, "digest", {"cpu": "y"}),       # another machine
              seed._kept_seed(cache, [_canon(tmp_path, "02_bspline", '{"a": 1}')], s,
                             "digest", {"cpu": "x"})]                          # new solutions
    assert all(h != home and not k for h, k in others)
    new = others[0][0]
    seed._keep_seed(_fresh_seed(), new)
    assert not home.exists() and (new / "numba-cache").is_dir()      # one seed kept, the last


def test_no_kept_seed_without_the_sandbox_or_a_cache(tmp_path):
    canons = [_canon(tmp_path, "02_bspline")]
    # without the sandbox a submission could write into a kept seed the next run would load
    assert seed._kept_seed(tmp_path, canons, GradeSettings(sandbox=False), "d", {}) == (None, False)
    assert seed._kept_seed(None, canons, GradeSettings(sandbox=True), "d", {}) == (None, False)
    assert seed._kept_seed(tmp_path, [], GradeSettings(sandbox=True), "d", {}) == (None, False)


def test_the_unsandboxed_worker_sees_the_sandboxed_ones_labkit_variables():
    """The seed build's worker runs unsandboxed; the workers that load its cache run in the
    sandbox, which clears the environment: a width or seed set for the grader reaches neither."""
    from labkit.grade import sandbox
    env = sandbox.unsandboxed_env({"LABKIT_VECTOR_BITS": "256", "LABKIT_NATIVE_BITS": "128",
                                   "LABKIT_SEED": "3", "LABKIT_CHECK_DEBUG": "1",
                                   "NUMBA_CPU_NAME": "haswell", "PYTHONPATH": "/x"})
    assert not {"LABKIT_VECTOR_BITS", "LABKIT_NATIVE_BITS", "LABKIT_SEED"} & set(env)
    assert env["LABKIT_GRADING"] == "1" and env["LABKIT_CHECK_DEBUG"] == "1"
    assert env["NUMBA_CPU_NAME"] == "haswell" and env["PYTHONPATH"].endswith(os.pathsep + "/x")

def test_the_sandboxed_worker_keeps_no_other_labkit_variable(monkeypatch):
    from labkit.grade import sandbox
    monkeypatch.setenv("LABKIT_VECTOR_BITS", "256")
    monkeypatch.setenv("LABKIT_CHECK_DEBUG", "1")
    sandboxed = {k for k in sandbox.SandboxSpec().env() if k.startswith("LABKIT_")}
    plain = {k for k in sandbox.unsandboxed_env() if k.startswith("LABKIT_")}
    assert sandboxed == plain == {"LABKIT_GRADING", "LABKIT_CHECK_DEBUG"}

"""`labkit warm` (numba's cache of labkit's kernels filled before a student needs it) and the
grader's seed (a warm cache copied into each sandbox, never written by a submission)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labkit import registry, warm

ROOT = Path(__file__).resolve().parent.parent


def _labkit(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=str(ROOT),
                          env=dict(os.environ, **(env or {})))


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """lesson 00 (the cheapest lab) warmed into an empty NUMBA_CACHE_DIR."""
    cache = tmp_path_factory.mktemp("numba-cache")
    r = _labkit("warm", "lesson00", "--cache-dir", str(cache), "--jobs", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    return cache, r.stdout


def test_cold_cache_is_reported_and_warm_fills_it(warmed, tmp_path):
    cold = _labkit("warm", "--check", "--cache-dir", str(tmp_path))
    assert cold.returncode == 1 and all(l in cold.stdout for l in registry.names()), cold.stdout
    cache, out = warmed
    assert "[1/1] lesson00" in out and "labkit warm: 1/1 labs in" in out, out
    stamp = json.loads((cache / warm.STAMP).read_text())
    files = stamp["lesson00"]["index"]
    assert files and all((cache / f).is_file() for f in files)
    assert any("colsum_naive" in f for f in files), files
    assert _labkit("warm", "--check", "lesson00", "--cache-dir", str(cache)).returncode == 0
    again = _labkit("warm", "--if-needed", "lesson00", "--cache-dir", str(cache))
    assert again.returncode == 0 and "already warm" in again.stdout, again.stdout
    bg = _labkit("warm", "--if-needed", "--background", "lesson00", "--cache-dir", str(cache))
    assert bg.returncode == 0 and "already warm" in bg.stdout, bg.stdout    # nothing spawned


def test_a_fresh_process_loads_the_warmed_kernels(warmed):
    """What a notebook's first cell does after `labkit warm`: load, not compile."""
    cache, _ = warmed
    code = ("import numpy as np\n"
            "from labkit.lesson00 import kernels as k\n"
            "k.colsum_naive(np.ones((3, 4)))\n"
            "print(sum(k.colsum_naive.stats.cache_hits.values()),"
            " sum(k.colsum_naive.stats.cache_misses.values()))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, NUMBA_CACHE_DIR=str(cache)))
    assert r.returncode == 0, r.stderr
    hits, misses = map(int, r.stdout.split())
    assert hits == 1 and misses == 0, r.stdout


def test_a_missing_index_file_or_another_key_makes_the_lab_stale(warmed, tmp_path):
    import shutil
    cache, _ = warmed
    copy = tmp_path / "c"
    shutil.copytree(cache, copy)
    assert warm.stale_labs(["lesson00"], str(copy)) == []
    first = json.loads((copy / warm.STAMP).read_text())["lesson00"]["index"][0]
    (copy / first).unlink()
    assert warm.stale_labs(["lesson00"], str(copy)) == ["lesson00"]
    assert warm.stale_labs(["lesson00"], str(tmp_path / "empty")) == ["lesson00"]


def test_key_follows_the_lab_its_shared_code_and_the_code_switches():
    files = [("pcc/kernels.py", "a"), ("alignment/kernels.py", "b"), ("check/gates.py", "c")]
    key = lambda lab, fs=files, env=None: warm.lab_key(lab, env=env or {}, files=fs)  # noqa: E731
    other_lab = [("pcc/kernels.py", "A"), *files[1:]]
    shared = [*files[:2], ("check/gates.py", "C")]
    assert key("alignment", other_lab) == key("alignment")      # another lab's package
    assert key("pcc", other_lab) != key("pcc")
    assert key("alignment", shared) != key("alignment")         # code every lab uses
    assert key("pcc", env={"LABKIT_VECTOR_BITS": "256"}) != key("pcc")
    assert key("pcc", env={"NUMBA_CPU_NAME": "haswell"}) != key("pcc")


def test_in_tree_stamp_lives_outside_labkit(monkeypatch, tmp_path):
    """labkit/ itself gets only numba's own cache files (the grader hashes everything else)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    path = warm._stamp_path(warm.cache_root())
    assert warm.cache_root() == warm.PACKAGE
    assert tmp_path in path.parents and warm.PACKAGE not in path.parents


def test_skip_switch_and_unknown_lab():
    r = _labkit("warm", env={"LABKIT_WARM": "0"})
    assert r.returncode == 0 and "skipped" in r.stdout
    r = _labkit("warm", "nosuchlab")
    assert r.returncode == 2 and "no lab" in r.stderr


# ------------------------------------------------------------------ the grader's seed
def _sandbox_or_skip():
    from labkit.grade import sandbox
    ok, why = sandbox.probe()
    if not ok:
        pytest.skip(f"no sandbox here: {why}")


def test_seed_is_read_only_and_each_sandbox_loads_its_own_copy(warmed):
    """A seed in NUMBA_CACHE_DIR layout, bound read-only and copied into the sandbox's tmpfs
    cache: labkit's kernels load from it (same source paths inside), the sandbox cannot write
    the seed, and what it writes into its copy is gone with it."""
    _sandbox_or_skip()
    from labkit.grade.sandbox import SandboxSpec, share_seed
    seed, _ = warmed
    share_seed(str(seed))
    before = sorted(p.relative_to(seed).as_posix() for p in seed.rglob("*"))
    code = ("import numpy as np, os\n"
            "from labkit.lesson00 import kernels as k\n"
            "k.colsum_naive(np.ones((3, 4)))\n"
            "print(sum(k.colsum_naive.stats.cache_hits.values()))\n"
            f"try:\n    open({str(seed / 'x')!r}, 'w')\nexcept OSError:\n    print('ro')\n"
            "open('/tmp/numba-cache/planted.nbi', 'w').write('x')\n")
    cmd = SandboxSpec(numba_seed=str(seed)).command([sys.executable, "-c", code])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "ro"], r.stdout + r.stderr
    assert sorted(p.relative_to(seed).as_posix() for p in seed.rglob("*")) == before


def test_unsandboxed_worker_gets_a_private_copy_removed_at_stop(warmed):
    from labkit.grade.sandbox import SandboxWorker
    seed, _ = warmed
    w = SandboxWorker(None, numba_seed=str(seed))
    w.start()
    try:
        own = Path(w._own_cache)
        assert own.is_dir() and own != seed
        assert sorted(p.name for p in own.rglob("*.nbi")) == sorted(
            p.name for p in seed.rglob("*.nbi"))
    finally:
        w.stop()
    assert not own.exists()


def test_grader_seeds_labkit_labs_only_and_hands_each_worker_the_seed(tmp_path):
    """Which notebooks get a seed (labkit's own labs, not an extra exercise module's), and the
    worker every submission gets: the seed copied in, never the seed folder itself."""
    import shutil
    from labkit.grade import load_canonical, run, seed
    from labkit.grade.settings import GradeSettings
    from test_grade import solution_notebook
    import nbformat

    assert seed._is_labkit_lab(load_canonical(ROOT / "solutions" / "00_tools.ipynb"))
    fixture = tmp_path / "00_fix.ipynb"
    nbformat.write(solution_notebook(), fixture)
    assert not seed._is_labkit_lab(load_canonical(fixture))
    assert seed._build_seed([], GradeSettings(sandbox=True), 1, False) is None
    empty = seed._build_seed([], GradeSettings(sandbox=False), 1, False)
    try:
        assert os.path.isdir(empty) and not os.listdir(empty)
        assert oct(os.stat(os.path.dirname(empty)).st_mode & 0o777) == "0o700"
    finally:
        shutil.rmtree(os.path.dirname(empty))
    s = GradeSettings(sandbox=True, numba_cache=str(tmp_path))
    w = run._worker(s)
    assert w.spec.numba_seed == str(tmp_path.resolve()) and w.numba_cache is None
    assert "--ro-bind" in w.spec.command(["true"])
    w = run._worker(GradeSettings(sandbox=False, numba_cache=str(tmp_path)))
    assert w.spec is None and w.numba_seed == str(tmp_path) and w.numba_cache is None
    w = run._worker(s, seed_build=str(tmp_path / "seed"))     # the seed build itself
    assert w.spec is None and w.numba_cache == str(tmp_path / "seed")

"""tools/numba_keep.py: numba's cache kept between test runs. A tiny package with one cached
kernel, compiled in a child process: its index and data are saved under the package's key,
restored into a fresh copy (another clone) where numba then loads instead of compiling, never
restored over a package whose files differ, and never over an index the copy has itself."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tooling import load_tool

KERNEL = "import numba\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n"
RUN = ("import sys; sys.path.insert(0, {root!r}); from kpkg.sub import mod; "
       "print(mod.twice(21), len(mod.twice.stats.cache_hits))")


def _package(root: Path) -> Path:
    (root / "kpkg" / "sub").mkdir(parents=True)
    (root / "kpkg" / "__init__.py").write_text("")
    (root / "kpkg" / "sub" / "__init__.py").write_text("")
    (root / "kpkg" / "sub" / "mod.py").write_text(KERNEL)
    return root / "kpkg"


def _run(root: Path) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", RUN.format(root=str(root))], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    return out[0], int(out[1])


def test_saved_cache_is_restored_into_a_fresh_copy_and_loaded(tmp_path):
    keep = load_tool("numba_keep")
    store = tmp_path / "store"
    first = _package(tmp_path / "a")
    assert _run(tmp_path / "a") == ("42", 0)                 # compiled, written next to it
    assert "1 kernel indexes" in keep.save(store, first)
    assert [d.name for d in store.iterdir()] == [keep.key(first)]

    second = _package(tmp_path / "b")                        # another clone: no cache
    assert not list(second.rglob("*.nbi"))
    assert "1 kernel indexes restored" in keep.restore(store, second)
    assert _run(tmp_path / "b") == ("42", 1)                 # loaded, not compiled

    # its own index is never overwritten; a package with other files has another key
    again = keep.restore(store, second)
    assert "0 kernel indexes restored" in again and "(1 already here)" in again
    third = _package(tmp_path / "c")
    (third / "sub" / "mod.py").write_text(KERNEL.replace("2 * x", "3 * x"))
    assert keep.key(third) != keep.key(first)
    assert "none kept for this labkit" in keep.restore(store, third)
    assert not list(third.rglob("*.nbi"))


def test_stale_indexes_are_not_saved_and_only_two_keys_are_kept(tmp_path):
    keep = load_tool("numba_keep")
    store = tmp_path / "store"
    pkg = _package(tmp_path / "a")
    _run(tmp_path / "a")
    (pkg / "sub" / "mod.py").write_text(KERNEL + "# edited after compiling\n")
    assert "0 kernel indexes" in keep.save(store, pkg)        # its source changed: stale
    (pkg / "sub" / "mod.py").write_text(KERNEL)               # the compiled bytes again
    for n, age in enumerate((300, 200)):                      # two older keys in the store
        (store / f"old{n}").mkdir(parents=True)
        os.utime(store / f"old{n}", (1e9 - age, 1e9 - age))
    assert "1 kernel indexes" in keep.save(store, pkg)
    assert sorted(d.name for d in store.iterdir()) == sorted([keep.key(pkg), "old1"])


LAB_RUN = ("import sys; sys.path.insert(0, {root!r}); from kpkg.{lab} import mod; "
           "print(mod.twice(21), len(mod.twice.stats.cache_hits))")


def _labs_package(root: Path) -> Path:
    """kpkg with two lab packages (lab1, lab2) and a shared module beside them."""
    for lab in ("lab1", "lab2"):
        (root / "kpkg" / lab).mkdir(parents=True)
        (root / "kpkg" / lab / "__init__.py").write_text("")
        (root / "kpkg" / lab / "mod.py").write_text(KERNEL)
    (root / "kpkg" / "__init__.py").write_text("")
    (root / "kpkg" / "shared.py").write_text("SHARED = 1\n")
    return root / "kpkg"


def _run_lab(root: Path, lab: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", LAB_RUN.format(root=str(root), lab=lab)],
                         env=env, capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    return out[0], int(out[1])


def test_a_change_to_one_lab_keeps_the_other_labs_kernels(tmp_path):
    """Each lab's kernels under the lab's own key (labkit warm's rule): a clone that changed lab1
    restores lab2's kernel and compiles only lab1's; a change outside the labs changes every key."""
    keep = load_tool("numba_keep")
    labs = ("lab1", "lab2")
    store = tmp_path / "store"
    first = _labs_package(tmp_path / "a")
    assert _run_lab(tmp_path / "a", "lab1") == ("42", 0)
    assert _run_lab(tmp_path / "a", "lab2") == ("42", 0)
    assert "2 kernel indexes" in keep.save(store, first, labs)
    ks = keep.keys(first, labs)
    assert len(set(ks.values())) == 3
    assert sorted(d.name for d in store.iterdir()) == sorted([ks["lab1"], ks["lab2"]])
    assert (store / ks["lab2"] / keep.UNIT).read_text() == "lab2"

    second = _labs_package(tmp_path / "b")                   # lab1 edited in this clone
    (second / "lab1" / "mod.py").write_text(KERNEL.replace("2 * x", "(x + x)"))
    got = keep.keys(second, labs)
    assert got["lab2"] == ks["lab2"] and got["lab1"] != ks["lab1"] and got[""] == ks[""]
    msg = keep.restore(store, second, labs)
    assert "1 kernel indexes restored" in msg and "none kept for lab1" in msg, msg
    assert _run_lab(tmp_path / "b", "lab2") == ("42", 1)     # loaded
    assert _run_lab(tmp_path / "b", "lab1") == ("42", 0)     # compiled afresh

    third = _labs_package(tmp_path / "c")                    # shared code edited: every key
    (third / "shared.py").write_text("SHARED = 2\n")
    assert not set(keep.keys(third, labs).values()) & set(ks.values())
    assert "none kept for this labkit" in keep.restore(store, third, labs)
    assert not list(third.rglob("*.nbi"))


def test_labkits_labs_are_warms_labs_and_their_keys_differ():
    keep = load_tool("numba_keep")
    from labkit import warm
    assert keep.labs_of() == tuple(warm._labs()) and keep.labs_of(Path("/nonexistent")) == ()
    ks = keep.keys()
    assert set(ks) == {"", *warm._labs()} and len(set(ks.values())) == len(ks)
    assert keep.key() == ks[""]

"""The one list of labs.

Everything that needs to know which labs exist — the CLI, ``labkit.check``'s lookup of
``check.<exercise>``, the grader, the tests — reads it from here; no other module names a lab.
Adding a lab is one line in ``LABS`` (plus its package, notebook source, test file and docs page:
see CONTRIBUTING.md, "Adding a lab").
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

__all__ = ["Lab", "LABS", "get", "names", "load", "modules", "CHECK_MODULES", "check_modules",
           "load_checks"]


@dataclass(frozen=True)
class Lab:
    """One lab: ``name`` (``labkit.<name>``), its notebook stem, title and friendly entry point."""

    name: str
    notebook: str
    title: str
    entry: str
    benchmark: bool = True      # has run_benchmark() + TARGETS for `labkit bench`

    @property
    def module(self) -> str:
        return f"labkit.{self.name}"

    @property
    def number(self) -> int:
        return int(self.notebook.split("_", 1)[0])

    @property
    def source(self) -> str:
        """The notebook's only source, relative to the repository root."""
        return f"solutions/{self.notebook}.md"

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)


LABS: tuple[Lab, ...] = (
    Lab("lesson00", "00_tools", "Tools: timing, IR and assembly, vectorisation", "colsum"),
    Lab("alignment", "01_alignment", "Alignment: transposing data for SIMD", "align"),
    Lab("bspline", "02_bspline", "B-spline orbitals: AoS → SoA → AoSoA", "evaluate_vgh"),
    Lab("pcc", "03_pcc", "All-pairs Pearson: bijective tile mapping", "pearson_allpairs"),
    Lab("epistasis", "04_epistasis", "Epistasis: popcount and masked mutual information",
        "search"),
)


def names(*, benchmark: bool | None = None) -> tuple[str, ...]:
    """Lab names in notebook order (``benchmark=True``: only labs with a benchmark)."""
    return tuple(l.name for l in LABS if benchmark is None or l.benchmark == benchmark)


def get(key: str | int) -> Lab:
    """A lab by name (``"alignment"``), module (``"labkit.alignment"``), notebook stem
    (``"01_alignment"``) or number (``1``)."""
    for lab in LABS:
        if key in (lab.name, lab.module, lab.notebook, lab.number):
            return lab
    raise KeyError(f"no lab {key!r}; labs: {', '.join(names())}")


def load(key: str | int) -> ModuleType:
    return get(key).load()


def modules() -> tuple[str, ...]:
    return tuple(l.module for l in LABS)


#: The modules of a lab that register its exercises (``labkit.check``) and their hints
#: (``labkit.hints``): its checks and, where it has one, its open challenge
#: (``labkit.<lab>.challenge``, :mod:`labkit.check.challenge`).
CHECK_MODULES = ("checks", "challenge")


def check_modules() -> tuple[str, ...]:
    """The modules that register exercises, found (their lab packages imported, not they):
    ``labkit.<lab>.checks`` for every lab, and ``labkit.<lab>.challenge`` where the lab has one.
    A lab whose package is missing has none; a real missing dependency inside a lab raises."""
    from importlib.util import find_spec
    out = []
    for lab in LABS:
        for part in CHECK_MODULES:
            mod = f"{lab.module}.{part}"
            try:
                if find_spec(mod) is not None:
                    out.append(mod)
            except ModuleNotFoundError as e:
                if e.name != lab.module:      # a real missing dependency inside the lab
                    raise
    return tuple(out)


def load_checks() -> None:
    """Import every module of :func:`check_modules`: importing them registers the exercises with
    labkit.check and the hints with labkit.hints, which both call this instead of importing each
    other."""
    for mod in check_modules():
        importlib.import_module(mod)

"""The one list of labs, and the one shape of a lab.

Everything that needs to know which labs exist — the CLI, ``labkit.check``'s lookup of
``check.<exercise>``, the grader, the tests — reads it from here; no other module names a lab.
Adding a lab is one line in ``LABS`` (plus its package, notebook source, test file and docs page:
see CONTRIBUTING.md, "Adding a lab").

The template
------------
Every lab is a package ``labkit/<name>/`` with the same named files for the same roles
(:data:`TEMPLATE`), so that a reader who knows one lab finds their way in all of them:

* ``__init__.py`` — the public face: the friendly entry point (its arguments validated in
  numbered steps, then one engine call) and every public name re-exported, the contract's
  (``SIZES``, ``Inputs``, ``make_inputs``, ``reference``, ``validate``, ``run_benchmark``,
  ``TARGETS``) first; what the notebook reads as ``<lab>.<name>`` is found here.
* ``inputs.py`` — ``SIZES``, the frozen ``Inputs`` record, ``make_inputs`` and the coercion and
  validation of what a caller gives the entry point.
* ``reference.py`` — ``reference(inputs)`` and ``validate(result, expected)``, and the
  independent oracles behind them (numpy, brute force, a peer library), never a kernel.
* ``kernels.py`` — the teaching steps the notebook shows, naive first, one kernel per step.
* ``engine.py`` — what the entry point runs; it may be the last teaching step itself.
* ``bench.py`` — ``run_benchmark`` and ``TARGETS`` (read by ``labkit bench``) and the peers the
  lab is measured beside.
* ``checks.py`` — the exercise checks (found through :func:`check_modules`).
* ``challenge.py`` — the open challenge (every lab but lesson 00, whose entry says
  ``challenge=False``).

Optional, same names wherever they occur (:data:`OPTIONAL`): ``mpi.py`` (the entry point over
MPI ranks) and ``__main__.py`` (``python -m labkit.<lab>``). A lab keeps a public module for a
topic the notebook teaches by name only when its :class:`Lab` entry declares it in ``topics``,
with its role. Every other module is a private helper of one of the above, named with a leading
underscore (``_<name>.py``: the engine's LLVM intrinsics, plans and packed panels, the bench's
workloads and peers, the checks' gates). On the package the function ``reference`` hides the
module of that name: import from ``labkit.<lab>.reference`` to reach the module.
``tests/test_lab_contract.py`` holds every lab to this.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

__all__ = ["Lab", "LABS", "TEMPLATE", "OPTIONAL", "get", "names", "load", "modules",
           "CHECK_MODULES", "check_modules", "load_checks"]

#: The files of every lab, each with its role (the module docstring tells them in full).
TEMPLATE = {
    "__init__.py": "the public face: the entry point (numbered checks, one engine call), re-exports",
    "inputs.py": "SIZES, Inputs, make_inputs and the coercion of the entry point's arguments",
    "reference.py": "reference, validate and the independent oracles behind them",
    "kernels.py": "the teaching steps the notebook shows, naive first",
    "engine.py": "the kernels the entry point runs",
    "bench.py": "run_benchmark, TARGETS and the peers measured beside the lab",
    "checks.py": "the exercise checks",
    "challenge.py": "the open challenge (not in a lab whose Lab entry says challenge=False)",
}

#: Files a lab may have, with the same name and role wherever they occur.
OPTIONAL = {
    "mpi.py": "the entry point over MPI ranks",
    "__main__.py": "python -m labkit.<lab>: the command line",
}


@dataclass(frozen=True)
class Lab:
    """One lab: ``name`` (``labkit.<name>``), its notebook stem, title and friendly entry point;
    ``topics``: its public modules beyond :data:`TEMPLATE` and :data:`OPTIONAL`, each a
    ``(module, role)`` pair — a topic the notebook teaches by name."""

    name: str
    notebook: str
    title: str
    entry: str
    benchmark: bool = True      # has run_benchmark() + TARGETS for `labkit bench`
    challenge: bool = True      # has challenge.py, the open challenge
    topics: tuple[tuple[str, str], ...] = ()

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
    Lab("lesson00", "00_tools", "Tools: timing, IR and assembly, vectorisation", "colsum",
        challenge=False),
    Lab("alignment", "01_alignment", "Alignment: transposing data for SIMD", "align",
        topics=(("scoring", "the alphabet, its codes, Scoring and the int16 bound fits_int16"),
                ("prose", "the notebook's readings of the tuner and the batch steps"))),
    Lab("bspline", "02_bspline", "B-spline orbitals: AoS → SoA → AoSoA", "evaluate_vgh",
        topics=(("layouts", "the output layouts: streams, aligned arrays, AoSoA tiles"),)),
    Lab("pcc", "03_pcc", "All-pairs Pearson: bijective tile mapping", "pearson_allpairs",
        topics=(("mapping", "the bijective mapping of job ids to pairs and tiles"),)),
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

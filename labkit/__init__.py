"""labkit: hands-on CPU performance-engineering labs in Jupyter, built on numba.

Submodules load on first use (``labkit.bench``, ``labkit.inspect``, ``labkit.check``, …), so
``import labkit`` stays quick.
"""
import importlib

__version__ = "0.1.0"

_SUBMODULES = ("bench", "check", "hardware", "inspect", "plots", "widgets", "release", "grade",
               "lesson00", "alignment", "bspline", "pcc", "epistasis")
__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"labkit.{name}")
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)

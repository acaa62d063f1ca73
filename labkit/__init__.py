"""labkit: hands-on CPU performance-engineering labs in Jupyter, built on numba.

Submodules load on first use (``labkit.bench``, ``labkit.inspect``, ``labkit.check``, …), so
``import labkit`` stays quick. The labs (``labkit.alignment`` …) are the ones
``labkit.registry`` lists.
"""
import importlib

from labkit import _env, registry

_env.apply()   # NUMBA_CPU_NAME=haswell means a Haswell's features too (labkit.target)

__version__ = "0.1.0"

_TOOLS = ("bench", "check", "hardware", "hints", "inspect", "plots", "widgets", "release",
          "grade")
_SUBMODULES = (*_TOOLS, *registry.names())
__all__ = ["__version__", "registry", *_SUBMODULES]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"labkit.{name}")
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)

"""``numba.njit`` that asks LLVM for the host's full vector width, per function.

On Intel cores with AVX-512 (Skylake-SP … Emerald Rapids) LLVM's tuning carries ``prefer-256-bit``:
its loop vectoriser emits 256-bit (``ymm``) loops although the registers hold 512 bits, because on
early AVX-512 cores 512-bit instructions lowered the clock. A plain ``@numba.njit`` loop therefore
uses half of the machine's lanes. Clang's answer is ``-mprefer-vector-width=512``, which becomes the
LLVM function attribute ``"prefer-vector-width"="512"``; this module adds that attribute to the
functions one decorator compiles — nothing else in the process changes (``NUMBA_CPU_FEATURES`` with
``-prefer-256-bit`` would change every function, the students' included).

``labkit.jit.njit`` is a drop-in for ``numba.njit``: labkit's fast kernels use it; the lessons'
before/after variants and the comparators the checks time a student against keep plain
``numba.njit``, so a student's plain loop is never judged against code compiled with a width the
student did not get. Where AVX-512 is absent (or on AArch64, RISC-V) it is exactly ``numba.njit``.

``LABKIT_VECTOR_BITS=256`` (or ``=0``) in the environment turns the preference off, to measure what
it buys: ``LABKIT_VECTOR_BITS=256 labkit bench alignment``.

Importing this module also makes numba's on-disk cache see labkit's other files: numba keys a
cached function on its own source file only, so a kernel whose callee (or a constant it freezes)
lives in another file kept loading its old machine code after that file changed — a ``git pull``
that edits ``panels.py`` alone ran ``engine.py``'s cached drivers with the old micro-kernel. For
functions of labkit's modules (``CACHE_PACKAGES``; never a student's) the index key also holds a
digest of the sources of the function's subpackage plus this file and ``_common.py``
(:func:`sources_digest`); an entry from other sources is a miss and is compiled again. Every
labkit module with ``cache=True`` kernels imports this module before their first call (itself,
through its package, or in the function that jits them; ``tests/test_imports.py`` checks it).
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

import numba
from numba.core import caching as _caching
from numba.core.caching import FunctionCache
from numba.core.compiler import Compiler

__all__ = ["njit", "vector_bits", "compiles_for_avx512", "ATTRIBUTE", "WidePipeline",
           "NoAliasWidePipeline", "sources_digest", "CACHE_PACKAGES"]

ATTRIBUTE = "prefer-vector-width"


@lru_cache(maxsize=None)
def vector_bits() -> int | None:
    """The width labkit's kernels ask for (512 on an x86 host with AVX-512), or None: no request.

    ``LABKIT_VECTOR_BITS`` overrides it (``0`` or ``256`` or below: no request)."""
    env = os.environ.get("LABKIT_VECTOR_BITS", "").strip()
    if env:
        try:
            bits = int(env)
        except ValueError:
            raise ValueError(f"LABKIT_VECTOR_BITS={env!r}: give a width in bits, e.g. 512, "
                             f"or 0 for LLVM's own preference") from None
        return bits if bits > 256 else None
    return 512 if compiles_for_avx512() else None


@lru_cache(maxsize=None)
def compiles_for_avx512() -> bool:
    """Whether numba compiles for an x86 core with AVX-512F: the host, or the CPU that
    ``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` name (:mod:`labkit.target`, which reads
    LLVM's own answer for that CPU: ``haswell`` no, ``znver4`` yes)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    from labkit.target import target

    return target().has("avx512f")


def _refuse_foreign_target() -> None:
    """labkit's kernels compile for numba's target: one this host cannot run is refused here,
    with what to do instead, before any of them is compiled (numba would die with SIGILL)."""
    import platform

    if platform.machine().lower() in ("x86_64", "amd64"):
        from labkit.target import ensure_executable

        ensure_executable()


_refuse_foreign_target()

_CLASSES: dict[type, type] = {}


def _wide_class(base: type) -> type:
    """A subclass of the numba target context *base* whose lowered functions carry the attribute."""
    if base not in _CLASSES:
        def post_lowering(self, mod, library):
            super(cls, self).post_lowering(mod, library)
            bits = vector_bits()
            if bits:
                attr = f'"{ATTRIBUTE}"="{bits}"'
                for fn in mod.functions:
                    if not fn.is_declaration:
                        # llvmlite's AttributeSet.add accepts only enum attributes; a string
                        # attribute is rendered verbatim in the function's definition
                        set.add(fn.attributes, attr)

        cls = type(f"Wide{base.__name__}", (base,), {"post_lowering": post_lowering})
        _CLASSES[base] = cls
    return _CLASSES[base]


class WidePipeline(Compiler):
    """numba's default pipeline, lowering through a target context that adds the width attribute.

    Parallel loops' bodies are compiled through the same context (numba hands the lowering context
    to the gufunc it outlines), so ``prange`` bodies are wide too."""

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        super().__init__(typingctx, targetctx, library, args, return_type, flags, locals)
        if vector_bits():
            ctx = self.state.targetctx
            wide = ctx.subtarget()
            wide.__class__ = _wide_class(type(ctx))
            self.state.targetctx = wide


class NoAliasWidePipeline(WidePipeline):
    """:class:`WidePipeline` with numba's ``noalias`` flag: every array argument is LLVM
    ``noalias``, so loops over several arrays need no run-time overlap checks. Only for functions
    whose array arguments never overlap (``labkit.jit.njit(..., noalias=True)``)."""

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        flags.noalias = True                   # a fresh Flags object per compilation
        super().__init__(typingctx, targetctx, library, args, return_type, flags, locals)


class _WideCache(FunctionCache):
    """numba's on-disk cache, with the requested width and the noalias flag in the index key: a
    function compiled both wide and plain (a check's plain twin of a wide kernel), or under
    another ``LABKIT_VECTOR_BITS``, keeps separate entries, never loads the other's code."""

    def __init__(self, py_func, noalias: bool):
        super().__init__(py_func)
        self._noalias = noalias

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, codegen) + ((ATTRIBUTE, vector_bits()),
                                                    ("noalias", self._noalias))


def _make(fn, sigs, options: dict):
    options = dict(options)
    noalias = options.pop("noalias", False)
    if not isinstance(noalias, bool):
        raise TypeError(f"noalias must be True or False, got {noalias!r}")
    pipeline = NoAliasWidePipeline if noalias else WidePipeline
    disp = numba.njit(pipeline_class=pipeline, **options)(fn)
    if options.get("cache"):
        disp._cache = _WideCache(disp.py_func, noalias)
    if sigs is not None:                      # eager compilation, as numba.njit(sigs) does
        for sig in sigs if isinstance(sigs, list) else [sigs]:
            disp.compile(sig)
        disp.disable_compile()
    return disp


def njit(*args, **options):
    """``numba.njit(*args, **options)`` compiled with :data:`vector_bits` as LLVM's vector preference.

    Use it exactly like ``numba.njit`` (bare, with options, with signatures, or
    ``njit(options)(function)``); ``cache=True`` keeps wide entries apart from plain ones.
    ``noalias=True``: array arguments are LLVM ``noalias`` (:class:`NoAliasWidePipeline`)."""
    if "pipeline_class" in options:
        raise TypeError("labkit.jit.njit sets pipeline_class itself; use numba.njit for your own")
    if len(args) == 1 and callable(args[0]) and not isinstance(args[0], (str, list, tuple)):
        return _make(args[0], None, options)
    if len(args) > 1:
        raise TypeError("labkit.jit.njit takes at most one positional argument: a function or "
                        "signature(s)")
    sigs = args[0] if args else None
    return lambda fn: _make(fn, sigs, options)


# ---- numba's cache key: the sources of the function's package, not only its own file ----------
#: top-level package name -> its folder; functions of modules under these get the digest key
CACHE_PACKAGES: dict[str, Path] = {"labkit": Path(__file__).resolve().parent}
_SHARED = ("jit.py", "_common.py")        # files every labkit kernel depends on


@lru_cache(maxsize=None)
def sources_digest(module: str) -> str | None:
    """sha256 over the ``.py`` files a function of ``module`` may depend on — its subpackage
    (``labkit.pcc.engine`` → ``labkit/pcc/**``; a top-level module: its own file) and
    ``_SHARED`` — or None for a module outside :data:`CACHE_PACKAGES`. Computed once per process
    (the files of a running process's modules do not change under it in a way numba would see)."""
    top, _, rest = module.partition(".")
    root = CACHE_PACKAGES.get(top)
    if root is None:
        return None
    sub = rest.partition(".")[0]
    files = sorted((root / sub).rglob("*.py")) if sub and (root / sub).is_dir() else \
        [root / f"{sub}.py"] if sub else [root / "__init__.py"]
    files += [root / f for f in _SHARED if (root / f) not in files]
    h = hashlib.sha256()
    for f in files:
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


_NUMBA_INDEX_KEY = _caching.Cache._index_key


def _index_key(self, sig, codegen):
    key = _NUMBA_INDEX_KEY(self, sig, codegen)
    digest = sources_digest(getattr(self._py_func, "__module__", None) or "")
    return key if digest is None else key + (("sources", digest),)


if getattr(_caching.Cache._index_key, "__module__", "") != __name__:   # once per process
    _caching.Cache._index_key = _index_key

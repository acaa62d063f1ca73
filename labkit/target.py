"""The CPU numba compiles for — labkit's one target knob — and what that CPU can do.

numba compiles for the host unless ``NUMBA_CPU_NAME`` (and/or ``NUMBA_CPU_FEATURES``) says
otherwise. labkit follows the same target everywhere: :mod:`labkit.hardware`'s vector widths,
lanes and ``has(feature)``, :mod:`labkit.jit`, every check's gates and comparators, ``labkit
bench``, the grader's sandbox and worker (they inherit the environment).

One quirk of numba is mended here: with ``NUMBA_CPU_NAME=haswell`` alone, numba still hands LLVM
the *host's* feature list, so on an AVX-512 host it emits haswell-tuned AVX-512 code — not code a
Haswell laptop can run. :func:`apply` (called by ``import labkit``) sets ``NUMBA_CPU_FEATURES`` to
the empty string in that case, which makes LLVM use the named CPU's own features: the code is
what numba emits on that laptop. Set ``NUMBA_CPU_FEATURES`` yourself to keep numba's behaviour.

What the target can do is read from LLVM itself (:func:`probe_features`): a handful of tiny IR
functions compiled for the target CPU and features, one per ISA feature the labs care about, and
the instructions LLVM selects for them (``vpopcntq`` for VPOPCNTDQ, ``zmm`` for AVX-512F …) — the
same code generator numba uses, so there is no table of CPU models to keep up to date. A target
with a feature the host lacks cannot run here: :func:`ensure_executable` refuses it with a clear
message (numba would die with SIGILL); ``labkit.inspect.compile_for(fn, cpu)`` shows its code
without running it.

It is a top-level module, below both :mod:`labkit.jit` (which asks it whether the target has
AVX-512 and refuses a target this host cannot run) and :mod:`labkit.hardware` (whose kernels
:mod:`labkit.jit` compiles): it imports neither, nor numba.
"""
from __future__ import annotations

import functools
import os
import platform
import sys
import tempfile
from dataclasses import dataclass

__all__ = ["Target", "TargetError", "apply", "target", "ensure_executable", "probe_features",
           "PROBED"]

_X86 = ("x86_64", "amd64", "i686", "x86")

# canonical feature (labkit.hardware.isa.X86_FEATURES) -> (IR of one function, what in the
# assembly proves LLVM selected the feature's instructions for it)
_PROBES = {
    "sse4_2": ("define <2 x i1> @f(<2 x i64> %a, <2 x i64> %b) {\n"
               "  %c = icmp sgt <2 x i64> %a, %b\n  ret <2 x i1> %c\n}", ("pcmpgtq",)),
    "popcnt": ("declare i64 @llvm.ctpop.i64(i64)\n"
               "define i64 @f(i64 %a) {\n  %c = call i64 @llvm.ctpop.i64(i64 %a)\n  ret i64 %c\n}",
               ("popcnt",)),
    "avx": ("define void @f(<8 x float>* %p) {\n  %a = load <8 x float>, <8 x float>* %p\n"
            "  %c = fadd <8 x float> %a, %a\n  store <8 x float> %c, <8 x float>* %p\n  ret void\n}",
            ("vaddps\t%ymm", "vaddps %ymm")),
    "avx2": ("define void @f(<8 x i32>* %p) {\n  %a = load <8 x i32>, <8 x i32>* %p\n"
             "  %c = mul <8 x i32> %a, %a\n  store <8 x i32> %c, <8 x i32>* %p\n  ret void\n}",
             ("vpmulld\t%ymm", "vpmulld %ymm", "vpmulld\t(", "vpmulld (")),
    "fma": ("declare double @llvm.fma.f64(double, double, double)\n"
            "define double @f(double %a, double %b, double %c) {\n"
            "  %r = call double @llvm.fma.f64(double %a, double %b, double %c)\n  ret double %r\n}",
            ("vfmadd",)),
    "avx512f": ("define void @f(<16 x float>* %p) #0 {\n  %a = load <16 x float>, <16 x float>* %p\n"
                "  %c = fadd <16 x float> %a, %a\n  store <16 x float> %c, <16 x float>* %p\n"
                "  ret void\n}", ("%zmm",)),
    "avx512bw": ("define void @f(<32 x i16>* %p) #0 {\n  %a = load <32 x i16>, <32 x i16>* %p\n"
                 "  %c = mul <32 x i16> %a, %a\n  store <32 x i16> %c, <32 x i16>* %p\n"
                 "  ret void\n}", ("vpmullw\t%zmm", "vpmullw %zmm", "vpmullw\t(", "vpmullw (")),
    "avx512vl": ("declare <4 x i64> @llvm.abs.v4i64(<4 x i64>, i1)\n"
                 "define void @f(<4 x i64>* %p) {\n  %a = load <4 x i64>, <4 x i64>* %p\n"
                 "  %c = call <4 x i64> @llvm.abs.v4i64(<4 x i64> %a, i1 false)\n"
                 "  store <4 x i64> %c, <4 x i64>* %p\n  ret void\n}", ("vpabsq",)),
    "avx512_vpopcntdq": ("declare <8 x i64> @llvm.ctpop.v8i64(<8 x i64>)\n"
                         "define void @f(<8 x i64>* %p) #0 {\n  %a = load <8 x i64>, <8 x i64>* %p\n"
                         "  %c = call <8 x i64> @llvm.ctpop.v8i64(<8 x i64> %a)\n"
                         "  store <8 x i64> %c, <8 x i64>* %p\n  ret void\n}", ("vpopcntq",)),
}
PROBED = tuple(_PROBES)
_ATTRS = 'attributes #0 = { "min-legal-vector-width"="512" "prefer-vector-width"="512" }'


class TargetError(RuntimeError):
    """The target numba is set to compile for cannot run on this host (or LLVM does not know it)."""


@dataclass(frozen=True)
class Target:
    """What numba compiles for: ``cpu`` (LLVM's name), its ISA ``features`` (labkit's canonical
    names, probed from LLVM), the host's name, and what of the target the host lacks."""
    cpu: str
    host_cpu: str
    arch: str
    features: frozenset
    host_features: frozenset
    env: tuple = ()          # (name, value) of the NUMBA_CPU_* variables that set it
    unknown: bool = False    # LLVM did not recognise the CPU name

    @property
    def overridden(self) -> bool:
        """True when the environment, not the host, chose the target."""
        return bool(self.env)

    @property
    def missing(self) -> tuple:
        """Features of the target this host cannot execute (empty: the target runs here)."""
        if self.arch not in _X86:
            return ()
        return tuple(f for f in PROBED if f in self.features and f not in self.host_features)

    @property
    def executable(self) -> bool:
        return not self.missing and not self.unknown

    def has(self, feature: str) -> bool:
        """Whether code compiled for the target may use the feature (canonical name)."""
        if feature in PROBED and self.arch in _X86:
            return feature in self.features
        return feature in self.host_features and not (self.overridden and self.arch in _X86)

    @property
    def vector_bits(self) -> int:
        """Width of the widest registers the target's code may use (x86: 512/256/128; else 128)."""
        if self.arch not in _X86:
            return 128
        if "avx512f" in self.features:
            return 512
        if "avx" in self.features or "avx2" in self.features:
            return 256
        return 128

    def describe(self) -> str:
        """One line: 'targeting haswell (256-bit, set by NUMBA_CPU_NAME=haswell) on a znver5 host'."""
        named = any(k == "NUMBA_CPU_NAME" and v for k, v in self.env)
        how = ", ".join(f"{k}={v!r}" if v == "" else f"{k}={v}" for k, v in self.env
                        if v or not named)   # the empty features labkit set beside a name
        if not self.overridden:
            return f"targeting the host, {self.host_cpu} ({self.vector_bits}-bit vectors)"
        line = (f"targeting {self.cpu} ({self.vector_bits}-bit vectors; set by {how}) on a "
                f"{self.host_cpu} host")
        if self.unknown:
            line += f" — LLVM does not know the CPU {self.cpu!r}"
        elif self.missing:
            line += f" — this host cannot execute its {', '.join(self.missing)} instructions"
        return line


from labkit._env import apply, numba_compiled_before  # noqa: E402 - cheap, no numba


def _numba_target() -> tuple[str, str | None, tuple]:
    """(cpu name, feature string or None for the host's, env pairs) as numba will use them."""
    env = tuple((k, os.environ[k]) for k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")
                if k in os.environ)
    name = os.environ.get("NUMBA_CPU_NAME", "").strip()
    feats = os.environ.get("NUMBA_CPU_FEATURES")
    if name.lower() in ("host", "native"):
        name = ""
    if not name and feats is None:
        return "", None, ()
    return name, feats, env


class _Stderr:
    """fd 2 into a temporary file for the duration, its text in ``.text`` (LLVM warns about
    unknown CPUs on stderr, not by exception; labkit.inspect reads the vectoriser's remarks and
    retargeted compiles' warnings the same way)."""

    def __enter__(self):
        self.text = ""
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        self._tmp = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._tmp.fileno(), 2)
        return self

    def __exit__(self, *exc):
        try:
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        self.text = self._tmp.read().decode("utf-8", "replace")
        self._tmp.close()
        return False


@functools.lru_cache(maxsize=None)
def probe_features(cpu: str, features: str = "") -> tuple[frozenset, bool]:
    """(canonical x86 features LLVM gives code for ``cpu`` with ``features``, unknown-CPU flag).

    Compiles :data:`PROBED`'s tiny functions for that target (in this process; no numba)."""
    import llvmlite.binding as ll

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    triple = ll.get_process_triple()
    mods = "\n".join(ir.replace("@f(", f"@f_{i}(") for i, (ir, _) in enumerate(_PROBES.values()))
    text = f'target triple = "{triple}"\n{mods}\n{_ATTRS}\n'
    with _Stderr() as err:
        tm = ll.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features, opt=2)
    if "not a recognized processor" in err.text:
        return frozenset(), True     # emitting code for it would abort the process (64-bit code
                                     # on a generic subtarget)
    with _Stderr():
        asm = tm.emit_assembly(ll.parse_assembly(text))
    parts = asm.split("f_")
    found = set()
    for i, (name, (_, marks)) in enumerate(_PROBES.items()):
        body = next((p for p in parts if p.startswith(f"{i}:")), "")
        if any(m in body for m in marks):
            found.add(name)
    return frozenset(found), False


def target() -> Target:
    """The target numba compiles for, as the environment says now (cached per setting)."""
    return _target(*_numba_target())


@functools.lru_cache(maxsize=16)
def _target(name: str, feats: str | None, env: tuple) -> Target:
    import llvmlite.binding as ll

    arch = platform.machine().lower()
    try:
        host_cpu = ll.get_host_cpu_name()
    except Exception:  # pragma: no cover
        host_cpu = "unknown"
    if arch not in _X86:
        host = frozenset()
        return Target(cpu=name or host_cpu, host_cpu=host_cpu, arch=arch, features=host,
                      host_features=host, env=env)
    try:
        host_flat = ll.get_host_cpu_features().flatten()
    except RuntimeError:
        host_flat = ""
    host, _ = probe_features(host_cpu, host_flat)
    if not env:
        return Target(cpu=host_cpu, host_cpu=host_cpu, arch=arch, features=host,
                      host_features=host)
    cpu = name or host_cpu
    got, unknown = probe_features(cpu, host_flat if feats is None else feats)
    return Target(cpu=cpu, host_cpu=host_cpu, arch=arch, features=got, host_features=host,
                  env=env, unknown=unknown)


def ensure_executable() -> Target:
    """The target, or :class:`TargetError` when this host cannot run its code."""
    t = target()
    if t.unknown:
        raise TargetError(
            f"NUMBA_CPU_NAME={t.cpu}: LLVM does not know this CPU, so numba cannot compile "
            f"for it (LLVM would stop the process). Use a name from labkit.inspect.known_cpus(), e.g. haswell, "
            f"alderlake, icelake-server, sapphirerapids, znver4 — or unset NUMBA_CPU_NAME.")
    if t.missing:
        raise TargetError(
            f"{t.describe()}. Code compiled for {t.cpu} would stop with an illegal-instruction "
            f"signal here. Pick a target this host can run (one without "
            f"{', '.join(t.missing)}, e.g. NUMBA_CPU_NAME=haswell), or unset NUMBA_CPU_NAME and "
            f"read {t.cpu}'s code without running it: labkit.inspect.compile_for(fn, {t.cpu!r}).")
    if numba_compiled_before():
        import warnings

        warnings.warn(f"numba compiled before labkit was imported, with the host's features; "
                      f"{t.describe()} holds only for functions compiled from now on — import "
                      f"labkit first (restart the kernel).", RuntimeWarning, stacklevel=2)
    return t

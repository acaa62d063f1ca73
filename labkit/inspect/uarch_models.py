"""Which of OSACA's core models stands for a CPU: an LLVM CPU name's own model, or the nearest
one with the approximation named, or a clear error naming the nearest models.

:func:`osaca_model` for a named CPU; :func:`_host_model` for the CPU numba compiles for here,
which may fall back on the host's vendor. :mod:`labkit.inspect.uarch` re-exports them.
"""
from __future__ import annotations

import re

#: LLVM CPU name → (OSACA model, approximation note or "")
MODELS: dict[str, tuple[str, str]] = {
    "sandybridge": ("SNB", ""), "corei7-avx": ("SNB", ""),
    "ivybridge": ("IVB", ""), "core-avx-i": ("IVB", ""),
    "haswell": ("HSW", ""), "core-avx2": ("HSW", ""), "broadwell": ("BDW", ""),
    "skylake": ("SKX", "Skylake-SP model for the client Skylake core (same ports, no AVX-512)"),
    "skylake-avx512": ("SKX", ""), "skx": ("SKX", ""),
    "cannonlake": ("SKX", "Skylake-SP model for Cannon Lake (a Skylake core with AVX-512)"),
    "cascadelake": ("CSX", ""), "cooperlake": ("CSX", "Cascade Lake model"),
    "icelake-client": ("ICL", ""), "icelake-server": ("ICX", ""),
    "tigerlake": ("ICL", "Ice Lake model for Tiger Lake (a close relative)"),
    "rocketlake": ("ICL", "Ice Lake model for Rocket Lake (the same Sunny Cove core)"),
    "sapphirerapids": ("SPR", ""), "emeraldrapids": ("SPR", "Sapphire Rapids model"),
    "graniterapids": ("SPR", "Sapphire Rapids model for Granite Rapids (Redwood Cove)"),
    "graniterapids-d": ("SPR", "Sapphire Rapids model for Granite Rapids (Redwood Cove)"),
    "alderlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "raptorlake": ("SPR", "Sapphire Rapids (Golden Cove) model for the performance cores"),
    "meteorlake": ("SPR", "Sapphire Rapids (Golden Cove) model; Redwood Cove is close"),
    "znver1": ("ZEN1", ""), "znver2": ("ZEN2", ""), "znver3": ("ZEN3", ""), "znver4": ("ZEN4", ""),
    "znver5": ("ZEN4", "Zen 4 model; Zen 5 has wider vector and load units, so it may beat it"),
    "apple-m1": ("M1", ""), "apple-a14": ("M1", ""),        # the same Firestorm core
    "apple-m2": ("M1", "Apple M1 model"),
    "apple-m3": ("M1", "Apple M1 model"), "apple-m4": ("M1", "Apple M1 model"),
    "neoverse-n1": ("N1", ""), "neoverse-v2": ("V2", ""), "grace": ("V2", ""),  # V2 cores
    "neoverse-v1": ("V2", "Neoverse V2 model for V1"), "neoverse-n2": ("V2", "Neoverse V2 model"),
    "neoverse-512tvb": ("V2", "Neoverse V2 model for V1"),
    "cortex-a76": ("N1", "Neoverse N1 model: N1 is the server version of the Cortex-A76 core"),
    "cortex-a76ae": ("N1", "Neoverse N1 model: N1 is the server version of the Cortex-A76 core"),
    "a64fx": ("A64FX", ""), "cortex-a72": ("A72", ""), "thunderx2t99": ("TX2", ""),
    "tsv110": ("TSV110", ""),
}

#: families of LLVM names without a model of their own, by pattern: (pattern, model, note with
#: {cpu}) — a later core of a line OSACA models, where the nearest model is plain
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (r"(arrowlake.*|lunarlake|pantherlake|wildcatlake|novalake|diamondrapids)", "SPR",
     "Sapphire Rapids (Golden Cove) model, the newest Intel core OSACA has; {cpu}'s "
     "performance cores are later and wider, so they may beat it"),
    (r"znver([5-9]|\d\d)", "ZEN4", "Zen 4 model, the newest AMD core OSACA has; {cpu} is later "
     "and may beat it"),
    (r"apple-(m\d+|a1[5-9]|a[2-9]\d|latest)", "M1", "Apple M1 model, the only Apple core OSACA "
     "has; {cpu} is later and may beat it"),
    (r"neoverse-(v[3-9]\w*|n3)", "V2", "Neoverse V2 model, the newest Arm server core OSACA "
     "has; {cpu} is later and may beat it"),
    (r"cortex-(a7[78]\w*|x1\w*)", "N1", "Neoverse N1 (Cortex-A76) model for {cpu}, a later and "
     "wider descendant of the A76"),
    (r"cortex-(a71\d|a72\d|x[2-9]\w*|x9\d\d)", "V2", "Neoverse V2 (Cortex-X3 class) model for "
     "{cpu}, a core of the same generations"),
)

#: cores where no model is near enough to stand in: what they are, and the nearest models
_NO_MODEL: tuple[tuple[str, str, str], ...] = (
    (r"(bonnell|atom|silvermont|slm|goldmont.*|tremont|gracemont|sierraforest|grandridge|"
     r"clearwaterforest|knl|knm|lakemont)",
     "an Intel Atom-line (E-core) or Xeon Phi core; OSACA models only the big cores, which "
     "would understate its cycles", "skylake-avx512, icelake-client, sapphirerapids"),
    (r"(core2|penryn|nehalem|corei7|westmere|yonah|prescott|nocona|pentium.*|i[3-6]86)",
     "an Intel core older than Sandy Bridge, the oldest Intel core OSACA models",
     "sandybridge, haswell"),
    (r"(k[678]\w*|athlon.*|opteron.*|amdfam10|barcelona|btver\d|bdver\d|geode)",
     "an AMD core older than Zen, the oldest AMD core OSACA models", "znver1, znver2"),
    (r"(apple-a([7-9]|1[0-3])|cyclone)", "an Apple core older than the M1's (A14)", "apple-m1"),
    (r"(cortex-\w+|neoverse-\w+|ampere\w*|oryon\w*|exynos\w*|falkor|kryo|saphira|carmel|"
     r"thunderx\w*)", "an Arm core OSACA has no model of", "neoverse-n1, neoverse-v2, "
     "cortex-a72, apple-m1"),
)

_GENERIC = r"(generic|x86-64(-v[1-4])?|x86_64|i386|aarch64|arm64|armv[89][\w.-]*)"


def osaca_model(cpu: str, *, host: bool = False) -> tuple[str, str]:
    """(OSACA model, approximation note) for an LLVM CPU name — its own model, or the nearest
    one with the approximation named (:data:`FAMILIES`: ``arrowlake`` → Sapphire Rapids,
    ``znver6`` → Zen 4, ``apple-m5`` → M1). ValueError with a clear message when none fits: a
    generic target (``x86-64``, ``generic``: an instruction set, not a core) or a core no model
    is near, naming the nearest models. ``host``: the name is the CPU numba compiles for here
    (the message then says how to name another)."""
    key = str(cpu).strip().lower()
    if key in MODELS:
        return MODELS[key]
    for pattern, model, note in FAMILIES:
        if re.fullmatch(pattern, key):
            return model, note.format(cpu=key)
    where = (" (the CPU numba compiles for here; NUMBA_CPU_NAME sets it)" if host else "")
    if re.fullmatch(_GENERIC, key):
        raise ValueError(
            f"no OSACA core model for a generic target: {cpu!r}{where} names an instruction set, "
            "not a core, and OSACA's tables are per core — pass cpu= the core to predict for, "
            "e.g. cpu='skx' (Skylake-SP), 'znver4', 'neoverse-v2' or 'apple-m1' "
            "(labkit.inspect.uarch.MODELS lists them all)")
    for pattern, what, nearest in _NO_MODEL:
        if re.fullmatch(pattern, key):
            raise ValueError(f"no OSACA core model for {cpu!r}{where}: it is {what}; the nearest "
                             f"models are {nearest} — pass cpu= one of those to see that core's "
                             "bound (not this one's)")
    import difflib
    close = difflib.get_close_matches(key, list(MODELS), n=4, cutoff=0.6)
    arm = re.match(r"(apple|cortex|neoverse|a64fx|thunderx|tsv|ampere|grace)", key)
    nearest = close or (["neoverse-v2", "neoverse-n1", "apple-m1"] if arm else
                        ["sapphirerapids", "skylake-avx512", "znver4"])
    raise ValueError(f"no OSACA core model for {cpu!r}{where}: an LLVM name labkit does not "
                     f"know — pass cpu= a core that has one, e.g. {', '.join(nearest)} "
                     "(labkit.inspect.uarch.MODELS lists them all)")


def _host_model(cpu: str) -> tuple[str, str]:
    """:func:`osaca_model` for the CPU numba compiles for here; a name LLVM gives a core newer
    than its tables (no family pattern yet) falls back on the host's vendor: the newest Intel or
    AMD model, the approximation named."""
    try:
        return osaca_model(cpu, host=True)
    except ValueError:
        if re.fullmatch(_GENERIC, str(cpu).lower()) or any(
                re.fullmatch(p, str(cpu).lower()) for p, _, _ in _NO_MODEL):
            raise
        from labkit import hardware
        name = str(hardware.info().get("cpu") or "")
        for vendor, model, label in (("Intel", "SPR", "Sapphire Rapids (Golden Cove)"),
                                     ("AMD", "ZEN4", "Zen 4")):
            if re.search(rf"\b{vendor}\b", name, re.I):
                return model, (f"{label} model, the newest {vendor} core OSACA has, for this "
                               f"{name} (LLVM calls it {cpu!r}): a later core may beat it")
        raise

"""Elements per loop iteration, read from the addresses the hot loop moves.

The loop's registers are followed through one iteration as linear forms of their values at the
loop's head ({register: coefficient, "#": constant}; "?" for a value the reading cannot follow:
a load, a shift right, a conditional move — :mod:`labkit.inspect.uarch_steps`). A register whose
value at the loop's end is its own value plus k steps by k per iteration (a copy of another
register steps with it). An address the loop reads or writes that moves with such a register
says how many bytes of an array one iteration covers; with the element size of the function's
arrays that is the number of elements. A register that only counts iterations
(``sub x10, x10, #1``, ``decq``) feeds no address and so says nothing. When the addresses
disagree, or no address moves, the count is None: a wrong count would be worse than none.
"""
from __future__ import annotations

import re

from .uarch_steps import _OPAQUE, _arm_step, _split_operands, _x86_step

#: SVE vector length in bits of the cores whose LLVM name fixes it (``incb``/``incd`` step by it)
SVE_BITS = {"neoverse-v2": 128, "neoverse-n2": 128, "neoverse-v1": 256, "a64fx": 512}


def _steps(final: dict) -> dict:
    """Per-iteration step of each register the loop writes (None: not a constant step)."""
    steps: dict = {}
    pending = {}
    for r, f in final.items():
        if f == {r: 1}:
            continue
        if "?" in f:
            steps[r] = None
        elif f.get(r, 0) == 1 and set(f) <= {r, "#"}:
            steps[r] = f.get("#", 0)                  # r + k
        elif f.get(r, 0) == 0:
            pending[r] = f                            # a copy of others: steps as they do
        else:
            steps[r] = None
    for _ in range(len(pending) + 1):
        for r, f in list(pending.items()):
            deps = [o for o in f if o != "#"]
            if all(o in steps or o not in final or final[o] == {o: 1} for o in deps):
                vals = [steps.get(o, 0) for o in deps]
                steps[r] = None if None in vals else sum(f[o] * v for o, v in zip(deps, vals))
                del pending[r]
    steps.update({r: None for r in pending})
    return steps


def _elements(loop: list[str], itemsizes=(), cpu: str | None = None,
              sve_bits: int | None = None) -> int | None:
    """Elements per iteration from the addresses the loop moves (see the module's docstring);
    ``itemsizes``: the element sizes in bytes of the function's arrays; ``cpu``/``sve_bits``: the
    core, for the SVE vector length. None unless every moving address agrees on one count."""
    from .vector import _asm_arch
    own = _own_sizes(itemsizes)
    body = _body(loop)
    arch = _asm_arch("\n".join(body))
    if arch not in ("x86-64", "aarch64"):
        return None
    vl = SVE_BITS.get(str(cpu or "").lower()) or sve_bits
    st, mems, weak = _follow(loop, body, arch, vl)
    return _agreed_count(mems, weak, _steps(st), own, own | _code_sizes(body, arch))


def _own_sizes(itemsizes) -> set:
    """The arguments' element sizes as a set of positive ints (one int, or none, allowed)."""
    if isinstance(itemsizes, int):
        itemsizes = (itemsizes,)
    return {int(s) for s in (itemsizes or ()) if s}


def _body(loop: list[str]) -> list[str]:
    """The loop's instructions: no labels, comments or directives."""
    return [ln for ln in loop if ln.strip() and not re.match(r"^\s*[.\w$]+:", ln)
            and not ln.strip().startswith(("#", ".", "//", ";"))]


def _follow(loop: list[str], body: list[str], arch: str, vl: int | None) -> tuple:
    """(registers' linear forms at the loop's end, addresses read or written, addresses ``lea``
    computes) after one pass over the loop; what an if/else inside it writes is not followed."""
    st: dict = {}
    mems: list = []
    weak: list = []
    instr = [i for i, ln in enumerate(loop) if ln in body]
    cond = _conditional_span(loop, instr)
    for i in instr:
        text = loop[i].split("//")[0]
        if arch == "x86-64":
            text = text.split("#")[0]
        parts = text.strip().split(None, 1)
        if not parts:
            continue
        mnem, ops = parts[0], _split_operands(parts[1]) if len(parts) > 1 else []
        before = dict(st)
        if arch == "x86-64":
            _x86_step(mnem, ops, st, mems, weak)
        else:
            _arm_step(mnem, ops, st, mems, vl)
        if cond and cond[0] < i < cond[1]:
            for r in st:
                if st[r] != before.get(r):
                    st[r] = dict(_OPAQUE)
    return st, mems, weak


def _conditional_span(loop: list[str], instr: list[int]) -> tuple[int, int] | None:
    """(first jump, last label) inside the loop, the span of an if/else in it; None if none."""
    labels = [i for i, ln in enumerate(loop) if re.match(r"^\s*[.\w$]+:", ln)]
    jumps = [i for i in instr[:-1] if re.match(r"^\s*(j\w+|b\.\w+|b|cbn?z|tbn?z)\s", loop[i])]
    inner_labels = [i for i in labels if instr and i > instr[0]]
    return (jumps[0], max(inner_labels)) if jumps and inner_labels else None


def _candidates(addr: dict, steps: dict, sizes: set, scales: set) -> set | None:
    """The element counts one address's move per iteration allows; None when it moves by an
    unknown amount or not at all."""
    terms = {o: c for o, c in addr.items() if o not in ("#", "?") and c}
    if any(steps.get(o, 0) is None for o in terms):
        return None                               # moves by an unknown amount
    moving = {o: c for o, c in terms.items() if steps.get(o, 0)}
    nbytes = abs(sum(c * steps[o] for o, c in moving.items()))
    if not nbytes:
        return None                               # the same address every iteration
    if len(moving) == 1:
        (o, c), = moving.items()
        if abs(c) > 1 and abs(c) in scales:
            return {abs(steps[o])}                # an index scaled by its element's size
    return {nbytes // s for s in sizes if nbytes % s == 0}


def _agreed_count(mems: list, weak: list, steps: dict, own: set, wider: set) -> int | None:
    """The one count the moving addresses agree on, loads and stores first, ``lea`` addresses
    next; None when they disagree or none moves."""
    # the arguments' element sizes first (an element is one of theirs: a word, not its bytes);
    # when the addresses then disagree, arrays made inside the loop's function may be why:
    # again with the sizes its instructions name
    for group in (mems, weak):
        for sizes, scales in (((own, own), (wider, wider | {2, 4, 8, 16, 32, 64})) if own
                              else ((wider, wider | {2, 4, 8, 16, 32, 64}),)):
            found = [c for c in (_candidates(a, steps, sizes, scales) for a in group)
                     if c is not None]
            if not found:
                break
            common = set.intersection(*found)
            if common:
                return common.pop() if len(common) == 1 else None
    return None


_ARM_SIZE = {"b": 1, "h": 2, "s": 4, "d": 8}


def _code_sizes(body: list[str], arch: str) -> set:
    """Element sizes the loop's own instructions name (``v4.8h``, ``z1.d``; ``vpaddw``,
    ``vmulpd``, ``movzbl``): the arrays the function makes inside count too. A size too many
    only makes a count ambiguous (None), never wrong; a size missing could."""
    out: set = set()
    for ln in body:
        if arch == "aarch64":
            out |= {_ARM_SIZE[t] for t in re.findall(r"\b[vz]\d+\.\d*([bhsd])\b", ln)}
            continue
        mnem = ln.split()[0].lower() if ln.split() else ""
        m = (re.fullmatch(r"v?p[a-z]+?([bwdq])", mnem)
             or re.fullmatch(r"v?movdq[au](8|16|32|64)", mnem)
             or re.fullmatch(r"v?[a-z]+?[ps]([sd])", mnem)
             or re.fullmatch(r"movz([bw])[lq]", mnem))
        if m:
            t = m.group(1)
            out.add({"b": 1, "w": 2, "d": 4 if mnem.startswith(("vp", "p")) else 8, "q": 8,
                     "s": 4}.get(t) or int(t) // 8)
    return out


def _itemsizes(fn, signature) -> list[int]:
    """Element sizes (bytes) of the arrays among the arguments (values or numba types)."""
    import numpy as np
    if signature is None:
        sigs = list(getattr(fn, "signatures", None) or [])
        signature = sigs[0] if len(sigs) == 1 else ()
    if not isinstance(signature, (tuple, list)):
        signature = getattr(signature, "args", ())
    out = []
    for a in signature:
        if isinstance(a, np.ndarray):
            out.append(a.itemsize)
        elif hasattr(a, "dtype") and hasattr(a, "ndim"):          # a numba Array type
            try:
                from numba.np.numpy_support import as_dtype
                out.append(as_dtype(a.dtype).itemsize)
            except Exception:  # noqa: BLE001 - an array of objects: no size to use
                pass
    return out

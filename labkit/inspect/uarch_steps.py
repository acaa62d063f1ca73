"""One instruction's effect on the loop's registers, x86-64 (AT&T) and AArch64, as linear forms.

A register's value is a linear form of the registers' values at the loop's head
(``{register: coefficient, "#": constant}``; ``"?"`` for a value the reading cannot follow).
:func:`_x86_step` and :func:`_arm_step` advance the forms over one instruction and record the
addresses it reads or writes; :mod:`labkit.inspect.uarch_elements` turns them into elements per
iteration.
"""
from __future__ import annotations

import re

_OPAQUE = {"?": 1}


def _lin_add(a: dict, b: dict, k: int = 1) -> dict:
    """``a + k·b`` of two linear forms (opaque when either is)."""
    out = dict(a)
    for o, c in b.items():
        if o == "?":
            out["?"] = 1
        else:
            out[o] = out.get(o, 0) + k * c
    return {o: c for o, c in out.items() if c or o == "?"}


def _lin_scale(a: dict, k: int) -> dict:
    """``k·a`` of a linear form (opaque stays opaque)."""
    return {o: (1 if o == "?" else c * k) for o, c in a.items() if o == "?" or c * k}


def _imm(tok: str) -> int | None:
    """An immediate operand's value (``$8``, ``#16``, ``0x10``), or None."""
    try:
        return int(tok.strip().lstrip("#$"), 0)
    except ValueError:
        return None


def _split_operands(s: str) -> list[str]:
    """An instruction's operands, split at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in s:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + ([cur.strip()] if cur.strip() else [])


def _x86_gpr(tok: str) -> str | None:
    """'%eax' → 'rax', '%r9d' → 'r9'; None for anything but a general-purpose register."""
    r = tok.strip().split()[0].lstrip("%").lower() if tok.strip() else ""
    m = re.fullmatch(r"r(\d+)[dwb]?", r)
    if m and 8 <= int(m.group(1)) <= 15:
        return f"r{m.group(1)}"
    m = re.fullmatch(r"[re]?([abcd])x|([abcd])[lh]", r)
    if m:
        return f"r{m.group(1) or m.group(2)}x"
    m = re.fullmatch(r"[re]?(si|di|bp|sp)l?", r)
    return f"r{m.group(1)}" if m else None


def _arm_gpr(tok: str) -> str | None:
    """'x11'/'w11' → 'x11', 'sp', 'zr' for xzr/wzr; None for vector and other registers."""
    r = tok.strip().lower()
    if r in ("xzr", "wzr"):
        return "zr"
    if r in ("sp", "wsp"):
        return "sp"
    m = re.fullmatch(r"[xw](\d+)", r)
    return f"x{m.group(1)}" if m and int(m.group(1)) <= 30 else {"fp": "x29", "lr": "x30"}.get(r)


_X86_MEM = re.compile(r"(?P<disp>[^(,\s]*)\((?P<base>%\w+)?(?:,(?P<idx>%\w+)?(?:,(?P<scale>\d+))?)?\)")
_X86_NOWRITE = re.compile(r"(cmp|test|bt|ucomis|comis|vucomis|vcomis|ptest|vptest|prefetch|nop|j)"
                          r"|(push|call|ret)")


def _x86_addr(op: str, val) -> dict | None:
    """The linear form of an AT&T memory operand's address; None for a gather or a segment."""
    m = _X86_MEM.search(op)
    if not m or ":" in op.split("(")[0]:
        return None
    disp = _imm(m.group("disp") or "0")
    addr = {"#": disp} if disp is not None else dict(_OPAQUE)     # a symbol: a constant address
    for part, scale in ((m.group("base"), 1), (m.group("idx"), int(m.group("scale") or 1))):
        if part:
            reg = _x86_gpr(part)
            if reg is None:                 # a vector of addresses (a gather): not followed
                return None
            addr = _lin_add(addr, _lin_scale(val(reg), scale))
    return addr


def _x86_step(mnem: str, ops: list[str], st: dict, mems: list, weak: list) -> None:
    """Advance the registers ``st`` over one x86-64 instruction, recording the addresses it
    reads or writes in ``mems`` and those ``lea`` computes from a base and an index in ``weak``."""
    m = mnem.lower()
    val = lambda r: dict(st.get(r, {r: 1}))          # noqa: E731
    base = re.sub(r"[qlwb]$", "", m) if re.fullmatch(r"(add|sub|inc|dec|lea|mov|shl|sal|neg|"
                                                    r"imul|xor)[qlwb]?", m) else m
    for op in ops:
        if "(" in op and base != "lea":
            a = _x86_addr(op, val)
            if a is not None:
                mems.append(a)
    if m in ("cltq", "cqto", "cqo", "cltd", "cdq") or (
            re.fullmatch(r"i?(mul|div)[qlwb]?", m) and len(ops) == 1):
        st["rax"] = st["rdx"] = dict(_OPAQUE)
        return
    if not ops or _X86_NOWRITE.match(m):
        return
    dest = _x86_gpr(ops[-1]) if "(" not in ops[-1] else None
    if dest is None:
        return
    src = ops[0] if len(ops) > 1 else None
    src_reg = _x86_gpr(src) if src and "(" not in src else None
    k = _imm(src) if src and src.startswith("$") else None
    new: dict | None = None
    if base in ("add", "sub") and len(ops) == 2:
        sign = 1 if base == "add" else -1
        if k is not None:
            new = _lin_add(val(dest), {"#": k}, sign)
        elif src_reg:
            new = _lin_add(val(dest), val(src_reg), sign)
    elif base in ("inc", "dec") and len(ops) == 1:
        new = _lin_add(val(dest), {"#": 1}, 1 if base == "inc" else -1)
    elif base == "neg" and len(ops) == 1:
        new = _lin_scale(val(dest), -1)
    elif base == "lea" and len(ops) == 2:
        a = _x86_addr(ops[0], val)
        mm = _X86_MEM.search(ops[0])
        if a is not None and mm and mm.group("base") and mm.group("idx"):
            weak.append(a)                  # base + index: most likely an address
        new = a
    elif base in ("mov", "movslq", "movsxd") and len(ops) == 2:
        new = {"#": k} if k is not None else (val(src_reg) if src_reg else None)
    elif base in ("shl", "sal") and len(ops) == 2 and k is not None:
        new = _lin_scale(val(dest), 1 << k)
    elif base == "imul" and len(ops) == 3 and k is not None and _x86_gpr(ops[1]):
        new = _lin_scale(val(_x86_gpr(ops[1])), k)
    elif base == "xor" and src_reg == dest:
        new = {"#": 0}
    st[dest] = new if new is not None else dict(_OPAQUE)


_ARM_NOWRITE = {"b", "bl", "br", "blr", "ret", "cbz", "cbnz", "tbz", "tbnz", "cmp", "cmn", "tst",
                "ccmp", "ccmn", "fcmp", "fcmpe", "nop", "prfm", "prfum"}


def _arm_step(mnem: str, ops: list[str], st: dict, mems: list, vl: int | None) -> None:
    """Advance the registers ``st`` over one AArch64 instruction, recording the address it
    reads or writes in ``mems`` (``vl``: the SVE vector length in bits, when known)."""
    m = mnem.lower()
    mi, wb = _arm_memory(ops, st, mems)
    for d in _arm_dests(m, ops, mi, st):
        if d == "zr":
            continue
        new = _arm_value(m, ops, st, vl)
        st[d] = new if new is not None else dict(_OPAQUE)
    if wb and wb[0] and wb[0] != "zr":
        st[wb[0]] = wb[1]


def _arm_val(tok: str, st: dict) -> dict | None:
    """An operand's linear form: an immediate, the zero register or a general register's
    current value; None for anything else."""
    tok = tok.strip()
    if tok.startswith("#"):
        k = _imm(tok)
        return {"#": k} if k is not None else dict(_OPAQUE)
    r = _arm_gpr(tok)
    if r == "zr":
        return {"#": 0}
    return dict(st.get(r, {r: 1})) if r else None


def _arm_shifted(v: dict | None, how: str | None) -> dict | None:
    """``v`` after an operand's shift or extension (``lsl #3``, ``sxtw``); opaque for others."""
    if v is None or not how:
        return v
    mm = re.fullmatch(r"(lsl|[su]xt[wx])\s*(?:#(\d+))?", how.strip().lower())
    return _lin_scale(v, 1 << int(mm.group(2) or 0)) if mm else dict(_OPAQUE)


def _arm_memory(ops: list[str], st: dict, mems: list) -> tuple[int | None, tuple | None]:
    """The memory operand's index and its write-back (base register, new value) or None; the
    address it names is appended to ``mems``."""
    mi = next((i for i, o in enumerate(ops) if o.startswith("[")), None)
    if mi is None:
        return None, None
    inner = ops[mi].rstrip("!").strip().strip("[]")
    parts = _split_operands(inner)
    breg = _arm_gpr(parts[0]) if parts else None
    addr = _arm_val(parts[0], st) if breg else None
    if addr is None:
        return mi, None
    if len(parts) == 1:
        off = {"#": 0}
    elif parts[1].startswith("#"):          # an immediate (also "#1, mul vl")
        off = {"#": 0} if "mul vl" in inner else (_arm_val(parts[1], st) or dict(_OPAQUE))
    else:
        off = _arm_shifted(_arm_val(parts[1], st), parts[2] if len(parts) > 2 else None) \
            or dict(_OPAQUE)
    mems.append(_lin_add(addr, off))
    if ops[mi].endswith("!"):               # pre-indexed: the base takes the address
        return mi, (breg, _lin_add(addr, off))
    if mi + 1 < len(ops):                   # post-indexed: base += the next operand
        return mi, (breg, _lin_add(addr, _arm_val(ops[mi + 1], st) or dict(_OPAQUE)))
    return mi, None


def _arm_dests(m: str, ops: list[str], mi: int | None, st: dict) -> list[str]:
    """The general registers the instruction writes with a value to follow; a load's
    destinations are made opaque here and none is returned."""
    if m in _ARM_NOWRITE or m.startswith(("b.", "st")):
        return []
    if m.startswith("ld") and mi is not None:
        for d in [r for r in map(_arm_gpr, ops[:mi]) if r]:
            st[d] = dict(_OPAQUE)
        return []
    return [_arm_gpr(ops[0])] if ops and _arm_gpr(ops[0]) else []


def _arm_value(m: str, ops: list[str], st: dict, vl: int | None) -> dict | None:
    """The value the instruction writes to its destination, or None when it is not followed."""
    val = lambda tok: _arm_val(tok, st)          # noqa: E731
    sve = re.fullmatch(r"(inc|dec|cnt)([bhwd])", m)
    if m in ("add", "adds", "sub", "subs") and len(ops) >= 3:
        a, b = val(ops[1]), _arm_shifted(val(ops[2]), ops[3] if len(ops) > 3 else None)
        if a is not None and b is not None:
            return _lin_add(a, b, 1 if m.startswith("add") else -1)
    elif m in ("mov", "movz") and len(ops) == 2 and "lsl" not in ops[1]:
        return val(ops[1])
    elif m == "lsl" and len(ops) == 3 and ops[2].startswith("#"):
        a = val(ops[1])
        return _lin_scale(a, 1 << _imm(ops[2])) if a is not None and _imm(ops[2]) is not None \
            else None
    elif m == "neg" and len(ops) == 2:
        a = val(ops[1])
        return _lin_scale(a, -1) if a is not None else None
    elif sve and vl:
        return _sve_count(sve, ops, val, vl)
    return None


def _sve_count(sve: re.Match, ops: list[str], val, vl: int) -> dict | None:
    """``incd``/``decw``/``cntb``'s value: the register plus or minus, or just, the elements of
    one vector of that size (times a ``mul #k``); None for a pattern other than ``all``."""
    pattern = ops[1].lower() if len(ops) > 1 else "all"
    mul = re.search(r"mul\s+#(\d+)", ",".join(ops[2:]).lower())
    if pattern != "all":
        return None
    k = (vl // {"b": 8, "h": 16, "w": 32, "d": 64}[sve.group(2)]) \
        * (int(mul.group(1)) if mul else 1)
    return ({"#": k} if sve.group(1) == "cnt"
            else _lin_add(val(ops[0]), {"#": k}, 1 if sve.group(1) == "inc" else -1))

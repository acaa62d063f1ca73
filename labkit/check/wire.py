"""The two encodings between the trusted worker W and the child C that runs plain-Python
student code (:mod:`labkit.check.proxy`, :mod:`labkit.check.child`).

* W → C: a pickle (C trusts W). Callables that are not labkit's/numpy's own functions (the
  check's callbacks, e.g. prefix_reuse's ``extend`` and ``visit``) become handles C calls back
  through W; labkit's numba functions go by reference (C imports them).
* C → W: JSON of tagged values only — numbers, strings, None, tuples, lists, dicts, numpy
  arrays and scalars of non-object dtypes, anything else as an opaque description. W never
  unpickles or unmarshals what C sends, so C can only hand W data.
"""
from __future__ import annotations

import base64
import io
import json
import pickle
import types

__all__ = ["dumps_w2c", "loads_w2c", "encode", "decode", "dumps_c2w", "loads_c2w", "Opaque",
           "MAX_DEPTH"]

MAX_DEPTH = 24
_SAFE_MODULES = ("labkit", "numpy", "numba", "math", "builtins", "operator", "functools")


def _by_reference(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    qual = getattr(obj, "__qualname__", "") or ""
    if "<" in qual or not mod.split(".")[0] in _SAFE_MODULES:
        return False
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or \
        type(obj).__module__.startswith(("numba", "numpy"))


class _WPickler(pickle.Pickler):
    def __init__(self, f, handles: list):
        super().__init__(f, protocol=pickle.HIGHEST_PROTOCOL)
        self.handles = handles

    def persistent_id(self, obj):
        if isinstance(obj, type) or not callable(obj) or isinstance(obj, types.ModuleType):
            return None
        if _by_reference(obj):
            if type(obj).__module__.startswith("numba"):       # a dispatcher: by name
                return ("ref", obj.__module__, obj.__qualname__)
            return None
        self.handles.append(obj)
        return ("cb", len(self.handles) - 1)


def dumps_w2c(obj, handles: list) -> bytes:
    f = io.BytesIO()
    _WPickler(f, handles).dump(obj)
    return f.getvalue()


def loads_w2c(data: bytes, make_callback) -> object:
    """C side: ``make_callback(handle_id)`` builds the stub for a W callable."""
    import importlib

    class _U(pickle.Unpickler):
        def persistent_load(self, pid):
            if pid[0] == "cb":
                return make_callback(int(pid[1]))
            obj = importlib.import_module(pid[1])
            for part in pid[2].split("."):
                obj = getattr(obj, part)
            return obj

    return _U(io.BytesIO(data)).load()


# ---------------------------------------------------------------- C → W: tagged JSON
def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def encode(v, depth: int = 0):
    """C side: a JSON-able tagged form of ``v`` (raises TypeError past MAX_DEPTH)."""
    import numpy as np
    if depth > MAX_DEPTH:
        raise TypeError("a value nested too deeply")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            return ["O", "ndarray", f"an array of Python objects, shape {v.shape}"]
        order = "C" if v.flags.c_contiguous else ("F" if v.flags.f_contiguous else "S")
        return ["A", v.dtype.str if not v.dtype.fields else v.dtype.descr.__repr__(),
                list(v.shape), _b64(v.tobytes(order="F" if order == "F" else "C")), order]
    if isinstance(v, np.generic):
        if v.dtype.hasobject:
            return ["O", type(v).__name__, repr(v)[:200]]
        return ["S", v.dtype.str, _b64(v.tobytes())]
    if isinstance(v, complex):
        return ["C", v.real, v.imag]
    if isinstance(v, bytes):
        return ["B", _b64(v)]
    if isinstance(v, tuple):
        return ["T", [encode(x, depth + 1) for x in v]]
    if isinstance(v, list):
        return ["L", [encode(x, depth + 1) for x in v]]
    if isinstance(v, dict):
        return ["D", [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in v.items()]]
    try:
        text = repr(v)[:200]
    except Exception:  # noqa: BLE001 - a student's __repr__
        text = "?"
    return ["O", type(v).__name__[:60], text]


class Opaque:
    """What W gets for a value C could not send as data (a student's object)."""

    def __init__(self, tname: str, text: str):
        self.tname, self.text = str(tname), str(text)

    def __repr__(self) -> str:
        return self.text

    @property
    def __name__(self):
        return self.tname


def _dtype(spec):
    import ast

    import numpy as np
    if not isinstance(spec, str) or len(spec) > 2000:
        raise ValueError("bad dtype")
    dt = np.dtype(ast.literal_eval(spec)) if spec.startswith("[") else np.dtype(spec)
    if dt.hasobject:
        raise ValueError("object dtype")
    return dt


def decode(v, depth: int = 0):
    """W side: the value ``encode`` made (ValueError on anything malformed)."""
    import numpy as np
    if depth > MAX_DEPTH + 1:
        raise ValueError("too deep")
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if not (isinstance(v, list) and v and isinstance(v[0], str)):
        raise ValueError("untagged value")
    tag, rest = v[0], v[1:]
    if tag == "A":
        dt = _dtype(rest[0])
        shape = tuple(int(s) for s in rest[1])
        if any(s < 0 for s in shape):
            raise ValueError("negative shape")
        raw = base64.b64decode(rest[2])
        n = 1
        for s in shape:
            n *= s
        if n * dt.itemsize != len(raw):
            raise ValueError("array size")
        order = rest[3] if len(rest) > 3 else "C"
        if order == "F":                       # a transposed result stays F-ordered
            return np.frombuffer(raw, dt).reshape(shape, order="F").copy(order="F")
        a = np.frombuffer(raw, dt).reshape(shape).copy()
        if order == "S" and a.ndim and shape[-1] > 1:    # a strided view stays one
            big = np.empty(shape[:-1] + (2 * shape[-1],), dt)
            big[..., ::2] = a
            return big[..., ::2]
        return a
    if tag == "S":
        dt = _dtype(rest[0])
        raw = base64.b64decode(rest[1])
        if len(raw) != dt.itemsize:
            raise ValueError("scalar size")
        return np.frombuffer(raw, dt)[0].copy()
    if tag == "C":
        return complex(float(rest[0]), float(rest[1]))
    if tag == "B":
        return base64.b64decode(rest[0])
    if tag == "T":
        return tuple(decode(x, depth + 1) for x in rest[0])
    if tag == "L":
        return [decode(x, depth + 1) for x in rest[0]]
    if tag == "D":
        out = {}
        for k, x in rest[0]:
            k = decode(k, depth + 1)
            if isinstance(k, (list, dict, np.ndarray)):
                raise ValueError("unhashable key")
            out[k] = decode(x, depth + 1)
        return out
    if tag == "O":
        return Opaque(rest[0], rest[1])
    raise ValueError(f"unknown tag {tag!r}")


_ENCODER = json.JSONEncoder(allow_nan=True, separators=(",", ":"))   # bound before student code


def dumps_c2w(obj, _encode=_ENCODER.encode) -> bytes:
    return _encode(obj).encode("utf-8")


def loads_c2w(data: bytes):
    return json.loads(data.decode("utf-8"))

"""The size argument every lab's ``make_inputs`` takes: a named size or a dict of overrides."""
from __future__ import annotations

from typing import Any, Mapping, Sequence


def resolve_size(size: Any, sizes: Mapping[str, Mapping], allowed: Sequence[str], *,
                 base: str | None = "small") -> dict:
    """``size`` → a spec dict: a name in ``sizes`` (a copy of that entry) or a dict whose keys
    are all in ``allowed``, laid over ``sizes[base]`` (over nothing when ``base`` is None).
    Each lab then checks the values (their meaning differs from lab to lab)."""
    example = "{" + ", ".join(f"'{k}': …" for k in list(allowed)[:2]) + "}"
    if isinstance(size, str):
        if size not in sizes:
            raise ValueError(f"unknown size {size!r}: size must be one of {sorted(sizes)} or a "
                             f"dict like {example}")
        return dict(sizes[size])
    if isinstance(size, Mapping):
        unknown = sorted(str(k) for k in set(size) - set(allowed))
        if unknown:
            raise ValueError(f"unknown size keys {unknown}; allowed: {', '.join(allowed)}")
        spec = dict(sizes[base]) if base is not None else {}
        spec.update(size)
        return spec
    raise TypeError(f"size must be a name {sorted(sizes)} or a dict like {example}, not "
                    f"{type(size).__name__}")

"""What a resumable run is, as a JSON-ready fingerprint, and how a saved one differs.

A checkpoint (planner.outer.checkpoint) and a study's finished cells
(planner.core.execution.DoneStore) are only resumed by the run they belong to: each saves
a fingerprint of its inputs and settings, and a resume compares it with the current
one, refusing a mismatch with the first differing field -- the one line a user needs
to see which flag or file changed.
"""

from __future__ import annotations

import json
from typing import Any


def normalise(obj: Any) -> Any:
    """Round-trip through JSON so tuples/lists and int/float keys compare equal."""
    return json.loads(json.dumps(obj))


def first_difference(a: Any, b: Any, where: str) -> tuple[str, Any, Any] | None:
    """The first (field, saved, current) at which ``a`` and ``b`` differ, walking
    mappings by sorted key and equal-length lists by index; None when equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            d = first_difference(a.get(k), b.get(k), f"{where}.{k}")
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first_difference(x, y, f"{where}[{i}]")
            if d is not None:
                return d
        return None
    return None if a == b else (where, a, b)


__all__ = ["first_difference", "normalise"]

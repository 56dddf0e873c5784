"""Checkpoint files of the outer searches: save as you go, resume without re-evaluating.

One JSON document per search run::

    {"format": "hetero-planner/outer-checkpoint", "version": 1,
     "fingerprint": {"search": ..., "settings": {...}, "space": {...}, "seed": ...},
     "tracker": {"wall_time": seconds so far, "history": [HistoryPoint, ...],
                 "evaluations": n, "cache_hits": n},
     "state": {...}}     # the search's own state, e.g. Ax's JSON snapshot

The fingerprint guards against resuming a different run from the file: any change of
search, settings, inventory/budget/target or seed is reported as a one-line
:class:`~planner.errors.PlannerError` naming the file and the first differing field.
Writes are atomic (temp file + ``os.replace``), so an interruption while saving leaves
the previous checkpoint intact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.atomic import write_text_atomic
from planner.errors import PlannerError

FORMAT = "hetero-planner/outer-checkpoint"
VERSION = 1


def normalise(obj: Any) -> Any:
    """Round-trip through JSON so tuples/lists and int/float keys compare equal."""
    return json.loads(json.dumps(obj))


def save_checkpoint(path: Path, *, fingerprint: dict, tracker: dict, state: dict) -> None:
    doc = {"format": FORMAT, "version": VERSION, "fingerprint": normalise(fingerprint),
           "tracker": tracker, "state": state}
    write_text_atomic(path, json.dumps(doc))


def load_checkpoint(path: Path, *, fingerprint: dict) -> dict | None:
    """The saved document, or None if ``path`` does not exist yet."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PlannerError(f"{path}: cannot read checkpoint ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PlannerError(f"{path}: not an outer-search checkpoint (field 'format')")
    if doc.get("version") != VERSION:
        raise PlannerError(f"{path}: checkpoint version {doc.get('version')!r} is not "
                           f"supported (field 'version'; expected {VERSION})")
    for key in ("fingerprint", "tracker", "state"):
        if key not in doc:
            raise PlannerError(f"{path}: checkpoint lacks field '{key}'")
    diff = _first_difference(doc["fingerprint"], normalise(fingerprint), "fingerprint")
    if diff is not None:
        field, old, new = diff
        raise PlannerError(f"{path}: checkpoint belongs to another run (field '{field}': "
                           f"saved {old!r}, now {new!r}); use another --checkpoint path "
                           "or delete the file")
    return doc


def _first_difference(a: Any, b: Any, where: str) -> tuple[str, Any, Any] | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            d = _first_difference(a.get(k), b.get(k), f"{where}.{k}")
            if d is not None:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d is not None:
                return d
        return None
    return None if a == b else (where, a, b)

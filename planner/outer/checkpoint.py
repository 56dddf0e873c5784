"""Checkpoint files of the outer searches: save as you go, resume without re-evaluating.

One JSON document per search run::

    {"format": "hetero-planner/outer-checkpoint", "version": 1,
     "fingerprint": {"search": ..., "settings": {...}, "space": {...}, "seed": ...},
     "tracker": {"wall_time": seconds so far, "history": [HistoryPoint, ...],
                 "evaluations": n, "cache_hits": n},
     "state": {...}}     # the search's own state, e.g. Ax's JSON snapshot

The fingerprint guards against resuming a different run from the file: any change of
search, settings, inventory/budget/target or seed is reported as a one-line
:class:`~planner.core.errors.PlannerError` naming the file and the first differing field.
Writes are atomic (temp file + ``os.replace``), so an interruption while saving leaves
the previous checkpoint intact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from perfmodel.errors import check_number
from perfmodel.reading import read_text
from planner.core.atomic import write_text_atomic
from planner.core.defaults import MAX_HISTORY
from planner.core.errors import PlannerError
from planner.core.fingerprint import first_difference, normalise
from planner.outer.protocol import HistoryPoint, layout_counts

FORMAT = "hetero-planner/outer-checkpoint"
VERSION = 1


def save_checkpoint(path: Path, *, fingerprint: dict, tracker: dict, state: dict,
                    encoded: dict[str, str] | None = None) -> None:
    """Write the document atomically.  ``encoded``: entries of ``state`` already
    encoded as JSON text -- a search saving after every evaluation encodes its large,
    rarely changing state (Ax's snapshot, ~1 MB) once per change, not once per save."""
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in state.items()]
    items += [f"{json.dumps(k)}: {text}" for k, text in (encoded or {}).items()]
    write_text_atomic(path, "{" + ", ".join((
        f'"format": {json.dumps(FORMAT)}', f'"version": {VERSION}',
        f'"fingerprint": {json.dumps(normalise(fingerprint))}',
        f'"tracker": {json.dumps(tracker)}', '"state": {' + ", ".join(items) + "}")) + "}")


def load_checkpoint(path: Path, *, fingerprint: dict) -> dict | None:
    """The saved document, or None if ``path`` does not exist yet."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        raise PlannerError(f"{path}: the checkpoint is not a regular file; move it away to "
                           "start over")
    try:
        # Ax's own snapshot in "state" may hold NaN, so the JSON is read leniently; the
        # tracker, which decides what is resumed, is checked value by value below.
        doc = json.loads(read_text(path, "checkpoint"))
    except (ValueError, RecursionError) as e:
        raise PlannerError(f"{path}: cannot read checkpoint ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PlannerError(f"{path}: not an outer-search checkpoint (field 'format')")
    if doc.get("version") != VERSION:
        raise PlannerError(f"{path}: checkpoint version {doc.get('version')!r} is not "
                           f"supported (field 'version'; expected {VERSION})")
    for key in ("fingerprint", "tracker", "state"):
        if key not in doc:
            raise PlannerError(f"{path}: checkpoint lacks field '{key}'")
    _check_tracker(doc["tracker"], str(path))
    diff = first_difference(doc["fingerprint"], normalise(fingerprint), "fingerprint")
    if diff is not None:
        field, old, new = diff
        raise PlannerError(f"{path}: checkpoint belongs to another run (field '{field}': "
                           f"saved {old!r}, now {new!r}); resume with that run's "
                           "settings, or delete the file to start over (it is kept)")
    _check_layouts(doc["tracker"]["history"], normalise(fingerprint).get("space"),
                   str(path))
    return doc


def _check_layouts(history: list, space: Any, source: str) -> None:
    """Every saved layout within the space the fingerprint pins: known GPU types, and no
    more GPUs of a type than it holds (the fingerprint matches the run, so a layout
    outside its space is an edited file)."""
    if not isinstance(space, dict) or not isinstance(space.get("types"), list):
        return
    avail = {str(t.get("name")): t.get("available") for t in space["types"]
             if isinstance(t, dict)}
    for k, h in enumerate(history):
        for gpu, used in layout_counts(HistoryPoint.from_dict(h).layout).items():
            cap = avail.get(gpu)
            if gpu not in avail or (isinstance(cap, int) and used > cap):
                raise PlannerError(f"{source}: checkpoint field 'tracker.history[{k}]."
                                   f"layout' uses {used:,} {gpu} GPUs, outside the run's "
                                   "inventory; the file is corrupt")


def _check_tracker(tracker: Any, source: str) -> None:
    """The evaluations a resume would trust: every field present, every number finite
    and of its kind, every layout readable -- a hand-edited or corrupted checkpoint is a
    one-line error, never a resumed search that believes a NaN."""
    def fail(field: str) -> Any:
        return lambda problem: PlannerError(
            f"{source}: checkpoint field 'tracker.{field}' {problem}")

    if not isinstance(tracker, dict):
        raise PlannerError(f"{source}: checkpoint field 'tracker' must be an object")
    for key in ("wall_time", "evaluations", "cache_hits", "history"):
        if key not in tracker:
            raise PlannerError(f"{source}: checkpoint field 'tracker.{key}' is missing")
    check_number(tracker["wall_time"], fail("wall_time"), ge=0)
    for key in ("evaluations", "cache_hits"):
        check_number(tracker[key], fail(key), integer=True, ge=0)
    if not isinstance(tracker["history"], list):
        raise PlannerError(f"{source}: checkpoint field 'tracker.history' must be a list")
    if len(tracker["history"]) > MAX_HISTORY:
        raise PlannerError(f"{source}: checkpoint field 'tracker.history' lists "
                           f"{len(tracker['history']):,} evaluations; a search records at "
                           f"most {MAX_HISTORY:,}")
    for k, h in enumerate(tracker["history"]):
        where = f"history[{k}]"
        if not isinstance(h, dict):
            raise PlannerError(f"{source}: checkpoint field 'tracker.{where}' must be an "
                               "object")
        for key in ("index", "wall_time", "layout", "value", "cost", "feasible", "best"):
            if key not in h:
                raise PlannerError(f"{source}: checkpoint field 'tracker.{where}.{key}' "
                                   "is missing")
        check_number(h["index"], fail(f"{where}.index"), integer=True, ge=0)
        for key in ("wall_time", "value", "cost"):
            check_number(h[key], fail(f"{where}.{key}"), ge=0)
        if h["best"] is not None:
            check_number(h["best"], fail(f"{where}.best"))
        if not isinstance(h["feasible"], bool):
            raise PlannerError(f"{source}: checkpoint field 'tracker.{where}.feasible' must "
                               f"be true or false, got {h['feasible']!r}")
        lay = h["layout"]
        if isinstance(lay, list) and not all(
                isinstance(i, list | tuple) and len(i) == 2 and isinstance(i[0], str)
                and isinstance(i[1], int) and not isinstance(i[1], bool) and i[1] >= 1
                for i in lay):
            raise PlannerError(f"{source}: checkpoint field 'tracker.{where}.layout' must "
                               "be a list of [GPU type, GPUs >= 1] islands")
        try:
            HistoryPoint.from_dict(h)
        except (TypeError, ValueError) as err:
            raise PlannerError(f"{source}: checkpoint field 'tracker.{where}.layout' is "
                               f"not a layout ({err})") from None

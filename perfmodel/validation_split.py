"""The calibration / held-out split of the validation cases, and the posed-case files.

Issue 29 asks for a validation that cannot be tuned.  Two rules, committed before any
further fitting of the perf model:

* **The split is a function of the case id alone**: a case is *held out* when the first
  eight hex digits of ``sha256(SALT + ":" + id)``, read as an integer, fall in the lowest
  :data:`HELD_OUT_SHARE` of their range.  No figure, error or prediction enters it, so
  nobody can move a case to the side that flatters the model; a case keeps its side for
  ever (its id never changes), and a new case's side is known the moment it is named.
  Headline errors are reported on the held-out set; only calibration cases may inform a
  change to the model.
* **A case is posed before it is predicted**: new published rows are first committed
  to ``perfmodel/data/posed/*.yaml`` -- the figure, its quote and source, the fields the
  source states (``stated``) and every field it does not with the default assumed and
  why (``assumed``) -- without a prediction anywhere in the commit.  Only a later commit
  scores them (moving them into ``validation_cases.yaml``); the history shows the order.

The salt is fixed here, once; changing it would re-deal the cases and is not allowed
(``tests/perfmodel/test_validation_split.py`` pins the side of the existing cases).
"""

from __future__ import annotations

import hashlib
from importlib import resources
from typing import Any

from perfmodel.data_yaml import load_yaml

#: Fixed when the rule was committed (2026-11-27); never changed.
SALT = "planner-validation-split-2026-11-27"
#: Share of cases held out (a third: enough rows per vendor and phase to report on).
HELD_OUT_SHARE = 1.0 / 3.0
#: Fields every posed row carries (the rest of validation_cases.yaml's as the row needs).
POSED_FIELDS = ("id", "source", "gpu", "gpus", "model", "engine", "mode", "unit", "value",
                "quote")


def held_out(case_id: str) -> bool:
    """Whether the case named ``case_id`` is in the held-out set (module docstring)."""
    digest = hashlib.sha256(f"{SALT}:{case_id}".encode()).hexdigest()
    return int(digest[:8], 16) < HELD_OUT_SHARE * 16 ** 8


def split(case_ids: list[str]) -> dict[str, list[str]]:
    """``{"calibration": [...], "held_out": [...]}`` of ``case_ids``, in their order."""
    out: dict[str, list[str]] = {"calibration": [], "held_out": []}
    for cid in case_ids:
        out["held_out" if held_out(cid) else "calibration"].append(cid)
    return out


def load_posed() -> list[dict[str, Any]]:
    """Every posed (not yet scored) row of ``perfmodel/data/posed/*.yaml``, each with the
    ``source`` entry it cites resolved into ``source_info``."""
    rows: list[dict[str, Any]] = []
    folder = resources.files("perfmodel") / "data" / "posed"
    if not folder.is_dir():
        return rows
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if not f.name.endswith(".yaml"):
            continue
        doc = load_yaml(f.read_text()) or {}
        sources = doc.get("sources") or {}
        for row in doc.get("cases") or []:
            rows.append(dict(row, file=f.name, source_info=sources.get(row.get("source"))))
    return rows


__all__ = ["HELD_OUT_SHARE", "POSED_FIELDS", "SALT", "held_out", "load_posed", "split"]

"""Helpers (no tests) shared by tests/whatif/test_whatif_*.py: a small inventory -- 16 H200 @ 4
$/h and 32 H20 @ 1 $/h with islands of at least 8 GPUs -- and few length ranges, so a
study takes seconds, not minutes."""

from __future__ import annotations

from pathlib import Path

import yaml

SMALL_INVENTORY = {
    "name": "small",
    "min_island": 8,
    "gpus": [{"type": "H200", "count": 16, "price_per_hour": 4.0},
             {"type": "H20", "count": 32, "price_per_hour": 1.0}],
}


def write_spec(folder: Path, studies: dict, **top) -> Path:
    """Write the small inventory and a spec using it; returns the spec's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "small.yaml").write_text(yaml.safe_dump(SMALL_INVENTORY))
    data = {"inventory": "small.yaml", "ranges": 6,
            "solver": {"prune_tol": 0.0, "mip_gap": 1e-6}, **top, "studies": studies}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path

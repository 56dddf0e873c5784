"""Random search over either encoding: the baseline every BO curve is compared with.

``RandomSearch(evaluations=N, encoding=...)`` proposes N points drawn uniformly (iid,
seeded) from the divider or direct encoding's space — the same spaces, decoding and
per-search layout cache as the Bayesian searches, so a curve of best-so-far against
proposals is directly comparable (thesis Figs. 5.5-5.12 use proposals, i.e.
iterations x batch size, on the x axis).  With ``quasi=True`` it draws scrambled Sobol
points instead, which with the same seed are exactly the BO searches' warm start.

Checkpointing mirrors the BO searches: the proposals are a pure function of the seed,
so a resumed run regenerates them and skips the ones already in the saved history.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from planner.core.errors import PlannerError
from planner.core.execution import Executor
from planner.outer.checkpoint import load_checkpoint, save_checkpoint
from planner.outer.encodings import DirectEncoding, DividerEncoding, Encoding
from planner.outer.protocol import BLACK_BOX, LayoutObjective, Progress, SearchResult, SearchSpace
from planner.outer.tracking import Tracker, check_seed

ENCODINGS = ("divider", "direct")


class RandomSearch:
    name = "random"
    capabilities = frozenset({BLACK_BOX})

    def __init__(self, evaluations: int = 256, encoding: str = "divider", *,
                 quasi: bool = False, skew_range: float = 5.0, min_island: int | None = 2,
                 max_islands_per_type: int | None = None, slots: int = 16) -> None:
        if evaluations < 1:
            raise PlannerError("random: evaluations must be >= 1")
        if encoding not in ENCODINGS:
            raise PlannerError(f"random: encoding must be one of {ENCODINGS}, "
                               f"got {encoding!r}")
        self.evaluations = int(evaluations)
        self.encoding_name = encoding
        self.quasi = bool(quasi)
        self.skew_range = skew_range
        self.min_island = min_island
        self.max_islands_per_type = max_islands_per_type
        self.slots = slots

    def encoding(self, space: SearchSpace) -> Encoding:
        if self.encoding_name == "divider":
            return DividerEncoding(space, skew_range=self.skew_range,
                                   min_island=self.min_island,
                                   max_islands_per_type=self.max_islands_per_type)
        return DirectEncoding(space, slots=self.slots, min_island=self.min_island)

    def settings(self) -> dict[str, Any]:
        return {"evaluations": self.evaluations, "quasi": self.quasi}

    def search(self, space: SearchSpace, objective: LayoutObjective, *, seed: int,
               progress: Progress | None = None, checkpoint: Path | None = None,
               executor: Executor | None = None) -> SearchResult:
        seed = check_seed(seed)
        enc = self.encoding(space)
        settings = {**self.settings(), **enc.settings()}
        fingerprint = {"search": self.name, "settings": settings, "space": space.to_dict(),
                       "seed": int(seed)}
        tracker = Tracker(space, objective, planned=self.evaluations, progress=progress)
        doc = load_checkpoint(checkpoint, fingerprint=fingerprint) if checkpoint else None
        if doc is not None:
            tracker.restore(doc["tracker"])

        def save() -> None:  # after every evaluation: SIGKILL loses at most one
            if checkpoint is not None:
                save_checkpoint(checkpoint, fingerprint=fingerprint, tracker=tracker.state(),
                                state={})

        points = enc.sample(self.evaluations, seed=seed, quasi=self.quasi)
        tracker.after_each = save
        try:
            chunk = max(1, 4 * (executor.workers if executor is not None else 1))
            for j in range(len(tracker.history), self.evaluations):
                if (j - len(tracker.history)) % chunk == 0:  # a few per worker at a time
                    tracker.prefetch((enc.decode(p) for p in points[j:j + chunk]), executor)
                tracker.evaluate(enc.decode(points[j]), "random")
        except BaseException:
            with contextlib.suppress(Exception):  # keep the original error
                save()
            raise
        finally:
            tracker.after_each = None
        return tracker.result(self.name, settings)

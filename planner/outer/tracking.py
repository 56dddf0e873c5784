"""Evaluation bookkeeping shared by every outer search: cache, history, best, progress.

The inner loop is the expensive part of the outer search (§4.8.3 caches its pieces for
the same reason), and different points of a search space often decode to the same
layout (the divider's n_t above floor(c_t / I_min) all give the same islands, several
u_t give the same count).  :class:`Tracker` therefore evaluates each distinct layout
once per search and answers repeats from a cache, counting both.  It also records the
convergence history (one :class:`HistoryPoint` per proposal, with wall time and
best-so-far) that the thesis plots in Figs. 5.5-5.12, and restores all of this from a
checkpoint so that a resumed search never re-runs a finished evaluation.

Two hooks make a search resumable one evaluation at a time: ``after_each`` runs after
every live evaluation (the searches save their checkpoint there, so a SIGKILL loses at
most the evaluation in flight), and ``restore(..., replay_after=n)`` keeps the saved
points after the first ``n`` aside and hands them back, in order, to the search as it
re-walks a deterministic phase (the warm start and polish after the BO loop) -- so
that phase resumes without re-running the objective and with the history, counters and
best of an uninterrupted run.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable

from planner.core.errors import PlannerError
from planner.core.execution import Executor
from planner.outer.protocol import (
    HistoryPoint,
    Layout,
    LayoutObjective,
    Progress,
    Score,
    SearchResult,
    SearchSpace,
    layout_text,
)

EMPTY_SCORE = Score(value=0.0, cost_per_hour=0.0, feasible=False)


def check_seed(seed: int) -> int:
    """Seeds feed NumPy, SciPy's Sobol and torch: a non-negative integer."""
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise PlannerError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _tally(points: Iterable[HistoryPoint]) -> tuple[int, int]:
    """(objective calls, cache hits) the points cost when :meth:`Tracker.evaluate` made
    them: a new non-empty layout is a call, a repeat a hit, the empty layout neither."""
    calls = hits = 0
    for h in points:
        hits += h.cached
        calls += not h.cached and bool(h.layout)
    return calls, hits


class Tracker:
    def __init__(self, space: SearchSpace, objective: LayoutObjective, *,
                 planned: int, progress: Progress | None = None) -> None:
        self.space = space
        self.objective = objective
        self.planned = planned
        self.progress = progress
        self.cache: dict[Layout, Score] = {}
        self.history: list[HistoryPoint] = []
        self._encoded: list[dict] = []  # history[i].to_dict(), kept for state()
        self.evaluations = 0
        self.cache_hits = 0
        self.detail_refreshes = 0
        self.best_layout: Layout | None = None
        self.best_score: Score | None = None
        self.resumed = False
        self._restored: set[Layout] = set()  # scores from a checkpoint: no ``detail``
        self._pending: deque[HistoryPoint] = deque()  # saved points to replay (restore)
        self.after_each: Callable[[], None] | None = None
        self._prefetched: dict[Layout, Score] = {}  # scored on workers, not yet asked for
        self._offset = 0.0
        self._t0 = time.perf_counter()

    # ---------------------------------------------------------------- state
    @property
    def wall_time(self) -> float:
        return self._offset + time.perf_counter() - self._t0

    def state(self) -> dict:
        """What :meth:`restore` needs, JSON-ready."""
        # Points still waiting to be replayed are saved too: an interruption during a
        # replay must not shorten the checkpoint.
        pending = list(self._pending)
        calls, hits = _tally(pending)
        return {"wall_time": self.wall_time,
                "history": self._history_dicts() + [h.to_dict() for h in pending],
                "evaluations": self.evaluations + calls, "cache_hits": self.cache_hits + hits}

    def _history_dicts(self) -> list[dict]:
        """The history as dicts; each point is converted once (a search saves its
        checkpoint after every evaluation)."""
        for h in self.history[len(self._encoded):]:
            self._encoded.append(h.to_dict())
        return self._encoded

    def restore(self, state: dict, *, replay_after: int | None = None) -> None:
        """Rebuild cache, best, counters and history from :meth:`state` (the scores
        lose ``detail``).  With ``replay_after=n`` only the first ``n`` points are
        history now; the rest wait for :meth:`evaluate` to ask for their layouts again
        (module docstring)."""
        self.resumed = True
        self._offset = float(state["wall_time"])
        self._t0 = time.perf_counter()
        self.evaluations = int(state["evaluations"])
        self.cache_hits = int(state["cache_hits"])
        points = [HistoryPoint.from_dict(d) for d in state["history"]]
        n = len(points) if replay_after is None else replay_after
        for h in points[:n]:
            self._admit(h)
        self._pending = deque(points[n:])
        calls, hits = _tally(self._pending)  # counted again as they are replayed
        self.evaluations -= calls
        self.cache_hits -= hits

    def _admit(self, h: HistoryPoint) -> None:
        self.history.append(h)
        if h.layout not in self.cache:
            self._restored.add(h.layout)
            self.cache[h.layout] = Score(h.value, h.cost, h.feasible)
        self._consider(h.layout, self.cache[h.layout])

    # ---------------------------------------------------------------- evaluate
    def evaluate(self, layout: Layout, phase: str) -> Score:
        if self._pending:
            return self._replay(layout)
        cached = layout in self.cache
        if cached:
            score = self.cache[layout]
            self.cache_hits += 1
        elif not layout:
            score = EMPTY_SCORE  # nothing to run: no GPU procured
        else:
            score = self._call(layout)
            self.evaluations += 1
        self.cache[layout] = score
        self._consider(layout, score)
        self.history.append(HistoryPoint(
            index=len(self.history), wall_time=self.wall_time, layout=layout,
            value=score.value, cost=score.cost_per_hour, feasible=score.feasible,
            best=self.space.merit(self.best_score), cached=cached, phase=phase))
        if self.progress is not None:
            self.progress(len(self.history), self.planned, self.history[-1].best)
        if self.after_each is not None:
            self.after_each()
        return score

    def _replay(self, layout: Layout) -> Score:
        h = self._pending.popleft()
        if h.layout != layout:
            raise PlannerError(
                f"checkpoint: evaluation {h.index} was saved for layout "
                f"{layout_text(h.layout)!r} but the resumed search asks for "
                f"{layout_text(layout)!r}; it was written by another planner version "
                "-- delete it to start afresh")
        calls, hits = _tally([h])
        self.evaluations += calls
        self.cache_hits += hits
        self._admit(h)
        if self.progress is not None:
            self.progress(len(self.history), self.planned, h.best)
        return self.cache[layout]

    def prefetch(self, layouts: Iterable[Layout], executor: Executor | None) -> None:
        """Score, side by side on ``executor``'s workers, the layouts of a batch that
        this search has not evaluated yet; :meth:`evaluate` then takes each score when
        the search asks for its layout, in the search's own order -- so history, cache,
        counters and checkpoints are a serial run's, and so is every later proposal
        (the objective is a pure function of the layout)."""
        if executor is None or executor.workers <= 1 or self._pending:
            return
        todo = list(dict.fromkeys(lay for lay in layouts if lay and lay not in self.cache
                                  and lay not in self._prefetched))
        if len(todo) > 1:
            self._prefetched.update(zip(todo, executor.map(self.objective, todo),
                                        strict=True))

    def _call(self, layout: Layout) -> Score:
        score = self._prefetched.pop(layout, None)
        if score is None:
            score = self.objective(layout)
        if not isinstance(score, Score):
            raise TypeError(f"layout objective returned {type(score).__name__}, not Score")
        if not math.isfinite(score.value):
            # A NaN would poison the surrogate; an infeasible 0 is what it means.
            score = Score(0.0, score.cost_per_hour, False, score.detail)
        return score

    def _consider(self, layout: Layout, score: Score) -> None:
        if not self.space.qualifies(score):
            return
        if self.best_score is None or (self.space.rank_key(score)
                                       > self.space.rank_key(self.best_score)):
            self.best_layout, self.best_score = layout, score

    # ---------------------------------------------------------------- finish
    def result(self, name: str, settings: dict) -> SearchResult:
        """The search's result; re-runs the best layout once if its inner result was
        lost in a checkpoint (``detail`` is opaque and not serialised)."""
        best = self.best_score
        if best is not None and self.best_layout in self._restored:
            fresh = self._call(self.best_layout)
            self.detail_refreshes += 1
            self.evaluations += 1
            best = Score(best.value, best.cost_per_hour, best.feasible, fresh.detail)
            self.best_score = self.cache[self.best_layout] = best
            self._restored.discard(self.best_layout)
        return SearchResult(name=name, best_layout=self.best_layout, best_score=best,
                            history=list(self.history), settings=dict(settings),
                            evaluations=self.evaluations, cache_hits=self.cache_hits,
                            wall_time=self.wall_time, resumed=self.resumed,
                            detail_refreshes=self.detail_refreshes)

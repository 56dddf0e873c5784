"""Bayesian-optimisation outer searches of seed 002 §4.9: divider and direct.

Both run the same loop (§4.9.1 "Implementation"):

1. **Warm start**: ``sobol_trials`` valid points from a seeded scrambled Sobol sequence
   mapped into the encoding's space (:meth:`~planner.outer.encodings.DividerEncoding.
   sample`), evaluated and attached to the Ax experiment.  Drawing them ourselves
   rather than with Ax's Sobol node keeps the direct encoding's warm start valid (a
   Sobol box point almost never satisfies sum_k x_{t,k} <= I_t when K = 16, so Ax's
   rejection sampler stalls) and gives random search the very same first points.
2. **Iterations**: ``iterations`` batches of ``batch_size`` = q candidates, each batch
   one fit of the surrogate on all data so far and one joint qLogNEI optimisation
   (:mod:`planner.outer.ax_backend`); every candidate is decoded to a layout and
   evaluated by the inner loop, at most once per distinct layout.
3. **Objective**: maximise R_total (the thesis minimises rho_max = 1 / R_total, the
   same optimum).  With ``target_rps``: minimise $/h subject to R_total >= target, as
   an Ax outcome constraint (qLogNEI weighs improvement by the modelled probability of
   meeting it), which keeps cost and throughput as separate, smooth models instead of
   one penalised objective with a cliff at the target.

Two additions to the thesis's loop, on by default and off for its reproduction
(``warm_start=False, polish=0``):

* **LP warm start**: when the objective can give per-island range tables (the analytic
  :class:`planner.context.evaluate.LayoutEvaluator`, or the simulated objective's analytic
  evaluator), the exact MILP restricted to the columns its LP relaxation uses and their
  neighbours (:meth:`planner.outer.exact.ExactSearch.relaxed_layout`) is evaluated too
  -- a near-optimal incumbent for a few seconds of HiGHS;
* **polish**: the last ``polish`` evaluations refine the best layout found by local
  moves (:mod:`planner.outer.polish`) that the divider's two parameters per type cannot
  express.

Every evaluation and every new batch ends with a checkpoint (Ax's JSON snapshot plus
the history; ~4 ms) when a path is given, so even a SIGKILL loses at most the
evaluation in flight; an interruption (Ctrl-C included) saves what has been evaluated
and re-raises; a later call with the same path resumes -- trials already evaluated are
not re-run, a batch cut short is finished, the remaining batches are generated exactly
as an uninterrupted run would have generated them, and a warm start or polish cut
short replays its saved evaluations and goes on.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import warnings
from pathlib import Path
from typing import Any

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError
from planner.core.execution import Executor
from planner.outer.checkpoint import load_checkpoint, save_checkpoint
from planner.outer.encodings import DirectEncoding, DividerEncoding, Encoding, Params
from planner.outer.exact import ExactSearch
from planner.outer.polish import polish
from planner.outer.protocol import (
    BLACK_BOX,
    ITERATIVE,
    Layout,
    LayoutObjective,
    Progress,
    Score,
    SearchResult,
    SearchSpace,
)
from planner.outer.tracking import Tracker, check_seed


class _BayesianSearch:
    name = "bo"
    capabilities = frozenset({BLACK_BOX, ITERATIVE})

    _bo: dict[str, Any]  # BOSettings keywords

    def __init__(self, *, iterations: int, batch_size: int, sobol_trials: int | None,
                 min_island: int | None, surrogate: str, num_restarts: int,
                 raw_samples: int, maxiter: int, mc_samples: int, sequential: bool,
                 saas_warmup: int, saas_samples: int, saas_thinning: int,
                 torch_threads: int | None, warm_start: bool = True,
                 polish: int = 0) -> None:
        if iterations < 0:
            raise PlannerError(f"{self.name}: iterations must be >= 0")
        if batch_size < 1:
            raise PlannerError(f"{self.name}: batch_size must be >= 1")
        if sobol_trials is not None and sobol_trials < 1:
            raise PlannerError(f"{self.name}: sobol_trials must be >= 1")
        if surrogate not in ("gp", "saasbo"):
            raise PlannerError(f"{self.name}: surrogate must be 'gp' or 'saasbo', "
                               f"got {surrogate!r}")
        if surrogate == "saasbo" and importlib.util.find_spec("numpyro") is None:
            raise PlannerError(f"{self.name}: surrogate 'saasbo' needs numpyro (and jax), "
                               "which BoTorch uses to fit it: pip install numpyro")
        if polish < 0:
            raise PlannerError(f"{self.name}: polish must be >= 0")
        self.warm_start = bool(warm_start)
        self.polish = int(polish)
        self.iterations = int(iterations)
        self.batch_size = int(batch_size)
        self.sobol_trials = int(sobol_trials) if sobol_trials is not None else self.batch_size
        self.min_island = min_island
        self._bo = dict(surrogate=surrogate, num_restarts=num_restarts,
                        raw_samples=raw_samples, maxiter=maxiter, mc_samples=mc_samples,
                        sequential=sequential, saas_warmup=saas_warmup,
                        saas_samples=saas_samples, saas_thinning=saas_thinning,
                        torch_threads=torch_threads)

    # ------------------------------------------------------------ per encoding
    def encoding(self, space: SearchSpace) -> Encoding:
        raise NotImplementedError

    def settings(self) -> dict[str, Any]:
        bo = dict(self._bo)
        if bo["surrogate"] != "saasbo":
            for k in ("saas_warmup", "saas_samples", "saas_thinning"):
                del bo[k]
        return {"iterations": self.iterations, "batch_size": self.batch_size,
                "sobol_trials": self.sobol_trials, "min_island": self.min_island,
                "warm_start": self.warm_start, "polish": self.polish, **bo}

    # ------------------------------------------------------------ the loop
    def search(self, space: SearchSpace, objective: LayoutObjective, *, seed: int,
               progress: Progress | None = None, checkpoint: Path | None = None,
               executor: Executor | None = None) -> SearchResult:
        seed = check_seed(seed)
        enc = self.encoding(space)
        settings = {**self.settings(), **enc.settings()}
        fingerprint = {"search": self.name, "settings": settings, "space": space.to_dict(),
                       "seed": int(seed)}
        planned = self.sobol_trials + self.iterations * self.batch_size + self.polish
        tracker = Tracker(space, objective, planned=planned, progress=progress)
        doc = load_checkpoint(checkpoint, fingerprint=fingerprint) if checkpoint else None
        batches, loop_end = (0, None) if doc is None else _resume_point(doc, checkpoint)
        if doc is not None:
            tracker.restore(doc["tracker"], replay_after=loop_end)

        if not enc.params:  # a single-point space: nothing to search
            if not tracker.history:
                tracker.evaluate(enc.decode({}), "fixed")
            return tracker.result(self.name, settings)

        with warnings.catch_warnings():  # Ax 1.3.1 warns about its own moved modules
            warnings.simplefilter("ignore")
            from planner.outer.ax_backend import AxDriver, BOSettings, quiet

        bo = BOSettings(**self._bo)
        with quiet(bo.torch_threads):
            if doc is not None:
                exact = {h.index: Score(h.value, h.cost, h.feasible)
                         for h in tracker.history[:loop_end]}
                try:
                    driver = AxDriver.from_snapshot(doc["state"]["ax"], space, bo, seed,
                                                    exact)
                except PlannerError as err:
                    raise PlannerError(f"{checkpoint}: {err}") from None
            else:
                driver = AxDriver.new(enc, space, bo, seed)

            done: dict[int, Score] = {}  # evaluated, not yet reported to Ax
            # Ax's last snapshot as JSON text and the batch count that goes with it.
            # Taking one costs ~0.7 s, so it is retaken only when Ax's data changed,
            # and never after the loop (the warm start and polish do not touch Ax).
            snap: dict[str, Any] = {
                "ax": json.dumps(doc["state"]["ax"] if doc else driver.snapshot()),
                "batches": batches, "trials": driver.n_trials()}
            frozen = False

            def save(flush: bool = True) -> None:
                """After every evaluation (the tracker's ``after_each``, no flush) and
                at batch boundaries: a SIGKILL loses at most the evaluation in flight.
                Ax hears of scores and is snapshotted only at batch boundaries (per
                evaluation it made the search 5x slower), so an evaluation saved in
                between is in the history only; a resumed run regenerates the same
                trials after the snapshot (a batch is a pure function of data, seed
                and batch index) and takes their scores from the history (``run``)."""
                if flush and not frozen:
                    changed = bool(done) or driver.n_trials() != snap["trials"]
                    driver.complete(done)
                    done.clear()
                    if changed:
                        snap.update(ax=json.dumps(driver.snapshot()), batches=batches,
                                    trials=driver.n_trials())
                if checkpoint is not None:
                    save_checkpoint(checkpoint, fingerprint=fingerprint,
                                    tracker=tracker.state(),
                                    state={"batches": snap["batches"], "loop_end": loop_end},
                                    encoded={"ax": snap["ax"]})

            def run(index: int, params: dict, phase: str) -> None:
                if index < len(tracker.history):  # evaluated before an interruption
                    h = tracker.history[index]
                    if h.layout != enc.decode(params):
                        raise PlannerError(f"{checkpoint}: checkpoint field 'tracker."
                                           f"history[{index}].layout' does not match "
                                           f"Ax trial {index}; the file is corrupt")
                    done[index] = Score(h.value, h.cost, h.feasible)
                    return
                done[index] = tracker.evaluate(enc.decode(params), phase)

            tracker.after_each = lambda: save(flush=False)
            try:
                for index, params in driver.running().items():  # cut short last time
                    run(index, params, "sobol" if index < self.sobol_trials else "bo")
                save()
                warm: list[Params] | Layout  # Sobol points here, the LP layout below
                warm = enc.sample(self.sobol_trials, seed=seed, quasi=True)
                tracker.prefetch((enc.decode(p) for p in warm[driver.n_trials():]), executor)
                for j in range(driver.n_trials(), self.sobol_trials):
                    run(driver.attach(warm[j]), warm[j], "sobol")
                save()
                while batches < self.iterations:
                    phase = "bo"
                    try:
                        trials = driver.next_batch(self.batch_size, batches)
                    except Exception:
                        # A numerical failure of the surrogate or the acquisition
                        # optimiser (rare: e.g. a singular GP fit) should cost one batch
                        # of random proposals, not the whole planning run.
                        phase = "fallback"
                        trials = {driver.attach(p): p for p in enc.sample(
                            self.batch_size, seed=seed * 7919 + batches, quasi=False)}
                    batches += 1
                    tracker.prefetch((enc.decode(p) for p in trials.values()), executor)
                    for index, params in trials.items():
                        run(index, params, phase)
                    save()
                if loop_end is None:
                    loop_end = len(tracker.history)
                    save()
                frozen = True
                # The warm start is evaluated after the BO batches, not before, so that
                # history index and Ax trial index stay one (what a resumed checkpoint
                # relies on); the surrogate does not see it either way (it is not a
                # point of the encoding).  Both it and the polish are deterministic
                # given the loop's history, so a resumed run replays their saved
                # evaluations (Tracker.restore's replay_after).
                warm = _warm_layout(space, objective) if self.warm_start else ()
                if warm:
                    tracker.evaluate(warm, "warm")
                if self.polish:
                    start = tracker.best_layout or warm
                    if start:
                        polish(tracker, start, space, self.polish)
            except BaseException:
                with contextlib.suppress(Exception):  # keep the original error
                    save()
                raise
            finally:
                tracker.after_each = None
        return tracker.result(self.name, settings)


def _resume_point(doc: dict, path: Path | None) -> tuple[int, int | None]:
    """The saved batch count and the history length at the end of the BO loop (None:
    the run stopped inside it), checked like the tracker (planner.outer.checkpoint)."""
    state = doc["state"]
    if not isinstance(state, dict) or not isinstance(state.get("ax"), dict):
        raise PlannerError(f"{path}: checkpoint field 'state.ax' must be an object")
    n_history = len(doc["tracker"]["history"])
    batches = check_number(state.get("batches"), at(f"{path}: checkpoint field "
                                                    "'state.batches'"), integer=True, ge=0)
    loop_end = state.get("loop_end")
    if loop_end is not None:
        loop_end = check_number(loop_end, at(f"{path}: checkpoint field 'state.loop_end'"),
                                integer=True, ge=0, le=n_history)
    return batches, loop_end


def _warm_layout(space: SearchSpace, objective: LayoutObjective) -> Layout:
    """The LP warm start's layout (module docstring), or () when the objective has no
    range tables to build it from; an objective with a ``warm_start(space)`` method
    gives its own."""
    offered = getattr(objective, "warm_start", None)
    if callable(offered):  # an objective that knows its own warm start (a fleet's)
        return tuple(offered(space))
    ev = getattr(objective, "analytic", objective)
    if not hasattr(ev, "range_tables") or not hasattr(ev, "context"):
        return ()

    try:
        return ExactSearch().relaxed_layout(space, ev)
    except PlannerError:
        return ()


class DividerBO(_BayesianSearch):
    """§4.9.2: (n_t, s_t) per type (+ u_t when procuring), SingleTaskGP + qLogNEI."""

    name = "divider"

    def __init__(self, iterations: int = 10, batch_size: int = 16,
                 sobol_trials: int | None = None, skew_range: float = 5.0,
                 min_island: int | None = 2, max_islands_per_type: int | None = None, *,
                 num_restarts: int = 4, raw_samples: int = 128, maxiter: int = 50,
                 mc_samples: int = 64, sequential: bool = False,
                 torch_threads: int | None = 1, warm_start: bool = True,
                 polish: int = 63) -> None:
        """Defaults: 16 Sobol + 10 x 16 BO + 1 warm start + 63 polish = 240
        evaluations; the thesis's setting is ``iterations=15, warm_start=False,
        polish=0``."""
        super().__init__(iterations=iterations, batch_size=batch_size,
                         sobol_trials=sobol_trials, min_island=min_island, surrogate="gp",
                         num_restarts=num_restarts, raw_samples=raw_samples,
                         maxiter=maxiter, mc_samples=mc_samples, sequential=sequential,
                         saas_warmup=0, saas_samples=0, saas_thinning=1,
                         torch_threads=torch_threads, warm_start=warm_start, polish=polish)
        self.skew_range = skew_range
        self.max_islands_per_type = max_islands_per_type

    def encoding(self, space: SearchSpace) -> DividerEncoding:
        return DividerEncoding(space, skew_range=self.skew_range, min_island=self.min_island,
                               max_islands_per_type=self.max_islands_per_type)


class DirectBO(_BayesianSearch):
    """§4.9.1: K integer slots per type with sum constraints; GP or SAASBO surrogate."""

    name = "direct"

    def __init__(self, slots: int = 16, surrogate: str = "gp", iterations: int = 10,
                 batch_size: int = 8, sobol_trials: int | None = None,
                 min_island: int | None = 2, *, num_restarts: int = 4,
                 raw_samples: int = 128, maxiter: int = 50, mc_samples: int = 64,
                 sequential: bool = True, saas_warmup: int = 256, saas_samples: int = 128,
                 saas_thinning: int = 16, torch_threads: int | None = 1) -> None:
        super().__init__(iterations=iterations, batch_size=batch_size,
                         sobol_trials=sobol_trials, min_island=min_island,
                         surrogate=surrogate, num_restarts=num_restarts,
                         raw_samples=raw_samples, maxiter=maxiter, mc_samples=mc_samples,
                         sequential=sequential, saas_warmup=saas_warmup,
                         saas_samples=saas_samples, saas_thinning=saas_thinning,
                         torch_threads=torch_threads)
        self.slots = slots

    def encoding(self, space: SearchSpace) -> DirectEncoding:
        return DirectEncoding(space, slots=self.slots, min_island=self.min_island)


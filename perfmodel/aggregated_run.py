"""A benchmark client's finite run against one aggregated island, played out pass by pass.

The aggregated operating point (:mod:`perfmodel.aggregated`) is a steady state: ``B``
sequences always decoding, prompts arriving as fast as answers finish.  A published
throughput figure is often not that.  An offline benchmark (vLLM
``benchmark_throughput``, an MLPerf Offline run, ``bench serve`` with every prompt sent
at once) or a closed-loop one that states its ``--num-prompts`` reports *all* the run's
tokens over its *whole* wall time, and a finite run has two phases the steady state
omits:

* **the start**: every slot is empty and the first ``B`` prompts are prefilled before
  anything decodes -- in passes of the whole token budget, cheaper per token than the
  steady state's trickle of one prompt per pass;
* **the drain**: once the last prompt is admitted, the batch empties one finished answer
  at a time, and a decode step of a handful of sequences costs nearly what a step of
  ``B`` costs (the weights are read either way).  With lengths that vary, the longest
  answers of the last admitted prompts run for hundreds of steps almost alone.

The start raises the measured rate a little, the drain lowers it, and the drain
dominates as soon as output lengths vary.  This module plays the run out on the model's own pass
times (:func:`perfmodel.aggregated.pass_seconds`), the engine's scheduling reduced to
the rules the steady state already assumes:

* a group runs at most ``slots`` sequences: the steady point's batch (the KV cache at its
  mean context, the engine's caps, the client's concurrency and ``num_prompts / dp``);
* when slots are free and prompts wait, the engine admits as many as fit and prefills
  them in ``ceil(m s / room)`` passes of equal size, ``room`` the token budget left after
  the running decodes (engines that mix: vLLM, TensorRT-LLM) or the whole budget (SGLang,
  whose prefill pass is followed by the decode step it delayed: ``mixed_prefill``); the
  running sequences advance one step per such pass;
* between admissions the group takes decode-only passes at its current batch, and a
  sequence leaves after ``o / yield - 1`` of them (its first token came from the
  prefill);
* a closed-loop client with at least ``slots`` requests per group in flight keeps every
  freed slot filled at once, as an offline run's queue does, so both read the same way.

Requests are dealt to the instance's attention groups in turn; every group is played out
alone and the run ends with the slowest.  Omitted, each on the optimistic side: a
lockstep of attention-DP groups (the fullest sets the pass), preemption of sequences
whose KV outgrows the cache (the slots are sized at the mean context), and the host's
own time between requests.

**Output lengths** (:class:`OutputLaw`): a random-dataset row that asks for fixed lengths
runs them fixed; a client that draws them uniformly (SemiAnalysis's ``sa-bench``:
``[0.8 L, L]``; ``sglang.bench_serving`` without ``--random-range-ratio``: ``[1, L]``)
draws them so; a ShareGPT row takes an assumed law
(:data:`perfmodel.validation_finite.SHAREGPT`); a row on an MLPerf dataset with a
length shape takes a gamma law of the shape's spread.  The draw is seeded
(:data:`SEED`) and scaled to the posed mean, which is the run's own realised mean.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from perfmodel.aggregated import pass_seconds
from perfmodel.calibration import Calibration
from perfmodel.hardware import GPU
from perfmodel.models import ModelSpec

#: Seed of every output-length draw (the same run each time).
SEED = 20261206
#: Points of the geometric grids a pass with prompts is tabulated on: prompt tokens, and
#: running decodes (the decode-only pass is tabulated at every batch).
_GRID_POINTS = 16


@dataclass(frozen=True)
class OutputLaw:
    """How a client's output lengths spread about their mean: ``fixed``; ``uniform`` on
    ``[ratio L, L]`` (``L`` set by the mean); ``gamma`` with coefficient of variation
    ``cv``, at most ``cap`` tokens (0: no cap)."""

    kind: str = "fixed"
    ratio: float = 1.0
    cv: float = 0.0
    cap: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("fixed", "uniform", "gamma"):
            raise ValueError(f"unknown output law {self.kind!r}")
        if not 0.0 <= self.ratio <= 1.0 or self.cv < 0.0 or self.cap < 0:
            raise ValueError("an output law needs 0 <= ratio <= 1, cv >= 0, cap >= 0")

    def draw(self, mean: float, n: int, seed: int = SEED) -> np.ndarray:
        """``n`` output lengths (whole tokens, at least 1) whose mean is ``mean``."""
        rng = np.random.default_rng(seed)
        if self.kind == "fixed" or n < 1:
            x = np.full(int(n), float(mean))
        elif self.kind == "uniform":
            x = rng.uniform(self.ratio, 1.0, int(n))
        else:
            k = 1.0 / max(self.cv, 1e-6) ** 2
            x = rng.gamma(k, 1.0 / k, int(n))
        x = x * (float(mean) / max(float(x.mean()), 1e-12)) if n else x
        if self.cap:  # truncate, then restore the mean on what is left below the cap
            for _ in range(8):
                x = np.minimum(x, self.cap)
                short = float(mean) * len(x) - float(x.sum())
                below = x < self.cap
                if short <= 1e-9 or not below.any():
                    break
                x[below] *= 1.0 + short / float(x[below].sum())
        return np.maximum(np.round(x), 1.0).astype(np.int64)


FIXED = OutputLaw()


@dataclass(frozen=True)
class FiniteRun:
    requests: int
    output_tokens: int
    wall_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.wall_s

    @property
    def output_tokens_per_s(self) -> float:
        return self.output_tokens / self.wall_s


@dataclass(frozen=True)
class PassTable:
    """One attention group's pass times: ``decode_s[n]`` a decode-only pass of ``n``
    sequences (n = 0 .. slots), ``mixed_s[i, j]`` a pass of ``batch_grid[i]`` decodes
    that also prefills ``prompt_grid[j]`` prompt tokens (by the engine's mixing rule),
    read between grid points by bilinear interpolation."""

    decode_s: np.ndarray
    batch_grid: np.ndarray
    prompt_grid: np.ndarray
    mixed_s: np.ndarray
    budget: float  # prompt tokens a pass may carry (inf: no budget)
    mixes: bool  # decodes share the budget with the prompt tokens

    @property
    def slots(self) -> int:
        return len(self.decode_s) - 1

    def prefill_s(self, running: int, tokens: float) -> tuple[float, int]:
        """Seconds and passes to prefill ``tokens`` prompt tokens beside ``running``
        decodes: equal passes of at most the room the budget leaves."""
        room = max(self.budget - (running if self.mixes else 0), 1.0)
        passes = max(math.ceil(tokens / room - 1e-9), 1)
        q = tokens / passes
        i = int(np.searchsorted(self.batch_grid, running))
        if i < len(self.batch_grid) and self.batch_grid[i] == running:
            one = float(np.interp(q, self.prompt_grid, self.mixed_s[i]))
        else:
            lo, hi = self.batch_grid[i - 1], self.batch_grid[i]
            w = (running - lo) / (hi - lo)
            one = ((1.0 - w) * float(np.interp(q, self.prompt_grid, self.mixed_s[i - 1]))
                   + w * float(np.interp(q, self.prompt_grid, self.mixed_s[i])))
        return passes * one, passes


def geometric_grid(top: float, points: int = _GRID_POINTS, start: float = 1.0
                   ) -> np.ndarray:
    """Whole numbers from ``start`` to ``top``, geometrically spaced, both ends in."""
    top = max(float(top), start + 1.0)
    return np.unique(np.round(np.geomspace(start, top, points)))


def island_table(gpu: GPU, model: ModelSpec, tp: int, dp: int, ep: int, s: float,
                 context: float, calib: Calibration, slots: int,
                 hit_rate: float = 0.0) -> PassTable:
    """The :class:`PassTable` of one attention group of an island running at most
    ``slots`` sequences at mean ``context``, prompts of ``s`` tokens."""
    prof = calib.profile
    budget = float(prof.prefill_token_budget or np.inf)
    most = budget if np.isfinite(budget) else slots * max(s * (1.0 - hit_rate), 1.0)
    n = np.arange(int(slots) + 1, dtype=float)
    rows = np.concatenate([[0.0], geometric_grid(slots)])
    grid = geometric_grid(most)
    args = (s, context, tp, dp, ep, hit_rate, calib)
    return PassTable(pass_seconds(gpu, model, n, 0.0, *args), rows, grid,
                     pass_seconds(gpu, model, rows[:, None], grid[None, :], *args), budget,
                     bool(prof.mixed_prefill))


def play(table: PassTable, outputs: np.ndarray, prompt_tokens: float,
         tokens_per_step: float = 1.0) -> float:
    """Wall seconds of one group's run of ``outputs`` (one request each, admitted in
    order) on ``table`` (module docstring for the rules)."""
    slots = table.slots
    if slots < 1:
        raise ValueError("a run needs at least one slot")
    steps = np.maximum(np.asarray(outputs, float) / tokens_per_step - 1.0, 0.0)
    n, nxt = len(steps), 0
    leaving: list[float] = []  # decode-step count at which each running sequence leaves
    done_at = 0.0  # steps the running batch has taken
    wall = 0.0
    while nxt < n or leaving:
        free = slots - len(leaving)
        if free > 0 and nxt < n:
            m = min(free, n - nxt)
            seconds, passes = table.prefill_s(len(leaving), m * prompt_tokens)
            wall += seconds
            done_at += passes
            for k in range(nxt, nxt + m):
                heapq.heappush(leaving, done_at + steps[k])
            nxt += m
        if not leaving:
            continue
        first = leaving[0]
        if first > done_at:
            wall += (first - done_at) * float(table.decode_s[len(leaving)])
            done_at = first
        while leaving and leaving[0] <= done_at + 1e-9:
            heapq.heappop(leaving)
    return wall


def finite_run(table: PassTable, outputs: np.ndarray, groups: int, prompt_tokens: float,
               tokens_per_step: float = 1.0) -> FiniteRun:
    """The whole run: ``outputs`` dealt to ``groups`` attention groups in turn, each
    played out alone (:func:`play`); the run lasts as long as its slowest group."""
    outputs = np.asarray(outputs)
    if groups < 1 or outputs.size < 1:
        raise ValueError("a run needs a group and a request")
    walls: dict[bytes, float] = {}  # equal groups (fixed lengths) are played once
    for g in range(min(groups, outputs.size)):
        mine = outputs[g::groups]
        key = mine.tobytes()
        if key not in walls:
            walls[key] = play(table, mine, prompt_tokens, tokens_per_step)
    return FiniteRun(int(outputs.size), int(outputs.sum()), max(walls.values()))


__all__ = ["FIXED", "SEED", "FiniteRun", "OutputLaw", "PassTable", "finite_run",
           "geometric_grid", "island_table", "play"]

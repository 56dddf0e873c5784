"""Ax 1.x + BoTorch plumbing for the Bayesian outer searches (seed 002 §4.9).

What this module decides, and why:

* **State and storage through Ax.**  The experiment (search space, linear constraints,
  every trial with its parameters and observed data) lives in an
  ``ax.api.client.Client``; checkpoints are its JSON snapshot, so a resumed search sees
  exactly the data it had.  The generation strategy is *not* stored: it is stateless
  here (one Bayesian node; the warm start is attached by the caller) and is rebuilt
  from the search's settings, which the checkpoint fingerprint pins.
* **One model fit per batch.**  ``Client.get_next_trials(q)`` makes q one-arm trials
  by q separate generations, i.e. q GP fits and q acquisition optimisations per batch.
  We instead ask the generation strategy for one generator run of q arms — a joint
  q-batch of qLogNEI, the batch BO the thesis describes — and attach each arm as its
  own trial.  Measured on the default divider search this is what makes q = 16 x 15
  iterations affordable (see ``docs/outer.md``).
* **Integers by continuous relaxation.**  Ax 1.x keeps integer range parameters
  discrete and optimises the acquisition with a mixed alternating optimiser, several
  times slower here.  We use Ax's own ``Cont_X_trans`` transforms instead: integers are
  relaxed to floats for the GP and the optimiser and rounded back (randomised rounding
  that respects the linear constraints when there are any) — the behaviour of the Ax
  versions the thesis used.  Trials still carry integer values.
* **Acquisition cost.**  qLogNoisyExpectedImprovement with a seeded Sobol QMC sampler
  of ``mc_samples`` base samples (BoTorch defaults to 512) and explicit restarts, raw
  samples and L-BFGS iterations; all are settings of the search.
* **Quiet, deterministic, single-threaded.**  Ax's loggers and BoTorch's warnings are
  silenced for the duration of a search; each batch is generated under a seed derived
  from the search seed and the batch index; torch runs on ``torch_threads`` threads
  (default 1: the GPs here are a few hundred points, too small to gain from threads,
  and on a shared 2-core machine two spinning OpenMP threads were measured 4-6x slower
  than one).
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import torch
from ax.adapter.registry import Cont_X_trans, Generators, Y_trans
from ax.api.client import Client
from ax.api.configs import RangeParameterConfig
from ax.core.data import Data
from ax.generation_strategy.generation_strategy import GenerationNode, GenerationStrategy
from ax.generation_strategy.generator_spec import GeneratorSpec
from ax.generators.torch.botorch_modular.surrogate import ModelConfig, SurrogateSpec
from ax.utils.common.random import with_rng_seed
from botorch.acquisition.logei import qLogNoisyExpectedImprovement
from botorch.models import SingleTaskGP
from botorch.models.fully_bayesian import SaasFullyBayesianSingleTaskGP
from botorch.sampling import SobolQMCNormalSampler

from planner.core.errors import PlannerError
from planner.outer.encodings import Encoding
from planner.outer.protocol import Score, SearchSpace

VALUE_METRIC = "rps"
COST_METRIC = "cost"
SURROGATES = ("gp", "saasbo")


@dataclass(frozen=True)
class BOSettings:
    """Knobs of the Bayesian step (surrogate, acquisition optimiser, SAAS MCMC)."""

    surrogate: str = "gp"  # "gp": SingleTaskGP | "saasbo": SaasFullyBayesianSingleTaskGP
    num_restarts: int = 4
    raw_samples: int = 128
    maxiter: int = 50
    mc_samples: int = 64
    sequential: bool = False  # greedy sequential q-batch instead of joint
    # Hit-and-run sampling of acquisition start points inside the linear constraints
    # (direct encoding); BoTorch's 10000 burn-in steps took 75% of a batch's time.
    polytope_burnin: int = 200
    polytope_thinning: int = 4
    saas_warmup: int = 256
    saas_samples: int = 128
    saas_thinning: int = 16
    torch_threads: int | None = 1


@contextlib.contextmanager
def quiet(torch_threads: int | None) -> Iterator[None]:
    """Silence Ax's loggers and BoTorch/GPyTorch warnings; pin torch's thread count."""
    root = logging.getLogger("ax")
    loggers = [root] + [logging.getLogger(n) for n in list(logging.Logger.manager.loggerDict)
                        if n.startswith("ax.")]
    saved = [(lg, lg.level) for lg in loggers]
    saved_handlers = [(h, h.level) for h in root.handlers]
    propagate = root.propagate
    threads = torch.get_num_threads()
    try:
        # Loggers Ax creates later still reach its root: stop there, so that an
        # application's own root handler does not print Ax's INFO lines either.
        root.propagate = False
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        for h in root.handlers:
            h.setLevel(logging.ERROR)
        if torch_threads:
            torch.set_num_threads(torch_threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in saved:
            lg.setLevel(level)
        for h, level in saved_handlers:
            h.setLevel(level)
        root.propagate = propagate
        torch.set_num_threads(threads)


def generation_strategy(bo: BOSettings, seed: int) -> GenerationStrategy:
    """One Bayesian node: the chosen surrogate + qLogNEI, continuous relaxation."""
    if bo.surrogate == "gp":
        config = ModelConfig(botorch_model_class=SingleTaskGP, name="SingleTaskGP")
    elif bo.surrogate == "saasbo":
        config = ModelConfig(
            botorch_model_class=SaasFullyBayesianSingleTaskGP,
            mll_options={"warmup_steps": bo.saas_warmup, "num_samples": bo.saas_samples,
                         "thinning": bo.saas_thinning, "disable_progbar": True,
                         "seed": seed},
            name="SAASBO")
    else:
        raise ValueError(f"surrogate must be one of {SURROGATES}, got {bo.surrogate!r}")
    sampler = SobolQMCNormalSampler(sample_shape=torch.Size([bo.mc_samples]), seed=seed)
    spec = GeneratorSpec(
        generator_enum=Generators.BOTORCH_MODULAR,
        generator_kwargs={
            "surrogate_spec": SurrogateSpec(model_configs=[config]),
            "botorch_acqf_class": qLogNoisyExpectedImprovement,
            "botorch_acqf_options": {"sampler": sampler},
            "transforms": Cont_X_trans + Y_trans,
        },
        generator_gen_kwargs={"model_gen_options": {"optimizer_kwargs": {
            "num_restarts": bo.num_restarts, "raw_samples": bo.raw_samples,
            "sequential": bo.sequential,
            "options": {"maxiter": bo.maxiter, "batch_limit": bo.num_restarts,
                        "n_burnin": bo.polytope_burnin,
                        "n_thinning": bo.polytope_thinning}}}},
    )
    node = GenerationNode(name="BO", generator_specs=[spec], should_deduplicate=True)
    return GenerationStrategy(name=f"BO:{config.name}", nodes=[node])


class _Client(Client):
    """The public Client plus joint q-batch generation (see the module docstring)."""

    def gen_batch(self, strategy: GenerationStrategy, q: int) -> list[dict]:
        grs = strategy.gen(experiment=self._experiment, n=q, num_trials=1)
        return [dict(arm.parameters) for gr in grs[0] for arm in gr.arms]

    def complete_many(self, results: dict[int, dict[str, float]],
                      mark: bool = True) -> None:
        """Attach the data of several trials at once (and mark them completed).

        ``Client.complete_trial`` rebuilds the experiment's data table per call (O(n)
        each, ~30 ms per trial at n = 100 here); one attach per batch avoids that.
        Data attached again for a trial replaces the old values.
        """
        if not results:
            return
        exp = self._experiment
        data = []
        for index, raw in results.items():
            # BaseTrial has no .arm; the driver only makes one-arm Trials, whose arm is set
            trial = cast(Any, exp.trials[index])
            data.append(trial._raw_evaluations_to_data(
                raw_data={trial.arm.name: [(math.nan, raw)]}))
        exp.attach_data(Data.from_multiple_data(data))
        if mark:
            for index in results:
                exp.trials[index].mark_completed()

    def running(self) -> dict[int, dict]:
        """Trials generated but never completed (an interrupted batch)."""
        return {i: dict(cast(Any, t).arm.parameters)  # one-arm Trials (complete_many)
                for i, t in self._experiment.trials.items() if not t.status.is_terminal}

    def values(self, metric: str) -> dict[int, float]:
        """Observed ``metric`` of every trial that has data."""
        df = self._experiment.lookup_data().df
        df = df[df["metric_name"] == metric]
        return {int(i): float(m) for i, m in zip(df["trial_index"], df["mean"], strict=True)}

    def n_trials(self) -> int:
        return len(self._experiment.trials)

    def snapshot(self) -> dict:
        return self._to_json_snapshot()


class AxDriver:
    """The Ax experiment of one search: attach, generate, complete, snapshot."""

    def __init__(self, client: _Client, bo: BOSettings, space: SearchSpace,
                 seed: int) -> None:
        self.client = client
        self.bo = bo
        self.space = space
        self.seed = seed

    @classmethod
    def new(cls, encoding: Encoding, space: SearchSpace, bo: BOSettings,
            seed: int) -> AxDriver:
        client = _Client()
        client.configure_experiment(
            parameters=[RangeParameterConfig(name=p.name, bounds=(p.lower, p.upper),
                                             parameter_type="int" if p.is_int else "float")
                        for p in encoding.params],
            parameter_constraints=[c.to_ax() for c in encoding.constraints],
            name=f"outer-{encoding.name}")
        if space.target_rps is None:
            client.configure_optimization(objective=VALUE_METRIC)
        else:
            client.configure_optimization(
                objective=f"-{COST_METRIC}",
                outcome_constraints=[f"{VALUE_METRIC} >= {float(space.target_rps)!r}"])
        return cls(client, bo, space, seed)

    @classmethod
    def from_snapshot(cls, snapshot: dict, space: SearchSpace, bo: BOSettings, seed: int,
                      exact: dict[int, Score]) -> AxDriver:
        """Restore a saved experiment.  ``exact``: the scores of its completed trials.

        Ax stores observed data through ``DataFrame.to_json``, which keeps 10 decimals
        and parses back approximately (errors ~1e-11 measured); that is enough to send
        the next GP fit elsewhere.  Re-attaching the exact values, which the search's
        own history keeps with full precision, makes a resumed run continue exactly
        like an uninterrupted one.
        """
        try:
            client = _Client._from_json_snapshot(snapshot=snapshot)
        except PlannerError:
            raise
        except Exception as err:  # Ax reads its own JSON: any defect is the file's
            raise PlannerError(f"checkpoint field 'state.ax' is not an Ax snapshot "
                               f"({type(err).__name__}: {str(err)[:120]}); the file is "
                               "corrupt: delete it to start over") from None
        driver = cls(client, bo, space, seed)
        saved = driver.client.values(VALUE_METRIC)
        for i, v in saved.items():
            if i not in exact or abs(v - exact[i].value) > 1e-6 * max(1.0, abs(v)):
                raise PlannerError(f"checkpoint: Ax trial {i} does not match the saved "
                                   "history (field 'state.ax'); the file is corrupt")
        driver.client.complete_many(driver._raw({i: exact[i] for i in saved}), mark=False)
        return driver

    def attach(self, params: dict) -> int:
        return self.client.attach_trial(parameters=params)

    def complete(self, scores: dict[int, Score]) -> None:
        """Report the scores of evaluated trials (one data attach for all of them)."""
        self.client.complete_many(self._raw(scores))

    def _raw(self, scores: dict[int, Score]) -> dict[int, dict[str, float]]:
        results = {}
        for index, score in scores.items():
            results[index] = {VALUE_METRIC: float(score.value)}
            if self.space.target_rps is not None:
                results[index][COST_METRIC] = float(score.cost_per_hour)
        return results

    def next_batch(self, q: int, batch: int) -> dict[int, dict]:
        """Generate q candidates jointly and attach each as a trial.

        The generation strategy is rebuilt for every batch: Ax would otherwise
        warm-start each GP fit from the previous batch's hyperparameters, which a
        resumed search cannot reproduce.  A fresh strategy makes every batch a pure
        function of (data so far, seed, batch index), so a resumed run continues
        exactly as the uninterrupted one (measured: no cost in fit time here).
        """
        strategy = generation_strategy(self.bo, self.seed)
        with with_rng_seed(_batch_seed(self.seed, batch)):
            arms = self.client.gen_batch(strategy, q)
        return {self.attach(p): p for p in arms}

    def running(self) -> dict[int, dict]:
        return self.client.running()

    def n_trials(self) -> int:
        return self.client.n_trials()

    def snapshot(self) -> dict:
        return self.client.snapshot()


def _batch_seed(seed: int, batch: int) -> int:
    return (int(seed) * 1_000_003 + 7919 * (batch + 1)) % (2**31 - 1)

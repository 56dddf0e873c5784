"""The modelling choices of one perf-model evaluation: engine and serving options.

There is no fitted end-to-end constant any more.  Kernel times come from NVIDIA's
measured kernel database (``perfmodel.kernels``, fitted per GPU and engine by
``scripts/calibrate_kernels.py``); what separates a kernel sum from a served step is
modelled explicitly and applies to TTFT, TPOT and throughput alike:

* the engine profile (``perfmodel.engines``): unhidden host time per step, prefill
  token budget, micro-batch overlap of the expert all-to-all, the HBM it may use;
* expert load imbalance: the database's skewed-routing rows (power law, alpha 1.01; at
  EP32 they give the busiest rank 2.2x the mean, TRT-LLM measured 2.56x on DeepSeek-R1
  without load balancing).  Expert-parallel load balancing with redundant experts
  (``eplb``: "auto" turns it on beyond one 8-GPU node, as wide-EP deployments of all
  three engines do) leaves 0.07 of that excess (TRT-LLM: 1.56 -> 0.11, blog 4);
* stragglers across data-parallel attention groups (``perfmodel.decode``);
* multi-token prediction with acceptance rate ``mtp_acceptance`` (0 = off);
* FP8 attention for prefill when the KV cache is FP8 (``fp8_attention``).

Sources of each figure: ``docs/perfmodel.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import cached_property, lru_cache

import numpy as np

from perfmodel.engines import DEFAULT_ENGINE, EngineLimits, EngineProfile, get_engine
from perfmodel.errors import InputError

#: Share of the busiest rank's excess load left by redundant-expert load balancing
#: (TRT-LLM wide-EP, DeepSeek-R1 at EP32: (max - mean) / mean 1.564 -> 0.109).
EPLB_RESIDUAL = 0.109 / 1.564


@dataclass(frozen=True)
class Calibration:
    engine: str = DEFAULT_ENGINE
    mtp_acceptance: float = 0.0
    mtp_draft_tokens: int = 1
    fp8_attention: bool = False
    eplb: str = "auto"  # "auto" (beyond one node) | "on" | "off"
    micro_batch_overlap: bool | None = None  # None: the engine profile's choice
    prefill_token_budget: int | None = None  # None: the engine profile's (--max-tokens)
    max_running: int | None = None  # None: the engine profile's (--max-running)
    memory_fraction: float | None = None  # None: the engine profile's (--mem-fraction)
    #: Largest CUDA-graph decode batch a deployment captured (SGLang --cuda-graph-max-bs,
    #: TRT-LLM cuda_graph_config.max_batch_size); None: the engine profile's tiers.
    graph_max_batch: int | None = None
    #: Scale-out (RDMA) link efficiency for expert all-to-all beyond the scale-up domain
    #: (DeepEP: 40-47 GB/s of 50 per GPU).  The database measures one node only.
    scaleout_efficiency: float = 0.85
    #: "point": the model's own times; "p10": every time derated by the upper error of
    #: its class's held-out band (perfmodel.error_band), never below the point figure
    #: -- planning against the pessimistic bound (``planner plan --plan-at p10``).
    plan_at: str = "point"
    #: (prefill, decode) serving-stack factors replacing the shipped ones for a GPU priced
    #: from its vendor's priors (:mod:`perfmodel.serving_stack`; the fit sets them).
    serving_override: tuple[float, float] | None = None
    #: Whose serving stack is priced: "current" (today's releases) or "legacy" (releases
    #: before ``serving_stack.FIT_FROM``; the validation prices rows of such sources
    #: with it: :mod:`perfmodel.serving_stack`, "Earlier stacks").
    stack_era: str = "current"
    #: (prefill, decode) legacy-era factors replacing the shipped ones (the fit sets them).
    legacy_override: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        from perfmodel.serving_stack import ERAS

        if self.stack_era not in ERAS:
            raise InputError(f"stack era must be one of {', '.join(ERAS)}, "
                             f"got {self.stack_era!r}")

    @cached_property
    def profile(self) -> EngineProfile:
        """The engine's profile with this calibration's overrides (read in every perf-model
        call: built once per calibration, which is immutable)."""
        prof = get_engine(self.engine).with_limits(self.limits)
        if self.micro_batch_overlap is not None:
            prof = replace(prof, micro_batch_overlap=self.micro_batch_overlap)
        if self.graph_max_batch is not None:
            g = int(self.graph_max_batch)
            prof = replace(prof, graph_tiers=((float("inf"), g, g),))
        return prof

    @property
    def limits(self) -> EngineLimits:
        return EngineLimits(self.max_running, self.prefill_token_budget, self.memory_fraction)

    def with_limits(self, limits: EngineLimits) -> Calibration:
        """This calibration under a run's engine-limit overrides (None keeps ours)."""
        return replace(
            self, max_running=self.max_running if limits.max_running is None
            else limits.max_running,
            prefill_token_budget=self.prefill_token_budget if limits.max_tokens is None
            else limits.max_tokens,
            memory_fraction=self.memory_fraction if limits.mem_fraction is None
            else limits.mem_fraction)

    def time_factor(self, gpu, phase: str) -> float:
        """Multiplier on every time of ``phase`` on ``gpu`` (:attr:`plan_at`)."""
        if self.plan_at == "point":
            return 1.0
        return _derate(gpu.name, self.engine, phase, self.plan_at)

    def serving_factor(self, gpu, phase: str) -> float:
        """Multiplier on ``phase`` ("prefill" or "decode") times on ``gpu`` for what its
        vendor's serving stack adds to kernel priors (:mod:`perfmodel.serving_stack`;
        1 for GPUs priced from measured kernels), times the legacy era's factor when
        :attr:`stack_era` is "legacy"."""
        from perfmodel.serving_stack import Factors, factors_for, priced_from_priors

        if self.serving_override is not None:
            today = Factors(*self.serving_override).of(phase) if priced_from_priors(gpu) \
                else 1.0
        else:
            today = factors_for(gpu, self.engine).of(phase)
        return today if self.stack_era == "current" else today * self._legacy(gpu, phase)

    def _legacy(self, gpu, phase: str) -> float:
        """The legacy era's factor on ``phase`` (:mod:`perfmodel.serving_stack`)."""
        from perfmodel.launch import gpu_vendor
        from perfmodel.serving_stack import Factors, legacy_factors_for

        if self.legacy_override is not None:
            return Factors(*self.legacy_override).of(phase)
        return legacy_factors_for(gpu_vendor(gpu), self.engine).of(phase)

    def eplb_residual(self, ep):
        """Share of the routing skew's excess that remains at expert parallelism ``ep``."""
        ep = np.asarray(ep, float)
        on = {"on": ep > 1, "off": ep < 0, "auto": ep > 8}[self.eplb]
        return np.where(on, EPLB_RESIDUAL, 1.0)

    def key(self) -> tuple:
        return tuple(asdict(self).values())


PLAN_AT = ("point", "p10")


@lru_cache(maxsize=256)
def _derate(gpu: str, engine: str, phase: str, plan_at: str) -> float:
    """``1 + hi_error`` of the class's band as deployed (a prefill or decode island's
    includes whole disaggregated systems: ``perfmodel.error_band.deployed_band``), at
    least 1 (a pessimistic bound never promises more than the point prediction)."""
    from perfmodel.error_band import deployed_band

    if plan_at not in PLAN_AT:
        raise InputError(f"--plan-at must be one of {', '.join(PLAN_AT)}, got {plan_at!r}")
    return max(1.0, 1.0 + deployed_band(gpu, engine, phase).hi_error)


DEFAULT_CALIBRATION = Calibration()

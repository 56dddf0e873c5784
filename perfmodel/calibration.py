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

import numpy as np

from perfmodel.engines import DEFAULT_ENGINE, EngineProfile, get_engine

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
    prefill_token_budget: int | None = None  # None: the engine profile's
    #: Scale-out (RDMA) link efficiency for expert all-to-all beyond the scale-up domain
    #: (DeepEP: 40-47 GB/s of 50 per GPU).  The database measures one node only.
    scaleout_efficiency: float = 0.85

    @property
    def profile(self) -> EngineProfile:
        prof = get_engine(self.engine)
        if self.micro_batch_overlap is not None or self.prefill_token_budget is not None:
            prof = replace(prof, micro_batch_overlap=(
                prof.micro_batch_overlap if self.micro_batch_overlap is None
                else self.micro_batch_overlap), prefill_token_budget=(
                prof.prefill_token_budget if self.prefill_token_budget is None
                else self.prefill_token_budget))
        return prof

    def eplb_residual(self, ep):
        """Share of the routing skew's excess that remains at expert parallelism ``ep``."""
        ep = np.asarray(ep, float)
        on = {"on": ep > 1, "off": ep < 0, "auto": ep > 8}[self.eplb]
        return np.where(on, EPLB_RESIDUAL, 1.0)

    @property
    def runtime_reserve_fraction(self) -> float:
        return 1.0 - self.profile.memory_fraction

    def key(self) -> tuple:
        return tuple(asdict(self).values())


DEFAULT_CALIBRATION = Calibration()

"""Seed 001 (Sun, He, Hou 2026): chain-structured serving with large memory footprints.

Modules, each citing the section it implements:

* :mod:`servers` — servers, model, eqs. (3), (8), (9), footnote 11;
* :mod:`placement` — placements, feasible links ``ℰ_{a,m}``, chains and eq. (2);
* :mod:`gbp_cr` — Alg. 1 (block placement with cache reservation);
* :mod:`gca` — Alg. 2 (greedy cache allocation, corrected link removal);
* :mod:`jffc` — Alg. 3 (routing policy) and a seeded discrete-event simulator;
* :mod:`bounds` — Theorem 3.7 bounds, eqs. (28)–(32);
* :mod:`ctmc` — numerical JFFC CTMC (eq. 23), exact geometric tail;
* :mod:`two_chain` — exact ``K = 2`` analysis, eqs. (46)–(53);
* :mod:`ilp` — conditionally optimal capacities on fixed chains (§4.1.2);
* :mod:`tuning` — choice of ``c`` (eq. 14, §3.2.3);
* :mod:`solver` — the whole pipeline as one inner solver returning a :class:`ChainPlan`.
"""

from planner.inner.chains.servers import ChainModel, Server, footnote11_block_time
from planner.inner.chains.solver import (
    ChainHop,
    ChainPlan,
    PlannedChain,
    plan_chains,
    predict_response_time,
)

__all__ = [
    "ChainHop",
    "ChainModel",
    "ChainPlan",
    "PlannedChain",
    "Server",
    "footnote11_block_time",
    "plan_chains",
    "predict_response_time",
]

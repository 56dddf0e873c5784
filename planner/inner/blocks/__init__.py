"""Seed 000 (Sun, He, Ji, Parag, PEVA 2025): block placement and request routing.

Model blocks (layers) are placed on heterogeneous servers as contiguous runs; each
request follows a chain of servers that covers the model in order; GPU memory holds
the blocks and the per-session KV caches.  Modules:

* :mod:`.servers` / :mod:`.instance` — inputs and the per-link cost model (eqs. 1, 4, 8);
* :mod:`.routing` — Lemma 3.1 feasible chains, DAG shortest paths, capacity fill;
* :mod:`.cg_bprr` — Algorithm 1 (CG-BPRR) and CG-BP;
* :mod:`.online` — Algorithm 2 (CG-BP + WS-RR), eq. (20), the request-level simulator;
* :mod:`.bounds` — (17), (18), (19), (22), Lemma B.1;
* :mod:`.milp` — the exact MILP (13); :mod:`.bruteforce` — its tiny-instance oracle;
* :mod:`.petals` — the PETALS baseline;
* :mod:`.solver` / :mod:`.plan` — :func:`solve_blocks` -> :class:`PipelinePlan`.
"""

from planner.inner.blocks.instance import Instance, build_instance
from planner.inner.blocks.plan import Hop, Pipeline, PipelinePlan, ServerBlocks
from planner.inner.blocks.servers import BlockModel, Client, NetworkDescription, Server
from planner.inner.blocks.solver import Load, solve_blocks, solve_instance

__all__ = [
    "BlockModel",
    "Client",
    "Hop",
    "Instance",
    "Load",
    "NetworkDescription",
    "Pipeline",
    "PipelinePlan",
    "Server",
    "ServerBlocks",
    "build_instance",
    "solve_blocks",
    "solve_instance",
]

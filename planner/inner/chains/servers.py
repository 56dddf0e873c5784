"""Servers and model description for the chain solver (seed 001, §2.1, Table 2, eqs. 3, 8, 9).

A :class:`Server` is anything that can host a contiguous range of model blocks and keep
KV-cache slots for them: a physical GPU, a MIG slice, or a whole GPU island that the
lead maps in from the perf model.  Units are the caller's choice but must agree:

* ``memory`` (``M_j``) is in the same unit as :attr:`ChainModel.block_memory` (``s_m``)
  and :attr:`ChainModel.cache_slot_memory` (``s_c``), e.g. GB.
* ``comm_time`` (``τ^c_j``) and ``block_time`` (``τ^p_j``) are *per job* totals over
  all tokens of a request, in one time unit; arrival rates are then in jobs per that
  unit and every rate the package reports (``μ_k``, ``ν``) is in the same unit.

Footnote 11 of the paper derives ``τ^p_j`` from per-token prefill/decode times,
``τ^p_j = t_o + t^I_j l̄_in + t^O_j (l̄_out − 1)``; :meth:`Server.from_token_times` and
:func:`footnote11_block_time` implement it so per-block prefill/decode times from a perf
model can be plugged in directly.

Floors in eqs. (3) and (8) are taken with a small tolerance (reading-guide note iv):
``(2 − 1)/0.1`` is 9.999… in binary floating point and must count as 10 slots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner.core.errors import PlannerError

_FLOOR_TOL = 1e-9


def safe_floor(x: float) -> int:
    """``⌊x⌋`` robust to binary round-off just below an integer (e.g. 9.999999999 -> 10)."""
    if math.isinf(x):
        raise ValueError("safe_floor of an infinite value")
    return math.floor(x + _FLOOR_TOL * max(1.0, abs(x)))


@dataclass(frozen=True)
class Server:
    """One server ``j``: memory ``M_j``, communication time ``τ^c_j``, per-block time ``τ^p_j``.

    ``block_time`` is the mean computation time of one block for one whole job (all its
    prefill and decode tokens); ``comm_time`` is the job's total communication time at
    this server (PETALS-style relay, §2.1.1; for direct links use ``max_i τ^c_ij``,
    footnote 4).
    """

    id: str
    memory: float
    comm_time: float
    block_time: float
    max_sessions: int | None = None  # our extension, see residual_slots

    @classmethod
    def from_token_times(
        cls,
        id: str,
        memory: float,
        comm_time: float,
        *,
        prefill_time_per_token: float,
        decode_time_per_token: float,
        mean_input_len: float,
        mean_output_len: float,
        block_overhead: float = 0.0,
        max_sessions: int | None = None,
    ) -> Server:
        """Build a server whose ``τ^p_j`` follows footnote 11 from per-block token times."""
        tau_p = block_overhead + prefill_time_per_token * mean_input_len + decode_time_per_token * (
            mean_output_len - 1.0
        )
        return cls(id=id, memory=memory, comm_time=comm_time, block_time=tau_p,
                   max_sessions=max_sessions)


def footnote11_block_time(
    *,
    tflops: float,
    bandwidth_gb_per_ms: float,
    gflops_per_block_token: float,
    block_memory_gb: float,
    mean_input_len: float,
    mean_output_len: float,
    overhead_ms: float = 1.0,
) -> float:
    """``τ^p_j`` in ms by footnote 11: prefill compute-bound, decode memory-bound.

    ``t^I_j ≈ F/f_j`` (GFLOP / TFLOPS = ms) and ``t^O_j ≈ s_m/b_j`` (GB / (GB/ms) = ms), so
    ``τ^p_j = t_o + (F/f_j) l̄_in + (s_m/b_j)(l̄_out − 1)``.
    """
    prefill = gflops_per_block_token / tflops
    decode = block_memory_gb / bandwidth_gb_per_ms
    return overhead_ms + prefill * mean_input_len + decode * (mean_output_len - 1.0)


@dataclass(frozen=True)
class ChainModel:
    """The served model: ``L`` identical blocks of size ``s_m``; one cache slot is ``s_c``.

    ``cache_slot_memory`` is the KV cache one job needs for one block at the maximum
    sequence length (static allocation, §2.1.2); a job on a chain holds one slot per
    block it has processed at each server.
    """

    n_blocks: int
    block_memory: float
    cache_slot_memory: float


def validate_inputs(servers: Sequence[Server], model: ChainModel, where: str = "chains") -> None:
    """Raise :class:`PlannerError` naming the offending field for any invalid input."""
    if isinstance(model.n_blocks, bool) or not isinstance(model.n_blocks, int):
        raise PlannerError(f"{where}: model.n_blocks must be an integer, got {model.n_blocks!r}")
    if model.n_blocks < 1:
        raise PlannerError(f"{where}: model.n_blocks must be >= 1, got {model.n_blocks}")
    for name in ("block_memory", "cache_slot_memory"):
        v = getattr(model, name)
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise PlannerError(f"{where}: model.{name} must be a positive number, got {v!r}")
    if not servers:
        raise PlannerError(f"{where}: servers must not be empty")
    seen: set[str] = set()
    for s in servers:
        if s.id in seen:
            raise PlannerError(f"{where}: duplicate server id {s.id!r}")
        seen.add(s.id)
        for name in ("memory", "comm_time", "block_time"):
            v = getattr(s, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0):
                raise PlannerError(
                    f"{where}: server {s.id!r} field {name} must be a finite number >= 0, got {v!r}"
                )
        if s.block_time == 0 and s.comm_time == 0:
            raise PlannerError(
                f"{where}: server {s.id!r} has comm_time = block_time = 0 (infinite speed)"
            )


def blocks_per_server(server: Server, model: ChainModel, c: int) -> int:
    """Eq. (8): ``m_j(c) = min(⌊M_j/(s_m + s_c c)⌋, L)``, blocks placeable with ``c`` slots each."""
    return min(safe_floor(server.memory / (model.block_memory + model.cache_slot_memory * c)),
               model.n_blocks)


def server_time(server: Server, n_blocks: int) -> float:
    """Eq. (9): ``t_j = τ^c_j + τ^p_j m`` for a job processing ``m`` blocks at ``j``."""
    return server.comm_time + server.block_time * n_blocks


def residual_slots(server: Server, model: ChainModel, n_hosted: int) -> int:
    """Eq. (3): ``M̃_j = ⌊(M_j − s_m m_j)/s_c⌋`` cache slots left after hosting ``m_j`` blocks.

    With ``server.max_sessions`` (our extension for GPU islands, whose per-token time
    holds only up to the batch they are sized for) at most ``max_sessions · m_j``.
    """
    free = server.memory - model.block_memory * n_hosted
    if free < 0:
        raise ValueError(f"server {server.id!r} cannot host {n_hosted} blocks")
    slots = safe_floor(free / model.cache_slot_memory)
    if server.max_sessions is not None:
        slots = min(slots, server.max_sessions * n_hosted)
    return slots


def max_capacity(servers: Sequence[Server], model: ChainModel) -> int:
    """``c_max = ⌊(max_j M_j − s_m)/s_c⌋`` (§3.1.3): most jobs any server can hold on one block."""
    best = max(s.memory for s in servers)
    if best < model.block_memory:
        return 0
    return safe_floor((best - model.block_memory) / model.cache_slot_memory)

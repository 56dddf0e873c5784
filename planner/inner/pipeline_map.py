"""Map GPU islands to the *servers* of the pipeline solvers (seeds 000 and 001).

Seeds 000 (Sun et al., PEVA 2025, §2.2) and 001 (Sun, He, Hou, §2.1) see the model as
``L`` identical blocks (its layers) placed in contiguous runs on servers; a request
follows a chain of servers that covers the model in order.  Here a server is one whole
island of ``size`` GPUs of one type, and its parameters come from the perf model:

* memory ``M_j`` = ``IslandTiming.usable_bytes · size`` (the island's usable
  HBM, runtime reserve taken out);
* block bytes ``s_m`` = ``total_params · weight_bytes / L`` -- *approximation*: every
  layer is charged the same share of the weights, experts and embeddings included
  (DeepSeek's three dense layers are lighter than its MoE layers; the seeds' model has
  identical blocks, so the average is what they can represent);
* cache slot ``s_c`` = KV bytes per token per layer × (input quantile + ``decode_max``):
  both seeds reserve cache for the maximum lengths (seed 000 §2.1 footnote 1, seed 001
  §2.1.2); the input maximum is the workload's 99th percentile (``input_quantile``),
  since the literal maximum of a heavy-tailed pmf would reserve for a rare request;
* per-block prefill ``τ^I_j`` = ``prefill_time(mean input) / L`` and per-block decode
  ``τ_j`` = ``step_time(b_j, mean context) / L`` (the perf model's step times, so that
  a pipeline of one whole-model island and the MILP price that island alike).  Both
  use the island's
  parallel configuration, the valid ``(tp, dp, ep)`` with the highest colocated
  throughput (:func:`island_config`), as each MILP island picks its best configuration;
* **contention** -- the seeds assume per-token time does not depend on the number of
  concurrent sessions while memory suffices (seed 000 §2.2, seed 001 §2.1).  Taken
  literally on a GPU island, that credits an island with room for thousands of KV
  caches with thousands of sessions each at single-batch speed (the first mapping gave
  capacities 5-50x the MILP's).  The mapping therefore gives each island the decode
  batch it would really run, ``b_j`` = ``dp · b_g`` (:func:`operating_point`: at most
  the thesis batch rule (§4.6.2) applied to the sessions its free memory holds beside
  the blocks it is sized for, and no more than it takes to reach 90 % of that batch's
  throughput), charges ``τ_j`` at that batch, and caps the server's sessions at ``b_j`` (cache slots
  ``≤ b_j m_j``, the ``max_sessions`` extension of both seeds' servers).  Sessions are
  then as fast as they are in a full batch -- the seeds' no-contention assumption holds
  *at the batch the island is sized for*.  Prefill contends too: an attention group
  prefills one prompt at a time and its running sessions wait meanwhile (Orca-style
  colocation), so in steady state a session's lifetime is ``d t_step + b_g t_pre``
  with ``b_g = ⌈b_j/dp⌉`` sessions per group (Little's law: the group prefills ``b_g``
  prompts during one lifetime).  ``τ^I_j`` is therefore ``b_g t_pre / L``; the seeds'
  formulas then give the colocated island's true throughput ``dp / (t_pre + d
  t_step / b_g)``, and their "TTFT" includes the wait for the group's other prefills;
* communication: a data-centre network (default 50 GB/s, 10 µs RTT between any two
  islands and the client, no serialisation overhead); ``network`` overrides it.

Pure computation: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from perfmodel import DEFAULT_CALIBRATION, GPU, Calibration, ModelSpec
from perfmodel.parallel import ParallelConfig, enumerate_configs
from perfmodel.timing import IslandTiming, thesis_batch_rule
from planner.fleet.network import NetworkSpec
from planner.inner.blocks import BlockModel, NetworkDescription
from planner.inner.blocks import Server as BlockServer
from planner.inner.chains import ChainModel
from planner.inner.chains import Server as ChainServer

#: Default data-centre network (bytes/s and seconds).
DEFAULT_BANDWIDTH_BYTES_S = 50e9
DEFAULT_RTT_S = 10e-6
DEFAULT_INPUT_QUANTILE = 0.99


@dataclass(frozen=True)
class DataCentreNetwork:
    """One bandwidth and RTT between any two endpoints (islands and the client)."""

    bandwidth_bytes_s: float = DEFAULT_BANDWIDTH_BYTES_S
    rtt_s: float = DEFAULT_RTT_S

    @classmethod
    def from_spec(cls, spec: NetworkSpec) -> DataCentreNetwork:
        """From an inventory's network (``planner.fleet.network``): pipeline hops go between
        islands, which a plan places on different nodes of one pod or across pods; we
        charge the pod tier (2) -- its latency and its bandwidth net of background."""
        tier = spec.tiers[2]
        return cls(tier.effective_bytes_s, tier.latency_s)

    def to_blocks(self) -> NetworkDescription:
        bps = 8.0 * self.bandwidth_bytes_s
        return NetworkDescription(local_rtt_s=self.rtt_s, remote_rtt_s=self.rtt_s,
                                  local_bandwidth_bps=bps, remote_bandwidth_bps=bps)


@dataclass(frozen=True)
class IslandServer:
    """Perf-model figures of one island seen as a pipeline server (seconds, bytes)."""

    name: str
    gpu: str
    size: int
    memory_bytes: float
    tau_prefill_s: float  # one block, whole prompt of the mean input length
    tau_decode_s: float  # one block, one decode token
    prefill_per_token_s: float  # one block, one prompt token
    tp: int
    ep: int
    batch: int = 0  # decode sessions the island runs at once (b_j)


@dataclass(frozen=True)
class PipelineWorkload:
    """Lengths the mapping needs: means (times) and the reserved maxima (memory)."""

    mean_input: float
    mean_output: float
    input_reserve: int
    output_reserve: int

    @classmethod
    def from_pmf(cls, pmf: np.ndarray, decode_mean: float, decode_max: int,
                 input_quantile: float = DEFAULT_INPUT_QUANTILE) -> PipelineWorkload:
        pmf = np.asarray(pmf, float) / float(np.sum(pmf))
        lengths = np.arange(len(pmf), dtype=float)
        cdf = np.cumsum(pmf)
        q = int(np.searchsorted(cdf, input_quantile - 1e-12))
        return cls(max(float(pmf @ lengths), 1.0), max(float(decode_mean), 1.0),
                   max(min(q, len(pmf) - 1), 1), max(int(decode_max), 1))


def island_config(size: int, model: ModelSpec, gpu: GPU | None = None,
                  wl: PipelineWorkload | None = None,
                  calib: Calibration = DEFAULT_CALIBRATION) -> tuple[int, int, int]:
    """``(tp, dp, ep)`` of the island seen as a pipeline server.

    With ``gpu`` and ``wl``: among the valid configurations (``perfmodel.parallel``)
    whose GPUs hold the whole model, if any, the one with the highest colocated
    throughput (:func:`operating_point`), the island's own choice as the MILP's islands
    choose theirs.  Without: the largest ``tp`` dividing ``size`` and the heads,
    ``ep = size``.
    """
    if gpu is None or wl is None:
        tp = max(d for d in range(1, size + 1) if size % d == 0 and model.heads % d == 0)
        return tp, size // tp, (size if model.is_moe else 1)
    best, best_key = None, (False, -1.0)
    for cfg in (enumerate_configs(size, model, calib.engine, gpu.gpus_per_domain)
                or enumerate_configs(size, model)):
        op = operating_point(gpu, model, wl, cfg.tp, cfg.dp, cfg.ep, calib)
        # A configuration whose GPUs hold every layer beats any that holds a part (the
        # rates of a partial one are not comparable: its sessions are sized for fewer
        # layers than the times count).
        key = (op.blocks == model.layers, op.throughput)
        if key > best_key:
            best, best_key = cfg, key
    chosen = cast(ParallelConfig, best)  # still None here only if no configuration qualified
    return chosen.tp, chosen.dp, chosen.ep


@dataclass(frozen=True)
class OperatingPoint:
    """A colocated island's sessions per attention group ``b_g``, the blocks they are
    sized for, the whole-model prefill time of a mean prompt and the step time at
    ``b_g`` (seconds), and the throughput
    ``dp / (t_pre + d̄ t_step(b_g) / b_g)`` (requests/s)."""

    group_batch: int
    blocks: int
    t_prefill: float
    t_step: float
    throughput: float


#: Fraction of the memory-limited batch's throughput the operating batch must reach.
BATCH_KNEE = 0.9


def operating_point(gpu: GPU, model: ModelSpec, wl: PipelineWorkload, tp: int, dp: int,
                    ep: int, calib: Calibration = DEFAULT_CALIBRATION) -> OperatingPoint:
    """Sessions per group: the smallest batch reaching :data:`BATCH_KNEE` of the
    throughput at the memory limit (module docstring, "contention").

    The memory limit is the thesis batch rule (§4.6.2) applied to the sessions that fit
    beside the blocks (all ``L`` if the GPUs hold the model's weights, otherwise the
    blocks filling half the memory).  A colocated island's throughput saturates at
    ``dp / t_pre`` as the batch grows while every session's lifetime grows with
    ``b_g t_pre`` (it waits for the group's other prefills); the knee keeps nearly all
    the throughput without the memory-sized batch's minutes-long lifetimes.
    """
    timing = IslandTiming(gpu, model, tp, dp, ep, calib)
    usable = timing.usable_bytes
    weights = float(timing.weight_bytes_per_gpu)
    frac = 1.0 if weights <= usable else 0.5 * usable / weights
    blocks = max(1, min(model.layers, int(frac * model.layers)))
    frac = blocks / model.layers
    kv = float(timing.kv_bytes_per_token_per_gpu) * frac * (
        wl.input_reserve + wl.output_reserve)
    limit = int(float(thesis_batch_rule(np.array([max(usable - frac * weights, 0.0) // kv]),
                                        timing.batch_cap)[0]))
    t_pre = float(np.asarray(timing.prefill_s(float(wl.mean_input))).ravel()[0])
    if limit < 1:
        return OperatingPoint(0, blocks, t_pre, math.inf, 0.0)
    b = np.arange(1, limit + 1, dtype=float)
    steps = np.asarray(timing.steps(b).step_time(wl.mean_input + 0.5 * wl.mean_output),
                       dtype=float).ravel()
    x = dp / (t_pre + wl.mean_output * steps / b)
    k = int(np.argmax(x >= BATCH_KNEE * x[-1]))
    return OperatingPoint(k + 1, blocks, t_pre, float(steps[k]), float(x[k]))


def island_batch(gpu: GPU, size: int, model: ModelSpec, wl: PipelineWorkload,
                 calib: Calibration = DEFAULT_CALIBRATION) -> tuple[int, int]:
    """``(b_j, m*_j)``: the island's decode sessions and the blocks they are sized for
    (module docstring, "contention")."""
    tp, dp, ep = island_config(size, model, gpu, wl, calib)
    op = operating_point(gpu, model, wl, tp, dp, ep, calib)
    return dp * op.group_batch, op.blocks


def island_server(name: str, gpu: GPU, size: int, model: ModelSpec, wl: PipelineWorkload,
                  *, batch: int | None = None,
                  calib: Calibration = DEFAULT_CALIBRATION) -> IslandServer:
    """The per-block figures of island ``size × gpu`` (module docstring).  ``batch``
    overrides the island's decode batch ``b_j`` (sessions over the whole island)."""
    tp, dp, ep = island_config(size, model, gpu, wl, calib)
    op = operating_point(gpu, model, wl, tp, dp, ep, calib)
    sessions = dp * op.group_batch if batch is None else int(batch)
    per_group = max(1.0, np.ceil(sessions / dp))
    t_step = op.t_step
    if batch is not None or not math.isfinite(t_step):
        t_step = float(np.asarray(IslandTiming(gpu, model, tp, dp, ep, calib).steps(per_group)
                                  .step_time(wl.mean_input + 0.5 * wl.mean_output)).ravel()[0])
    # each session also waits for its group's other prefills ("contention")
    t_pre = op.t_prefill * per_group
    L = model.layers
    usable = IslandTiming(gpu, model, tp, dp, ep, calib).usable_bytes
    return IslandServer(name, gpu.name, size, usable * size, t_pre / L,
                        t_step / L, t_pre / wl.mean_input / L, tp, ep, sessions)


def block_bytes(model: ModelSpec) -> float:
    """``s_m``: the weights spread evenly over the layers (documented approximation)."""
    return model.total_params * model.weight_bytes / model.layers


def blocks_model(model: ModelSpec, wl: PipelineWorkload) -> BlockModel:
    """Seed 000's :class:`BlockModel` (bytes; hidden state in bf16 on the wire).

    Seed 000 uses ``l^I_max, l_max`` both to reserve cache and to count the tokens a
    session generates; a plan's throughput needs the *mean* lengths for time and the
    reserved ones for memory.  The model therefore carries the mean lengths, and the
    per-token KV size is scaled so that ``s_c = kv · (l̄_in + l̄_out)`` equals the
    reserved ``kv · (input_reserve + output_reserve)``.
    """
    n_in, n_out = max(int(round(wl.mean_input)), 0), max(int(round(wl.mean_output)), 1)
    reserved = model.kv_bytes_per_token_layer * (wl.input_reserve + wl.output_reserve)
    return BlockModel(n_blocks=model.layers, block_bytes=block_bytes(model),
                      kv_bytes_per_token=reserved / (n_in + n_out),
                      input_len=n_in, output_len=n_out,
                      hidden_bytes_per_token=2.0 * model.hidden)


def blocks_server(s: IslandServer) -> BlockServer:
    return BlockServer(s.name, s.memory_bytes, s.tau_decode_s, s.tau_prefill_s,
                       max_sessions=s.batch)


def chains_model(model: ModelSpec, wl: PipelineWorkload) -> ChainModel:
    """Seed 001's :class:`ChainModel` in GB (its floors are unit-free)."""
    slot = model.kv_bytes_per_token_layer * (wl.input_reserve + wl.output_reserve)
    return ChainModel(model.layers, block_bytes(model) / 1e9, slot / 1e9)


def chains_comm_time(model: ModelSpec, wl: PipelineWorkload, net: DataCentreNetwork) -> float:
    """``τ^c_j`` per job (seconds): the prompt's hidden states once, then one hidden state
    per decode token, each transfer paying one RTT (PETALS-style relay, seed 001 §2.1.1)."""
    h = 2.0 * model.hidden
    transfers = 1.0 + max(wl.mean_output - 1.0, 0.0)
    data = h * (wl.mean_input + max(wl.mean_output - 1.0, 0.0))
    return transfers * net.rtt_s + data / net.bandwidth_bytes_s


def chains_server(s: IslandServer, model: ModelSpec, wl: PipelineWorkload,
                  net: DataCentreNetwork) -> ChainServer:
    """Footnote 11: ``τ^p_j = t^I l̄_in + t^O (l̄_out − 1)`` per block; memory in GB."""
    return ChainServer.from_token_times(
        s.name, s.memory_bytes / 1e9, chains_comm_time(model, wl, net),
        prefill_time_per_token=s.prefill_per_token_s, decode_time_per_token=s.tau_decode_s,
        mean_input_len=wl.mean_input, mean_output_len=wl.mean_output, max_sessions=s.batch)


def holds_model(s: IslandServer, model: ModelSpec) -> bool:
    """Whether the island alone holds every block (no room for caches implied)."""
    return s.memory_bytes >= block_bytes(model) * model.layers * (1 - 1e-12)


__all__ = [
    "DataCentreNetwork",
    "IslandServer",
    "PipelineWorkload",
    "block_bytes",
    "blocks_model",
    "blocks_server",
    "chains_comm_time",
    "chains_model",
    "chains_server",
    "holds_model",
    "island_batch",
    "island_config",
    "island_server",
]

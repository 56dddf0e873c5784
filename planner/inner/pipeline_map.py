"""Map GPU islands to the *servers* of the pipeline solvers (seeds 000 and 001).

Seeds 000 (Sun et al., PEVA 2025, §2.2) and 001 (Sun, He, Hou, §2.1) see the model as
``L`` identical blocks (its layers) placed in contiguous runs on servers; a request
follows a chain of servers that covers the model in order.  Here a server is one whole
island of ``size`` GPUs of one type, and its parameters come from the perf model:

* memory ``M_j`` = ``perfmodel.memory.usable_bytes(gpu) · size`` (the island's usable
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
  ``τ_j`` = ``step_time(representative batch, mean context) / L``.  Both use the island's
  tensor-parallel configuration (``tp`` = largest divisor of ``size`` that divides the
  attention heads, ``dp = size/tp``; MoE experts sharded over the whole island, ``ep =
  size``), one request per attention group.  The seeds assume no compute contention
  (per-token time does not depend on concurrency while memory suffices); using the step
  time at a representative batch (default 32) rather than batch 1 charges a realistic
  share of the batching cost to every session;
* communication: a data-centre network (default 50 GB/s, 10 µs RTT between any two
  islands and the client, no serialisation overhead); ``network`` overrides it.

Pure computation: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel import DEFAULT_CALIBRATION, GPU, Calibration, ModelSpec
from perfmodel.decode import step_model
from perfmodel.memory import usable_bytes
from perfmodel.prefill import prefill_time
from planner.inner.blocks import BlockModel, NetworkDescription
from planner.inner.blocks import Server as BlockServer
from planner.inner.chains import ChainModel
from planner.inner.chains import Server as ChainServer

#: Default data-centre network (bytes/s and seconds).
DEFAULT_BANDWIDTH_BYTES_S = 50e9
DEFAULT_RTT_S = 10e-6
DEFAULT_BATCH = 32
DEFAULT_INPUT_QUANTILE = 0.99


@dataclass(frozen=True)
class DataCentreNetwork:
    """One bandwidth and RTT between any two endpoints (islands and the client)."""

    bandwidth_bytes_s: float = DEFAULT_BANDWIDTH_BYTES_S
    rtt_s: float = DEFAULT_RTT_S

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


def island_config(size: int, model: ModelSpec) -> tuple[int, int, int]:
    """``(tp, dp, ep)`` used for the per-block times (see the module docstring)."""
    tp = max(d for d in range(1, size + 1) if size % d == 0 and model.heads % d == 0)
    return tp, size // tp, (size if model.is_moe else 1)


def island_server(name: str, gpu: GPU, size: int, model: ModelSpec, wl: PipelineWorkload,
                  *, batch: int = DEFAULT_BATCH,
                  calib: Calibration = DEFAULT_CALIBRATION) -> IslandServer:
    """The per-block figures of island ``size × gpu`` (module docstring)."""
    tp, dp, ep = island_config(size, model)
    t_pre = float(np.asarray(prefill_time(gpu, model, float(wl.mean_input), tp, dp, ep, 0.0,
                                          calib)).ravel()[0])
    context = wl.mean_input + 0.5 * wl.mean_output
    t_step = float(np.asarray(step_model(gpu, model, float(batch), tp, dp, ep, calib)
                              .step_time(context)).ravel()[0])
    L = model.layers
    return IslandServer(name, gpu.name, size, usable_bytes(gpu, calib) * size,
                        t_pre / L, t_step / L, t_pre / wl.mean_input / L, tp, ep)


def block_bytes(model: ModelSpec) -> float:
    """``s_m``: the weights spread evenly over the layers (documented approximation)."""
    return model.total_params * model.weight_bytes / model.layers


def blocks_model(model: ModelSpec, wl: PipelineWorkload) -> BlockModel:
    """Seed 000's :class:`BlockModel` (bytes; hidden state in bf16 on the wire)."""
    return BlockModel(n_blocks=model.layers, block_bytes=block_bytes(model),
                      kv_bytes_per_token=model.kv_bytes_per_token_layer,
                      input_len=int(wl.input_reserve), output_len=int(wl.output_reserve),
                      hidden_bytes_per_token=2.0 * model.hidden)


def blocks_server(s: IslandServer) -> BlockServer:
    return BlockServer(s.name, s.memory_bytes, s.tau_decode_s, s.tau_prefill_s)


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
        mean_input_len=wl.mean_input, mean_output_len=wl.mean_output)


def holds_model(s: IslandServer, model: ModelSpec) -> bool:
    """Whether the island alone holds every block (no room for caches implied)."""
    return s.memory_bytes >= block_bytes(model) * model.layers * (1 - 1e-12)


__all__ = [
    "DEFAULT_BATCH",
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
    "island_config",
    "island_server",
]

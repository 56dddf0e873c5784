"""Servers, clients, network and model description for seed 000 (Sun et al., PEVA 2025).

Notation follows the paper's Table 1 (as corrected in the reading guide
``seeds/notes/000-summary.md`` §1.1):

* a server ``j`` has an *effective* memory ``M_j`` (what is left for blocks and KV
  caches once the CUDA context, activations and a fragmentation margin are taken out,
  §2.2 "Remark"), a per-block decode time ``τ_j`` (one token through one block) and a
  per-block prefill time ``τ^I_j(l^I_max)`` (the whole prompt through one block);
* a client ``c`` reaches server ``j`` with a per-token round trip ``t_cj`` and a
  per-input round trip ``t^I_cj(l^I_max)`` (client-centric, hub-and-spoke
  communication, §2.2: the client sends the hidden state to every server of the chain
  and receives it back);
* the model has ``L`` identical blocks of ``s_m`` bytes; one session keeps
  ``s_c = kv_bytes_per_token · (l^I_max + l_max)`` bytes of attention cache per block it
  has processed (§2.2, ``s_c := 2 d_model (l^I_max + l_max) dtype_bytes`` for MHA).

A :class:`Server` is general enough for a whole GPU island: the lead fills memory and
per-block times from the perf model for that island, and a location that the
:class:`NetworkDescription` resolves to RTT and bandwidth.

Units: memory in bytes, times in seconds, bandwidth in bits/s.  The algorithms only
need the units to agree, so GB / ms also work if every field uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from perfmodel.errors import at, check_number
from planner.core.errors import PlannerError


def _positive(owner: str, name: str, value: float, *, allow_zero: bool = False) -> None:
    bound: dict[str, Any] = {"ge": 0} if allow_zero else {"gt": 0}
    check_number(value, at(f"{owner}: field {name}"), **bound)


@dataclass(frozen=True)
class Server:
    """One server ``j`` of seed 000 (§2.2, Table 1).

    ``memory_bytes`` is ``M_j`` (effective), ``tau_decode_s`` is ``τ_j`` and
    ``tau_prefill_s`` is ``τ^I_j(l^I_max)`` for the prompt length the plan is sized
    for.  ``location`` keys the network description (defaults to ``name``).
    ``max_blocks`` optionally caps ``m_j``: the authors' simulator caps MIG slices at 4
    blocks (reading guide §3.2, "[code]"); the paper itself has no cap.
    ``max_sessions`` optionally caps the sessions the server runs at once (its cache
    slots become ``min(⌊(M_j − s_m m_j)/s_c⌋, max_sessions · m_j)``): our extension for
    GPU islands, whose per-token time holds only up to the batch they are sized for
    (``planner.inner.pipeline_map``); the paper has no cap.
    """

    name: str
    memory_bytes: float
    tau_decode_s: float
    tau_prefill_s: float
    location: str | None = None
    max_blocks: int | None = None
    max_sessions: int | None = None

    def __post_init__(self) -> None:
        owner = f"blocks solver: server {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise PlannerError("blocks solver: server field name must be a non-empty string")
        _positive(owner, "memory_bytes", self.memory_bytes, allow_zero=True)
        _positive(owner, "tau_decode_s", self.tau_decode_s, allow_zero=True)
        _positive(owner, "tau_prefill_s", self.tau_prefill_s, allow_zero=True)
        if self.max_blocks is not None and (
            not isinstance(self.max_blocks, int) or self.max_blocks < 0
        ):
            raise PlannerError(f"{owner}: field max_blocks must be an integer >= 0")
        if self.max_sessions is not None and (
            not isinstance(self.max_sessions, int) or self.max_sessions < 0
        ):
            raise PlannerError(f"{owner}: field max_sessions must be an integer >= 0")

    @property
    def where(self) -> str:
        return self.location if self.location is not None else self.name


@dataclass(frozen=True)
class Client:
    """A client ``c`` (an end host or a proxy, §2.1); ``location`` keys the network."""

    name: str
    location: str | None = None

    @property
    def where(self) -> str:
        return self.location if self.location is not None else self.name


@dataclass(frozen=True)
class BlockModel:
    """The LLM as seen by seed 000: ``L`` blocks, ``s_m``, per-token KV size, lengths.

    ``kv_bytes_per_token`` is the attention cache one token occupies in one block
    (``2 · n_kv_heads · head_dim · dtype_bytes``; ``2 d_model dtype_bytes`` for MHA).
    ``input_len``/``output_len`` are ``l^I_max``/``l_max``: memory is reserved for the
    maxima (§2.1, footnote 1).  ``hidden_bytes_per_token`` (``d_model · dtype_bytes``)
    is what crosses the network per token; 0 ignores transmission time.
    ``hidden_size`` and ``num_kv_groups`` are only needed by the PETALS block-count rule.
    """

    n_blocks: int
    block_bytes: float
    kv_bytes_per_token: float
    input_len: int
    output_len: int
    hidden_bytes_per_token: float = 0.0
    hidden_size: int | None = None
    num_kv_groups: int = 1

    def __post_init__(self) -> None:
        owner = "blocks solver: model"
        if not isinstance(self.n_blocks, int) or self.n_blocks < 1:
            raise PlannerError(f"{owner}: field n_blocks must be an integer >= 1")
        _positive(owner, "block_bytes", self.block_bytes)
        _positive(owner, "kv_bytes_per_token", self.kv_bytes_per_token)
        for name in ("input_len", "output_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < (0 if name == "input_len" else 1):
                raise PlannerError(f"{owner}: field {name} must be a positive integer")
        _positive(owner, "hidden_bytes_per_token", self.hidden_bytes_per_token, allow_zero=True)
        if self.num_kv_groups < 1:
            raise PlannerError(f"{owner}: field num_kv_groups must be >= 1")

    @property
    def cache_bytes(self) -> float:
        """``s_c``: one session's cache in one block, sized for the maximum lengths."""
        return self.kv_bytes_per_token * (self.input_len + self.output_len)


@dataclass(frozen=True)
class NetworkDescription:
    """RTT and bandwidth between locations, with defaults (seed 000 Table 2).

    Lookups are symmetric: ``rtt_s[(a, b)]`` also answers ``(b, a)``.  Missing pairs
    fall back to ``local_*`` when both ends share a location and to ``remote_*``
    otherwise.  The defaults are the paper's emulated testbed (Table 2: 5 ms and
    1 Gbit/s inside a cluster, 100 ms and 100 Mbit/s across clusters); a data-centre
    inventory should override them.

    Per-token and per-input round trips (§2.2) are
    ``t_cj = rtt + token_overhead_s + 2 h / bw`` and
    ``t^I_cj = rtt + input_overhead_s + 2 l^I h / bw`` with ``h`` the hidden-state
    bytes per token (factor 2: the client sends the state and gets it back).  The
    overheads stand for (de)serialisation; the authors' simulator uses 100 ms and
    67 ms + 0.7049 ms per input token (reading guide §5.3), we default to 0.
    """

    rtt_s: Mapping[tuple[str, str], float] = field(default_factory=dict)
    bandwidth_bps: Mapping[tuple[str, str], float] = field(default_factory=dict)
    local_rtt_s: float = 0.005
    remote_rtt_s: float = 0.100
    local_bandwidth_bps: float = 1e9
    remote_bandwidth_bps: float = 1e8
    token_overhead_s: float = 0.0
    input_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        owner = "blocks solver: network"
        for name in ("local_rtt_s", "remote_rtt_s", "token_overhead_s", "input_overhead_s"):
            _positive(owner, name, getattr(self, name), allow_zero=True)
        for name in ("local_bandwidth_bps", "remote_bandwidth_bps"):
            _positive(owner, name, getattr(self, name))
        for (a, b), v in self.rtt_s.items():
            _positive(owner, f"rtt_s[{a!r}, {b!r}]", v, allow_zero=True)
        for (a, b), v in self.bandwidth_bps.items():
            _positive(owner, f"bandwidth_bps[{a!r}, {b!r}]", v)

    @staticmethod
    def _lookup(table: Mapping[tuple[str, str], float], a: str, b: str) -> float | None:
        if (a, b) in table:
            return float(table[(a, b)])
        if (b, a) in table:
            return float(table[(b, a)])
        return None

    def rtt(self, a: str, b: str) -> float:
        v = self._lookup(self.rtt_s, a, b)
        if v is not None:
            return v
        return self.local_rtt_s if a == b else self.remote_rtt_s

    def bandwidth(self, a: str, b: str) -> float:
        v = self._lookup(self.bandwidth_bps, a, b)
        if v is not None:
            return v
        return self.local_bandwidth_bps if a == b else self.remote_bandwidth_bps

    def token_rtt(self, a: str, b: str, hidden_bytes: float) -> float:
        """``t_cj``: one token's hidden state out and back, plus the fixed overhead."""
        return self.rtt(a, b) + self.token_overhead_s + 2 * 8 * hidden_bytes / self.bandwidth(a, b)

    def input_rtt(self, a: str, b: str, hidden_bytes: float, input_len: int) -> float:
        """``t^I_cj(l^I)``: the whole prompt's hidden states out and back."""
        transfer = 2 * 8 * hidden_bytes * input_len / self.bandwidth(a, b)
        return self.rtt(a, b) + self.input_overhead_s + transfer

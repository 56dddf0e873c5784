"""Array form of a seed-000 instance and its per-link cost model (§2.2, §3.1, eqs. 4, 8).

Every algorithm of the package works on an :class:`Instance`: numpy arrays over
servers ``j`` and clients ``c``.  It can be built from the dataclasses of
:mod:`.servers` (:func:`build_instance`) or directly from arrays (tests, the paper's
worked examples).

Per-link cost.  A request from client ``c`` that reaches server ``j`` after server
``i`` has ``j`` process ``k_ij = a_j + m_j − a_i − m_i`` blocks (Lemma 3.1).  The
paper optimises a per-token cost of the form ``comm_cj + tau_j · k_ij``:

* ``objective="decode"``: eq. (4), ``t_cj + τ_j k_ij`` — the paper's (6a)/(13a), which
  ignore the first token;
* ``objective="all_tokens"``: the all-token average, i.e. (7) divided by ``l_max``.
  As printed, (8) adds the block term on top of ``t^{c,I}_ij`` and ``t^c_ij`` that
  already contain it (double count, reading guide §2.1 and §7.5); we use the
  corrected form of (B.3) and of the authors' code:
  ``((t^I_cj + (l−1) t_cj) + (τ^I_j + (l−1) τ_j) k_ij) / l``.

Both have the same shape, so (13), (14), (17) and the algorithms apply unchanged with
``comm`` and ``tau`` replaced by the effective coefficients (the paper: "all our
results remain applicable when redefining t^c_ij as in (8)").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np

from planner.core.errors import PlannerError
from planner.inner.blocks.servers import BlockModel, Client, NetworkDescription, Server

Objective = Literal["decode", "all_tokens"]

_FLOOR_TOL = 1e-9


def safe_floor(x: np.ndarray | float) -> np.ndarray:
    """``⌊x⌋`` that forgives binary round-off just below an integer.

    ``(L+1) s_m / (s_m + s_c L^2)`` is exactly 1 in the Fig. 5 example but may come
    out as 0.999…; without the tolerance the conservative count of Alg. 1 line 1
    would wrongly drop to 0.
    """
    x = np.asarray(x, dtype=float)
    return np.floor(x + _FLOOR_TOL * np.maximum(1.0, np.abs(x)))


@dataclass(frozen=True)
class Instance:
    """Seed-000 problem data as arrays (shapes: ``S`` servers, ``C`` clients).

    ``memory``, ``tau``, ``tau_in``, ``max_blocks``: shape ``(S,)``.
    ``t_tok``, ``t_in``: ``(C, S)`` per-token / per-input RTTs.  ``requests``: ``(C,)``
    the ``|R_c|`` (offline) or the design split of ``|R|`` (online).
    ``rtt_cs`` ``(C, S)`` and ``rtt_ss`` ``(S, S)`` are raw network RTTs, used only by
    the PETALS routing heuristic (it weighs ``rtt/2`` per hop, §4.1).
    """

    memory: np.ndarray
    tau: np.ndarray
    tau_in: np.ndarray
    t_tok: np.ndarray
    t_in: np.ndarray
    n_blocks: int
    block_bytes: float
    cache_bytes: float
    input_len: int
    output_len: int
    requests: np.ndarray
    max_blocks: np.ndarray | None = None
    max_sessions: np.ndarray | None = None  # (S,) session cap per server; None: no cap
    objective: Objective = "all_tokens"
    server_names: tuple[str, ...] = ()
    client_names: tuple[str, ...] = ()
    rtt_cs: np.ndarray | None = None
    rtt_ss: np.ndarray | None = None

    def __post_init__(self) -> None:
        f = np.asarray
        object.__setattr__(self, "memory", f(self.memory, dtype=float).reshape(-1))
        n_s = self.memory.shape[0]
        for name in ("tau", "tau_in"):
            object.__setattr__(self, name, f(getattr(self, name), dtype=float).reshape(n_s))
        t_tok = np.atleast_2d(f(self.t_tok, dtype=float))
        n_c = t_tok.shape[0]
        object.__setattr__(self, "t_tok", t_tok.reshape(n_c, n_s))
        object.__setattr__(self, "t_in", np.atleast_2d(f(self.t_in, dtype=float)).reshape(n_c, n_s))
        object.__setattr__(self, "requests", f(self.requests, dtype=np.int64).reshape(n_c))
        cap = np.full(n_s, self.n_blocks) if self.max_blocks is None else f(self.max_blocks)
        object.__setattr__(self, "max_blocks", np.minimum(cap.astype(np.int64), self.n_blocks))
        if not self.server_names:
            object.__setattr__(self, "server_names", tuple(f"s{j}" for j in range(n_s)))
        if not self.client_names:
            object.__setattr__(self, "client_names", tuple(f"c{c}" for c in range(n_c)))
        if self.rtt_cs is None:
            object.__setattr__(self, "rtt_cs", self.t_tok.copy())
        if self.rtt_ss is None:
            # No server-server matrix: bound it through the nearest client (triangle
            # inequality), rtt_ij <= rtt_ci + rtt_cj.
            base = cast(np.ndarray, self.rtt_cs).min(axis=0)
            object.__setattr__(self, "rtt_ss", base[:, None] + base[None, :])
        if self.objective not in ("decode", "all_tokens"):
            raise PlannerError(f"blocks solver: field objective must be 'decode' or "
                               f"'all_tokens', got {self.objective!r}")
        if n_s == 0:
            raise PlannerError("blocks solver: no servers")
        if np.any(self.requests < 0):
            raise PlannerError("blocks solver: field requests must be >= 0")
        if self.cache_bytes <= 0 or self.block_bytes <= 0:
            raise PlannerError("blocks solver: block_bytes and cache_bytes must be > 0")

    # ----------------------------------------------------------------- sizes
    @property
    def n_servers(self) -> int:
        return int(self.memory.shape[0])

    @property
    def n_clients(self) -> int:
        return int(self.t_tok.shape[0])

    @property
    def total_requests(self) -> int:
        return int(self.requests.sum())

    # --------------------------------------------------------------- costs
    @property
    def comm(self) -> np.ndarray:
        """Per-token communication coefficient ``(C, S)`` under :attr:`objective`."""
        if self.objective == "decode":
            return self.t_tok
        l = self.output_len
        return (self.t_in + (l - 1) * self.t_tok) / l

    @property
    def tau_eff(self) -> np.ndarray:
        """Per-token, per-block compute coefficient ``(S,)`` under :attr:`objective`."""
        if self.objective == "decode":
            return self.tau
        l = self.output_len
        return (self.tau_in + (l - 1) * self.tau) / l

    def with_requests(self, requests: Sequence[int] | np.ndarray) -> Instance:
        """The same instance with a different request vector (e.g. a design ``|R|``)."""
        return Instance(
            memory=self.memory, tau=self.tau, tau_in=self.tau_in, t_tok=self.t_tok,
            t_in=self.t_in, n_blocks=self.n_blocks, block_bytes=self.block_bytes,
            cache_bytes=self.cache_bytes, input_len=self.input_len,
            output_len=self.output_len, requests=np.asarray(requests),
            max_blocks=self.max_blocks, max_sessions=self.max_sessions,
            objective=self.objective, server_names=self.server_names,
            client_names=self.client_names,
            rtt_cs=self.rtt_cs, rtt_ss=self.rtt_ss,
        )


def build_instance(
    servers: Sequence[Server],
    model: BlockModel,
    *,
    clients: Sequence[Client] | None = None,
    network: NetworkDescription | None = None,
    requests: Sequence[int] | None = None,
    objective: Objective = "all_tokens",
) -> Instance:
    """Turn dataclass inputs into an :class:`Instance`.

    ``clients`` defaults to one client named ``"client"`` at location ``"client"``
    (a proxy, as in the paper's single-client experiments); ``network`` defaults to
    :class:`NetworkDescription` (Table 2 values); ``requests`` defaults to one per client.
    """
    if not servers:
        raise PlannerError("blocks solver: field servers is empty")
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise PlannerError("blocks solver: server names must be unique")
    clients = list(clients) if clients else [Client("client")]
    network = network or NetworkDescription()
    h = model.hidden_bytes_per_token
    t_tok = np.array([[network.token_rtt(c.where, s.where, h) for s in servers] for c in clients])
    t_in = np.array(
        [[network.input_rtt(c.where, s.where, h, model.input_len) for s in servers]
         for c in clients]
    )
    rtt_cs = np.array([[network.rtt(c.where, s.where) for s in servers] for c in clients])
    rtt_ss = np.array([[network.rtt(a.where, b.where) for b in servers] for a in servers])
    req = np.ones(len(clients), dtype=np.int64) if requests is None else np.asarray(requests)
    if req.shape != (len(clients),):
        raise PlannerError("blocks solver: field requests must have one entry per client")
    caps = [model.n_blocks if s.max_blocks is None else s.max_blocks for s in servers]
    sessions = None
    if any(s.max_sessions is not None for s in servers):
        sessions = np.array([np.inf if s.max_sessions is None else s.max_sessions
                             for s in servers], dtype=float)
    return Instance(
        memory=np.array([s.memory_bytes for s in servers], dtype=float),
        tau=np.array([s.tau_decode_s for s in servers], dtype=float),
        tau_in=np.array([s.tau_prefill_s for s in servers], dtype=float),
        t_tok=t_tok, t_in=t_in, n_blocks=model.n_blocks, block_bytes=model.block_bytes,
        cache_bytes=model.cache_bytes, input_len=model.input_len,
        output_len=model.output_len, requests=req, max_blocks=np.array(caps),
        max_sessions=sessions, objective=objective, server_names=tuple(names),
        client_names=tuple(c.name for c in clients), rtt_cs=rtt_cs, rtt_ss=rtt_ss,
    )

"""Prefill islands of the request-level simulator (:mod:`planner.sim.engine`): FCFS
attention groups batching prompts up to a token budget, or an MoE model's groups passing
in lockstep.  :class:`PrefillBatching` holds the engine's prefill-side event handlers;
:class:`planner.sim.engine.Simulation` owns the state they read.

**Prefill islands.**  ``dp`` attention groups serve one FCFS island queue (each group,
when free, takes the head).  A group batches queued prompts up to a token budget
(``prefill_token_budget``, vLLM's ``max_num_batched_tokens``; one longer prompt runs
alone) and the batch takes ``L(sum n_i) + a sum_i (P(s_i) - P(h_i))`` seconds: the
GEMMs, communication and overheads of one forward pass over the concatenated new tokens
plus per-sequence causal attention (:func:`planner.sim.cluster.prefill_split`).  A
batch of one prompt costs exactly the perf model's ``prefill_s[s]``.  The first output
token is computed by the prefill, but the user receives it from the decode island,
when that island admits the request into its running batch (after the KV transfer and
any wait for a batch slot): SGLang's and vLLM's prefill/decode disaggregation stream
every token, the first included, from the decode instance, and seed 003 (§IV) measures
TTFT there too.  So TTFT covers prefill, transfer and decode admission, and TPOT --
``(t_done - t_first_token) / (tokens - 1)``, the benchmarks' definition (vLLM
``benchmark_serving``, MLPerf Inference's LLM rules) -- is the decode island's own
pace.  (The DistServe convention, first token at prefill end, charges the transfer and
the admission wait to TPOT, where a 2-token answer behind a 10 k-token KV transfer
misses any TPOT ceiling at any load.)  A request with one output token is done at the
prefill's end.

With ``prefill_lockstep`` an MoE model's prefill groups run in lockstep instead, as the
engines run them: an idle attention-DP rank is padded with a dummy batch so that every
rank meets the expert all-to-all (TensorRT-LLM's ``_pad_attention_dp_dummy_request``,
SGLang's idle batch).  The island then passes all its groups at once: when it is idle
the queue is dealt to the groups in turn, FCFS (as the engines route requests to ranks
in turn or to the least loaded), each filled to its budget by chunked prefill -- the
prompt that does not fit is split and its rest continues on the same group in the next
pass, as the engines fill a rank's pass; the pass lasts as long as its fullest group's,
and a prompt that arrives during it waits for its end.  This is the default, and the
planner's closed loop runs it (docs/simulation.md, "Prefill lockstep").  Dealing the
queue at the pass start balances the groups at least as well as an engine that routes
each prompt to a rank on arrival, so if anything it flatters the lockstep's cost.
``prefill_lockstep=False`` lets every group take the head of the queue when it is free,
as a dense model's groups (which share no collective) always do.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from planner.sim.cluster import prefill_linear
from planner.sim.events import NET, PREFILL_DONE

if TYPE_CHECKING:
    from planner.sim.netflow import FlowNetwork
    from planner.sim.protocol import SimRequest

heappush = heapq.heappush


class Prefill:
    """A prefill island: one FCFS queue served by ``dp`` attention groups -- each on its
    own, or (``lockstep``: an MoE model's groups, joined by the expert layers) all in one
    pass at a time (``running``: the groups in it; module docstring)."""

    __slots__ = ("i", "queue", "free", "batches", "lin", "a", "tail", "dp", "budget",
                 "lockstep", "running", "carry", "done")

    def __init__(self, i: int, dp: int, lin: list[float], a: float, tail: float,
                 budget: int, lockstep: bool = False) -> None:
        self.i, self.dp, self.lin, self.a, self.tail = i, dp, lin, a, tail
        self.budget = budget
        self.lockstep = lockstep and dp > 1
        self.running = 0
        # lockstep: the prompt each group is part-way through (-1: none), and how many of
        # each such prompt's positions are prefilled (cached ones included)
        self.carry = [-1] * dp
        self.done: dict[int, int] = {}
        self.queue: deque[int] = deque()
        self.free = list(range(dp - 1, -1, -1))  # pop() takes group 0 first
        self.batches: list[list[int]] = [[] for _ in range(dp)]


class PrefillBatching:
    """The prefill-side event handlers of :class:`planner.sim.engine.Simulation`: a
    routed prompt joining its prefill island, a group's batch or a lockstep pass
    starting, and a pass ending -- which starts its prompts' KV transfers.  The
    annotations below are the engine state they read and write."""

    now: float
    reqs: list[SimRequest]
    caches: list | None
    busy: list[tuple[int, float, float, float]]
    net: FlowNetwork
    _pre: list[Prefill | None]
    _out: list[int]
    _tok: list[int]
    _pf_hit: list[int]
    _heap: list[tuple]
    _seq: int
    _work: int
    _net_due: float
    _push: Callable[[float, int, int, int], None]
    _complete: Callable[[int], None]
    _route_decode: Callable[[int, int], bool]

    def _prefill_enqueue(self, p: Prefill, pos: int, i: int) -> None:
        """Prompt ``pos``, routed to prefill island ``i`` (``p``), joins its queue -- or,
        when a group is idle and nobody waits, starts at once, alone."""
        req = self.reqs[pos]
        if self.caches is not None and req.prefix_hashes:
            self._pf_hit[pos] = self.caches[i].hit_tokens(req.prefix_hashes, req.input_len)
        self._out[i] += req.input_len
        if p.lockstep:
            p.queue.append(pos)
            if not p.running:
                self._start_pass(p)
            return
        if p.free and not p.queue:  # an idle group takes it alone: the common case
            now = self.now
            req.t_prefill_start = now
            s, h = req.input_len, self._pf_hit[pos]
            g = p.free.pop()
            p.batches[g] = [pos]
            t_end = (now + prefill_linear(p.lin, p.tail, s - h)
                     + p.a * 0.5 * (s * (s + 1.0) - h * (h + 1.0)))
            self.busy.append((i, now, t_end, 1.0 / p.dp))
            self._work += 1
            self._seq = seq = self._seq + 1
            heappush(self._heap, (t_end, seq, PREFILL_DONE, i, g))
            return
        p.queue.append(pos)
        if p.free:
            self._start_prefill(p)

    def _start_prefill(self, p: Prefill) -> None:
        queue, reqs, hit, budget = p.queue, self.reqs, self._pf_hit, p.budget
        batch: list[int] = []
        new = 0
        pairs = 0.0
        now = self.now
        while queue:
            pos = queue[0]
            s = reqs[pos].input_len
            h = hit[pos]
            if batch and new + s - h > budget:
                break
            queue.popleft()
            batch.append(pos)
            new += s - h
            pairs += 0.5 * (s * (s + 1.0) - h * (h + 1.0))
            reqs[pos].t_prefill_start = now
        g = p.free.pop()
        p.batches[g] = batch
        t_end = now + prefill_linear(p.lin, p.tail, new) + p.a * pairs
        self.busy.append((p.i, now, t_end, 1.0 / p.dp))
        self._work += 1
        self._push(t_end, PREFILL_DONE, p.i, g)

    def _start_pass(self, p: Prefill) -> None:
        """A lockstep island's pass (module docstring).  Each group first continues the
        prompt it is part-way through; then the queue is dealt to the groups in turn,
        FCFS, each filled to its token budget -- the prompt that does not fit is split,
        its first chunk filling the group, the rest staying with that group for its next
        pass (chunked prefill, as the engines fill a rank's pass) -- as the engines route
        requests to attention-DP ranks in turn or to the least loaded.  Each group's
        chunk of a prompt at positions [p0, p1) costs its tokens in the pass's GEMMs and
        its causal attention P(p1) - P(p0); the pass lasts as long as the fullest
        group's (every group runs it: idle ones pad)."""
        queue, reqs, hit, budget, done = p.queue, self.reqs, self._pf_hit, p.budget, p.done
        now = self.now
        new = [0] * p.dp
        pairs = [0.0] * p.dp

        def take(g: int, pos: int) -> None:
            # the next chunk of ``pos`` on group g, as much as the group's room allows
            s = reqs[pos].input_len
            p0 = done.get(pos, hit[pos])
            p1 = min(s, p0 + max(budget - new[g], 1))
            new[g] += p1 - p0
            pairs[g] += 0.5 * (p1 * (p1 + 1.0) - p0 * (p0 + 1.0))
            p.batches[g].append(pos)
            done[pos] = p1
            p.carry[g] = pos if p1 < s else -1

        for g in range(p.dp):
            if p.carry[g] >= 0:
                take(g, p.carry[g])
        open_ = [g for g in range(p.dp) if p.carry[g] < 0 and new[g] < budget]
        k = 0
        while queue and open_:
            k %= len(open_)
            g = open_[k]
            pos = queue.popleft()
            reqs[pos].t_prefill_start = now
            take(g, pos)
            if p.carry[g] >= 0 or new[g] >= budget:
                del open_[k]  # full: the next group takes the head
            else:
                k += 1
        used = [g for g in range(p.dp) if p.batches[g]]
        t_end = now + max(prefill_linear(p.lin, p.tail, new[g]) + p.a * pairs[g] for g in used)
        for _ in used:
            self.busy.append((p.i, now, t_end, 1.0 / p.dp))
        p.running = len(used)
        self._work += len(used)
        self._push(t_end, PREFILL_DONE, p.i, -1)

    def _prefill_done(self, i: int, g: int) -> None:
        p = cast(Prefill, self._pre[i])  # scheduled only for prefill islands
        if g < 0:  # a lockstep pass: every group's prompts whose last chunk it ran
            batch = [pos for b in p.batches for pos in b if pos not in p.carry]
            for pos in batch:
                p.done.pop(pos, None)
            p.batches = [[] for _ in range(p.dp)]
            self._work -= p.running
            p.running = 0
        else:
            batch = p.batches[g]
            p.batches[g] = []
            p.free.append(g)
            self._work -= 1
        now, reqs, caches, tok = self.now, self.reqs, self.caches, self._tok
        # the pass's KV transfers start together: one network filling for all of them
        with self.net.batched(now):
            for pos in batch:
                req = reqs[pos]
                req.t_prefill_end = now
                tok[pos] = 1
                self._out[i] -= req.input_len
                if caches is not None and req.prefix_hashes:
                    caches[i].touch(req.prefix_hashes)
                if req.output_len <= 1:
                    req.t_first_token = now  # the answer is the prefill's token
                    self._complete(pos)
                else:
                    self._route_decode(pos, i)
        f = self.net.next_finish()
        if f < self._net_due:
            self._net_due = f
            self._push(f, NET, 0, 0)
        if p.lockstep:
            if p.queue or max(p.carry) >= 0:
                self._start_pass(p)
        elif p.queue:
            self._start_prefill(p)

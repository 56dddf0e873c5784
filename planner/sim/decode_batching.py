"""Decode and colocated islands of the request-level simulator
(:mod:`planner.sim.engine`): continuous batching advanced in epochs, and chunked prefill
on colocated islands.  :class:`DecodeBatching` holds the engine's decode-side event
handlers; :class:`planner.sim.engine.Simulation` owns the state they read.

**Decode islands.**  Continuous batching (Orca, vLLM): at each iteration boundary the
island admits queued requests FCFS while the batch is below ``max_batch`` and their KV
fits (context plus one step of growth for the whole batch); every running sequence then
gains one token per step; each step takes ``step_time`` at group batch ``ceil(n / dp)``
(the slowest group, the groups being synchronised by the MoE all-to-all) and the
batch's mean context.  When the KV cache cannot hold the next step, the most recently
admitted request is preempted (vLLM's recompute policy), requeued at the front, and
pays a prefill of its whole context when readmitted.

**Colocated islands: chunked prefill.**  A ``both`` island runs as aggregated engines
do by default -- vLLM (V1) and TRT-LLM with chunked prefill, the stall-free batching of
Sarathi-Serve (Agrawal et al., OSDI 2024) -- and as the perf model's colocated table
assumes (:mod:`perfmodel.colocated` on :func:`perfmodel.aggregated.mixed_pass`: every
pass generates a token for each running sequence and prefills prompt chunks in the
same forward pass).  Each iteration has a token budget per attention group (the
island's ``token_budget``, else ``prefill_token_budget``: vLLM's
``max_num_batched_tokens``, the perf model's ``EngineProfile.prefill_token_budget``).
The running decodes take one token each first; the rest goes to prompt chunks FCFS --
the prompts already being prefilled, in admission order, then new admissions from the
island's queue while budget is left, the batch (prefilling sequences included, as
vLLM's ``max_num_seqs``) is below ``max_batch`` and their whole context's KV fits (it
is reserved at admission, as SGLang does; vLLM allocates it chunk by chunk).  A prompt's
first token comes out of the iteration that computes its last chunk (that pass samples
it); from the next one it decodes a token per iteration.  The iteration costs what the
mixed pass charges, from the island's own tables: the decode step of its ``b`` decode
rows at their mean context, plus the GEMMs, collectives and overheads of the chunks'
``c`` tokens on top of those rows, ``L(b + c) - L(b)``, plus the chunks' causal
attention ``a sum (P(p_1) - P(p_0))`` (chunk ``[p_0, p_1)`` of its prompt); without
decodes it is a prefill pass, so a lone prompt within the budget costs ``prefill_s[s]``.
An engine that does not mix them (SGLang's default scheduler,
``SimIsland.mixed_prefill`` off) gives the prompt chunks the whole budget in a pass of
their own, ``L(c)`` plus their attention, and the decodes gain no token in it.
Why this policy: it is what the engines run and what the plan priced -- with whole
prompts prefilled inside the iteration (Orca, vLLM without chunked prefill) a long
prompt stalled every running decode for its whole prefill, every admission paid a
separate pass (the weights read twice), and a ``dp``-group island prefilled all its
admissions as one serial pass, so a 4 x H100 island of Llama-3.1-8B sustained a third
of its planned rate (issue 28; docs/simulation.md has the measured agreement).

A dense model's ``dp`` data-parallel replicas share no collective: each is an engine
of its own (``max_batch / dp`` sequences, ``1 / dp`` of the KV, its own budget), and the
island spreads its arrivals over them as vLLM's data-parallel front end does (the
fewest ``4 waiting + running``).  MoE groups step together (the expert all-to-all): one
batch of ``ceil(n / dp)`` decode rows per group, a prompt's chunk within one group's
budget, and the iteration costs the slowest group's pass (the larger of the biggest
chunk and an even share of the chunk tokens).  Preemption is the decode islands'
(LIFO victim, recompute): a victim still being prefilled loses its chunks, and a
recomputed context is prefilled in chunks again, its next token coming from the
iteration that finishes it.  Islands without a layer model -- the seed-001 chains of
:mod:`planner.sim.pipeline_cluster`, whose prefill table and budget already stand for
their parallel prefill groups -- keep the whole-prompt iteration they were built for,
as do islands with ``SimIsland.chunked_prefill`` off (seed 004's instances, vLLM without
chunked prefill): newly admitted prompts are prefilled inside the iteration, which
costs their batch prefill time plus the step time, so a long prompt stalls every
running decode -- the interference seed 004 routes around.

**Epochs.**  Between two changes of the batch (an admission, a completion, a
preemption) its composition is fixed, so the island is advanced a whole *epoch* of
``K`` steps at once: ``K`` is the fewest remaining tokens in the batch (a per-island
heap of finish steps) or the steps until the KV cache fills, and the time of ``K``
steps with a linearly growing context is closed-form
(:func:`planner.sim.cluster.steps_time`).  An arrival that can be admitted splits the
epoch at the next iteration boundary (:func:`planner.sim.cluster.steps_until`); one that
cannot waits for the epoch's end, when memory frees.  On a colocated island every
iteration with prompt chunks is an event of its own, and only iterations of decodes
alone are batched into epochs.  One heap event per epoch, not per token: that is what
makes ~10^5 simulated requests per wall second possible.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from planner.sim.cluster import prefill_linear, step_time, steps_time, steps_until
from planner.sim.events import EPOCH, KICK

if TYPE_CHECKING:
    from planner.sim.protocol import SimRequest

heappush, heappop = heapq.heappush, heapq.heappop


class Decoder:
    """A decode or colocated island -- or one engine of a colocated island whose ``dp``
    data-parallel replicas run independently (module docstring) --: continuous batching
    advanced in epochs.  ``u`` is its index among all decoders (what its events carry),
    ``i`` its island's."""

    __slots__ = ("i", "u", "both", "queue", "running", "fin", "n", "ctx", "step", "t0", "k",
                 "m0", "extra", "row", "ver", "active", "split", "rows", "dp", "max_batch",
                 "cap", "lin", "a", "tail", "kick", "chunked", "budget", "w", "nd", "pctx",
                 "pf", "done_pf", "mixed")

    def __init__(self, i: int, both: bool, rows: list, dp: int, max_batch: int, cap: int,
                 lin: list[float], a: float, tail: float, *, u: int = 0,
                 chunked: bool = False, budget: int = 0, w: float = 1.0,
                 mixed: bool = True) -> None:
        self.i, self.u, self.both, self.rows, self.dp = i, u, both, rows, dp
        self.max_batch, self.cap, self.lin, self.a, self.tail = max_batch, cap, lin, a, tail
        self.queue: deque[int] = deque()
        self.running: dict[int, None] = {}  # insertion order = admission order (LIFO victim)
        self.fin: list[tuple[int, int, int]] = []  # (finish step, admission id, request)
        self.n = 0  # running sequences (a chunked island: prefilling ones included)
        self.ctx = 0  # sum of their contexts = KV tokens in use
        self.step = 0  # iterations done so far (global step counter of the island)
        self.t0 = self.extra = self.m0 = 0.0
        self.k = 0
        self.row = rows[0]
        self.ver = 0
        self.active = False
        self.split = False
        self.kick = False  # an idle island's first iteration is scheduled
        # chunked prefill (colocated islands with a layer model, _boundary_chunked)
        self.chunked = chunked
        self.budget = budget  # tokens per iteration and attention group
        self.mixed = mixed  # prompt chunks share the decodes' iteration (else a pass alone)
        self.w = w  # share of the island in the busy timeline
        self.nd = 0  # decoding sequences (the rest of the n are prefilling)
        self.pctx = 0  # KV tokens reserved by the prefilling ones (their whole context)
        self.pf: dict[int, None] = {}  # prefilling sequences, admission order
        self.done_pf: list[int] = []  # those whose last chunk runs in this iteration


def share(total: int, parts: int, k: int) -> int:
    """Part ``k`` of ``total`` split into ``parts`` near-equal integers (at least 1)."""
    return max(total // parts + (1 if k < total % parts else 0), 1)


class DecodeBatching:
    """The decode-side event handlers of :class:`planner.sim.engine.Simulation`: a
    request's KV arriving at a decoder, a decoder's iteration boundary (continuous
    batching, or chunked prefill on a colocated island), and retiring finished
    sequences.  The annotations below are the engine state they read and write."""

    now: float
    reqs: list[SimRequest]
    caches: list | None
    busy: list[tuple[int, float, float, float]]
    budget: int
    completed: int
    dropped: int
    _out: list[int]
    _tok: list[int]
    _adm_id: list[int]
    _adm_step: list[int]
    _recompute: list[bool]
    _pf_hit: list[int]
    _pf_at: list[int]
    _heap: list[tuple]
    _seq: int
    _next_adm: int
    _work: int
    _on_complete: Callable[[SimRequest], None] | None
    _push: Callable[[float, int, int, int], None]

    def _dec_enqueue(self, d: Decoder, pos: int, ctx: int) -> None:
        d.queue.append(pos)
        if not d.active:
            # start at the end of this instant, so simultaneous arrivals share the iteration
            if not d.kick:
                d.kick = True
                self._push(self.now, KICK, d.u, 0)
        elif (not d.split and len(d.queue) == 1 and d.n < d.max_batch
              and d.ctx + d.k * d.n + ctx + d.n + 1 <= d.cap):
            # admissible now: end the epoch at the next iteration boundary
            k = steps_until(d.row, d.m0, d.k, self.now - d.t0 - d.extra)
            if k < d.k:
                d.k = k
                d.ver += 1
                d.split = True
                self._push(d.t0 + d.extra + steps_time(d.row, d.m0, k), EPOCH, d.u, d.ver)

    def _boundary(self, d: Decoder) -> None:
        """End the running epoch (if any) at ``now``, then admit and start the next."""
        now, reqs, tok, adm = self.now, self.reqs, self._tok, self._adm_id
        i = d.i
        n, ctx_sum, step, cap = d.n, d.ctx, d.step, d.cap
        fin, running = d.fin, d.running
        if d.active:
            k = d.k
            step += k
            ctx_sum += k * n
            self._out[i] -= k * n
            self.busy.append((i, d.t0, now, 1.0))
            done, held = self._retire(fin, running, step)
            n -= done
            ctx_sum -= held
            d.active = False
            self._work -= 1
        preempted = False
        while n and ctx_sum + n > cap:  # the next step would not fit: recompute policy
            pos, _ = running.popitem()
            t = tok[pos] + step - self._adm_step[pos]
            tok[pos] = t
            req = reqs[pos]
            req.tokens_out = t
            req.preemptions += 1
            n -= 1
            ctx_sum -= req.input_len + t
            adm[pos] = -1
            self._recompute[pos] = True
            d.queue.appendleft(pos)
            preempted = True
        queue = d.queue
        fresh: list[int] = []
        pf_new = 0
        pf_pairs = 0.0
        if queue and (not preempted or n == 0):
            rec, hit, adm_step = self._recompute, self._pf_hit, self._adm_step
            max_batch = d.max_batch
            while queue and n < max_batch:
                pos = queue[0]
                req = reqs[pos]
                t = tok[pos]
                ctx = req.input_len + t
                if ctx_sum + ctx + n + 1 > cap:
                    if n:
                        break
                    queue.popleft()  # cannot fit even alone: never served
                    self.dropped += 1
                    continue
                if rec[pos]:
                    h = hit[pos] if t == 0 else 0
                    if fresh and pf_new + ctx - h > self.budget:
                        break
                    pf_new += ctx - h
                    pf_pairs += 0.5 * (ctx * (ctx + 1.0) - h * (h + 1.0))
                    rec[pos] = False
                    fresh.append(pos)
                queue.popleft()
                if t and req.t_first_token != req.t_first_token:
                    req.t_first_token = now  # streamed by the decode island (docstring)
                self._next_adm = aid = self._next_adm + 1
                adm[pos] = aid
                adm_step[pos] = step
                running[pos] = None
                n += 1
                ctx_sum += ctx
                heappush(fin, (step + req.output_len - t, aid, pos))
        d.n, d.ctx, d.step = n, ctx_sum, step
        if not n:
            return
        while adm[fin[0][2]] != fin[0][1]:  # drop entries of preempted requests
            heappop(fin)
        k = fin[0][0] - step
        k_mem = (cap - ctx_sum) // n
        if k_mem < k:
            k = k_mem
        row = d.rows[-(-n // d.dp)]
        m0 = ctx_sum / n
        extra = 0.0
        if fresh:
            extra = prefill_linear(d.lin, d.tail, pf_new) + d.a * pf_pairs
            t_first = now + extra + step_time(row, m0 + 1.0)
            for pos in fresh:
                req = reqs[pos]
                if tok[pos] == 0:
                    if self.caches is not None and req.prefix_hashes:
                        self.caches[i].touch(req.prefix_hashes)
                    req.t_prefill_start = now
                    req.t_prefill_end = t_first
                    req.t_first_token = t_first
                    self._out[i] -= req.input_len
        d.t0, d.extra, d.row, d.m0, d.k = now, extra, row, m0, k
        d.active = True
        d.split = False
        d.ver = ver = d.ver + 1
        self._work += 1
        self._seq = seq = self._seq + 1
        heappush(self._heap, (now + extra + steps_time(row, m0, k), seq, EPOCH, d.u, ver))

    def _boundary_chunked(self, d: Decoder) -> None:
        """A colocated island's iteration boundary under chunked prefill (module
        docstring): end the running iteration or decode epoch at ``now``, preempt if the
        next iteration would not fit, share the token budget -- decodes first, then the
        prefilling prompts and new admissions FCFS -- and start the next."""
        now, reqs, tok, adm, at = self.now, self.reqs, self._tok, self._adm_id, self._pf_at
        i = d.i
        n, nd, ctx_sum, pctx, step, cap = d.n, d.nd, d.ctx, d.pctx, d.step, d.cap
        fin, running, pf, out = d.fin, d.running, d.pf, self._out
        on_complete = self._on_complete
        if d.active:
            k = d.k
            step += k
            ctx_sum += k * nd
            out[i] -= k * nd
            self.busy.append((i, d.t0, now, d.w))
            done, held = self._retire(fin, running, step)
            n -= done
            nd -= done
            ctx_sum -= held
            if d.done_pf:  # prompts whose last chunk ran: the iteration sampled a token
                caches, adm_step = self.caches, self._adm_step
                for pos in d.done_pf:
                    del pf[pos]
                    req = reqs[pos]
                    t = tok[pos]
                    c = req.input_len + t
                    pctx -= c
                    ctx_sum += 1
                    out[i] -= 1
                    if t == 0:
                        req.t_prefill_end = req.t_first_token = now
                        out[i] -= req.input_len
                        if caches is not None and req.prefix_hashes:
                            caches[i].touch(req.prefix_hashes)
                    t += 1
                    tok[pos] = t
                    if t >= req.output_len:
                        adm[pos] = -1
                        del running[pos]
                        n -= 1
                        ctx_sum -= c + 1
                        req.tokens_out = t
                        req.t_done = now
                        self.completed += 1
                        if on_complete is not None:
                            on_complete(req)
                    else:
                        nd += 1
                        adm_step[pos] = step
                        heappush(fin, (step + req.output_len - t, adm[pos], pos))
                d.done_pf = []
            d.active = False
            self._work -= 1
        preempted = False
        # the next iteration grows every decode and every finishing prompt by a token
        while n and ctx_sum + nd + len(pf) > cap:  # recompute policy, LIFO victim
            pos, _ = running.popitem()
            req = reqs[pos]
            if pos in pf:  # its chunks so far are lost
                del pf[pos]
                c = req.input_len + tok[pos]
                pctx -= c
                ctx_sum -= c
            else:
                t = tok[pos] + step - self._adm_step[pos]
                tok[pos] = t
                req.tokens_out = t
                nd -= 1
                ctx_sum -= req.input_len + t
            req.preemptions += 1
            n -= 1
            adm[pos] = -1
            self._recompute[pos] = True
            d.queue.appendleft(pos)
            preempted = True
        # the token budget: one token per decode, the rest to prompts in admission order;
        # each attention group has its own budget and a prompt lives on one group
        dp = d.dp
        ng = -(-nd // dp)
        # an engine that runs prompt chunks as a pass of their own gives them the whole
        # budget; the decodes wait for that pass
        room_g = d.budget - ng if d.mixed else d.budget
        if room_g < 1:
            room_g = 1  # the prompts always progress
        room = room_g * dp
        c_tot = 0
        c_max = 0
        pairs = 0.0
        done_pf = d.done_pf
        for pos in pf:
            a0 = at[pos]
            left = reqs[pos].input_len + tok[pos] - a0
            c = left if left < room_g else room_g
            if c > room:
                c = room
            a1 = a0 + c
            pairs += 0.5 * (a1 * (a1 + 1.0) - a0 * (a0 + 1.0))
            at[pos] = a1
            room -= c
            c_tot += c
            if c > c_max:
                c_max = c
            if c == left:
                done_pf.append(pos)
            if not room:
                break
        queue = d.queue
        if queue and room and (not preempted or n == 0):
            rec, hit, max_batch = self._recompute, self._pf_hit, d.max_batch
            caches = self.caches
            while queue and n < max_batch and room:
                pos = queue[0]
                req = reqs[pos]
                t = tok[pos]
                ctx = req.input_len + t
                if ctx_sum + ctx + n + 1 > cap:
                    if n:
                        break
                    queue.popleft()  # cannot fit even alone: never served
                    self.dropped += 1
                    continue
                queue.popleft()
                rec[pos] = False
                self._next_adm = aid = self._next_adm + 1
                adm[pos] = aid
                running[pos] = None
                pf[pos] = None
                n += 1
                ctx_sum += ctx
                pctx += ctx
                a0 = 0
                if t == 0:  # a fresh prompt; a preempted one recomputes its whole context
                    if req.t_prefill_start != req.t_prefill_start:
                        req.t_prefill_start = now
                    h = hit[pos]
                    a0 = h if h < ctx else ctx - 1  # the last token is always computed
                    if caches is not None and req.prefix_hashes:
                        caches[i].touch(req.prefix_hashes)
                left = ctx - a0
                c = left if left < room_g else room_g
                if c > room:
                    c = room
                a1 = a0 + c
                pairs += 0.5 * (a1 * (a1 + 1.0) - a0 * (a0 + 1.0))
                at[pos] = a1
                room -= c
                c_tot += c
                if c > c_max:
                    c_max = c
                if c == left:
                    done_pf.append(pos)
        d.n, d.nd, d.ctx, d.pctx, d.step = n, nd, ctx_sum, pctx, step
        rows = d.rows
        if ng >= len(rows):
            ng = len(rows) - 1
        lin, tail = d.lin, d.tail
        if c_tot:
            # one iteration: the decode step of the nd rows plus the chunks' tokens -- the
            # GEMMs and collectives of ng + rg rows (the linear part of the prefill table
            # beyond ng rows) and the chunks' causal attention -- on the slowest group
            if dp > 1:
                rg = -(-c_tot // dp)
                if c_max > rg:
                    rg = c_max
                if rg > room_g:
                    rg = room_g
                pairs *= rg / c_tot
            else:
                rg = c_tot
            k = 1
            if nd and d.mixed:
                row = rows[ng]
                m0 = (ctx_sum - pctx) / nd
                dt = (step_time(row, m0 + 1.0) + prefill_linear(lin, tail, ng + rg)
                      - prefill_linear(lin, tail, ng) + d.a * pairs)
            else:  # a prefill pass: no decodes, or an engine that runs it alone (they wait)
                if not d.mixed:
                    k = 0  # no decode advances in it
                row, m0 = rows[0], 0.0
                dt = prefill_linear(lin, tail, rg) + d.a * pairs
        elif nd:  # decodes only: an epoch up to the next completion or a full KV cache
            while adm[fin[0][2]] != fin[0][1]:  # drop entries of preempted requests
                heappop(fin)
            k = fin[0][0] - step
            k_mem = (cap - ctx_sum) // nd
            if k_mem < k:
                k = k_mem
            row = rows[ng]
            m0 = ctx_sum / nd
            dt = steps_time(row, m0, k)
        else:
            return
        d.t0, d.extra, d.row, d.m0, d.k = now, 0.0, row, m0, k
        d.active = True
        d.split = False
        d.ver = ver = d.ver + 1
        self._work += 1
        self._seq = seq = self._seq + 1
        heappush(self._heap, (now + dt, seq, EPOCH, d.u, ver))

    def _retire(self, fin: list, running: dict, step: int) -> tuple[int, int]:
        """Complete every running request whose last token is due by ``step`` (the
        island's finish-step heap ``fin``); returns (requests done, context tokens
        they held)."""
        reqs, tok, adm, now = self.reqs, self._tok, self._adm_id, self.now
        on_complete = self._on_complete
        done = held = 0
        while fin and fin[0][0] <= step:
            _, aid, pos = heappop(fin)
            if adm[pos] != aid:
                continue  # preempted since: a stale entry
            adm[pos] = -1
            req = reqs[pos]
            del running[pos]
            done += 1
            o = req.output_len
            held += req.input_len + o
            tok[pos] = o
            req.tokens_out = o
            req.t_done = now
            self.completed += 1
            if on_complete is not None:
                on_complete(req)
        return done, held

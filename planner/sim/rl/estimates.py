"""What a router estimates of a request it cannot observe directly."""

from __future__ import annotations

from planner.sim.protocol import SimRequest


def estimated_tokens(req: SimRequest, now: float, step_s: float) -> float:
    """d_j so far, as the router estimates it.

    The engine advances a batch in epochs of several steps and writes ``tokens_out``
    only on preemption and completion, so a router (like a real one, which sees tokens
    stream out) counts steps since the first token at the island's current step time;
    the count never goes below what the engine last reported.
    """
    first = req.t_first_token
    if first != first or now <= first:  # NaN: still waiting for its prefill
        return float(req.tokens_out)
    return max(float(req.tokens_out), 1.0 + (now - first) / step_s)


__all__ = ["estimated_tokens"]

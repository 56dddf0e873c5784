"""Kinds of the request-level simulator's timed events (the heap of
:class:`planner.sim.engine.Simulation`; each entry is ``(time, sequence, kind, a, b)``).

* ``PREFILL_DONE``: a prefill group's batch (``b`` its group) or a lockstep pass
  (``b = -1``) of island ``a`` ends;
* ``NET``: the earliest KV transfer in flight may have finished;
* ``EPOCH``: decoder ``a``'s epoch of version ``b`` ends;
* ``HOLD_RETRY``: the router's held requests are offered again;
* ``DECODE_RETRY``: request ``a``'s decode decision (prefilled on island ``b``) is
  retried;
* ``KICK``: idle decoder ``a`` starts its first iteration.
"""

PREFILL_DONE, NET, EPOCH, HOLD_RETRY, DECODE_RETRY, KICK = range(6)

__all__ = ["DECODE_RETRY", "EPOCH", "HOLD_RETRY", "KICK", "NET", "PREFILL_DONE"]

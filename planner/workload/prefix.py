"""Prefix (KV-cache) hit-rate estimate from per-request block hashes.

Mooncake-style traces give each request the hashes of its prompt's fixed-size token
blocks (512 tokens in the Mooncake release); two requests sharing a leading run of
hashes share that prefix.  A prefix cache can reuse a request's KV entries for the
*leading* blocks already cached -- reuse stops at the first miss, because a block's
keys/values depend on everything before it.  The estimate replays the trace in
arrival order against an LRU cache of ``capacity_blocks`` blocks:

    hit_tokens(r) = min(m_r * block_size, input_length(r)),
    m_r = length of the leading run of r's hashes present in the cache,

and reports ``sum_r hit_tokens(r) / sum_r input_length(r)``, the fraction of input
tokens whose prefill could be skipped.  The default capacity (one million blocks,
512M tokens of KV) makes the cache effectively unbounded for published traces; pass a
smaller one to model a real cache.  Memory is bounded by the capacity, not the trace.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence


class PrefixCacheEstimator:
    """Streaming LRU prefix-cache replay (see module docstring)."""

    def __init__(self, block_size: int = 512, capacity_blocks: int = 1_000_000) -> None:
        if block_size < 1 or capacity_blocks < 1:
            raise ValueError("block_size and capacity_blocks must be >= 1")
        self.block_size = block_size
        self.capacity = capacity_blocks
        self._cache: OrderedDict[Hashable, None] = OrderedDict()
        self.hit_tokens = 0
        self.input_tokens = 0
        self.requests = 0

    def observe(self, input_length: int, hashes: Sequence[Hashable]) -> int:
        """Replay one request; returns its hit tokens and inserts its blocks."""
        cache = self._cache
        leading = 0
        for h in hashes:
            if h not in cache:
                break
            leading += 1
        hit = min(leading * self.block_size, int(input_length))
        for h in hashes:
            if h in cache:
                cache.move_to_end(h)
            else:
                cache[h] = None
                if len(cache) > self.capacity:
                    cache.popitem(last=False)
        self.hit_tokens += hit
        self.input_tokens += int(input_length)
        self.requests += 1
        return hit

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

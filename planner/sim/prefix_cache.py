"""A prefix (KV-block) cache with least-recently-used eviction, one per island.

Seed 003 §1.2: prompts are cut into blocks of ``block_tokens`` tokens (512 in the public
Mooncake trace's ``hash_ids``), each named by a hash of the prompt up to and including
that block, so a block hash determines the whole prefix before it.  The tokens an
island already holds for a request are those of the *longest common block prefix* of
the request's hashes with the island's cache, ``h(r, d) = B_blk · |LCP(H_r, C_d)|``; only
the rest of the KV cache crosses the network (its eq. 2).  Seed 003 §4.1: each decode
instance keeps an "LRU-managed KV-block cache".

Implementation: an ``OrderedDict`` used as an LRU list (most recent at the end), so
lookups, refreshes and evictions are O(1) each and every method is O(len(hashes)).
``touch`` refreshes a request's blocks *last block first*, so the prefix's first block
ends up most recent: when the cache is full, a prefix loses its tail before its head,
and the LCP of what remains is still a prefix -- evicting the head first would
strand the whole tail (unreachable by any LCP) until it aged out.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


class LRUBlockCache:
    """At most ``capacity_blocks`` block hashes, least recently used evicted first."""

    __slots__ = ("capacity_blocks", "block_tokens", "_blocks")

    def __init__(self, capacity_blocks: int, block_tokens: int = 512) -> None:
        if capacity_blocks < 0 or block_tokens < 1:
            raise ValueError("need capacity_blocks >= 0 and block_tokens >= 1")
        self.capacity_blocks = int(capacity_blocks)
        self.block_tokens = int(block_tokens)
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def __contains__(self, block_hash: int) -> bool:
        return block_hash in self._blocks

    def hit_blocks(self, hashes: Sequence[int]) -> int:
        """Length of the longest prefix of ``hashes`` all present (no state change)."""
        blocks = self._blocks
        n = 0
        for h in hashes:
            if h not in blocks:
                break
            n += 1
        return n

    def hit_tokens(self, hashes: Sequence[int], input_len: int) -> int:
        """Prompt tokens covered by the cached prefix: ``min(hit_blocks · B_blk, L)``."""
        return min(self.hit_blocks(hashes) * self.block_tokens, int(input_len))

    def touch(self, hashes: Sequence[int]) -> None:
        """Insert or refresh every block of ``hashes``, evicting the least recently used
        blocks beyond capacity (module docstring for the order)."""
        if self.capacity_blocks == 0:
            return
        blocks = self._blocks
        for h in reversed(hashes):
            if h in blocks:
                blocks.move_to_end(h)
            else:
                blocks[h] = None
        while len(blocks) > self.capacity_blocks:
            blocks.popitem(last=False)

    def clear(self) -> None:
        self._blocks.clear()


__all__ = ["LRUBlockCache"]

"""LRU block cache: longest-common-prefix hits and eviction order (seed 003 §1.2)."""

from __future__ import annotations

import pytest

from planner.sim.prefix_cache import LRUBlockCache


def test_hit_is_the_longest_common_prefix():
    c = LRUBlockCache(10, block_tokens=512)
    c.touch([1, 2, 3])
    assert c.hit_blocks([1, 2, 3, 4]) == 3
    assert c.hit_blocks([1, 9, 3]) == 1  # 3 is cached but after a miss: not a prefix
    assert c.hit_blocks([9, 1, 2]) == 0
    assert c.hit_blocks([]) == 0
    assert c.hit_tokens([1, 2, 3, 4], 5000) == 3 * 512
    assert c.hit_tokens([1, 2, 3], 1200) == 1200  # the last block is partial


def test_hit_blocks_does_not_change_state():
    c = LRUBlockCache(2)
    c.touch([1])
    c.touch([2])
    c.hit_blocks([1])  # a lookup must not refresh 1 ...
    c.touch([3])
    assert 1 not in c and 2 in c and 3 in c  # ... so 1 is still the LRU victim


def test_lru_eviction_and_refresh():
    c = LRUBlockCache(3)
    c.touch([1, 2])
    c.touch([3])
    c.touch([1, 2])  # refresh: 3 is now least recent
    c.touch([4])
    assert len(c) == 3
    assert 3 not in c and all(h in c for h in (1, 2, 4))


def test_a_prefix_loses_its_tail_first():
    c = LRUBlockCache(4)
    c.touch([1, 2, 3, 4])
    c.touch([7])  # one eviction: the tail block 4, so the LCP survives
    assert c.hit_blocks([1, 2, 3, 4]) == 3
    big = LRUBlockCache(2)
    big.touch([1, 2, 3, 4, 5])  # longer than the cache: the head is kept
    assert big.hit_blocks([1, 2, 3]) == 2


def test_zero_capacity_and_bad_arguments():
    c = LRUBlockCache(0)
    c.touch([1, 2])
    assert len(c) == 0 and c.hit_blocks([1]) == 0
    with pytest.raises(ValueError):
        LRUBlockCache(-1)
    with pytest.raises(ValueError):
        LRUBlockCache(4, block_tokens=0)


def test_cost_is_linear_in_the_request():
    """A long-lived cache does not slow touches down (O(len(hashes)))."""
    import time

    c = LRUBlockCache(200_000)
    c.touch(list(range(200_000)))
    t0 = time.perf_counter()
    for k in range(2000):
        c.touch(range(10 * k, 10 * k + 10))
    per_touch = (time.perf_counter() - t0) / 2000
    assert per_touch < 1e-3  # ~ a few µs; 1 ms would mean a scan of the whole cache

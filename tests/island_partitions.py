"""Brute-force enumeration shared by the exact-search tests (tests/outer)."""

from __future__ import annotations

import itertools


def partitions(n, max_part):
    """Multisets of island sizes (each <= max_part) with sum <= n."""
    out = [()]
    for k in range(1, n + 1):
        for combo in itertools.combinations_with_replacement(range(1, max_part + 1), k):
            if sum(combo) <= n:
                out.append(combo)
    return out

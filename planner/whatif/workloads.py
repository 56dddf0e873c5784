"""Workloads of a what-if study: one workload, or a mixture of several (a mix shift).

A mixture of request populations w_k with request shares a_k (sum 1) is itself a
workload in the sense of thesis §4.3: its input-length pmf is the weighted sum

    p(s | mix) = sum_k a_k p(s | w_k),

(the law of total probability over which population a request comes from).  The other
statistics follow the same rule with the right weights:

* mean decode length: request-weighted, ``sum_k a_k E_k[d]``;
* maximum decode length: the largest of the components' (every decode island must
  serve every request, §4.3.2);
* prefix hit rate: it is a fraction of *input tokens* (docs/workloads.md), so it is
  weighted by each population's input tokens, ``sum_k a_k E_k[s] h_k / sum_k a_k E_k[s]``;
* output pmf: the weighted sum when every component has one, else none;
* joint (input, output) histogram, arrival rate and burstiness: dropped -- a share of
  requests says nothing about the mixed stream's rate or its correlation structure.

The components are padded to the longest ``max_len`` (zero mass beyond their own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from planner.workload import Workload, load_workload


def _padded(pmf: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n)
    out[: pmf.size] = pmf
    return out


def mix_workloads(components: Sequence[tuple[Workload, float]], name: str) -> Workload:
    """The mixture workload of ``(workload, share)`` pairs; shares are normalised."""
    if len(components) == 1 and components[0][1] > 0:
        return components[0][0]
    weights = np.array([a for _, a in components], dtype=float)
    weights = weights / weights.sum()
    parts = [(w, a) for (w, _), a in zip(components, weights, strict=True) if a > 0]
    if len(parts) == 1:
        return parts[0][0]
    n = max(w.pmf.size for w, _ in parts)
    pmf = sum(a * _padded(w.pmf, n) for w, a in parts)
    decode_max = max(w.decode_max for w, _ in parts)
    decode_mean = float(sum(a * w.decode_mean for w, a in parts))
    decode_pmf: np.ndarray | None = None
    if all(w.decode_pmf is not None for w, _ in parts):
        decode_pmf = sum(a * _padded(cast(np.ndarray, w.decode_pmf), decode_max + 1)
                         for w, a in parts)
    tokens = np.array([a * w.mean_input for w, a in parts])
    hit = float(tokens @ np.array([w.prefix_hit_rate for w, _ in parts]) / tokens.sum())
    what = " + ".join(f"{a:.4g} x {w.name}" for w, a in parts)
    return Workload(name=name, pmf=pmf, decode_mean=decode_mean, decode_max=decode_max,
                    decode_pmf=decode_pmf, prefix_hit_rate=min(1.0, max(0.0, hit)),
                    provenance=f"mixture of request populations: {what}",
                    description=f"what-if mixture {what}")


def load_mix(components: Sequence[tuple[str, float]], name: str) -> Workload:
    """Load the named workloads (built-in names or YAML paths) and mix them."""
    return mix_workloads([(load_workload(ref), share) for ref, share in components], name)

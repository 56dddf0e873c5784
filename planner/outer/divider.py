"""The divider function of seed 002 §4.9.2: split G GPUs of one type into islands.

Given ``total`` = G_total GPUs, a target island count ``n_target`` = N_target, a skew
S_skew and a minimum island size I_min:

1. Preconditions: I_min > 0 and G_total, N_target >= 0, else an error.  If
   N_target = 0, G_total = 0 or G_total < I_min no island can be formed: return [].
2. Number of islands: N_actual = min(N_target, floor(G_total / I_min)).
3. Base allocation: every island gets I_min; G_rem = G_total - N_actual * I_min.
4. Distribution of G_rem: weights w_k = k^S_skew for k = 1..N_actual (w_k = 1 when
   |S_skew| is numerically zero), proportions p_k = w_k / sum_j w_j and ideal shares
   s_k = p_k * G_rem.  (N_actual = 1 and G_rem = 0 are the thesis's special cases; the
   general formula gives the same answer for both.)
5. Integer adjustment by largest remainder: floor every s_k, then give one more GPU
   to the D = round(G_rem - sum_k floor(s_k)) islands with the largest fractional
   parts.  Final sizes S_k = I_min + floor(s_k) + delta_k sum to G_total.

With S_skew > 0 the sizes are non-decreasing in k (higher-index islands larger), with
S_skew < 0 non-increasing, with S_skew = 0 they differ by at most one (Fig. 4.8).
Ties between equal fractional parts go to the lower index, so the output is a pure
function of the inputs.
"""

from __future__ import annotations

import math

import numpy as np

# Below this |S_skew| the weights k^S differ from 1 by less than float rounding noise
# for any realistic N, and the thesis prescribes exactly equal weights.
SKEW_ZERO = 1e-9


def divide(total: int, n_target: int, skew: float, min_size: int) -> list[int]:
    """Island sizes (in island-index order) for ``total`` GPUs; see the module doc."""
    if min_size <= 0:
        raise ValueError(f"divide: min_size must be > 0, got {min_size}")
    if total < 0 or n_target < 0:
        raise ValueError(f"divide: total and n_target must be >= 0, got {total}, {n_target}")
    if not math.isfinite(skew):
        raise ValueError(f"divide: skew must be finite, got {skew}")
    total, n_target, min_size = int(total), int(n_target), int(min_size)
    n_actual = min(n_target, total // min_size)
    if n_actual == 0:
        return []
    remaining = total - n_actual * min_size
    k = np.arange(1, n_actual + 1, dtype=float)
    w = np.ones(n_actual) if abs(skew) < SKEW_ZERO else k ** float(skew)
    ideal = w / w.sum() * remaining
    base = np.floor(ideal)
    short = int(round(remaining - base.sum()))
    frac = ideal - base
    # Stable sort on -frac: equal fractional parts keep index order.
    extra = np.zeros(n_actual)
    if short > 0:
        extra[np.argsort(-frac, kind="stable")[:short]] = 1.0
    sizes = (min_size + base + extra).astype(int)
    return sizes.tolist()

"""Seeded synthetic benchmark tables for tests and benchmarks (not a perf model).

The shapes mimic what the analytic perf model of seed 002 §4.2 produces, so solver
timings and behaviour are representative, but the numbers are made up:

* prefill requests/s of an ``n``-GPU island at input length ``s``:
  ``n * f * K / (s * (1 + s / L) + o * log2(n))`` (linear + attention-quadratic cost
  with a per-type ``L``, plus a tensor-parallel overhead), zero if the weights do not
  fit in the island's memory -- so tables of different islands are *not* proportional;
* decode: the largest batch whose KV cache (``kv`` per token over ``s + d_max``
  tokens) fits next to the weights, rounded down to a multiple of 8 as in §4.6.2 and
  capped at 64 per GPU (zero if fewer than 8 fit); one step reads the weights plus
  the batch's KV cache at the island's memory bandwidth plus a fixed overhead, and a
  request needs ``d_mean`` steps;
* workload: a log-normal input-length pmf truncated to ``[1, J*W)`` and cut into
  ``J`` ranges of width ``W`` (§4.6.3).
"""

from __future__ import annotations

import math

import numpy as np

from planner.inner.problem import FullResolution, InnerProblem, IslandSpec

#: name -> (relative prefill compute, memory bandwidth TB/s per GPU, memory GB per GPU,
#: attention length scale L in tokens: where the quadratic term doubles the cost)
GPU_TYPES: dict[str, tuple[float, float, float, float]] = {
    "B300": (2.5, 8.0, 288.0, 24000.0),
    "H200": (1.0, 4.8, 141.0, 16000.0),
    "H800": (1.0, 3.35, 80.0, 12000.0),
    "H20": (0.15, 4.0, 96.0, 40000.0),
}
WEIGHTS_GB = 700.0  # a 671B-parameter FP8 MoE
ACTIVE_READ_GB = 40.0  # weights read per decode step
KV_MB_PER_TOKEN = 0.07
PREFILL_K = 4000.0
COMM_TOKENS_PER_DOUBLING = 60.0  # tensor-parallel overhead, in token-equivalents
STEP_OVERHEAD_S = 0.02
MAX_BATCH_PER_GPU = 64.0


def random_layout(
    n_islands: int, seed: int, *, types: tuple[str, ...] = tuple(GPU_TYPES),
    sizes: tuple[int, ...] = (8, 16, 32),
) -> tuple[IslandSpec, ...]:
    """``n_islands`` islands of random (type, size), sorted for readability."""
    rng = np.random.default_rng(seed)
    pairs = sorted(
        (str(rng.choice(types)), int(rng.choice(sizes))) for _ in range(n_islands)
    )
    return tuple(_spec(g, n) for g, n in pairs)


def divider_layout(
    inventory: dict[str, int], islands_per_type: dict[str, int], seed: int, *,
    min_size: int = 2, skew_range: float = 5.0,
) -> tuple[IslandSpec, ...]:
    """Layouts like the outer loop's *divider* encoding (seed 002 §4.9.2): each type's
    GPUs are cut into islands of at least ``min_size``; the remainder is spread with
    weights ``k ** skew`` (``skew`` drawn uniformly in ``[-skew_range, skew_range]``), so
    island sizes are mostly distinct.  For benchmarks only; not the outer loop's code."""
    rng = np.random.default_rng(seed)
    out: list[tuple[str, int]] = []
    for gpu, total in inventory.items():
        n = min(islands_per_type[gpu], total // min_size)
        if n <= 0:
            continue
        skew = float(rng.uniform(-skew_range, skew_range))
        w = np.arange(1, n + 1, dtype=float) ** skew
        extra = total - n * min_size
        share = np.floor(extra * w / w.sum()).astype(int)
        share[np.argmax(w)] += extra - share.sum()
        out += [(gpu, min_size + int(e)) for e in share]
    return tuple(_spec(g, n) for g, n in sorted(out))


def _spec(gpu: str, size: int) -> IslandSpec:
    return IslandSpec(gpu, size, prefill_config=f"tp{size}", decode_config=f"tp1·dp{size}",
                      prefill_batch=1, decode_batch=0)


def lognormal_pmf(n_lengths: int, *, median: float = 1500.0, sigma: float = 0.9) -> np.ndarray:
    """p(s) for s = 0..n_lengths-1 (p(0) = 0), log-normal, truncated and normalised."""
    s = np.arange(n_lengths, dtype=float)
    with np.errstate(divide="ignore"):
        logs = np.log(np.maximum(s, 1.0))
    dens = np.exp(-0.5 * ((logs - math.log(median)) / sigma) ** 2) / np.maximum(s, 1.0)
    dens[0] = 0.0
    return dens / dens.sum()


def tables(
    islands: tuple[IslandSpec, ...], lengths: np.ndarray, *, d_mean: float = 200.0,
    d_max: float = 1000.0, noise: np.ndarray | None = None, weights_gb: float = WEIGHTS_GB,
) -> tuple[np.ndarray, np.ndarray]:
    """(prefill_rps, decode_rps), shape ``(I, len(lengths))``, at the given lengths."""
    s = np.maximum(np.asarray(lengths, dtype=float), 1.0)
    f = np.array([GPU_TYPES[i.gpu][0] for i in islands])[:, None]
    bw = np.array([GPU_TYPES[i.gpu][1] for i in islands])[:, None]
    mem = np.array([GPU_TYPES[i.gpu][2] for i in islands])[:, None]
    n = np.array([i.size for i in islands], dtype=float)[:, None]
    free_gb = n * mem - weights_gb
    fits = free_gb > 0
    L = np.array([GPU_TYPES[i.gpu][3] for i in islands])[:, None]
    comm = COMM_TOKENS_PER_DOUBLING * np.log2(n)
    prefill = np.where(fits, n * f * PREFILL_K / (s * (1.0 + s / L) + comm), 0.0)
    batch = np.floor(np.maximum(free_gb, 0) * 1e3 / (KV_MB_PER_TOKEN * (s + d_max)))
    batch = np.minimum(batch - batch % 8, MAX_BATCH_PER_GPU * n)
    kv_read_gb = batch * KV_MB_PER_TOKEN * (s + d_mean / 2) / 1e3
    step = (ACTIVE_READ_GB + kv_read_gb) / (n * bw * 1e3) + STEP_OVERHEAD_S
    decode = np.where(batch >= 8, batch / (step * d_mean), 0.0)
    if noise is not None:
        prefill = prefill * noise[:, None]
        decode = decode * noise[:, None]
    return prefill, decode


def synthetic_problem(
    islands: tuple[IslandSpec, ...],
    n_ranges: int = 64,
    *,
    width: int | None = None,
    seed: int = 0,
    noise: float = 0.0,
    d_mean: float = 200.0,
    max_len: int = 8192,
    weights_gb: float = WEIGHTS_GB,
) -> tuple[InnerProblem, FullResolution]:
    """Range-level problem and full-resolution tables for a layout.

    ``noise`` > 0 multiplies each island's tables by a seeded factor in
    ``[1 - noise, 1 + noise]`` (so identical islands become distinct).
    """
    W = width if width is not None else max(1, max_len // n_ranges)
    S = n_ranges * W
    pmf = lognormal_pmf(S)
    start = np.arange(n_ranges) * W
    end = start + W
    mid = start + W // 2
    p = pmf.reshape(n_ranges, W).sum(axis=1)
    lens = np.arange(S, dtype=float)
    mean_in = (pmf * lens).reshape(n_ranges, W).sum(axis=1) / np.where(p > 0, p, 1.0)
    rng = np.random.default_rng(seed)
    fac = 1.0 + noise * rng.uniform(-1.0, 1.0, len(islands)) if noise > 0 else None
    bp, bd = tables(islands, mid, d_mean=d_mean, noise=fac, weights_gb=weights_gb)
    fp, fd = tables(islands, lens, d_mean=d_mean, noise=fac, weights_gb=weights_gb)
    problem = InnerProblem(
        islands=islands, range_prob=p, range_start=start, range_end=end, range_mid=mid,
        prefill_rps=bp, decode_rps=bd, mean_input_tokens=np.where(p > 0, mean_in, mid),
        decode_mean=d_mean,
    )
    return problem, FullResolution(pmf=pmf, prefill_rps=fp, decode_rps=fd)


def problem_from_tables(
    prefill: np.ndarray, decode: np.ndarray, prob: np.ndarray, *, width: int = 1,
    islands: tuple[IslandSpec, ...] | None = None, decode_mean: float = 100.0,
) -> InnerProblem:
    """An :class:`InnerProblem` straight from ``(I, J)`` tables and ``p`` (small hand-made
    cases): ranges ``[j*width, (j+1)*width)``, islands ``X0, X1, ...`` of size 1."""
    prefill = np.asarray(prefill, dtype=float)
    decode = np.asarray(decode, dtype=float)
    n_i, n_j = prefill.shape
    start = np.arange(n_j) * width
    if islands is None:
        islands = tuple(IslandSpec(f"X{i}", 1) for i in range(n_i))
    return InnerProblem(
        islands=islands, range_prob=np.asarray(prob, dtype=float), range_start=start,
        range_end=start + width, range_mid=start + width // 2, prefill_rps=prefill,
        decode_rps=decode, decode_mean=decode_mean,
    )

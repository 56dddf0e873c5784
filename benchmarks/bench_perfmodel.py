"""Time to build one island's full benchmark table (prefill + decode) over 8,192 input
lengths for all its parallel configurations (issue 2 goal: <= 10 ms on 2 cores).

    .venv/bin/python benchmarks/bench_perfmodel.py [--gpu H200] [--gpus 64] [--model deepseek-v3]

Prints the median over repeated cold builds (the island cache is cleared each time).
"""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import argparse
import statistics
import time

import numpy as np

from perfmodel import WorkloadShape, benchmark_island, enumerate_configs, get_gpu, get_model
from perfmodel.island import clear_cache


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", default="H200")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--model", default="deepseek-v3")
    ap.add_argument("--lengths", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    gpu, model = get_gpu(args.gpu), get_model(args.model)
    s = np.arange(args.lengths + 1, dtype=float)
    pmf = np.exp(-0.5 * ((s - 500) / 2000) ** 2)
    pmf[0] = 0
    shape = WorkloadShape(pmf / pmf.sum(), 100.0, 1000)
    times = []
    for _ in range(args.repeat):
        clear_cache()
        t0 = time.perf_counter()
        benchmark_island(gpu, args.gpus, model, shape)
        times.append(time.perf_counter() - t0)
    n_cfg = len(enumerate_configs(args.gpus, model))
    print(f"island {args.gpus}x{args.gpu} {args.model}: {n_cfg} configurations x "
          f"{args.lengths} lengths, both phases")
    print(f"median build time: {statistics.median(times) * 1e3:.2f} ms "
          f"(min {min(times) * 1e3:.2f} ms, {args.repeat} runs)")


if __name__ == "__main__":
    main()

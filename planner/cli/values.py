"""Bounds of the CLI's numeric flags, checked before any work.

Every flag goes through the one number check (:func:`perfmodel.errors.check_number`):
finite, whole where it must be, and within bounds derived from what the planner can
use -- so ``--budget inf``, ``--seed -5`` or ``--gpus 1000000000`` is one line naming
the flag and the bound, exit 2, instead of an overflow, a hang or gigabytes of tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer

from perfmodel.engines import EngineLimits
from perfmodel.errors import at, check_number
from planner.core.defaults import (
    MAX_ISLAND_GPUS,
    MAX_LATENCY_MS,
    MAX_PLAN_LEN,
    MAX_RANGES,
    MAX_SIM_REQUESTS,
    MAX_TIME_LIMIT,
)
from planner.core.errors import PlannerError
from planner.fleet.inventory import MAX_BUDGET
from planner.sim.arrivals import MAX_RATE

T = TypeVar("T")

#: Seeds feed NumPy, SciPy's Sobol sampler and torch; 2**32 - 1 suits all three.
MAX_SEED = 2**32 - 1
#: BO settings: q candidates per batch and batches.  The GP is refitted on every point
#: so far (cubic in their number): 64 x 64 = 4,096 points is already hours.
MAX_BATCH_SIZE, MAX_ITERATIONS = 64, 64


def number(value: Any, flag: str, *, integer: bool = False, gt: float | None = None,
           ge: float | None = None, le: float | None = None) -> Any:
    """``value`` of ``flag`` checked (None passes: an unset optional flag)."""
    if value is None:
        return None
    return check_number(value, at(flag), integer=integer, gt=gt, ge=ge, le=le)


def seed(value: int, flag: str = "--seed") -> int:
    return number(value, flag, integer=True, ge=0, le=MAX_SEED)


def length(value: int | None, flag: str) -> int | None:
    """A token count: 1 .. MAX_PLAN_LEN (the longest prompt the planner plans)."""
    return number(value, flag, integer=True, ge=1, le=MAX_PLAN_LEN)




def workers_option(work: str) -> Any:
    """``--workers``: ``work`` (what runs side by side) on a local Ray."""
    return typer.Option(None, help=f"{work} on a local Ray with this many workers (the ray "
                        "extra: pip install -e '.[ray]'); the results are the serial ones.",
                        show_default="1: in this process")


def max_running_option() -> Any:
    return typer.Option(None, "--max-running", help="Most requests one engine scheduler "
                        "(attention group) runs at once: vLLM --max-num-seqs, SGLang "
                        "--max-running-requests per DP rank, TRT-LLM --max_batch_size.",
                        show_default="the engine's; docs/perfmodel.md")


def max_tokens_option() -> Any:
    return typer.Option(None, "--max-tokens", help="Most tokens per engine iteration "
                        "(vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, "
                        "TRT-LLM --max_num_tokens).", show_default="the engine's: 8192")


def mem_fraction_option() -> Any:
    return typer.Option(None, "--mem-fraction", help="The engine's memory fraction, in "
                        "(0, 1]: vLLM --gpu-memory-utilization, SGLang "
                        "--mem-fraction-static, TRT-LLM free_gpu_memory_fraction.",
                        show_default="the engine's")


def engine_limits(max_running: Any, max_tokens: Any, mem_fraction: Any) -> EngineLimits:
    """The run's engine-limit overrides, each checked against what the engine accepts
    (one line naming the flag, exit 2)."""
    return EngineLimits(max_running, max_tokens, mem_fraction).checked()


def ray_address_option() -> Any:
    return typer.Option(None, "--ray-address", help="The same on this existing Ray "
                        "cluster (also: RAY_ADDRESS).", show_default="none")


def naming(where: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, with a :class:`PlannerError` it raises prefixed by
    ``where`` (a flag, or a file) unless the message names it already: "unknown engine
    'x'" becomes "--engine: unknown engine 'x'"."""
    try:
        return fn(*args, **kwargs)
    except PlannerError as err:
        if where in str(err):
            raise
        raise PlannerError(f"{where}: {err}", exit_code=err.exit_code) from None


__all__ = ["MAX_BATCH_SIZE", "MAX_BUDGET", "MAX_ISLAND_GPUS", "MAX_ITERATIONS",
           "MAX_LATENCY_MS", "MAX_PLAN_LEN", "MAX_RANGES", "MAX_RATE", "MAX_SEED",
           "MAX_SIM_REQUESTS", "MAX_TIME_LIMIT", "length", "naming", "number",
           "ray_address_option", "seed", "workers_option"]

"""Reading, checking and writing ``plan.json`` (docs/plan-schema.md).

The report renders only from the plan dict, so that ``planner report RUN_DIR`` can
redraw a run without re-solving.  :func:`check_plan` verifies what the renderers rely
on — the schema version, the sections, and that every per-range array has ``J``
entries and every per-length array ``S`` — so that a hand-edited or truncated
``plan.json`` fails with one line naming the file and the field, never a traceback
from deep inside a plot.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfmodel.errors import check_number
from perfmodel.parallel import ParallelConfig
from perfmodel.reading import read_json
from planner.core.defaults import MAX_HISTORY, MAX_PLAN_LEN, MAX_RANGES
from planner.core.errors import PlannerError
from planner.fleet.inventory import inventory_from_dict
from planner.inner.registry import needs_context
from planner.outer.protocol import parse_layout_text

SCHEMA_VERSION = 1
SUPPORTED_VERSIONS = (1,)

_SECTIONS = ("request", "summary", "islands", "ranges", "per_range", "per_length",
             "search", "baselines")
_RANGE_KEYS = ("start", "end", "mid", "prob")
_PER_RANGE_KEYS = ("prefill_rps", "decode_rps")
_PER_LENGTH_KEYS = ("length", "pmf", "model_prefill", "eval_prefill", "model_decode",
                    "eval_decode")
_ISLAND_KEYS = ("gpu", "size", "role", "config", "batch", "shares")
_ROLES = ("prefill", "decode", "both", "idle")
#: No rate, length, share or cost of a plan comes near this; beyond it a figure is a
#: corrupted file (and would break every plot's axis).
MAX_FIGURE = 1e15
#: No island is larger than an inventory can list of one type (planner.fleet.inventory).
MAX_ISLAND = 1_000_000


def _fail(source: str, field: str, problem: str) -> PlannerError:
    return PlannerError(f"{source}: field '{field}' {problem}")


def _check_slo_exempt(exempt: Any, source: str) -> None:
    """``summary.slo_exempt`` (optional): {share in [0, 1], lengths [lo, hi], reason}."""
    if exempt is None:
        return
    where = "summary.slo_exempt"
    if not isinstance(exempt, Mapping):
        raise _fail(source, where, "must be an object or null")
    check_number(exempt.get("share"), _at(source, f"{where}.share"), ge=0, le=1)
    lengths = exempt.get("lengths")
    if not isinstance(lengths, list) or len(lengths) != 2:
        raise _fail(source, f"{where}.lengths", "must be [shortest, longest]")
    for k, n in enumerate(lengths):
        check_number(n, _at(source, f"{where}.lengths[{k}]"), integer=True, ge=0,
                     le=MAX_FIGURE)
    if lengths[0] > lengths[1]:
        raise _fail(source, f"{where}.lengths", "must be [shortest, longest]")
    if not isinstance(exempt.get("reason", ""), str):
        raise _fail(source, f"{where}.reason", "must be text")


def _array(d: Mapping[str, Any], key: str, where: str, source: str) -> list:
    if key not in d:
        raise _fail(source, f"{where}.{key}", "is missing")
    value = d[key]
    if not isinstance(value, list):
        raise _fail(source, f"{where}.{key}", f"must be a list, got {type(value).__name__}")
    for k, x in enumerate(value):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int | float)):
            raise _fail(source, f"{where}.{key}[{k}]", f"must be a number, got {x!r}")
        if x is not None and not abs(x) <= MAX_FIGURE:
            raise _fail(source, f"{where}.{key}[{k}]", f"is implausibly large: {x!r}")
    return value


def _section(plan: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = plan.get(key)
    if not isinstance(value, Mapping):
        raise _fail(source, key, "is missing" if value is None else "must be an object")
    return value


def check_plan(plan: Any, source: str = "plan.json") -> None:
    """Raise :class:`PlannerError` naming ``source`` and the field if ``plan`` does not
    follow schema version 1 closely enough to render."""
    if not isinstance(plan, Mapping):
        raise PlannerError(f"{source}: must hold a JSON object, got {type(plan).__name__}")
    if "schema_version" not in plan:
        raise _fail(source, "schema_version", "is missing (not a planner plan.json?)")
    version = plan["schema_version"]
    if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
        raise _fail(source, "schema_version",
                    f"is {version!r}; this planner reads version "
                    f"{', '.join(map(str, SUPPORTED_VERSIONS))}")
    for key in _SECTIONS:
        if key == "islands":
            if not isinstance(plan.get(key), list):
                raise _fail(source, key, "must be a list")
        else:
            _section(plan, key, source)
    ranges = plan["ranges"]
    J = len(_array(ranges, "start", "ranges", source))
    if J > MAX_RANGES:  # a plan has at most --ranges ranges (each list below has J)
        raise _fail(source, "ranges.start", f"lists {J:,} ranges; a plan has at most "
                    f"{MAX_RANGES:,}")
    for key in _RANGE_KEYS:
        if len(_array(ranges, key, "ranges", source)) != J:
            raise _fail(source, f"ranges.{key}", f"must have {J} entries like ranges.start")
    for key in _PER_RANGE_KEYS:
        if len(_array(plan["per_range"], key, "per_range", source)) != J:
            raise _fail(source, f"per_range.{key}", f"must have {J} entries (one per range)")
    S = len(_array(plan["per_length"], "length", "per_length", source))
    if S > MAX_PLAN_LEN + 1:
        raise _fail(source, "per_length.length", f"lists {S:,} lengths; a plan covers at "
                    f"most {MAX_PLAN_LEN:,}")
    for key in _PER_LENGTH_KEYS:
        if len(_array(plan["per_length"], key, "per_length", source)) != S:
            raise _fail(source, f"per_length.{key}",
                        f"must have {S} entries like per_length.length")
    inv = _section(plan["request"], "inventory", source)
    if not isinstance(inv.get("gpus"), list):
        raise _fail(source, "request.inventory.gpus", "must be a list")
    inventory = inventory_from_dict(dict(inv), f"{source}: request.inventory")  # one line
    known_gpus = {str(g.get("type")).lower() for g in inv["gpus"] if isinstance(g, Mapping)}
    request = plan["request"]
    for key in ("model", "workload", "search", "inner", "engine", "objective", "colocated"):
        if request.get(key) is not None and not isinstance(request[key], str):
            raise _fail(source, f"request.{key}", f"must be a name, got {request[key]!r}")
    for key in ("budget", "target_rps"):
        if request.get(key) is not None:
            check_number(request[key], _at(source, f"request.{key}"), gt=0, le=MAX_FIGURE)
    for key in ("seed", "ranges"):
        if request.get(key) is not None:
            check_number(request[key], _at(source, f"request.{key}"), integer=True, ge=0,
                         le=2**32)
    pipeline = needs_context(str(request.get("inner")))
    total = sum(e.count for e in inventory.entries)
    if len(plan["islands"]) > total:  # every island, idle or not, has a GPU
        raise _fail(source, "islands", f"lists {len(plan['islands']):,} islands; the plan's "
                    f"inventory has {total:,} GPUs")
    for i, isl in enumerate(plan["islands"]):
        where = f"islands[{i}]"
        if not isinstance(isl, Mapping):
            raise _fail(source, where, "must be an object")
        for key in _ISLAND_KEYS:
            if key not in isl:
                raise _fail(source, f"{where}.{key}", "is missing")
        if isl["role"] not in _ROLES:
            raise _fail(source, f"{where}.role", f"must be one of {_ROLES}, got {isl['role']!r}")
        shares = _array(isl, "shares", where, source)
        if len(shares) != J:
            raise _fail(source, f"{where}.shares", f"must have {J} entries (one per range)")
        if any(x is not None and not -1e-9 <= x <= 1 + 1e-6 for x in shares):
            raise _fail(source, f"{where}.shares", "must be shares of time in [0, 1]")
        _check_island(isl, where, source, known_gpus, pipeline)
    _check_servers(plan.get("servers"), plan["islands"], source)
    summary = plan["summary"]
    for key in ("requests_per_s", "cost_per_hour", "gpus_used"):
        if key not in summary:
            raise _fail(source, f"summary.{key}", "is missing")
    for key in ("requests_per_s", "cost_per_hour"):
        check_number(summary[key], _at(source, f"summary.{key}"), ge=0, le=MAX_FIGURE)
    _check_consistent(plan, source, J, pipeline)
    for key in ("tool", "timings_s"):
        if plan.get(key) is not None and not isinstance(plan[key], Mapping):
            raise _fail(source, key, "must be an object")
    if not isinstance(plan["search"].get("settings") or {}, Mapping):
        raise _fail(source, "search.settings", "must be an object")
    for key in ("exact", "best_homogeneous", "closed_loop", "latency_ms", "network"):
        if summary.get(key) is not None and not isinstance(summary[key], Mapping):
            raise _fail(source, f"summary.{key}", "must be an object or null")
    _check_slo_exempt(summary.get("slo_exempt"), source)
    for tier, load in (summary.get("network") or {}).items():  # KV traffic per tier
        where = f"summary.network.{tier}"
        if not isinstance(load, Mapping):
            raise _fail(source, where, "must be an object")
        for key in ("bytes_per_s", "peak_utilisation"):
            if load.get(key) is not None:
                check_number(load[key], _at(source, f"{where}.{key}"), ge=0, le=MAX_FIGURE)
    for key in ("gpus_used", "gpus_available"):
        counts = summary.get(key, {})
        if not isinstance(counts, Mapping):
            raise _fail(source, f"summary.{key}", "must map GPU types to counts")
        for gpu, n in counts.items():
            check_number(n, _at(source, f"summary.{key}.{gpu}"), integer=True, ge=0)
    band = summary.get("capacity_band")
    per_island = band.get("islands", []) if isinstance(band, Mapping) else None
    if band is not None and not (isinstance(per_island, list)
                                 and len(per_island) <= len(plan["islands"])):
        raise _fail(source, "summary.capacity_band", "must be an object whose 'islands' "
                    "list has at most one entry per island")
    history = plan["search"].get("history")
    if not isinstance(history, list):
        raise _fail(source, "search.history", "must be a list")
    if len(history) > MAX_HISTORY:
        raise _fail(source, "search.history", f"lists {len(history):,} evaluations; a "
                    f"search records at most {MAX_HISTORY:,}")
    for k, h in enumerate(history):
        if not isinstance(h, Mapping) or "index" not in h or "best" not in h:
            raise _fail(source, f"search.history[{k}]", "must have 'index' and 'best'")
        _check_layout(h.get("layout"), f"search.history[{k}].layout", source, total)
    _check_layout(plan["search"].get("best_layout"), "search.best_layout", source, total)
    base = plan["baselines"]
    homogeneous = base.get("homogeneous") or []
    if not isinstance(homogeneous, list):
        raise _fail(source, "baselines.homogeneous", "must be a list")
    for k, b in enumerate([*homogeneous, base.get("exact")]):
        where = f"baselines.homogeneous[{k}]" if k < len(homogeneous) else "baselines.exact"
        if b is None and where == "baselines.exact":
            continue
        if not isinstance(b, Mapping):
            raise _fail(source, where, "must be an object")
        _check_layout(b.get("layout"), f"{where}.layout", source, total)
    slo = plan["request"].get("slo") or {}
    if not isinstance(slo, Mapping):
        raise _fail(source, "request.slo", "must be an object")
    for key in ("ttft_ms", "tpot_ms"):
        if slo.get(key) is not None:
            check_number(slo[key], _at(source, f"request.slo.{key}"), gt=0)


def _check_consistent(plan: Mapping[str, Any], source: str, n_ranges: int,
                      pipeline: bool) -> None:
    """The fields against each other, as the planner writes them: the islands within
    the inventory's counts; ranges ordered; a plan that serves requests has islands of
    both phases (or colocated ones) with time on some range; the model and the
    workload still resolve (a report of a plan for a model it cannot name is not a
    report)."""
    from perfmodel.models import get_model

    counts = {str(g["type"]).lower(): g.get("count") for g in plan["request"]["inventory"]["gpus"]
              if isinstance(g, Mapping)}
    used: dict[str, int] = {}
    live = [isl for isl in plan["islands"] if isl["role"] != "idle"]
    for isl in live:
        key = str(isl["gpu"]).lower()
        used[key] = used.get(key, 0) + int(isl["size"])
    for gpu, n in used.items():
        have = counts.get(gpu)
        if isinstance(have, int) and n > have:
            raise _fail(source, "islands", f"use {n} {gpu} GPUs; the plan's inventory lists "
                        f"{have}")
    start, end = plan["ranges"]["start"], plan["ranges"]["end"]
    for j in range(n_ranges):
        if start[j] is None or end[j] is None or end[j] < start[j] or (
                j and start[j] < end[j - 1]):
            raise _fail(source, f"ranges.start[{j}]", "ranges must be ordered and each end "
                        "at or after its start")
    rate = float(plan["summary"]["requests_per_s"])
    if rate > 0 and not pipeline:
        roles = {isl["role"] for isl in live}
        if not ({"prefill", "decode"} <= roles or "both" in roles):
            raise _fail(source, "islands", f"serve {rate:g} requests/s with roles "
                        f"{sorted(roles) or 'none'}: a plan needs prefill and decode "
                        "islands, or colocated ones")
        if not any(x for isl in live for x in isl["shares"] if x):
            raise _fail(source, "islands", "no island has time on any range (every share "
                        f"is 0) yet summary.requests_per_s is {rate:g}")
    model = plan["request"].get("model")
    if isinstance(model, str):
        try:
            get_model(model)
        except PlannerError as err:
            raise _fail(source, "request.model", f"does not resolve ({err})") from None


def _at(source: str, field: str):
    return lambda problem: _fail(source, field, problem)


def _check_layout(layout: Any, field: str, source: str, gpus: int) -> None:
    """A layout as plan.json writes it: ``[[type, size], ...]`` or its compact text
    (``H20:2*3+8;H200:32``), or nothing; at most one island per GPU of the plan's
    inventory (``gpus``)."""
    if layout is None or layout == []:
        return
    if isinstance(layout, str):
        try:
            parse_layout_text(layout, max_islands=gpus)
        except ValueError as err:
            raise _fail(source, field, f"is not a layout ({err})") from None
        return
    if not isinstance(layout, list):
        raise _fail(source, field, "must be a list of [GPU type, size] pairs")
    if len(layout) > gpus:
        raise _fail(source, field, f"lists {len(layout):,} islands; the plan's inventory "
                    f"has {gpus:,} GPUs")
    for k, item in enumerate(layout):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and item[0]):
            raise _fail(source, f"{field}[{k}]", "must be a [GPU type, size] pair")
        check_number(item[1], _at(source, f"{field}[{k}][1]"), integer=True, ge=1,
                     le=MAX_ISLAND)


def _check_servers(servers: Any, islands: list[Mapping[str, Any]], source: str) -> None:
    """The plan's servers (server granularity; absent in older plans and at GPU
    granularity): index, GPU type, GPUs, GPUs used and the islands on each -- checked
    against the islands as the planner writes them: servers numbered in order, each of
    one GPU type holding no more GPUs than it has, and every island on servers of its
    own type that exist, no more of them than its GPUs."""
    if servers is None:
        return
    if not isinstance(servers, list):
        raise _fail(source, "servers", "must be a list")
    gpus = sum(int(isl["size"]) for isl in islands)
    if len(servers) > max(gpus, 1):  # a listed server holds some island's GPU
        raise _fail(source, "servers", f"lists {len(servers):,} servers for the islands' "
                    f"{gpus:,} GPUs")
    for k, srv in enumerate(servers):
        where = f"servers[{k}]"
        if not isinstance(srv, Mapping):
            raise _fail(source, where, "must be an object")
        for key in ("index", "gpus", "gpus_used"):
            check_number(srv.get(key), _at(source, f"{where}.{key}"), integer=True, ge=0,
                         le=MAX_ISLAND * 1_000_000)
        if srv["index"] != k:
            raise _fail(source, f"{where}.index", f"is {srv['index']}; servers are "
                        "numbered in order from 0")
        if srv["gpus_used"] > srv["gpus"]:
            raise _fail(source, f"{where}.gpus_used", f"is {srv['gpus_used']}, more than "
                        f"the server's {srv['gpus']} GPUs")
        if not isinstance(srv.get("gpu"), str):
            raise _fail(source, f"{where}.gpu", "must be a GPU name")
        on = srv.get("islands")
        if not isinstance(on, list) or not _indices(on, len(islands)):
            raise _fail(source, f"{where}.islands", f"must be distinct island indices "
                        f"below {len(islands)}")
    for i, isl in enumerate(islands):
        on = isl.get("servers")
        if on is None:
            continue
        where = f"islands[{i}].servers"
        if not _indices(on, len(servers)) or len(on) > int(isl["size"]):
            raise _fail(source, where, f"must be at most {isl['size']} distinct server "
                        f"indices below {len(servers)}")
        other = next((s for s in on if servers[s]["gpu"].lower() != isl["gpu"].lower()), None)
        if other is not None:
            raise _fail(source, where, f"names server {other}, a {servers[other]['gpu']} "
                        f"server, for a {isl['gpu']} island: a server has one GPU type")


def _indices(values: list[Any], n: int) -> bool:
    """Whether ``values`` are distinct whole numbers in ``[0, n)``."""
    ok = all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < n for v in values)
    return ok and len(set(values)) == len(values)


def _check_island(isl: Mapping[str, Any], where: str, source: str, known: set[str],
                  pipeline: bool) -> None:
    """An island's values: a GPU of the plan's inventory (or the catalog), a whole
    positive size, and -- unless idle -- a whole positive batch and a parallel
    configuration of that size (a pipeline plan's islands describe their blocks
    instead)."""
    gpu = isl["gpu"]
    if not isinstance(gpu, str) or not gpu:
        raise _fail(source, f"{where}.gpu", f"must be a GPU name, got {gpu!r}")
    if gpu.lower() not in known:
        raise _fail(source, f"{where}.gpu", f"names {gpu!r}, which the plan's inventory "
                    "(request.inventory.gpus) does not list")
    size = check_number(isl["size"], _at(source, f"{where}.size"), integer=True, ge=1,
                        le=MAX_ISLAND)
    if isl.get("servers") is not None:
        if not isinstance(isl["servers"], list) or not isl["servers"]:
            raise _fail(source, f"{where}.servers", "must be a non-empty list of server "
                        "indices")
        for k, v in enumerate(isl["servers"]):
            check_number(v, _at(source, f"{where}.servers[{k}]"), integer=True, ge=0,
                         le=MAX_ISLAND * 1_000_000)
    if isl["role"] == "idle":
        return
    check_number(isl["batch"], _at(source, f"{where}.batch"), integer=True, ge=1,
                 le=MAX_ISLAND * 1_000_000)
    if pipeline:
        return
    try:
        cfg = ParallelConfig.from_label(isl["config"])
    except ValueError as err:
        raise _fail(source, f"{where}.config", str(err)) from None
    if cfg.tp * cfg.dp != size:
        raise _fail(source, f"{where}.config", f"{isl['config']!r} needs tp x dp = the "
                    f"island's size {size}")


def json_safe(x: Any) -> Any:
    """NaN and infinities become null: strict JSON, readable by any tool."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_safe(v) for v in x]
    if hasattr(x, "tolist") and callable(x.tolist):  # numpy arrays and scalars
        return json_safe(x.tolist())
    return x


def dumps_plan(plan: Mapping[str, Any]) -> str:
    """Strict JSON text of the plan (non-finite numbers as null), newline-terminated."""
    return json.dumps(json_safe(plan), indent=1, allow_nan=False) + "\n"


def load_plan(path: Path) -> dict[str, Any]:
    """Read and check ``path``; every problem is a one-line :class:`PlannerError`."""
    if not Path(path).exists():
        raise PlannerError(f"{path}: not found (is this a run folder of `planner plan`?)")
    plan = read_json(path, "plan.json")
    check_plan(plan, str(path))
    return plan

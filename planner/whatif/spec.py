"""The what-if spec: a YAML file and/or CLI flags -> a validated :class:`WhatIfSpec`.

Format (docs/whatif.md has the full description and docs/whatif-example.yaml an
example)::

    inventory: ../inventories/gpus.yaml   # path (relative to this file) or an inline mapping
    model: deepseek-v3
    workload: azure-conv-2023              # the base workload
    budget: 512                            # base $/h (default: the inventory's full cost)
    availability: inventory                # or "unlimited" (market availability)
    ranges: 32                             # planner plan's default
    slo: {ttft_ms: 2000, tpot_ms: 50}      # planner plan's default; "none": no ceilings
    seed: 0                                # planner plan's --seed (the closed loop's)
    island_granularity: server             # planner plan's --island-granularity
    closed_loop: auto                      # auto | every | sample | off, or
                                           # {mode: sample, sample: 6}
    solver: {time_limit: 600, mip_gap: 1.0e-4, prune_tol: 0.005}   # planner plan's
    studies:
      budget_sweep: [128, 256, 512, 1024, 2048]
      prices: {H200: [0.8x, 1.0x, 1.2x], H20: [0.8, 1.2]}   # factors ("x") or $/GPU-h
      add: [{type: B200, count: 32, price_per_hour: 6.0}]   # catalog name or datasheet
      remove: [H800]
      workloads: [azure-code-2023, {mix: [azure-conv-2023, azure-code-2023], share: [0.5]}]
      equal_cost: true
      marginal: 100
      marginal_beyond_inventory: false     # true: the marginal study may buy more GPUs
                                           # of a type than the inventory lists

Flags override the file field by field.  Every mistake is one :class:`PlannerError`
line naming the file (or flag) and the dotted field, raised before anything is solved
or written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfmodel import SLO, get_model
from perfmodel.engines import DEFAULT_ENGINE, get_engine
from perfmodel.launch import engine_flag_error, fleet_engine
from planner.context.request import PlanRequest
from planner.core.defaults import (
    DEFAULT_MODEL,
    DEFAULT_SLO,
    DEFAULT_WORKLOAD,
    MAX_BUDGETS,
    MAX_ISLAND_GPUS,
    MAX_LATENCY_MS,
    MAX_RANGES,
    MAX_SCENARIOS,
    MAX_TIME_LIMIT,
    MAX_WORKLOADS,
)
from planner.core.errors import PlannerError
from planner.fleet.inventory import (
    MAX_TYPES,
    Inventory,
    InventoryEntry,
    inventory_from_dict,
    load_inventory,
)
from planner.whatif.values import (
    CLOSED_LOOP_MODES,
    DEFAULT_MAX_ISLAND,
    ClosedLoopOptions,
    PriceSweep,
    SolverOptions,
    WorkloadMix,
    add_entry,
    budget_value,
    parse_add_flag,
    parse_budgets,
    plan_default,
    positive,
    price_value,
    read_yaml,
    workload_items,
    workload_label,
    workload_ref,
)
from planner.workload.fields import Loc

#: A relative MIP gap of 1 or more accepts any feasible plan as optimal.
MAX_MIP_GAP = 0.5
#: Scenarios per workload a sample may close (more is the ``every`` mode).
MAX_SAMPLE = 1000
#: ``planner plan --seed``'s bound (planner.cli.values.MAX_SEED; numpy's seed range).
MAX_SEED = 2**32 - 1

__all__ = ["AVAILABILITY", "DEFAULT_MAX_ISLAND", "DEFAULT_RANGES", "ClosedLoopOptions",
           "Flags", "PriceSweep", "SolverOptions", "WhatIfSpec", "WorkloadMix", "load_spec"]

AVAILABILITY = ("inventory", "unlimited")
GRANULARITIES = ("server", "gpu")
#: ``planner plan``'s: every scenario is planned as ``planner plan`` plans it.
DEFAULT_RANGES: int = plan_default(PlanRequest, "ranges")
DEFAULT_INVENTORY = Path(__file__).resolve().parents[2] / "inventories" / "gpus.yaml"
#: ``slo: none`` (``--no-slo``): no latency ceilings, as ``planner plan --no-slo``.
NO_SLO = "none"

_TOP = {"inventory", "model", "workload", "budget", "availability", "ranges", "slo",
        "solver", "studies", "engine", "seed", "island_granularity", "closed_loop"}
_STUDIES = {"budget_sweep", "prices", "add", "remove", "workloads", "equal_cost", "marginal",
            "marginal_beyond_inventory"}
_SOLVER = {"time_limit", "mip_gap", "prune_tol", "max_island"}


@dataclass(frozen=True)
class WhatIfSpec:
    source: str  # the spec file, or "flags"
    inventory: Inventory
    model: str = DEFAULT_MODEL
    workload: str = DEFAULT_WORKLOAD
    budget: float | None = None
    availability: str = "inventory"
    ranges: int = DEFAULT_RANGES
    slo: SLO = DEFAULT_SLO
    solver: SolverOptions = SolverOptions()
    budget_sweep: tuple[float, ...] = ()
    prices: tuple[PriceSweep, ...] = ()
    add: tuple[InventoryEntry, ...] = ()
    remove: tuple[str, ...] = ()
    workloads: tuple[WorkloadMix, ...] = ()
    equal_cost: bool = False
    marginal: float | None = None
    engine: str = DEFAULT_ENGINE
    # under "inventory" availability, may the marginal study offer more GPUs of a type
    # than the inventory lists?  (Only when the spec says so: planner.whatif.marginal.)
    marginal_beyond_inventory: bool = False
    seed: int = 0  # planner plan's --seed: the closed loop's simulations
    island_granularity: str = "server"  # planner plan's --island-granularity
    closed_loop: ClosedLoopOptions = ClosedLoopOptions()

    @property
    def base_budget(self) -> float:
        """$/h of the base scenario: the given budget, else the inventory's full cost."""
        return self.budget if self.budget is not None else self.inventory.total_cost

    @property
    def has_study(self) -> bool:
        return bool(self.budget_sweep or self.prices or self.add or self.remove
                    or self.workloads or self.equal_cost or self.marginal)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "inventory": self.inventory.to_dict(), "model": self.model,
            "workload": self.workload, "engine": self.engine, "budget": self.budget,
            "base_budget": self.base_budget,
            "availability": self.availability, "ranges": self.ranges,
            "slo": {"ttft_ms": self.slo.ttft_ms, "tpot_ms": self.slo.tpot_ms},
            "seed": self.seed, "island_granularity": self.island_granularity,
            "closed_loop": vars(self.closed_loop).copy(),
            "solver": vars(self.solver).copy(),
            "studies": {
                "budget_sweep": list(self.budget_sweep),
                "prices": {p.gpu: {"prices": list(p.prices), "factors": list(p.factors)}
                           for p in self.prices},
                "add": [{"type": e.name, "count": e.count, "price_per_hour": e.price_per_hour,
                         "min_island": e.min_island} for e in self.add],
                "remove": list(self.remove),
                "workloads": [{"label": w.label, "components": [list(c) for c in w.components]}
                              for w in self.workloads],
                "equal_cost": self.equal_cost, "marginal": self.marginal,
                "marginal_beyond_inventory": self.marginal_beyond_inventory}}


@dataclass
class Flags:
    """CLI values; ``None`` / empty means "not given" (the file's value or the default)."""

    inventory: Path | None = None
    model: str | None = None
    workload: str | None = None
    budget: float | None = None
    availability: str | None = None
    ranges: int | None = None
    budget_sweep: str | None = None
    price: list[str] = field(default_factory=list)
    add: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    workloads: str | None = None
    equal_cost: bool | None = None
    marginal: float | None = None
    marginal_beyond_inventory: bool | None = None
    time_limit: float | None = None
    max_island: int | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    no_slo: bool | None = None
    engine: str | None = None
    seed: int | None = None
    island_granularity: str | None = None
    closed_loop: str | None = None
    sample: int | None = None


def _inventory(value: Any, loc: Loc, base_dir: Path) -> Inventory:
    if isinstance(value, Mapping):
        return inventory_from_dict(dict(value), f"{loc.source}: field '{loc.path}'")
    if not isinstance(value, str) or not value.strip():
        raise loc.error(f"expected an inventory file path or mapping, got {value!r}")
    p = Path(value)
    if not p.is_absolute():
        p = base_dir / p
    if not p.is_file():
        raise loc.error(f"inventory file '{value}' does not exist (paths are relative to "
                        "the spec file)")
    return load_inventory(p)


def _pick(flag_value: Any, flag: str, data: Mapping[str, Any], key: str, loc: Loc,
          default: Any) -> tuple[Any, Loc]:
    """The flag's value if given, else the file's, else the default -- with where it
    came from, for the error message."""
    if flag_value is not None:
        return flag_value, Loc(flag)
    value = data.get(key)
    return (default if value is None else value), loc.child(key)


def _solver(data: Mapping[str, Any], root: Loc, flags: Flags) -> SolverOptions:
    sv = root.child("solver")
    sd = sv.mapping(data.get("solver") or {})
    sv.only_keys(sd, _SOLVER)
    d = SolverOptions()
    limit, at = _pick(flags.time_limit, "--time-limit", sd, "time_limit", sv, d.time_limit)
    cap, cap_at = _pick(flags.max_island, "--max-island", sd, "max_island", sv, d.max_island)
    out = SolverOptions(
        time_limit=positive(limit, at, le=MAX_TIME_LIMIT),
        mip_gap=positive(sd.get("mip_gap", d.mip_gap), sv.child("mip_gap"), zero=True,
                         le=MAX_MIP_GAP),
        prune_tol=positive(sd.get("prune_tol", d.prune_tol), sv.child("prune_tol"), zero=True),
        max_island=None if cap is None else
        int(positive(cap, cap_at, integer=True, le=MAX_ISLAND_GPUS)))
    if out.prune_tol >= 0.5:
        raise sv.child("prune_tol").error(f"must be below 0.5, got {out.prune_tol:g}")
    return out


def _slo(data: Mapping[str, Any], root: Loc, flags: Flags) -> SLO:
    """``planner plan``'s SLO: its default ceilings, each overridden by the spec's
    ``slo.ttft_ms`` / ``slo.tpot_ms`` or ``--ttft`` / ``--tpot``; ``slo: none`` (or
    ``--no-slo``) is no ceiling at all (``planner plan --no-slo``)."""
    loc = root.child("slo")
    raw = data.get("slo")
    if isinstance(raw, str) and raw.strip().lower() != NO_SLO:
        raise loc.error(f"expected {{ttft_ms, tpot_ms}} or '{NO_SLO}', got {raw!r}")
    none = flags.no_slo if flags.no_slo is not None else isinstance(raw, str)
    if none:
        if flags.ttft_ms is not None or flags.tpot_ms is not None:
            raise Loc("--no-slo").error("means no ceilings at all: drop --ttft and --tpot")
        return SLO()
    sd = loc.mapping(raw) if raw is not None and not isinstance(raw, str) else {}
    loc.only_keys(sd, {"ttft_ms", "tpot_ms"})
    values = []
    for key, flag_value, flag, default in (
            ("ttft_ms", flags.ttft_ms, "--ttft", DEFAULT_SLO.ttft_ms),
            ("tpot_ms", flags.tpot_ms, "--tpot", DEFAULT_SLO.tpot_ms)):
        value, at = _pick(flag_value, flag, sd, key, loc, default)
        values.append(positive(value, at, le=MAX_LATENCY_MS))
    return SLO(*values)


def _closed_loop(data: Mapping[str, Any], root: Loc, flags: Flags) -> ClosedLoopOptions:
    """``closed_loop: MODE`` or ``{mode: MODE, sample: N}``; ``--closed-loop`` and
    ``--sample`` override (docs/whatif.md, "The closed loop")."""
    loc = root.child("closed_loop")
    raw = data.get("closed_loop")
    d = ClosedLoopOptions()
    if isinstance(raw, str):
        cd: Mapping[str, Any] = {"mode": raw}
        mode_at = loc
    else:
        cd = loc.mapping(raw) if raw is not None else {}
        loc.only_keys(cd, {"mode", "sample"})
        mode_at = loc.child("mode")
    if flags.closed_loop is not None:
        mode, mode_at = flags.closed_loop, Loc("--closed-loop")
    else:
        mode = cd.get("mode", d.mode)
    if mode not in CLOSED_LOOP_MODES:
        raise mode_at.error(f"must be one of {', '.join(CLOSED_LOOP_MODES)}, got {mode!r}")
    sample, at = _pick(flags.sample, "--sample", cd, "sample", loc, d.sample)
    sample = int(positive(sample, at, integer=True, le=MAX_SAMPLE))
    if sample < 2:
        raise at.error("a sample needs at least 2 scenarios (the base and one more) for "
                       f"its correction's error to be measured, got {sample}")
    return ClosedLoopOptions(str(mode), sample)


def _budget_sweep(studies: Mapping[str, Any], st: Loc, flags: Flags) -> tuple[float, ...]:
    if flags.budget_sweep:
        return parse_budgets(flags.budget_sweep, Loc("--budget-sweep"))
    raw = studies.get("budget_sweep")
    at = st.child("budget_sweep")
    if raw is None:
        return ()
    if isinstance(raw, str):
        return parse_budgets(raw, at)
    if isinstance(raw, list) and raw:
        raw = at.items(raw, MAX_BUDGETS, "budgets")
        return tuple(budget_value(v, at.child(i)) for i, v in enumerate(raw))
    raise at.error("expected a list of budgets ($/h) or a range like '128..2048'")


def _prices(studies: Mapping[str, Any], st: Loc, flags: Flags, inventory: Inventory,
            unlimited: bool) -> tuple[PriceSweep, ...]:
    src: list[tuple[str, list[Any], Loc]] = []
    for text in Loc("--price").items(list(flags.price), MAX_TYPES, "GPU types"):
        gpu, sep, listed = text.partition("=")
        if not sep or not gpu.strip() or not listed.strip():
            raise Loc("--price").error(
                f"expected TYPE=0.8x,1.0x,1.2x or TYPE=3.2,4.0, got {text!r}")
        flag = Loc(f"--price {gpu.strip()}")
        src.append((gpu.strip(), flag.items(listed.split(","), MAX_BUDGETS, "prices"), flag))
    if not flags.price and studies.get("prices") is not None:
        at = st.child("prices")
        types = at.mapping(studies["prices"])
        if len(types) > MAX_TYPES:
            raise at.error(f"lists {len(types):,} GPU types; at most {MAX_TYPES}")
        for gpu, values in types.items():
            field = at.child(str(gpu))
            src.append((str(gpu), field.items(values if isinstance(values, list) else [values],
                                              MAX_BUDGETS, "prices"), field))
    out = []
    for gpu, values, loc in src:
        if gpu not in inventory.types:
            raise loc.error(f"GPU type {gpu!r} is not in inventory '{inventory.name}' "
                            f"({', '.join(inventory.types)})")
        if not values:
            raise loc.error("expected at least one price")
        base = inventory.entry(gpu).price_per_hour
        pairs = [price_value(v.strip() if isinstance(v, str) else v, base,
                             loc.child(i) if len(values) > 1 else loc)
                 for i, v in enumerate(values)]
        if unlimited and any(p == 0 for p, _ in pairs):
            raise loc.error("a price of 0 with unlimited availability buys infinitely many "
                            "GPUs; use prices > 0")
        out.append(PriceSweep(gpu, tuple(p for p, _ in pairs), tuple(f for _, f in pairs)))
    return tuple(out)


def _add(studies: Mapping[str, Any], st: Loc, flags: Flags, inventory: Inventory,
         unlimited: bool) -> tuple[InventoryEntry, ...]:
    default_min = min((e.min_island for e in inventory.entries), default=1)
    if flags.add:
        src = [(parse_add_flag(t), Loc("--add"))
               for t in Loc("--add").items(list(flags.add), MAX_TYPES, "GPU types to add")]
    else:
        raw = st.child("add").items(studies.get("add") or [], MAX_TYPES, "GPU types to add")
        src = [(v, st.child("add").child(i)) for i, v in enumerate(raw)]
    out: list[InventoryEntry] = []
    for item, loc in src:
        entry = add_entry(item, loc, default_min, unlimited)
        if entry.name in inventory.types or entry.name in (e.name for e in out):
            raise loc.error(f"GPU type {entry.name!r} is already in the inventory; "
                            "use 'prices' to study its price")
        out.append(entry)
    return tuple(out)


def _remove(studies: Mapping[str, Any], st: Loc, flags: Flags, inventory: Inventory
            ) -> tuple[str, ...]:
    if flags.remove:
        src = [(r, Loc("--remove"))
               for r in Loc("--remove").items(list(flags.remove), MAX_TYPES, "GPU types")]
    else:
        raw = studies.get("remove") or []
        raw = st.child("remove").items([raw] if isinstance(raw, str) else raw, MAX_TYPES,
                                       "GPU types")
        src = [(r, st.child("remove").child(i)) for i, r in enumerate(raw)]
    for r, loc in src:
        if r not in inventory.types:
            raise loc.error(f"GPU type {r!r} is not in inventory '{inventory.name}' "
                            f"({', '.join(inventory.types)})")
        if len(inventory.types) < 2:
            raise loc.error(f"cannot remove {r!r}: it is the inventory's only GPU type")
    return tuple(r for r, _ in src)


def _workloads(studies: Mapping[str, Any], st: Loc, flags: Flags, base_dir: Path | None
               ) -> tuple[WorkloadMix, ...]:
    out: list[WorkloadMix] = []
    if flags.workloads:
        names = Loc("--workloads").items(flags.workloads.split(","), MAX_WORKLOADS,
                                         "workloads")
        for name in (w.strip() for w in names):
            if name:
                ref = workload_ref(name, Loc("--workloads"), None)
                out.append(WorkloadMix(workload_label(ref), ((ref, 1.0),)))
        return tuple(out)
    raw = st.child("workloads").items(studies.get("workloads") or [], MAX_WORKLOADS,
                                      "workloads or mixtures")
    for i, item in enumerate(raw):
        out.extend(workload_items(item, st.child("workloads").child(i), base_dir))
    return tuple(out)


def load_spec(path: Path | None, flags: Flags | None = None) -> WhatIfSpec:
    """Read ``path`` (if any), apply ``flags`` on top and validate everything."""
    flags = flags or Flags()
    data: Mapping[str, Any] = {}
    base_dir: Path | None = None
    src = "flags"
    if path is not None:
        src = str(path)
        raw = read_yaml(Path(path))
        data = Loc(src).mapping(raw if raw is not None else {})
        Loc(src).only_keys(data, _TOP)
        base_dir = Path(path).resolve().parent
    root = Loc(src)
    st = root.child("studies")
    studies = st.mapping(data.get("studies") or {})
    st.only_keys(studies, _STUDIES)

    if flags.inventory is not None:
        inventory = load_inventory(flags.inventory)
    elif "inventory" in data:
        inventory = _inventory(data["inventory"], root.child("inventory"), base_dir or Path())
    else:
        inventory = load_inventory(DEFAULT_INVENTORY)
    model, at = _pick(flags.model, "--model", data, "model", root, DEFAULT_MODEL)
    if not isinstance(model, str):
        raise at.error(f"expected a model name or config.json path, got {model!r}")
    try:
        get_model(model)
    except PlannerError as err:
        raise at.error(str(err)) from None
    workload, at = _pick(flags.workload, "--workload", data, "workload", root,
                         DEFAULT_WORKLOAD)
    workload = workload_ref(workload, at, None if flags.workload else base_dir)
    budget, at = _pick(flags.budget, "--budget", data, "budget", root, None)
    budget = None if budget is None else budget_value(budget, at)
    budget_at = at
    availability, at = _pick(flags.availability, "--availability", data, "availability",
                             root, "inventory")
    if availability not in AVAILABILITY:
        raise at.error(f"must be one of {', '.join(AVAILABILITY)}, got {availability!r}")
    unlimited = availability == "unlimited"
    if unlimited:
        free = [e.name for e in inventory.entries if e.price_per_hour <= 0]
        if free:
            raise at.error(f"unlimited availability needs a price > 0 for every type; "
                           f"{', '.join(free)} costs 0 in inventory '{inventory.name}'")
    # as `planner plan` chooses: the vendor's engine, vLLM for a mix of vendors
    gpus = [e.gpu for e in inventory.entries]
    engine, at = _pick(flags.engine, "--engine", data, "engine", root, fleet_engine(gpus))
    try:
        engine = get_engine(str(engine)).name
    except PlannerError as err:
        raise at.error(str(err)) from None
    wrong = engine_flag_error(engine, gpus)
    if wrong:
        raise at.error(wrong)
    ranges, at = _pick(flags.ranges, "--ranges", data, "ranges", root, DEFAULT_RANGES)
    ranges = int(positive(ranges, at, integer=True, le=MAX_RANGES))
    seed, at = _pick(flags.seed, "--seed", data, "seed", root, 0)
    seed = int(positive(seed, at, integer=True, zero=True, le=MAX_SEED))
    granularity, at = _pick(flags.island_granularity, "--island-granularity", data,
                            "island_granularity", root, "server")
    if granularity not in GRANULARITIES:
        raise at.error(f"must be one of {', '.join(GRANULARITIES)}, got {granularity!r}")

    marginal, at = _pick(flags.marginal, "--marginal", studies, "marginal", st, None)
    equal_cost, eq_at = _pick(flags.equal_cost, "--equal-cost", studies, "equal_cost", st,
                              False)
    if not isinstance(equal_cost, bool):
        raise eq_at.error(f"expected true or false, got {equal_cost!r}")
    beyond, by_at = _pick(flags.marginal_beyond_inventory, "--marginal-beyond-inventory",
                          studies, "marginal_beyond_inventory", st, False)
    if not isinstance(beyond, bool):
        raise by_at.error(f"expected true or false, got {beyond!r}")
    if beyond and marginal is None:
        raise by_at.error("applies to the marginal study only: give 'marginal' (the extra "
                          "$/h) too")
    if beyond and unlimited:
        raise by_at.error("has no effect with availability 'unlimited' (every option "
                          "already buys on the market); drop it or use availability "
                          "'inventory'")
    spec = WhatIfSpec(
        src, inventory, model, workload, budget, availability, ranges,
        _slo(data, root, flags), _solver(data, root, flags),
        _budget_sweep(studies, st, flags), _prices(studies, st, flags, inventory, unlimited),
        _add(studies, st, flags, inventory, unlimited), _remove(studies, st, flags, inventory),
        _workloads(studies, st, flags, base_dir), equal_cost,
        None if marginal is None else budget_value(marginal, at), engine, beyond,
        seed, str(granularity), _closed_loop(data, root, flags))
    if not spec.base_budget > 0:
        raise root.child("budget").error("is needed: the inventory's full cost is 0 $/h")
    if not spec.has_study:
        where = st.error if path is not None else PlannerError
        raise where("no study requested: give at least one of budget_sweep, prices, add, "
                    "remove, workloads, equal_cost, marginal (flags: --budget-sweep, --price, "
                    "--add, --remove, --workloads, --equal-cost, --marginal)")
    _buys_a_gpu(spec.inventory, budget, budget_at)
    sweep_at = Loc("--budget-sweep") if flags.budget_sweep else st.child("budget_sweep")
    for b in spec.budget_sweep:
        _buys_a_gpu(spec.inventory, b, sweep_at)
    count = scenario_count(spec)
    if count > MAX_SCENARIOS:
        raise (st.error if path is not None else PlannerError)(
            f"the studies expand to {count:,} scenarios, more than the {MAX_SCENARIOS:,} a "
            "study runs (each is a full plan): split them into several studies")
    return spec


def _buys_a_gpu(inventory: Inventory, budget: float | None, at: Loc) -> None:
    """A budget that buys no island of the inventory (its smallest, ``min_island`` GPUs
    of a type) plans nothing: refused naming where it came from (the search would
    otherwise fail on an empty space, naming nothing)."""
    priced = [(e.price_per_hour * max(e.min_island, 1), e.min_island, e.name)
              for e in inventory.entries if e.price_per_hour > 0]
    if budget is None or not priced or any(e.price_per_hour == 0 for e in inventory.entries):
        return
    price, size, name = min(priced)
    if budget < price * (1 - 1e-12):
        raise at.error(f"{budget:g} $/h buys no island: the cheapest, {size} x {name}, is "
                       f"{price:g} $/h")


def scenario_count(spec: WhatIfSpec) -> int:
    """How many scenarios :func:`planner.whatif.scenarios.expand` makes of ``spec``
    (counted, not built), marginal ones aside."""
    per_budget = 1 + (len(spec.inventory.entries) if len(spec.inventory.entries) > 1 else 0)
    return (1 + per_budget * (len(spec.budget_sweep) + (1 if spec.equal_cost else 0))
            + sum(len(p.prices) for p in spec.prices) + len(spec.add) + len(spec.remove)
            + len(spec.workloads))

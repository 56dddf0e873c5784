"""The what-if spec: a YAML file and/or CLI flags -> a validated :class:`WhatIfSpec`.

Format (docs/whatif.md has the full description and docs/whatif-example.yaml an
example)::

    inventory: ../inventories/gpus.yaml   # path (relative to this file) or an inline mapping
    model: deepseek-v3
    workload: azure-conv-2023              # the base workload
    budget: 512                            # base $/h (default: the inventory's full cost)
    availability: inventory                # or "unlimited" (market availability)
    ranges: 16
    slo: {ttft_ms: 2000, tpot_ms: 100}     # optional
    solver: {time_limit: 60, mip_gap: 1.0e-4, prune_tol: 0.005, max_island: 128}
    studies:
      budget_sweep: [128, 256, 512, 1024, 2048]
      prices: {H200: [0.8x, 1.0x, 1.2x], H20: [0.8, 1.2]}   # factors ("x") or $/GPU-h
      add: [{type: B200, count: 32, price_per_hour: 6.0}]   # catalog name or datasheet
      remove: [H800]
      workloads: [azure-code-2023, {mix: [azure-conv-2023, azure-code-2023], share: [0.5]}]
      equal_cost: true
      marginal: 100

Flags override the file field by field.  Every mistake is one :class:`PlannerError`
line naming the file (or flag) and the dotted field, raised before anything is solved
or written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from perfmodel import SLO, get_model
from perfmodel.hardware import get_gpu, gpu_from_datasheet
from planner.errors import PlannerError
from planner.inventory import Inventory, InventoryEntry, inventory_from_dict, load_inventory
from planner.workload.fields import Loc
from planner.workload.registry import resolve_workload_path

AVAILABILITY = ("inventory", "unlimited")
DEFAULT_RANGES = 16  # coarser than `planner plan`'s 32: a study solves dozens of MILPs
DEFAULT_MAX_ISLAND = 128
DEFAULT_INVENTORY = Path(__file__).resolve().parents[2] / "inventories" / "gpus.yaml"

_TOP = {"inventory", "model", "workload", "budget", "availability", "ranges", "slo",
        "solver", "studies"}
_STUDIES = {"budget_sweep", "prices", "add", "remove", "workloads", "equal_cost", "marginal"}
_SOLVER = {"time_limit", "mip_gap", "prune_tol", "max_island"}
_ADD = {"type", "count", "price_per_hour", "min_island", "datasheet"}
_MIX = {"mix", "share", "name"}


@dataclass(frozen=True)
class SolverOptions:
    """Settings of every scenario's exact MILP (planner.outer.exact)."""

    time_limit: float = 60.0
    mip_gap: float = 1e-4
    prune_tol: float = 0.005
    max_island: int = DEFAULT_MAX_ISLAND


@dataclass(frozen=True)
class PriceSweep:
    """Prices of one GPU type to try; ``factors[k] = prices[k] / inventory price``."""

    gpu: str
    prices: tuple[float, ...]
    factors: tuple[float, ...]


@dataclass(frozen=True)
class WorkloadMix:
    """A workload of the workload study: one workload (``components`` of length 1) or a
    mixture whose pmf is the weighted sum of its components' (weights sum to 1)."""

    label: str
    components: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class WhatIfSpec:
    source: str  # the spec file, or "flags"
    inventory: Inventory
    model: str = "deepseek-v3"
    workload: str = "azure-conv-2023"
    budget: float | None = None
    availability: str = "inventory"
    ranges: int = DEFAULT_RANGES
    slo: SLO = SLO()
    solver: SolverOptions = SolverOptions()
    budget_sweep: tuple[float, ...] = ()
    prices: tuple[PriceSweep, ...] = ()
    add: tuple[InventoryEntry, ...] = ()
    remove: tuple[str, ...] = ()
    workloads: tuple[WorkloadMix, ...] = ()
    equal_cost: bool = False
    marginal: float | None = None

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
            "workload": self.workload, "budget": self.budget, "base_budget": self.base_budget,
            "availability": self.availability, "ranges": self.ranges,
            "slo": {"ttft_ms": self.slo.ttft_ms, "tpot_ms": self.slo.tpot_ms},
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
                "equal_cost": self.equal_cost, "marginal": self.marginal}}


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
    time_limit: float | None = None
    max_island: int | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None


# ------------------------------------------------------------------ value parsers
def _positive(value: Any, loc: Loc, *, integer: bool = False, zero: bool = False) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise loc.error(f"expected a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise loc.error(f"expected a number, got {value!r}")
    if value < 0 or (value == 0 and not zero):
        raise loc.error(f"must be {'>= 0' if zero else '> 0'}, got {value:g}")
    if integer:
        if value != int(value):
            raise loc.error(f"expected a whole number, got {value!r}")
        return int(value)
    return float(value)


_RANGE = re.compile(r"^\s*([0-9.eE+]+)\s*\.\.\s*([0-9.eE+]+)\s*(?::\s*([0-9.eE+]+))?\s*$")


def parse_budgets(text: str, loc: Loc) -> tuple[float, ...]:
    """``"128,256,512"``, ``"128..2048"`` (doubling) or ``"100..500:100"`` (a step)."""
    m = _RANGE.match(text)
    if m:
        lo, hi = _positive(m[1], loc), _positive(m[2], loc)
        if hi < lo:
            raise loc.error(f"range {text!r} ends below its start")
        out, b = [], lo
        step = _positive(m[3], loc) if m[3] else None
        while b <= hi * (1 + 1e-12) and len(out) <= 1000:
            out.append(b)
            b = b + step if step else 2 * b
        if len(out) > 1000:
            raise loc.error(f"range {text!r} has more than 1000 budgets")
        return tuple(out)
    parts = [p for p in text.split(",") if p.strip()]
    if not parts:
        raise loc.error("expected budgets like 128,256,512 or 128..2048")
    return tuple(_positive(p.strip(), loc) for p in parts)


def _price_value(value: Any, base: float, loc: Loc) -> tuple[float, float]:
    """(price, factor) from ``3.2`` ($/GPU-h) or ``"0.8x"`` (a factor of ``base``)."""
    if isinstance(value, str) and value.strip().lower().endswith("x"):
        factor = _positive(value.strip()[:-1], loc, zero=True)
        return factor * base, factor
    price = _positive(value, loc, zero=True)
    return price, (price / base if base > 0 else math.nan)


def _workload_ref(value: Any, loc: Loc, base_dir: Path | None) -> str:
    if not isinstance(value, str) or not value.strip():
        raise loc.error(f"expected a workload name or YAML path, got {value!r}")
    text = value.strip()
    if base_dir is not None and ("/" in text or text.endswith((".yaml", ".yml"))):
        p = Path(text)
        if not p.is_absolute() and (base_dir / p).is_file():
            text = str(base_dir / p)
    try:
        resolve_workload_path(text)
    except PlannerError as err:
        raise loc.error(str(err)) from None
    return text


def _label(name: str) -> str:
    return Path(name).stem if name.endswith((".yaml", ".yml")) else name


def _workload_item(item: Any, loc: Loc, base_dir: Path | None) -> list[WorkloadMix]:
    """A name, or ``{mix: [a, b], share: s | [s...], name?}``: (1 - s) a + s b for each
    share s of the second workload; ``mix`` may also be a mapping ``{a: w_a, b: w_b}``
    of weights (normalised to sum 1)."""
    if not isinstance(item, Mapping):
        ref = _workload_ref(item, loc, base_dir)
        return [WorkloadMix(_label(ref), ((ref, 1.0),))]
    loc.only_keys(item, _MIX)
    mix = loc.require(item, "mix")
    at = loc.child("mix")
    if isinstance(mix, Mapping):
        if "share" in item:
            raise loc.child("share").error("give weights in 'mix' or a 'share', not both")
        if len(mix) < 2:
            raise at.error("a mixture needs at least two workloads")
        refs = [_workload_ref(k, at.child(str(k)), base_dir) for k in mix]
        weights = [_positive(v, at.child(str(k))) for k, v in mix.items()]
        total = sum(weights)
        comps = tuple((r, w / total) for r, w in zip(refs, weights, strict=True))
        label = item.get("name") or " + ".join(f"{w:.0%} {_label(r)}" for r, w in comps)
        return [WorkloadMix(str(label), comps)]
    if not isinstance(mix, Sequence) or isinstance(mix, str) or len(mix) != 2:
        raise at.error("expected two workloads [a, b] (with 'share') or a mapping of weights")
    a, b = (_workload_ref(v, at.child(i), base_dir) for i, v in enumerate(mix))
    shares = loc.require(item, "share")
    shares = shares if isinstance(shares, list) else [shares]
    out = []
    for i, s in enumerate(shares):
        sl = loc.child("share").child(i) if isinstance(item["share"], list) \
            else loc.child("share")
        s = _positive(s, sl, zero=True)
        if s > 1:
            raise sl.error(f"a share of the second workload must be in [0, 1], got {s:g}")
        label = item.get("name") or f"{1 - s:.0%} {_label(a)} + {s:.0%} {_label(b)}"
        if len(shares) > 1 and item.get("name"):
            label = f"{item['name']} ({s:.0%})"
        out.append(WorkloadMix(str(label), ((a, 1.0 - s), (b, s))))
    return out


def _add_entry(item: Any, loc: Loc, default_min: int, unlimited: bool) -> InventoryEntry:
    item = loc.mapping(item)
    loc.only_keys(item, _ADD)
    name = loc.require(item, "type")
    if not isinstance(name, str) or not name.strip():
        raise loc.child("type").error(f"expected a GPU name, got {name!r}")
    name = name.strip()
    if "datasheet" in item:
        sheet = item["datasheet"]
        if not isinstance(sheet, Mapping):
            raise loc.child("datasheet").error("expected a mapping of datasheet numbers")
        gpu = gpu_from_datasheet({"name": name, **sheet},
                                 f"{loc.source}: field '{loc.child('datasheet').path}'")
    else:
        try:
            gpu = get_gpu(name)
        except PlannerError as err:
            raise loc.child("type").error(str(err)) from None
    if "count" in item or not unlimited:
        count = int(_positive(loc.require(item, "count"), loc.child("count"), integer=True))
    else:
        count = 0  # market availability: the budget decides
    price = item.get("price_per_hour", gpu.price_per_hour or None)
    if price is None:
        raise loc.child("price_per_hour").error("is required (no catalog price)")
    price = _positive(price, loc.child("price_per_hour"))
    min_island = int(_positive(item.get("min_island", default_min), loc.child("min_island"),
                               integer=True))
    return InventoryEntry(replace(gpu, price_per_hour=price), count, price, min_island)


def parse_add_flag(text: str, default_min: int, unlimited: bool) -> dict[str, Any]:
    """``TYPE:COUNT:PRICE`` (PRICE optional: the catalog's) -> an ``add`` mapping."""
    parts = text.split(":")
    loc = Loc("--add")
    if len(parts) not in (2, 3) or not parts[0].strip():
        raise loc.error(f"expected TYPE:COUNT:PRICE (e.g. B200:32:6.0), got {text!r}")
    item: dict[str, Any] = {"type": parts[0].strip(),
                            "count": _positive(parts[1], loc, integer=True)}
    if len(parts) == 3:
        item["price_per_hour"] = _positive(parts[2], loc)
    return item


# ------------------------------------------------------------------ the spec file
def _read_yaml(path: Path) -> Any:
    if not path.is_file():
        raise PlannerError(f"what-if spec '{path}' does not exist")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f" line {mark.line + 1}, column {mark.column + 1}:" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise PlannerError(f"{path}:{line} YAML syntax error: {problem}") from None


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


def load_spec(path: Path | None, flags: Flags | None = None) -> WhatIfSpec:
    """Read ``path`` (if any), apply ``flags`` on top and validate everything."""
    flags = flags or Flags()
    data: Mapping[str, Any] = {}
    base_dir: Path | None = None
    src = "flags"
    if path is not None:
        src = str(path)
        raw = _read_yaml(Path(path))
        data = Loc(src).mapping(raw if raw is not None else {})
        Loc(src).only_keys(data, _TOP)
        base_dir = Path(path).resolve().parent
    root = Loc(src)
    studies = root.child("studies").mapping(data.get("studies") or {})
    root.child("studies").only_keys(studies, _STUDIES)
    st = root.child("studies")

    # inventory: flag > file > the repository's default
    if flags.inventory is not None:
        inventory = load_inventory(flags.inventory)
    elif "inventory" in data:
        inventory = _inventory(data["inventory"], root.child("inventory"), base_dir or Path())
    else:
        inventory = load_inventory(DEFAULT_INVENTORY)
    default_min = min((e.min_island for e in inventory.entries), default=1)

    model = flags.model or root.text(data, "model", "deepseek-v3")
    try:
        get_model(model)
    except PlannerError as err:
        where = Loc("--model") if flags.model else root.child("model")
        raise where.error(str(err)) from None
    if flags.workload:
        workload = _workload_ref(flags.workload, Loc("--workload"), None)
    else:
        workload = _workload_ref(data.get("workload", "azure-conv-2023"),
                                 root.child("workload"), base_dir)

    budget = (_positive(flags.budget, Loc("--budget")) if flags.budget is not None
              else None if data.get("budget") is None
              else _positive(data["budget"], root.child("budget")))
    availability = flags.availability or root.text(data, "availability", "inventory")
    if availability not in AVAILABILITY:
        where = Loc("--availability") if flags.availability else root.child("availability")
        raise where.error(f"must be one of {', '.join(AVAILABILITY)}, got {availability!r}")
    unlimited = availability == "unlimited"
    ranges = int(_positive(flags.ranges, Loc("--ranges"), integer=True)
                 if flags.ranges is not None
                 else _positive(data.get("ranges", DEFAULT_RANGES), root.child("ranges"),
                                integer=True))

    slo_data = root.child("slo").mapping(data.get("slo") or {})
    root.child("slo").only_keys(slo_data, {"ttft_ms", "tpot_ms"})
    slo = SLO(*(
        _positive(fv, Loc(f"--{k.split('_')[0]}")) if fv is not None
        else (None if slo_data.get(k) is None else _positive(slo_data[k],
                                                             root.child("slo").child(k)))
        for k, fv in (("ttft_ms", flags.ttft_ms), ("tpot_ms", flags.tpot_ms))))

    sv = root.child("solver")
    sdata = sv.mapping(data.get("solver") or {})
    sv.only_keys(sdata, _SOLVER)
    d = SolverOptions()
    solver = SolverOptions(
        time_limit=(_positive(flags.time_limit, Loc("--time-limit"))
                    if flags.time_limit is not None
                    else _positive(sdata.get("time_limit", d.time_limit),
                                   sv.child("time_limit"))),
        mip_gap=_positive(sdata.get("mip_gap", d.mip_gap), sv.child("mip_gap"), zero=True),
        prune_tol=_positive(sdata.get("prune_tol", d.prune_tol), sv.child("prune_tol"),
                            zero=True),
        max_island=int(_positive(flags.max_island, Loc("--max-island"), integer=True)
                       if flags.max_island is not None
                       else _positive(sdata.get("max_island", d.max_island),
                                      sv.child("max_island"), integer=True)))
    if solver.prune_tol >= 0.5:
        raise sv.child("prune_tol").error(f"must be below 0.5, got {solver.prune_tol:g}")

    # ---- studies
    if flags.budget_sweep:
        sweep = parse_budgets(flags.budget_sweep, Loc("--budget-sweep"))
    elif studies.get("budget_sweep") is not None:
        raw = studies["budget_sweep"]
        at = st.child("budget_sweep")
        if isinstance(raw, str):
            sweep = parse_budgets(raw, at)
        elif isinstance(raw, list) and raw:
            sweep = tuple(_positive(v, at.child(i)) for i, v in enumerate(raw))
        else:
            raise at.error("expected a list of budgets ($/h) or a range like '128..2048'")
    else:
        sweep = ()

    price_src: list[tuple[str, Any, Loc]] = []
    if flags.price:
        for text in flags.price:
            gpu, sep, values = text.partition("=")
            if not sep or not gpu.strip() or not values.strip():
                raise Loc("--price").error(
                    f"expected TYPE=0.8x,1.0x,1.2x or TYPE=3.2,4.0, got {text!r}")
            price_src.append((gpu.strip(), values.split(","), Loc(f"--price {gpu.strip()}")))
    elif studies.get("prices") is not None:
        at = st.child("prices")
        for gpu, values in at.mapping(studies["prices"]).items():
            vals = values if isinstance(values, list) else [values]
            price_src.append((str(gpu), vals, at.child(str(gpu))))
    prices = []
    for gpu, values, loc in price_src:
        if gpu not in inventory.types:
            raise loc.error(f"GPU type {gpu!r} is not in inventory '{inventory.name}' "
                            f"({', '.join(inventory.types)})")
        if not values:
            raise loc.error("expected at least one price")
        base = inventory.entry(gpu).price_per_hour
        pairs = [_price_value(v.strip() if isinstance(v, str) else v, base,
                              loc.child(i) if len(values) > 1 else loc)
                 for i, v in enumerate(values)]
        if unlimited and any(p == 0 for p, _ in pairs):
            raise loc.error("a price of 0 with unlimited availability buys infinitely many "
                            "GPUs; use prices > 0")
        prices.append(PriceSweep(gpu, tuple(p for p, _ in pairs), tuple(f for _, f in pairs)))

    if flags.add:
        add_src = [(parse_add_flag(t, default_min, unlimited), Loc("--add")) for t in flags.add]
    else:
        raw = studies.get("add") or []
        if not isinstance(raw, list):
            raise st.child("add").error("expected a list of GPU types to add")
        add_src = [(v, st.child("add").child(i)) for i, v in enumerate(raw)]
    add = []
    for item, loc in add_src:
        entry = _add_entry(item, loc, default_min, unlimited)
        if entry.name in inventory.types:
            raise loc.error(f"GPU type {entry.name!r} is already in the inventory; "
                            "use 'prices' to study its price")
        add.append(entry)

    if flags.remove:
        remove_src = [(r, Loc("--remove")) for r in flags.remove]
    else:
        raw = studies.get("remove") or []
        raw = [raw] if isinstance(raw, str) else raw
        if not isinstance(raw, list):
            raise st.child("remove").error("expected a list of GPU types")
        remove_src = [(r, st.child("remove").child(i)) for i, r in enumerate(raw)]
    for r, loc in remove_src:
        if r not in inventory.types:
            raise loc.error(f"GPU type {r!r} is not in inventory '{inventory.name}' "
                            f"({', '.join(inventory.types)})")
        if len(inventory.types) < 2:
            raise loc.error(f"cannot remove {r!r}: it is the inventory's only GPU type")
    remove = tuple(r for r, _ in remove_src)

    workloads: list[WorkloadMix] = []
    if flags.workloads:
        for name in (w.strip() for w in flags.workloads.split(",")):
            if name:
                ref = _workload_ref(name, Loc("--workloads"), None)
                workloads.append(WorkloadMix(_label(ref), ((ref, 1.0),)))
    else:
        raw = studies.get("workloads") or []
        if not isinstance(raw, list):
            raise st.child("workloads").error("expected a list of workloads or mixtures")
        for i, item in enumerate(raw):
            workloads.extend(_workload_item(item, st.child("workloads").child(i), base_dir))

    if flags.equal_cost is not None:
        equal_cost = bool(flags.equal_cost)
    else:
        equal_cost = studies.get("equal_cost", False)
        if not isinstance(equal_cost, bool):
            raise st.child("equal_cost").error(f"expected true or false, got {equal_cost!r}")
    marginal = (_positive(flags.marginal, Loc("--marginal")) if flags.marginal is not None
                else None if studies.get("marginal") is None
                else _positive(studies["marginal"], st.child("marginal")))

    if unlimited:
        free = [e.name for e in inventory.entries if e.price_per_hour <= 0]
        if free:
            raise PlannerError(f"{inventory.name}: price_per_hour of {', '.join(free)} is 0: "
                               "unlimited availability needs a price > 0 for every type")
    spec = WhatIfSpec(src, inventory, model, workload, budget, availability, ranges, slo,
                      solver, sweep, tuple(prices), tuple(add), remove, tuple(workloads),
                      equal_cost, marginal)
    if not spec.base_budget > 0:
        raise root.child("budget").error("is needed: the inventory's full cost is 0 $/h")
    if not spec.has_study:
        where = root.child("studies").error if path is not None else PlannerError
        raise where("no study requested: give at least one of budget_sweep, prices, add, "
                    "remove, workloads, equal_cost, marginal (flags: --budget-sweep, --price, "
                    "--add, --remove, --workloads, --equal-cost, --marginal)")
    return spec

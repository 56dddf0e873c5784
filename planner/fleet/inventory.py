"""GPU inventories: what a user can buy or rent, at what price.

Format (YAML; documented in docs/inventory.md)::

    name: thesis-three-types          # optional
    source: "thesis Table 5.1 prices"  # optional: where the prices come from, and when
    min_island: 2                      # optional default minimum island size
    gpus:
      - type: H200                     # a catalog name (perfmodel/data/gpus.csv) ...
        count: 64                      # GPUs available (or: servers: 8)
        price_per_hour: 4.0            # $/GPU-hour; defaults to the catalog's price
        min_island: 2                  # optional, per type
        gpus_per_node: 8               # optional: GPUs per server (catalog default)
      - type: MyAccel                  # ... or a new GPU from its datasheet numbers
        count: 16
        price_per_hour: 1.2
        datasheet: {fp16_tflops: 400, fp8_tflops: 800, hbm_gb: 96, hbm_gbps: 3000,
                    scaleup_gbps: 200, scaleout_gbps: 50, gpus_per_domain: 8, sms: 120}

Every mistake is reported as one line naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfmodel.errors import at, check_number
from perfmodel.hardware import GPU, gpu_catalog, resolve_gpu
from perfmodel.reading import read_yaml
from planner.core.errors import PlannerError
from planner.fleet.network import parse_network
from planner.fleet.servers import ServerShape, default_gpus_per_node
from planner.fleet.tiers import PriceTiers, parse_tiers

_ENTRY_FIELDS = {"type", "count", "servers", "gpus_per_node", "price_per_hour", "min_island",
                 "datasheet", "price_source", "price_date", "price_origin", "node_source",
                 "tiers"}
#: Where an entry's price comes from: the GPU catalog (the entry gives none), the
#: inventory file, or the inventory for a GPU it describes by its own datasheet.
PRICE_ORIGINS = ("catalog", "inventory", "datasheet")
_TOP_FIELDS = {"name", "source", "min_island", "gpus", "network"}


@dataclass(frozen=True)
class InventoryEntry:
    gpu: GPU
    count: int
    price_per_hour: float
    min_island: int = 1
    price_origin: str = "inventory"  # one of PRICE_ORIGINS
    price_source: str = ""  # the entry's own note on where its price comes from
    #: GPUs per server (planner.fleet.servers); 0: the catalog's default for the type
    gpus_per_node: int = 0
    node_source: str = ""  # where the server size comes from
    #: the entry's own price tiers (planner.fleet.tiers); None: the defaults
    given_tiers: PriceTiers | None = None

    @property
    def tiers(self) -> PriceTiers:
        """Reserved, on-demand and spot prices and caps (profile plans only)."""
        if self.given_tiers is not None:
            return self.given_tiers
        catalog = gpu_catalog().get(self.name)
        return parse_tiers(None, self.name, count=self.count, price=self.price_per_hour,
                           list_price=catalog.price_per_hour if catalog else 0.0)

    @property
    def name(self) -> str:
        return self.gpu.name

    @property
    def node(self) -> int:
        """GPUs per server: the entry's, else the catalog's."""
        return self.gpus_per_node or default_gpus_per_node(self.gpu)[0]

    @property
    def shape(self) -> ServerShape:
        """The entry's servers: whole ones and the partial remainder."""
        return ServerShape.of(self.count, self.node)


@dataclass(frozen=True)
class Inventory:
    name: str
    entries: tuple[InventoryEntry, ...]
    source: str = ""
    network: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        names = [e.name.lower() for e in self.entries]
        if len(set(names)) != len(names):
            raise PlannerError(f"inventory '{self.name}': GPU type listed twice "
                               "(names are case-insensitive)")

    @property
    def types(self) -> list[str]:
        return [e.name for e in self.entries]

    def entry(self, name: str) -> InventoryEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)

    @property
    def total_cost(self) -> float:
        return sum(e.count * e.price_per_hour for e in self.entries)

    def with_price(self, name: str, price: float) -> Inventory:
        """The inventory with type ``name`` at ``price`` $/GPU-h -- the entry's and its
        GPU's (what a plan's costs are read from) alike."""
        return replace(self, entries=tuple(
            replace(e, price_per_hour=price, gpu=replace(e.gpu, price_per_hour=price))
            if e.name == name else e for e in self.entries))

    def with_count(self, name: str, count: int) -> Inventory:
        return replace(self, entries=tuple(
            replace(e, count=count) if e.name == name else e for e in self.entries))

    def without(self, name: str) -> Inventory:
        return replace(self, entries=tuple(e for e in self.entries if e.name != name))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "source": self.source, "gpus": []}
        catalog = gpu_catalog()
        for e in self.entries:
            item: dict[str, Any] = {"type": e.name, "count": e.count,
                                    "price_per_hour": e.price_per_hour,
                                    "min_island": e.min_island,
                                    "gpus_per_node": e.node,
                                    "node_source": e.node_source}
            if not _same_hardware(catalog.get(e.name), e.gpu):
                item["datasheet"] = {k: v for k, v in e.gpu.to_dict().items()
                                     if k not in _PRICE_FIELDS}
            if e.given_tiers is not None:
                item["tiers"] = e.given_tiers.to_dict()
            item["price_origin"] = e.price_origin
            if e.price_origin == "catalog":
                item["price_source"], item["price_date"] = e.gpu.price_source, e.gpu.price_date
            elif e.price_source:
                item["price_source"] = e.price_source
            out["gpus"].append(item)
        if self.network:
            out["network"] = self.network
        return out


_PRICE_FIELDS = ("name", "price_per_hour", "price_source", "price_date", "spec_source")


def _same_hardware(catalog: GPU | None, gpu: GPU) -> bool:
    """Whether ``gpu`` is the catalog's GPU of that name up to its price (a price the
    inventory sets is not a new datasheet)."""
    if catalog is None:
        return False
    a, b = catalog.to_dict(), gpu.to_dict()
    return all(a.get(k) == b.get(k) for k in a.keys() | b.keys() if k not in _PRICE_FIELDS)


#: Bounds on an entry: a million GPUs of one type is beyond any fleet (and would size
#: the search's tables by it); a price under a millionth of a dollar per GPU-hour or over
#: a million dollars is a unit mistake, and would overflow "how many does the budget buy".
MAX_COUNT = 1_000_000
MIN_PRICE, MAX_PRICE = 1e-6, 1e6
#: $/h: every GPU an inventory can list -- the most any budget can buy.
MAX_BUDGET = MAX_COUNT * MAX_PRICE
#: GPU types in one inventory: the catalog has about twenty and the outer search has
#: one dimension per type, so a longer list is a generated file gone wrong, and would
#: make every later step (encodings, per-type tables) grow with it.
MAX_TYPES = 64


def check_price(price: float, fail: Callable[[str], Exception]) -> float:
    """``price`` ($/GPU-hour, already a number >= 0) if it is 0 -- GPUs one owns -- or
    at least :data:`MIN_PRICE`; a positive price below it is a slip (it would make the
    GPU all but free), refused through ``fail(message)``."""
    if 0 < price < MIN_PRICE:
        raise fail(f"must be 0 or at least {MIN_PRICE:g} $/GPU-hour, got {price:g}")
    return price


def _price(value: Any, where: str) -> float:
    """A price field: a number from 0 to :data:`MAX_PRICE`, 0 or at least
    :data:`MIN_PRICE` (:func:`check_price`)."""
    return check_price(_number(value, where, le=MAX_PRICE), at(where))


def _number(value: Any, where: str, *, integer: bool = False, positive: bool = False,
            le: float | None = None) -> float:
    """A finite number ``>= 0`` (``> 0`` when ``positive``; whole when ``integer``; at
    most ``le``)."""
    if positive:
        return check_number(value, at(where), integer=integer, gt=0, le=le)
    return check_number(value, at(where), integer=integer, ge=0, le=le)


def _only_known(data: dict, known: set[str], where: str) -> None:
    """A one-line error naming the fields of ``data`` outside ``known``, and the known."""
    unknown = set(data) - known
    if unknown:
        raise PlannerError(f"{where}: unknown field(s) {sorted(unknown)}; "
                           f"known: {sorted(known)}")


def inventory_from_dict(data: Any, where: str) -> Inventory:
    if not isinstance(data, dict):
        raise PlannerError(f"{where}: expected a mapping with a 'gpus' list")
    _only_known(data, _TOP_FIELDS, where)
    gpus = data.get("gpus")
    if not isinstance(gpus, list) or not gpus:
        raise PlannerError(f"{where}: field 'gpus' must be a non-empty list")
    if len(gpus) > MAX_TYPES:
        raise PlannerError(f"{where}: field 'gpus' lists {len(gpus):,} entries; an "
                           f"inventory holds at most {MAX_TYPES} GPU types")
    default_min = int(_number(data.get("min_island", 1), f"{where}: field 'min_island'",
                              integer=True, positive=True))
    entries = []
    for i, item in enumerate(gpus):
        at = f"{where}: gpus[{i}]"
        if not isinstance(item, dict):
            raise PlannerError(f"{at} must be a mapping with 'type' and 'count'")
        _only_known(item, _ENTRY_FIELDS, at)
        if "type" not in item:
            raise PlannerError(f"{at}: field 'type' is missing")
        name = str(item["type"])
        at = f"{where}: gpus[{i}] ({name})"
        sheet = item.get("datasheet")
        if "datasheet" in item and not isinstance(sheet, dict):
            raise PlannerError(f"{at}: field 'datasheet' must be a mapping")
        try:
            gpu = resolve_gpu(name, sheet, f"{where}: gpus[{i}].datasheet")
        except PlannerError as err:
            if sheet is not None:
                raise
            raise PlannerError(f"{at}: field 'type': {err}") from None
        node, node_source = default_gpus_per_node(gpu)
        if "gpus_per_node" in item:
            node = int(_number(item["gpus_per_node"], f"{at}: field 'gpus_per_node'",
                               integer=True, positive=True, le=MAX_COUNT))
            if node > gpu.gpus_per_domain:
                raise PlannerError(
                    f"{at}: field 'gpus_per_node' ({node}) is more than the "
                    f"{gpu.gpus_per_domain} GPUs of one {name} scale-up domain: a server "
                    "is at most one NVLink/PCIe domain")
            node_source = str(item.get("node_source") or "inventory")
        if ("count" in item) == ("servers" in item):
            raise PlannerError(f"{at}: give exactly one of field 'count' (GPUs) or field "
                               "'servers'")
        if "servers" in item:
            servers = int(_number(item["servers"], f"{at}: field 'servers'", integer=True,
                                  le=MAX_COUNT))
            count = servers * node
            if count > MAX_COUNT:
                raise PlannerError(f"{at}: field 'servers': {servers} x {node} GPUs is more "
                                   f"than {MAX_COUNT:,}")
        else:
            count = int(_number(item["count"], f"{at}: field 'count'", integer=True,
                                le=MAX_COUNT))
        price = item.get("price_per_hour", gpu.price_per_hour or None)
        if price is None:
            raise PlannerError(f"{at}: field 'price_per_hour' is missing (no catalog price)")
        price = _price(price, f"{at}: field 'price_per_hour'")
        min_island = int(_number(item.get("min_island", default_min),
                                 f"{at}: field 'min_island'", integer=True, positive=True,
                                 le=MAX_COUNT))
        origin = "datasheet" if sheet is not None else \
            "inventory" if "price_per_hour" in item else "catalog"
        if item.get("price_origin") in PRICE_ORIGINS:  # a plan.json's own record
            origin = str(item["price_origin"])
        note = item.get("price_source")
        if note is not None and not isinstance(note, str):
            raise PlannerError(f"{at}: field 'price_source' must be text, got {note!r}")
        if origin == "catalog":  # the catalog's own source is written out instead
            note = ""
        tiers = None
        if "tiers" in item:
            listed = gpu_catalog().get(gpu.name)
            tiers = parse_tiers(item["tiers"], at, count=count, price=price,
                                list_price=listed.price_per_hour if listed else 0.0)
        entries.append(InventoryEntry(replace(gpu, price_per_hour=price), count, price,
                                      min_island, origin, note or "", node, node_source,
                                      tiers))
    # GPU names are case-insensitive ("h20" is the catalog's H20): one entry per type
    names = [e.name.lower() for e in entries]
    dupes = sorted({e.name for e in entries if names.count(e.name.lower()) > 1})
    if dupes:
        raise PlannerError(f"{where}: field 'gpus' lists {dupes} more than once (GPU "
                           "names are case-insensitive)")
    for key in ("name", "source"):  # labels in every report: text, not a list or map
        label = data.get(key)
        if label is not None and not isinstance(label, str | int | float):
            raise PlannerError(f"{where}: field '{key}' must be text, got {label!r}")
    network = data.get("network")
    if network is not None and not isinstance(network, dict):
        raise PlannerError(f"{where}: field 'network' must be a mapping")
    parse_network(network, f"{where}: field network")  # one-line error naming the field
    return Inventory(str(data.get("name") or Path(where).stem), tuple(entries),
                     str(data.get("source") or ""), network)


def require_gpus(inv: Inventory, where: str | Path) -> Inventory:
    """``inv``, or one line when it lists no GPU at all (every count 0): nothing can be
    planned on it, and every later message would talk about islands of nothing."""
    if not any(e.count > 0 for e in inv.entries):
        raise PlannerError(f"{where}: the inventory has no GPUs (every entry's count is 0)")
    return inv


def load_inventory(path: str | Path) -> Inventory:
    """Read an inventory YAML file; errors name the file, line or field."""
    p = Path(path)
    if not p.exists():
        raise PlannerError(f"inventory file '{path}' does not exist")
    return inventory_from_dict(read_yaml(p, "inventory file"), str(path))

"""Fleet files: several services (model, workload, SLO, engine) on one inventory.

Format (YAML; documented in docs/fleet.md)::

    name: three-models                 # optional
    services:
      - name: chat                     # letters, digits, '.', '_', '-'; unique
        model: deepseek-v3             # built-in, or a config.json path
        workload: azure-conv-2023      # built-in, or a workload YAML path
        slo: {ttft_ms: 2000, tpot_ms: 50}   # optional: the planner's default SLO
        engine: sglang                 # optional: the inventory's default engine
        share: 0.6                     # of the fleet's requests (budget mode) ...
      - name: code
        model: llama-3.1-70b
        target_rps: 40                 # ... or a rate to meet (target mode)

Either every service has a ``share`` (the shares sum to 1; ``planner plan --fleet F
--budget B`` finds the largest total rate λ at which every service gets λ × its share
at its SLO) or every service has a ``target_rps`` (``planner plan --fleet F`` finds the
cheapest fleet meeting every target); never a mixture.  Paths are taken relative to
the fleet file when a file of that name sits beside it, else as given.

Every mistake is one line naming the file, the service and the field (exit 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel import SLO, get_model
from perfmodel.engines import get_engine
from perfmodel.errors import at, check_number
from perfmodel.reading import read_yaml
from planner.core.defaults import DEFAULT_SLO, DEFAULT_WORKLOAD, MAX_LATENCY_MS
from planner.core.errors import PlannerError
from planner.core.names import check_distinct, check_name
from planner.sim.arrivals import MAX_RATE
from planner.workload import load_workload

_TOP_FIELDS = {"name", "source", "services"}
_SERVICE_FIELDS = {"name", "model", "workload", "slo", "engine", "share", "target_rps"}
_SLO_FIELDS = {"ttft_ms", "tpot_ms"}
#: Shares must sum to 1 within this (they are typed by hand: 0.3 + 0.3 + 0.4).
SHARE_TOL = 1e-6
#: The least share a service may have: below it its rate is no rate the simulator
#: takes (1e-300 reached it as an error naming neither the file nor the field).
MIN_SHARE = 1e-6
#: The most services one fleet file may list (each one is a planning context).
MAX_SERVICES = 32


@dataclass(frozen=True)
class Service:
    """One service of a fleet: what it serves and how much of the fleet's load."""

    name: str
    model: str
    workload: str
    slo: SLO
    engine: str | None = None  # None: the inventory's default engine (per vendor)
    share: float | None = None
    target_rps: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "model": self.model,
                               "workload": self.workload,
                               "slo": {"ttft_ms": self.slo.ttft_ms,
                                       "tpot_ms": self.slo.tpot_ms}}
        if self.engine is not None:
            out["engine"] = self.engine
        if self.share is not None:
            out["share"] = self.share
        if self.target_rps is not None:
            out["target_rps"] = self.target_rps
        return out


@dataclass(frozen=True)
class FleetSpec:
    """The services of a fleet file, all with shares or all with targets."""

    name: str
    services: tuple[Service, ...]
    source: str = ""

    @property
    def mode(self) -> str:
        """"shares" (plan for a budget) or "targets" (plan for the targets)."""
        return "targets" if self.services[0].target_rps is not None else "shares"

    def service(self, name: str) -> Service:
        for s in self.services:
            if s.name == name:
                return s
        raise PlannerError(f"fleet {self.name!r} has no service {name!r}; it has "
                           f"{', '.join(s.name for s in self.services)}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source,
                "services": [s.to_dict() for s in self.services]}


def _beside(value: str, base: Path | None) -> str:
    """``value`` as a path beside the fleet file when such a file exists there."""
    if base is None or Path(value).is_absolute():
        return value
    candidate = base / value
    return str(candidate) if candidate.is_file() else value


def _service(item: Any, i: int, where: str, base: Path | None) -> Service:
    loc = f"{where}: services[{i}]"
    if not isinstance(item, dict):
        raise PlannerError(f"{loc} must be a mapping with 'name' and 'model'")
    name = check_name(item.get("name"), loc, "name", "the service's folder")
    loc = f"{where}: service {name!r}"
    unknown = set(item) - _SERVICE_FIELDS
    if unknown:
        raise PlannerError(f"{loc}: unknown field(s) {sorted(map(str, unknown))}; known: "
                           f"{sorted(_SERVICE_FIELDS)}")

    def text(field: str, default: str | None) -> str | None:
        value = item.get(field, default)
        if value is not None and not (isinstance(value, str) and value.strip()
                                      and value.isprintable() and len(value) <= 4096):
            raise PlannerError(f"{loc}: field '{field}' must be a name or a path (printable, "
                               f"at most 4,096 characters), got {repr(value)[:40]}")
        return value

    model = text("model", None)
    if model is None:
        raise PlannerError(f"{loc}: field 'model' is missing")
    model = _beside(model, base)
    try:
        get_model(model)
    except PlannerError as err:
        raise PlannerError(f"{loc}: field 'model': {err}") from None
    workload = _beside(str(text("workload", DEFAULT_WORKLOAD)), base)
    try:
        load_workload(workload)
    except PlannerError as err:
        raise PlannerError(f"{loc}: field 'workload': {err}") from None
    engine = text("engine", None)
    if engine is not None:
        try:
            engine = get_engine(engine).name
        except PlannerError as err:
            raise PlannerError(f"{loc}: field 'engine': {err}") from None
    slo = DEFAULT_SLO
    if "slo" in item:
        raw = item["slo"]
        if not isinstance(raw, dict) or set(raw) - _SLO_FIELDS:
            raise PlannerError(f"{loc}: field 'slo' must be a mapping of ttft_ms and "
                               f"tpot_ms, got {repr(raw)[:60]}")
        values = {k: check_number(raw.get(k, getattr(DEFAULT_SLO, k)),
                                  at(f"{loc}: field 'slo.{k}'"), gt=0, le=MAX_LATENCY_MS)
                  for k in sorted(_SLO_FIELDS)}
        slo = SLO(values["ttft_ms"], values["tpot_ms"])
    share = target = None
    if ("share" in item) == ("target_rps" in item):
        raise PlannerError(f"{loc}: give exactly one of field 'share' (of the fleet's "
                           "requests, with --budget) or field 'target_rps'")
    if "share" in item:
        share = check_number(item["share"], at(f"{loc}: field 'share'"), ge=MIN_SHARE,
                             le=1)
    else:
        target = check_number(item["target_rps"], at(f"{loc}: field 'target_rps'"), gt=0,
                              le=MAX_RATE)
    return Service(name, model, workload, slo, engine, share, target)


def fleet_from_dict(data: Any, where: str, base: Path | None = None, *,
                    partial: bool = False) -> FleetSpec:
    """A :class:`FleetSpec` from parsed YAML; ``where`` names the file in errors and
    ``base`` is the folder relative paths are tried in.  ``partial``: services to add to
    a fleet (``planner whatif --add-service``), whose shares need not sum to 1."""
    if not isinstance(data, dict):
        raise PlannerError(f"{where}: expected a mapping with a 'services' list")
    unknown = set(data) - _TOP_FIELDS
    if unknown:
        raise PlannerError(f"{where}: unknown field(s) {sorted(map(str, unknown))}; known: "
                           f"{sorted(_TOP_FIELDS)}")
    items = data.get("services")
    if not isinstance(items, list) or not items:
        raise PlannerError(f"{where}: field 'services' must be a non-empty list")
    if len(items) > MAX_SERVICES:
        raise PlannerError(f"{where}: field 'services' lists {len(items)} services; at most "
                           f"{MAX_SERVICES}")
    services = tuple(_service(item, i, where, base) for i, item in enumerate(items))
    check_distinct((s.name for s in services), f"{where}: services", "name")
    kinds = {s.share is not None for s in services}
    if len(kinds) > 1:
        first = next(s for s in services if s.share is not None)
        other = next(s for s in services if s.share is None)
        raise PlannerError(f"{where}: service {other.name!r}: field 'target_rps' mixes targets "
                           f"with shares (service {first.name!r} has a share); give every "
                           "service a share or every service a target")
    if True in kinds and not partial:
        total = sum(float(s.share or 0.0) for s in services)
        if abs(total - 1.0) > SHARE_TOL:
            raise PlannerError(f"{where}: field 'share': the services' shares sum to "
                               f"{total:.6g}, not 1")
    name = data.get("name") or Path(where).stem
    source = data.get("source") or ""
    if not isinstance(name, str) or not isinstance(source, str):
        raise PlannerError(f"{where}: fields 'name' and 'source' must be text")
    return FleetSpec(name, services, source)


def load_fleet(path: str | Path, *, partial: bool = False) -> FleetSpec:
    """Read a fleet YAML file; every error names the file, the service and the field
    (``partial``: see :func:`fleet_from_dict`)."""
    p = Path(path)
    if not p.is_file():
        raise PlannerError(f"fleet file '{path}' does not exist or is not a file")
    return fleet_from_dict(read_yaml(p, "fleet file"), str(path), p.parent, partial=partial)


__all__ = ["MAX_SERVICES", "FleetSpec", "Service", "fleet_from_dict", "load_fleet"]

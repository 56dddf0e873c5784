"""Reading a user's file safely: the one place text, JSON and YAML come in.

Every file a user hands the tools -- inventories, workloads, what-if specs, model
``config.json``, plan.json, checkpoints -- is read here, so each hostile shape fails
the same way, as one :class:`~perfmodel.errors.InputError` line naming the file:

* a missing path, a directory, a FIFO, socket or device (refused by kind: a FIFO would
  block, ``/dev/zero`` never ends), or a file larger than :data:`MAX_BYTES`
  (:data:`MAX_YAML_BYTES` for YAML, which parses a thousand times slower than JSON);
* bytes that are not UTF-8 (the byte offset and the byte are named);
* JSON or YAML syntax errors (with the line), ``NaN``/``Infinity`` in JSON, YAML
  mappings that repeat a key (YAML keeps the last silently; a typo'd copy would win);
* nesting deeper than :data:`MAX_DEPTH` (a 5,000-deep list would otherwise exhaust
  the interpreter's recursion limit), or more than :data:`MAX_VALUES` values in one
  document -- counted as the readers will walk it, so a YAML alias "bomb" (nine lines
  whose aliases expand to a billion values) is refused instead of walked for hours.

Each format's own reader then caps each of its lists (the GPU types of an inventory,
the scenarios of a what-if spec, the bins of a histogram, ...) where the work done per
item makes a lower cap matter; those caps are stated in the format's docs and flags.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import yaml

from perfmodel.errors import InputError

#: No input of these tools comes near this; a larger file is a mistake (a trace passed
#: as an inventory) that would otherwise be parsed into memory whole.
MAX_BYTES = 64 * 1024 * 1024
#: YAML files (inventories, workloads, profiles, fleet and what-if specs): the largest
#: these tools write is a 4,032-slot profile of a few hundred KB, and YAML parses at about
#: 1 MB/s, so a 64 MiB YAML file would take a minute just to be refused.
MAX_YAML_BYTES = 8 * 1024 * 1024
#: Deeper nesting than any format here uses (plan.json is about 5 levels deep).
MAX_DEPTH = 32
#: Values (numbers, strings, lists, mappings) in one document: a plan.json of a
#: 4,096-range plan holds about a million; a YAML alias bomb holds billions.
MAX_VALUES = 10_000_000


def file_kind(path: str | Path) -> str | None:
    """What is at ``path``: None (nothing), "file", "folder", "FIFO", "device", "socket"
    or "link" (a dangling symbolic link) -- found by ``stat``, never by opening it."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        return "link" if p.is_symlink() else None
    except OSError:
        return "device"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "socket" if stat.S_ISSOCK(mode) else "device"


def read_text(path: str | Path, what: str = "file", max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of ``path`` (at most ``max_bytes``); every failure is one line
    naming it."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such {what}")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a {what}")
    try:
        kind = file_kind(p)
        if kind != "file":  # a FIFO blocks, /dev/zero never ends: refused by kind
            raise InputError(f"{p}: is a {kind}, not a regular {what}")
        # read at most one byte past the cap: the size a stat gave may have grown since
        with p.open("rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise InputError(f"{p}: more than {max_bytes:,} bytes, more than any {what} "
                             "needs; is it the right file?")
    except OSError as err:
        raise InputError(f"{p}: cannot read: {err.strerror or err}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{p}: not UTF-8 text (byte {err.start:,} is "
                         f"{data[err.start:err.start + 1]!r}); save it as UTF-8") from None


def _shape_error(value: Any) -> str | None:
    """Why ``value`` is too deep, too large or cyclic to walk (:data:`MAX_DEPTH`,
    :data:`MAX_VALUES`), or None.

    Sizes and depths are counted bottom-up, once per container object: a container that
    YAML aliases repeat is counted as often as it appears, but walked once, so a billion-
    value alias bomb costs as many steps as its file has lines. A container that holds
    itself (``a: &x [*x]``) is a cycle no reader could walk to its end."""
    memo: dict[int, tuple[int, int]] = {}  # id -> (values, depth)
    open_: set[int] = set()
    if not isinstance(value, dict | list):
        return None
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        v, closing = stack.pop()
        kids = list(v.values()) if isinstance(v, dict) else v
        if not closing:
            if id(v) in memo:
                continue
            open_.add(id(v))
            stack.append((v, True))
            for k in kids:
                if isinstance(k, dict | list):
                    if id(k) in open_:
                        return "holds itself (a YAML alias inside its own anchor)"
                    stack.append((k, False))
            continue
        n, d = 1, 1
        for k in kids:
            kn, kd = memo[id(k)] if isinstance(k, dict | list) else (1, 0)
            n, d = n + kn, max(d, kd + 1)
        if d > MAX_DEPTH:
            return f"nested more than {MAX_DEPTH} levels deep"
        if n > MAX_VALUES:
            return (f"holds more than {MAX_VALUES:,} values (counting what YAML aliases "
                    "repeat), more than any input of these tools needs")
        open_.discard(id(v))
        memo[id(v)] = (n, d)
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


class _Constant:
    """Where a NaN or an infinity stood (see :func:`_constant_field`)."""


def _constant_field(text: str) -> str | None:
    """The field (``summary.requests_per_s``, ``islands[3].shares[0]``) holding the
    first NaN or infinity of ``text``, found by parsing again with a marker in its place;
    None when it cannot be found."""
    marker = _Constant()
    try:
        data = json.loads(text, parse_constant=lambda _name: marker)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:  # depth first, in the document's order
        value, path = stack.pop()
        if value is marker:
            return path or "(top level)"
        if isinstance(value, dict):
            stack.extend(reversed([(v, f"{path}.{k}" if path else str(k))
                                   for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(v, f"{path}[{i}]") for i, v in enumerate(value)]))
    return None


def parse_json(text: str, source: str) -> Any:
    """JSON from ``text`` (read from ``source``), strictly: no NaN or Infinity."""
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(f"{source}: not valid JSON (line {err.lineno}): {err.msg}") from None
    except ValueError as err:
        where = _constant_field(text)
        raise InputError(f"{source}: not valid JSON: "
                         + (f"field '{where}': " if where else "") + f"{err}") from None
    except RecursionError:
        raise InputError(f"{source}: nested more than {MAX_DEPTH} levels deep") from None
    shape = _shape_error(data)
    if shape:
        raise InputError(f"{source}: {shape}")
    return data


def read_json(path: str | Path, what: str = "JSON file") -> Any:
    return parse_json(read_text(path, what), str(path))


_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping that repeats a key."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                dup = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base loader reports it
                continue
            if dup:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping",
                    key_node.start_mark)
        return super().construct_mapping(node, deep)


def parse_yaml(text: str, source: str) -> Any:
    """YAML from ``text`` (read from ``source``): safe types only, no repeated keys,
    bounded nesting; an empty document is an error."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"{where}: invalid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{source}: nested more than {MAX_DEPTH} levels deep") from None
    if data is None:
        raise InputError(f"{source}: empty file")
    shape = _shape_error(data)
    if shape:
        raise InputError(f"{source}: {shape}")
    return data


def read_yaml(path: str | Path, what: str = "YAML file") -> Any:
    return parse_yaml(read_text(path, what, MAX_YAML_BYTES), str(path))


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "MAX_YAML_BYTES", "parse_json",
           "parse_yaml", "read_json", "read_text", "read_yaml"]

"""Reading and (atomically) writing workload YAML files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from perfmodel import reading
from planner.core.atomic import write_text_atomic
from planner.workload.model import Workload
from planner.workload.schema import workload_from_dict, workload_to_dict

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file (perfmodel.reading: UTF-8, no repeated keys, bounded nesting);
    every problem is a one-line PlannerError naming the file."""
    return reading.read_yaml(path, "file")


def read_workload(path: Path, *, max_len: int | None = None) -> Workload:
    """Load a workload YAML file (name defaults to the file stem)."""
    return workload_from_dict(read_yaml(path), source=str(path), max_len=max_len,
                              default_name=path.stem)


def dump_yaml(data: Any) -> str:
    """Block-style mappings, flow-style lists of numbers: compact and diff-friendly."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None,
                     width=100, allow_unicode=True)


def write_workload(path: Path, workload: Workload, *, header: str = "") -> None:
    """Save ``workload`` as YAML; ``header`` lines are written as ``#`` comments."""
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    write_text_atomic(path, comment + dump_yaml(workload_to_dict(workload)))

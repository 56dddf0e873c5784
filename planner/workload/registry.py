"""Built-in workloads (``workloads/*.yaml`` in the repository) and name resolution."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import planner
from planner.core.errors import PlannerError
from planner.workload.model import Workload
from planner.workload.yaml_io import read_workload

_SUFFIXES = (".yaml", ".yml")
_CACHE: OrderedDict[tuple[str, int, int, int | None], Workload] = OrderedDict()
_CACHE_SIZE = 32
_LOCK = threading.Lock()


def repo_root() -> Path:
    """The checkout root (the project is installed editable)."""
    return Path(planner.__file__).resolve().parents[1]


def builtin_dir() -> Path:
    return repo_root() / "workloads"


def shared_dir() -> Path:
    """``../shared`` next to the checkout: traces used by tests and rebuild scripts."""
    return repo_root().parent / "shared"


def list_workloads() -> list[str]:
    """Names of the built-in workloads, sorted."""
    folder = builtin_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.iterdir() if p.suffix in _SUFFIXES and p.is_file())


def resolve_workload_path(name_or_path: str | Path) -> Path:
    """A built-in name or a path to a YAML file -> the file to read."""
    text = str(name_or_path)
    path = Path(text)
    looks_like_path = (isinstance(name_or_path, Path) or path.suffix in _SUFFIXES
                       or "/" in text or "\\" in text)
    if looks_like_path:
        if path.is_dir():
            raise PlannerError(f"{path}: is a folder, not a workload file")
        if not path.is_file():
            raise PlannerError(f"{path}: no such workload file")
        return path
    for suffix in _SUFFIXES:
        candidate = builtin_dir() / f"{text}{suffix}"
        if candidate.is_file():
            return candidate
    if path.is_file():  # a YAML file without the usual suffix, given by name
        return path
    known = ", ".join(list_workloads()) or "(none installed)"
    raise PlannerError(f"unknown workload {text!r}; built-in workloads: {known} "
                       "(or give the path of a .yaml file)")


def load_workload(name_or_path: str | Path, max_len: int | None = None) -> Workload:
    """Load a built-in workload by name, or a workload YAML file by path.

    ``max_len`` re-expresses the input pmf on ``0..max_len`` (mass above it is removed
    and reported in ``clipped_mass``).  Results are cached per (file, mtime, max_len), so
    repeated loads return the same immutable object -- and hit the ranges cache.
    """
    path = resolve_workload_path(name_or_path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, max_len)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    workload = read_workload(path, max_len=max_len)
    with _LOCK:
        _CACHE[key] = workload
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return workload

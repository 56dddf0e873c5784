"""One way to run independent pieces of work: in this process, or on Ray.

A procurement study is a grid of independent solves (what-if scenarios, Table 5.1
trials, plan-versus-simulation cases); an :class:`Executor` maps one function over
such a grid.  Two implementations, one interface (scikit-learn's pattern):

* :class:`SerialExecutor` -- a loop in this process; the default, and what every
  result is defined by;
* :class:`RayExecutor` -- Ray tasks on a local Ray started with ``workers`` CPUs, or
  on an existing cluster (``address``, or the ``RAY_ADDRESS`` environment variable,
  as Ray's own tools read it).  Ray is an optional extra (``pip install -e .[ray]``).

Guarantees, both executors:

* ``map(fn, items)`` returns ``[fn(x) for x in items]`` in item order -- the work must
  be a pure function of its item (seeded), so a grid gives the same results serially
  and on Ray (tested);
* ``done(i, result)`` runs in the caller's process as each item finishes (completion
  order): what a study uses to write each finished cell at once, so an interrupted
  study resumes from its finished cells;
* a worker process that dies (killed, out of memory, a lost node) is retried, up to
  :data:`RETRIES` times per item (Ray's task retries; serially there is no worker to
  lose); an exception *raised* by ``fn`` is not retried -- it is the item's answer --
  and propagates, a :class:`PlannerError` as itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from perfmodel.reading import read_json
from planner.core.atomic import write_text_atomic
from planner.core.errors import PlannerError
from planner.core.fingerprint import first_difference, normalise

T = TypeVar("T")
R = TypeVar("R")

#: Local Ray workers: beyond this a machine is a cluster, and wants --ray-address.
MAX_WORKERS = 1024
#: Times a task whose worker died is run again before the study fails.
RETRIES = 3
#: The command line that installs the extra, for messages.
RAY_EXTRA = "pip install -e '.[ray]'"

Done = Callable[[int, Any], None]


class Executor(Protocol):
    name: str

    @property
    def workers(self) -> int: ...

    def map(self, fn: Callable[[T], R], items: Sequence[T], *,
            done: Callable[[int, R], None] | None = None) -> list[R]: ...

    def close(self) -> None: ...


class SerialExecutor:
    """``map`` as a loop in this process."""

    name = "serial"
    workers = 1

    def map(self, fn: Callable[[T], R], items: Sequence[T], *,
            done: Callable[[int, R], None] | None = None) -> list[R]:
        out = []
        for i, item in enumerate(items):
            result = fn(item)
            out.append(result)
            if done is not None:
                done(i, result)
        return out

    def close(self) -> None:
        pass


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


class RayExecutor:
    """``map`` as one Ray task per item (module docstring).

    ``fn`` is put in Ray's object store once per ``map`` and each task receives it by
    reference, so a large callable (an evaluator with its tables) crosses to each
    worker once, not once per item."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        self._ray = _import_ray()  # a missing extra fails here, before any work
        self._requested = workers
        self.address = address
        self._started = False
        self._task: Any = None

    def _connect(self) -> None:
        """Start (or join) Ray on first use: a run that never maps -- `planner plan`
        whose search turns out to be the exact MILP -- never pays Ray's start-up."""
        if self._task is not None:
            return
        ray = self._ray
        if not ray.is_initialized():
            try:
                if self.address:
                    ray.init(address=self.address, log_to_driver=False)
                else:
                    ray.init(num_cpus=self._requested, include_dashboard=False,
                             log_to_driver=False, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as err:
                where = f"--ray-address {self.address}" if self.address else "--workers"
                raise PlannerError(f"{where}: cannot start or reach Ray: "
                                   f"{' '.join(str(err).split())[:300]}") from None
            self._started = True
        self._task = ray.remote(max_retries=RETRIES, retry_exceptions=False)(_call)

    @property
    def workers(self) -> int:
        if self._requested is not None:
            return int(self._requested)
        self._connect()  # a cluster: its CPUs
        return int(self._ray.cluster_resources().get("CPU", 1))

    def map(self, fn: Callable[[T], R], items: Sequence[T], *,
            done: Callable[[int, R], None] | None = None) -> list[R]:
        self._connect()
        ray = self._ray
        fn_ref = ray.put(fn)
        pending = {self._task.remote(fn_ref, item): i for i, item in enumerate(items)}
        results: dict[int, R] = {}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    i = pending.pop(ref)
                    results[i] = _unwrap(ray, ref)
                    if done is not None:
                        done(i, results[i])
        except BaseException:
            for ref in pending:  # Ctrl-C or a failed item: stop the rest
                ray.cancel(ref, force=True)
            raise
        return [results[i] for i in range(len(items))]

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False


def _unwrap(ray: Any, ref: Any) -> Any:
    """The task's result; its own exception re-raised as itself (Ray wraps it)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = err.cause if hasattr(err, "cause") else None
        if isinstance(cause, PlannerError):
            raise PlannerError(str(cause), exit_code=cause.exit_code) from None
        if cause is not None:
            raise cause from None
        raise


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise PlannerError(f"--workers and --ray-address need Ray, an optional extra: "
                           f"{RAY_EXTRA}") from None
    return ray


class DoneStore:
    """Results of finished items, one JSON file each in ``folder``, so that a grid
    interrupted by Ctrl-C or a kill resumes from the items it finished.

    ``fingerprint`` (JSON-ready) names what the grid is; ``resume=True`` keeps a saved
    folder with the same fingerprint (a different one is refused, naming the first
    differing field), ``resume=False`` starts afresh -- and refuses to when a saved
    folder is there (it is an earlier run's work: the user deletes it, not the tool).
    Items are keyed by any value with a stable ``repr``; every write is atomic, so a
    kill mid-write loses at most that item."""

    def __init__(self, folder: Path, fingerprint: Any, *, resume: bool,
                 flag: str = "--resume") -> None:
        self.folder = Path(folder)
        self.fingerprint = normalise(fingerprint)
        index = self.folder / "index.json"
        if resume:
            if not index.is_file():
                raise PlannerError(f"{flag}: nothing to resume ({self.folder} holds no "
                                   "finished work); run without it")
            diff = first_difference(read_json(index, "resume index"), self.fingerprint,
                                    "index")
            if diff is not None:
                field, old, new = diff
                raise PlannerError(f"{index}: the saved results belong to another run "
                                   f"(field '{field}': saved {old!r}, now {new!r}); run "
                                   f"without {flag}")
        else:
            # an earlier run's finished work is the user's: never wiped to start afresh
            if self.folder.exists() or self.folder.is_symlink():
                raise PlannerError(f"{self.folder}: an interrupted run's finished work is "
                                   f"there; resume it with {flag}, or delete the folder to "
                                   "start over")
            write_text_atomic(index, json.dumps(self.fingerprint))
        self.loaded = 0  # items found finished
        self.saved = 0  # items on disk now

    def _path(self, key: Any) -> Path:
        return self.folder / (hashlib.sha256(repr(key).encode()).hexdigest()[:32] + ".json")

    def get(self, key: Any) -> Any | None:
        path = self._path(key)
        if not path.is_file():
            return None
        d = read_json(path, "saved result")
        if not isinstance(d, dict) or d.get("key") != repr(key) or "value" not in d:
            raise PlannerError(f"{path}: field 'key' does not match its item; delete "
                               f"{self.folder} to start afresh")
        self.loaded += 1
        self.saved += 1
        return d["value"]

    def put(self, key: Any, value: Any) -> None:
        write_text_atomic(self._path(key), json.dumps({"key": repr(key), "value": value}))
        self.saved += 1

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def map_resumable(executor: Executor, fn: Callable[[T], R], items: Sequence[T],
                  store: DoneStore | None = None, keys: Sequence[Any] | None = None
                  ) -> list[R]:
    """``executor.map(fn, items)`` that skips the items ``store`` holds and saves each
    new result (JSON-ready) the moment it is done; ``keys`` default to the items."""
    keys = list(items) if keys is None else list(keys)
    results: dict[int, Any] = {}
    todo = []
    for i, key in enumerate(keys):
        saved = store.get(key) if store is not None else None
        if saved is not None:
            results[i] = saved
        else:
            todo.append(i)

    def done(j: int, value: R) -> None:
        results[todo[j]] = value
        if store is not None:
            store.put(keys[todo[j]], value)

    executor.map(fn, [items[i] for i in todo], done=done)
    return [results[i] for i in range(len(keys))]


def make_executor(workers: int | None = None, address: str | None = None) -> Executor:
    """Serial unless ``workers > 1`` or a Ray cluster is named: ``address``, else the
    ``RAY_ADDRESS`` environment variable (how Ray's own tools find a cluster) unless
    ``workers`` is 1, which always means this process."""
    if workers is not None and (isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS):
        raise PlannerError(f"--workers must be in 1..{MAX_WORKERS}, got {workers!r}")
    if address is not None and not str(address).strip():
        raise PlannerError("--ray-address: empty address")
    if address is None and workers != 1:
        address = os.environ.get("RAY_ADDRESS") or None
    if address:
        return RayExecutor(workers, address)
    if workers is not None and workers > 1:
        return RayExecutor(workers)
    return SerialExecutor()


__all__ = ["MAX_WORKERS", "RAY_EXTRA", "RETRIES", "DoneStore", "Executor", "RayExecutor",
           "SerialExecutor", "make_executor", "map_resumable"]

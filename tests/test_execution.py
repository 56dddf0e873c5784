"""The execution layer (planner.core.execution): the serial and Ray executors give the same
results in the same order, report each item as it finishes, retry a task whose worker
died, and propagate an item's own error; without Ray, --workers says how to install it.
Ray runs locally with two workers, started once for the module."""

from __future__ import annotations

import builtins
import os

import pytest

from planner.core.errors import PlannerError
from planner.core.execution import RETRIES, RayExecutor, SerialExecutor, make_executor


@pytest.fixture(scope="module")
def ray_executor():
    pytest.importorskip("ray", reason="the ray extra is installed by scripts/install.sh")
    ex = RayExecutor(workers=2)
    yield ex
    ex.close()


def test_serial_map_is_a_loop_with_done_in_order():
    seen = []
    out = SerialExecutor().map(lambda x: x * x, [3, 1, 2], done=lambda i, r: seen.append((i, r)))
    assert out == [9, 1, 4] and seen == [(0, 9), (1, 1), (2, 4)]


def test_make_executor_choices(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert isinstance(make_executor(), SerialExecutor)
    assert isinstance(make_executor(1), SerialExecutor)
    monkeypatch.setenv("RAY_ADDRESS", "ray://nowhere:1")
    assert isinstance(make_executor(1), SerialExecutor)  # 1 always means this process
    for bad in (0, -2, 10**6):
        with pytest.raises(PlannerError, match="--workers must be in"):
            make_executor(bad)
    with pytest.raises(PlannerError, match="--ray-address: empty"):
        make_executor(None, " ")


def test_without_ray_workers_says_how_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(PlannerError) as err:
        make_executor(4)
    assert "pip install -e '.[ray]'" in str(err.value) and err.value.exit_code == 2


def test_ray_map_equals_serial_and_reports_each_item(ray_executor):
    def work(x):
        import math
        return (x, math.sqrt(x) * 1.5, os.getpid())

    items = list(range(12))
    seen = []
    out = ray_executor.map(work, items, done=lambda i, r: seen.append(i))
    serial = SerialExecutor().map(work, items)
    assert [o[:2] for o in out] == [s[:2] for s in serial]
    assert sorted(seen) == items
    assert ray_executor.workers == 2


def test_ray_item_error_propagates_as_itself(ray_executor):
    def work(x):
        if x == 3:
            raise PlannerError("scenario 3: no plan", exit_code=1)
        return x

    with pytest.raises(PlannerError, match="scenario 3: no plan") as err:
        ray_executor.map(work, list(range(6)))
    assert err.value.exit_code == 1


def test_ray_retries_a_task_whose_worker_died(ray_executor, tmp_path):
    """The first attempt at item 2 kills its worker process outright; Ray runs it again
    on a new worker and the map completes with every result."""
    marker = str(tmp_path / "died-once")

    def work(x):
        if x == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker process dies mid-task
        return x * 10

    assert RETRIES >= 1
    assert ray_executor.map(work, [0, 1, 2, 3]) == [0, 10, 20, 30]
    assert os.path.exists(marker)


def test_ray_starts_only_when_work_is_mapped():
    """`planner plan --workers 2` whose search is the exact MILP never maps: Ray must
    not be started for it (its start-up is seconds)."""
    pytest.importorskip("ray")
    ex = RayExecutor(workers=2)
    assert ex.workers == 2 and ex._task is None
    ex.close()  # nothing to shut down

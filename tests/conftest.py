"""Shared test helpers."""

from __future__ import annotations

import perfmodel.float_path  # noqa: F401  (before numpy: one float path on every CPU)

import fcntl
import hashlib
import pickle
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _perfmodel_digest() -> str:
    """Digest of everything the validation table reads: the perfmodel package's code and
    data files."""
    h = hashlib.blake2b(digest_size=16)
    root = REPO / "perfmodel"
    for f in sorted(root.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="session", autouse=True)
def _validation_table_once_per_run(tmp_path_factory, worker_id):
    """Score the validation table (every published row with its flips: minutes on two
    cores) once per test run rather than once per xdist worker.  The first worker to ask
    scores it under a file lock and leaves a pickle named by :func:`_perfmodel_digest`
    in the run's shared temporary folder; a worker that asks later loads it.  Each
    process still keeps its own copy (``perfmodel.validation.table`` hands out copies)."""
    from perfmodel import validation

    root = tmp_path_factory.getbasetemp()
    if worker_id != "master":  # each worker's basetemp sits in the run's folder
        root = root.parent
    real = validation._table

    @lru_cache(maxsize=1)
    def shared():
        path = root / f"validation-table-{_perfmodel_digest()}.pickle"
        with open(root / "validation-table.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if path.exists():
                return pickle.loads(path.read_bytes())
            rows = real()
            tmp = path.with_suffix(".partial")
            tmp.write_bytes(pickle.dumps(rows))
            tmp.replace(path)
            return rows

    validation._table = shared
    yield
    validation._table = real


@pytest.fixture(scope="session")
def written_run(tmp_path_factory):
    """A run folder as ``planner.report.write_run`` writes the report fixtures' small plan
    (S=64, J=4, history=3), written once per test process: writing renders its plots,
    seconds a time.  Tests that edit or read one take :func:`run_copy`."""
    import sys

    sys.path.insert(0, str(REPO / "tests" / "report"))
    from report_fixtures import make_plan_dict

    from planner.report import write_run

    run_dir = tmp_path_factory.mktemp("written") / "run"
    write_run(make_plan_dict(S=64, J=4, history=3), run_dir)
    return run_dir


@pytest.fixture
def run_copy(written_run, tmp_path):
    """A fresh copy of :func:`written_run` at ``tmp_path / "run"``."""
    import shutil

    return Path(shutil.copytree(written_run, tmp_path / "run"))


#: A two-type inventory small enough for end-to-end CLI and plan tests.
SMALL_INVENTORY = """
name: small-test
source: "test prices"
gpus:
  - {type: H200, count: 16, price_per_hour: 4.0, min_island: 8}
  - {type: H20, count: 32, price_per_hour: 1.0, min_island: 8}
"""


@pytest.fixture(scope="session")
def small_inventory(tmp_path_factory):
    """Path of :data:`SMALL_INVENTORY` written to a file (read-only for the tests)."""
    p = tmp_path_factory.mktemp("inventory") / "small.yaml"
    p.write_text(SMALL_INVENTORY)
    return p


@pytest.fixture
def run_cli(capsys):
    """Run the ``planner`` CLI in-process; returns (exit status, stdout, stderr)."""
    from planner.cli.main import run

    def _run(*argv: str):
        rc = run(list(argv))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return _run


class EvaluationFault:
    """Makes one layout evaluation of a search raise (see :func:`evaluation_fault`)."""

    def __init__(self, monkeypatch) -> None:
        from planner.context.evaluate import LayoutEvaluator

        self._monkeypatch, self._cls = monkeypatch, LayoutEvaluator
        self._real = LayoutEvaluator.__call__
        self.calls = 0

    def arm(self, at: int, exc: BaseException) -> None:
        """The ``at``-th evaluation from now raises ``exc``; the others run for real."""
        real = self._real

        def faulty(evaluator, layout):
            self.calls += 1
            if self.calls == at:
                raise exc
            return real(evaluator, layout)

        self._monkeypatch.setattr(self._cls, "__call__", faulty)

    def disarm(self) -> None:
        self._monkeypatch.setattr(self._cls, "__call__", self._real)


@pytest.fixture
def evaluation_fault(monkeypatch) -> EvaluationFault:
    """Interrupt or break a search at a chosen evaluation (``.arm(3, KeyboardInterrupt)``);
    ``.calls`` counts the evaluations made since."""
    return EvaluationFault(monkeypatch)


@pytest.fixture(autouse=True)
def _every_plan_accounted(monkeypatch):
    """Every plan the suite makes (``Plan.to_dict``, and the closed loop's rewrite of it)
    must account for every GPU and dollar the same way everywhere (planner.context.accounting);
    a plan that does not fails the test that made it."""
    from planner import plan as plan_module
    from planner.context.accounting import accounting_errors
    from planner.sim import closed_loop

    original = plan_module.Plan.to_dict
    original_loop = closed_loop.with_loop

    def checked(d):
        errors = accounting_errors(d)
        assert not errors, "plan accounting: " + "; ".join(errors)
        return d

    monkeypatch.setattr(plan_module.Plan, "to_dict", lambda self: checked(original(self)))
    monkeypatch.setattr(closed_loop, "with_loop",
                        lambda d, loop: checked(original_loop(d, loop)))

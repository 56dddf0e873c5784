"""Shared test helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


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

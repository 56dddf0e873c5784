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


@pytest.fixture(autouse=True)
def _every_plan_accounted(monkeypatch):
    """Every plan the suite makes (``Plan.to_dict``, and the closed loop's rewrite of it)
    must account for every GPU and dollar the same way everywhere (planner.accounting);
    a plan that does not fails the test that made it."""
    from planner import plan as plan_module
    from planner.accounting import accounting_errors
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

"""Shared test helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def run_cli(capsys):
    """Run the ``planner`` CLI in-process; returns (exit status, stdout, stderr)."""
    from planner.cli.main import run

    def _run(*argv: str):
        rc = run(list(argv))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return _run

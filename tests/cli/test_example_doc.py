"""docs/example.md and the README's excerpt are the README command's real output: the
test re-runs the command (pinned seed) and fails when they differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parents[2]


def _script():
    return load_script("example_doc")


@pytest.mark.slow
def test_worked_example_matches_the_command():
    ex = _script()
    text, plan, _wall = ex.run()
    doc = (ROOT / "docs" / "example.md").read_text()
    assert ex.terminal_block(doc) == text.rstrip(), \
        "docs/example.md is stale: run .venv/bin/python scripts/example_doc.py"
    assert ex.readme_head(text) in (ROOT / "README.md").read_text()
    for line in ex.reading(plan, 0.0)[:-1]:  # every note but the wall time
        assert line in doc

"""docs/limits.md lists every cap from the constant the code enforces (issue 32, item
4: each cap stated); this fails when a constant changes and the page does not."""

from __future__ import annotations

from pathlib import Path

from script_module import load_script

REPO = Path(__file__).resolve().parents[2]


def _script():
    return load_script("limits_doc")


def test_limits_page_is_current():
    mod = _script()
    assert (REPO / "docs" / "limits.md").read_text() == mod.page(), \
        "docs/limits.md is stale: run .venv/bin/python scripts/limits_doc.py"


def test_every_list_cap_is_in_the_help_of_the_flag_that_takes_the_file(run_cli):
    """The caps a user meets first are in --help of the flag or argument that takes
    the file, with a pointer to the page for the rest."""
    from planner.core.defaults import MAX_SCENARIOS
    from planner.fleet.inventory import MAX_TYPES
    from planner.services.spec import MAX_SERVICES
    from planner.workload.profile import MAX_SLOTS

    def help_of(*argv: str) -> str:
        rc, out, _ = run_cli(*argv, "--help")
        assert rc == 0
        return " ".join(out.split())

    plan = help_of("plan")
    for needle in (f"at most {MAX_TYPES} GPU types", f"at most {MAX_SERVICES} services",
                   f"at most {MAX_SLOTS:,} slots", "docs/limits.md"):
        assert needle in plan, needle
    whatif = help_of("whatif")
    assert f"at most {MAX_SCENARIOS:,} scenarios" in whatif and "docs/limits.md" in whatif
    for command in ("report", "simulate", "export"):
        assert "docs/limits.md" in help_of(command), command

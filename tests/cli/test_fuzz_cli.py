"""Property-based hostile command lines (hypothesis): every generated case -- a flag
given junk, an input file corrupted, an output path that cannot be a run folder --
returns 0, 1 or 2, prints one ``error:`` line naming the flag or file when it fails,
and leaves its working folder as it was.  The cases are scripts/fuzz_cli.py's, which
runs a thousand or more of them."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from script_module import load_script

fuzz = load_script("fuzz_cli", register=True)  # its dataclasses look their module up
DOCS = fuzz.base_docs()


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-cli")
    fuzz.build_fixtures(root / "fixtures")
    return root


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_hostile_command_lines(fixtures, seed):
    case = fuzz.make_case(random.Random(seed), DOCS)
    out = fuzz.run_case(case, fixtures / "fixtures", fixtures, timeout=300)
    assert out.status not in fuzz.BAD, (f"planner {' '.join(case.argv)} <- {case.what}: "
                                        f"{out.status}: {out.detail}")

"""Property-based hostile input (hypothesis): every generated file either loads or
fails as one PlannerError line naming the file -- for inventories, workloads, model
configs, plan.json (read and rendered) and search checkpoints.  The generators are
scripts/fuzz_inputs.py's, which runs thousands of seeded cases."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from script_module import load_script

fuzz = load_script("fuzz_inputs")
BASE = fuzz._base_docs()


def _case(tmp: Path, fmt: str, draw_field: int, junk: int, corrupt: int | None) -> Path:
    doc, kind = BASE[fmt]
    path = tmp / f"case.{kind}"
    if corrupt is None:
        paths = fuzz._paths(doc)
        fuzz.write(path, fuzz.replace_field(doc, paths[draw_field % len(paths)],
                                            fuzz.JUNK[junk % len(fuzz.JUNK)]), kind)
    else:
        fuzz.write(path, doc, kind)
        path.write_bytes(fuzz.corrupt_bytes(path.read_bytes(), random.Random(corrupt)))
    return path


@pytest.mark.parametrize("fmt", ["inventory", "workload", "model", "checkpoint", "plan"])
@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.integers(0, 10_000), junk=st.integers(0, 100),
       corrupt=st.one_of(st.none(), st.integers(0, 2**31)))
def test_hostile_file_loads_or_is_one_line(tmp_path, fmt, field, junk, corrupt):
    path = _case(tmp_path, fmt, field, junk, corrupt)
    assert fuzz.check(fmt, path) in ("ok", "error")

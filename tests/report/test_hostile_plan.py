"""A hand-edited plan.json is checked value by value on read: one line naming the file
and the field, never a report drawn from nonsense."""

from __future__ import annotations

import json

import pytest
from report_fixtures import make_plan_dict

from planner.core.errors import PlannerError
from planner.run.schema import json_safe, load_plan


@pytest.fixture()
def write(tmp_path):
    def _write(edit) -> str:
        plan = json.loads(json.dumps(json_safe(make_plan_dict(S=100, J=4, history=3))))
        edit(plan)
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(plan))
        return str(path)
    return _write


def _set(path: tuple, value):
    def edit(plan):
        d = plan
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return edit


@pytest.mark.parametrize("path, value, field", [
    (("islands", 0, "size"), -4, "islands[0].size"),
    (("islands", 0, "size"), 2.5, "islands[0].size"),
    (("islands", 0, "gpu"), "NoSuchGPU", "islands[0].gpu"),
    (("islands", 0, "config"), "tp3-dp1-ep1", "islands[0].config"),
    (("islands", 0, "config"), "fast", "islands[0].config"),
    (("islands", 0, "batch"), 0, "islands[0].batch"),
    (("islands", 0, "shares"), [2.0, 0, 0, 0], "islands[0].shares"),
    (("summary", "requests_per_s"), "abc", "summary.requests_per_s"),
    (("summary", "requests_per_s"), -1, "summary.requests_per_s"),
    (("summary", "cost_per_hour"), None, "summary.cost_per_hour"),
])
def test_bad_value_names_the_field(write, path, value, field):
    source = write(_set(path, value))
    with pytest.raises(PlannerError) as err:
        load_plan(source)
    msg = str(err.value)
    assert source in msg and f"'{field}'" in msg and "\n" not in msg


def test_nan_in_plan_json_is_refused(tmp_path, write):
    source = write(lambda plan: None)
    text = open(source).read().replace('"requests_per_s": ', '"requests_per_s": NaN, "x": ', 1)
    open(source, "w").write(text)
    with pytest.raises(PlannerError, match="NaN is not a number JSON allows"):
        load_plan(source)


def test_a_good_plan_reads(write):
    assert load_plan(write(lambda plan: None))["schema_version"] == 1

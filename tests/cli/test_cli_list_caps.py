"""Issue 32, item 4: every list a file can hold has a cap, stated in the help text or
the format's docs, refused in one line naming the file and field before any work --
and a YAML alias "bomb" (a few lines expanding to a billion values) is refused by
count instead of walked for hours."""

from __future__ import annotations

import pytest

from perfmodel.errors import InputError
from perfmodel.reading import MAX_VALUES, parse_yaml


def _one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _bomb(levels: int, fan: int = 10) -> str:
    lines = ["a0: &a0 [" + ", ".join(["x"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_by_its_expanded_size():
    with pytest.raises(InputError, match=f"more than {MAX_VALUES:,} values"):
        parse_yaml(_bomb(9) + "gpus: *a8\n", "bomb.yaml")
    # the same shape, small enough, is read: aliases themselves are allowed
    data = parse_yaml(_bomb(3), "ok.yaml")
    assert len(data["a2"]) == 10 and data["a2"][0] is data["a1"]


def test_a_document_holding_itself_is_refused():
    with pytest.raises(InputError, match="holds itself"):
        parse_yaml("gpus: &x [{type: H200, count: 8}, *x]\n", "cyc.yaml")


def test_alias_bomb_inventory_through_the_cli(run_cli, tmp_path):
    inv = tmp_path / "bomb.yaml"
    inv.write_text(_bomb(9) + "gpus: *a8\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and str(inv) in line and "values" in line
    assert not (tmp_path / "o").exists()


def test_inventory_types_are_capped(run_cli, tmp_path):
    from planner.fleet.inventory import MAX_TYPES

    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n" + "".join("  - {type: H200, count: 8}\n"
                                        for _ in range(MAX_TYPES + 1)))
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and f"at most {MAX_TYPES} GPU types" in line and "'gpus'" in line


def test_mixture_components_are_capped_counting_nested_mixtures(run_cli, tmp_path):
    from planner.workload.families import MAX_COMPONENTS

    comp = "{weight: 1, type: point, value: 100}"
    wl = tmp_path / "w.yaml"
    # 9 nested mixtures of 8: 9 x 8 leaves, each list under the cap on its own
    inner = "{weight: 1, type: mixture, components: [" + ", ".join([comp] * 8) + "]}"
    wl.write_text("format_version: 1\nname: w\ninput: {type: mixture, components: ["
                  + ", ".join([inner] * 9) + "]}\ndecode: {mean: 100, max: 200}\n")
    rc, _, err = run_cli("plan", "--workload", str(wl), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and f"more than {MAX_COMPONENTS} distributions" in line
    assert "input.components" in line


def test_joint_histogram_bins_are_capped(run_cli, tmp_path):
    from planner.workload.schema import MAX_JOINT_BINS

    n = MAX_JOINT_BINS + 1
    wl = tmp_path / "w.yaml"
    wl.write_text("format_version: 1\nname: w\ninput: {type: point, value: 100}\n"
                  "decode: {mean: 100, max: 200}\n"
                  f"joint: {{input_edges: {list(range(1, n + 2))}, output_edges: "
                  f"{list(range(1, n + 2))}, counts: []}}\n")
    rc, _, err = run_cli("plan", "--workload", str(wl), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and "joint.input_edges" in line and f"at most {MAX_JOINT_BINS:,}" in line


@pytest.mark.parametrize("studies,field,cap", [
    ("add: [" + ", ".join(["{type: B200, count: 1, price_per_hour: 6}"] * 65) + "]",
     "studies.add", "at most 64"),
    ("remove: [" + ", ".join(["H200"] * 65) + "]", "studies.remove", "at most 64"),
    ("workloads: [" + ", ".join(["azure-code-2023"] * 65) + "]", "studies.workloads",
     "at most 64"),
    ("prices: {H200: [" + ", ".join(["1.0x"] * 1001) + "]}", "studies.prices.H200",
     "at most 1,000"),
    ("workloads: [{mix: [azure-conv-2023, azure-code-2023], share: ["
     + ", ".join(["0.5"] * 1001) + "]}]", "studies.workloads[0].share", "at most 1,000"),
])
def test_whatif_spec_lists_are_capped(run_cli, small_inventory, tmp_path, studies, field,
                                      cap):
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"inventory: {small_inventory}\nbudget: 64\nstudies:\n  {studies}\n")
    rc, _, err = run_cli("whatif", str(spec), "--out", str(tmp_path / "w"))
    line = _one_line(err)
    assert rc == 2 and field in line and cap in line, line
    assert not (tmp_path / "w").exists()


def test_whatif_repeated_flags_are_capped(run_cli, small_inventory, tmp_path):
    argv = [x for _ in range(65) for x in ("--remove", "H200")]
    rc, _, err = run_cli("whatif", "--inventory", str(small_inventory), "--budget", "64",
                         *argv, "--out", str(tmp_path / "w"))
    line = _one_line(err)
    assert rc == 2 and "--remove" in line and "at most 64" in line


def test_a_yaml_file_is_capped_below_the_json_cap(tmp_path):
    """YAML parses about a thousand times slower than JSON: its own, lower size cap
    refuses a 9 MiB inventory before parsing it (a 40 MB one took 50 s to refuse)."""
    from perfmodel.reading import MAX_YAML_BYTES, read_json, read_yaml

    big = tmp_path / "inv.yaml"
    big.write_text("# " + "x" * MAX_YAML_BYTES + "\ngpus: []\n")
    with pytest.raises(InputError, match=f"more than {MAX_YAML_BYTES:,} bytes"):
        read_yaml(big)
    as_json = tmp_path / "plan.json"
    as_json.write_text('{"pad": "' + "x" * MAX_YAML_BYTES + '"}')
    assert len(read_json(as_json)["pad"]) == MAX_YAML_BYTES

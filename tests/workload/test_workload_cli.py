"""`planner workload list | show | fit` through the real CLI entry point."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.cli.main import run
from planner.workload import list_workloads, load_workload

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_list(capsys):
    assert run(["workload", "list"]) == 0
    out = capsys.readouterr().out
    for name in list_workloads():
        assert name in out
    assert "max_len" in out


def test_show_prints_stats_and_writes_png(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["workload", "show", "thesis-fig4.2"]) == 0
    out = capsys.readouterr().out
    w = load_workload("thesis-fig4.2")
    png = tmp_path / "reports" / "workload-thesis-fig4.2.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert f"{w.mean_input:.6g}" in out
    assert str(w.quantile(0.99)) in out and "p99" in out


def test_show_json(tmp_path, capsys):
    png = tmp_path / "fig.png"
    assert run(["workload", "show", "example-mixture", "--json", "--out", str(png)]) == 0
    summary = json.loads(capsys.readouterr().out)
    w = load_workload("example-mixture")
    assert summary["input"]["mean"] == pytest.approx(w.mean_input)
    assert summary["input"]["p90"] == w.quantile(0.9)
    assert summary["rate_rps"] == 4.0 and summary["cv"] == 2.0
    assert summary["png"] == str(png) and png.read_bytes()[:8] == PNG_MAGIC


def test_show_max_len_reports_clipping(capsys):
    assert run(["workload", "show", "thesis-fig4.2", "--max-len", "2000", "--no-plot",
                "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["max_len"] == 2000
    assert summary["clipped_mass"] == pytest.approx(
        1 - load_workload("thesis-fig4.2").pmf[:2001].sum())


def test_show_unknown_name(capsys):
    assert run(["workload", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown workload 'nope'" in err


def test_show_a_folder_says_it_is_one(tmp_path, capsys):
    assert run(["workload", "show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}: is a folder, not a workload file\n"


def test_a_max_len_below_every_input_names_the_flag(capsys):
    """The error named the built-in file's field 'input', which the user did not write."""
    assert run(["workload", "show", "azure-conv-2023", "--max-len", "1", "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: --max-len 1: azure-conv-2023 has no requests with inputs of at "
                   "most 1 tokens\n")


def test_fit_end_to_end(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:00:00,100,10\n2023-11-16 18:00:01,0,10\n"
                     "2023-11-16 18:00:02,300,30\n")
    out = tmp_path / "workloads" / "mine.yaml"
    assert run(["workload", "fit", str(trace), "--format", "azure", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "read 3 rows, kept 2" in text and "input length 0: 1" in text
    w = load_workload(out)
    assert w.name == "mine" and w.max_len == 300
    np.testing.assert_allclose(w.pmf[[100, 300]], 0.5)
    assert w.rate_rps == pytest.approx(0.5)
    # The same file via show: dropped rows are reported there too.
    assert run(["workload", "show", str(out), "--no-plot"]) == 0
    assert "input length 0: 1" in capsys.readouterr().out


def test_fit_with_columns_and_name(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"p": 5, "c": 1, "at": 0}\n{"p": 9, "c": 3, "at": 4}\n')
    out = tmp_path / "x.yaml"
    rc = run(["workload", "fit", str(trace), "--format", "jsonl", "--columns",
              "input=p,output=c,time=at", "--name", "custom", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    w = load_workload(out)
    assert w.name == "custom" and w.rate_rps == pytest.approx(0.25)


@pytest.mark.parametrize("args, fragment", [
    (["--format", "azure"], "bad.csv:3: column 'ContextTokens': 'abc' is not a number"),
    (["--format", "excel"], "unknown trace format 'excel'"),
    (["--format", "csv", "--columns", "input=ContextTokens,outptu=x"], "--columns"),
])
def test_fit_errors_exit_2_without_output(tmp_path, capsys, args, fragment):
    trace = tmp_path / "bad.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                     "2023-11-16 18:00:00,100,10\n2023-11-16 18:00:01,abc,10\n")
    out = tmp_path / "o.yaml"
    assert run(["workload", "fit", str(trace), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and err.startswith("error: ") and err.count("\n") == 1
    assert not out.exists()


def test_bad_workload_file_exit_2(tmp_path, capsys):
    bad = tmp_path / "w.yaml"
    bad.write_text("name: w\ninput: {type: normal, mu: 5, sigma: 0}\ndecode: {mean: 1, max: 2}\n")
    assert run(["workload", "show", str(bad), "--no-plot"]) == 2
    err = capsys.readouterr().err
    assert "w.yaml: field 'input.sigma': must be > 0" in err

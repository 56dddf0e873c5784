"""Trace loaders and fitting, on small fixture files written by the tests."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.core.errors import PlannerError
from planner.workload import fit_trace, iter_trace, load_workload, write_workload
from planner.workload.fit import histogram_spec
from planner.workload.prefix import PrefixCacheEstimator

AZURE_2023 = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:00:00.0000000,100,10
2023-11-16 18:00:00.5000000,200,20
2023-11-16 18:00:02.0000000,300,30
2023-11-16 18:00:02.5000000,100,40
"""
AZURE_2024 = """TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,4000,100
2024-05-10 00:00:01+00:00,128,7
2024-05-10 00:00:01.509930+00:00,4000,300
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
46,GPT-4,417,276,693,API log
118,ChatGPT,1360,0,1360,Conversation log
120,GPT-4,200,50,250,API log
"""
MOONCAKE = [
    {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]},
    {"timestamp": 1000, "input_length": 1200, "output_length": 20, "hash_ids": [1, 2, 3]},
    {"timestamp": 3000, "input_length": 600, "output_length": 30, "hash_ids": [1, 4]},
    {"timestamp": 3500, "input_length": 300, "output_length": 40, "hash_ids": [5]},
]


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _jsonl(tmp_path, name, records, blank_after=None):
    lines = []
    for i, r in enumerate(records):
        lines.append(json.dumps(r))
        if blank_after == i:
            lines.append("")
    return _write(tmp_path, name, "\n".join(lines) + "\n")


def _gap_stats(seconds):
    g = np.diff(np.asarray(seconds, dtype=float))
    return len(g) / (seconds[-1] - seconds[0]), g.std() / g.mean()


# ------------------------------------------------------------------ formats
def test_azure_2023(tmp_path):
    w, rep = fit_trace(_write(tmp_path, "a.csv", AZURE_2023), "azure", name="a")
    assert (rep.rows_read, rep.rows_kept, dict(rep.dropped)) == (4, 4, {})
    assert w.max_len == 300
    np.testing.assert_allclose(w.pmf[[100, 200, 300]], [0.5, 0.25, 0.25])
    assert w.decode_mean == pytest.approx(25.0) and w.decode_max == 40
    rate, cv = _gap_stats([0.0, 0.5, 2.0, 2.5])
    assert w.rate_rps == pytest.approx(rate) and w.cv == pytest.approx(cv)
    assert w.trace_stats["requests"] == 4 and w.trace_stats["duration_s"] == pytest.approx(2.5)
    # E[d | s] from the joint: inputs 100 (outputs 10, 40) share the first 16-token cell.
    assert w.decode_mean_given_input(100) == pytest.approx(25.0)


def test_azure_2024_offsets_and_missing_fraction(tmp_path):
    w, _ = fit_trace(_write(tmp_path, "b.csv", AZURE_2024), "azure2024")
    rate, cv = _gap_stats([0.009930, 1.0, 1.509930])
    assert w.rate_rps == pytest.approx(rate, rel=1e-12)
    assert w.cv == pytest.approx(cv, rel=1e-9)
    assert w.pmf[4000] == pytest.approx(2 / 3)


def test_burstgpt_failures_are_dropped_and_counted(tmp_path):
    w, rep = fit_trace(_write(tmp_path, "burst.csv", BURSTGPT), "burstgpt")
    assert rep.rows_read == 5 and rep.rows_kept == 3
    assert dict(rep.dropped) == {"output length 0": 2}
    assert w.trace_stats["dropped"] == {"output length 0": 2}
    assert any("output length 0: 2" in line for line in rep.lines())
    assert w.decode_mean == pytest.approx((18 + 276 + 50) / 3)
    rate, cv = _gap_stats([5, 46, 120])
    assert w.rate_rps == pytest.approx(rate) and w.cv == pytest.approx(cv)


def test_mooncake_prefix_hit_rate(tmp_path):
    path = _jsonl(tmp_path, "mc.jsonl", MOONCAKE, blank_after=1)
    w, rep = fit_trace(path, "mooncake")
    assert rep.rows_kept == 4 and rep.dropped == {"empty row": 1}
    # r2 reuses blocks 1,2 (1024 tokens); r3 block 1 (512); r1, r4 nothing.
    assert w.prefix_hit_rate == pytest.approx((1024 + 512) / 3100)
    rate, _ = _gap_stats([0.0, 1.0, 3.0, 3.5])  # Mooncake timestamps are milliseconds
    assert w.rate_rps == pytest.approx(rate)
    # A 2-block LRU evicts block 1 before r3 arrives.
    w2, _ = fit_trace(path, "mooncake", cache_blocks=2)
    assert w2.prefix_hit_rate == pytest.approx(1024 / 3100)


def test_prefix_estimator_caps_hits_at_input_length():
    est = PrefixCacheEstimator(block_size=512)
    est.observe(700, ["a", "b"])
    assert est.observe(600, ["a", "b"]) == 600
    assert est.hit_rate == pytest.approx(600 / 1300)


def test_generic_csv_with_mapping_and_ms(tmp_path):
    text = "ts,prompt,completion,user\n0,10,1,a\n250,20,2,b\n1000,30,3,c\n"
    path = _write(tmp_path, "g.csv", text)
    cols = {"input": "prompt", "output": "completion", "time": "ts"}
    w, _ = fit_trace(path, "csv", columns=cols, time_unit="ms")
    rate, cv = _gap_stats([0.0, 0.25, 1.0])
    assert w.rate_rps == pytest.approx(rate) and w.cv == pytest.approx(cv)
    assert w.mean_input == pytest.approx(20.0)
    # Without a time column: no rate, no CV, and the report says so.
    w2, rep2 = fit_trace(path, "csv", columns={"input": "prompt", "output": "completion"})
    assert w2.rate_rps is None and w2.cv is None
    assert any("no timestamps" in x for x in rep2.warnings)


def test_generic_jsonl(tmp_path):
    recs = [{"in": 5, "out": 2, "t": "2024-01-01T00:00:00Z"},
            {"in": 7, "out": 3, "t": "2024-01-01T00:00:02Z"}]
    w, _ = fit_trace(_jsonl(tmp_path, "g.jsonl", recs), "jsonl",
                     columns={"input": "in", "output": "out", "time": "t"})
    assert w.rate_rps == pytest.approx(0.5) and w.pmf[5] == pytest.approx(0.5)


def test_chunking_does_not_change_the_result(tmp_path):
    rng = np.random.default_rng(7)
    n = 200
    t = np.cumsum(rng.exponential(0.1, n))
    inp, out = rng.integers(1, 3000, n), rng.integers(1, 500, n)
    inp[[3, 50, 51]] = 0  # dropped rows, some straddling chunk boundaries
    out[[8, 120]] = 0
    rows = [f"{ti:.6f},{a},{b}" for ti, a, b in zip(t, inp, out, strict=True)]
    path = _write(tmp_path, "r.csv", "t,i,o\n" + "\n".join(rows) + "\n")
    cols = {"input": "i", "output": "o", "time": "t"}
    one, rep1 = fit_trace(path, "csv", columns=cols)
    many, rep2 = fit_trace(path, "csv", columns=cols, chunk_rows=7)
    assert len(list(iter_trace(path, "csv", columns=cols, chunk_rows=7))) == -(-n // 7)
    assert dict(rep1.dropped) == dict(rep2.dropped) == {"input length 0": 3,
                                                        "output length 0": 2}
    np.testing.assert_array_equal(one.pmf, many.pmf)
    np.testing.assert_array_equal(one.joint.counts, many.joint.counts)
    np.testing.assert_allclose(one.joint.output_mean, many.joint.output_mean)
    assert many.cv == pytest.approx(one.cv, rel=1e-12)
    assert many.rate_rps == pytest.approx(one.rate_rps, rel=1e-12)


def test_max_len_drops_and_reports_clipped_mass(tmp_path):
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(
        f"2023-11-16 18:00:0{i}.0,{s},5" for i, s in enumerate([100, 200, 300, 5000])) + "\n"
    w, rep = fit_trace(_write(tmp_path, "c.csv", text), "azure", max_len=1000)
    assert w.max_len == 1000 and rep.rows_kept == 3
    assert dict(rep.dropped) == {"input length > max_len 1000": 1}
    assert w.clipped_mass == pytest.approx(0.25) and rep.clipped_mass == pytest.approx(0.25)
    np.testing.assert_allclose(w.pmf[[100, 200, 300]], 1 / 3)


def test_unsorted_timestamps_give_no_cv(tmp_path):
    text = "t,i,o\n0,10,1\n5,10,1\n2,10,1\n"
    w, rep = fit_trace(_write(tmp_path, "u.csv", text), "csv",
                       columns={"input": "i", "output": "o", "time": "t"})
    assert w.cv is None and w.rate_rps == pytest.approx(2 / 5)
    assert any("backwards" in x for x in rep.warnings)


def test_fit_yaml_round_trip(tmp_path):
    w, _ = fit_trace(_write(tmp_path, "a.csv", AZURE_2023), "azure", name="mine")
    out = tmp_path / "mine.yaml"
    write_workload(out, w)
    back = load_workload(out)
    np.testing.assert_array_equal(back.pmf, w.pmf)
    np.testing.assert_array_equal(back.decode_pmf, w.decode_pmf)
    np.testing.assert_array_equal(back.joint.counts, w.joint.counts)
    assert (back.rate_rps, back.cv, back.decode_mean, back.decode_max) == (
        w.rate_rps, w.cv, w.decode_mean, w.decode_max)
    assert back.trace_stats == w.trace_stats and back.fingerprint == w.fingerprint


def test_histogram_spec_switches_to_bins():
    counts = np.zeros(20_001, dtype=np.int64)
    counts[1:] = 1  # 20,000 distinct lengths > 4096
    spec = histogram_spec(counts)
    assert spec["type"] == "binned" and len(spec["weights"]) <= 4096
    width = spec["edges"][1] - spec["edges"][0]
    assert width == 8 and sum(spec["weights"]) == 20_000
    exact = histogram_spec(counts, bin_width=1)
    assert exact["type"] == "histogram" and len(exact["values"]) == 20_000
    fixed = histogram_spec(counts, bin_width=1000)
    assert len(fixed["weights"]) == 21 and fixed["weights"][0] == 999


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("text, fragment", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,12,x\n",
     "x.csv:2: column 'GeneratedTokens': 'x' is not a number"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,12,3\n"
     "2023-11-16 18:00:01,-1,3\n", "x.csv:3: column 'ContextTokens': -1 is negative"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1.5,3\n",
     "x.csv:2: column 'ContextTokens': 1.5 is not an integer"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,,3\n",
     "x.csv:2: column 'ContextTokens': value is missing"),
    ("TIMESTAMP,Tokens,GeneratedTokens\n2023-11-16 18:00:00,1,3\n",
     "x.csv:1: missing column 'ContextTokens'"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,3\n",
     "x.csv:2: column 'TIMESTAMP': 'yesterday' is not an ISO-8601 date-time"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1,3,4\n",
     "x.csv:2: row has 4 fields"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1,3\n2023-11-16,1,3,9\n",
     "line 3"),
    ("", "x.csv: empty file"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n", "x.csv: no usable requests"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,0,3\n",
     "input length 0: 1"),
])
def test_bad_csv_input(tmp_path, text, fragment):
    path = _write(tmp_path, "x.csv", text)
    with pytest.raises(PlannerError) as err:
        fit_trace(path, "azure")
    assert fragment in str(err.value)
    assert str(path) in str(err.value) and err.value.exit_code == 2


@pytest.mark.parametrize("line, fragment", [
    ('{"timestamp": 0, "input_length": 5', "y.jsonl:2: invalid JSON"),
    ('{"timestamp": 0, "output_length": 5}', "y.jsonl:2: missing field 'input_length'"),
    ('{"timestamp": 0, "input_length": "many", "output_length": 5}',
     "y.jsonl:2: column 'input_length': 'many' is not a number"),
    ('{"timestamp": 0, "input_length": true, "output_length": 5}', "'input_length'"),
    ('[1, 2, 3]', "y.jsonl:2: expected a JSON object"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 5, "hash_ids": 7}',
     "y.jsonl:2: field 'hash_ids'"),
])
def test_bad_jsonl_input(tmp_path, line, fragment):
    good = json.dumps(MOONCAKE[0])
    path = _write(tmp_path, "y.jsonl", good + "\n" + line + "\n")
    with pytest.raises(PlannerError) as err:
        fit_trace(path, "mooncake")
    assert fragment in str(err.value)


def test_unknown_format_and_missing_mapping(tmp_path):
    path = _write(tmp_path, "a.csv", AZURE_2023)
    with pytest.raises(PlannerError, match="a.csv: unknown trace format 'parquet'"):
        fit_trace(path, "parquet")
    with pytest.raises(PlannerError, match="needs a column mapping for input, output"):
        fit_trace(path, "csv")
    with pytest.raises(PlannerError, match="no such file"):
        fit_trace(tmp_path / "nope.csv", "azure")
    for fmt in ("csv", "jsonl"):  # a missing file is said before a missing mapping
        with pytest.raises(PlannerError, match="nope.csv: no such file$"):
            fit_trace(tmp_path / "nope.csv", fmt)
        with pytest.raises(PlannerError, match=": not a regular file$"):
            fit_trace(tmp_path, fmt)


def test_gzip_traces(tmp_path):
    import gzip

    csv_gz = tmp_path / "a.csv.gz"
    csv_gz.write_bytes(gzip.compress(AZURE_2023.encode()))
    w, _ = fit_trace(csv_gz, "azure")
    plain, _ = fit_trace(_write(tmp_path, "a.csv", AZURE_2023), "azure")
    np.testing.assert_array_equal(w.pmf, plain.pmf)
    assert w.cv == pytest.approx(plain.cv)
    jl_gz = tmp_path / "m.jsonl.gz"
    jl_gz.write_bytes(gzip.compress("\n".join(json.dumps(r) for r in MOONCAKE).encode()))
    m, rep = fit_trace(jl_gz, "mooncake")
    assert rep.rows_kept == 4 and m.prefix_hit_rate == pytest.approx(1536 / 3100)
    broken = tmp_path / "b.csv.gz"
    broken.write_bytes(gzip.compress(AZURE_2023.encode())[:40])
    with pytest.raises(PlannerError, match="b.csv.gz"):
        fit_trace(broken, "azure")

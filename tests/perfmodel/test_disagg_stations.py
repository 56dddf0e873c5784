"""scripts/disagg_stations.py: the published and modelled first-token wait, decode step
and rate of disaggregated rows, read off the row's quote and the model's stations."""

from __future__ import annotations

import pytest
from script_module import load_script

from perfmodel import validation as val
from perfmodel import validation_disagg as vd

ROW = "ixd-gb300-sglang-dsr1-fp4-8k1k-6ptp4-1ddep48-c512"


@pytest.fixture(scope="module")
def stations():
    return load_script("disagg_stations")


def test_the_quote_s_tpot_is_read_in_seconds(stations):
    assert stations.published_mean_tpot("mean_tpot 0.0131 s, mean_ttft 8.06 s") == 0.0131
    assert stations.published_mean_tpot("no latency stated") is None


def test_a_row_s_figures_come_from_its_quote_and_the_model(stations):
    (row,) = stations.station_rows(engine="sglang", match=ROW)
    case = val.cases_by_id()[ROW]
    pre, dec = vd.sides(case)
    assert row["ttft_pub_s"] == vd.published_mean_ttft(case.quote)
    assert row["tpot_pub_ms"] == pytest.approx(1e3 * stations.published_mean_tpot(case.quote))
    assert row["ttft_ours_s"] == vd.benchmark_run(case, pre, dec).mean_ttft_s
    # the published rate is the row's figure in requests/s: ours scaled by the row's error
    err = val.error(case, val.predict(case))
    assert row["rps_pub"] / row["rps_ours"] == pytest.approx(1 / (1 + err))
    assert row["held_out"] is False
    assert row["saturated"] == (vd.disaggregated_point(case, pre, dec).saturated or "-")


def test_filters_keep_only_the_named_rows(stations):
    rows = stations.station_rows(engine="trtllm", match="-c4")
    assert rows and all("trtllm" in r["id"] and "-c4" in r["id"] for r in rows)

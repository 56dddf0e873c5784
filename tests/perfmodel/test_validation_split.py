"""perfmodel.validation_split: a calibration / held-out split no figure can move, and
posed cases committed with their sources before anyone predicts them."""

from __future__ import annotations

import math

import pytest

from perfmodel.validation import MODES, load_cases
from perfmodel.validation_split import (
    HELD_OUT_SHARE,
    POSED_FIELDS,
    held_out,
    load_posed,
    split,
)

#: The held-out cases among the 37 of validation_cases.yaml when the rule was committed:
#: the salt may never change, so neither may this list.
HELD_OUT_AT_COMMIT = {
    "trt05-l40s-llama2-7b-ttft", "sgl-h100-dsv3-decode-bs256", "ant-h20-dsr1-decode-bs32",
    "sgl-gb200-dsv3-decode-bs1408", "trt1x-h100-llama3-70b-tp2-1k1k",
    "trt1x-h200-llama3-70b-tp2-8k1k", "trt10-h200-llama3-70b-tp1-2k128",
    "trt013-h100-mixtral-tp2-1k1k", "trt013-a100-mixtral-tp4-128-2k"}


def test_the_split_of_the_committed_cases_never_moves():
    cases, _ = load_cases()
    ids = [c.id for c in cases]
    assert {i for i in ids if held_out(i)} == HELD_OUT_AT_COMMIT & set(ids)


def test_the_split_depends_on_the_id_alone():
    ids = [f"case-{k}" for k in range(3000)]
    s = split(ids)
    assert split(list(reversed(ids)))["held_out"] == list(reversed(s["held_out"]))
    share = len(s["held_out"]) / len(ids)
    # binomial: 3 standard deviations of a 3,000-draw share
    assert abs(share - HELD_OUT_SHARE) < 3 * math.sqrt(HELD_OUT_SHARE * (1 - HELD_OUT_SHARE)
                                                       / len(ids))
    assert held_out("case-7") == held_out("case-7")


def test_posed_rows_carry_their_source_and_assumptions():
    """Every posed row names a source with a URL, quotes its figure, and separates what
    the source states from what was assumed (each assumption with its reason)."""
    known, _ = load_cases()
    scored = {c.id for c in known}
    seen = set()
    for row in load_posed():
        where = f"{row.get('file')}: {row.get('id')}"
        missing = [f for f in POSED_FIELDS if row.get(f) in (None, "")]
        assert not missing, f"{where} lacks {missing}"
        assert row["id"] not in scored and row["id"] not in seen, f"{where}: duplicate id"
        seen.add(row["id"])
        info = row["source_info"] or {}
        assert str(info.get("url", "")).startswith("http"), f"{where}: source without a URL"
        assert row["mode"] in MODES or row.get("mode_note"), f"{where}: unknown mode"
        assert float(row["value"]) > 0, where
        assumed = row.get("assumed") or {}
        assert isinstance(assumed, dict) and all(str(v).strip() for v in assumed.values()), \
            f"{where}: every assumption needs its reason"
        assert isinstance(row.get("stated") or [], list), where


def test_a_row_its_own_source_rules_out_is_not_scored_and_says_why():
    from perfmodel import validation as val

    rows = [p for p in load_posed() if p.get("unscorable")]
    assert rows, "the VLLM_GB300 2k/128 chart rows are marked unscorable"
    for p in rows:
        with pytest.raises(val.NotPredictable, match="^source: "):
            val.posed_case(p)


def test_the_data_loader_reads_what_pyyaml_reads():
    """perfmodel.data_yaml (libyaml where present) gives the pure-Python safe loader's
    documents, on the hand-written case file and the length shapes."""
    from pathlib import Path

    import yaml

    from perfmodel.data_yaml import load_yaml

    root = Path(__file__).resolve().parents[2] / "perfmodel" / "data"
    for name in ("validation_cases.yaml", "length_shapes.yaml"):
        text = (root / name).read_text()
        assert load_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader)

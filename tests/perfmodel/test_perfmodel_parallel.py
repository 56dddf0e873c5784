"""Parallel configuration labels: one writer (ParallelConfig.label), one reader."""

from __future__ import annotations

import pytest

from perfmodel.parallel import ParallelConfig


def test_parallel_config_label_round_trips_and_rejects_bad_text():
    cfg = ParallelConfig(2, 4, 8)
    assert ParallelConfig.from_label(cfg.label()) == cfg
    for bad in ("tp2-dp4", "tp0-dp4-ep8", "TP2-dp4-ep8", 7):
        with pytest.raises(ValueError):
            ParallelConfig.from_label(bad)

"""whatif.html in a real browser (the approach of tests/report/test_report_browser.py):
headless Chromium (Debian's ``chromium`` package) loads the page at 1,400 px with no
console messages, the screenshot is not blank and shows the plots, and every embedded
image decodes at its PNG's size.  Skipped, with the reason, where Chromium is not
installed.  The study is instant (test_whatif_fixtures.FakeRunner: no MILP)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser import assert_images_shown, console_lines, find_chromium, run_chromium
from PIL import Image
from test_whatif_fixtures import fake_result

from planner.whatif import write_whatif

WIDTH, HEIGHT = 1400, 5200  # the whole page of the small study


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def study(chromium, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    write_whatif(fake_result(folder / "spec"), folder / "study")
    return folder / "study"


def test_screenshot_at_1400px_shows_the_page_and_plots(chromium, study, tmp_path):
    shot = tmp_path / "shot.png"
    res = run_chromium(chromium, tmp_path / "profile", f"--screenshot={shot}",
               f"--window-size={WIDTH},{HEIGHT}", (study / "whatif.html").as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.is_file(), res.stderr[-2000:]
    assert console_lines(res.stderr) == []
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape == (HEIGHT, WIDTH, 3)
    non_white = (img < 235).any(axis=2).mean()
    assert non_white > 0.05, f"screenshot nearly blank: {non_white:.1%} non-white"
    # the page is laid out to its column: the right-hand margin is page background
    assert (img[:, WIDTH - 60:] > 235).all(axis=2).mean() > 0.99
    # The page's own style is greys and pale blue; strongly coloured pixels come from
    # the plots' lines and markers, so they are on screen and decoded (a page without
    # them has none).
    saturated = (img.max(axis=2) - img.min(axis=2) > 120).mean()
    assert saturated > 0.0005, f"no plot visible: {saturated:.3%} saturated pixels"


def test_dom_has_every_plot_decoded(chromium, study, tmp_path):
    plots = sorted(study.glob("*.png"))
    assert [p.name for p in plots] == ["cost_per_token_vs_budget.png", "pareto.png",
                                       "prices.png", "throughput_vs_budget.png"]
    assert_images_shown(study / "whatif.html", tmp_path / "profile", plots)

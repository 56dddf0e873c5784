"""report.html in a real browser: headless Chromium (Debian's ``chromium`` package)
loads the page with no console messages, the screenshot is not blank and shows the
plots, and every embedded image decodes.  Skipped, with the reason, where Chromium is
not installed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from browser import assert_images_shown, console_lines, find_chromium, run_chromium
from PIL import Image
from report_fixtures import make_plan_dict

from planner.report import write_run

PLOTS = ("islands.png", "assignment.png", "per_length.png", "convergence.png")


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def report(chromium, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("browser") / "run"
    write_run(make_plan_dict(), run_dir)
    return run_dir / "report.html"


def test_screenshot_shows_the_page_and_plots(chromium, report, tmp_path):
    shot = tmp_path / "shot.png"
    res = run_chromium(chromium, tmp_path / "profile", f"--screenshot={shot}",
               "--window-size=1280,2400", report.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.is_file(), res.stderr[-2000:]
    assert console_lines(res.stderr) == []
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape == (2400, 1280, 3)
    non_white = (img < 235).any(axis=2).mean()
    assert non_white > 0.08, f"screenshot nearly blank: {non_white:.1%} non-white"
    packed = img[::2, ::2] @ np.array([65536, 256, 1])
    assert len(np.unique(packed)) > 200
    # The page's own style is greys and pale blue; strongly coloured pixels come from
    # the plots (GPU-type bars), so the first plots are on screen and decoded.
    saturated = (img.max(axis=2) - img.min(axis=2) > 120).mean()
    assert saturated > 0.01, f"no plot visible: {saturated:.2%} saturated pixels"


def test_dom_has_every_plot_decoded(chromium, report, tmp_path):
    assert_images_shown(report, tmp_path / "profile", [report.parent / n for n in PLOTS])

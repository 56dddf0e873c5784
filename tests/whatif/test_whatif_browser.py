"""whatif.html in a real browser (the approach of tests/report/test_report_browser.py):
headless Chromium (Debian's ``chromium`` package) loads the page at 1,400 px with no
console messages, the screenshot is not blank and shows the plots, and every embedded
image decodes at its PNG's size.  Skipped, with the reason, where Chromium is not
installed.  The study is instant (test_whatif_fixtures.FakeRunner: no MILP)."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_whatif_fixtures import fake_result

from planner.whatif import write_whatif

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]
WIDTH, HEIGHT = 1400, 5200  # the whole page of the small study
# Appended to a copy of the page (never to the report itself): after the load event,
# record whether each image decoded and its natural size, in the DOM and the console.
PROBE = ('<script>window.addEventListener("load",function(){var r=[];'
         'for(var im of document.images){r.push(im.complete+":"+im.naturalWidth+"x"'
         '+im.naturalHeight);}document.body.setAttribute("data-probe",r.join(" "));'
         'console.log("PROBE "+r.join(" "));});</script>')


def _chromium() -> str:
    path = shutil.which("chromium") or ("/usr/bin/chromium"
                                        if Path("/usr/bin/chromium").exists() else None)
    if path is None:
        pytest.skip("chromium not installed: apt-get install chromium")
    try:
        ok = subprocess.run([path, "--version"], capture_output=True, timeout=30).returncode
    except (OSError, subprocess.TimeoutExpired) as err:
        pytest.skip(f"chromium at {path} does not start ({err}): apt-get install chromium")
    if ok != 0:
        pytest.skip(f"chromium at {path} does not start: apt-get install chromium")
    return path


def _run(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within 120 s: {' '.join(args)}")


def _console(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs them as ``...:CONSOLE:<line>] ...``)."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


@pytest.fixture(scope="module")
def chromium() -> str:
    return _chromium()


@pytest.fixture(scope="module")
def study(chromium, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    write_whatif(fake_result(folder / "spec"), folder / "study")
    return folder / "study"


def test_screenshot_at_1400px_shows_the_page_and_plots(chromium, study, tmp_path):
    shot = tmp_path / "shot.png"
    res = _run(chromium, tmp_path / "profile", f"--screenshot={shot}",
               f"--window-size={WIDTH},{HEIGHT}", (study / "whatif.html").as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.is_file(), res.stderr[-2000:]
    assert _console(res.stderr) == []
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
    alone = tmp_path / "alone"  # a folder of its own: the page must need nothing else
    alone.mkdir()
    page = (study / "whatif.html").read_text()
    (alone / "whatif.html").write_text(page.replace("</body>", PROBE + "</body>"))
    res = _run(chromium, tmp_path / "profile", "--dump-dom", "--virtual-time-budget=10000",
               (alone / "whatif.html").as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    plots = sorted(p.name for p in study.glob("*.png"))
    assert plots == ["cost_per_token_vs_budget.png", "pareto.png", "prices.png",
                     "throughput_vs_budget.png"]
    srcs = re.findall(r'<img src="(data:image/png;base64,[A-Za-z0-9+/=]{12})', dom)
    assert len(srcs) == len(plots)
    probe = re.search(r'data-probe="([^"]*)"', dom)
    assert probe, "the load event never fired"
    sizes = {Image.open(io.BytesIO((study / n).read_bytes())).size for n in plots}
    seen = set()
    for item in probe.group(1).split():
        complete, size = item.split(":")
        w, h = map(int, size.split("x"))
        assert complete == "true" and w > 0 and h > 0, item
        seen.add((w, h))
    assert seen == sizes
    others = [ln for ln in _console(res.stderr) if '"PROBE ' not in ln]
    assert others == []

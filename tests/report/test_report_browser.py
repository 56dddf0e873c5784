"""report.html in a real browser: headless Chromium (Debian's ``chromium`` package)
loads the page with no console messages, the screenshot is not blank and shows the
plots, and every embedded image decodes.  Skipped, with the reason, where Chromium is
not installed."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from report_fixtures import make_plan_dict

from planner.report import write_run

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]
PLOTS = ("islands.png", "assignment.png", "per_length.png", "convergence.png")
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
def report(chromium, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("browser") / "run"
    write_run(make_plan_dict(), run_dir)
    return run_dir / "report.html"


def test_screenshot_shows_the_page_and_plots(chromium, report, tmp_path):
    shot = tmp_path / "shot.png"
    res = _run(chromium, tmp_path / "profile", f"--screenshot={shot}",
               "--window-size=1280,2400", report.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.is_file(), res.stderr[-2000:]
    assert _console(res.stderr) == []
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
    alone = tmp_path / "alone"  # a folder of its own: the page must need nothing else
    alone.mkdir()
    page = report.read_text()
    (alone / "report.html").write_text(page.replace("</body>", PROBE + "</body>"))
    res = _run(chromium, tmp_path / "profile", "--dump-dom", "--virtual-time-budget=10000",
               (alone / "report.html").as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    srcs = re.findall(r'<img src="(data:image/png;base64,[A-Za-z0-9+/=]{12})', dom)
    assert len(srcs) == len(PLOTS)
    probe = re.search(r'data-probe="([^"]*)"', dom)
    assert probe, "the load event never fired"
    sizes = {Image.open(io.BytesIO((report.parent / n).read_bytes())).size for n in PLOTS}
    seen = set()
    for item in probe.group(1).split():
        complete, size = item.split(":")
        w, h = map(int, size.split("x"))
        assert complete == "true" and w > 0 and h > 0, item
        seen.add((w, h))
    assert seen == sizes
    others = [ln for ln in _console(res.stderr) if '"PROBE ' not in ln]
    assert others == []

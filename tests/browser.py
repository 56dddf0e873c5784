"""Headless Chromium for the browser tests of report.html and whatif.html (Debian's
``chromium`` package): how it is started, the probe appended to a copy of a page, and
the page's console messages.  Tests skip, with the reason, where it is missing."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]
# Appended to a copy of the page (never to the report itself): after the load event,
# record whether each image decoded and its natural size, in the DOM and the console.
PROBE = ('<script>window.addEventListener("load",function(){var r=[];'
         'for(var im of document.images){r.push(im.complete+":"+im.naturalWidth+"x"'
         '+im.naturalHeight);}document.body.setAttribute("data-probe",r.join(" "));'
         'console.log("PROBE "+r.join(" "));});</script>')


def find_chromium() -> str:
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


def run_chromium(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within 120 s: {' '.join(args)}")


def console_lines(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs them as ``...:CONSOLE:<line>] ...``)."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


def assert_images_shown(page: Path, profile: Path, pngs: list[Path]) -> str:
    """Open a copy of ``page`` with :data:`PROBE` appended, alone in a folder of its
    own (the page must need nothing else), and check that it inlines one image per
    PNG, that every image decoded at the PNG's size, and that the console is silent
    but for the probe.  Returns the page's DOM for further checks."""
    alone = profile.parent / "alone"
    alone.mkdir(exist_ok=True)
    copy = alone / page.name
    copy.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    res = run_chromium(find_chromium(), profile, "--dump-dom", "--virtual-time-budget=10000",
                       copy.as_uri())
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    srcs = re.findall(r'<img src="(data:image/png;base64,[A-Za-z0-9+/=]{12})', dom)
    assert len(srcs) == len(pngs)
    probe = re.search(r'data-probe="([^"]*)"', dom)
    assert probe, "the load event never fired"
    seen = set()
    for item in probe.group(1).split():
        complete, size = item.split(":")
        w, h = map(int, size.split("x"))
        assert complete == "true" and w > 0 and h > 0, item
        seen.add((w, h))
    assert seen == {Image.open(io.BytesIO(p.read_bytes())).size for p in pngs}
    assert [ln for ln in console_lines(res.stderr) if '"PROBE ' not in ln] == []
    return dom

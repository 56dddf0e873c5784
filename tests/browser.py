"""Headless Chromium for the browser tests of report.html and whatif.html (Debian's
``chromium`` package): how it is started, the probe appended to a copy of a page, and
the page's console messages.  Tests skip, with the reason, where it is missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

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

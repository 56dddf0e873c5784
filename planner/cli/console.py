"""Where the commands print their results.

On a terminal, rich uses its width.  Piped or redirected, rich would assume 80 columns
and wrap or cut the tables ("tp1-dp128-e…"); results then go out at :data:`PIPE_WIDTH`
columns -- or at ``$COLUMNS`` when the caller sets it -- so every column stays whole
for ``grep``, ``less -S`` or a log file.  Colours are off when not on a terminal.
"""

from __future__ import annotations

import os

from rich.console import Console

#: Wide enough for the widest table the commands print (the what-if study tables).
PIPE_WIDTH = 200


def results_console() -> Console:
    """The console for a command's results on stdout (module docstring)."""
    probe = Console()
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    return Console(width=PIPE_WIDTH)


__all__ = ["PIPE_WIDTH", "results_console"]

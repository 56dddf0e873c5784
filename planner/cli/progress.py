"""Progress bars for long CLI steps: one bar per named step, created on first report."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)


def step_bars(console: Console, quiet: bool, label_width: int = 24
              ) -> tuple[Progress, Callable[[str, int, int], None]]:
    """A rich Progress and the ``step(name, done, total)`` callback that feeds it."""
    progress = Progress(TextColumn(f"{{task.description:<{label_width}}}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                        transient=True, disable=quiet)
    tasks: dict[str, TaskID] = {}

    def step(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = progress.add_task(name, total=total)
        progress.update(tasks[name], completed=done, total=total)

    return progress, step

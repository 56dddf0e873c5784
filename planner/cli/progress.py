"""Progress displays of the CLI: step bars for long commands and the simulation
display (results go out through planner.cli.console); and SIGTERM read as Ctrl-C
while long work runs."""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

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


def sim_bars(console: Console, quiet: bool
             ) -> tuple[Progress, Callable[[str], Callable[[int, int, float], None]]]:
    """The display of ``planner simulate`` on ``console`` (stderr): one bar per run with
    the requests completed of those simulated and the simulated time reached.  Off with
    ``quiet`` and when ``console`` is not a terminal (a log file gets no bars).

    Returns the Progress and ``bar(label)``, which adds a bar and returns the
    ``progress(completed, total, simulated_s)`` callback of ``planner.sim.run.run_plan``.
    """
    progress = Progress(TextColumn("{task.description:<14}"), BarColumn(),
                        TextColumn("{task.fields[count]}"), TextColumn("{task.fields[sim]}"),
                        TimeElapsedColumn(),
                        console=console, transient=True,
                        disable=quiet or not console.is_terminal)

    def bar(label: str) -> Callable[[int, int, float], None]:
        task = progress.add_task(label, total=None, count="", sim="")

        def update(done: int, total: int, now: float) -> None:
            progress.update(task, completed=done, total=total,
                            count=f"{done:,} of {total:,} requests done",
                            sim=f"{now:,.1f} s simulated")

        return update

    return progress, bar


@contextlib.contextmanager
def interrupt_on_sigterm() -> Iterator[None]:
    """Treat SIGTERM (``kill``, a scheduler's timeout) like Ctrl-C while the search
    runs: the checkpoint is kept and the resume command printed.

    The handler raises KeyboardInterrupt where the main thread is, and Python drops an
    exception raised inside a finaliser (``__del__``, a weakref callback: "Exception
    ignored in ..."), so a signal that lands during garbage collection would be lost and
    the run would finish and write its results.  The handler therefore also records the
    signal, and a block that ends normally after one raises KeyboardInterrupt on leaving:
    a SIGTERM always ends the command with 130 and nothing written after the block."""
    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (a test runner's worker): leave it be
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
    if received:  # the block ended normally: the interrupt was swallowed inside it
        raise KeyboardInterrupt


def resume_command(out: Path) -> str:
    """This command line as the one that resumes it: ``--out`` made explicit (the
    default folder has a time stamp) and ``--resume`` once at the end."""
    argv = [a for a in sys.argv[1:] if a != "--resume"]
    if "--out" not in argv:
        argv += ["--out", str(out)]
    return "planner " + " ".join(shlex.quote(a) for a in argv) + " --resume"


def timed_say(console, quiet: bool):
    """A progress line printer for the long commands: ``[  12.3 s] message`` on the
    console (stderr), the seconds since this call; silent when ``quiet``."""
    import time

    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            console.print(f"[{time.perf_counter() - t0:5.1f} s] {msg}", style="dim",
                          highlight=False)

    return say


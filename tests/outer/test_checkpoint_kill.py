"""SIGKILL during a search loses at most the evaluation in flight (issue 19, item 5).

A child process runs a small BO search whose objective kills the process outright on
its k-th call -- no ``except``, no ``finally``, no atexit runs -- and logs every layout
it finished evaluating.  The checkpoint left behind must hold every one of them, and
resuming from it must give exactly the uninterrupted run without re-evaluating any.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from planner.outer import DividerBO
from planner.outer.protocol import layout_text
from planner.outer.synthetic import SyntheticObjective, default_space

SPACE = default_space(512.0)
SEARCH = dict(iterations=2, batch_size=4, sobol_trials=4, polish=8)

CHILD = textwrap.dedent("""
    import os, signal, sys
    from planner.outer import DividerBO
    from planner.outer.protocol import layout_text
    from planner.outer.synthetic import SyntheticObjective, default_space

    space = default_space(512.0)
    kill_at, checkpoint, log = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    class Dying(SyntheticObjective):
        def __call__(self, layout):
            if self.calls + 1 == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            score = super().__call__(layout)
            with open(log, "a") as f:
                f.write(layout_text(layout) + "\\n")
            return score

    DividerBO(**{search}).search(space, Dying(space), seed=4, checkpoint=checkpoint)
""")


def _layouts(result):
    return [h.layout for h in result.history]


@pytest.mark.slow
@pytest.mark.parametrize("kill_at, phase", [(6, "bo"), (15, "polish")])
def test_sigkill_loses_at_most_the_evaluation_in_flight(tmp_path, kill_at, phase):
    reference = DividerBO(**SEARCH).search(SPACE, SyntheticObjective(SPACE), seed=4)
    calls = [h for h in reference.history if not h.cached and h.layout]
    assert calls[kill_at - 1].phase == phase  # where the kill lands
    checkpoint, log = tmp_path / "ckpt.json", tmp_path / "done.txt"
    child = subprocess.run(
        [sys.executable, "-c", CHILD.replace("{search}", repr(SEARCH)), str(kill_at),
         str(checkpoint), str(log)], capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    finished = log.read_text().split()
    assert len(finished) == kill_at - 1
    saved = {h["layout"] for h in json.loads(checkpoint.read_text())["tracker"]["history"]}
    assert set(finished) <= saved  # nothing that finished was lost

    second = SyntheticObjective(SPACE)
    res = DividerBO(**SEARCH).search(SPACE, second, seed=4, checkpoint=checkpoint)
    assert _layouts(res) == _layouts(reference)
    assert [h.value for h in res.history] == [h.value for h in reference.history]
    assert res.evaluations == reference.evaluations + res.detail_refreshes
    # Only the layout in flight is evaluated again (plus, possibly, one re-run of the
    # best layout, whose inner result a checkpoint does not keep).
    again = {layout_text(lay) for lay in second.seen} & set(finished)
    assert len(again) <= res.detail_refreshes

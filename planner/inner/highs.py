"""One way to make a HiGHS instance: silent.

highspy prints its banner ("Running HiGHS ... Copyright ...") on the process's stdout
the first time a ``Highs`` object is built, before any option can be set, so it would
land in the middle of ``planner plan``'s output.  The first construction is therefore
made with file descriptor 1 pointed at /dev/null (the banner is written by C++, below
Python's ``sys.stdout``); every instance then gets ``output_flag`` off.
"""

from __future__ import annotations

import os
import sys

_PRIMED = False


def _prime() -> None:
    global _PRIMED
    import highspy

    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real stdout (e.g. some embedded runners)
        highspy.Highs()
        _PRIMED = True
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _PRIMED = True


def new_highs():
    """A ``highspy.Highs`` with its output off and its banner never printed."""
    import highspy

    if not _PRIMED:
        _prime()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


__all__ = ["new_highs"]

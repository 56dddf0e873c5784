"""User-facing errors.

Anything a user can get wrong (a file, a field, a flag) raises :class:`PlannerError`
with a one-line message that names the file and field.  The CLI turns it into that
line on stderr and the error's exit status, never a traceback.
"""

from __future__ import annotations

from perfmodel.errors import InputError

PlannerError = InputError
"""A mistake in the user's input; ``exit_code`` 2 for usage errors.  The perf model's
:class:`~perfmodel.errors.InputError` under the planner's name (one family, one
``except`` at the CLI)."""


class NoPlanError(PlannerError):
    """The inputs are valid but no plan exists (exit status 1)."""

    exit_code = 1

"""User-facing errors.

Anything a user can get wrong (a file, a field, a flag) raises :class:`PlannerError`
with a one-line message that names the file and field.  The CLI turns it into that
line on stderr and the error's exit status, never a traceback.
"""

from __future__ import annotations


class PlannerError(Exception):
    """A mistake in the user's input; ``exit_code`` 2 for usage errors."""

    exit_code: int = 2

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class NoPlanError(PlannerError):
    """The inputs are valid but no plan exists (exit status 1)."""

    exit_code = 1

"""Names a user gives that become names on disk and in a deployment: a fleet's services
and a profile's workload streams.

Each names a folder of the run (``services/<name>``, ``streams/<name>``), a prefix on
the exported host variables (``CODE_V2_ISLAND_...``, :func:`planner.services.export.
env_prefix`) and one on Kubernetes object names (``code-v2-...``, lower case).  So a
name must be a single path component that hides nothing and climbs nowhere, and two
names of one run must stay apart in every one of those forms: ``a`` and ``A``, or
``c.d`` and ``c_d``, would share a prefix and overwrite each other's objects.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from planner.core.errors import PlannerError

#: A folder name: no separator, not hidden, not ``..``; 64 characters keep the
#: Kubernetes names built from it within their 253.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"


def check_name(name: object, where: str, field: str, what: str) -> str:
    """``name`` if it follows :data:`NAME`; else one line naming ``where`` and ``field``
    (``what`` says what the name becomes)."""
    if not isinstance(name, str) or not NAME.match(name):
        raise PlannerError(f"{where}: field '{field}' must be {RULE} (it names {what}), got "
                           f"{repr(name)[:40]}")
    return name


def export_key(name: str) -> str:
    """How the exports see ``name``: case and the separators '.', '_', '-' folded."""
    return re.sub(r"[._-]", "-", name.lower())


def check_distinct(names: Iterable[str], where: str, field: str) -> None:
    """One line if two of ``names`` are equal, or equal as the exports see them."""
    seen: dict[str, str] = {}
    for name in names:
        key = export_key(name)
        if key in seen:
            same = seen[key] == name
            raise PlannerError(f"{where}: field '{field}': {name!r} is used twice" if same
                               else f"{where}: field '{field}': {seen[key]!r} and {name!r} "
                               "differ only in case or in '.', '_', '-', which the exported "
                               "host variables and Kubernetes names do not tell apart")
        seen[key] = name


__all__ = ["NAME", "RULE", "check_distinct", "check_name", "export_key"]

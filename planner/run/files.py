"""Putting a set of rendered files into a run folder without ever half-writing it.

Everything is first written into a temporary folder beside the run folder (same file
system, so renames are atomic), then published:

* run folder absent or empty: the temporary folder is renamed onto it in one step,
  so the folder either does not exist or is complete -- unless it is the working
  folder or holds it (``--out .``), which a rename would replace under the user's
  shell; that one is filled as below;
* run folder already holds files (a re-render, or a re-run into the same folder):
  each file replaces its same-named predecessor with an atomic ``os.replace``,
  ``plan.json`` last.  Other files in the folder are left alone.  A reader never sees
  a torn file, and until ``plan.json`` is replaced the folder still re-renders to the
  old plan.

Any failure or interruption while rendering or writing removes the temporary folder
and leaves the run folder as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from planner.core.atomic import check_writable
from planner.core.errors import PlannerError

LAST = "plan.json"


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o644)


def _is_empty_dir(path: Path) -> bool:
    return path.is_dir() and not any(path.iterdir())


def publish(files: Mapping[str, bytes], run_dir: Path) -> list[Path]:
    """Write ``files`` (name -> content) into ``run_dir`` as described above; returns
    the paths written, in the order of ``files``."""
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise PlannerError(f"{run_dir}: exists and is not a folder")
    where = run_dir.absolute()  # "." has no name or parent of its own
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{where.name}.tmp-", dir=where.parent))
    except OSError as err:
        raise PlannerError(f"{run_dir}: cannot create the run folder: {err}") from None
    try:
        for name, data in files.items():  # names may hold sub-folders ("simulation/x/y")
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            _write_bytes(tmp / name, data)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; a report folder is not
        if not run_dir.exists() or (_is_empty_dir(run_dir) and not _holds_cwd(where)):
            try:
                os.rename(tmp, where)  # POSIX: replaces an empty folder atomically
                return [run_dir / name for name in files]
            except OSError:
                if not run_dir.is_dir():  # not a lost race with another writer
                    raise
        order = [n for n in files if n != LAST] + [n for n in files if n == LAST]
        for name in order:
            (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / name, run_dir / name)
        shutil.rmtree(tmp)
        return [run_dir / name for name in files]
    except OSError as err:
        raise PlannerError(f"{run_dir}: cannot write the report: {err}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _holds_cwd(folder: Path) -> bool:
    """Whether the working folder is ``folder`` or inside it: renaming a new folder over
    it would leave the user's shell in a deleted folder, so files are moved in instead."""
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the working folder is already gone
        return False
    folder = folder.resolve()
    return cwd == folder or folder in cwd.parents


def check_run_folder(run_dir: Path | str, flag: str = "--out", run_file: str = LAST) -> None:
    """Refuse, before any work, a run folder that :func:`publish` could not write or
    should not write into: a path under a regular file, an existing file, a folder
    that holds files but no ``run_file`` (plan.json; whatif.json for a study) --
    ``--out ''`` or ``--out .`` in a project would scatter a dozen files among the
    user's own -- or a nearest existing folder that cannot be written (``access(2)``:
    permissions, or a read-only file system).  Nothing is created: a refused run
    leaves no trace."""
    where = check_writable(run_dir, flag, "run folder")
    if where.exists():
        if not where.is_dir():
            raise PlannerError(f"{flag} {run_dir}: exists and is not a folder")
        if any(where.iterdir()) and not (where / run_file).is_file():
            raise PlannerError(f"{flag} {run_dir}: folder holds files but no {run_file}, so "
                               "it is not a run folder; choose a new or empty folder")


def new_folders(path: Path) -> list[Path]:
    """The folders above ``path`` that do not exist yet, deepest first: what
    ``mkdir(parents=True)`` would create, so a failed run can remove them again."""
    return [p for p in Path(path).absolute().parents if not p.exists()]


def remove_new_folders(folders: list[Path]) -> None:
    """Remove the folders :func:`new_folders` listed, if they are still empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


__all__ = ["LAST", "check_run_folder", "new_folders", "publish", "remove_new_folders"]

"""Writing a file so that nobody ever reads half of it.

Every file the planner writes goes through a temporary file in the same folder and an
``os.replace``: a reader sees the old file or the whole new one, an interrupted or
failed write leaves the old file and no temporary behind, and the new file gets the
permissions a plain ``open()`` would have given it (``mkstemp`` makes them 0600).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from planner.core.errors import PlannerError


def write_bytes_atomic(path: Path | str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (module docstring); a path that is a folder
    or whose folder cannot be made is a one-line :class:`PlannerError`."""
    path = Path(path)
    if path.is_dir():
        raise PlannerError(f"{path}: is a folder, expected a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise PlannerError(f"{path}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path | str, flag: str, what: str = "file") -> Path:
    """What every output path must satisfy before any work: not empty, not under a
    regular file, and its nearest existing folder writable (``access(2)``: permissions,
    or a read-only file system).  Nothing is created.  Returns the absolute path."""
    if not str(path).strip():
        raise PlannerError(f"{flag}: empty path; name a {what}")
    where = Path(path).absolute()
    for parent in reversed(where.parents):
        if parent.exists() and not parent.is_dir():
            raise PlannerError(f"{flag} {path}: {parent} is a file, not a folder")
    existing = next(p for p in (where, *where.parents) if p.is_dir())
    if not os.access(existing, os.W_OK | os.X_OK) or not _can_create_in(existing):
        raise PlannerError(f"{flag} {path}: cannot write in {existing} (permission denied "
                           "or a read-only or virtual file system)")
    return where


#: File systems that take no run folder: the kernel's virtual ones, where ``access(2)``
#: says yes to root but every mkdir fails -- a run would plan for minutes, then fail.
VIRTUAL_FS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
                        "debugfs", "securityfs", "pstore", "bpf", "tracefs", "configfs",
                        "fusectl", "mqueue", "binfmt_misc", "efivarfs", "autofs"})


def _can_create_in(folder: Path) -> bool:
    """Whether ``folder`` is on a file system that takes folders: not one of
    :data:`VIRTUAL_FS` by the mount table (Linux's /proc/self/mounts; elsewhere no
    table, no refusal).  Read-only: nothing is created to find out."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return True
    target = str(folder.resolve())
    best, kind = "", ""
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        inside = target == mount or target.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best):
            best, kind = mount, parts[2]
    return kind not in VIRTUAL_FS


def check_output_file(path: Path | str, flag: str) -> None:
    """:func:`check_writable` for a file, which must not be a folder."""
    if check_writable(path, flag).is_dir():
        raise PlannerError(f"{flag} {path}: is a folder, expected a file path")


def write_text_atomic(path: Path | str, text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` in UTF-8."""
    write_bytes_atomic(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


__all__ = ["check_output_file", "check_writable", "write_bytes_atomic", "write_text_atomic"]

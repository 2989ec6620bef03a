"""The database file on disk: created private to its user, and what a failure to read or write it means.

* :func:`secure_file` creates the database file ``0600`` (``O_EXCL``, so of two processes creating one
  file at once, one does) and its missing folders ``0700`` (:func:`make_private_dirs`) whatever the umask;
  an existing file only loses group and other bits.
* :func:`storage_error` is the one mapping of ``sqlite3.Error`` and file-system ``OSError`` to the
  :class:`yiji.errors.StorageError` family, by SQLite's primary result code and ``errno``: a full disk
  (``SQLITE_FULL``, ``ENOSPC``) is :class:`~yiji.errors.DiskFull`, a read-only file, folder or mount
  (``SQLITE_READONLY``, ``EROFS``, ``EACCES``) is :class:`~yiji.errors.ReadOnlyStorage` naming which,
  damaged pages (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``) are :class:`~yiji.errors.DatabaseCorrupt` saying
  how to recover. A message names the file by its base name only, never the folders above it.

It reads the codes SQLite attaches to its errors, so it needs no ``sqlite3`` import: the connections stay
:mod:`yiji.db`'s alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from yiji.errors import DatabaseCorrupt, DiskFull, ReadOnlyStorage, StorageError, restore_advice

__all__ = ["make_private_dirs", "missing_parents", "secure_file", "storage_error"]


# primary SQLite result codes (the low byte of an extended code)
_SQLITE_PERM = 3
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_CANTOPEN = 14
_SQLITE_NOTADB = 26


def _read_only_reason(path: Path | None) -> str:
    """Which of the file, its folder or its mount is read-only, from the OS's point of view.

    The file is named by its base name only; the folders above it are never spelled out.
    """
    if path is None:
        return "the storage is read-only"
    folder = path.parent
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"the folder of {path.name} is on a read-only file system"
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file {path.name} is read-only; commands that only read still work"
    if not os.access(folder, os.W_OK):
        return (
            f"the folder of {path.name} is not writable; SQLite must create its -wal and -shm files "
            "beside the database"
        )
    return f"{path.name} could not be written (read-only file, folder or mount)"


def _no_space(path: Path | None) -> bool:
    """Whether the file system holding ``path`` has no free block left (SQLite then reports an I/O
    error such as ``SQLITE_IOERR_SHMSIZE`` rather than ``SQLITE_FULL``)."""
    if path is None:
        return False
    try:
        return os.statvfs(path.parent).f_bavail == 0
    except OSError:
        return False


def storage_error(exc: BaseException, operation: str, path: Path | None = None) -> StorageError:
    """The one mapping of ``sqlite3.Error`` and ``OSError`` to yiji's storage errors.

    ``operation`` says what was being done ("could not commit the transaction"); ``path`` is the file
    involved, named in the message when it helps (a read-only file, a damaged database).
    """
    if isinstance(exc, OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return DiskFull(f"{operation}: the disk is full; nothing was written. Free some space and retry.")
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return ReadOnlyStorage(f"{operation}: {_read_only_reason(path)}")
        name = errno.errorcode.get(exc.errno or 0, "an error")
        return StorageError(f"{operation}: the file system reported {name}")
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    if primary == _SQLITE_FULL or (primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN) and _no_space(path)):
        return DiskFull(f"{operation}: the disk is full; nothing was written. Free some space and retry.")
    if primary in (_SQLITE_READONLY, _SQLITE_PERM):
        return ReadOnlyStorage(f"{operation}: {_read_only_reason(path)}")
    if primary == _SQLITE_CANTOPEN:
        reason = _read_only_reason(path)
        if path is not None and (not os.access(path.parent, os.W_OK) or "read-only" in reason):
            return ReadOnlyStorage(f"{operation}: {reason}")
        return StorageError(f"{operation}: SQLite could not open the file ({name})")
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        where = f" {path.name}" if path is not None else ""
        return DatabaseCorrupt(
            f"{operation}: the database file{where} is damaged ({name}). Nothing was changed; "
            f"{restore_advice()}."
        )
    if primary == _SQLITE_IOERR:
        return StorageError(f"{operation}: a disk input/output error ({name}); check the disk and retry")
    return StorageError(f"{operation}: the database reported {name}")


def make_private_dirs(folder: Path) -> None:
    """Create ``folder`` and any missing parents ``0700`` whatever the umask (``mkdir -p`` would not)."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for item in reversed(missing):
        with contextlib.suppress(FileExistsError):
            item.mkdir(mode=0o700)
            with contextlib.suppress(OSError):  # the umask may have taken bits; never adds any
                os.chmod(item, 0o700)


def missing_parents(path: Path) -> list[Path]:
    missing: list[Path] = []
    current = path.parent
    while not current.exists() and current.parent != current:
        missing.append(current)
        current = current.parent
    return missing


def secure_file(path: Path) -> bool:
    """Create the database file (and its folders) private to the user where the OS supports it; True
    when this call created it (``O_EXCL``: of two processes creating one file at once, one does).

    An existing file keeps its mode minus any group/other bits: a file the user made read-only stays
    read-only.
    """
    make_private_dirs(path.parent)
    created = False
    if not path.exists():
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:  # another process created it just now
            pass
        else:
            os.close(fd)
            created = True
    with contextlib.suppress(OSError):  # not every filesystem supports modes
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    return created

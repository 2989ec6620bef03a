"""Files yiji writes for an operator (exports, backups): private, complete or absent, never overwriting.

Invariants:

* The content is written to a temporary file in the target's own folder, created ``0600`` (``mkstemp``),
  and fsynced before it becomes visible.
* It is published with ``link(2)``, which fails when the target exists, so an existing file (or a
  symlink) is never replaced, even when another process creates it meanwhile. Where hard links are not
  supported, the target is created with ``O_CREAT | O_EXCL`` and the content copied in.
* A failure leaves no partial target behind; the temporary file is always removed.
* A temporary file is named ``.<target name>.yiji-<pid>-<random>.part``. One left behind by a killed
  process (whose pid no longer runs) is removed by the next export, backup or restore writing into
  that folder (:func:`sweep_stale`), or by ``yiji doctor --clean`` in the database's folder. A live
  process's temporary files are never touched.
* ``OSError`` (a full disk, a read-only folder) is mapped to yiji's storage errors, once, through
  :func:`yiji.dbfile.storage_error`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from yiji.dbfile import storage_error
from yiji.errors import Conflict, InvalidInput

__all__ = [
    "check_new_target",
    "exclusive_text",
    "publish",
    "stale_files",
    "sweep_stale",
    "temp_beside",
    "tighten_folder",
]

_STALE = re.compile(r"^\..+\.yiji-(\d+)-[A-Za-z0-9_]+\.part(-wal|-shm|-journal)?$")

_EXISTS = "the target file already exists; yiji never overwrites a file. Choose a new path."


def check_new_target(path: str | os.PathLike[str], field: str = "path") -> Path:
    """The target as a path, refusing early when it is a folder, exists, or its folder does not."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise InvalidInput(
            field, "the target is a folder, not a file; name a new file (one inside that folder, for example)"
        )
    if target.exists() or target.is_symlink():
        raise Conflict(_EXISTS)
    if not target.parent.is_dir():
        raise InvalidInput(field, "the folder of the target does not exist")
    return target


def temp_beside(target: Path) -> Path:
    """A new, empty, ``0600`` temporary file in the target's folder, named so a leftover is recognised."""
    sweep_stale(target.parent)
    try:
        fd, name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.yiji-{os.getpid()}-", suffix=".part"
        )
    except OSError as exc:
        raise storage_error(exc, "cannot create a file in the folder of the target", target) from exc
    os.close(fd)
    return Path(name)


def tighten_folder(folder: Path) -> str | None:
    """Make an existing folder ``0700`` when group or others may enter it; a notice when changed."""
    try:
        mode = folder.stat().st_mode & 0o777
        if not mode & 0o077:
            return None
        os.chmod(folder, 0o700)
    except OSError:  # absent (created 0700 later), or not ours to change
        return None
    return f"tightened the permissions of {folder} from {mode:04o} to 0700 (it holds your memories)"


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else, or the platform cannot tell
        return True
    return True


def stale_files(folder: Path) -> list[Path]:
    """yiji temporary files in ``folder`` whose writing process no longer runs."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    stale: list[Path] = []
    for entry in entries:
        match = _STALE.match(entry.name)
        if match is not None and not _running(int(match.group(1))):
            with contextlib.suppress(OSError):
                if entry.is_file() and not entry.is_symlink():
                    stale.append(entry)
    return stale


def sweep_stale(folder: Path) -> list[Path]:
    """Remove yiji temporary files in ``folder`` left by processes that no longer run; returns them."""
    removed: list[Path] = []
    for entry in stale_files(folder):
        with contextlib.suppress(OSError):
            entry.unlink()
            removed.append(entry)
    return removed


def _fsync(path: Path, *, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory
        fd = os.open(path, flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish(tmp: Path, target: Path) -> None:
    """Make the complete ``tmp`` visible as ``target`` unless ``target`` exists; ``tmp`` is removed."""
    try:
        _fsync(tmp)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise Conflict(_EXISTS) from None
        except OSError:
            _copy_exclusive(tmp, target)
        _fsync(target.parent, directory=True)
    except OSError as exc:
        raise storage_error(exc, "could not write the file", target) from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _copy_exclusive(tmp: Path, target: Path) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise Conflict(_EXISTS) from None
    try:
        with os.fdopen(fd, "wb") as out, tmp.open("rb") as src:
            shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        target.unlink(missing_ok=True)  # we created it exclusively, so it is ours to remove
        raise


@contextlib.contextmanager
def exclusive_text(target: Path) -> Iterator[TextIO]:
    """Write UTF-8 text that appears at ``target`` only once complete, and only if it does not exist."""
    tmp = temp_beside(target)
    try:
        try:
            with tmp.open("w", encoding="utf-8", newline="\n") as out:
                yield out
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise storage_error(exc, "could not write the file", target) from exc
        publish(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()

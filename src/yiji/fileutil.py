"""Files yiji writes for an operator (exports, backups): private, complete or absent, never overwriting.

Invariants:

* The content is written to a temporary file in the target's own folder, created ``0600`` (``mkstemp``),
  and fsynced before it becomes visible.
* It is published with ``link(2)``, which fails when the target exists, so an existing file (or a
  symlink) is never replaced, even when another process creates it meanwhile. Where hard links are not
  supported, the target is created with ``O_CREAT | O_EXCL`` and the content copied in.
* A failure leaves no partial target behind; the temporary file is always removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from yiji.errors import Conflict, InvalidInput

__all__ = ["check_new_target", "exclusive_text", "publish", "temp_beside"]

_EXISTS = "the target file already exists; yiji never overwrites a file. Choose a new path."


def check_new_target(path: str | os.PathLike[str], field: str = "path") -> Path:
    """The target as a path, refusing early when it exists or its folder does not."""
    target = Path(path).expanduser()
    if target.exists() or target.is_symlink():
        raise Conflict(_EXISTS)
    if not target.parent.is_dir():
        raise InvalidInput(field, "the folder of the target does not exist")
    return target


def temp_beside(target: Path) -> Path:
    """A new, empty, ``0600`` temporary file in the target's folder."""
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    except OSError:
        raise InvalidInput("path", "cannot create a file in the folder of the target") from None
    os.close(fd)
    return Path(name)


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
        with tmp.open("w", encoding="utf-8", newline="\n") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        publish(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()

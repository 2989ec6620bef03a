"""A person's host settings files, read and replaced without harm: ``yiji hook install|uninstall``.

:func:`read_settings` reads a hook settings file (Claude Code ``settings.json``, Codex ``hooks.json``) and
refuses, by name, a path that is a folder or not a regular file, a parent that is a file, text that is
not strict JSON or nests too deep. :func:`replace_text` writes new text so that the file stays the
person's: through a symbolic link (the target changes, the link stays), with the same permission bits
and, as root, the same owner and group; a read-only file (no write bit) or a folder yiji may not write in
is refused, not replaced. The new text goes to a temporary file beside the target, is flushed to disk and
renamed over it, so a reader sees the old file or the new one; on any failure the temporary file is
removed and the old file is left as it was.

:func:`codex_trust` and :func:`forget_codex_trust` add and take out Codex's ``[hooks.state."KEY"]``
tables in its ``config.toml``, editing the text line by line (comments and layout kept) and checking the
result with :mod:`tomllib` before it is written: only the named keys change, else nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yiji.domain import hook_settings
from yiji.errors import DiskFull, InvalidInput, ReadOnlyStorage

__all__ = [
    "TrustChange",
    "check_writable",
    "codex_trust",
    "forget_codex_trust",
    "read_settings",
    "replace_text",
]

NOTHING = "nothing was changed"


def _refuse(rule: str) -> InvalidInput:
    return InvalidInput("settings", f"{rule}; {NOTHING}")


def _target(path: Path) -> Path:
    """The file a write must change: ``path``, or where its symbolic link(s) lead."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _existing(path: Path) -> os.stat_result | None:
    """The status of the file at ``path`` (``None``: there is none), refusing what is not a file."""
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise _refuse("a parent of the settings file is a file, not a folder") from None
    except PermissionError:
        raise ReadOnlyStorage(f"settings: the settings file's folder cannot be read; {NOTHING}") from None
    if stat.S_ISDIR(found.st_mode):
        raise _refuse("the settings path is a folder, not a file")
    if not stat.S_ISREG(found.st_mode):
        raise _refuse("the settings path is not a regular file")
    return found


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object at ``path`` (``{}`` when there is no file yet)."""
    if _existing(_target(path)) is None:
        return {}
    try:
        data = path.read_bytes()
    except PermissionError:
        raise ReadOnlyStorage(f"settings: the settings file cannot be read; {NOTHING}") from None
    except OSError:
        raise _refuse("the settings file cannot be read") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse("the settings file is not UTF-8 text") from None
    try:
        return hook_settings.parse(text)
    except hook_settings.SettingsError as exc:
        raise _refuse(exc.rule) from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _writable_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _refuse("a parent of the settings file is a file, not a folder") from None
    except PermissionError:
        raise ReadOnlyStorage(f"settings: the settings file's folder cannot be created; {NOTHING}") from None
    if not folder.is_dir():
        raise _refuse("a parent of the settings file is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReadOnlyStorage(f"settings: the settings file's folder is not writable; {NOTHING}")


def check_writable(path: Path) -> None:
    """Refuse, by name, a file at ``path`` that :func:`replace_text` would refuse to replace (the
    folder is checked where it exists; a missing one is created only when writing)."""
    target = _target(path)
    _check_file(target, _existing(target))
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise _refuse("a parent of the settings file is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReadOnlyStorage(f"settings: the settings file's folder is not writable; {NOTHING}")


def _check_file(target: Path, found: os.stat_result | None) -> None:
    if found is not None:
        if stat.S_IMODE(found.st_mode) & 0o222 == 0:
            raise ReadOnlyStorage(f"settings: the settings file is read-only; {NOTHING}")
        if not os.access(target, os.W_OK):
            raise ReadOnlyStorage(f"settings: the settings file is not writable by this user; {NOTHING}")


def replace_text(path: Path, text: str) -> None:
    """Put ``text`` in the file at ``path`` (see the module docstring for what is kept and refused)."""
    target = _target(path)
    found = _existing(target)
    _check_file(target, found)
    _writable_folder(target.parent)
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o666 & ~_umask()
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.yiji-", dir=target.parent)
    except PermissionError:
        raise ReadOnlyStorage(f"settings: the settings file's folder is not writable; {NOTHING}") from None
    try:
        try:
            os.fchmod(fd, mode)
            if found is not None and (found.st_uid, found.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(fd, found.st_uid, found.st_gid)
                except PermissionError:
                    raise ReadOnlyStorage(
                        f"settings: the settings file belongs to another user, whom a new file "
                        f"would not keep; {NOTHING}"
                    ) from None
            with os.fdopen(fd, "wb") as file:
                fd = -1
                file.write(text.encode("utf-8"))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        finally:
            if fd != -1:
                os.close(fd)
    except BaseException as exc:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in (28, 122):  # ENOSPC, EDQUOT
            raise DiskFull(f"settings: the disk is full; {NOTHING}") from None
        if isinstance(exc, PermissionError):
            raise ReadOnlyStorage(f"settings: the settings file cannot be replaced; {NOTHING}") from None
        raise


# -- Codex's trust in config.toml --------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\s*([^\[\]]*?)\s*\]\s*(?:#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class TrustChange:
    """What :func:`codex_trust` / :func:`forget_codex_trust` did to ``config.toml``: the keys written or
    removed, and the keys left because the file holds them in a form yiji does not edit."""

    path: Path
    changed: tuple[str, ...]
    left: tuple[str, ...]


def _table_name(line: str) -> list[str] | None:
    """The dotted key of a ``[table]`` header line, ``None`` for any other line (or an array table)."""
    match = _HEADER.match(line)
    if match is None or line.lstrip().startswith("[["):
        return None
    try:
        parsed = tomllib.loads(f"[{match.group(1)}]\n")
    except tomllib.TOMLDecodeError:
        return None
    names: list[str] = []
    table: Any = parsed
    while isinstance(table, dict) and len(table) == 1:
        name = next(iter(table))
        names.append(name)
        table = table[name]
    return names


def _state(parsed: dict[str, Any]) -> dict[str, Any]:
    hooks = parsed.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    return state if isinstance(state, dict) else {}


def _state_key(line: str) -> str | None:
    """The key of a ``[hooks.state."KEY"]`` header line, else ``None``."""
    if not _ANY_HEADER.match(line):
        return None
    name = _table_name(line)
    return name[2] if name is not None and len(name) == 3 and name[:2] == ["hooks", "state"] else None


def _drop_tables(lines: list[str], keys: set[str]) -> list[str]:
    """``lines`` without the ``[hooks.state."KEY"]`` tables of ``keys`` (header to the next header)."""
    out: list[str] = []
    skipping = False
    for line in lines:
        if _ANY_HEADER.match(line):
            name = _table_name(line)
            skipping = (
                name is not None and len(name) == 3 and name[:2] == ["hooks", "state"] and (name[2] in keys)
            )
        if not skipping:
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def _read_config(path: Path) -> tuple[str, dict[str, Any]]:
    if _existing(_target(path)) is None:
        return "", {}
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        raise InvalidInput("config.toml", f"Codex's config.toml cannot be read as TOML; {NOTHING}") from None


def _without(parsed: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """``parsed`` without the state of ``keys``, and without ``hooks.state`` / ``hooks`` left empty."""
    out: dict[str, Any] = json.loads(json.dumps(parsed, default=str))
    hooks = out.get("hooks")
    if isinstance(hooks, dict) and isinstance(hooks.get("state"), dict):
        for key in keys:
            hooks["state"].pop(key, None)
        if not hooks["state"]:
            del hooks["state"]
        if not hooks:
            del out["hooks"]
    return out


def forget_codex_trust(
    path: Path, keys: set[str], *, renames: dict[str, str] | None = None, dry_run: bool
) -> tuple[TrustChange, TrustChange]:
    """Take the ``[hooks.state]`` entries of ``keys`` out of Codex's ``config.toml`` at ``path`` and,
    in the same edit, move those of ``renames`` (old key: new key): a person's trust follows their hook
    when yiji's hooks before it go away (the content is unchanged, so Codex still compares it with the
    hook's own hash). Returns what was removed and what was moved."""
    text, parsed = _read_config(path)
    state = _state(parsed)
    present = {key for key in keys if key in state}
    todo = {old: new for old, new in (renames or {}).items() if old in state and old != new}
    todo = {old: new for old, new in todo.items() if old not in present}
    if not present and not todo:
        return TrustChange(path, (), ()), TrustChange(path, (), ())
    lines = []
    for line in _drop_tables(text.splitlines(), present):
        key = _state_key(line)
        lines.append(f"[hooks.state.{json.dumps(todo[key], ensure_ascii=False)}]" if key in todo else line)
    new_text = "\n".join(lines) + "\n" if lines else ""
    expected = {todo.get(k, k): v for k, v in state.items() if k not in present}
    refused = (TrustChange(path, (), tuple(sorted(present))), TrustChange(path, (), tuple(sorted(todo))))
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        return refused
    if _state(after) != expected or _without(after, set(expected)) != _without(parsed, set(state)):
        return refused
    if not dry_run:
        replace_text(path, new_text)
    return TrustChange(path, tuple(sorted(present)), ()), TrustChange(path, tuple(sorted(todo)), ())


def codex_trust(path: Path, hashes: dict[str, str], *, dry_run: bool) -> TrustChange:
    """Record in Codex's ``config.toml`` that a person trusts each hook of ``hashes`` (key: hash), as
    Codex's own review does; an ``enabled`` a person set for one of them is kept."""
    text, parsed = _read_config(path)
    state = _state(parsed)
    todo = {
        k: h
        for k, h in hashes.items()
        if not (isinstance(state.get(k), dict) and state[k].get("trusted_hash") == h)
    }
    if not todo:
        return TrustChange(path, (), ())
    lines = _drop_tables(text.splitlines(), set(todo))
    for key, digest in todo.items():
        old = state.get(key)
        enabled = old.get("enabled") if isinstance(old, dict) else None
        lines += ["", f"[hooks.state.{json.dumps(key, ensure_ascii=False)}]", f'trusted_hash = "{digest}"']
        if isinstance(enabled, bool):
            lines.append(f"enabled = {'true' if enabled else 'false'}")
    new_text = "\n".join(lines).lstrip("\n") + "\n"
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        return TrustChange(path, (), tuple(sorted(todo)))
    got = _state(after)
    if any(not isinstance(got.get(k), dict) or got[k].get("trusted_hash") != h for k, h in todo.items()):
        return TrustChange(path, (), tuple(sorted(todo)))
    if _without(after, set(todo)) != _without(parsed, set(todo)):
        return TrustChange(path, (), tuple(sorted(todo)))
    if not dry_run:
        replace_text(path, new_text)
    return TrustChange(path, tuple(sorted(todo)), ())

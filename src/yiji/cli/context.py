"""What every CLI command receives: parsed options, the lazily opened service, and output helpers.

Adapters stay thin: a command validates its input, makes one service call and returns something to render.
This module is imported by every command at start-up, so it imports nothing heavy at module level: the
configuration, the service, the models and tqdm are imported where they are first used.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, TypeVar

from yiji.display import visible
from yiji.errors import InvalidInput

if TYPE_CHECKING:
    from datetime import datetime, tzinfo

    from pydantic import BaseModel
    from tqdm import tqdm

    from yiji.config import Config
    from yiji.domain.wording import Words
    from yiji.service import MemoryService

    M = TypeVar("M", bound=BaseModel)

__all__ = [
    "Context",
    "Handler",
    "add_common",
    "add_page_options",
    "bounded_int",
    "confirm",
    "more_line",
    "parse_flags",
    "read_json_object",
    "progress_bar",
    "read_text_arg",
    "stdin_bytes",
    "utf8_arguments",
    "utf8_output",
    "utf8_process",
    "utf8_text",
    "visible",
]

MAX_OFFSET = 1_000_000_000_000
"""Equal to ``yiji.models.common.MAX_OFFSET`` (a test checks), restated so that building the parser does
not import the models."""

Handler = Callable[["Context", argparse.Namespace], Any]


class _UseCase(Protocol):
    def close(self) -> None: ...


U = TypeVar("U", bound=_UseCase)


def add_common(parser: argparse.ArgumentParser, *, suppress: bool, scoped: bool = True) -> None:
    """Options accepted before or after the command name.

    ``scoped=False`` is for the commands that cover the whole database: ``--persona`` and ``--project``
    are still parsed there, so that the command refuses them by name, but its help does not offer them.
    """
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument("--db", default=default, help="database file (default: $YIJI_DB or config)")
    parser.add_argument("--config", default=default, help="configuration file (TOML)")
    parser.add_argument(
        "--persona", default=default, help="persona id (default from config)" if scoped else argparse.SUPPRESS
    )
    parser.add_argument(
        "--project", default=default, help="project id (default from config)" if scoped else argparse.SUPPRESS
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help="print machine-readable JSON",
    )


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in ``[low, high]``. The error names the rule, never the value,
    and a number too large for SQLite is refused here rather than overflowing later."""

    def convert(text: str) -> int:
        rule = f"must be a whole number from {low} to {high}"
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(rule) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(rule)
        return value

    convert.__name__ = "integer"  # argparse names the type in some messages
    return convert


def add_page_options(parser: argparse.ArgumentParser, *, limit: int, max_limit: int = 10_000) -> None:
    """``--offset`` and ``--limit`` for a paginated listing."""
    parser.add_argument(
        "--offset", type=bounded_int(0, MAX_OFFSET), default=0, help="skip this many matches (default 0)"
    )
    parser.add_argument(
        "--limit",
        type=bounded_int(1, max_limit),
        default=limit,
        help=f"show at most this many (default {limit}, at most {max_limit})",
    )


def more_line(  # noqa: PLR0913 - the page's numbers, its noun and the words to say them in
    total: int,
    offset: int,
    shown: int,
    next_offset: int | None,
    noun: str,
    plural: str | None = None,
    words: Words | None = None,
) -> str:
    """The closing line of a plain listing: which rows were shown and how to see the rest. ``noun`` is
    the singular (``event``), ``plural`` its plural where an ``s`` does not make it (``memories``);
    ``words`` the language (English by default)."""
    from yiji.domain.wording import words_for

    say = words or words_for("en")
    plural = plural or noun + "s"
    if total == 0:
        return say.page("cli.page.none", noun, plural, total=total)
    if shown == 0:
        return say.page("cli.page.past", noun, plural, total=total, offset=offset)
    line = say.page("cli.page", noun, plural, start=offset + 1, end=offset + shown, total=total)
    if next_offset is not None:
        line += say.page("cli.page.more", noun, plural, more=total - next_offset, next=next_offset)
    return line


def utf8_process() -> None:
    """Run this command line in Python's UTF-8 mode whatever the locale (``LC_ALL=C PYTHONUTF8=0``).

    Arguments and file names reach Python decoded by the locale's encoding; under an ASCII locale a
    Chinese argument would not survive, and a path could not be opened again once decoded properly.
    Re-executing the same command line with ``-X utf8`` (the same process id) makes the command line and
    file names UTF-8; it happens only when the locale is not UTF-8 already.
    """
    if os.name != "posix" or sys.getfilesystemencoding() == "utf-8" or sys.flags.utf8_mode:
        return
    os.execv(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]])


def utf8_arguments(words: list[str]) -> list[str]:
    """The command line, each word checked to be UTF-8 (bytes that are not arrive as lone surrogates)."""
    for number, word in enumerate(words, start=1):
        try:
            os.fsencode(word).decode("utf-8")
        except UnicodeError:  # not UTF-8 bytes, or a surrogate no bytes stand for
            raise InvalidInput(f"argument {number}", "the argument is not UTF-8 text") from None
    return words


def utf8_output() -> None:
    """Results and errors are written as UTF-8, whatever ``PYTHONIOENCODING`` or the locale says (a host
    reading the JSON line of ``host-ingest`` expects UTF-8)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.encoding.lower().replace("_", "-") != "utf-8":
            stream.reconfigure(encoding="utf-8", errors=stream.errors)


class Context:
    """What a command handler receives.

    ``read_only`` is set for commands that only read: on a database file that does not exist they stop
    with an error (exit 2) instead of creating it.
    """

    def __init__(self, args: argparse.Namespace, *, read_only: bool = False) -> None:
        self.args = args
        self.read_only = read_only
        self._config: Config | None = None
        self._service: MemoryService | None = None
        self._closers: list[Callable[[], None]] = []

    @property
    def json(self) -> bool:
        return bool(getattr(self.args, "json", False))

    @property
    def persona(self) -> str | None:
        return getattr(self.args, "persona", None)

    @property
    def project(self) -> str | None:
        return getattr(self.args, "project", None)

    def when(self, value: datetime | str) -> str:
        """A time for the person reading plain output, in the configured display zone (JSON keeps UTC)."""
        from yiji.timeutil import local_time

        return local_time(value, self.zone)

    @property
    def words(self) -> Words:
        """The words of plain output: ``[display] language``, else the locale (JSON never changes)."""
        from yiji.domain.wording import language_of, words_for

        return words_for(language_of(self.config.display.language, os.environ))

    @property
    def zone(self) -> tzinfo | None:
        """The display zone (``[display] timezone``); ``None`` is the system's local zone."""
        from yiji.timeutil import display_zone

        return display_zone(self.config.display_timezone)

    @property
    def config(self) -> Config:
        if self._config is None:
            from yiji.config import load_config

            db = getattr(self.args, "db", None)
            self._config = load_config(
                getattr(self.args, "config", None), overrides={"db": db} if db else None
            )
        return self._config

    def _check_database(self) -> None:
        """A command that only reads stops on a database path where nothing exists."""
        if self.read_only and not self.config.db.expanduser().exists():
            raise InvalidInput(
                "db",
                f"no database exists at {visible(str(self.config.db))}; a command that only reads creates "
                "nothing (check --db or $YIJI_DB, or store something first)",
            )

    @property
    def service(self) -> MemoryService:
        if self._service is None:
            self._check_database()
            from yiji.service import open_service

            self._service = open_service(self.config, notify=self.notify)
            if self._service.db.created:
                self.announce_new_database(self.config.db)
        return self._service

    @staticmethod
    def announce_new_database(path: Path) -> None:
        """Tell a person at a terminal that a write created a new database, and where: a mistyped
        ``--db`` would otherwise store into a file no other command reads. Said on standard error only
        when it is a terminal (a host reading a hook's or server's output is not told)."""
        if sys.stderr.isatty():
            print(
                f"yiji: created a new database at {visible(str(path))} (no database was there; check --db "
                "or $YIJI_DB if you meant another)",
                file=sys.stderr,
            )

    def use_case(self, opener: Callable[[Config, Callable[[str], None]], U]) -> U:
        """A use case that runs without the rest of the service (a lexical recall), opened on the
        configured database by its composition root ``opener``; it is closed with the context."""
        self._check_database()
        found = opener(self.config, self.notify)
        self._closers.append(found.close)
        return found

    @staticmethod
    def notify(message: str) -> None:
        """A notice for the person at the terminal (standard error, never mixed into results)."""
        print(f"yiji: {message}", file=sys.stderr)

    def close(self) -> None:
        for closer in self._closers:
            closer()
        self._closers.clear()
        if self._service is not None:
            self._service.close()
            self._service = None

    @contextlib.contextmanager
    def new_database_or_none(self) -> Iterator[None]:
        """A command that fills a new database (import, restore) and is refused leaves no database behind:
        when the path held none before, the file, SQLite's side files and the folders made for it go."""
        path = self.config.db.expanduser()
        made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]  # innermost first
        existed = path.exists()
        try:
            yield
        except BaseException:
            if not existed:
                self.close()
                for suffix in ("", "-wal", "-shm", "-journal"):
                    with contextlib.suppress(OSError):
                        Path(f"{path}{suffix}").unlink()
                for folder in made:
                    with contextlib.suppress(OSError):
                        folder.rmdir()
            raise

    def emit(self, value: Any, human: Callable[[Any], str] | None = None) -> None:
        """Print a result: JSON with ``--json``, otherwise the human rendering (or pretty JSON).

        A plain result (one with ``as_dict``, such as :class:`yiji.domain.recall.Recalled`) gives its own
        JSON form; pydantic models and mixes of them go through ``to_jsonable``."""
        if self.json or human is None:
            as_dict = getattr(value, "as_dict", None)
            if callable(as_dict):
                data = as_dict()
            else:
                from yiji.models.common import to_jsonable

                data = to_jsonable(value)
            if self.json:
                print(json.dumps(data, ensure_ascii=False))
            else:
                print(visible(json.dumps(data, ensure_ascii=False, indent=2)))
        else:
            print(visible(human(value)))


def progress_bar(description: str, total: int | None) -> tqdm[Any]:
    """A progress bar on stderr for long work; silent when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(desc=description, total=total, unit="row", disable=None, leave=False, file=sys.stderr)


def stdin_bytes() -> IO[bytes]:
    """Standard input as bytes, whatever the locale: text is decoded by :func:`utf8_text`, never by the
    locale's encoding (``PYTHONIOENCODING=latin-1`` would store mojibake)."""
    buffer: IO[bytes] | None = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer
    # a text stream without bytes underneath (an embedding program): its text, checked the same way
    return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass"))


def utf8_text(data: bytes, field: str, what: str = "standard input") -> str:
    """``data`` decoded as strict UTF-8; otherwise InvalidInput naming ``field`` and what was read."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(field, f"{what} is not UTF-8 text") from None


def _stdin_text(field: str) -> str:
    """Standard input, minus exactly one trailing line ending (the one ``echo`` or a heredoc adds)."""
    text = utf8_text(stdin_bytes().read(), field)
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def read_text_arg(value: str | None, file: str | None, field: str, *, nonempty: bool = False) -> str:
    """Text from an argument, a file, or standard input (``-``), always read as UTF-8.

    From standard input exactly one trailing newline is removed (``echo hi | yiji ...`` stores "hi");
    a ``--file`` is taken byte for byte, so a file's own trailing newline is kept. ``nonempty``: empty
    text is refused here, saying where text can come from (empty standard input is a common slip).
    """
    if value is not None and file is not None:
        raise InvalidInput(field, "give the text or a file, not both")
    if file is not None and file != "-":
        try:
            data = Path(file).read_bytes()
        except FileNotFoundError:
            raise InvalidInput(field, "the file does not exist") from None
        except OSError:
            raise InvalidInput(field, "the file could not be read") from None
        if nonempty and not data:
            raise InvalidInput(field, "the file is empty")
        return utf8_text(data, field, "the file")
    if value is None:
        if file is None and sys.stdin.isatty():
            raise InvalidInput(field, "is required (as an argument, --file PATH, or on stdin)")
        value = _stdin_text(field)
    if nonempty and not value:
        raise InvalidInput(field, "is empty (give it as an argument, --file PATH, or on stdin)")
    return value


def read_json_object(file: str, field: str = "input") -> dict[str, Any]:
    """A JSON object from a file or standard input (``-``)."""
    try:
        raw = json.loads(read_text_arg(None, file, field))
    except json.JSONDecodeError:
        raise InvalidInput(field, "must be a JSON object") from None
    except RecursionError:
        raise InvalidInput(field, "is nested too deeply") from None
    if not isinstance(raw, dict):
        raise InvalidInput(field, "must be a JSON object")
    return raw


_SCOPE = ("persona", "project")
"""Named as fields wherever they are refused: they may come from --persona/--project or the configuration."""


def flag_of(field: str, renamed: Mapping[str, str] = {}, *, input_prefix: str | None = None) -> str:
    """The command-line name of a model field location (``kinds.0``) an error names.

    From flags (``input_prefix`` is ``None``): the field's flag, ``renamed`` or ``--`` plus its name with
    dashes (``as_of``: ``--as-of``), without the item index of a repeatable flag (``kinds.0``: ``--kind``,
    one flag however many values it was given). From a JSON ``--input`` file (``input_prefix`` such as
    ``"--input "``): a renamed field still names its flag, any other one its place in the file. The scope
    (persona, project) keeps its name: it may come from the configuration as well as from a flag."""
    top, _, rest = field.partition(".")
    if top in renamed:
        return renamed[top]
    if input_prefix is not None or top in _SCOPE:
        return (input_prefix or "") + field
    nested = ".".join(part for part in rest.split(".") if part and not part.isdigit())
    return f"--{top.replace('_', '-')}" + (f".{nested}" if nested else "")


def parse_flags(
    model: type[M],
    raw: Mapping[str, Any],
    renamed: Mapping[str, str] = {},
    *,
    input_prefix: str | None = None,
) -> M:
    """``raw`` (model fields) validated into ``model``; a refusal names what a person typed: the flag
    (see :func:`flag_of`), not the model's field, in the message and in ``--json`` problems alike."""
    from yiji.models import parse

    try:
        return parse(model, dict(raw))
    except InvalidInput as exc:
        problems: list[tuple[str, str]] = []
        for field, rule in exc.problems:
            named = (flag_of(field, renamed, input_prefix=input_prefix), rule)
            if named not in problems:  # --kind a --kind b: one problem of --kind
                problems.append(named)
        raise InvalidInput(problems[0][0], problems[0][1], problems=problems) from None


def confirm(yes: bool, what: str, question: str | Callable[[], str], *, hint: str = "") -> bool:
    """Whether to go on with something that cannot be undone: ``--yes`` was given, or a person answered y
    on the terminal to ``question`` (a callable may print what would happen first and return it).

    The one confirmation of the CLI. Without ``--yes`` and without a terminal there is no one to ask, so
    it is refused before anything is read or changed, naming the flag and why: ``--yes: is required
    {what}: there is no terminal to confirm on`` (``what``: "to delete permanently"; ``hint`` follows).
    """
    if yes:
        return True
    if not sys.stdin.isatty():
        raise InvalidInput("--yes", f"is required {what}: there is no terminal to confirm on{hint}")
    asked = question if isinstance(question, str) else question()
    return input(f"{asked} [y/N] ").strip().lower() in ("y", "yes")

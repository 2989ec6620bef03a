"""The one error tree of yiji.

Every error yiji raises on purpose derives from :class:`YijiError`. Adapters map the tree to exit
codes (CLI) or tool errors (MCP); nothing else in the package catches broadly.

::

    YijiError                       exit 1 unless stated
    ├── InvalidInput                exit 2: a field broke a rule (field + rule, never the value)
    │   └── NotFound                exit 2: a referenced persona/event/memory/checkpoint is missing
    ├── Conflict                    exit 3: id taken by another payload, or a compare-and-set lost
    ├── StorageError                exit 1: SQLite or the file system failed (mapped once, in ``yiji.db``)
    │   ├── DiskFull                the disk (or quota) is full; nothing partial was left behind
    │   ├── ReadOnlyStorage         a file or its folder is not writable (names which)
    │   ├── SchemaTooNew            the file was written by a newer yiji; it is left untouched
    │   │   └── ArchiveTooNew       exit 2: an archive or backup to import is of a newer format
    │   ├── DatabaseGone            the open file was deleted, moved or replaced: nothing read or written
    │   └── IntegrityFailure        an archive/backup or database failed a consistency check
    │       ├── DatabaseCorrupt     the database file is damaged: restore it from a backup
    │       └── ArchiveRejected     exit 2: an archive/backup record broke a rule (record + rule, no value)
    └── ProviderError               exit 1: extraction/embedding endpoint failed (sanitized message)
        ├── ProviderTransient       timeout, connection failure, 429, 5xx: retry later
        └── ProviderPermanent       4xx other than 429, malformed or mis-shaped response

Messages are written for a person and never contain user input values, credentials or remote
response bodies: callers pass the *name* of the field and the *rule* it broke. A message never starts with
its own code, in words or otherwise: adapters show the code once (MCP: ``code: message``; CLI plain output:
``yiji: heading: message`` where a class has a ``heading``; JSON: ``{"error": code, "message": ...}``).
"""

from __future__ import annotations

__all__ = [
    "ArchiveRejected",
    "ArchiveTooNew",
    "Conflict",
    "DatabaseCorrupt",
    "DatabaseGone",
    "DiskFull",
    "IntegrityFailure",
    "InvalidInput",
    "NotFound",
    "ProviderError",
    "ProviderPermanent",
    "ProviderTransient",
    "ReadOnlyStorage",
    "SchemaTooNew",
    "StorageError",
    "YijiError",
    "restore_advice",
]


def restore_advice() -> str:
    """What to do with a damaged database, naming commands that work where the process runs."""
    from yiji.invocation import yiji_command

    return (
        f"restore it from a backup into a new file ({yiji_command('--db NEW.db restore BACKUP.db')}), "
        f"or export what is still readable ({yiji_command('export')})"
    )


class YijiError(Exception):
    """Root of every error yiji raises deliberately."""

    exit_code = 1
    code = "internal"
    #: What the CLI's plain output puts before a message that does not say it itself ("invalid input").
    heading = ""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, object]:
        return {"error": self.code, "message": self.message}


class InvalidInput(YijiError):
    """A field broke a rule. Carries the field name(s) and rule(s); never the offending value."""

    exit_code = 2
    code = "invalid_input"
    heading = "invalid input"

    def __init__(
        self,
        field: str,
        rule: str,
        *,
        problems: list[tuple[str, str]] | None = None,
        codes: list[str | None] | None = None,
    ) -> None:
        self.problems: list[tuple[str, str]] = problems or [(field, rule)]
        #: A stable machine id per problem where its rule has one (``quote_not_in_source``), else ``None``:
        #: the message says the rule in words, JSON output adds the id as ``code``.
        self.codes: list[str | None] = codes or [None] * len(self.problems)
        super().__init__("; ".join(f"{f}: {r}" for f, r in self.problems))
        self.field = field
        self.rule = rule

    @property
    def coded_problems(self) -> list[tuple[str, str]]:
        """``(field, code)`` per problem, the rule's words where it has no code: what programs compare."""
        return [(f, code or r) for (f, r), code in zip(self.problems, self.codes, strict=False)]

    def to_dict(self) -> dict[str, object]:
        problems: list[dict[str, str]] = []
        for (f, r), code in zip(self.problems, self.codes, strict=False):
            problems.append({"field": f, "rule": r, **({"code": code} if code else {})})
        return {"error": self.code, "message": self.message, "problems": problems}


class NotFound(InvalidInput):
    """A referenced record does not exist (in the given scope)."""

    code = "not_found"
    heading = "not found"

    def __init__(self, what: str, field: str = "id", *, key: str = "id") -> None:
        """``what`` is missing; ``field`` names the input that referred to it (kept in ``problems``),
        ``key`` says in words what that input holds: ``id`` for every kind of id, ``number`` for a
        version number. The message is built from ``what`` and ``key`` only, never from the field's
        name, so every id reads the same: "no memory with that id in this scope"."""
        message = f"no {what} with that {key} in this scope"
        super().__init__(field, message)
        self.message = message
        self.args = (message,)


class Conflict(YijiError):
    """An id is already taken by a different payload or scope, or a compare-and-set lost."""

    exit_code = 3
    code = "conflict"


class StorageError(YijiError):
    """SQLite failed; the message names the operation, not the data."""

    code = "storage_error"


class DiskFull(StorageError):
    """The disk or quota holding a file yiji writes is full. The transaction or file was abandoned whole."""

    code = "disk_full"


class ReadOnlyStorage(StorageError):
    """A file or folder yiji must write is read-only (permissions, an immutable file, a read-only mount)."""

    code = "read_only"


class SchemaTooNew(StorageError):
    """The database was written by a newer yiji. It is refused and left untouched."""

    code = "schema_too_new"


class DatabaseGone(StorageError):
    """The database file yiji opened is no longer the file at its path (deleted, moved or replaced).

    Reading would show the old file's data and writing would go to a file no one can open again, so
    neither happens: the process must be restarted to open the file now at the path.
    """

    code = "database_gone"


class ArchiveTooNew(SchemaTooNew):
    """An archive or backup to import or restore was written by a newer yiji: a rejected file (exit 2),
    refused before the destination database is created."""

    exit_code = 2


class IntegrityFailure(StorageError):
    """A database, archive or backup failed a consistency check."""

    code = "integrity_failure"


class DatabaseCorrupt(IntegrityFailure):
    """SQLite found damaged pages in the database file; the message says how to recover."""

    code = "database_corrupt"


class ArchiveRejected(IntegrityFailure):
    """An archive or backup was refused before anything was written.

    ``problems`` holds ``(record, rule)`` pairs such as ``("memories[3].quote", "quote_not_in_source")``:
    the table and index of the record, the field, and a stable rule id. Never a stored value. A problem
    of the whole file (:data:`WHOLE_FILE_WORDS`) is said in words in the message, its id kept in JSON;
    ``words`` replaces the message's list of problems where the caller can say more (what the file is).
    """

    code = "archive_rejected"
    heading = "archive rejected"
    exit_code = 2  # the file given is invalid input, like any other

    def __init__(
        self, problems: list[tuple[str, str]], *, total: int | None = None, words: str | None = None
    ) -> None:
        self.problems = problems
        self.total = total if total is not None else len(problems)
        shown = words or "; ".join(_problem_words(record, rule) for record, rule in problems)
        more = f" (and {self.total - len(problems)} more)" if self.total > len(problems) else ""
        super().__init__(f"nothing was written: {shown}{more}")

    def to_dict(self) -> dict[str, object]:
        return {
            "error": self.code,
            "message": self.message,
            "problems": [{"record": r, "rule": rule} for r, rule in self.problems],
            "total_problems": self.total,
        }


WHOLE_FILE_WORDS: dict[tuple[str, str], str] = {
    ("archive", "not_valid_json"): "the file is not valid JSON",
    ("archive", "not_utf8"): "the file is not UTF-8 text",
    ("archive", "duplicate_field"): "the file names a field twice in one object",
    ("archive", "not_a_yiji_archive"): "the file is not a yiji archive",
    ("archive.format", "not_a_yiji_archive"): (
        "the file is not a yiji archive (its format is not yiji-archive)"
    ),
    ("archive", "empty_file"): "the file is empty",
    ("database", "empty_file"): "the file is empty, not a backup",
    ("database", "not_a_sqlite_database"): "the file is not a SQLite database, so it is not a yiji backup",
    ("database", "not_a_yiji_database"): "the file is a SQLite database but not a yiji database or backup",
}
"""Problems of a whole archive or backup file, by ``(record, rule id)``, in the words a message uses."""


def _problem_words(record: str, rule: str) -> str:
    """``record: rule`` (the archive format's ``table[index].field: rule``), or a whole-file problem in
    words; a rule id may carry where the problem is (``not_valid_json (line 1, column 1)``)."""
    rule_id, _, where = rule.partition(" ")
    words = WHOLE_FILE_WORDS.get((record, rule_id))
    if words is None:
        return f"{record}: {rule}"
    return f"{words} {where}" if where else words


class ProviderError(YijiError):
    """An extraction or embedding endpoint failed. The message is sanitized.

    ``reason`` says how, for callers that judge an endpoint by its failures: ``unreachable`` (no
    connection), ``timeout``, ``busy`` (another request of this process held the endpoint), ``http`` (a
    status other than success; ``status`` holds it), ``setup`` (a URL or API key setting that cannot
    work) or ``answer`` (the endpoint answered, but not in the shape asked for)."""

    code = "provider_error"

    def __init__(self, message: str, *, reason: str = "answer", status: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status


class ProviderTransient(ProviderError):
    """Timeout, connection failure, rate limit or server error: trying again later may work."""

    code = "provider_transient"


class ProviderPermanent(ProviderError):
    """The endpoint refused the request or answered in a shape that is not the expected one."""

    code = "provider_permanent"

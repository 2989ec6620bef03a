"""The schema of a yiji database, as an append-only list of migration steps.

``PRAGMA user_version`` counts the steps applied. Step N turns a version N-1 database into version
N; each step runs statement by statement inside the same ``BEGIN IMMEDIATE`` transaction as its
version bump (``executescript`` would commit early, so it is never used). A fresh database runs
every step, so a fresh database and an upgraded one end with the same schema by construction; a
test checks it anyway.

Never edit a released step: add a new one.

* v1: personas, events, memories, relations, checkpoints, the embedding cache, the lexical index
  (FTS5), and ``meta`` (index/segmenter bookkeeping).
* v2: memory gists, event cues (photo/text identifiers and labels), lookup indexes.
* v3: scoped host-capture cursors with compare-and-set updates.
* v4: vectors of raw conversation events (``event_embeddings``): they are recall candidates too, and
  ``embeddings.memory_id`` can only name a memory.
* v5: the value-list CHECK constraints of ``events`` and ``memories`` are spelled as ``=`` comparisons
  joined by ``OR`` (the same rule). SQLite builds a temporary lookup table for every ``IN`` list of
  three or more values each time an INSERT runs, which cost as much per stored event as the row
  itself. The stored rows do not change (see :class:`RewriteTable`).
* v6: ``events.seq`` is no longer ``AUTOINCREMENT``: its high-water mark moves from
  ``sqlite_sequence`` to the ``meta`` row ``events_seq_floor``, written only when events are deleted
  or an archive is imported, so storing an event no longer rewrites a ``sqlite_sequence`` page. The
  stored rows do not change (the table is a rowid table either way).
* v7: the review state of a memory (``review_state``: ``accepted``, ``proposed`` or ``rejected``, with
  ``reviewed_at``, ``reviewed_by`` and ``review_note``). Every memory stored before is ``accepted``; only
  accepted memories take part in recall, fact intervals, ``session_resume`` and the current emotion.
* v8: the lexicon (``lex_space``, ``lex_term``, ``lex_posting``; :mod:`yiji.store.lexicon`), the
  scope-partitioned postings and statistics beside the FTS5 index that exact top-k recall reads. A
  rebuildable cache like the index: filled from the index's bodies when the step runs (see
  :class:`Backfill`), rebuilt by ``reindex``, never exported.
* v9: the packed vector cache of semantic recall (``vector_packs`` and ``vector_blocks``: each scope's
  vectors of one embedding space as int8 rows with a per-row scale, see :mod:`yiji.store.vectors`), and
  a ``stamp`` on every stored vector (the ``meta.vectors_generation`` that wrote it) so vectors written
  after a pack was built are found without reading the others. Deleting a vector deletes the packs of
  its scope in the same transaction (triggers), whatever deletes it.
* v10: the deletion ledger (``deletion_ledger``): what permanent deletions removed, remembered by digest
  and never by text (:mod:`yiji.domain.deletions`), so that no capture, submission or import stores it
  again. Authoritative: archives and backups carry it. Rows are only ever added.
* v11: ``events.redacted``: 1 when secrets were replaced by markers in the event's text before it was
  stored (:mod:`yiji.domain.secrets`), or afterwards by ``yiji doctor --redact-secrets``; 0 otherwise.
* v12: the lexicon's postings as blocks per term (``lex_block``: documents in document order, packed,
  with each block's impact bound) and a per-term tail of the postings added since its last block
  (``lex_term.tail``), in place of one row per posting (``lex_posting``, dropped); refilled from the
  index's bodies when the step runs. v8's fill of the tables this step replaces does nothing since.
* v13: ``lex_space.recent``: a space's documents added since its terms' rows were last written, one line
  each (:mod:`yiji.store.lexicon`), so that storing one event writes one row of the lexicon rather than
  one per term. Empty in every space when the step runs (every posting already has its place). The
  FTS5 tables (``memory_fts``, ``event_fts``) recreated with ``columnsize=0`` and their rows copied: no
  ``*_docsize`` row per document, since the lexicon keeps the lengths that scoring reads.

Times are fixed-width UTC strings (see ``yiji.timeutil``). Numbers are never reused after a deletion,
so cursors and FTS rowids stay unambiguous: ``memories.pk`` is ``AUTOINCREMENT``; a new event's
``seq`` is above both the highest stored ``seq`` and ``events_seq_floor``, which every deletion of
events raises to the highest deleted ``seq`` (see :mod:`yiji.store.events`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AUTHORITATIVE_TABLES", "Backfill", "CACHE_TABLES", "MIGRATIONS", "SCHEMA_VERSION", "RewriteTable"]


@dataclass(frozen=True)
class RewriteTable:
    """A migration statement that changes only how a table's definition is written.

    Each ``(old, new)`` replaces text in the table's ``CREATE TABLE`` statement as SQLite stores it.
    :meth:`yiji.db.Database.migrate` edits ``sqlite_schema`` directly (SQLite's documented procedure
    for changes that leave the stored rows as they are, with the schema cookie bumped so every
    connection re-reads it). Only for changes every existing row already satisfies and that leave the
    stored format alone: a rule spelled differently (never a stricter one), or ``AUTOINCREMENT``
    dropped from an integer primary key. The old text must stay correct, since it stays when the
    edit is not allowed.
    """

    table: str
    replacements: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Backfill:
    """A migration step that fills a new rebuildable cache from what the database already holds.

    ``target`` names a function as ``module:function``; it takes the connection and runs inside the
    step's transaction. Imported when the step runs, so this module stays free of the store."""

    target: str


def _any_of(column: str, values: tuple[str, ...], gap: str = " ") -> tuple[str, str]:
    """``CHECK (column IN (...))`` as v1 wrote it (``gap`` after ``IN``), and the same rule as ``OR``
    of comparisons."""
    listed = ", ".join(f"'{v}'" for v in values)
    either = " OR ".join(f"{column} = '{v}'" for v in values)
    return f"CHECK ({column} IN{gap}({listed}))", f"CHECK ({either})"


_V1 = [
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE personas (
        persona_id TEXT NOT NULL,
        version INTEGER NOT NULL CHECK (version >= 1),
        text TEXT NOT NULL,
        note TEXT,
        created_at TEXT NOT NULL,
        PRIMARY KEY (persona_id, version)
    )
    """,
    """
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
        source TEXT NOT NULL,
        category TEXT NOT NULL
            CHECK (category IN ('conversation', 'reference', 'persona', 'correction')),
        text TEXT NOT NULL,
        occurred_at TEXT NOT NULL,
        ingested_at TEXT NOT NULL,
        amended INTEGER NOT NULL DEFAULT 0 CHECK (amended IN (0, 1)),
        extraction_state TEXT NOT NULL DEFAULT 'none'
            CHECK (extraction_state IN ('none', 'pending', 'done', 'skipped')),
        extraction_error TEXT,
        extraction_attempts INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX events_scope_time ON events (persona_id, project_id, occurred_at)",
    "CREATE INDEX events_session ON events (persona_id, project_id, session_id, seq)",
    """
    CREATE TABLE memories (
        pk INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        event_id TEXT NOT NULL REFERENCES events (id),
        kind TEXT NOT NULL CHECK (kind IN
            ('fact', 'preference', 'episode', 'observation', 'emotion', 'agreement', 'growth')),
        basis TEXT NOT NULL CHECK (basis IN ('user_statement', 'assistant_expression', 'inference')),
        text TEXT NOT NULL,
        quote TEXT NOT NULL,
        confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
        subject TEXT,
        fact_key TEXT,
        valid_at TEXT NOT NULL,
        invalid_at TEXT,
        revoked_at TEXT,
        revoked_reason TEXT,
        valence REAL CHECK (valence IS NULL OR (valence >= -1 AND valence <= 1)),
        arousal REAL CHECK (arousal IS NULL OR (arousal >= 0 AND arousal <= 1)),
        origin TEXT NOT NULL CHECK (origin IN ('extraction', 'manual', 'correction', 'import')),
        created_at TEXT NOT NULL
    )
    """,  # noqa: E501
    "CREATE INDEX memories_event ON memories (event_id)",
    "CREATE INDEX memories_scope_kind ON memories (persona_id, project_id, kind, valid_at)",
    """
    CREATE TABLE relations (
        from_id TEXT NOT NULL REFERENCES memories (id),
        to_id TEXT NOT NULL REFERENCES memories (id),
        type TEXT NOT NULL CHECK (type IN ('related', 'corrects')),
        created_at TEXT NOT NULL,
        PRIMARY KEY (from_id, to_id, type)
    )
    """,
    "CREATE INDEX relations_to ON relations (to_id)",
    """
    CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        goal TEXT NOT NULL,
        completed TEXT NOT NULL DEFAULT '[]',
        pending TEXT NOT NULL DEFAULT '[]',
        constraints TEXT NOT NULL DEFAULT '[]',
        next_action TEXT,
        covered_seq INTEGER,
        created_at TEXT NOT NULL,
        invalidated_at TEXT,
        invalid_reason TEXT
    )
    """,
    "CREATE INDEX checkpoints_session ON checkpoints (persona_id, project_id, session_id, created_at)",  # noqa: E501
    """
    CREATE TABLE embeddings (
        memory_id TEXT PRIMARY KEY REFERENCES memories (id),
        fingerprint TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created_at TEXT NOT NULL
    )
    """,
    # Lexical index: pre-segmented text (see yiji.domain.segment), rowid = memories.pk / events.seq.
    "CREATE VIRTUAL TABLE memory_fts USING fts5 (body)",
    "CREATE VIRTUAL TABLE event_fts USING fts5 (body)",
]

_V2 = [
    "ALTER TABLE memories ADD COLUMN gist TEXT",
    """
    CREATE TABLE event_cues (
        event_id TEXT NOT NULL REFERENCES events (id),
        cue_type TEXT NOT NULL CHECK (cue_type IN ('photo', 'text')),
        identifier TEXT NOT NULL,
        label TEXT,
        PRIMARY KEY (event_id, cue_type, identifier)
    )
    """,
    "CREATE INDEX event_cues_identifier ON event_cues (identifier)",
    "CREATE INDEX memories_fact ON memories (persona_id, project_id, subject, fact_key, valid_at)",
    "CREATE INDEX memories_scope_created ON memories (persona_id, project_id, created_at)",
    "CREATE INDEX events_pending ON events (extraction_state) WHERE extraction_state = 'pending'",
]

_V3 = [
    """
    CREATE TABLE capture_cursors (
        instance_id TEXT NOT NULL,
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        cursor TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (instance_id, persona_id, project_id, session_id)
    )
    """,
]

_V4 = [
    """
    CREATE TABLE event_embeddings (
        event_id TEXT PRIMARY KEY REFERENCES events (id),
        fingerprint TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created_at TEXT NOT NULL
    )
    """,
]

_V5: list[str | RewriteTable] = [
    RewriteTable(
        "events",
        (
            _any_of("role", ("user", "assistant", "system", "tool")),
            _any_of("category", ("conversation", "reference", "persona", "correction")),
            _any_of("extraction_state", ("none", "pending", "done", "skipped")),
        ),
    ),
    RewriteTable(
        "memories",
        (
            _any_of(
                "kind",
                ("fact", "preference", "episode", "observation", "emotion", "agreement", "growth"),
                "\n            ",
            ),
            _any_of("basis", ("user_statement", "assistant_expression", "inference")),
            _any_of("origin", ("extraction", "manual", "correction", "import")),
        ),
    ),
]

_V6: list[str | RewriteTable] = [
    RewriteTable("events", (("seq INTEGER PRIMARY KEY AUTOINCREMENT", "seq INTEGER PRIMARY KEY"),)),
    # sqlite_sequence exists from v1 on (memories.pk keeps AUTOINCREMENT). It has no entry for an
    # events table that never held a row; then no floor is written (an absent floor counts as 0).
    "INSERT OR REPLACE INTO meta (key, value) "
    "SELECT 'events_seq_floor', seq FROM sqlite_sequence WHERE name = 'events' AND seq > 0",
    "DELETE FROM sqlite_sequence WHERE name = 'events'",
]

_V7: list[str | RewriteTable] = [
    "ALTER TABLE memories ADD COLUMN review_state TEXT NOT NULL DEFAULT 'accepted' "
    "CHECK (review_state = 'accepted' OR review_state = 'proposed' OR review_state = 'rejected')",
    "ALTER TABLE memories ADD COLUMN reviewed_at TEXT",
    "ALTER TABLE memories ADD COLUMN reviewed_by TEXT",
    "ALTER TABLE memories ADD COLUMN review_note TEXT",
    # The review queue: proposals of a scope, oldest first (a partial index stays as small as the queue).
    "CREATE INDEX memories_proposed ON memories (persona_id, project_id, pk) WHERE review_state = 'proposed'",
]

_V8: list[str | RewriteTable | Backfill] = [
    # the lexicon's DDL (yiji.store.lexicon.SCHEMA, spelled here: a released step never changes)
    """
    CREATE TABLE lex_space (
        id INTEGER PRIMARY KEY,
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        tbl INTEGER NOT NULL,
        docs INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        UNIQUE (persona_id, project_id, tbl)
    )
    """,
    """
    CREATE TABLE lex_term (
        space INTEGER NOT NULL,
        term TEXT NOT NULL,
        docs INTEGER NOT NULL,
        PRIMARY KEY (space, term)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE lex_posting (
        space INTEGER NOT NULL,
        term TEXT NOT NULL,
        tf INTEGER NOT NULL,
        len INTEGER NOT NULL,
        doc INTEGER NOT NULL,
        PRIMARY KEY (space, term, tf, len, doc DESC)
    ) WITHOUT ROWID
    """,
    # filled by nothing since v12 replaced these tables (v12 fills its own)
    Backfill("yiji.store.lexicon:superseded"),
]


def _forget_packs(table: str, column: str, owner: str) -> str:
    """A trigger: deleting a vector of ``table`` deletes the packs of its owner's scope (all packs when
    the owner row is already gone), so no pack keeps a deleted row's vector."""
    found = f"SELECT persona_id, project_id FROM {owner} WHERE id = old.{column}"
    return (
        f"CREATE TRIGGER {table}_forget_packs AFTER DELETE ON {table} BEGIN "
        f"DELETE FROM vector_packs WHERE (persona_id, project_id) IN ({found}) "
        f"OR NOT EXISTS ({found}); END"
    )


_V9: list[str | RewriteTable | Backfill] = [
    "ALTER TABLE embeddings ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE event_embeddings ADD COLUMN stamp INTEGER NOT NULL DEFAULT 0",
    "CREATE INDEX embeddings_stamp ON embeddings (stamp)",
    "CREATE INDEX event_embeddings_stamp ON event_embeddings (stamp)",
    """
    CREATE TABLE vector_packs (
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        dim INTEGER NOT NULL,
        through INTEGER NOT NULL,
        rows INTEGER NOT NULL,
        separation REAL,
        built_at TEXT NOT NULL,
        PRIMARY KEY (persona_id, project_id, fingerprint)
    )
    """,
    """
    CREATE TABLE vector_blocks (
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        block INTEGER NOT NULL,
        keys TEXT NOT NULL,
        scales BLOB NOT NULL,
        codes BLOB NOT NULL,
        PRIMARY KEY (persona_id, project_id, fingerprint, block),
        FOREIGN KEY (persona_id, project_id, fingerprint)
            REFERENCES vector_packs (persona_id, project_id, fingerprint) ON DELETE CASCADE
    )
    """,
    _forget_packs("embeddings", "memory_id", "memories"),
    _forget_packs("event_embeddings", "event_id", "events"),
]

_V10: list[str | RewriteTable | Backfill] = [
    """
    CREATE TABLE deletion_ledger (
        kind TEXT NOT NULL CHECK (kind = 'event_id' OR kind = 'text' OR kind = 'identifier'),
        digest TEXT NOT NULL,
        span INTEGER CHECK ((kind = 'identifier') = (span IS NOT NULL) AND (span IS NULL OR span >= 1)),
        bounded INTEGER CHECK ((kind = 'identifier') = (bounded IS NOT NULL)
            AND (bounded IS NULL OR bounded = 0 OR bounded = 1)),
        persona_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        UNIQUE (digest, kind, persona_id, project_id)
    )
    """,
    # forgotten identifiers are read per scope at every capture; event digests by value (the UNIQUE index)
    "CREATE INDEX deletion_ledger_identifiers ON deletion_ledger (persona_id, project_id) "
    "WHERE kind = 'identifier'",
]

_V11: list[str | RewriteTable | Backfill] = [
    "ALTER TABLE events ADD COLUMN redacted INTEGER NOT NULL DEFAULT 0 CHECK (redacted = 0 OR redacted = 1)",
]

_V12: list[str | RewriteTable | Backfill] = [
    "DROP TABLE lex_posting",
    "DROP TABLE lex_term",
    """
    CREATE TABLE lex_term (
        space INTEGER NOT NULL,
        term TEXT NOT NULL,
        docs INTEGER NOT NULL,
        tail BLOB NOT NULL,
        tail_tf INTEGER NOT NULL,
        tail_len INTEGER NOT NULL,
        PRIMARY KEY (space, term)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE lex_block (
        space INTEGER NOT NULL,
        term TEXT NOT NULL,
        first INTEGER NOT NULL,
        last INTEGER NOT NULL,
        n INTEGER NOT NULL,
        max_tf INTEGER NOT NULL,
        min_len INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (space, term, first)
    ) WITHOUT ROWID
    """,
    Backfill("yiji.store.lexicon:build_from_index"),
]


def _without_column_sizes(table: str) -> list[str | RewriteTable | Backfill]:
    """Recreate an FTS5 table with ``columnsize=0``, its rows copied: no ``*_docsize`` row per document
    (FTS5's ``bm25()`` would count a row's tokens from its body instead; yiji scores with its lexicon)."""
    return [
        f"CREATE VIRTUAL TABLE {table}_v13 USING fts5 (body, columnsize=0)",
        f"INSERT INTO {table}_v13 (rowid, body) SELECT rowid, body FROM {table}",
        f"DROP TABLE {table}",
        f"ALTER TABLE {table}_v13 RENAME TO {table}",
        f"INSERT INTO {table} ({table}) VALUES ('optimize')",
    ]


_V13: list[str | RewriteTable | Backfill] = [
    "ALTER TABLE lex_space ADD COLUMN recent TEXT NOT NULL DEFAULT ''",
    *_without_column_sizes("memory_fts"),
    *_without_column_sizes("event_fts"),
]

MIGRATIONS: list[list[str | RewriteTable | Backfill]] = [
    [*_V1],
    [*_V2],
    [*_V3],
    [*_V4],
    [*_V5],
    [*_V6],
    [*_V7],
    _V8,
    _V9,
    _V10,
    _V11,
    _V12,
    _V13,
]

AUTHORITATIVE_TABLES: tuple[str, ...] = (
    "personas",
    "events",
    "event_cues",
    "memories",
    "relations",
    "checkpoints",
    "capture_cursors",
    "deletion_ledger",
)
"""Tables that hold the user's data: archives carry them, nothing can rebuild them."""
CACHE_TABLES: tuple[str, ...] = (
    "embeddings",
    "event_embeddings",
    "vector_packs",
    "vector_blocks",
    "memory_fts",
    "event_fts",
    "lex_space",
    "lex_term",
    "lex_block",
)
"""Rebuildable caches: the vector cache (with its packed copy) and the lexical index."""
SCHEMA_VERSION = len(MIGRATIONS)

"""Operational use cases: ``doctor``, including the residue scan used to audit a deletion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from yiji.db import Connection
from yiji.domain import segment
from yiji.domain.capture import cursor_row_problems
from yiji.domain.review import state_problems
from yiji.domain.wording import counted
from yiji.errors import InvalidInput
from yiji.fileutil import stale_files, sweep_stale
from yiji.invocation import yiji_command
from yiji.schema import SCHEMA_VERSION
from yiji.service.base import Deps, is_generated_id
from yiji.store import capture as capture_store
from yiji.store import events as event_store
from yiji.store import health as store
from yiji.store import memories as memory_store

if TYPE_CHECKING:
    from yiji.models.reports import DoctorReport, IndexStatus

__all__ = ["Health"]


def _cursor_problems(rows: Sequence[dict[str, object]]) -> list[str]:
    """Capture cursor rows that break the rule an archive import applies (named by position, no value)."""
    problems = []
    for index, row in enumerate(rows):
        broken = cursor_row_problems(row)
        if not row["persona_known"]:
            broken.append(("persona_id", "persona_not_found"))
        problems += [
            f"capture_cursors[{index}].{column}: {rule} (host-ingest cannot use this row)"
            for column, rule in broken
        ]
    return problems


def _unread_warning(host: str, count: int) -> str:
    """Transcripts a host wrote in a shape yiji does not read, and what brings them in."""
    return (
        f"{counted(count, f'{host} transcript')} showed the model answered but held no conversation yiji "
        "reads (a transcript format this yiji does not know?): after updating yiji, "
        f"{yiji_command(f'import-transcripts {host} FOLDER')} captures them"
    )


MAX_NAMED = 20
"""At most this many memories that break the review-state rule are named; the rest are counted."""


def _review_state_problems(conn: Connection) -> list[str]:
    """Memories whose review columns yiji never writes (:data:`yiji.domain.review.STATE_RULES`), named
    by id (ids are generated, not secret) with the column and the rule, as an archive import refuses them."""
    named: list[str] = []
    more = 0
    for row in memory_store.review_columns(conn):
        for column, rule in state_problems(row):
            if len(named) < MAX_NAMED:
                named.append(f"memory {row['id']}.{column}: {rule} (an import refuses this row)")
            else:
                more += 1
    if more:
        named.append(f"{counted(more, 'more review-state problem')} not listed")
    return named


class Health:
    """``doctor`` and its residue scan."""

    def __init__(self, deps: Deps) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope

    @staticmethod
    def _index_status_in(built_with: str | None) -> IndexStatus:
        return {
            "segmenter": segment.segmenter_id(),
            "index_built_with": built_with,
            "current": built_with == segment.segmenter_id(),
        }

    @staticmethod
    def _scan(conn: Connection, term: str) -> list[str]:
        from yiji.domain.identifiers import normalise

        found = set(store.tables_containing(conn, sorted({term, term.lower()})))
        for form in dict.fromkeys((term, normalise(term))):
            terms = list(dict.fromkeys(segment.tokens(form)))
            if terms:
                every = " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)
                found.update(store.indexes_matching(conn, every))
        return sorted(found)

    @staticmethod
    def _scan_spellings(conn: Connection, scan_for: Sequence[str]) -> list[set[str]]:
        """For each term, the tables with a text value holding it as one identifier in any spelling
        (:mod:`yiji.domain.identifiers`, the rule ``delete --matching`` deletes by): one streamed pass
        over the text of every table, each value normalised once."""
        from yiji.domain.identifiers import Needle, holds, identifier_form

        needles = [Needle.of(term) for term in scan_for]
        found: list[set[str]] = [set() for _ in scan_for]
        for table, value in store.text_values(conn):
            if all(table in f for f in found):
                continue
            text = identifier_form(value)
            for term, needle, tables in zip(scan_for, needles, found, strict=True):
                if table in tables:
                    continue
                # a term with no letter or digit names no identifier: it is looked for as it is
                if holds(text, needle.form) if needle.usable else term in value or term.lower() in value:
                    tables.add(table)
        return found

    def _scan_label(self, position: int, term: str) -> str:
        if is_generated_id(term):
            return f"id {term}"
        return f"term {position} ({len(term)} characters, not shown)"

    def doctor(self, scan_for: Sequence[str] = (), *, clean: bool = False) -> DoctorReport:
        """Check integrity, foreign keys, counts, schema version, pending extractions and the review
        queue (``review``: memories per review state; proposals waiting are a warning).

        ``ok`` is false when integrity or foreign keys fail, the schema is not current, a capture cursor
        row breaks the rule an archive import applies (:func:`yiji.domain.capture.cursor_row_problems`)
        or a memory's review columns hold a state yiji never writes
        (:func:`yiji.domain.review.state_problems`);
        pending extractions are reported as a warning (``yiji extraction retry`` resumes them), and so are
        host transcripts that held no conversation yiji reads (``unread_transcripts``, per host).

        ``scan_for`` lists ids or phrases that should be gone (after a permanent deletion, say): every
        table, FTS5 shadow tables included, is searched for each one: its text values for the term as
        one identifier in any spelling, the rule ``delete --matching`` deletes by
        (:mod:`yiji.domain.identifiers`: "123-45-6789" finds "123456789" and "１２３ ４５ ６７８９", never
        "1234567890"; one streamed pass), its other values (FTS5 segment data, numbers) byte for byte for
        the term and its lower-case form; and each
        lexical index is asked for a row holding every index term of it (the index keeps segmented terms,
        not the text, so a phrase whose words all occur in one surviving row is reported too). The report
        names the tables where a term was found, any finding making ``ok`` false. It names each term by its
        position (1-based) and ``label``: an id yiji generated (random, so not a secret) as itself, anything
        else (a phrase, an id the host chose) only by its length, never its text.

        Temporary files left in the database's folder by a killed restore, export or backup are reported
        as a warning; with ``clean`` they are removed (``cleaned`` names them).
        """
        for term in scan_for:
            if not isinstance(term, str) or not term.strip():
                raise InvalidInput("scan_for", "must not be empty or whitespace only")
        with self.db.read() as conn:
            integrity = store.integrity(conn)
            fk = store.foreign_key_problems(conn)
            counts = store.table_counts(conn)
            pending = store.pending_extractions(conn)
            unextracted = event_store.count_events(
                conn,
                event_store.EventSelection(
                    None,
                    None,
                    category="conversation",
                    roles=self.config.extraction.run_roles,
                    states=event_store.UNEXTRACTED_STATES,
                ),
            )
            review = memory_store.review_counts(conn)
            built_with = store.index_segmenter(conn)
            spelled = self._scan_spellings(conn, scan_for) if scan_for else []
            scan = [
                (i, sorted(set(self._scan(conn, term)) | spelled[i - 1]))
                for i, term in enumerate(scan_for, start=1)
            ]
            cursors = capture_store.cursor_rows(conn)
            unread = capture_store.unread_counts(conn)
            states = _review_state_problems(conn)
        version = self.db.schema_version()
        problems: list[str] = []
        if integrity != ["ok"]:
            problems.append("integrity_check failed")
        if fk:
            problems.append(f"{counted(fk, 'foreign key violation')}")
        if version != SCHEMA_VERSION:
            problems.append(f"schema version {version}, expected {SCHEMA_VERSION}")
        labels = [self._scan_label(i, term) for i, term in enumerate(scan_for, start=1)]
        problems += [f"{labels[i - 1]} found in {', '.join(found)}" for i, found in scan if found]
        problems += _cursor_problems(cursors)
        problems += states
        warnings = [f"{counted(pending, 'event')} pending extraction"] if pending else []
        if review["proposed"]:
            waiting = counted(review["proposed"], "proposed memory", "proposed memories")
            warnings.append(f"{waiting} waiting for review ({yiji_command('review')})")
        warnings += [_unread_warning(host, count) for host, count in unread.items()]
        folder = self.db.path.parent
        cleaned = [p.name for p in sweep_stale(folder)] if clean else []
        leftovers = stale_files(folder)
        if leftovers:
            warnings.append(
                f"{counted(len(leftovers), 'temporary file')} left by an interrupted restore, export or "
                f"backup; {yiji_command('doctor --clean')} removes them"
            )
        index = self._index_status_in(built_with)
        warning = segment.index_warning(
            built_with, lambda: bool(counts["events"] or counts["memories"]), yiji_command("reindex")
        )
        if warning:
            warnings.append(warning)
        report: DoctorReport = {
            "ok": not problems,
            "database": str(self.db.path),
            "schema_version": version,
            "integrity_check": integrity[:20],
            "foreign_key_violations": fk,
            "tables": counts,
            "pending_extractions": pending,
            "awaiting_extraction": unextracted,
            "review": review,
            "unread_transcripts": unread,
            "lexical_index": index,
            "problems": problems,
            "warnings": warnings,
        }
        if clean:
            report["cleaned"] = cleaned
        if scan_for:
            report["scan"] = [{"term": i, "label": labels[i - 1], "found_in": found} for i, found in scan]
        return report

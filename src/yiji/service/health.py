"""Operational use cases: ``doctor``."""

from __future__ import annotations

from typing import Any

from yiji.domain.segment import SEGMENTER_ID
from yiji.schema import SCHEMA_VERSION
from yiji.service.base import ServiceBase
from yiji.store import health as store

__all__ = ["HealthOps"]


class HealthOps(ServiceBase):
    @staticmethod
    def _index_status_in(built_with: str | None) -> dict[str, Any]:
        return {
            "segmenter": SEGMENTER_ID,
            "index_built_with": built_with,
            "current": built_with == SEGMENTER_ID,
        }

    def doctor(self) -> dict[str, Any]:
        """Check integrity, foreign keys, counts, schema version and pending extractions.

        ``ok`` is false when integrity or foreign keys fail or the schema is not current; pending
        extractions are reported as a warning (``yiji extraction retry`` resumes them).
        """
        with self.db.read() as conn:
            integrity = store.integrity(conn)
            fk = store.foreign_key_problems(conn)
            counts = store.table_counts(conn)
            pending = store.pending_extractions(conn)
            built_with = store.index_segmenter(conn)
        version = self.db.schema_version()
        problems: list[str] = []
        if integrity != ["ok"]:
            problems.append("integrity_check failed")
        if fk:
            problems.append(f"{fk} foreign key violation(s)")
        if version != SCHEMA_VERSION:
            problems.append(f"schema version {version}, expected {SCHEMA_VERSION}")
        warnings = [f"{pending} event(s) pending extraction"] if pending else []
        index = self._index_status_in(built_with)
        if not index["current"] and (counts["event_fts"] or counts["memory_fts"]):
            warnings.append("the lexical index was built by another segmenter; run `yiji reindex`")
        return {
            "ok": not problems,
            "database": str(self.db.path),
            "schema_version": version,
            "integrity_check": integrity[:20],
            "foreign_key_violations": fk,
            "tables": counts,
            "pending_extractions": pending,
            "lexical_index": index,
            "problems": problems,
            "warnings": warnings,
        }

"""The typed shapes of the service's reports: ``doctor``, the index and vector upkeep, secret redaction,
extraction runs and bulk review.

Each is a ``TypedDict``: the value is the plain JSON-ready mapping the CLI and the MCP server print as it
is (so their output is exactly what it was), and its keys and their types are declared and checked.
A key marked ``NotRequired`` is present only in the case its comment names.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from yiji.models.common import Scope

__all__ = [
    "DoctorReport",
    "ExtractionRetry",
    "ExtractionRun",
    "IndexStatus",
    "ReindexResult",
    "ReviewAllResult",
    "SecretRedaction",
    "SecretScanReport",
    "VectorStatus",
    "VectorsReindexResult",
]


class IndexStatus(TypedDict):
    """The segmenter in use, the one the lexical index was built with, and whether they are the same."""

    segmenter: str
    index_built_with: str | None
    current: bool


class ReindexResult(TypedDict):
    """What a lexical reindex indexed."""

    events: int
    memories: int
    segmenter: str


class VectorStatus(TypedDict):
    """The scope's vector coverage for the configured embedder (``embedder`` ``None``: embedding is off,
    and no counts)."""

    scope: Scope
    embedder: str | None
    candidates: NotRequired[int]
    missing: NotRequired[int]


class VectorsReindexResult(TypedDict):
    """What a vector reindex embedded and wrote, and how well the new vectors separate conversations."""

    scope: Scope
    fingerprint: str
    memories: int
    events: int
    vectors: int
    skipped_changed: int
    seconds: float
    vectors_per_second: float | None
    separation: float | None
    cosine_weight: float


class SecretScanReport(TypedDict):
    """Per rule, how many stored events and memories hold a secret (never the text)."""

    events: int
    memories: int
    rules: dict[str, int]


class SecretRedaction(TypedDict):
    """How many events and memories had secrets redacted in place."""

    events: int
    memories: int


class DoctorReport(TypedDict):
    """``doctor``'s report (:meth:`yiji.service.health.Health.doctor`)."""

    ok: bool
    database: str
    schema_version: int
    integrity_check: list[str]
    foreign_key_violations: int
    tables: dict[str, int]
    pending_extractions: int
    awaiting_extraction: int
    review: dict[str, int]
    unread_transcripts: dict[str, int]
    lexical_index: IndexStatus
    problems: list[str]
    warnings: list[str]
    cleaned: NotRequired[list[str]]  # with ``clean``: the temporary files removed
    scan: NotRequired[list[dict[str, Any]]]  # with ``scan_for``: each term's label and where it was found
    redacted: NotRequired[SecretRedaction]  # added by ``yiji doctor`` when it redacts stored secrets
    secrets: NotRequired[SecretScanReport]  # added by ``yiji doctor``


class ExtractionRetry(TypedDict):
    """What a retry of pending extractions did: each event's outcome (``extraction_retry``) or the counts
    (``extraction_retry_all``, which has ``tried`` and no ``results``)."""

    scope: Scope
    results: NotRequired[list[dict[str, Any]]]
    tried: NotRequired[int]
    completed: int
    still_pending: int
    failures: list[dict[str, Any]]


class ExtractionRun(TypedDict):
    """What ``extraction run`` selected and (unless ``dry_run``, which has ``would_send`` instead) did."""

    scope: Scope | None
    every_scope: bool
    roles: list[str]
    dry_run: bool
    selected: int
    would_send: NotRequired[int]
    tried: NotRequired[int]
    completed: NotRequired[int]
    memories: NotRequired[int]
    proposed: NotRequired[int]
    still_pending: NotRequired[int]
    not_tried: NotRequired[int]
    failures: NotRequired[list[dict[str, Any]]]
    stopped: NotRequired[str | None]


class ReviewAllResult(TypedDict):
    """The proposals a bulk review decided."""

    scope: Scope
    action: Literal["accept", "reject"]
    memory_ids: list[str]

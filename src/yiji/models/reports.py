"""The typed shapes of the service's reports: ``doctor``, the index and vector upkeep, secret redaction,
extraction runs and bulk review.

Each is a ``TypedDict``: the value is the plain JSON-ready mapping the CLI and the MCP server print as it
is (so their output is exactly what it was), and its keys and their types are declared and checked.
A key marked ``NotRequired`` is present only in the case its comment names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

from yiji.models.common import Scope

if TYPE_CHECKING:
    from yiji.models.events import EventRecord
    from yiji.models.memories import MemoryRecord, RelationRecord

__all__ = [
    "DoctorReport",
    "ExtractionRetry",
    "ExtractionRun",
    "IndexStatus",
    "MemoryEvidence",
    "QuoteSpan",
    "ReindexResult",
    "ReviewAllResult",
    "ReviewContext",
    "ReviewQueue",
    "SecretRedaction",
    "SecretScanReport",
    "TextPage",
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


class QuoteSpan(TypedDict):
    """Where a memory's quote sits in its source event's text (``-1`` when it does not occur there)."""

    start: int
    end: int


class TextPage(TypedDict):
    """A page of an event's original text."""

    offset: int
    limit: int
    total_chars: int
    content: str
    has_more: bool


class MemoryEvidence(TypedDict):
    """``memory_read``: a memory with its evidence (the source event as JSON without its text, a page of
    the text, where the quote sits, co-derived memories and relations)."""

    scope: Scope
    memory: MemoryRecord
    event: dict[str, Any]
    text: TextPage
    quote: QuoteSpan
    co_derived: list[MemoryRecord]
    relations: list[RelationRecord]


class ReviewQueue(TypedDict):
    """Proposals waiting for review, oldest first, with how many wait and the counts per review state."""

    scope: Scope
    waiting: int
    counts: dict[str, int]
    proposals: list[MemoryRecord]


class ReviewContext(TypedDict):
    """A memory with its source event, where the quote sits, and the session's turns around it."""

    scope: Scope
    memory: MemoryRecord
    event: EventRecord
    quote: QuoteSpan
    before: list[EventRecord]
    after: list[EventRecord]

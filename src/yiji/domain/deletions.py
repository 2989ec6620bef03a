"""What a permanent deletion leaves behind so that no replay brings it back: digests, never text.

A deletion remembers, in the deletion ledger (``deletion_ledger``, schema version 10):

* ``event_id``: the SHA-256 digest of each deleted event's id, exactly as stored;
* ``text``: the digest of each deleted event's text in its *copy form* (:func:`copy_form`: Unicode NFKC,
  case folded, every run of whitespace one space, the ends trimmed) together with the second it occurred
  at (UTC), so a copy of the message under a new id, a new session or another project (a fork, a
  transcript imported again, an archive replayed) is recognised whatever its spacing, case or width. The
  occurrence time is what makes it a *copy*: the same words said again at another moment (a later "ok")
  are a new message and are stored;
* ``identifier``: for ``delete --matching``, the digest of the identifier's normalised form
  (:func:`yiji.domain.identifiers.normalise`) with its length in characters (``span``) and whether it
  begins and ends with a letter or digit of a spaced script (``bounded``).

Each digest is SHA-256 over ``kind``, a NUL and the value (UTF-8; a lone surrogate is hashed as it is),
as 64 lowercase hex digits. A new event is refused (:class:`yiji.service.deletions.DeletionLedger`)
when its id or its copy form has a deleted event's digest, or when its text holds a forgotten identifier
as a whole identifier. The identifier is found without its text: the substrings of the normalised event
text as long as a forgotten identifier are hashed, and one whose digest is remembered is confirmed by
:func:`yiji.domain.identifiers.holds`, the rule ``delete --matching`` deletes by. So the rule that keeps
an identifier out is exactly the rule that deleted it. Which substrings are hashed: for a ``bounded``
identifier only those that run from the start of a run of letters and digits to the end of one (where
``holds`` can accept nothing else), found by one regular expression; for any other, every substring of
its length.

A digest is not encryption: a short identifier (a nine-digit number) can be found again by hashing every
candidate. The ledger keeps deleted text out of storage, recall, packs and the residue scan; it does not
hide from a person holding the database which short value was forgotten.

Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Final, Literal

from yiji.domain.identifiers import _UNSPACED, JOIN, Needle, holds, identifier_form, is_word_char

__all__ = [
    "DIGEST_PATTERN",
    "KINDS",
    "WORD_RUN",
    "Forgotten",
    "Kind",
    "copy_form",
    "digest",
    "event_digests",
    "holds_forgotten",
    "identifier_entry",
]

Kind = Literal["event_id", "text", "identifier"]
KINDS: Final[tuple[str, ...]] = ("event_id", "text", "identifier")
DIGEST_PATTERN: Final = r"[0-9a-f]{64}"
"""How a stored digest is written: SHA-256 as 64 lowercase hex digits."""
WORD_RUN: Final = re.compile(
    "(?:(?![" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _UNSPACED) + r"])[^\W_])+"
)
"""A maximal run of :func:`yiji.domain.identifiers.is_word_char` characters: ``str.isalnum`` (what
``re`` calls a word character, less ``_``) outside the scripts written without spaces, found at the speed
of ``re``."""
Forgotten = Mapping[tuple[int, bool], frozenset[str]]
"""Digests of forgotten identifiers by ``(span, bounded)``."""


def copy_form(text: str) -> str:
    """The form two copies of one text share: NFKC, case folded, whitespace runs as one space, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def digest(kind: str, value: str) -> str:
    """The ledger digest of ``value`` as a ``kind`` entry."""
    return hashlib.sha256(f"{kind}\0{value}".encode("utf-8", "surrogatepass")).hexdigest()


def event_digests(event_id: str, text: str, occurred_at: datetime) -> tuple[str, str]:
    """The ``event_id`` and ``text`` digests of one event that occurred at ``occurred_at`` (aware)."""
    moment = occurred_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return digest("event_id", event_id), digest("text", f"{copy_form(text)}\0{moment}")


def identifier_entry(text: str) -> tuple[int, bool, str] | None:
    """The ``(span, bounded, digest)`` an identifier deleted with ``delete --matching`` is remembered by,
    or ``None`` when it names nothing (no letter or digit survives the normalisation)."""
    needle = Needle.of(text)
    if not needle.usable:
        return None
    form = needle.form.replace(JOIN, " ")  # the normalised form: how a part joins is checked by holds()
    bounded = is_word_char(form[0]) and is_word_char(form[-1])
    return len(form), bounded, digest("identifier", form)


def holds_forgotten(texts: Iterable[str | None], forgotten: Forgotten) -> bool:
    """Whether any of ``texts`` holds a forgotten identifier, by the rule of ``delete --matching``."""
    if not forgotten:
        return False
    for text in texts:
        if not text:
            continue
        marked = identifier_form(text)  # holds() reads where separators join parts of one identifier
        form = marked.replace(JOIN, " ")
        runs: tuple[list[int], set[int]] | None = None
        for (span, bounded), digests in forgotten.items():
            if bounded:  # holds() wants a match that begins and ends a run of letters and digits
                if runs is None:
                    found = [m.span() for m in WORD_RUN.finditer(form)]
                    runs = [a for a, _ in found], {b for _, b in found}
                starts: Iterable[int] = [a for a in runs[0] if a + span in runs[1]]
            else:
                starts = range(len(form) - span + 1)
            for start in starts:
                part = form[start : start + span]
                if digest("identifier", part) in digests and holds(marked, part):
                    return True
    return False

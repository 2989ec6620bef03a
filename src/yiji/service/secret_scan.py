"""``yiji doctor``'s look for secrets already stored, and their redaction in place.

:class:`SecretScan` counts, per rule, the events and memories whose stored text still holds a secret (text
written before redaction existed or while it was off, or found by rules added since), never showing the
text, and can redact them in place in one transaction, with the lexical index rewritten and the vectors of
what changed dropped (``yiji reindex`` rebuilds them). The transaction erases as a permanent deletion does
(:func:`yiji.store.lifecycle.erasing`), so the old text is not left on free pages of the file.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from yiji.service.base import Deps
from yiji.service.indexing import LexicalIndex
from yiji.store import secrets as store

if TYPE_CHECKING:
    from yiji.models.reports import SecretRedaction, SecretScanReport

__all__ = ["SecretScan"]


class SecretScan:
    """``yiji doctor``'s look for secrets already stored, and their redaction in place."""

    def __init__(self, deps: Deps, lexical: LexicalIndex) -> None:
        self.deps = deps
        self.db, self.config, self.clock, self.scope = deps.db, deps.config, deps.clock, deps.scope
        self.lexical = lexical

    def secret_scan(self) -> SecretScanReport:
        """Per rule, how many stored events and memories hold a secret it finds (never the text)."""
        rules: Counter[str] = Counter()
        events = memories = 0
        with self.db.read() as conn:
            for _, _, _, text in store.event_texts(conn):
                found = self.deps.redactor.redact(text)
                if found.changed:
                    events += 1
                    rules.update(found.rules)
            for _, _, _, text, quote, gist in store.memory_texts(conn):
                parts = [self.deps.redactor.redact(t) for t in (text, quote, gist or "")]
                if any(p.changed for p in parts):
                    memories += 1
                    rules.update({r for p in parts for r in p.rules})
        return {"events": events, "memories": memories, "rules": dict(sorted(rules.items()))}

    def redact_stored_secrets(self) -> SecretRedaction:
        """Redact what :meth:`secret_scan` finds, in one transaction: the events' and memories' text (a
        quote that no longer occurs in its event's redacted text becomes that whole text), their rows of
        the lexical index rewritten and their vectors dropped (``yiji reindex`` rebuilds them)."""
        from yiji.store import events as event_store
        from yiji.store.lifecycle import erasing

        redact = self.deps.redactor.redact
        with self.db.write() as conn, erasing(conn):
            changed_events: dict[str, str] = {}
            for seq, event_id, category, text in list(store.event_texts(conn)):
                found = redact(text)
                if not found.changed:
                    continue
                changed_events[event_id] = found.text
                store.set_event_text(conn, event_id, found.text)
                store.drop_event_vector(conn, event_id)
                if category == "conversation":
                    labels = [c.label for c in event_store.cues_for(conn, [event_id])[event_id]]
                    self.lexical.replace_event(conn, seq, category, found.text, labels)
            memories = 0
            for pk, memory_id, event_id, text, quote, gist in list(store.memory_texts(conn)):
                source = changed_events.get(event_id)
                new_text, new_quote = redact(text).text, redact(quote).text
                new_gist = None if gist is None else redact(gist).text
                if source is None and (new_text, new_quote, new_gist) == (text, quote, gist):
                    continue
                event = event_store.get(conn, event_id)
                assert event is not None  # memories.event_id is a foreign key
                if new_quote not in event.text:
                    new_quote = event.text
                memories += 1
                store.set_memory_texts(conn, pk, new_text, new_quote, new_gist)
                store.drop_memory_vector(conn, memory_id)
                labels = [c.label for c in event.cues]
                parts = [new_text, new_quote, new_gist, event.text, *labels]
                self.lexical.replace_memory(conn, pk, parts)
            if changed_events or memories:
                store.optimize_indexes(conn)
        return {"events": len(changed_events), "memories": memories}
